package faults

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/dbconn"
)

// TestBeginStalled: a server that stops answering on a pooled connection
// is reported within the query timeout at every step, BEGIN included:
// BEGIN was bounded only by the session's time (steps x the query timeout,
// or the refresh timeout), so the first stalled refresh ran to
// --refresh.timeout while ironic_up stayed 1. Through the suite's proxy, on
// PostgreSQL (lib/pq, the watchdog closes the socket) and MariaDB (the
// driver honours the context).
func TestBeginStalled(t *testing.T) {
	const steps = 20 // the session may last 20 s; BEGIN must give up after 1 s
	for _, b := range []backend{postgres(), mariadb()} {
		t.Run(b.name, func(t *testing.T) {
			p := newProxy(t, b.direct)
			pool, err := dbconn.Open(b.dsn(p.addr), dbconn.Options{QueryTimeout: queryTimeout, MaxOpenConns: 1})
			if err != nil {
				t.Fatal(err)
			}
			defer pool.Close()
			// One session through the proxy leaves its connection in the
			// pool.
			s, err := pool.Begin(context.Background(), steps)
			if err != nil {
				t.Fatal(err)
			}
			if err := s.Rows("select", "SELECT 1", false, func(*sql.Rows) error { return nil }); err != nil {
				t.Fatal(err)
			}
			s.End(false)

			p.set(blackhole)
			start := time.Now()
			s, err = pool.Begin(context.Background(), steps)
			took := time.Since(start)
			fmt.Printf("FIGURES stalled BEGIN %s: reported after %s (query timeout %s, session %s)\n",
				b.name, took.Round(time.Millisecond), queryTimeout, steps*queryTimeout)
			if err == nil {
				s.End(true)
				t.Fatal("BEGIN on a stalled server succeeded")
			}
			if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "starting read-only transaction: timed out after") {
				t.Errorf("error %q, want the BEGIN step timed out", err)
			}
			if took > queryTimeout+margin {
				t.Errorf("BEGIN on a stalled server reported after %s, want within the query timeout %s (+%s)", took, queryTimeout, margin)
			}
		})
	}
}
