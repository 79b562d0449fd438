package api

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/auth"
	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/auth/policy"
	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/rules"
)

// personaHeader names the test persona of a request (the handler under
// test sees credentials only through Options.Access).
const personaHeader = "X-Test-Persona"

func persona(project any, system any, roles ...string) *auth.Credentials {
	return &auth.Credentials{Values: policy.Values{"project_id": project, "system_scope": system, "roles": roles,
		"domain_id": nil, "project_domain_id": "default", "project_name": "p"}}
}

// policyFixture is the test fleet with owners and lessees, served under
// Ironic 21.4's default policy: P1 owns nodes 1, 3 and 7, P2 leases 3 and 7.
func policyFixture(t *testing.T) *fixture {
	t.Helper()
	return policyFixtureWith(t, nil)
}

// policyFixtureWith is policyFixture with Nova's answer (nil: no Nova) and
// an admin persona beside the readers.
func policyFixtureWith(t *testing.T, nova NovaLookup) *fixture {
	t.Helper()
	snap := testSnapshot(rules.PostgreSQL)
	for _, n := range []int{1, 3, 7} {
		snap.Nodes[n-1].Owner = sp("P1")
	}
	for _, n := range []int{3, 7} {
		snap.Nodes[n-1].Lessee = sp("P2")
	}
	enf, err := policy.New(policy.Options{Release: policy.Release214})
	if err != nil {
		t.Fatal(err)
	}
	people := map[string]*auth.Credentials{
		"system": persona(nil, "all", "reader"),
		"owner":  persona("P1", nil, "member", "reader"),
		"lessee": persona("P2", nil, "member", "reader"),
		"norole": persona("P3", nil),
		"admin":  persona("P1", nil, "admin", "member", "reader"),
	}
	return newFixture(t, snap, nil, Options{Nova: nova, Access: func(r *http.Request) Access {
		return auth.NewAccess(enf, people[r.Header.Get(personaHeader)])
	}})
}

// TestPolicyExtensionFields: the extensions show what the API owning the
// value shows the caller: a project reader who may read its node but not
// GET /v1/conductors (403) sees the affinity conductor's name redacted, and
// the compute hosts redacted unless Nova's hypervisor policy (admin) allows
// them; a system reader sees the conductor, not the computes; an admin
// sees both.
func TestPolicyExtensionFields(t *testing.T) {
	nova := fakeNova{uuidN(1): {{Cell: "cell1", Host: "c-a", Source: "instance", Up: true, UpKnown: true}}}
	f := policyFixtureWith(t, nova)
	who := func(p string) string { return personaHeader + ": " + p }
	const (
		cond      = `"Cond-C"`
		computes  = `[{"cell": "cell1", "host": "c-a", "source": "instance", "up": true}]`
		noCond    = `"** Redacted - requires baremetal:conductor:get permission. **"`
		noCompute = `"** Redacted - requires os_compute_api:os-hypervisors:show permission. **"`
	)
	expectStatus(t, f.get("/v1/conductors/Cond-C", latest, who("owner")), http.StatusForbidden)
	for _, c := range []struct{ persona, affinity, nova string }{
		{"owner", noCond, noCompute}, {"system", cond, noCompute}, {"admin", cond, computes},
	} {
		for _, target := range []string{"/v1/nodes/" + uuidN(1), "/v1/nodes/" + uuidN(1) + "?fields=uuid," + AffinityField + "," + NovaField,
			"/v1/nodes/detail"} {
			rec := f.get(target, latest, who(c.persona))
			expectStatus(t, rec, http.StatusOK)
			body := rec.Body.String()
			for _, want := range []string{`"` + AffinityField + `": ` + c.affinity, `"` + NovaField + `": ` + c.nova} {
				if !strings.Contains(body, want) {
					t.Errorf("%s %s: lacks %s:\n%s", c.persona, target, want, body)
				}
			}
			if c.persona == "owner" && (strings.Contains(body, "Cond-C") || strings.Contains(body, "c-a")) {
				t.Errorf("a project reader reads the conductor or compute in %s:\n%s", target, body)
			}
		}
	}
}

func nodeUUIDs(t *testing.T, body []byte) (uuids []string, reservations map[string]any, next string) {
	t.Helper()
	doc := decode(t, body).(map[string]any)
	reservations = map[string]any{}
	for _, n := range doc["nodes"].([]any) {
		m := n.(map[string]any)
		u := m["uuid"].(string)
		uuids = append(uuids, u)
		if r, ok := m["reservation"]; ok {
			reservations[u] = r
		}
	}
	next, _ = doc["next"].(string)
	return uuids, reservations, next
}

