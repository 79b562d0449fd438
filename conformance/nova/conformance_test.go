// Package novaconformance compares package nova with Nova itself: for each
// Debian release of python3-nova (conformance/nova/chroots.sh) and each
// backend of Nova's databases, reference.py runs Nova's real
// IronicDriver._refresh_cache per compute on cases written through Nova's
// objects into a schema nova-manage made, and this test computes the same
// cases, from the rows read back, with package nova: per compute, the ring
// and the set of nodes it manages (and why) must be equal.
//
// Environment: ICE_NOVA_SUITES (default "bookworm trixie sid"),
// ICE_NOVA_BACKENDS (default "sqlite postgresql mysql"), ICE_NOVA_RANDOM
// (generated cases per run, default 8, so that the package stays well
// inside go test's default 10 minutes under make unit; 24 took 8.6
// minutes on this 2-core machine).
package novaconformance

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/internal/testenv"
	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/nova"
	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/rules"
)

// The results' JSON, as reference.py writes it.
type (
	resultJSON struct {
		Name  string           `json:"name"`
		Cells []cellResultJSON `json:"cells"`
	}
	cellResultJSON struct {
		Name     string     `json:"name"`
		UUID     string     `json:"uuid"`
		Rows     rowsJSON   `json:"rows"`
		Computes []viewJSON `json:"computes"`
	}
	rowsJSON struct {
		Services []struct {
			ID         int64   `json:"id"`
			Host       *string `json:"host"`
			Binary     *string `json:"binary"`
			Disabled   *bool   `json:"disabled"`
			ForcedDown *bool   `json:"forced_down"`
			Deleted    bool    `json:"deleted"`
			CreatedAt  *string `json:"created_at"`
			LastSeenUp *string `json:"last_seen_up"`
			Version    int     `json:"version"`
		} `json:"services"`
		ComputeNodes []struct {
			ID                 int64   `json:"id"`
			UUID               *string `json:"uuid"`
			Host               *string `json:"host"`
			HypervisorHostname *string `json:"hypervisor_hostname"`
			HypervisorType     string  `json:"hypervisor_type"`
			Deleted            bool    `json:"deleted"`
		} `json:"compute_nodes"`
		Instances []struct {
			UUID    string  `json:"uuid"`
			Host    *string `json:"host"`
			Node    *string `json:"node"`
			Deleted bool    `json:"deleted"`
		} `json:"instances"`
	}
	viewJSON struct {
		Host  string            `json:"host"`
		Ring  []string          `json:"ring"`
		Nodes map[string]string `json:"nodes"`
		Error string            `json:"error"`
	}
)

