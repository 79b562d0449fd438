package main

import (
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/api"
	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/auth"
	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/auth/policy"
	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/ironicconf"
	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/rules"
)

// TestSetupAuthDefaults: an ironic.conf without auth_strategy is Ironic's
// keystone, which without service credentials refuses to start rather than
// serve an open API; without a file the default is noauth.
func TestSetupAuthDefaults(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "ironic.conf")
	if err := os.WriteFile(p, []byte("[database]\nconnection = sqlite:////x\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	conf, err := ironicconf.Load([]string{p}, nil)
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.DiscardHandler)
	if _, err := setupAuth(authConfig{policyRelease: "21.4"}, conf, []string{":10067"}, 40, log); err == nil || !strings.Contains(err.Error(), "auth_url") {
		t.Errorf("keystone by default without auth_url: err %v, want one naming auth_url", err)
	}
	a, err := setupAuth(authConfig{policyRelease: "21.4"}, nil, []string{"127.0.0.1:10067"}, 40, log)
	if err != nil || a.mode != "noauth" || a.authn != nil {
		t.Errorf("no config file: %+v, %v; want noauth", a, err)
	}
	if got := beyondLoopback([]string{"127.0.0.1:1", "[::1]:2", "localhost:3", ":4", "10.0.0.1:5"}); strings.Join(got, ",") != ":4,10.0.0.1:5" {
		t.Errorf("beyondLoopback = %v", got)
	}
}

// TestPolicyFollowsRelease: with --auth.policy-release=detected the policy
// is 21.4's for a release before 24.0 and the secure-RBAC one from 24.0
// and while no release is known; a named one ignores the release.
func TestPolicyFollowsRelease(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "ironic.conf")
	conf := "[DEFAULT]\nauth_strategy = keystone\n[keystone_authtoken]\nauth_url = http://127.0.0.1:1/identity\n" +
		"username = ironic\npassword = secret\nproject_name = service\n"
	if err := os.WriteFile(p, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := ironicconf.Load([]string{p}, nil)
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.DiscardHandler)
	// A project admin: Ironic 21.4's deprecated defaults (rule:is_admin)
	// let it read conductors, the secure-RBAC ones (system scope) do not.
	admin := &auth.Credentials{Values: policy.Values{"project_id": "P", "system_scope": nil, "roles": []string{"admin", "reader"},
		"domain_id": nil, "project_domain_id": "default", "project_name": "P"}}
	canGet := func(a *apiAuth) bool {
		r := httptest.NewRequest(http.MethodGet, "/v1/conductors", nil)
		return a.access(r.WithContext(auth.WithCredentials(r.Context(), admin))).CanGetConductors()
	}
	a, err := setupAuth(authConfig{policyRelease: policyDetected}, c, []string{"127.0.0.1:10067"}, 40, log)
	if err != nil {
		t.Fatal(err)
	}
	if canGet(a) {
		t.Error("no release known yet: the legacy defaults apply")
	}
	for _, tc := range []struct {
		release string
		want    bool
	}{{"21.4", true}, {"23.1", true}, {"24.0", false}, {"2025.1", false}} {
		a.release = func() (rules.Release, bool) { return rules.MustRelease(tc.release), true }
		if got := canGet(a); got != tc.want {
			t.Errorf("release %s: project admin reads conductors = %v, want %v", tc.release, got, tc.want)
		}
	}
	fixed, err := setupAuth(authConfig{policyRelease: string(policy.Release214)}, c, []string{"127.0.0.1:10067"}, 40, log)
	if err != nil {
		t.Fatal(err)
	}
	fixed.release = func() (rules.Release, bool) { return rules.MustRelease("29.0"), true }
	if !canGet(fixed) {
		t.Error("--auth.policy-release=21.4 on a 29.0 database: the 21.4 defaults must apply")
	}
}

// pageAccess is an api.Access with fixed answers.
type pageAccess struct{ listAll, conductors, reservation bool }

func (p pageAccess) CanGetConductors() bool { return p.conductors }
func (p pageAccess) CanSeeComputes() bool   { return p.conductors }
func (p pageAccess) ListNodes(project string) (string, string, bool) {
	if p.listAll {
		return project, "", true
	}
	return "P", "", true
}
func (p pageAccess) CanGetNode(_, _ *string) bool      { return true }
func (p pageAccess) ShowReservation(_, _ *string) bool { return p.reservation }

type anyone struct{}

func (anyone) Authenticate(*http.Request) (*auth.Credentials, *auth.Failure) {
	return &auth.Credentials{User: "u"}, nil
}

// TestStatusPageGuard: the page (every conductor, node and lock holder)
// needs list_all, conductor:get and node:get:reservation.
func TestStatusPageGuard(t *testing.T) {
	page := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("page")) })
	for _, c := range []struct {
		acc  pageAccess
		want int
		rule string
	}{
		{pageAccess{true, true, true}, 200, ""},
		{pageAccess{false, true, true}, 403, "baremetal:node:list_all"},
		{pageAccess{true, false, true}, 403, "baremetal:node:list_all"},
		{pageAccess{true, true, false}, 403, "baremetal:node:get:reservation"},
	} {
		a := &apiAuth{authn: anyone{}, access: func(*http.Request) api.Access { return c.acc }}
		rec := httptest.NewRecorder()
		guardStatusPage(a, page).ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/", nil))
		if rec.Code != c.want || !strings.Contains(rec.Body.String(), c.rule) {
			t.Errorf("%+v: %d %q, want %d naming %q", c.acc, rec.Code, rec.Body.String(), c.want, c.rule)
		}
	}
}

// TestStatusPageNovaPolicy: the page shows the Nova side (compute hosts)
// to the callers Nova's os-hypervisors policy allows, as the API's
// exporter_nova_computes field does: the guard hands the page the
// caller's credentials, which novaAllowed judges; without a policy
// (noauth, http_basic) everyone sees it.
func TestStatusPageNovaPolicy(t *testing.T) {
	reader := pageAccess{true, true, true} // a system reader: the page's guard lets it through
	for _, c := range []struct {
		acc  api.Access
		want bool
	}{{hypervisors{reader, true}, true}, {hypervisors{reader, false}, false}, {nil, true}} {
		a := &apiAuth{authn: anyone{}}
		if c.acc != nil {
			a.access = func(r *http.Request) api.Access {
				if auth.FromContext(r.Context()) == nil {
					t.Error("a request judged without its credentials")
				}
				return c.acc
			}
		}
		got := false
		page := http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) { got = a.novaAllowed(r) })
		rec := httptest.NewRecorder()
		guardStatusPage(a, page).ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/", nil))
		if rec.Code != 200 || got != c.want {
			t.Errorf("%+v: %d, Nova shown %v, want %v", c.acc, rec.Code, got, c.want)
		}
	}
}

// hypervisors is a pageAccess with Nova's os-hypervisors policy apart.
type hypervisors struct {
	pageAccess
	computes bool
}

func (h hypervisors) CanSeeComputes() bool { return h.computes }
