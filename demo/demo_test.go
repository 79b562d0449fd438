package demo

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/db"
	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/dbconn"
	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/internal/testenv"
	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/rules"
	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/topology"
)

// raceBuild is set by race_test.go when the tests run with -race: the
// binary of TestDemoCommand is then built with -race too.
var raceBuild bool

// columnsOf extracts the column names of one of db's SELECT statements.
func columnsOf(t *testing.T, query string) (table string, cols []string) {
	t.Helper()
	m := regexp.MustCompile(`(?s)SELECT (?:DISTINCT )?(.*?)\s+FROM (\w+)`).FindStringSubmatch(query)
	if m == nil {
		t.Fatalf("cannot parse %q", query)
	}
	for c := range strings.SplitSeq(m[1], ",") {
		cols = append(cols, strings.TrimSpace(c))
	}
	return m[2], cols
}

// TestSchema: the embedded schema is Ironic's, has the three tables and every
// column db reads, and names its source.
func TestSchema(t *testing.T) {
	if len(schemas) == 0 || schemaFor(rules.Release{}).name != schemas[0].name || schemaFor(rules.Newest).release.Compare(rules.Newest) > 0 {
		t.Fatalf("schemas %v: want the oldest for an old release, none newer than the release", schemas)
	}
	for _, sc := range schemas {
		t.Run(sc.name, func(t *testing.T) { testSchema(t, sc) })
	}
}

func testSchema(t *testing.T, sc demoSchema) {
	if got := schemaFor(sc.release); got.name != sc.name {
		t.Errorf("schemaFor(%s) = %s, want %s", sc.release, got.name, sc.name)
	}
	d, err := sql.Open("sqlite", ":memory:")
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	d.SetMaxOpenConns(1)
	if _, err := d.Exec(sc.sql); err != nil {
		t.Fatalf("executing the schema: %v", err)
	}
	for _, q := range []string{db.SQLConductors, db.SQLHardwareTypes, db.SQLNodes} {
		table, want := columnsOf(t, q)
		rows, err := d.Query(`SELECT name FROM pragma_table_info(?)`, table)
		if err != nil {
			t.Fatal(err)
		}
		var have []string
		for rows.Next() {
			var c string
			if err := rows.Scan(&c); err != nil {
				t.Fatal(err)
			}
			have = append(have, c)
		}
		rows.Close()
		if len(have) == 0 {
			t.Errorf("no table %s", table)
		}
		for _, c := range append(want, "version") {
			// nodes.parent_node (22.0) and health (34.0) are read as NULL
			// in older schemas (db's schema generations).
			missingOK := table == "nodes" && (c == "parent_node" && sc.release.Before(rules.MustRelease("22.0")) ||
				c == "health" && sc.release.Before(rules.MustRelease("34.0")))
			if !slices.Contains(have, c) && !missingOK {
				t.Errorf("table %s has no column %s (has %v)", table, c, have)
			}
		}
	}
	var rev string
	if err := d.QueryRow(`SELECT version_num FROM alembic_version`).Scan(&rev); err != nil || rev == "" || rev != sc.revision() {
		t.Errorf("alembic_version: %q (parsed %q), %v", rev, sc.revision(), err)
	}
	if src := sc.source(); !strings.Contains(src, "create_schema") || !strings.Contains(src, rev) {
		t.Errorf("schema source %q does not name create_schema and alembic head %s", src, rev)
	}
}

func newLogger(t *testing.T) *slog.Logger {
	return slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}