func str(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

func parseTime(t *testing.T, p *string) time.Time {
	if p == nil {
		return time.Time{}
	}
	v, err := time.Parse(isoLayout, *p)
	if err != nil {
		t.Fatalf("time %q: %v", *p, err)
	}
	return v
}

var backends = map[string]rules.Backend{"sqlite": rules.SQLite, "postgresql": rules.PostgreSQL, "mysql": rules.MySQL}

func backendDeps(name string) []testenv.Dep {
	switch name {
	case "postgresql":
		return []testenv.Dep{testenv.PostgreSQL}
	case "mysql":
		return []testenv.Dep{testenv.MariaDB}
	}
	return nil
}

func TestNovaConformance(t *testing.T) {
	nRandom, _ := strconv.Atoi(testenv.EnvOr("ICE_NOVA_RANDOM", "8"))
	here, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for _, suite := range testenv.NovaSuites() {
		t.Run(suite, func(t *testing.T) {
			testenv.Need(t, testenv.NovaChroot(suite))
			v, _ := testenv.NovaVersion(suite)
			release, err := rules.ParseRelease(v)
			if err != nil {
				t.Fatal(err)
			}
			for _, bname := range strings.Fields(testenv.EnvOr("ICE_NOVA_BACKENDS", "sqlite postgresql mysql")) {
				t.Run(bname, func(t *testing.T) {
					testenv.Need(t, backendDeps(bname)...)
					backend := backends[bname]
					cases := fixedCases(backend)
					for i := range nRandom {
						cases = append(cases, randomCase(i+1, backend))
					}
					rr := newReaderRun(t, suite, bname)
					var between func(int, resultJSON)
					if rr != nil {
						between = rr.between(t, cases)
					}
					results := runReference(t, here, suite, bname, "ice_nova_"+suite, cases, between)
					agree, st := 0, stats{}
					var verdicts []string
					for i, c := range cases {
						verdict := "differ"
						if compare(t, release, backend, c, results[i], nil, &st) && (rr == nil || compare(t, release, backend, c, results[i], func(name string) (nova.Cell, error) { return rr.cell(i, name) }, &stats{})) {
							agree++
							verdict = "agree"
						}
						verdicts = append(verdicts, c.Name+": "+verdict)
					}
					// One line a case, for the case table (release x backend x case).
					t.Logf("CASES %s %s: %s", suite, bname, strings.Join(verdicts, "; "))
					if rr != nil {
						t.Logf("novadb read each case's databases twice (%d reads, %d of the second reused rows its probes vouched for): the views from its rows were compared too", rr.reads, rr.reused)
					}
					t.Logf("nova %s (%s) on %s: %d of %d cases agree; %d compute views (%d raised, %d with a ring of 3 or more), %d nodes managed by ring, %d by instance",
						release, v, bname, agree, len(cases), st.views, st.errors, st.bigRings, st.ring, st.instance)
					if st.errors == 0 || st.bigRings == 0 || st.ring == 0 || st.instance == 0 {
						t.Errorf("the cases do not exercise every path: %+v", st)
					}
				})
			}
		})
	}
}

// runReference runs reference.py in suite's chroot on cases, in the
// databases named prefix_api, prefix_cell0, ... (made once by nova-manage).
// When between is not nil, reference.py waits after each case until
// between has run (with the case's index and Nova's answer), the case's
// rows still in the databases.
func runReference(t *testing.T, here, suite, backend, prefix string, cases []caseJSON, between func(int, resultJSON)) []resultJSON {
	t.Helper()
	root := testenv.NovaChrootDir(suite)
	win := "/tmp/ice-nova-conformance"
	dir := filepath.Join(root, win)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile(filepath.Join(here, "reference.py"))
	if err != nil {
		t.Fatal(err)
	}
	var in bytes.Buffer
	enc := json.NewEncoder(&in)
	for _, c := range cases {
		if err := enc.Encode(c); err != nil {
			t.Fatal(err)
		}
	}
	casesFile := fmt.Sprintf("cases-%s-%d.json", backend, os.Getpid()) // runs may overlap
	defer func() { _ = os.Remove(filepath.Join(dir, casesFile)) }()
	for name, b := range map[string][]byte{"reference.py": src, casesFile: in.Bytes()} { // reference.py: the same bytes from every run of one revision
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// the schema is made once per work directory, and again when
	// reference.py changes (its digest names the directory)
	work := fmt.Sprintf("%s/work-%s-%x", win, backend, digest(src))
	cmd := testenv.Chroot(root, "/usr/bin/python3", win+"/reference.py",
		"--backend", backend, "--workdir", work, "--prefix", prefix, win+"/"+casesFile)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if between != nil {
		cmd.Args = append(cmd.Args[:len(cmd.Args)-1], "--pause", cmd.Args[len(cmd.Args)-1])
	}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var results []resultJSON
	sc := bufio.NewScanner(stdout)
	sc.Buffer(nil, 64<<20)
	for sc.Scan() {
		var r resultJSON
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("reference.py output: %v: %.200s", err, sc.Text())
		}
		if between != nil {
			between(len(results), r) // the case's rows are in the databases until the line below
			if _, err := io.WriteString(stdin, "\n"); err != nil {
				t.Fatalf("reference.py stdin: %v", err)
			}
		}
		results = append(results, r)
	}
	_ = stdin.Close()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("reference.py in %s: %v\n%s", suite, err, tail(stderr.String(), 4000))
	}
	if len(results) != len(cases) {
		t.Fatalf("reference.py answered %d of %d cases\n%s", len(results), len(cases), tail(stderr.String(), 4000))
	}
	return results
}

