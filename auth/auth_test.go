package auth

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/auth/policy"
)

// TestAccessReusesItsTarget: one Access answers a sequence of node checks
// with and without owners and lessees as the policy does on the target
// Ironic builds for each (the target it reuses keeps nothing of the
// previous node), including when the
// credentials themselves hold node.owner or node.lessee; the conductor and
// list checks see the credentials' values.
func TestAccessReusesItsTarget(t *testing.T) {
	file := filepath.Join(t.TempDir(), "policy.yaml")
	rules := `"baremetal:node:get": "project_id:%(node.owner)s or project_id:%(node.lessee)s"
"baremetal:node:get:filter_threshold": "!"
"baremetal:node:get:reservation": "project_id:%(node.lessee)s"
"baremetal:conductor:get": "project_id:%(project_id)s and role:reader"
"baremetal:node:list_all": "project_id:P1"
"baremetal:node:list": "role:reader"
`
	if err := os.WriteFile(file, []byte(rules), 0o600); err != nil {
		t.Fatal(err)
	}
	e, err := policy.New(policy.Options{Release: policy.Release214, PolicyFile: file})
	if err != nil {
		t.Fatal(err)
	}
	s := func(v string) *string { return &v }
	nodes := []struct{ owner, lessee *string }{
		{s("P1"), s("P2")}, {nil, nil}, {s("P2"), nil}, {s(""), s("P1")}, {nil, s("P2")}, {s("P1"), s("")}, {nil, nil},
	}
	for _, creds := range []policy.Values{
		{"project_id": "P1", "roles": []string{"reader"}},
		{"project_id": "P2", "roles": []string{"member"}},
		{"project_id": "P2", "roles": []string{"reader"}, "node.lessee": "P2", "node.owner": "P2"},
	} {
		// target is a node check's target as Ironic builds it: a copy of
		// the credentials' values, then the node's owner (always, for
		// get) and lessee when set.
		target := func(owner, lessee *string, ownerAlways bool) policy.Values {
			t := policy.Values{}
			for k, v := range creds {
				t[k] = v
			}
			switch {
			case owner != nil && *owner != "":
				t["node.owner"] = *owner
			case ownerAlways && owner == nil:
				t["node.owner"] = nil
			case ownerAlways:
				t["node.owner"] = ""
			}
			if lessee != nil && *lessee != "" {
				t["node.lessee"] = *lessee
			}
			return t
		}
		reused := NewAccess(e, &Credentials{Values: creds})
		for i, n := range nodes {
			want := e.Check(policy.RuleNodeGet, target(n.owner, n.lessee, true), creds)
			if got := reused.CanGetNode(n.owner, n.lessee); got != want {
				t.Errorf("%v, node %d: CanGetNode %v after other nodes, want %v", creds, i, got, want)
			}
			tr := target(n.owner, n.lessee, false)
			want = e.Check(policy.RuleNodeFilterThreshold, tr, creds) || e.Check(policy.RuleNodeReservation, tr, creds)
			if got := reused.ShowReservation(n.owner, n.lessee); got != want {
				t.Errorf("%v, node %d: ShowReservation %v after other nodes, want %v", creds, i, got, want)
			}
		}
	}
	// The expected answers of one sequence, against the rules above.
	a := NewAccess(e, &Credentials{Values: policy.Values{"project_id": "P2", "roles": []string{"reader"}}})
	for i, want := range []struct{ get, reservation bool }{
		{true, true}, {false, false}, {true, false}, {false, false}, {true, true}, {false, false}, {false, false},
	} {
		n := nodes[i]
		if a.CanGetNode(n.owner, n.lessee) != want.get || a.ShowReservation(n.owner, n.lessee) != want.reservation {
			t.Errorf("P2, node %d: get %v, reservation %v; want %+v", i, a.CanGetNode(n.owner, n.lessee),
				a.ShowReservation(n.owner, n.lessee), want)
		}
	}
	if !a.CanGetConductors() {
		t.Error("conductor:get refused a reader of its own project")
	}
	if filter, _, ok := a.ListNodes(""); !ok || filter != "P2" {
		t.Errorf("ListNodes: %q, %v; want the caller's project", filter, ok)
	}
	if filter, _, ok := NewAccess(e, &Credentials{Values: policy.Values{"project_id": "P1"}}).ListNodes(""); !ok || filter != "" {
		t.Errorf("ListNodes of list_all: %q, %v; want every node", filter, ok)
	}
}
