package nova

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseComputes(t *testing.T) {
	f, err := ParseComputes(strings.NewReader(`
computes:
- host: ironic-0
  conductor_group: rack1
  peer_list: [ironic-0, ironic-1]
- host: ironic-1
  conductor_group: ""
- host: ironic-2
  cell: cell2
  shard: s1
`), "computes.yaml")
	if err != nil {
		t.Fatal(err)
	}
	cell1 := Cell{Name: "cell1", UUID: "u1", Services: []Service{{Host: "ironic-0"}, {Host: "ironic-1"}, {Host: "ironic-2"}}}
	got := f.For(cell1)
	rack1, def := "rack1", ""
	want := []Compute{{Host: "ironic-0", ConductorGroup: &rack1, PeerList: []string{"ironic-0", "ironic-1"}},
		{Host: "ironic-1", ConductorGroup: &def}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("cell1 (-want +got):\n%s", diff)
	}
	if got := f.For(Cell{Name: "cell2", UUID: "u2"}); len(got) != 1 || got[0].Host != "ironic-2" || got[0].Shard != "s1" || got[0].ConductorGroup != nil {
		t.Errorf("cell2: %+v", got)
	}
	if got := f.For(Cell{Name: "x", Services: []Service{{Host: "ironic-0", Deleted: true}}}); len(got) != 0 {
		t.Errorf("a deleted service's host: %+v", got)
	}
}

func TestParseComputesErrors(t *testing.T) {
	for _, tc := range []struct{ body, want string }{
		{"computes:\n- host: a\n  conductor-group: x\n", "field conductor-group not found"},
		{"computes:\n- cell: c\n", "computes[0]: no host"},
		{"computes:\n- host: a\n- host: a\n", `computes[1]: host "a" given again (computes[0])`},
		{"computes: [", "yaml"},
	} {
		_, err := ParseComputes(strings.NewReader(tc.body), "f.yaml")
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "f.yaml: ") {
			t.Errorf("%q: error %v, want one naming the file and %q", tc.body, err, tc.want)
		}
	}
	if f, err := ParseComputes(strings.NewReader(""), "empty"); err != nil || len(f.Computes) != 0 {
		t.Errorf("empty file: %v %v", f, err)
	}
}