func digest(b []byte) uint32 {
	var h uint32 = 2166136261
	for _, c := range b {
		h = (h ^ uint32(c)) * 16777619
	}
	return h
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

// input is package nova's input for one cell of a case, from the rows
// reference.py read back from Nova's database.
func input(t *testing.T, release rules.Release, backend rules.Backend, c caseJSON, cell cellCaseJSON, res cellResultJSON) nova.Input {
	now, _ := time.Parse(isoLayout, c.Now)
	in := nova.Input{
		Now:           now,
		Rules:         rules.NewNova(release, backend, rules.NovaSettings{ServiceDownTime: c.Settings.ServiceDownTime, ReportInterval: c.Settings.ReportInterval}),
		IronicBackend: backends[c.IronicBackend],
		Cell:          nova.Cell{Name: res.Name, UUID: res.UUID},
	}
	for _, s := range res.Rows.Services {
		// the release the rows tell (rules.NovaReleaseOfServiceVersion) is the chroot's
		if o, n, ok := rules.NovaReleaseOfServiceVersion(s.Version); !ok || release.Before(o) || n.Before(release) {
			t.Errorf("%s: services.version %d gives %s-%s (known %v), the chroot has %s", c.Name, s.Version, o, n, ok, release)
		}
		in.Cell.Services = append(in.Cell.Services, nova.Service{ID: s.ID, Host: str(s.Host), Binary: str(s.Binary),
			Disabled: s.Disabled == nil || *s.Disabled, ForcedDown: s.ForcedDown != nil && *s.ForcedDown,
			Deleted: s.Deleted, CreatedAt: parseTime(t, s.CreatedAt), LastSeenUp: parseTime(t, s.LastSeenUp), Version: s.Version})
	}
	// The rows novadb's statements keep (SQLComputeNodes: hypervisor_type
	// 'ironic' as the database compares, the soft-deleted rows' hosts apart;
	// SQLInstances: deleted = 0).
	for _, x := range res.Rows.ComputeNodes {
		switch {
		case !in.Rules.SQLEqual(x.HypervisorType, "ironic"):
		case x.Deleted:
			if h := str(x.Host); !slices.Contains(in.Cell.SoftDeletedHosts, h) {
				in.Cell.SoftDeletedHosts = append(in.Cell.SoftDeletedHosts, h)
			}
		default:
			in.Cell.ComputeNodes = append(in.Cell.ComputeNodes, nova.ComputeNode{UUID: nova.KeyOf(str(x.UUID)), Host: str(x.Host),
				HypervisorHostname: nova.KeyOf(str(x.HypervisorHostname))})
		}
	}
	for _, x := range res.Rows.Instances {
		if !x.Deleted {
			in.Cell.Instances = append(in.Cell.Instances, nova.Instance{UUID: nova.KeyOf(x.UUID), Host: str(x.Host), Node: nova.KeyOf(str(x.Node))})
		}
	}
	var nodes nova.Nodes
	for _, n := range c.Nodes {
		nodes = append(nodes, nova.IronicNode{UUID: n.UUID, ConductorGroup: n.ConductorGroup, Shard: n.Shard,
			InstanceUUID: n.InstanceUUID, ParentNode: n.ParentNode})
	}
	in.Nodes = nodes
	for _, cp := range cell.Computes {
		in.Computes = append(in.Computes, nova.Compute{Host: cp.Host, ConductorGroup: cp.ConductorGroup, Shard: cp.Shard, PeerList: cp.PeerList})
	}
	return in
}

// compare reports differences between Nova's views and package nova's for
// case c; it returns whether all are equal.
// stats count what Nova's answers exercised.
type stats struct{ views, errors, bigRings, ring, instance int }

// With read nil, the rows are those reference.py read back; else those
// read returns (package novadb's), for the cell of that name.
func compare(t *testing.T, release rules.Release, backend rules.Backend, c caseJSON, res resultJSON, read func(string) (nova.Cell, error), st *stats) bool {
	t.Helper()
	if res.Name != c.Name || len(res.Cells) != len(c.Cells) {
		t.Errorf("%s: reference answered %q with %d cells", c.Name, res.Name, len(res.Cells))
		return false
	}
	ok := true
	for ci, cell := range c.Cells {
		in := input(t, release, backend, c, cell, res.Cells[ci])
		from := "rows read back"
		if read != nil {
			rows, err := read(cell.Name)
			if err != nil {
				t.Errorf("%s, %s: %v", c.Name, cell.Name, err)
				return false
			}
			if rows.UUID != in.Cell.UUID {
				t.Errorf("%s, %s: novadb read cell uuid %s, Nova's is %s", c.Name, cell.Name, rows.UUID, in.Cell.UUID)
			}
			in.Cell, from = rows, "novadb"
		}
		views := nova.Views(in)
		for vi, want := range res.Cells[ci].Computes {
			got := views[vi]
			st.views++
			if want.Error != "" {
				st.errors++
			}
			if len(want.Ring) >= 3 {
				st.bigRings++
			}
			for _, s := range want.Nodes {
				if s == "ring" {
					st.ring++
				} else {
					st.instance++
				}
			}
			gotNodes := map[string]string{}
			for _, m := range got.Nodes {
				gotNodes[in.Nodes[m.Node].UUID] = string(m.Source())
			}
			wantNodes := want.Nodes
			if wantNodes == nil {
				wantNodes = map[string]string{}
			}
			var diffs []string
			var ipl *rules.InvalidPeerList
			if ours := errors.As(got.Err, &ipl); (want.Error == "InvalidPeerList") != ours || (want.Error != "") != (got.Err != nil) {
				diffs = append(diffs, fmt.Sprintf("error: nova %q, ours %v", want.Error, got.Err))
			}
			if !slices.Equal(want.Ring, got.Ring) {
				diffs = append(diffs, fmt.Sprintf("ring: nova %v, ours %v", want.Ring, got.Ring))
			}
			if !maps.Equal(wantNodes, gotNodes) {
				var only []string
				for u, s := range wantNodes {
					if gotNodes[u] != s {
						only = append(only, "nova "+u+"="+s+" ours="+gotNodes[u])
					}
				}
				for u, s := range gotNodes {
					if _, in := wantNodes[u]; !in {
						only = append(only, "ours "+u+"="+s)
					}
				}
				slices.Sort(only)
				diffs = append(diffs, fmt.Sprintf("nodes: nova %d, ours %d: %s", len(wantNodes), len(gotNodes), strings.Join(only, "; ")))
			}
			if len(diffs) > 0 {
				ok = false
				t.Errorf("%s, %s, compute %s (from %s): %s", c.Name, cell.Name, want.Host, from, strings.Join(diffs, "; "))
			}
		}
	}
	return ok
}
