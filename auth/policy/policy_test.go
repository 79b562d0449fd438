package policy

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/rules"
)

func creds(project any, system any, roles ...string) Values {
	return Values{"project_id": project, "system_scope": system, "roles": roles, "domain_id": nil,
		"project_domain_id": "default", "project_name": "p"}
}

// TestDefaults214: Ironic 21.4's defaults for the personas of the
// conformance run (the deprecated defaults OR'd in, scope not enforced).
func TestDefaults214(t *testing.T) {
	e, err := New(Options{})
	if err != nil {
		t.Fatal(err)
	}
	node := Values{"node.owner": "P1", "node.lessee": "P2"}
	sys := creds(nil, "all", "reader")
	owner := creds("P1", nil, "member", "reader")
	lessee := creds("P2", nil, "member", "reader")
	none := creds(nil, nil)
	for _, tc := range []struct {
		rule string
		c    Values
		want bool
	}{
		{RuleNodeListAll, sys, true}, {RuleNodeListAll, owner, false}, {RuleNodeList, owner, true},
		{RuleNodeList, none, false}, {RuleConductorGet, sys, true}, {RuleConductorGet, owner, false},
		{RuleNodeGet, owner, true}, {RuleNodeGet, lessee, true}, {RuleNodeReservation, owner, true},
		{RuleNodeReservation, lessee, false}, {RuleNodeFilterThreshold, owner, false},
		// The deprecated default: an admin of any project reads everything.
		{RuleNodeListAll, creds("X", nil, "admin"), true},
	} {
		target := node
		if tc.rule == RuleNodeList || tc.rule == RuleNodeListAll || tc.rule == RuleConductorGet {
			target = Values{} // check_list_policy and check_policy: the creds only
		}
		if got := e.Check(tc.rule, target, tc.c); got != tc.want {
			t.Errorf("%s for %v = %v, want %v", tc.rule, tc.c, got, tc.want)
		}
	}
	// newest: no deprecated defaults, scope enforced.
	n, err := New(Options{Release: ReleaseNewest})
	if err != nil {
		t.Fatal(err)
	}
	if n.Check(RuleNodeListAll, node, creds("X", nil, "admin")) {
		t.Error("newest: a project admin passes list_all")
	}
	if n.Check(RuleConductorGet, node, creds("X", nil, "reader")) {
		t.Error("newest: a project token passes conductor:get (scope system)")
	}
}

// TestPolicyFile: a file rule wins; one the sidecar cannot parse is refused
// naming the rule.
func TestPolicyFile(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.yaml")
	if err := os.WriteFile(good, []byte(`"baremetal:conductor:get": "role:reader and not role:member"`+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	e, err := New(Options{PolicyFile: good})
	if err != nil {
		t.Fatal(err)
	}
	if !e.Check(RuleConductorGet, Values{}, creds("P", nil, "reader")) || e.Check(RuleConductorGet, Values{}, creds("P", nil, "reader", "member")) {
		t.Error("the file's conductor rule is not the one applied")
	}
	bad := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(bad, []byte(`"baremetal:node:get": "(role:reader"`+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := New(Options{PolicyFile: bad}); err == nil || !strings.Contains(err.Error(), `"baremetal:node:get"`) {
		t.Errorf("unparsable rule: err %v, want one naming baremetal:node:get", err)
	}
}

// TestLiteralKinds: a check whose kind is a Python literal ('x', "x",
// True, False, None, an integer) compares it with the substituted match
// (GenericCheck), whatever the credentials hold under that name.
func TestLiteralKinds(t *testing.T) {
	e := &Enforcer{rules: map[string]expr{}}
	for _, c := range []struct {
		check  string
		target Values
		want   bool
	}{
		{"'P1':%(project_id)s", Values{"project_id": "P1"}, true},
		{"'P1':%(project_id)s", Values{"project_id": "P2"}, false},
		{`"P1":%(project_id)s`, Values{"project_id": "P1"}, true},
		{"True:%(enabled)s", Values{"enabled": true}, true},
		{"True:%(enabled)s", Values{"enabled": false}, false},
		{"None:%(owner)s", Values{"owner": nil}, true},
		{"7:%(n)s", Values{"n": 7}, true},
		{"P1:%(project_id)s", Values{"project_id": "P1"}, false}, // a name, looked up in the creds: none
	} {
		x, err := parse(c.check)
		if err != nil {
			t.Fatal(err)
		}
		if got := x.eval(e, c.target, Values{"'P1'": "P1", "True": "True"}, 0); got != c.want {
			t.Errorf("%s on %v: %v, want %v", c.check, c.target, got, c.want)
		}
	}
}

// TestParsePrecedence: not > and > or, as oslo.policy's parser reduces.
func TestParsePrecedence(t *testing.T) {
	x, err := parse("role:a or role:b and role:c")
	if err != nil {
		t.Fatal(err)
	}
	e := &Enforcer{rules: map[string]expr{}}
	if !x.eval(e, Values{}, Values{"roles": []string{"a"}}, 0) || x.eval(e, Values{}, Values{"roles": []string{"b"}}, 0) {
		t.Error("a or (b and c) misparsed")
	}
	// Python's str(None): an unset owner matches a None project_id.
	g, _ := parse("project_id:%(node.owner)s")
	if !g.eval(e, Values{"node.owner": nil}, Values{"project_id": nil}, 0) {
		t.Error("None vs None")
	}
}

// TestForRelease: the legacy-compatible defaults up to 23.x, the secure
// RBAC ones from 24.0 (commit 435932355) and while the release is unknown.
func TestForRelease(t *testing.T) {
	for _, c := range []struct {
		r    string
		want Release
	}{{"17.0", Release214}, {"21.4", Release214}, {"23.1", Release214}, {"24.0", ReleaseNewest},
		{"2024.1", ReleaseNewest}, {"29.0", ReleaseNewest}, {"", ReleaseNewest}} {
		var r rules.Release
		if c.r != "" {
			r = rules.MustRelease(c.r)
		}
		if got := ForRelease(r); got != c.want {
			t.Errorf("ForRelease(%q) = %s, want %s", c.r, got, c.want)
		}
	}
}
