package main

// Fault tests of the whole binary against a real PostgreSQL holding the
// schema Ironic's own migrations create (scripts/ironic-schema.sh, Debian
// python3-ironic). They build the binary once and run it as a process.

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	_ "github.com/lib/pq"

	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/internal/testenv"
)

var (
	binary       string
	testIronicDB *testenv.IronicDB
	dbName       string
)

func TestMain(m *testing.M) { os.Exit(testMain(m)) }

func testMain(m *testing.M) int {
	var (
		cleanup func()
		err     error
	)
	if binary, testIronicDB, dbGate, cleanup, err = testenv.Setup("ice_cmd_test"); err != nil {
		fmt.Fprintf(os.Stderr, "FAIL: %v\n", err)
		return 1
	}
	defer cleanup()
	if testIronicDB != nil {
		dbName = testIronicDB.Name
	}
	return m.Run()
}

// dbGate tells the tests that need the Ironic database (PostgreSQL,
// python3-ironic) whether TestMain could make it; the flag tests need only
// the binary.
var dbGate *testenv.Gate

// needDB skips t (fails it under ICE_TEST_REQUIRE_ALL=1) without the Ironic
// database.
func needDB(t testing.TB) {
	t.Helper()
	dbGate.Check(t)
}

// fixture empties the tables and adds two conductors and three nodes.
func fixture(t *testing.T, d *sql.DB) {
	t.Helper()
	for _, q := range []string{
		`DELETE FROM nodes`, `DELETE FROM conductor_hardware_interfaces`, `DELETE FROM conductors`,
		`INSERT INTO conductors (id, hostname, drivers, online, conductor_group, created_at, updated_at)
		 VALUES (1, 'c1', '["ipmi"]', true, '', now() at time zone 'utc', now() at time zone 'utc'),
		        (2, 'c2', '["ipmi"]', true, '', now() at time zone 'utc', now() at time zone 'utc')`,
		`INSERT INTO conductor_hardware_interfaces (conductor_id, hardware_type, interface_type, interface_name, "default", created_at)
		 VALUES (1, 'ipmi', 'power', 'ipmitool', true, now()), (2, 'ipmi', 'power', 'ipmitool', true, now())`,
		`INSERT INTO nodes (uuid, name, driver, conductor_group, created_at)
		 VALUES ('11111111-1111-4111-8111-111111111111', 'n1', 'ipmi', '', now()),
		        ('22222222-2222-4222-8222-222222222222', 'n2', 'ipmi', '', now()),
		        ('33333333-3333-4333-8333-333333333333', 'n3', 'ipmi', '', now())`,
	} {
		if _, err := d.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
}

// proc is a running exporter.
type proc struct {
	*testenv.Process
	addr string
}

// start runs the exporter with the DSN and extra flags and waits until it
// answers /healthz.
func start(t *testing.T, dsn string, flags ...string) *proc {
	t.Helper()
	p := &proc{addr: testenv.FreeAddr(t)}
	args := append([]string{"--web.listen-address=" + p.addr, "--refresh.min-interval=0s", "--log.level=debug"}, flags...)
	p.Process = testenv.Start(t, "exporter", binary, []string{"IRONIC_EXPORTER_DB_DSN=" + dsn}, args...)
	deadline := time.Now().Add(10 * time.Second)
	for {
		resp, err := http.Get("http://" + p.addr + "/healthz")
		if err == nil {
			resp.Body.Close()
			return p
		}
		if time.Now().After(deadline) {
			t.Fatalf("exporter did not start: %v\n%s", err, p.Logs())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (p *proc) get(t *testing.T, path string) (int, string) {
	t.Helper()
	resp, err := http.Get("http://" + p.addr + path)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// metric returns the value of one exact series line of /metrics, or "",
// scraped as Prometheus does: with a 3s scrape timeout header, which the
// exporter waits up to for a running refresh (a reader without it waits
// 500ms at most and gets the last view).
func (p *proc) metric(t *testing.T, series string) string {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, "http://"+p.addr+"/metrics", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("X-Prometheus-Scrape-Timeout-Seconds", "3")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("GET /metrics: %v", err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	body := string(b)
	for _, line := range strings.Split(body, "\n") {
		if v, ok := strings.CutPrefix(line, series+" "); ok {
			return v
		}
	}
	return ""
}

func dsnFor(hostport string) string {
	return fmt.Sprintf("postgresql+psycopg2://postgres:s3cret-pw@%s/%s?sslmode=disable", hostport, dbName)
}

// TestDatabaseDownAtStart: the process runs, ironic_up is 0, the JSON API
// answers 503 with Ironic's error body, and the password is never logged.
func TestDatabaseDownAtStart(t *testing.T) {
	needDB(t)
	p := start(t, dsnFor(testenv.FreeAddr(t)))
	if v := p.metric(t, "ironic_up"); v != "0" {
		t.Errorf("ironic_up = %q, want 0", v)
	}
	code, body := p.get(t, "/v1/conductors")
	if code != http.StatusServiceUnavailable {
		t.Errorf("/v1/conductors: %d, want 503", code)
	}
	var envelope struct {
		ErrorMessage string `json:"error_message"`
	}
	if err := json.Unmarshal([]byte(body), &envelope); err != nil || !strings.Contains(envelope.ErrorMessage, `"faultstring"`) {
		t.Errorf("error body %q is not Ironic's (%v)", body, err)
	}
	if code, _ := p.get(t, "/readyz"); code != http.StatusServiceUnavailable {
		t.Errorf("/readyz: %d, want 503", code)
	}
	if strings.Contains(p.Logs(), "s3cret-pw") {
		t.Errorf("password in the logs:\n%s", p.Logs())
	}
}

// proxy is a TCP proxy to PostgreSQL that the test can cut and restore, to
// lose the database without stopping the shared server.
type proxy struct {
	addr   string
	mu     sync.Mutex
	ln     net.Listener
	conns  []net.Conn
	target string
}

func newProxy(t *testing.T, target string) *proxy {
	p := &proxy{addr: testenv.FreeAddr(t), target: target}
	p.up(t)
	t.Cleanup(p.down)
	return p
}

func (p *proxy) up(t *testing.T) {
	ln, err := net.Listen("tcp", p.addr)
	if err != nil {
		t.Fatal(err)
	}
	p.mu.Lock()
	p.ln = ln
	p.mu.Unlock()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s, err := net.Dial("tcp", p.target)
			if err != nil {
				c.Close()
				continue
			}
			p.mu.Lock()
			p.conns = append(p.conns, c, s)
			p.mu.Unlock()
			go func() { _, _ = io.Copy(s, c); s.Close() }()
			go func() { _, _ = io.Copy(c, s); c.Close() }()
		}
	}()
}

func (p *proxy) down() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ln != nil {
		p.ln.Close()
		p.ln = nil
	}
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
}

// TestDatabaseLostAndRecovered: after the database goes away the last good
// topology is still served (JSON and metrics), ironic_up is 0 and the data
// age grows; when it comes back the exporter recovers by itself.
func TestDatabaseLostAndRecovered(t *testing.T) {
	needDB(t)
	fixture(t, testIronicDB.DB(t))
	px := newProxy(t, "127.0.0.1:5432")
	p := start(t, dsnFor(px.addr), "--db.query-timeout=1s", "--refresh.timeout=2s")
	if v := p.metric(t, "ironic_up"); v != "1" {
		t.Fatalf("ironic_up = %q before the loss, want 1\n%s", v, p.Logs())
	}
	if v := p.metric(t, `ironic_conductor_nodes{conductor_group="",hostname="c1"}`); v == "" {
		t.Fatal("no ironic_conductor_nodes for c1")
	}

	px.down()
	time.Sleep(1100 * time.Millisecond)
	if v := p.metric(t, "ironic_up"); v != "0" {
		t.Errorf("ironic_up = %q after the loss, want 0", v)
	}
	if v := p.metric(t, `ironic_conductor_alive{conductor_group="",hostname="c1"}`); v != "1" {
		t.Errorf("last good topology not served: alive = %q", v)
	}
	if age := p.metric(t, "ironic_exporter_data_age_seconds"); age == "" || age == "0" {
		t.Errorf("data age = %q, want > 0", age)
	}
	code, body := p.get(t, "/v1/nodes/n1/conductor")
	if code != http.StatusOK || !strings.Contains(body, `"hostname"`) {
		t.Errorf("lookup during the outage: %d %s", code, body)
	}
	if !strings.Contains(p.Logs(), "refresh failed") || strings.Contains(p.Logs(), "s3cret-pw") {
		t.Errorf("want a logged failure without the password:\n%s", p.Logs())
	}

	px.up(t)
	deadline := time.Now().Add(15 * time.Second)
	for p.metric(t, "ironic_up") != "1" {
		if time.Now().After(deadline) {
			t.Fatalf("no recovery after the database came back\n%s", p.Logs())
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// TestHungQuery: a lock that blocks the snapshot's query makes the refresh
// hit its deadline; scrapes still answer in time with the stale topology,
// and the exporter recovers once the lock is gone.
func TestHungQuery(t *testing.T) {
	needDB(t)
	d := testIronicDB.DB(t)
	fixture(t, d)
	p := start(t, dsnFor("127.0.0.1:5432"), "--db.query-timeout=500ms", "--refresh.timeout=3s")
	if v := p.metric(t, "ironic_up"); v != "1" {
		t.Fatalf("ironic_up = %q, want 1", v)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	tx, err := d.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec("LOCK TABLE nodes IN ACCESS EXCLUSIVE MODE"); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	v := p.metric(t, "ironic_up")
	if took := time.Since(start); took > 3*time.Second {
		t.Errorf("scrape took %v with a hung query and a 500ms query timeout", took)
	}
	if v != "0" {
		t.Errorf("ironic_up = %q during the hang, want 0", v)
	}
	if got := p.metric(t, `ironic_conductor_nodes{conductor_group="",hostname="c1"}`); got == "" {
		t.Error("stale topology not served during the hang")
	}
	// The change probe of the nodes table is the first query to wait.
	if !strings.Contains(p.Logs(), "probing nodes") && !strings.Contains(p.Logs(), "reading nodes") {
		t.Errorf("the error does not name the query:\n%s", p.Logs())
	}
	_ = tx.Rollback()
	if v := p.metric(t, "ironic_up"); v != "1" {
		t.Errorf("ironic_up = %q after the lock went, want 1", v)
	}
}

// TestSIGTERM: the process shuts down gracefully and exits 0.
func TestSIGTERM(t *testing.T) {
	needDB(t)
	fixture(t, testIronicDB.DB(t))
	p := start(t, dsnFor("127.0.0.1:5432"))
	p.metric(t, "ironic_up")
	if err := p.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-p.Done():
		if err := p.Err(); err != nil {
			t.Errorf("exit after SIGTERM: %v\n%s", err, p.Logs())
		}
	case <-time.After(15 * time.Second):
		t.Fatal("no exit 15s after SIGTERM")
	}
	if !strings.Contains(p.Logs(), "shutting down") {
		t.Errorf("no shutdown log:\n%s", p.Logs())
	}
}

// TestListenerFailureStopsAll: the listeners share one lifecycle: when the
// web door cannot listen (its port is taken), the probe server already
// serving is shut down too and the process exits non-zero, naming the
// cause, instead of serving probes that say all is well.
func TestListenerFailureStopsAll(t *testing.T) {
	needDB(t)
	fixture(t, testIronicDB.DB(t))
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	probes := testenv.FreeAddr(t)
	p := testenv.Start(t, "exporter", binary, []string{"IRONIC_EXPORTER_DB_DSN=" + dsnFor("127.0.0.1:5432")},
		"--web.listen-address="+taken.Addr().String(), "--web.probe-listen-address="+probes)
	select {
	case <-p.Done():
		if p.Err() == nil || !strings.Contains(p.Logs(), "address already in use") {
			t.Errorf("exit %v with the web door's port taken, want a failure naming it:\n%s", p.Err(), p.Logs())
		}
	case <-time.After(15 * time.Second):
		t.Fatalf("still running 15s after its web door failed:\n%s", p.Logs())
	}
	if resp, err := http.Get("http://" + probes + "/healthz"); err == nil {
		resp.Body.Close()
		t.Error("the probe server still answers after the process exited")
	}
}

// TestBadFlags: start-up errors are clear and exit non-zero, without
// echoing secrets.
func TestBadFlags(t *testing.T) {
	cases := []struct {
		args []string
		env  string
		want string
	}{
		{[]string{"--ironic.hash-ring-algorithm=shake_128"}, "postgresql://u:pw-secret@127.0.0.1/x", "shake_128"},
		{[]string{"--ironic.hash-partition-exponent=40"}, "postgresql://u:pw-secret@127.0.0.1/x", "exponent"},
		{nil, "", "no database"},
		{nil, "oracle://u:pw-secret@h/x", "oracle"},
		{[]string{"--db.dsn-file=/nonexistent/dsn"}, "", "/nonexistent/dsn"},
	}
	for _, tc := range cases {
		cmd := exec.Command(binary, append([]string{"--web.listen-address=" + testenv.FreeAddr(t)}, tc.args...)...)
		cmd.Env = append(os.Environ(), "IRONIC_EXPORTER_DB_DSN="+tc.env)
		out, err := cmd.CombinedOutput()
		if err == nil {
			t.Errorf("%v %q: exit 0, want an error", tc.args, tc.env)
			continue
		}
		if !strings.Contains(string(out), tc.want) || strings.Contains(string(out), "pw-secret") {
			t.Errorf("%v %q: output %q should name %q and never the password", tc.args, tc.env, out, tc.want)
		}
	}
}

// TestMetricsPromtool runs the real exposition of the binary, on a real
// database, through `promtool check metrics` (Debian prometheus).
func TestMetricsPromtool(t *testing.T) {
	needDB(t)
	testenv.Need(t, testenv.Promtool)
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		t.Fatal("promtool not found: install Debian's prometheus package (make provision does)")
	}
	fixture(t, testIronicDB.DB(t))
	p := start(t, dsnFor("127.0.0.1:5432"))
	code, body := p.get(t, "/metrics")
	if code != http.StatusOK || !strings.Contains(body, "ironic_up 1") {
		t.Fatalf("/metrics: %d\n%s", code, body)
	}
	for _, want := range []string{"ironic_conductor_state{", "ironic_node_conductor_info{", "ironic_exporter_build_info{",
		"ironic_exporter_refresh_duration_seconds_bucket{", "ironic_hash_ring_conductors{",
		`ironic_exporter_node_reads_total{kind="full"} `} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	// The README's metric table lists every ironic_ family served, with
	// its type.
	table := readmeMetrics(t)
	for _, line := range strings.Split(body, "\n") {
		f := strings.Fields(line)
		if len(f) != 4 || f[0] != "#" || f[1] != "TYPE" || !strings.HasPrefix(f[2], "ironic_") {
			continue
		}
		if typ, ok := table[f[2]]; !ok {
			t.Errorf("/metrics serves %s, which README.md's Metrics table does not list", f[2])
		} else if typ != f[3] {
			t.Errorf("%s is a %s, README.md's Metrics table says %s", f[2], f[3], typ)
		}
	}
	cmd := exec.Command(promtool, "check", "metrics")
	cmd.Stdin = strings.NewReader(body)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("promtool check metrics: %v\n%s", err, out)
	}
}

// readmeMetrics reads the metric table of README.md's Metrics section:
// each metric's type by name.
func readmeMetrics(t *testing.T) map[string]string {
	t.Helper()
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	in := false
	for _, line := range strings.Split(string(readme), "\n") {
		if strings.HasPrefix(line, "## ") {
			in = line == "## Metrics"
			continue
		}
		cells := strings.Split(line, "|")
		if !in || len(cells) < 4 {
			continue
		}
		if name := strings.Trim(strings.TrimSpace(cells[1]), "`"); strings.HasPrefix(name, "ironic_") {
			out[name] = strings.TrimSpace(cells[2])
		}
	}
	if len(out) < 10 {
		t.Fatalf("README.md: %d metrics in the Metrics table; has its format changed?", len(out))
	}
	return out
}

// writeIronicConf writes an ironic.conf for the test database in a
// temporary directory and returns its path.
func writeIronicConf(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "ironic.conf")
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestIronicConfigFile: with only --ironic.config-file the exporter takes
// the database and the ring settings from Ironic's file; explicit flags and
// the DSN variable win over it; the password is never logged.
func TestIronicConfigFile(t *testing.T) {
	needDB(t)
	fixture(t, testIronicDB.DB(t))
	conf := writeIronicConf(t, `[DEFAULT]
debug = true
hash_partition_exponent = 7
hash_ring_algorithm = sha256

[conductor]
heartbeat_timeout = 30

[database]
connection = `+dsnFor("127.0.0.1:5432")+`
max_pool_size = 5

[DEFAULT]
auth_strategy = noauth
graceful_shutdown_timeout = 90

[conductor]
periodic_max_workers = 4
sync_local_state_interval = 20
conductor_cleanup_timeout = 600
`)
	t.Run("from the file", func(t *testing.T) {
		p := start(t, "", "--ironic.config-file="+conf)
		if v := p.metric(t, "ironic_up"); v != "1" {
			t.Fatalf("ironic_up = %q", v)
		}
		logs := p.Logs()
		for _, want := range []string{"heartbeat_timeout=30s", "hash_partition_exponent=7", "hash_ring_algorithm=sha256",
			"read Ironic's configuration", `database="[database] connection in ` + conf + `:10"`,
			`graceful_shutdown_timeout="[DEFAULT] graceful_shutdown_timeout in ` + conf + `:15"`,
			`periodic_max_workers="[conductor] periodic_max_workers in ` + conf + `:18"`,
			`sync_local_state_interval="[conductor] sync_local_state_interval in ` + conf + `:19"`,
			`conductor_cleanup_timeout="[conductor] conductor_cleanup_timeout in ` + conf + `:20"`} {
			if !strings.Contains(logs, want) {
				t.Errorf("logs lack %q:\n%s", want, logs)
			}
		}
		if strings.Contains(logs, "s3cret-pw") {
			t.Errorf("the password was logged:\n%s", logs)
		}
	})
	t.Run("flags win", func(t *testing.T) {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "50-ring.conf"), []byte("[DEFAULT]\nhash_partition_exponent = 6\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		p := start(t, dsnFor("127.0.0.1:5432"), "--ironic.config-file="+conf, "--ironic.config-dir="+dir,
			"--ironic.hash-ring-algorithm=md5", "--ironic.heartbeat-timeout=60s")
		if v := p.metric(t, "ironic_up"); v != "1" {
			t.Fatalf("ironic_up = %q", v)
		}
		logs := p.Logs()
		for _, want := range []string{"heartbeat_timeout=1m0s", "hash_partition_exponent=6", "hash_ring_algorithm=md5"} {
			if !strings.Contains(logs, want) {
				t.Errorf("logs lack %q:\n%s", want, logs)
			}
		}
		if strings.Contains(logs, `database="[database]`) {
			t.Errorf("the database came from the file although IRONIC_EXPORTER_DB_DSN was set:\n%s", logs)
		}
	})
}

// TestIronicConfigFileErrors: a bad file stops the exporter with an error
// naming the file, section and key, never the password.
func TestIronicConfigFileErrors(t *testing.T) {
	for _, tc := range []struct{ body, want string }{
		{"[database]\nconnection = postgresql://u:pw-secret@h/$nosuch\n", "[database] connection: substitution $nosuch"},
		{"[conductor]\nheartbeat_timeout = soon\n", `[conductor] heartbeat_timeout: not an integer: \"soon\"`}, // logfmt escapes the quotes
		{"connection = x\n", "assignment before any [section]"},
		{"[DEFAULT]\nhash_ring_algorithm = shake_128\n[database]\nconnection = postgresql://u:pw-secret@h/x\n",
			"[DEFAULT] hash_ring_algorithm in "},
		{"[database]\nconnection = oracle://u:pw-secret@h/x\n", "[database] connection in "},
	} {
		conf := writeIronicConf(t, tc.body)
		cmd := exec.Command(binary, "--web.listen-address="+testenv.FreeAddr(t), "--ironic.config-file="+conf)
		cmd.Env = append(os.Environ(), "IRONIC_EXPORTER_DB_DSN=")
		out, err := cmd.CombinedOutput()
		if err == nil {
			t.Errorf("%q: exit 0, want an error", tc.body)
			continue
		}
		if !strings.Contains(string(out), tc.want) || !strings.Contains(string(out), conf) || strings.Contains(string(out), "pw-secret") {
			t.Errorf("%q: output %q should name %q and the file, and never the password", tc.body, out, tc.want)
		}
	}
	cmd := exec.Command(binary, "--web.listen-address="+testenv.FreeAddr(t), "--ironic.config-file=/nonexistent/ironic.conf")
	cmd.Env = append(os.Environ(), "IRONIC_EXPORTER_DB_DSN=")
	if out, err := cmd.CombinedOutput(); err == nil || !strings.Contains(string(out), "/nonexistent/ironic.conf") {
		t.Errorf("missing file: %v %s", err, out)
	}
}
