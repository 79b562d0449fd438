package main

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	_ "modernc.org/sqlite"

	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/dbconn"
	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/internal/testenv"
	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/novadb"
)

// TestNovaSide runs the binary with Nova configured (through a nova.conf):
// it serves each node's nova-compute, the computes' state and the
// problems, the families in the README's table and promtool's rules; when
// nova_api goes away only the Nova answers go stale.
func TestNovaSide(t *testing.T) {
	needDB(t)
	testenv.Need(t, testenv.Promtool, testenv.BaremetalCLI)
	d := testIronicDB.DB(t)
	fixture(t, d)
	for _, q := range []string{
		`UPDATE nodes SET instance_uuid = 'aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa', provision_state = 'active' WHERE name = 'n1'`,
		`UPDATE nodes SET provision_state = 'available' WHERE name <> 'n1'`,
	} {
		if _, err := d.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	dir := t.TempDir()
	api, cell := filepath.Join(dir, "api.sqlite"), filepath.Join(dir, "cell1.sqlite")
	testenv.ExecSQLite(t, api, novadb.MiniAPISchemaSQLite,
		`INSERT INTO cell_mappings VALUES (1, '00000000-0000-0000-0000-000000000000', 'cell0', 'sqlite:///nowhere'),
		 (2, 'c1', 'cell1', 'sqlite:///`+cell+`')`)
	now := time.Now().UTC()
	ts := func(ago time.Duration) string { return now.Add(-ago).Format("2006-01-02 15:04:05") }
	testenv.ExecSQLite(t, cell, novadb.MiniCellSchemaSQLite,
		`INSERT INTO services VALUES (1, 'c-a', 'nova-compute', 0, 0, 0, '`+ts(time.Hour)+`', NULL, '`+ts(0)+`', 68),
		 (2, 'c-b', 'nova-compute', 0, 0, 0, '`+ts(time.Hour)+`', NULL, '`+ts(time.Hour)+`', 68)`,
		`INSERT INTO compute_nodes VALUES (1, '11111111-1111-4111-8111-111111111111', 'c-a', '11111111-1111-4111-8111-111111111111', 'ironic', 0, NULL, NULL, NULL),
		 (2, '22222222-2222-4222-8222-222222222222', 'c-b', '22222222-2222-4222-8222-222222222222', 'ironic', 0, NULL, NULL, NULL)`,
		`INSERT INTO instances VALUES (1, 'aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa', 'c-a', '11111111-1111-4111-8111-111111111111', 0, NULL, NULL, NULL)`)
	conf := filepath.Join(dir, "nova.conf")
	if err := os.WriteFile(conf, []byte("[api_database]\nconnection = sqlite:///"+api+"\n[database]\nconnection = sqlite://\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	p := start(t, dsnFor("127.0.0.1:5432"), "--nova.config-file="+conf, "--nova.refresh-interval=200ms")
	var body string
	waitFor := func(what string, ok func(string) bool) {
		t.Helper()
		deadline := time.Now().Add(15 * time.Second)
		for {
			var code int
			code, body = p.get(t, "/metrics")
			if code == http.StatusOK && ok(body) {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: /metrics %d\n%s\n%s", what, code, grepLines(body, "nova"), p.Tail(4000))
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	waitFor("the Nova answer", func(b string) bool {
		return strings.Contains(b, `ironic_node_nova_compute_info{cell="cell1",node_uuid="11111111-1111-4111-8111-111111111111",nova_compute="c-a",source="instance"} 1`)
	})
	for _, want := range []string{
		"ironic_exporter_nova_api_up 1", `ironic_exporter_nova_cell_up{cell="cell1"} 1`,
		`ironic_exporter_nova_computes_settings_info{source="assumed"} 1`,
		`ironic_exporter_nova_cell_connection_info{cell="cell1",credentials="cell_mappings",user=""} 1`,
		`ironic_nova_compute_up{cell="cell1",host="c-a"} 1`, `ironic_nova_compute_up{cell="cell1",host="c-b"} 0`,
		`ironic_nova_compute_ring_member{cell="cell1",host="c-b"} 0`,
		`ironic_nova_problems{reason="node_no_compute_record"} 1`, // n3: available, no compute_nodes row
		`ironic_nova_problems{reason="instance_mismatch"} 0`,
		"ironic_exporter_nova_refresh_errors_total 0", `ironic_exporter_nova_last_refresh_error{kind="connection"} 0`,
	} {
		if !strings.Contains(body, want+"\n") {
			t.Errorf("/metrics lacks %s\n%s", want, grepLines(body, "nova"))
		}
	}
	// c-a, alone on its ring (c-b is down), manages every node in its view.
	if n := regexp.MustCompile(`ironic_node_nova_compute_info\{[^}]*nova_compute="c-a"`).FindAllString(body, -1); len(n) != 3 {
		t.Errorf("c-a claims %d nodes, want 3\n%s", len(n), grepLines(body, "nova_compute_info"))
	}
	table := readmeMetrics(t)
	for _, line := range strings.Split(body, "\n") {
		if f := strings.Fields(line); len(f) == 4 && f[1] == "TYPE" && strings.Contains(f[2], "nova") {
			if typ, ok := table[f[2]]; !ok || typ != f[3] {
				t.Errorf("%s (%s): README.md's Metrics table says %q", f[2], f[3], typ)
			}
		}
	}
	cmd := exec.Command("promtool", "check", "metrics")
	cmd.Stdin = strings.NewReader(body)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("promtool check metrics: %v\n%s", err, out)
	}

	// The stock CLI, from the instance: the node, its conductor and its
	// nova-compute.
	cli := exec.Command("baremetal", "node", "show", "--instance", "aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa", "-f", "json")
	cli.Env = append(os.Environ(), "OS_ENDPOINT=http://"+p.addr, "OS_AUTH_TYPE=none")
	out, err := cli.CombinedOutput()
	if err != nil {
		t.Fatalf("baremetal node show --instance: %v\n%s", err, out)
	}
	for _, want := range []string{`"name": "n1"`, `"conductor": "c`, `"exporter_nova_computes": [`, `"host": "c-a"`, `"source": "instance"`, `"up": true`} {
		if !strings.Contains(string(out), want) {
			t.Errorf("baremetal node show --instance lacks %s:\n%s", want, out)
		}
	}

	// The status page, from the instance.
	req, _ := http.NewRequest(http.MethodGet, "http://"+p.addr+"/?node=aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa", nil)
	req.Header.Set("Accept", "text/html")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	for _, want := range []string{`id="lookup-instance"`, `<strong>c-a</strong> (cell cell1, by instance)`, `id="nova-computes"`} {
		if !strings.Contains(string(page), want) {
			t.Errorf("status page lacks %s", want)
		}
	}

	// nova_api failing: the Nova answers stay, marked stale; Ironic's are untouched.
	testenv.ExecSQLite(t, api, `ALTER TABLE cell_mappings RENAME TO cell_mappings_away`)
	waitFor("nova_api down", func(b string) bool { return strings.Contains(b, "ironic_exporter_nova_api_up 0\n") })
	for _, want := range []string{"ironic_up 1\n", `nova_compute="c-a",source="instance"} 1`} {
		if !strings.Contains(body, want) {
			t.Errorf("with nova_api down, /metrics lacks %s", want)
		}
	}
}

// grepLines are the lines of s that contain sub.
func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// TestNovaCellTemplateFlags: nova_api's DSN and the cells' template from
// files; the cell is then read with the template's connection, never the
// URL cell_mappings holds (here a file that does not exist); a flag given
// twice, or a template without nova_api, is refused.
func TestNovaCellTemplateFlags(t *testing.T) {
	dir := t.TempDir()
	api, cell := filepath.Join(dir, "api.sqlite"), filepath.Join(dir, "cell1.sqlite")
	testenv.ExecSQLite(t, api, novadb.MiniAPISchemaSQLite,
		`INSERT INTO cell_mappings VALUES (1, 'c1', 'cell1', 'sqlite:///`+dir+`/missing/cell1.sqlite')`)
	testenv.ExecSQLite(t, cell, novadb.MiniCellSchemaSQLite)
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	// a SQLite URL has no host to fill: the template names the file, its
	// scheme filled from the cell's URL
	// a nova.conf without [api_database] (a nova-compute's), its
	// servicegroup_driver read
	c := novaConfig{dsnFile: write("api.dsn", "sqlite:///"+api),
		cellTemplateFile: write("cells.tmpl", "{scheme}:///"+cell),
		configFiles:      []string{write("nova.conf", "[DEFAULT]\nservicegroup_driver = mc\n")}}
	cache, reader, err := setupNova(c, dbconn.Options{}, time.Second, nil, nil, slog.New(slog.DiscardHandler))
	if err != nil || cache == nil {
		t.Fatalf("setupNova: %v", err)
	}
	defer func() { _ = reader.Close() }()
	if d := cache.Current().ServicegroupDriver; d != "mc" {
		t.Errorf("servicegroup_driver %q, want mc", d)
	}
	snap, err := reader.Read(context.Background(), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if cr := snap.Cells[0]; cr.Err != nil || cr.Credentials != novadb.CredentialsTemplate || cr.Database != "sqlite:///"+cell {
		t.Errorf("cell read %q from %s: %v; want the template's", cr.Credentials, cr.Database, cr.Err)
	}
	for _, bad := range []novaConfig{
		{dsn: "sqlite:///" + api, dsnFile: c.dsnFile},
		{dsnFile: c.dsnFile, cellTemplate: "x", cellTemplateFile: c.cellTemplateFile},
		{cellTemplate: "sqlite:///{path}"},
		{dsnFile: write("empty", "")},
	} {
		if _, _, err := setupNova(bad, dbconn.Options{}, time.Second, nil, nil, slog.New(slog.DiscardHandler)); err == nil {
			t.Errorf("setupNova(%+v) works; want an error", bad)
		}
	}
}
