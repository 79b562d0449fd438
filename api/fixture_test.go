package api

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/db"
	testfixture "github.com/ironic-conductor-exporter/ironic-conductor-exporter/internal/fixture"
	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/ring"
	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/rules"
	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/topology"
)

var testNow = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func sp(s string) *string { return &s }

func uuidN(i int) string {
	return "aaaaaaaa-bbbb-4ccc-8ddd-0000000000" + string(rune('0'+i/10)) + string(rune('0'+i%10))
}

// testSnapshot is a small fleet: conductors in every state, host:port and
// mixed-case hostnames, nodes with and without names and conductors.
func testSnapshot(backend rules.Backend) *db.Snapshot {
	return &db.Snapshot{
		Backend: backend,
		Conductors: []db.Conductor{
			{ID: 1, Hostname: "cond-a.example.com", ConductorGroup: "", Online: true,
				CreatedAt: testNow.Add(-time.Hour), UpdatedAt: testNow.Add(-10 * time.Second),
				Drivers: []string{"redfish", "ipmi"}, HardwareTypes: []string{"ipmi", "redfish"}},
			{ID: 2, Hostname: "cond-b.example.com:6385", ConductorGroup: "", Online: true,
				CreatedAt: testNow.Add(-2*time.Hour + 123456*time.Microsecond), UpdatedAt: testNow.Add(-5 * time.Second),
				Drivers: []string{"ipmi"}, HardwareTypes: []string{"ipmi"}},
			{ID: 3, Hostname: "Cond-C", ConductorGroup: "Rack-B", Online: true, // dead
				CreatedAt: testNow.Add(-3 * time.Hour), UpdatedAt: testNow.Add(-time.Hour),
				Drivers: []string{"redfish"}, HardwareTypes: []string{"redfish"}},
			{ID: 4, Hostname: "cond-d", ConductorGroup: "gpu", Online: false, // draining
				CreatedAt: testNow.Add(-4 * time.Hour), UpdatedAt: testNow.Add(-20 * time.Second),
				HardwareTypes: []string{"fake-hardware"}},
			{ID: 5, Hostname: "cond-e", ConductorGroup: "gpu", Online: true,
				CreatedAt: testNow.Add(-5 * time.Hour), UpdatedAt: testNow.Add(-time.Second),
				Drivers: []string{"fake-hardware"}, HardwareTypes: []string{"fake-hardware"}},
		},
		Nodes: []*db.Node{
			{ID: 1, UUID: uuidN(1), Name: sp("node-1"), Driver: "ipmi", ProvisionState: sp("active"),
				PowerState: sp("power on"), InstanceUUID: sp("22222222-2222-4222-8222-222222222222"),
				ResourceClass: sp("baremetal"), CreatedAt: db.StampOf(testNow.Add(-time.Hour)), UpdatedAt: db.StampOf(testNow.Add(-time.Minute)),
				HasConductorAffinity: true, ConductorAffinity: 3},
			{ID: 2, UUID: uuidN(2), Driver: "ipmi", ProvisionState: sp("available"), PowerState: sp("power off"),
				CreatedAt: db.StampOf(testNow.Add(-time.Hour))},
			{ID: 3, UUID: uuidN(3), Name: sp("node-3"), Driver: "redfish", ProvisionState: sp("enroll"),
				CreatedAt: db.StampOf(testNow.Add(-time.Hour))},
			{ID: 4, UUID: uuidN(4), Name: sp("Node_4.rack~1"), Driver: "redfish", ConductorGroup: "Rack-B",
				ProvisionState: sp("enroll"), CreatedAt: db.StampOf(testNow.Add(-time.Hour))},
			{ID: 5, UUID: uuidN(5), Name: sp("node-5"), Driver: "fake-hardware", ConductorGroup: "gpu",
				ProvisionState: sp("available"), ResourceClass: sp("gpu"), CreatedAt: db.StampOf(testNow.Add(-time.Hour))},
			{ID: 6, UUID: uuidN(6), Driver: "snmp", ProvisionState: sp("enroll"), CreatedAt: db.StampOf(testNow.Add(-time.Hour))},
			{ID: 7, UUID: uuidN(7), Name: sp("node-7"), Driver: "ipmi", Maintenance: true,
				Reservation: sp("cond-a.example.com"), ProvisionState: sp("manageable"), CreatedAt: db.StampOf(testNow.Add(-time.Hour))},
			{ID: 8, UUID: uuidN(8), Name: sp("node-8"), Driver: "ipmi", ProvisionState: sp("inspect wait"),
				CreatedAt: db.StampOf(testNow.Add(-time.Hour))},
			{ID: 9, UUID: uuidN(9), Driver: "fake-hardware", ConductorGroup: "gpu", CreatedAt: db.StampOf(testNow.Add(-time.Hour))},
			{ID: 10, UUID: uuidN(10), Name: sp("node-10"), Driver: "redfish", ProvisionState: sp("active"),
				CreatedAt: db.StampOf(testNow.Add(-time.Hour))},
		},
	}
}