// TestPolicyNodeLists: a project reader lists only the nodes its project
// owns or leases, filtered before pagination (the pages are full and the
// next link leads to the rest), for ?conductor= too; a system reader lists
// all; a user without a role is refused naming the rule.
func TestPolicyNodeLists(t *testing.T) {
	f := policyFixture(t)
	who := func(p string) string { return personaHeader + ": " + p }

	rec := f.get("/v1/nodes?limit=1", latest, who("owner"))
	expectStatus(t, rec, http.StatusOK)
	got, _, next := nodeUUIDs(t, rec.Body.Bytes())
	if strings.Join(got, ",") != uuidN(1) || next == "" {
		t.Fatalf("owner's first page: %v next %q, want [%s] and a next link", got, next, uuidN(1))
	}
	u, err := url.Parse(next)
	if err != nil {
		t.Fatal(err)
	}
	rec = f.get(u.RequestURI(), latest, who("owner"))
	expectStatus(t, rec, http.StatusOK)
	if got, _, _ = nodeUUIDs(t, rec.Body.Bytes()); strings.Join(got, ",") != uuidN(3) {
		t.Errorf("owner's second page: %v, want [%s]", got, uuidN(3))
	}

	for p, want := range map[string]string{
		"owner":  strings.Join([]string{uuidN(1), uuidN(3), uuidN(7)}, ","),
		"lessee": strings.Join([]string{uuidN(3), uuidN(7)}, ","),
	} {
		rec := f.get("/v1/nodes/detail", latest, who(p))
		expectStatus(t, rec, http.StatusOK)
		if got, _, _ := nodeUUIDs(t, rec.Body.Bytes()); strings.Join(got, ",") != want {
			t.Errorf("%s: detail lists %v, want %s", p, got, want)
		}
	}
	rec = f.get("/v1/nodes", latest, who("system"))
	if got, _, _ := nodeUUIDs(t, rec.Body.Bytes()); len(got) != 10 {
		t.Errorf("system reader lists %d nodes, want 10", len(got))
	}

	// ?conductor= walks that conductor's nodes, still only the project's.
	top := f.topology(t)
	c := top.Nodes[6].Conductor // node 7's
	if c == "" {
		t.Fatal("node 7 has no conductor in the fixture")
	}
	var want []string
	for _, n := range top.Nodes {
		if n.Conductor == c && n.Lessee != nil && *n.Lessee == "P2" {
			want = append(want, n.UUID)
		}
	}
	rec = f.get("/v1/nodes?conductor="+url.QueryEscape(c), latest, who("lessee"))
	expectStatus(t, rec, http.StatusOK)
	if got, _, _ := nodeUUIDs(t, rec.Body.Bytes()); strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("lessee, conductor %s: %v, want %v", c, got, want)
	}

	rec = f.get("/v1/nodes", latest, who("norole"))
	expectStatus(t, rec, http.StatusForbidden)
	if m := message(t, rec); !strings.Contains(m, "baremetal:node:list") {
		t.Errorf("no role: %q, want the rule named", m)
	}
}

// TestPolicyLookupsAndRedaction: a node the caller may not see is not
// found; reservation is redacted for a lessee (also when NULL) and shown to
// the owner; conductors are for system readers only.
func TestPolicyLookupsAndRedaction(t *testing.T) {
	f := policyFixture(t)
	who := func(p string) string { return personaHeader + ": " + p }

	rec := f.get("/v1/nodes/node-8", latest, who("owner"))
	expectStatus(t, rec, http.StatusNotFound)
	if m := message(t, rec); m != "Node node-8 could not be found." {
		t.Errorf("hidden node: %q", m)
	}
	rec = f.get("/v1/nodes/node-7", latest, who("owner"))
	expectStatus(t, rec, http.StatusOK)
	if r := decode(t, rec.Body.Bytes()).(map[string]any)["reservation"]; r != "cond-a.example.com" {
		t.Errorf("owner sees reservation %v", r)
	}
	const redacted = "** Redacted - requires baremetal:node:get:reservation permission. **"
	rec = f.get("/v1/nodes?fields=uuid,reservation", latest, who("lessee"))
	expectStatus(t, rec, http.StatusOK)
	_, res, _ := nodeUUIDs(t, rec.Body.Bytes())
	if res[uuidN(3)] != redacted || res[uuidN(7)] != redacted {
		t.Errorf("lessee's reservations %v, want both redacted", res)
	}
	rec = f.get("/v1/nodes/node-7", latest, who("system"))
	if r := decode(t, rec.Body.Bytes()).(map[string]any)["reservation"]; r != "cond-a.example.com" {
		t.Errorf("system reader sees reservation %v", r)
	}

	for _, path := range []string{"/v1/conductors", "/v1/conductors/cond-a.example.com", "/v1/nodes/node-1/conductor"} {
		rec := f.get(path, latest, who("owner"))
		expectStatus(t, rec, http.StatusForbidden)
		if m := message(t, rec); !strings.Contains(m, "baremetal:conductor:get") {
			t.Errorf("%s: %q", path, m)
		}
		expectStatus(t, f.get(path, latest, who("system")), http.StatusOK)
	}
	// The node check comes first: a hidden node is a 404, not a 403.
	expectStatus(t, f.get("/v1/nodes/node-8/conductor", latest, who("owner")), http.StatusNotFound)
}
