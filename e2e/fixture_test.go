package e2e

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lib/pq"
)

// The deployment the end-to-end test watches. Every state the metrics and
// alerts know appears in it, so that every dashboard panel has data:
//
//	c1, c2   group "",       ipmi+redfish, alive (heartbeating); c2 later stops heartbeating: dead
//	c3       group "rack-2", ipmi,         alive
//	c4       group "",       ipmi,         stopped (offline, stale heartbeat)
//	c5       group "rack-3", ipmi,         draining (offline, still heartbeating)
//
//	nodes: 12 ipmi and 4 redfish in "", 1 idrac in "" (no conductor enables
//	idrac), 3 ipmi in rack-2, 2 ipmi in rack-3 (no ring member there);
//	locks held by c1 (alive), c4 (stopped) and gone.example.com (no row).
const (
	hostC1 = "c1.example.com"
	hostC2 = "c2.example.com"
	hostC3 = "c3.example.com"
	hostC4 = "c4.example.com"
	hostC5 = "c5.example.com"
)

// beating are the conductors whose heartbeat the test keeps fresh at first.
var beating = []string{hostC1, hostC2, hostC3, hostC5}

func loadFixture(t *testing.T, d *sql.DB) {
	t.Helper()
	stmts := []string{
		`DELETE FROM nodes`, `DELETE FROM conductor_hardware_interfaces`, `DELETE FROM conductors`,
		`INSERT INTO conductors (id, hostname, drivers, online, conductor_group, created_at, updated_at) VALUES
		   (1, 'c1.example.com', '[]', true,  '',       now() at time zone 'utc', now() at time zone 'utc'),
		   (2, 'c2.example.com', '[]', true,  '',       now() at time zone 'utc', now() at time zone 'utc'),
		   (3, 'c3.example.com', '[]', true,  'rack-2', now() at time zone 'utc', now() at time zone 'utc'),
		   (4, 'c4.example.com', '[]', false, '',       now() at time zone 'utc', now() at time zone 'utc' - interval '1 hour'),
		   (5, 'c5.example.com', '[]', false, 'rack-3', now() at time zone 'utc', now() at time zone 'utc')`,
		`INSERT INTO conductor_hardware_interfaces (conductor_id, hardware_type, interface_type, interface_name, "default", created_at) VALUES
		   (1, 'ipmi', 'power', 'ipmitool', true, now()), (1, 'redfish', 'power', 'redfish', true, now()),
		   (2, 'ipmi', 'power', 'ipmitool', true, now()), (2, 'redfish', 'power', 'redfish', true, now()),
		   (3, 'ipmi', 'power', 'ipmitool', true, now()),
		   (4, 'ipmi', 'power', 'ipmitool', true, now()),
		   (5, 'ipmi', 'power', 'ipmitool', true, now())`,
	}
	type node struct{ group, driver, reservation string }
	var nodes []node
	for i := 0; i < 12; i++ {
		nodes = append(nodes, node{"", "ipmi", ""})
	}
	nodes[0].reservation = hostC1
	nodes[1].reservation = hostC4
	nodes[2].reservation = "gone.example.com"
	for i := 0; i < 4; i++ {
		nodes = append(nodes, node{"", "redfish", ""})
	}
	nodes = append(nodes, node{"", "idrac", ""})
	for i := 0; i < 3; i++ {
		nodes = append(nodes, node{"rack-2", "ipmi", ""})
	}
	for i := 0; i < 2; i++ {
		nodes = append(nodes, node{"rack-3", "ipmi", ""})
	}
	var values []string
	for i, n := range nodes {
		res := "NULL"
		if n.reservation != "" {
			res = "'" + n.reservation + "'"
		}
		values = append(values, fmt.Sprintf("('%08x-0000-4000-8000-%012x', 'node-%02d', '%s', '%s', %s, 'available', 'power off', now())",
			i+1, i+1, i+1, n.driver, n.group, res))
	}
	stmts = append(stmts, `INSERT INTO nodes (uuid, name, driver, conductor_group, reservation, provision_state, power_state, created_at) VALUES `+
		strings.Join(values, ",\n"))
	for _, q := range stmts {
		if _, err := d.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
}

// heartbeater plays the heartbeat thread of Ironic's conductors: every
// interval it sets updated_at to now for the conductors still beating.
type heartbeater struct {
	mu    sync.Mutex
	hosts []string
}

func startHeartbeats(t *testing.T, d *sql.DB, interval time.Duration, hosts []string) *heartbeater {
	t.Helper()
	h := &heartbeater{hosts: slices.Clone(hosts)}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	beat := func() error {
		h.mu.Lock()
		hosts := slices.Clone(h.hosts)
		h.mu.Unlock()
		_, err := d.ExecContext(ctx, `UPDATE conductors SET updated_at = now() at time zone 'utc' WHERE hostname = ANY($1)`, pq.Array(hosts))
		return err
	}
	if err := beat(); err != nil {
		t.Fatalf("heartbeat: %v", err)
	}
	go func() {
		defer close(done)
		tick := time.NewTicker(interval)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
				if err := beat(); err != nil && ctx.Err() == nil {
					t.Errorf("heartbeat: %v", err)
					return
				}
			}
		}
	}()
	t.Cleanup(func() { cancel(); <-done })
	return h
}

// stop ends the heartbeats of host, as a crash of its conductor would.
func (h *heartbeater) stop(host string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.hosts = slices.DeleteFunc(h.hosts, func(s string) bool { return s == host })
}