type fixture struct {
	h     http.Handler
	src   *testfixture.Source
	cache *topology.Cache
}

func newFixture(t testing.TB, snap *db.Snapshot, srcErr error, opts Options) *fixture {
	t.Helper()
	return newFixtureAt(t, snap, srcErr, "21.4", opts)
}

// newFixtureAt is newFixture with the rules of Ironic release.
func newFixtureAt(t testing.TB, snap *db.Snapshot, srcErr error, release string, opts Options) *fixture {
	t.Helper()
	src := testfixture.NewSource(nil)
	src.Set(snap, srcErr)
	cache, err := topology.NewCache(topology.CacheConfig{
		Source: src,
		Settings: topology.Settings{Settings: rules.Settings{HeartbeatTimeout: 60 * time.Second, PartitionExponent: 5,
			Algorithm: ring.Algorithm("md5")}, Release: rules.MustRelease(release)},
		MinInterval: time.Hour,
		Now:         func() time.Time { return testNow },
	})
	if err != nil {
		t.Fatal(err)
	}
	return &fixture{h: NewHandler(cache, opts), src: src, cache: cache}
}

func (f *fixture) topology(t testing.TB) *topology.Topology {
	t.Helper()
	v := f.cache.Get(context.Background())
	if v.Topology == nil {
		t.Fatalf("no topology: %v", v.Err)
	}
	return v.Topology
}

// do performs a request; hdr are "Name: value" pairs. target is a request
// URI as a client sends it.
func (f *fixture) do(method, target string, hdr ...string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(method, "http://example.com/", nil)
	u, err := url.ParseRequestURI(target)
	if err != nil { // what net/http would refuse; hand it over anyway
		path, query, _ := strings.Cut(target, "?")
		u = &url.URL{Path: path, RawQuery: query}
	}
	req.URL, req.RequestURI = u, target
	for _, h := range hdr {
		k, v, _ := strings.Cut(h, ":")
		req.Header.Add(k, strings.TrimSpace(v))
	}
	rec := httptest.NewRecorder()
	f.h.ServeHTTP(rec, req)
	return rec
}

func (f *fixture) get(target string, hdr ...string) *httptest.ResponseRecorder {
	return f.do(http.MethodGet, target, hdr...)
}

const latest = "X-OpenStack-Ironic-API-Version: latest"

func ver(v string) string { return "X-OpenStack-Ironic-API-Version: " + v }

// decode parses a JSON body into a generic value.
func decode(t testing.TB, body []byte) any {
	t.Helper()
	var v any
	if err := json.Unmarshal(body, &v); err != nil {
		t.Fatalf("invalid JSON %q: %v", body, err)
	}
	return v
}

// fault returns the inner error document of an Ironic error body.
func fault(t testing.TB, rec *httptest.ResponseRecorder) map[string]any {
	t.Helper()
	var outer struct {
		ErrorMessage *string `json:"error_message"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &outer); err != nil || outer.ErrorMessage == nil {
		t.Fatalf("not an Ironic error body: %q (%v)", rec.Body.String(), err)
	}
	var inner map[string]any
	if err := json.Unmarshal([]byte(*outer.ErrorMessage), &inner); err != nil {
		t.Fatalf("error_message is not JSON: %q", *outer.ErrorMessage)
	}
	return inner
}

// message is faultstring or description.
func message(t testing.TB, rec *httptest.ResponseRecorder) string {
	t.Helper()
	in := fault(t, rec)
	if s, ok := in["faultstring"].(string); ok {
		return s
	}
	s, _ := in["description"].(string)
	return s
}

func expectStatus(t testing.TB, rec *httptest.ResponseRecorder, want int) {
	t.Helper()
	if rec.Code != want {
		t.Fatalf("status %d, want %d; body %s", rec.Code, want, rec.Body)
	}
}

var errDown = errors.New("connection refused")

func jsonDecode(r *http.Response, v any) error { return json.NewDecoder(r.Body).Decode(v) }