func open(t *testing.T, d *Demo) *db.DB {
	t.Helper()
	r, err := db.Open(d.DSN(), dbconn.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

// build reads a snapshot and judges it, as the exporter's cache does, as of
// when the read began: a read slower than the heartbeat timeout (the race
// detector on a busy machine) would otherwise age every heartbeat past it.
func build(t *testing.T, d *Demo, r *db.DB) (*db.Snapshot, *topology.Topology) {
	t.Helper()
	now := time.Now()
	snap, err := r.Snapshot(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	topo, err := topology.Build(snap, d.Settings(), now, nil)
	if err != nil {
		t.Fatal(err)
	}
	return snap, topo
}

// TestFleet: the database holds the fleet, written as Ironic writes it, and
// the exporter reads it read-only through db.Open.
func TestFleet(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "ironic.sqlite")
	d, err := Start(Options{Path: path, Speed: MaxSpeed, Logger: newLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if _, err := Start(Options{Path: path}); err == nil || !strings.Contains(err.Error(), "already exists") {
		t.Errorf("second demo on the same file: %v, want an error", err)
	}
	snap, topo := build(t, d, open(t, d))
	if snap.Backend != rules.SQLite {
		t.Errorf("backend %s", snap.Backend)
	}
	groups, types := map[string]bool{}, map[string]bool{}
	for _, c := range snap.Conductors {
		groups[c.ConductorGroup] = true
		for _, h := range c.HardwareTypes {
			types[h] = true
		}
	}
	if len(snap.Conductors) < 10 || len(groups) < 4 || len(types) < 4 {
		t.Errorf("%d conductors in %d groups with %d hardware types", len(snap.Conductors), len(groups), len(types))
	}
	if n := len(snap.Nodes); n < 1900 || n > 2100 {
		t.Errorf("%d nodes, want about 2000", n)
	}
	unserved, named := 0, 0
	for _, n := range topo.Nodes {
		if n.Conductor == "" {
			unserved++
		}
	}
	for _, n := range snap.Nodes {
		if n.Name != nil {
			named++
		}
	}
	if unserved == 0 || unserved > len(snap.Nodes)/10 {
		t.Errorf("%d nodes without a conductor: want a few", unserved)
	}
	if named != len(snap.Nodes) {
		t.Errorf("%d of %d nodes named", named, len(snap.Nodes))
	}
	// Deployed nodes' boot environments were prepared by their conductor;
	// provision states are Ironic's.
	active, prepared := 0, 0
	for _, n := range topo.Nodes {
		if n.ProvisionState != nil && *n.ProvisionState == "active" {
			active++
			if n.Affinity == topology.AffinityUp && n.AffinityHost() == n.Conductor {
				prepared++
			}
		}
		if topology.ProvisionStateLabel(n.ProvisionState) == topology.ProvisionStateOther {
			t.Errorf("node %s: provision state %v is not Ironic's", n.UUID, n.ProvisionState)
		}
	}
	if active < len(topo.Nodes)/2 || prepared < active*9/10 {
		t.Errorf("%d active nodes, %d with their boot files on their conductor", active, prepared)
	}
	if len(topo.Rings) < 8 {
		t.Errorf("%d rings, want several", len(topo.Rings))
	}
	if len(snap.Warnings) > 0 {
		t.Errorf("warnings: %v", snap.Warnings)
	}

	// The raw rows, as Ironic's SQLAlchemy writes them.
	raw, err := sql.Open("sqlite", "file:"+path+"?mode=ro&_pragma=busy_timeout(5000)")
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	tsRE := regexp.MustCompile(`^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{6}$`)
	for _, q := range []string{
		`SELECT CAST(created_at AS TEXT), CAST(updated_at AS TEXT), version FROM conductors`,
		`SELECT CAST(created_at AS TEXT), CAST(COALESCE(updated_at, created_at) AS TEXT), version FROM nodes`,
		`SELECT CAST(created_at AS TEXT), CAST(created_at AS TEXT), typeof(created_at) || typeof(updated_at)
FROM conductor_hardware_interfaces`,
	} {
		rows, err := raw.Query(q)
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var c, u, v string
			if err := rows.Scan(&c, &u, &v); err != nil {
				t.Fatal(err)
			}
			if !tsRE.MatchString(c) || !tsRE.MatchString(u) ||
				(v != rules.ConductorObjectVersion(Release) && v != nodeObjectVersion && v != "textnull") {
				t.Fatalf("%s: row %q %q %q", q, c, u, v)
			}
		}
		rows.Close()
	}
	for _, table := range []string{"conductors", "nodes", "conductor_hardware_interfaces"} {
		var n int
		if err := raw.QueryRow(`SELECT count(*) FROM ` + table +
			` WHERE typeof(created_at) != 'text' OR typeof(updated_at) NOT IN ('text', 'null')`).Scan(&n); err != nil || n != 0 {
			t.Errorf("%s: %d timestamps not stored as text (%v)", table, n, err)
		}
	}
	var drivers string
	if err := raw.QueryRow(`SELECT drivers FROM conductors WHERE hostname='cond-1'`).Scan(&drivers); err != nil ||
		drivers != `["ipmi", "redfish", "idrac", "ilo"]` {
		t.Errorf("drivers %q (%v), want Python's json.dumps", drivers, err)
	}

	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("database left behind: %v", err)
	}
}

// TestTempDirRemoved: without a path the database lives in a temporary
// directory that Close removes.
func TestTempDirRemoved(t *testing.T) {
	t.Parallel()
	d, err := Start(Options{Speed: MaxSpeed})
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Dir(d.path)
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("temporary directory left behind: %v", err)
	}
	if err := d.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if _, err := Start(Options{Speed: MaxSpeed + 1}); err == nil {
		t.Error("speed above MaxSpeed accepted")
	}
}

// waitFor polls cond until it holds, for timeout stretched by the
// machine's load (testenv.Scaled).
func waitFor(t *testing.T, what string, timeout time.Duration, cond func() bool) {
	t.Helper()
	timeout = testenv.Scaled(timeout)
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("after %s: still waiting for %s", timeout, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestSimulator: the simulator drains, crashes and restarts conductors and
// enrols nodes as Ironic does, as read through db.Open. It polls: at half
// the top speed each state lasts twice as long, so that a poll slowed by the
// race detector on a busy machine still sees every one.
func TestSimulator(t *testing.T) {
	t.Parallel()
	const speed = MaxSpeed / 2
	d, err := Start(Options{Speed: speed, Logger: newLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	r := open(t, d)
	drained, crashed := drainVictims[0], crashVictims[0]
	find := func(topo *topology.Topology, host string) topology.ConductorInfo {
		for _, c := range topo.Conductors {
			if c.Hostname == host {
				return c
			}
		}
		t.Fatalf("no conductor %s", host)
		return topology.ConductorInfo{}
	}
	reserved := func(snap *db.Snapshot, host string) int {
		n := 0
		for _, x := range snap.Nodes {
			if x.Reservation != nil && *x.Reservation == host {
				n++
			}
		}
		return n
	}
	snap0, _ := build(t, d, r)
	// Every event comes once a cycle, in whatever order it is seen; a loaded
	// machine delays the simulator's clock-driven events, so the wait is a
	// generous bound (six cycles), not a measurement.
	timeout := 6 * Cycle / speed
	var sawDrain, sawDrainBack, sawCrashLocks, sawCrash, sawCrashBack, sawEnroll bool
	defer func() {
		if t.Failed() {
			t.Logf("seen: drain %v, drain back %v, crash %v, crash back %v, enrolment %v",
				sawDrain, sawDrainBack, sawCrash, sawCrashBack, sawEnroll)
		}
	}()
	waitFor(t, "every event of a cycle", timeout, func() bool {
		snap, topo := build(t, d, r)
		dc, cc := find(topo, drained), find(topo, crashed)
		if !dc.Online && dc.State == rules.StateStopped && len(dc.HardwareTypes) == 0 && reserved(snap, drained) == 0 {
			sawDrain = true
		}
		if sawDrain && dc.Online && dc.State == rules.StateAlive && len(dc.HardwareTypes) > 0 {
			sawDrainBack = true
		}
		// Its locks taken just before the crash (its peers break them once
		// its heartbeat is stale); then dead to Ironic's API, still in
		// its rings on SQLite.
		if reserved(snap, crashed) >= locksAtCrash {
			sawCrashLocks = true
		}
		if sawCrashLocks && cc.Online && !cc.Alive && cc.Active {
			sawCrash = true
		}
		if sawCrash && cc.Alive {
			sawCrashBack = true
		}
		if len(snap.Nodes) >= len(snap0.Nodes)+nodesEnrolled {
			sawEnroll = true
		}
		return sawDrain && sawDrainBack && sawCrash && sawCrashBack && sawEnroll
	})
}

// proc is the demo command running as a process.
type proc struct {
	*testenv.Process
	addr string
}

func (p *proc) get(t *testing.T, path, accept string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, "http://"+p.addr+path, nil)
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// metrics maps each series of /metrics ("name{labels}") to its value.
func (p *proc) metrics(t *testing.T) map[string]float64 {
	t.Helper()
	code, body := p.get(t, "/metrics", "")
	if code != http.StatusOK {
		t.Fatalf("/metrics: %d\n%s", code, body)
	}
	out := map[string]float64{}
	for line := range strings.Lines(body) {
		if strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if i < 0 {
			continue
		}
		v, err := strconv.ParseFloat(strings.TrimSpace(line[i+1:]), 64)
		if err == nil {
			out[line[:i]] = v
		}
	}
	return out
}

// TestDemoCommand runs `ironic_conductor_exporter demo` on a free port, fast,
// and watches the metrics, the JSON API and the status page change.
func TestDemoCommand(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	bin := filepath.Join(dir, "ironic_conductor_exporter")
	args := []string{"build", "-o", bin}
	if raceBuild {
		args = append(args, "-race")
	}
	if out, err := exec.Command("go", append(args, "../cmd/ironic_conductor_exporter")...).CombinedOutput(); err != nil {
		t.Fatalf("building the binary: %v\n%s", err, out)
	}
	p := &proc{addr: testenv.FreeAddr(t)}
	dbPath := filepath.Join(dir, "demo.sqlite")
	const speed = 10
	start := time.Now()
	p.Process = testenv.Start(t, "demo", bin, []string{"IRONIC_EXPORTER_DB_DSN="}, // the demo ignores it anyway
		"demo", "--web.listen-address="+p.addr, fmt.Sprintf("--demo.speed=%d", speed), "--demo.db-path="+dbPath)

	waitFor(t, "the demo to answer", 20*time.Second, func() bool {
		resp, err := http.Get("http://" + p.addr + "/healthz")
		if err == nil {
			resp.Body.Close()
		}
		return err == nil
	})
	// The first refresh can come before the simulated conductors' first
	// heartbeat (heartbeat_timeout is 1 s here): a machine under load has
	// then seen every conductor dead, and no ring. Wait for the rings.
	var first map[string]float64
	rings := 0
	waitFor(t, "ironic_up 1 and the conductors' rings", 5*time.Second, func() bool {
		first, rings = p.metrics(t), 0
		for s := range first {
			if strings.HasPrefix(s, "ironic_hash_ring_conductors{") {
				rings++
			}
		}
		return first["ironic_up"] == 1 && rings > 0
	})
	if n := first["ironic_nodes"]; n < 1900 || n > 2100 {
		t.Errorf("ironic_nodes %v, want about 2000", n)
	}
	if rings < 8 {
		t.Errorf("%d rings, want several", rings)
	}

	// Over one cycle: the drained conductor is seen alive, draining and
	// stopped, the crashed one dead, locks held by a conductor not alive,
	// stranded boot files, and new nodes.
	drained, crashed := drainVictims[0], crashVictims[0]
	states := map[string]bool{}
	drainedStates := map[string]bool{}
	var sawCrash, sawEnroll, sawStuck, sawStranded bool
	defer func() {
		if t.Failed() {
			t.Logf("seen: states %v, %s %v, crash %v, enrolment %v, stuck %v, stranded %v",
				states, drained, drainedStates, sawCrash, sawEnroll, sawStuck, sawStranded)
		}
	}()
	waitFor(t, "the events of a cycle in /metrics", 6*Cycle/speed, func() bool {
		m := p.metrics(t)
		for s, v := range m {
			if strings.HasPrefix(s, "ironic_nodes_stuck{") && strings.Contains(s, `reason="lock_holder_not_alive"`) && v > 0 {
				sawStuck = true
			}
			if strings.HasPrefix(s, "ironic_nodes_affinity_unavailable{") && strings.Contains(s, `affinity="not_alive"`) && v > 0 {
				sawStranded = true
			}
		}
		for s, v := range m {
			if v != 1 || !strings.HasPrefix(s, "ironic_conductor_state{") {
				continue
			}
			st := s[strings.Index(s, `state="`)+7 : len(s)-2]
			states[st] = true
			if strings.Contains(s, `hostname="`+drained+`"`) {
				drainedStates[st] = true
			}
		}
		for s, v := range m {
			// dead; its locks are broken by its peers a heartbeat later
			// (the stuck lock_holder_not_alive above)
			if strings.HasPrefix(s, "ironic_conductor_state{") && strings.Contains(s, `hostname="`+crashed+`"`) &&
				strings.Contains(s, `state="dead"`) && v == 1 {
				sawCrash = true
			}
		}
		if m["ironic_nodes"] >= first["ironic_nodes"]+nodesEnrolled {
			sawEnroll = true
		}
		return drainedStates["alive"] && drainedStates["draining"] && drainedStates["stopped"] && sawCrash && sawEnroll &&
			sawStuck && sawStranded
	})
	t.Logf("states seen: %v; %s: %v", states, drained, drainedStates)

	// The JSON API.
	code, body := p.get(t, "/v1/conductors", "application/json")
	var conductors struct {
		Conductors []struct {
			Hostname string `json:"hostname"`
			Alive    bool   `json:"alive"`
		} `json:"conductors"`
	}
	if err := json.Unmarshal([]byte(body), &conductors); code != http.StatusOK || err != nil || len(conductors.Conductors) != len(fleetConductors) {
		t.Errorf("/v1/conductors: %d, %v, %d conductors\n%.500s", code, err, len(conductors.Conductors), body)
	}
	// The status page.
	code, body = p.get(t, "/", "text/html")
	if code != http.StatusOK || !strings.Contains(body, "<html") || !strings.Contains(body, "cond-edge3") {
		t.Errorf("status page: %d\n%.500s", code, body)
	}

	for _, want := range []string{"open the status page", "url=http://" + p.addr + "/", "heartbeat_timeout=1s",
		"--os-endpoint http://" + p.addr + " --os-auth-type none conductor list"} {
		if !strings.Contains(p.Logs(), want) {
			t.Errorf("the log does not say %q", want)
		}
	}
	if _, err := os.Stat(dbPath); err != nil {
		t.Errorf("database at --demo.db-path: %v", err)
	}
	if err := p.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-p.Done():
		if err := p.Err(); err != nil {
			t.Errorf("exit after SIGTERM: %v", err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("no exit 15s after SIGTERM")
	}
	if _, err := os.Stat(dbPath); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("database left behind after exit: %v", err)
	}
	if strings.Contains(p.Logs(), "DATA RACE") {
		t.Error("data race")
	}
	t.Logf("demo ran %s", time.Since(start).Round(time.Millisecond))
}
