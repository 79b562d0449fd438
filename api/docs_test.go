package api

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	testfixture "github.com/ironic-conductor-exporter/ironic-conductor-exporter/internal/fixture"
	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/rules"
	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/topology"
)

// lookupAt answers target as a request arriving at the local address
// local ("" for none, then Host host), over TLS for an https:// host.
func lookupAt(h http.Handler, target, host, local string) *httptest.ResponseRecorder {
	scheme := "http://"
	if rest, ok := strings.CutPrefix(host, "https://"); ok {
		scheme, host = "https://", rest
	}
	req := httptest.NewRequest(http.MethodGet, scheme+host+target, nil)
	if local != "" {
		a, err := net.ResolveTCPAddr("tcp", local)
		if err != nil {
			panic(err)
		}
		req = req.WithContext(context.WithValue(req.Context(), http.LocalAddrContextKey, a))
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

// TestConductorDocumentsFollowTheBase: a conductor's document is the same
// bytes on both endpoints, under every base URL in turn (with and without
// TLS), and a new topology's answers carry its data.
func TestConductorDocumentsFollowTheBase(t *testing.T) {
	now := testNow
	snap := testSnapshot(rules.PostgreSQL)
	src := testfixture.NewSource(snap)
	cache, err := topology.NewCache(topology.CacheConfig{Source: src, MinInterval: 10 * time.Second,
		Settings: topology.Settings{Settings: rules.Settings{HeartbeatTimeout: 60e9, PartitionExponent: 5, Algorithm: "md5"}},
		Now:      func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	h := NewHandler(cache, Options{})
	hosts := []struct{ host, local, base string }{
		{"a.example.com", "", "http://a.example.com"},
		{"b.example.com", "", "http://b.example.com"},
		{"x", "127.0.0.1:10067", "http://127.0.0.1:10067"},
		{"x", "[::1]:10067", "http://[::1]:10067"},
		{"x", "[fe80::1%lo]:80", "http://[fe80::1%lo]:80"},
		{"x", "127.0.0.1:10068", "http://127.0.0.1:10068"},
		{"https://x", "127.0.0.1:10068", "https://127.0.0.1:10068"},
		{"https://a.example.com", "", "https://a.example.com"},
	}
	check := func(round string) *topology.Topology {
		t.Helper()
		topo := cache.Get(context.Background()).Topology
		for rep := range 2 {
			for _, hh := range hosts {
				for _, n := range topo.Nodes {
					c, ok := topo.Conductor(n.Conductor)
					if !ok {
						continue
					}
					want := string(appendConductor(nil, hh.base, c, cfAll))
					for _, target := range []string{"/v1/nodes/" + n.UUID + "/conductor", "/v1/conductors/" + c.Hostname} {
						rec := lookupAt(h, target, hh.host, hh.local)
						if rec.Code != http.StatusOK || rec.Body.String() != want {
							t.Fatalf("%s, pass %d, %s at %s%s: %d %s\nwant %s", round, rep, target, hh.host, hh.local, rec.Code, rec.Body, want)
						}
					}
				}
			}
		}
		return topo
	}
	first := check("first topology")

	// A heartbeat changes every conductor's updated_at: new documents.
	for i := range snap.Conductors {
		snap.Conductors[i].UpdatedAt = snap.Conductors[i].UpdatedAt.Add(7 * time.Second)
	}
	src.Set(snap, nil)
	now = now.Add(11 * time.Second)
	if cache.Get(context.Background()).Topology == first {
		t.Fatal("no new topology")
	}
	second := check("after a heartbeat")
	if second == first {
		t.Fatal("the topology did not change")
	}
	// ?fields= answers are rendered, and differ from the full document.
	rec := lookupAt(h, "/v1/nodes/"+uuidN(5)+"/conductor?fields=hostname,alive", "a.example.com", "")
	if rec.Code != http.StatusOK || rec.Body.String() != `{"hostname": "cond-e", "links": [{"href": "http://a.example.com/v1/conductors/cond-e", "rel": "self"}, {"href": "http://a.example.com/conductors/cond-e", "rel": "bookmark"}], "alive": true}` {
		t.Errorf("fields: %d %s", rec.Code, rec.Body)
	}
}

// TestRequestIDs: every answer has its own request id in Ironic's form.
func TestRequestIDs(t *testing.T) {
	f := newFixture(t, testSnapshot(rules.PostgreSQL), nil, Options{})
	seen := map[string]bool{}
	for range 200 {
		id := f.get("/v1/nodes/" + uuidN(5) + "/conductor").Header().Get("Openstack-Request-Id")
		if !requestIDRE.MatchString(id) || seen[id] {
			t.Fatalf("request id %q: malformed or repeated", id)
		}
		seen[id] = true
	}
}

// TestLinksNameTheListener: over real connections, the links of a
// conductor document name the address each request arrived at: two
// listeners (one of them TLS) sharing the handler answer their own.
func TestLinksNameTheListener(t *testing.T) {
	f := newFixture(t, testSnapshot(rules.PostgreSQL), nil, Options{})
	plain := httptest.NewServer(f.h)
	defer plain.Close()
	other := httptest.NewServer(f.h)
	defer other.Close()
	secure := httptest.NewTLSServer(f.h)
	defer secure.Close()
	for range 2 {
		for _, srv := range []*httptest.Server{plain, other, secure, plain} {
			resp, err := srv.Client().Get(srv.URL + "/v1/nodes/" + uuidN(5) + "/conductor")
			if err != nil {
				t.Fatal(err)
			}
			var doc struct {
				Links []struct{ Href string }
			}
			err = jsonDecode(resp, &doc)
			_ = resp.Body.Close()
			if err != nil || resp.StatusCode != http.StatusOK || len(doc.Links) != 2 {
				t.Fatalf("%s: %d %v %+v", srv.URL, resp.StatusCode, err, doc)
			}
			if want := srv.URL + "/v1/conductors/cond-e"; doc.Links[0].Href != want {
				t.Errorf("self link %q, want %q", doc.Links[0].Href, want)
			}
		}
	}
}

// TestConductorFieldsFit: every field of conductorFields has its bit in a
// conductorField, also once the list grows past eight.
func TestConductorFieldsFit(t *testing.T) {
	saved := conductorFields
	defer func() { conductorFields = saved }()
	for i := len(conductorFields); i < 12; i++ {
		name := fmt.Sprintf("extra%d", i)
		conductorFields = append(slices.Clip(conductorFields), struct {
			name   string
			always bool
			value  func(b []byte, base string, c *topology.ConductorInfo) []byte
		}{name: name, value: func(b []byte, _ string, _ *topology.ConductorInfo) []byte { return append(b, '1') }})
	}
	c := &topology.ConductorInfo{}
	for i, f := range conductorFields {
		if got := string(appendConductor(nil, "", c, conductorField(1)<<i)); !strings.Contains(got, `"`+f.name+`"`) {
			t.Errorf("field %d (%s) not rendered with its bit set: %s", i, f.name, got)
		}
	}
}
