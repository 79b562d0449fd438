package faults

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// novaTables are the columns the exporter reads of Nova's nova_api and
// cell tables, in PostgreSQL (Nova's real schema is read by
// conformance/nova); they sit beside Ironic's tables of the test database,
// whose names they do not share.
var novaTables = []string{
	`DROP TABLE IF EXISTS cell_mappings, services, compute_nodes, instances`,
	`CREATE TABLE cell_mappings (id serial PRIMARY KEY, uuid varchar(36), name varchar(255), database_connection text)`,
	`CREATE TABLE services (id serial PRIMARY KEY, host varchar(255), "binary" varchar(255), disabled boolean,
	  forced_down boolean, deleted integer DEFAULT 0, created_at timestamp, updated_at timestamp, last_seen_up timestamp, version integer)`,
	`CREATE TABLE compute_nodes (id serial PRIMARY KEY, uuid varchar(36), host varchar(255), hypervisor_hostname varchar(255),
	  hypervisor_type varchar(255), deleted integer DEFAULT 0, created_at timestamp, updated_at timestamp, deleted_at timestamp)`,
	`CREATE TABLE instances (id serial PRIMARY KEY, uuid varchar(36), host varchar(255), node varchar(255),
	  deleted integer DEFAULT 0, created_at timestamp, updated_at timestamp, deleted_at timestamp)`,
}

// TestNovaNetwork: with Nova's databases behind a link that black-holes or
// drops, only the Nova answers go stale (ironic_exporter_nova_api_up 0,
// their series kept); Ironic's stay live (ironic_up 1), no scrape waits for
// Nova, and the Nova side recovers when the link does.
func TestNovaNetwork(t *testing.T) {
	for _, m := range []mode{blackhole, drop} {
		t.Run(m.String(), func(t *testing.T) {
			b := postgres()
			h := newHarness(t, b)
			h.exec(novaTables...)
			t.Cleanup(func() { h.exec(`DROP TABLE IF EXISTS cell_mappings, services, compute_nodes, instances`) })
			p := newProxy(t, b.direct)
			cellURL := b.dsn(p.addr)
			h.exec(`INSERT INTO cell_mappings (uuid, name, database_connection) VALUES
			  ('00000000-0000-0000-0000-000000000000', 'cell0', 'postgresql://nowhere/cell0'),
			  ('c1', 'cell1', '`+cellURL+`')`,
				`INSERT INTO services (host, "binary", disabled, forced_down, created_at, last_seen_up, version)
			  VALUES ('c-a', 'nova-compute', false, false, now() at time zone 'utc', now() at time zone 'utc', 68)`,
				`INSERT INTO compute_nodes (uuid, host, hypervisor_hostname, hypervisor_type)
			  SELECT uuid, 'c-a', uuid, 'ironic' FROM nodes`)
			h.start("--nova.dsn="+b.dsn(p.addr), "--nova.refresh-interval=500ms")
			novaUp := func() string { return h.metric("ironic_exporter_nova_api_up") }
			waitNova := func(want string, limit time.Duration) time.Duration {
				t.Helper()
				start := time.Now()
				for novaUp() != want {
					if time.Since(start) > limit {
						t.Fatalf("ironic_exporter_nova_api_up did not become %s within %s\n%s", want, limit, h.Tail(20))
					}
					time.Sleep(100 * time.Millisecond)
				}
				return time.Since(start)
			}
			waitNova("1", 15*time.Second)
			h.fault("nova " + m.String())
			p.set(m)
			toStale := waitNova("0", refreshTimeout+margin)
			end, scraped := time.Now().Add(2*refreshTimeout), 0
			for time.Now().Before(end) {
				v, took := h.up()
				if v != "1" {
					t.Errorf("ironic_up %q while only Nova is unreachable", v)
				}
				if took > margin {
					t.Errorf("a scrape took %s while Nova is unreachable", took)
				}
				code, body, _, err := h.tryGet("/metrics", nil)
				if err == nil && code == 200 {
					scraped++
					if !strings.Contains(body, `ironic_node_nova_compute_info{`) {
						t.Errorf("the Nova answers were dropped instead of kept stale (%d bytes, ironic_up %q):\n%s", len(body), series(body, "ironic_up"), grepNova(body))
						break
					}
				}
			}
			if scraped == 0 {
				t.Error("no scrape answered while Nova was unreachable")
			}
			p.set(pass)
			toBack := waitNova("1", 2*refreshTimeout+margin)
			h.waitLog("reading Nova's databases failed", "reading Nova's databases works again")
			if strings.Contains(h.Logs(), "s3cret-pw") {
				t.Error("password in the logs")
			}
			t.Logf("FIGURES nova %s: nova_api_up 0 after %s, back to 1 after %s", m, toStale.Round(time.Millisecond), toBack.Round(time.Millisecond))
			h.finish()
		})
	}
}

// exec runs statements on the admin connection.
func (h *harness) exec(stmts ...string) {
	h.t.Helper()
	for _, q := range stmts {
		if _, err := h.admin.Exec(q); err != nil {
			h.t.Fatal(fmt.Errorf("%s: %w", q, err))
		}
	}
}

// grepNova are the lines of a scrape about Nova.
func grepNova(body string) string {
	var out []string
	for _, l := range strings.Split(body, "\n") {
		if strings.Contains(l, "nova") && !strings.HasPrefix(l, "#") {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
