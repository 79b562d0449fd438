package api

import (
	"database/sql"
	"fmt"
	"net/http"
	"net/url"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/db"
	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/dbconn"
	testfixture "github.com/ironic-conductor-exporter/ironic-conductor-exporter/internal/fixture"
	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/rules"
	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/topology"
)

var requestIDRE = regexp.MustCompile(`^req-[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)

func TestServiceRoot(t *testing.T) {
	f := newFixture(t, testSnapshot(rules.PostgreSQL), nil, Options{})
	// Byte for byte Ironic's document (ironic/api/controllers/root.py),
	// with our maximum version.
	const want = `{"name": "OpenStack Ironic API", "description": "Ironic is an OpenStack project which enables the provision and management of baremetal machines.", "default_version": {"id": "v1", "links": [{"href": "http://example.com/v1/", "rel": "self"}], "status": "CURRENT", "min_version": "1.1", "version": "1.49"}, "versions": [{"id": "v1", "links": [{"href": "http://example.com/v1/", "rel": "self"}], "status": "CURRENT", "min_version": "1.1", "version": "1.49"}]}`
	for _, hdr := range [][]string{nil, {latest}, {ver("1.99")}, {ver("garbage")}} {
		rec := f.get("/", hdr...)
		expectStatus(t, rec, 200)
		if got := rec.Body.String(); got != want {
			t.Errorf("GET / %v:\n got %s\nwant %s", hdr, got, want)
		}
		if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
			t.Errorf("Content-Type %q", ct)
		}
		// Like Ironic 21.4 (conformance/captured/root-*.json): the root
		// parses no version and sends no version headers.
		for _, h := range []string{"X-OpenStack-Ironic-API-Maximum-Version", "X-OpenStack-Ironic-API-Minimum-Version",
			"X-OpenStack-Ironic-API-Version"} {
			if v := rec.Header().Get(h); v != "" {
				t.Errorf("GET / %v: %s: %q, Ironic sends none", hdr, h, v)
			}
		}
		if id := rec.Header().Get("Openstack-Request-Id"); !requestIDRE.MatchString(id) {
			t.Errorf("Openstack-Request-Id %q", id)
		}
	}
	// The root answers without any data.
	f = newFixture(t, nil, errDown, Options{PublicEndpoint: "https://ironic.example.org:6385/"})
	rec := f.get("/")
	expectStatus(t, rec, 200)
	if !strings.Contains(rec.Body.String(), `"href": "https://ironic.example.org:6385/v1/"`) {
		t.Errorf("PublicEndpoint not used: %s", rec.Body)
	}
}

// From 26.1 (rules.RootVersionHeaders) Ironic's root negotiates the
// version as /v1 does: the range headers and the version answered; an
// unacceptable version is a 406 there too.
func TestServiceRootVersionHeaders(t *testing.T) {
	f := newFixtureAt(t, testSnapshot(rules.PostgreSQL), nil, "29.0", Options{})
	for _, c := range []struct {
		hdr     []string
		status  int
		version string
	}{
		{[]string{ver("1.49")}, 200, "1.49"},
		{[]string{ver("1.20")}, 200, "1.20"},
		{[]string{latest}, 200, "1.49"},
		{nil, 200, "1.49"},
		{[]string{ver("1.99")}, 406, ""},
	} {
		rec := f.get("/", c.hdr...)
		expectStatus(t, rec, c.status)
		h := rec.Header()
		if h.Get("X-OpenStack-Ironic-API-Minimum-Version") != "1.1" || h.Get("X-OpenStack-Ironic-API-Maximum-Version") != "1.49" ||
			h.Get("X-OpenStack-Ironic-API-Version") != c.version {
			t.Errorf("GET / %v at 29.0: version headers %v %v %v, want 1.1 1.49 %q", c.hdr,
				h.Values("X-OpenStack-Ironic-API-Minimum-Version"), h.Values("X-OpenStack-Ironic-API-Maximum-Version"),
				h.Values("X-OpenStack-Ironic-API-Version"), c.version)
		}
	}
}

// Below 1.49 the conductor resources are a 404 whose message changed in
// Ironic 38.0 (rules.ConductorsVersionMessage).
func TestConductorsBelow149ByRelease(t *testing.T) {
	for _, c := range []struct{ release, msg string }{
		{"21.4", "Resource could not be found."},
		{"37.0", "Resource could not be found."},
		{"38.0", "The API is not supported for this version"},
	} {
		f := newFixtureAt(t, testSnapshot(rules.PostgreSQL), nil, c.release, Options{})
		for _, path := range []string{"/v1/conductors", "/v1/conductors/cond-a.example.com"} {
			rec := f.get(path, ver("1.48"))
			expectStatus(t, rec, 404)
			if !strings.Contains(rec.Body.String(), `\"faultstring\": \"`+c.msg+`\"`) {
				t.Errorf("%s GET %s at 1.48: %s, want %q", c.release, path, rec.Body, c.msg)
			}
		}
	}
}

func TestV1Document(t *testing.T) {
	f := newFixture(t, nil, errDown, Options{})
	const head = `{"id": "v1", "links": [{"href": "http://example.com/v1/", "rel": "self"}, {"href": "https://docs.openstack.org//ironic/latest/contributor//webapi.html", "rel": "describedby", "type": "text/html"}], "media_types": {"base": "application/json", "type": "application/vnd.openstack.ironic.v1+json"}, "nodes": [{"href": "http://example.com/v1/nodes/", "rel": "self"}, {"href": "http://example.com/nodes/", "rel": "bookmark"}], "version": {"id": "v1", "links": [{"href": "http://example.com/v1/", "rel": "self"}], "status": "CURRENT", "min_version": "1.1", "version": "1.49"}`
	const conductors = `, "conductors": [{"href": "http://example.com/v1/conductors/", "rel": "self"}, {"href": "http://example.com/conductors/", "rel": "bookmark"}]`
	for _, tc := range []struct {
		path, version, want, negotiated string
	}{
		{"/v1", "", head + conductors + "}", "1.49"},
		{"/v1/", "latest", head + conductors + "}", "1.49"},
		{"/v1", "1.49", head + conductors + "}", "1.49"},
		{"/v1", "1.48", head + "}", "1.48"},
		{"/v1.json", "1.1", head + "}", "1.1"},
	} {
		var hdr []string
		if tc.version != "" {
			hdr = append(hdr, ver(tc.version))
		}
		rec := f.get(tc.path, hdr...)
		expectStatus(t, rec, 200)
		if got := rec.Body.String(); got != tc.want {
			t.Errorf("GET %s (%s):\n got %s\nwant %s", tc.path, tc.version, got, tc.want)
		}
		if got := rec.Header().Get("X-OpenStack-Ironic-API-Version"); got != tc.negotiated {
			t.Errorf("GET %s (%s): version header %q, want %q", tc.path, tc.version, got, tc.negotiated)
		}
	}
}

func TestVersionNegotiation(t *testing.T) {
	f := newFixture(t, testSnapshot(rules.PostgreSQL), nil, Options{})
	const rng = " The supported version range is: [1.1, 1.49]."
	for _, tc := range []struct {
		name    string
		hdr     []string
		path    string
		status  int
		version string // response X-OpenStack-Ironic-API-Version, "" absent
		msg     string
		routing bool // webob error shape
	}{
		{"none is the maximum", nil, "/v1/conductors", 200, "1.49", "", false},
		{"latest", []string{latest}, "/v1/conductors", 200, "1.49", "", false},
		{"LATEST", []string{ver("LATEST")}, "/v1/conductors", 200, "1.49", "", false},
		{"1.49", []string{ver("1.49")}, "/v1/conductors", 200, "1.49", "", false},
		{"leading zeros", []string{ver("01.049")}, "/v1/conductors", 200, "1.49", "", false},
		{"1.48 conductors", []string{ver("1.48")}, "/v1/conductors", 404, "1.48", "Resource could not be found.", false},
		{"1.48 conductor", []string{ver("1.48")}, "/v1/conductors/cond-e", 404, "1.48", "Resource could not be found.", false},
		{"1.48 nodes", []string{ver("1.48")}, "/v1/nodes", 200, "1.48", "", false},
		{"1.99", []string{ver("1.99")}, "/v1/conductors", 406, "",
			"Version 1.99 was requested but the minor version is not supported by this service." + rng, true},
		{"1.99 on /v1", []string{ver("1.99")}, "/v1", 406, "",
			"Version 1.99 was requested but the minor version is not supported by this service." + rng, false},
		{"1.0", []string{ver("1.0")}, "/v1/nodes", 406, "",
			"Version 1.0 was requested but the minor version is not supported by this service." + rng, true},
		{"2.1", []string{ver("2.1")}, "/v1/nodes", 406, "",
			"Mutually exclusive versions requested. Version 2.1 requested but not supported by this service." + rng, true},
		{"garbage", []string{ver("garbage")}, "/v1/conductors", 406, "",
			"Invalid value for X-OpenStack-Ironic-API-Version header", true},
		{"1.2.3", []string{ver("1.2.3")}, "/v1/conductors", 406, "",
			"Invalid value for X-OpenStack-Ironic-API-Version header", true},
		{"empty", []string{ver("")}, "/v1/conductors", 406, "",
			"Invalid value for X-OpenStack-Ironic-API-Version header", true},
		{"huge number", []string{ver("1.99999999999999999999999")}, "/v1/conductors", 406, "",
			"Version 1.99999999999999999999999 was requested but the minor version is not supported by this service." + rng, true},
		{"huge header", []string{ver(strings.Repeat("9", 100000))}, "/v1/conductors", 406, "",
			"Invalid value for X-OpenStack-Ironic-API-Version header", true},
		{"OpenStack-API-Version", []string{"OpenStack-API-Version: baremetal 1.48"}, "/v1/conductors", 404, "1.48",
			"Resource could not be found.", false},
		{"OpenStack-API-Version list", []string{"OpenStack-API-Version: compute 2.1, baremetal latest"}, "/v1/conductors",
			200, "1.49", "", false},
		{"Ironic header wins", []string{"OpenStack-API-Version: baremetal 1.48", latest}, "/v1/conductors", 200, "1.49", "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := f.get(tc.path, tc.hdr...)
			expectStatus(t, rec, tc.status)
			h := rec.Header()
			if got := h.Get("X-OpenStack-Ironic-API-Version"); got != tc.version {
				t.Errorf("version header %q, want %q", got, tc.version)
			}
			// Ironic sends the range once it parsed the version, even one
			// out of range (captured/conductors-list-v1.99-406.json), and
			// none for an unparsable one (conductors-list-badversion-406.json).
			unparsable := tc.msg == "Invalid value for X-OpenStack-Ironic-API-Version header"
			hasRange := h.Get("X-OpenStack-Ironic-API-Minimum-Version") == "1.1" && h.Get("X-OpenStack-Ironic-API-Maximum-Version") == "1.49"
			if hasRange == unparsable {
				t.Errorf("range headers present=%v for an unparsable=%v version: %v", hasRange, unparsable, h)
			}
			if h.Get("Content-Type") != "application/json" {
				t.Errorf("Content-Type %q", h.Get("Content-Type"))
			}
			if tc.msg == "" {
				return
			}
			in := fault(t, rec)
			if got := message(t, rec); got != tc.msg {
				t.Errorf("message %q, want %q", got, tc.msg)
			}
			if _, isWebob := in["code"]; isWebob != tc.routing {
				t.Errorf("error shape %v, want routing=%v", in, tc.routing)
			}
		})
	}
}

func TestMaxMicroversionOption(t *testing.T) {
	for _, tc := range []struct{ opt, want int }{{0, 49}, {60, 60}, {10, 49}, {200, 82}} {
		f := newFixture(t, testSnapshot(rules.PostgreSQL), nil, Options{MaxMicroversion: tc.opt})
		rec := f.get("/v1/conductors", latest)
		if got, want := rec.Header().Get("X-OpenStack-Ironic-API-Version"), fmt.Sprintf("1.%d", tc.want); got != want {
			t.Errorf("MaxMicroversion %d: latest is %s, want %s", tc.opt, got, want)
		}
	}
	f := newFixture(t, testSnapshot(rules.PostgreSQL), nil, Options{MaxMicroversion: 82})
	rec := f.get("/v1/nodes?owner=x", latest)
	expectStatus(t, rec, 400)
	if !strings.Contains(message(t, rec), "not supported by ironic-conductor-exporter") {
		t.Errorf("owner filter: %s", rec.Body)
	}
}

// The exact error bodies, as captured from Ironic 21.4, with
// X-Content-Type-Options: nosniff.
func TestErrorBodies(t *testing.T) {
	f := newFixture(t, testSnapshot(rules.PostgreSQL), nil, Options{})
	for _, tc := range []struct {
		path, want string
		status     int
	}{
		{"/v1/conductors/nosuch", `{"error_message": "{\"faultcode\": \"Client\", \"faultstring\": \"Conductor nosuch could not be found.\", \"debuginfo\": null}"}`, 404},
		{"/v1/nodes/no-such-node", `{"error_message": "{\"faultcode\": \"Client\", \"faultstring\": \"Node no-such-node could not be found.\", \"debuginfo\": null}"}`, 404},
		{"/v1/nodes/bad%20name", `{"error_message": "{\"code\": 400, \"title\": \"Bad Request\", \"description\": \"Expected UUID or name for node: bad name\"}"}`, 400},
		{"/v1/nope", `{"error_message": "{\"code\": 404, \"title\": \"Not Found\", \"description\": \"\"}"}`, 404},
		{"/v1/conductors?sort_key=alive", `{"error_message": "{\"faultcode\": \"Client\", \"faultstring\": \"The sort_key value alive is an invalid field for sorting\", \"debuginfo\": null}"}`, 400},
		{"/v1/conductors?sort_key=bogus", `{"error_message": "{\"faultcode\": \"Client\", \"faultstring\": \"The sort_key value \\\"bogus\\\" is an invalid field for sorting\", \"debuginfo\": null}"}`, 400},
	} {
		rec := f.get(tc.path, latest)
		expectStatus(t, rec, tc.status)
		if got := rec.Body.String(); got != tc.want {
			t.Errorf("GET %s:\n got %s\nwant %s", tc.path, got, tc.want)
		}
		if got := rec.Header().Get("Content-Length"); got != fmt.Sprint(len(tc.want)) {
			t.Errorf("GET %s: Content-Length %s", tc.path, got)
		}
		// The bodies echo the request: no browser may sniff them as HTML.
		if got := rec.Header().Get("X-Content-Type-Options"); got != "nosniff" {
			t.Errorf("GET %s: X-Content-Type-Options %q, want nosniff", tc.path, got)
		}
	}
}

func TestConductorShow(t *testing.T) {
	f := newFixture(t, testSnapshot(rules.PostgreSQL), nil, Options{})
	// host:port works (Ironic 21.4 answers 400 "Expected name for hostname").
	const want = `{"created_at": "2026-01-02T01:04:05.123456+00:00", "updated_at": "2026-01-02T03:04:00+00:00", "hostname": "cond-b.example.com:6385", "conductor_group": "", "drivers": ["ipmi"], "links": [{"href": "http://example.com/v1/conductors/cond-b.example.com:6385", "rel": "self"}, {"href": "http://example.com/conductors/cond-b.example.com:6385", "rel": "bookmark"}], "alive": true}`
	for _, path := range []string{"/v1/conductors/cond-b.example.com:6385", "/v1/conductors/cond-b.example.com%3A6385",
		"/conductors/cond-b.example.com:6385", "/v1/conductors/cond-b.example.com:6385/",
		"/v1/conductors/cond-b.example.com:6385.json"} {
		rec := f.get(path, latest)
		expectStatus(t, rec, 200)
		if got := rec.Body.String(); got != want {
			t.Errorf("GET %s:\n got %s\nwant %s", path, got, want)
		}
	}
	for _, tc := range []struct{ path, want string }{
		// dead: online with a stale heartbeat; mixed case as stored
		{"/v1/conductors/Cond-C?fields=hostname,alive", `{"hostname": "Cond-C", "links": [{"href": "http://example.com/v1/conductors/Cond-C", "rel": "self"}, {"href": "http://example.com/conductors/Cond-C", "rel": "bookmark"}], "alive": false}`},
		// draining: offline, fresh heartbeat: alive (Ironic ignores online); NULL drivers are []
		{"/v1/conductors/cond-d?fields=drivers,alive,links", `{"drivers": [], "links": [{"href": "http://example.com/v1/conductors/cond-d", "rel": "self"}, {"href": "http://example.com/conductors/cond-d", "rel": "bookmark"}], "alive": true}`},
		{"/v1/conductors/cond-a.example.com?fields=DRIVERS,,", `{"drivers": ["redfish", "ipmi"], "links": [{"href": "http://example.com/v1/conductors/cond-a.example.com", "rel": "self"}, {"href": "http://example.com/conductors/cond-a.example.com", "rel": "bookmark"}]}`},
	} {
		rec := f.get(tc.path)
		expectStatus(t, rec, 200)
		if got := rec.Body.String(); got != tc.want {
			t.Errorf("GET %s:\n got %s\nwant %s", tc.path, got, tc.want)
		}
	}
	for _, tc := range []struct {
		path   string
		status int
		msg    string
	}{
		{"/v1/conductors/cond-c", 404, "Conductor cond-c could not be found."}, // exact on PostgreSQL
		{"/v1/conductors/cond-a.example.com?fields=bogus,hostname,x", 400, `Field(s) "bogus, x" are not valid`},
		{"/v1/conductors/cond-a.example.com?fields=owner", 406, "Request not acceptable."}, // node field of 1.50
		{"/v1/conductors/cond-a.example.com?detail=True", 400, "Unexpected arguments: detail"},
		{"/v1/conductors/cond-a.example.com?fields=a&fields=b", 400, "Expected string for fields: ['a', 'b']"},
		{"/v1/conductors/detail", 404, "Conductor detail could not be found."},
		{"/v1/conductors/a/b", 404, ""},
	} {
		rec := f.get(tc.path, latest)
		expectStatus(t, rec, tc.status)
		if got := message(t, rec); got != tc.msg {
			t.Errorf("GET %s: %q, want %q", tc.path, got, tc.msg)
		}
	}
}

func TestMySQLCollation(t *testing.T) {
	f := newFixture(t, testSnapshot(rules.MySQL), nil, Options{})
	rec := f.get("/v1/conductors/COND-A.EXAMPLE.COM?fields=hostname")
	expectStatus(t, rec, 200)
	if !strings.Contains(rec.Body.String(), `"hostname": "cond-a.example.com"`) {
		t.Errorf("stored spelling expected: %s", rec.Body)
	}
	expectStatus(t, f.get("/v1/nodes/NODE-1?fields=uuid"), 200)
	expectStatus(t, f.get("/v1/nodes/"+strings.ToUpper(uuidN(1))+"?fields=uuid"), 200)
	rec = f.get("/v1/nodes?conductor_group=RACK-b&fields=uuid")
	if got := listUUIDs(t, rec); !slices.Equal(got, []string{uuidN(4)}) {
		t.Errorf("conductor_group folded: %v", got)
	}
	// The conductor filter compares in Python: exact everywhere.
	rec = f.get("/v1/nodes?conductor=COND-E&fields=uuid")
	if got := listUUIDs(t, rec); len(got) != 0 {
		t.Errorf("conductor filter must be exact: %v", got)
	}
	// PostgreSQL: exact.
	f = newFixture(t, testSnapshot(rules.PostgreSQL), nil, Options{})
	expectStatus(t, f.get("/v1/nodes/"+strings.ToUpper(uuidN(1))), 404)
	expectStatus(t, f.get("/v1/nodes/NODE-1"), 404)
}

func listUUIDs(t testing.TB, rec interface{ Result() *http.Response }) []string {
	t.Helper()
	r := rec.Result()
	defer func() { _ = r.Body.Close() }()
	var v struct {
		Nodes []struct {
			UUID string `json:"uuid"`
		} `json:"nodes"`
	}
	if err := jsonDecode(r, &v); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, n := range v.Nodes {
		out = append(out, n.UUID)
	}
	return out
}

func TestConductorList(t *testing.T) {
	f := newFixture(t, testSnapshot(rules.PostgreSQL), nil, Options{})
	link := func(h string) string {
		return `[{"href": "http://example.com/v1/conductors/` + h + `", "rel": "self"}, {"href": "http://example.com/conductors/` + h + `", "rel": "bookmark"}]`
	}
	want := `{"conductors": [` +
		`{"hostname": "cond-a.example.com", "conductor_group": "", "links": ` + link("cond-a.example.com") + `, "alive": true}, ` +
		`{"hostname": "cond-b.example.com:6385", "conductor_group": "", "links": ` + link("cond-b.example.com:6385") + `, "alive": true}, ` +
		`{"hostname": "Cond-C", "conductor_group": "Rack-B", "links": ` + link("Cond-C") + `, "alive": false}, ` +
		`{"hostname": "cond-d", "conductor_group": "gpu", "links": ` + link("cond-d") + `, "alive": true}, ` +
		`{"hostname": "cond-e", "conductor_group": "gpu", "links": ` + link("cond-e") + `, "alive": true}]}`
	for _, p := range []string{"/v1/conductors", "/v1/conductors/", "/conductors", "/v1/conductors?detail=False&limit=5000"} {
		rec := f.get(p, latest)
		expectStatus(t, rec, 200)
		if got := rec.Body.String(); got != want {
			t.Errorf("GET %s:\n got %s\nwant %s", p, got, want)
		}
	}
	// detail: every field, in Ironic's order
	rec := f.get("/v1/conductors?detail=True&limit=1", latest)
	expectStatus(t, rec, 200)
	const wantDetail = `{"conductors": [{"created_at": "2026-01-02T02:04:05+00:00", "updated_at": "2026-01-02T03:03:55+00:00", "hostname": "cond-a.example.com", "conductor_group": "", "drivers": ["redfish", "ipmi"], "links": [{"href": "http://example.com/v1/conductors/cond-a.example.com", "rel": "self"}, {"href": "http://example.com/conductors/cond-a.example.com", "rel": "bookmark"}], "alive": true}], "next": "http://example.com/v1/conductors?sort_key=id&sort_dir=asc&detail=True&limit=1&marker=cond-a.example.com"}`
	if got := rec.Body.String(); got != wantDetail {
		t.Errorf("detail:\n got %s\nwant %s", got, wantDetail)
	}
	for _, tc := range []struct {
		q      string
		status int
		msg    string
	}{
		{"limit=0", 400, "Limit must be positive"},
		{"limit=-1", 400, "Limit must be positive"},
		{"limit=abc", 400, "Expected an integer for limit: abc"},
		{"limit=1&limit=2", 400, "Expected an integer for limit: ['1', '2']"},
		{"sort_dir=up", 400, "Invalid sort direction: up. Acceptable values are 'asc' or 'desc'"},
		{"sort_key=drivers", 400, "The sort_key value drivers is an invalid field for sorting"},
		{"sort_key=version", 400, "Sorting conductors by version is not supported by ironic-conductor-exporter"},
		{"detail=maybe", 400, "Invalid detail: Unrecognized value 'maybe', acceptable values are: '0', '1', 'f', 'false', 'n', 'no', 'off', 'on', 't', 'true', 'y', 'yes'"},
		{"detail=True&fields=hostname", 400, "Can not specify ?detail=True and fields in the same request."},
		{"foo=1&bar=2", 400, "Unexpected arguments: bar, foo"},
		{"marker=nosuch", 404, "Conductor nosuch could not be found."},
		{"marker=", 400, "Expected name for marker: "},
		{"fields=hostname,bogus", 400, `Field(s) "bogus" are not valid`},
		{"fields=owner", 406, "Request not acceptable."}, // a node field of 1.50
		{"fields=conductor", 400, `Field(s) "conductor" are not valid`},
	} {
		rec := f.get("/v1/conductors?"+tc.q, latest)
		expectStatus(t, rec, tc.status)
		if got := message(t, rec); got != tc.msg {
			t.Errorf("?%s: %q, want %q", tc.q, got, tc.msg)
		}
	}
	// detail at a version without the detail query (1.43) cannot be
	// reached: conductors need 1.49.
	rec = f.get("/v1/conductors?detail=True", ver("1.42"))
	expectStatus(t, rec, 404)
}

// follow walks a collection through its next links and returns the
// hostnames or UUIDs in order, checking every next link is absolute
// and re-usable.
func follow(t *testing.T, f *fixture, path, key, id string, hdr ...string) []string {
	t.Helper()
	var out []string
	for range 100 {
		rec := f.get(path, hdr...)
		expectStatus(t, rec, 200)
		m := decode(t, rec.Body.Bytes()).(map[string]any)
		items, _ := m[key].([]any)
		for _, it := range items {
			out = append(out, it.(map[string]any)[id].(string))
		}
		next, ok := m["next"].(string)
		if !ok {
			return out
		}
		u, err := url.Parse(next)
		if err != nil || u.Host != "example.com" || u.Scheme != "http" {
			t.Fatalf("bad next link %q", next)
		}
		path = u.RequestURI()
	}
	t.Fatal("next links never end")
	return nil
}

func TestConductorPagination(t *testing.T) {
	f := newFixture(t, testSnapshot(rules.PostgreSQL), nil, Options{})
	all := []string{"cond-a.example.com", "cond-b.example.com:6385", "Cond-C", "cond-d", "cond-e"}
	byHost := slices.Clone(all)
	slices.Sort(byHost) // bytes: "Cond-C" first
	byHostDesc := slices.Clone(byHost)
	slices.Reverse(byHostDesc)
	idDesc := slices.Clone(all)
	slices.Reverse(idDesc)
	for _, tc := range []struct {
		q    string
		want []string
	}{
		{"", all},
		{"sort_dir=desc", idDesc},
		{"sort_key=hostname", byHost},
		{"sort_key=hostname&sort_dir=desc", byHostDesc},
		// group "" (a, b), "Rack-B" (C), "gpu" (d, e); ties by id
		{"sort_key=conductor_group", []string{"cond-a.example.com", "cond-b.example.com:6385", "Cond-C", "cond-d", "cond-e"}},
		{"sort_key=online", []string{"cond-d", "cond-a.example.com", "cond-b.example.com:6385", "Cond-C", "cond-e"}},
		// heartbeats: C (1h), d (20s), a (10s), b (5s), e (1s)
		{"sort_key=updated_at", []string{"Cond-C", "cond-d", "cond-a.example.com", "cond-b.example.com:6385", "cond-e"}},
		{"sort_key=created_at&sort_dir=desc", all},
		{"sort_key=", all},
	} {
		for _, limit := range []int{1, 2, 3, 5, 7} {
			for _, detail := range []string{"", "&detail=True", "&fields=hostname"} {
				path := fmt.Sprintf("/v1/conductors?%s&limit=%d%s", tc.q, limit, detail)
				if got := follow(t, f, path, "conductors", "hostname", latest); !slices.Equal(got, tc.want) {
					t.Errorf("%s: %v, want %v", path, got, tc.want)
				}
			}
		}
	}
	// The next link is exactly Ironic's (collection.get_next).
	rec := f.get("/v1/conductors?limit=2", latest)
	m := decode(t, rec.Body.Bytes()).(map[string]any)
	if got, want := m["next"], "http://example.com/v1/conductors?sort_key=id&sort_dir=asc&fields=hostname,conductor_group,alive&limit=2&marker=cond-b.example.com:6385"; got != want {
		t.Errorf("next %v, want %v", got, want)
	}
	rec = f.get("/v1/conductors?limit=1&detail=False&sort_dir=desc&fields=", latest)
	expectStatus(t, rec, 200)
	m = decode(t, rec.Body.Bytes()).(map[string]any)
	if got, want := m["next"], "http://example.com/v1/conductors?sort_key=id&sort_dir=desc&detail=False&limit=1&marker=cond-e"; got != want {
		t.Errorf("next %v, want %v", got, want)
	}
	// A page exactly as long as max_limit still gets a next link (Ironic).
	f = newFixture(t, testSnapshot(rules.PostgreSQL), nil, Options{MaxLimit: 5})
	rec = f.get("/v1/conductors", latest)
	m = decode(t, rec.Body.Bytes()).(map[string]any)
	if _, ok := m["next"]; !ok || len(m["conductors"].([]any)) != 5 {
		t.Errorf("max_limit page: %s", rec.Body)
	}
	if got := follow(t, f, "/v1/conductors?limit=100", "conductors", "hostname"); len(got) != 5 {
		t.Errorf("limit above max_limit: %v", got)
	}
}

func nodeConductors(t *testing.T, f *fixture) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, n := range f.topology(t).Nodes {
		out[n.UUID] = n.Conductor
	}
	return out
}

func TestFixtureTopology(t *testing.T) {
	f := newFixture(t, testSnapshot(rules.PostgreSQL), nil, Options{})
	m := nodeConductors(t, f)
	for u, want := range map[string][]string{
		uuidN(1): {"cond-a.example.com", "cond-b.example.com:6385"}, uuidN(2): {"cond-a.example.com", "cond-b.example.com:6385"},
		uuidN(3): {"cond-a.example.com"}, uuidN(4): {""}, uuidN(5): {"cond-e"}, uuidN(6): {""},
		uuidN(9): {"cond-e"}, uuidN(10): {"cond-a.example.com"},
	} {
		if !slices.Contains(want, m[u]) {
			t.Errorf("node %s maps to %q, want one of %q", u, m[u], want)
		}
	}
}

func TestNodeList(t *testing.T) {
	f := newFixture(t, testSnapshot(rules.PostgreSQL), nil, Options{})
	links := func(u string) string {
		return `[{"href": "http://example.com/v1/nodes/` + u + `", "rel": "self"}, {"href": "http://example.com/nodes/` + u + `", "rel": "bookmark"}]`
	}
	// Default fields, in Ironic's key order.
	rec := f.get("/v1/nodes?limit=2", latest)
	expectStatus(t, rec, 200)
	want := `{"nodes": [{"uuid": "` + uuidN(1) + `", "instance_uuid": "22222222-2222-4222-8222-222222222222", "maintenance": false, "power_state": "power on", "provision_state": "active", "name": "node-1", "links": ` + links(uuidN(1)) + `}, ` +
		`{"uuid": "` + uuidN(2) + `", "instance_uuid": null, "maintenance": false, "power_state": "power off", "provision_state": "available", "name": null, "links": ` + links(uuidN(2)) + `}], ` +
		`"next": "http://example.com/v1/nodes?sort_key=id&sort_dir=asc&fields=instance_uuid,maintenance,power_state,provision_state,uuid,name&limit=2&marker=` + uuidN(2) + `"}`
	if got := rec.Body.String(); got != want {
		t.Errorf("default list:\n got %s\nwant %s", got, want)
	}
	conductors := nodeConductors(t, f)
	// Detail: everything served, in Ironic's order.
	for _, p := range []string{"/v1/nodes/detail?limit=1", "/v1/nodes?detail=True&limit=1", "/v1/nodes/detail/?limit=1", "/nodes/detail?limit=1"} {
		rec = f.get(p, latest)
		expectStatus(t, rec, 200)
		wantNode := `{"uuid": "` + uuidN(1) + `", "created_at": "2026-01-02T02:04:05+00:00", "updated_at": "2026-01-02T03:03:05+00:00", "conductor_group": "", "driver": "ipmi", "fault": null, "instance_uuid": "22222222-2222-4222-8222-222222222222", "maintenance": false, "name": "node-1", "power_state": "power on", "provision_state": "active", "reservation": null, "resource_class": "baremetal", "links": ` + links(uuidN(1)) + `, "conductor": "` + conductors[uuidN(1)] + `"`
		// Ironic's bytes, then the extension (node 1's boot files were
		// prepared by conductor id 3).
		wantNode += `, "exporter_conductor_affinity": "Cond-C"}`
		next := "http://example.com/v1/nodes/detail?sort_key=id&sort_dir=asc&limit=1&marker=" + uuidN(1)
		if strings.Contains(p, "detail=True") {
			next = "http://example.com/v1/nodes?sort_key=id&sort_dir=asc&detail=True&limit=1&marker=" + uuidN(1)
		}
		if got, want := rec.Body.String(), `{"nodes": [`+wantNode+`], "next": "`+next+`"}`; got != want {
			t.Errorf("GET %s:\n got %s\nwant %s", p, got, want)
		}
	}
	// fields=uuid,conductor (a 500 in Ironic 21.4's list).
	rec = f.get("/v1/nodes?fields=uuid,conductor", latest)
	expectStatus(t, rec, 200)
	var v struct {
		Nodes []map[string]any `json:"nodes"`
	}
	if err := jsonDecode(rec.Result(), &v); err != nil {
		t.Fatal(err)
	}
	if len(v.Nodes) != 10 {
		t.Fatalf("%d nodes", len(v.Nodes))
	}
	for _, n := range v.Nodes {
		u := n["uuid"].(string)
		var want any = conductors[u]
		if want == "" {
			want = nil
		}
		if n["conductor"] != want || len(n) != 3 {
			t.Errorf("node %s: %v, want conductor %v", u, n, want)
		}
	}
	// Key order with fields: uuid, the rest as requested, links, conductor.
	rec = f.get("/v1/nodes?fields=conductor,driver,name,uuid&limit=1", latest)
	if got, want := rec.Body.String(), `{"nodes": [{"uuid": "`+uuidN(1)+`", "driver": "ipmi", "name": "node-1", "links": `+links(uuidN(1))+`, "conductor": "`+conductors[uuidN(1)]+`"}], "next": "http://example.com/v1/nodes?sort_key=id&sort_dir=asc&fields=conductor,driver,name,uuid&limit=1&marker=`+uuidN(1)+`"}`; got != want {
		t.Errorf("fields order:\n got %s\nwant %s", got, want)
	}
	// Filters.
	byCond := map[string][]string{}
	for _, n := range f.topology(t).Nodes {
		byCond[n.Conductor] = append(byCond[n.Conductor], n.UUID)
	}
	for _, tc := range []struct {
		q    string
		want []string
	}{
		{"conductor=cond-e", byCond["cond-e"]},
		{"conductor=cond-a.example.com", byCond["cond-a.example.com"]},
		{"conductor=cond-b.example.com:6385", byCond["cond-b.example.com:6385"]},
		{"conductor=cond-b.example.com%3A6385", byCond["cond-b.example.com:6385"]},
		{"conductor=no-such", nil},
		{"conductor=", allUUIDs()}, // Ironic: an empty conductor filters nothing
		{"conductor_group=gpu", []string{uuidN(5), uuidN(9)}},
		{"conductor_group=GPU", nil},
		{"conductor_group=", []string{uuidN(1), uuidN(2), uuidN(3), uuidN(6), uuidN(7), uuidN(8), uuidN(10)}},
		{"driver=redfish", []string{uuidN(3), uuidN(4), uuidN(10)}},
		{"driver=redfish&conductor_group=Rack-B", []string{uuidN(4)}},
		{"provision_state=available", []string{uuidN(2), uuidN(5)}},
		{"maintenance=true", []string{uuidN(7)}},
		{"maintenance=0&associated=1", []string{uuidN(1)}},
		{"associated=false&driver=ipmi", []string{uuidN(2), uuidN(7), uuidN(8)}},
		{"resource_class=gpu", []string{uuidN(5)}},
		{"instance_uuid=22222222-2222-4222-8222-222222222222", []string{uuidN(1)}},
	} {
		for _, p := range []string{"/v1/nodes?", "/v1/nodes/?", "/v1/nodes/detail?"} {
			got := follow(t, f, p+tc.q+"&limit=1", "nodes", "uuid", latest)
			if !slices.Equal(got, tc.want) {
				t.Errorf("%s%s: %v, want %v", p, tc.q, got, tc.want)
			}
		}
	}
	for _, tc := range []struct {
		q, msg string
		status int
	}{
		{"provision_state=bogus", `Provision state "bogus" is not valid`, 400},
		{"instance_uuid=nope", "Expected UUID for instance_uuid: nope", 400},
		{"marker=nosuch", "Expected UUID for marker: nosuch", 400},
		{"marker=00000000-0000-4000-8000-000000000000", "Node 00000000-0000-4000-8000-000000000000 could not be found.", 404},
		{"sort_key=driver_info", "The sort_key value driver_info is an invalid field for sorting", 400},
		{"sort_key=conductor", `The sort_key value "conductor" is an invalid field for sorting`, 400},
		{"sort_key=owner", "Request not acceptable.", 406},
		{"sort_key=last_error", "Sorting nodes by last_error is not supported by ironic-conductor-exporter: it does not read that from Ironic's database.", 400},
		{"fields=uuid,bogus", "Field bogus is not a valid field.", 400},
		{"fields=created_at", "Field created_at is not a valid field.", 400},
		{"fields=uuid,driver_info", "Field driver_info is not served by ironic-conductor-exporter: it does not read it from Ironic's database.", 400},
		{"fields=uuid&fields=name", "Expected string for fields: ['uuid', 'name']", 400},
		{"fault=x", `Unrecognized fault "x" is specified, allowed faults are ('power failure', 'clean failure', 'rescue abort failure')`, 400},
		{"fault=service%20failure", `Unrecognized fault "service failure" is specified, allowed faults are ('power failure', 'clean failure', 'rescue abort failure')`, 400},
		{"owner=x", "Request not acceptable. The minimal required API version should be 1.50", 406},
		{"foo=bar", "Unexpected arguments: foo", 400},
		{"limit=%zz", "Expected an integer for limit: %zz", 400},
	} {
		rec := f.get("/v1/nodes?"+tc.q, latest)
		expectStatus(t, rec, tc.status)
		if got := message(t, rec); got != tc.msg {
			t.Errorf("?%s: %q, want %q", tc.q, got, tc.msg)
		}
	}
	rec = f.get("/v1/nodes/detail?fields=uuid", latest)
	expectStatus(t, rec, 400)
	if got := message(t, rec); got != "Unexpected arguments: fields" {
		t.Errorf("detail?fields: %q", got)
	}
	// Ironic's odd but harmless number syntax: "+3", "1_0".
	if got := follow(t, f, "/v1/nodes?limit=+3&fields=uuid", "nodes", "uuid"); len(got) != 10 {
		t.Errorf("limit=+3: %v", got)
	}
}

func allUUIDs() []string {
	var out []string
	for i := 1; i <= 10; i++ {
		out = append(out, uuidN(i))
	}
	return out
}

func TestNodePagination(t *testing.T) {
	for _, backend := range []rules.Backend{rules.PostgreSQL, rules.MySQL} {
		f := newFixture(t, testSnapshot(backend), nil, Options{})
		nulls := func(pg, my []string) []string {
			if backend == rules.PostgreSQL {
				return pg
			}
			return my
		}
		all := allUUIDs()
		rev := slices.Clone(all)
		slices.Reverse(rev)
		named := []string{uuidN(4), uuidN(1), uuidN(10), uuidN(3), uuidN(5), uuidN(7), uuidN(8)}
		if backend == rules.MySQL { // case-insensitive: "Node_4..." after "node-8"
			named = []string{uuidN(1), uuidN(10), uuidN(3), uuidN(5), uuidN(7), uuidN(8), uuidN(4)}
		}
		unnamed := []string{uuidN(2), uuidN(6), uuidN(9)}
		for _, tc := range []struct {
			q    string
			want []string
		}{
			{"", all},
			{"sort_dir=desc", rev},
			{"sort_key=uuid", all},
			{"sort_key=name", nulls(append(slices.Clone(named), unnamed...), append(slices.Clone(unnamed), named...))},
			{"sort_key=driver&conductor_group=gpu", []string{uuidN(5), uuidN(9)}},
			{"sort_key=maintenance&sort_dir=desc&driver=ipmi", []string{uuidN(7), uuidN(8), uuidN(2), uuidN(1)}},
		} {
			for _, limit := range []int{1, 2, 3, 10, 11} {
				path := fmt.Sprintf("/v1/nodes?%s&limit=%d&fields=uuid", tc.q, limit)
				if got := follow(t, f, path, "nodes", "uuid", latest); !slices.Equal(got, tc.want) {
					t.Errorf("%s %s:\n got %v\nwant %v", backend, path, got, tc.want)
				}
			}
		}
	}
	// Filters survive in next links (Ironic drops them), after Ironic's own
	// parameters.
	f := newFixture(t, testSnapshot(rules.PostgreSQL), nil, Options{})
	rec := f.get("/v1/nodes?driver=ipmi&maintenance=true&limit=1", latest)
	m := decode(t, rec.Body.Bytes()).(map[string]any)
	if got, want := m["next"], "http://example.com/v1/nodes?sort_key=id&sort_dir=asc&maintenance=True&fields=instance_uuid,maintenance,power_state,provision_state,uuid,name&driver=ipmi&limit=1&marker="+uuidN(7); got != want {
		t.Errorf("next:\n got %v\nwant %v", got, want)
	}
	// instance_uuid: never a next link.
	rec = f.get("/v1/nodes?instance_uuid=22222222-2222-4222-8222-222222222222&limit=1", latest)
	if m := decode(t, rec.Body.Bytes()).(map[string]any); m["next"] != nil {
		t.Errorf("instance_uuid next link: %v", m["next"])
	}
	// Odd filter values are escaped in next links.
	rec = f.get("/v1/nodes?conductor_group=a%26b%20c&limit=1", latest)
	expectStatus(t, rec, 200)
	if got := nextLinkOf(t, f, "/v1/nodes?conductor=cond-e&conductor_group=gpu&provision_state=available&limit=1&fields=uuid"); got != "http://example.com/v1/nodes?sort_key=id&sort_dir=asc&fields=uuid&provision_state=available&conductor_group=gpu&conductor=cond-e&limit=1&marker="+uuidN(5) {
		t.Errorf("next: %s", got)
	}
}

func nextLinkOf(t *testing.T, f *fixture, path string) string {
	t.Helper()
	rec := f.get(path, latest)
	expectStatus(t, rec, 200)
	s, _ := decode(t, rec.Body.Bytes()).(map[string]any)["next"].(string)
	return s
}

func TestNodeShow(t *testing.T) {
	f := newFixture(t, testSnapshot(rules.PostgreSQL), nil, Options{})
	conductors := nodeConductors(t, f)
	for _, tc := range []struct {
		path, version string
		status        int
		want          string // body for 200, message otherwise
	}{
		{"/v1/nodes/node-3?fields=uuid,name", "latest", 200, `{"uuid": "` + uuidN(3) + `", "name": "node-3", "links": [{"href": "http://example.com/v1/nodes/` + uuidN(3) + `", "rel": "self"}, {"href": "http://example.com/nodes/` + uuidN(3) + `", "rel": "bookmark"}]}`},
		{"/v1/nodes/" + uuidN(6) + "?fields=uuid,conductor", "latest", 200, `{"uuid": "` + uuidN(6) + `", "links": [{"href": "http://example.com/v1/nodes/` + uuidN(6) + `", "rel": "self"}, {"href": "http://example.com/nodes/` + uuidN(6) + `", "rel": "bookmark"}], "conductor": null}`},
		{"/v1/nodes/Node_4.rack~1?fields=uuid", "latest", 200, `{"uuid": "` + uuidN(4) + `", "links": [{"href": "http://example.com/v1/nodes/` + uuidN(4) + `", "rel": "self"}, {"href": "http://example.com/nodes/` + uuidN(4) + `", "rel": "bookmark"}]}`},
		{"/v1/nodes/node-3.json?fields=uuid", "latest", 200, `{"uuid": "` + uuidN(3) + `", "links": [{"href": "http://example.com/v1/nodes/` + uuidN(3) + `", "rel": "self"}, {"href": "http://example.com/nodes/` + uuidN(3) + `", "rel": "bookmark"}]}`},
		{"/v1/nodes/" + strings.ToUpper(uuidN(1)), "latest", 404, "Node " + strings.ToUpper(uuidN(1)) + " could not be found."},
		{"/v1/nodes/{" + uuidN(1) + "}", "latest", 404, "Node {" + uuidN(1) + "} could not be found."},
		{"/v1/nodes/bad:name", "latest", 400, "Expected UUID or name for node: bad:name"},
		{"/v1/nodes/" + strings.Repeat("a", 256), "latest", 400, "Expected UUID or name for node: " + strings.Repeat("a", 256)},
		{"/v1/nodes/ports", "latest", 404, ""},
		{"/v1/nodes/node-1?fields=uuid,foo", "latest", 400, "Field foo is not a valid field."},
		{"/v1/nodes/node-1?fields=conductor", "1.48", 406, "Request not acceptable."},
		{"/v1/nodes/node-1?fields=uuid", "1.7", 406, "Request not acceptable."},
		{"/v1/nodes/node-1", "1.4", 404, "Node node-1 could not be found."}, // names are 1.5
		{"/v1/nodes/Node_4.rack~1", "1.9", 400, "Expected a logical name or UUID but received Node_4.rack~1."},
	} {
		rec := f.get(tc.path, ver(tc.version))
		expectStatus(t, rec, tc.status)
		got := rec.Body.String()
		if tc.status != 200 {
			got = message(t, rec)
		}
		if got != tc.want {
			t.Errorf("GET %s (%s):\n got %s\nwant %s", tc.path, tc.version, got, tc.want)
		}
	}
	// Microversions hide newer fields and rename states.
	for _, tc := range []struct {
		version, node string
		absent        []string
		state         any
	}{
		{"1.48", "node-8", []string{"conductor"}, "inspect wait"},
		{"1.38", "node-8", []string{"conductor", "conductor_group"}, "inspecting"},
		{"1.39", "node-8", []string{"conductor", "conductor_group"}, "inspect wait"},
		{"1.20", uuidN(5), []string{"conductor", "conductor_group", "resource_class"}, "available"},
		{"1.1", uuidN(5), []string{"conductor", "conductor_group", "resource_class", "name"}, nil},
	} {
		rec := f.get("/v1/nodes/"+tc.node, ver(tc.version))
		expectStatus(t, rec, 200)
		m := decode(t, rec.Body.Bytes()).(map[string]any)
		for _, k := range tc.absent {
			if _, ok := m[k]; ok {
				t.Errorf("%s: %s present at %s", tc.node, k, tc.version)
			}
		}
		if m["provision_state"] != tc.state {
			t.Errorf("%s at %s: provision_state %v, want %v", tc.node, tc.version, m["provision_state"], tc.state)
		}
	}
	rec := f.get("/v1/nodes/node-5")
	m := decode(t, rec.Body.Bytes()).(map[string]any)
	if m["conductor"] != conductors[uuidN(5)] || m["reservation"] != nil || m["resource_class"] != "gpu" {
		t.Errorf("node-5: %v", m)
	}
}

func TestNodeConductor(t *testing.T) {
	f := newFixture(t, testSnapshot(rules.PostgreSQL), nil, Options{})
	conductors := nodeConductors(t, f)
	for _, ident := range []string{uuidN(5), "node-5", uuidN(1), "node-10"} {
		for _, suffix := range []string{"/conductor", "/conductor/", "/conductor?fields=hostname"} {
			rec := f.get("/v1/nodes/"+ident+suffix, latest)
			expectStatus(t, rec, 200)
			u := uuidN(5)
			switch ident {
			case uuidN(1):
				u = uuidN(1)
			case "node-10":
				u = uuidN(10)
			}
			q := ""
			if strings.Contains(suffix, "?") {
				q = "?fields=hostname"
			}
			want := f.get("/v1/conductors/"+conductors[u]+q, latest).Body.String()
			if got := rec.Body.String(); got != want {
				t.Errorf("GET /v1/nodes/%s%s:\n got %s\nwant %s", ident, suffix, got, want)
			}
		}
	}
	for _, tc := range []struct {
		path, version string
		status        int
		msg           string
	}{
		{"/v1/nodes/Node_4.rack~1/conductor", "latest", 404, `No valid host was found. Reason: No conductor service registered which supports driver redfish for conductor group "Rack-B".`},
		{"/v1/nodes/" + uuidN(6) + "/conductor", "latest", 404, `No valid host was found. Reason: No conductor service registered which supports driver snmp for conductor group "".`},
		{"/v1/nodes/no-such-node/conductor", "latest", 404, "Node no-such-node could not be found."},
		{"/v1/nodes/node-5/conductor", "1.48", 404, "Resource could not be found."},
		{"/v1/nodes/node-5/conductor?fields=bogus", "latest", 400, `Field(s) "bogus" are not valid`},
		{"/v1/nodes/node-5/conductor?x=1", "latest", 400, "Unexpected arguments: x"},
		{"/v1/nodes/node-5/conductor/x", "latest", 404, ""},
		{"/v1/nodes/node-5/ports", "latest", 501, "ironic-conductor-exporter is a read-only sidecar that serves only conductors and nodes: /v1/nodes/{node_ident}/ports is not served. Use the real Ironic API."},
	} {
		rec := f.get(tc.path, ver(tc.version))
		expectStatus(t, rec, tc.status)
		if got := message(t, rec); got != tc.msg {
			t.Errorf("GET %s: %q, want %q", tc.path, got, tc.msg)
		}
	}
}

func TestNoTopologyYet(t *testing.T) {
	f := newFixture(t, nil, errDown, Options{})
	for _, p := range []string{"/v1/conductors", "/v1/conductors/cond-a.example.com", "/v1/nodes", "/v1/nodes/detail",
		"/v1/nodes/node-1", "/v1/nodes/" + uuidN(1) + "/conductor"} {
		rec := f.get(p, latest)
		expectStatus(t, rec, 503)
		in := fault(t, rec)
		if in["faultcode"] != "Server" || in["debuginfo"] != nil || !strings.Contains(in["faultstring"].(string), "retry later") {
			t.Errorf("GET %s: %v", p, in)
		}
		if strings.Contains(rec.Body.String(), errDown.Error()) {
			t.Errorf("GET %s leaks the database error: %s", p, rec.Body)
		}
	}
	expectStatus(t, f.get("/"), 200)
	expectStatus(t, f.get("/v1"), 200)
	// Version and argument errors come first, as in Ironic.
	expectStatus(t, f.get("/v1/conductors", ver("1.48")), 404)
	expectStatus(t, f.get("/v1/conductors?limit=0", latest), 400)
}

func TestStaleTopologyIsServed(t *testing.T) {
	src := testfixture.NewSource(testSnapshot(rules.PostgreSQL))
	cache, err := topology.NewCache(topology.CacheConfig{Source: src, MinInterval: 0,
		Settings: topology.Settings{Settings: rules.Settings{HeartbeatTimeout: 60e9, PartitionExponent: 5, Algorithm: "md5"}, Release: rules.MustRelease("21.4")},
		Now:      func() time.Time { return testNow }})
	if err != nil {
		t.Fatal(err)
	}
	h := NewHandler(cache, Options{})
	f := &fixture{h: h, src: src, cache: cache}
	expectStatus(t, f.get("/v1/nodes/node-1"), 200)
	src.Set(nil, errDown) // every request refreshes (MinInterval 0) and fails
	rec := f.get("/v1/nodes/node-1")
	expectStatus(t, rec, 200)
	if v := cache.Current(); v.Err == nil || v.Topology == nil {
		t.Fatalf("expected a stale view, got %+v", v)
	}
	// Marked stale, with the data's age, on every JSON answer from data.
	for _, p := range []string{"/v1/nodes/node-1", "/v1/nodes", "/v1/conductors", "/v1/nodes/nope"} {
		rec := f.get(p)
		if rec.Header().Get(hdrStale) != "true" || rec.Header().Get(hdrDataAge) != "0.0" {
			t.Errorf("GET %s: stale %q, age %q", p, rec.Header().Get(hdrStale), rec.Header().Get(hdrDataAge))
		}
	}
}

func TestStaleHeaders(t *testing.T) {
	now := testNow
	src := testfixture.NewSource(testSnapshot(rules.PostgreSQL))
	cache, err := topology.NewCache(topology.CacheConfig{Source: src, MinInterval: 10 * time.Second,
		Settings: topology.Settings{Settings: rules.Settings{HeartbeatTimeout: 60e9, PartitionExponent: 5, Algorithm: "md5"}},
		Now:      func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{h: NewHandler(cache, Options{}), src: src, cache: cache}
	rec := f.get("/v1/nodes/node-1")
	if _, ok := rec.Header()[hdrStale]; ok {
		t.Errorf("fresh data marked stale: %v", rec.Header())
	}
	if _, ok := rec.Header()[hdrDataAge]; ok {
		t.Errorf("fresh data with an age: %v", rec.Header())
	}
	// The database fails; the next refresh (after 10 s) keeps the old data.
	src.Set(nil, errDown)
	now = now.Add(12300 * time.Millisecond)
	rec = f.get("/v1/conductors")
	expectStatus(t, rec, 200)
	if rec.Header().Get(hdrStale) != "true" || rec.Header().Get(hdrDataAge) != "12.3" {
		t.Errorf("stale: %q, age %q", rec.Header().Get(hdrStale), rec.Header().Get(hdrDataAge))
	}
	// The root carries no data, so no mark.
	if _, ok := f.get("/").Header()[hdrStale]; ok {
		t.Error("root marked stale")
	}
}

// TestNotIronicsDatabase: a database without Ironic's tables (a real
// SQLite file holding another table) is a 503 that says so, not "retry
// later".
func TestNotIronicsDatabase(t *testing.T) {
	path := filepath.Join(t.TempDir(), "other.sqlite")
	w, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Exec("CREATE TABLE things (id INTEGER PRIMARY KEY)"); err != nil {
		t.Fatal(err)
	}
	w.Close()
	d, err := db.Open("sqlite:///"+path, dbconn.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	f := newFixture(t, nil, nil, Options{})
	cache, err := topology.NewCache(topology.CacheConfig{Source: d, MinInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	f.h, f.cache = NewHandler(cache, Options{}), cache
	rec := f.get("/v1/nodes", latest)
	expectStatus(t, rec, 503)
	if got := message(t, rec); !strings.Contains(got, "not Ironic's") || strings.Contains(got, "retry later") {
		t.Errorf("503: %q", got)
	}
	// A transient failure still says retry later (TestNoTopologyYet).
	if (topology.View{Err: errDown}).Permanent() {
		t.Errorf("%v classified as permanent", errDown)
	}
}

func TestMethodsAndPaths(t *testing.T) {
	f := newFixture(t, testSnapshot(rules.PostgreSQL), nil, Options{})
	for _, m := range []string{http.MethodPost, http.MethodPut, http.MethodDelete, http.MethodPatch, http.MethodOptions, "BREW"} {
		for _, p := range []string{"/", "/v1", "/v1/conductors", "/v1/nodes/node-1", "/v1/nope"} {
			rec := f.do(m, p, latest)
			expectStatus(t, rec, 405)
			if rec.Header().Get("Allow") != "GET, HEAD" {
				t.Errorf("%s %s: Allow %q", m, p, rec.Header().Get("Allow"))
			}
			// A faultstring, which ironicclient prints: writes need Ironic.
			want := `{"error_message": "{\"faultcode\": \"Client\", \"faultstring\": \"ironic-conductor-exporter is a read-only sidecar: ` + m + ` is not served. Send writes to the real Ironic API.\", \"debuginfo\": null}"}`
			if got := rec.Body.String(); got != want {
				t.Errorf("%s %s: %s", m, p, got)
			}
		}
	}
	// HEAD: headers of GET, no body.
	rec := f.do(http.MethodHead, "/v1/conductors", latest)
	expectStatus(t, rec, 200)
	if rec.Body.Len() != 0 || rec.Header().Get("Content-Length") == "0" {
		t.Errorf("HEAD: body %q, length %q", rec.Body, rec.Header().Get("Content-Length"))
	}
	for _, p := range []string{"/v1/foo", "/foo/bar", "/v2", "/v1//nodes", "//v1/nodes", "/v1/nodes/a/b/c/d",
		"/v1/conductors/x/y", "/v1/nodes/detail/x"} {
		rec := f.get(p, latest)
		expectStatus(t, rec, 404)
		if in := fault(t, rec); in["code"] != 404.0 || in["title"] != "Not Found" {
			t.Errorf("GET %s: %v", p, in)
		}
	}
	// Ironic's resources the sidecar does not serve: 501 saying so.
	for p, res := range map[string]string{"/v1/chassis": "chassis", "/v1/ports": "ports", "/v1/ports/": "ports",
		"/v1/portgroups/x": "portgroups", "/v1/nodes/node-1/states": "nodes/{node_ident}/states",
		"/v1/nodes/node-1/maintenance": "nodes/{node_ident}/maintenance", "/v1/nodes/node-1/traits": "nodes/{node_ident}/traits"} {
		rec := f.get(p, latest)
		expectStatus(t, rec, 501)
		want := "ironic-conductor-exporter is a read-only sidecar that serves only conductors and nodes: /v1/" + res + " is not served. Use the real Ironic API."
		if got := message(t, rec); got != want {
			t.Errorf("GET %s: %q, want %q", p, got, want)
		}
	}
	// Trailing slashes, as the ironic CLI sends them.
	for _, p := range []string{"/v1/nodes/?conductor=cond-e", "/v1/conductors/", "/v1/nodes/detail/", "/v1/nodes/node-1/",
		"/v1/", "/v1/conductors//", "/nodes/", "/v1/nodes/?conductor=cond-e&fields=uuid"} {
		expectStatus(t, f.get(p, latest), 200)
	}
}

func TestOddInput(t *testing.T) {
	f := newFixture(t, testSnapshot(rules.PostgreSQL), nil, Options{})
	for _, tc := range []struct {
		target string
		hdr    []string
		status int
	}{
		{"/v1/nodes?" + strings.Repeat("a=b&", 5000), nil, 400},
		{"/v1/nodes/" + strings.Repeat("x", 5000), nil, 400},
		{"/v1/nodes?limit=" + strings.Repeat("9", 4000), nil, 200},
		{"/v1/nodes?limit=-" + strings.Repeat("9", 4000), nil, 400},
		{"/v1/nodes?fields=" + strings.Repeat(",", 3000), nil, 200},
		{"/v1/nodes?%ff%fe=1", nil, 400},
		{"/v1/nodes?fields=%ff", nil, 400},
		{"/v1/nodes?&&&=&", nil, 400},
		{"/v1/conductors/%ff", nil, 404},
		{"/v1/conductors/%00", nil, 404},
		{"/v1/nodes/%ff", nil, 400},
		{"/v1/nodes?sort_key=name;drop", nil, 400},
		{"/v1/nodes", []string{"X-OpenStack-Ironic-API-Version: 1.49", "X-OpenStack-Ironic-API-Version: 1.49"}, 406},
		{"/v1/nodes", []string{"X-OpenStack-Ironic-API-Version: 1.\x00"}, 406},
		{"/v1/nodes", []string{"OpenStack-API-Version: baremetal"}, 200},
		{"/v1/nodes", []string{"Host: "}, 200},
	} {
		rec := f.get(tc.target, tc.hdr...)
		expectStatus(t, rec, tc.status)
		decode(t, rec.Body.Bytes())
	}
}

func TestOddHostnames(t *testing.T) {
	snap := testSnapshot(rules.PostgreSQL)
	snap.Conductors = append(snap.Conductors, db.Conductor{ID: 9, Hostname: "odd host/é&x", ConductorGroup: "gpu", Online: true,
		CreatedAt: testNow, UpdatedAt: testNow, HardwareTypes: []string{"fake-hardware"}})
	f := newFixture(t, snap, nil, Options{})
	rec := f.get("/v1/conductors/odd%20host%2F%C3%A9&x?fields=hostname", latest)
	expectStatus(t, rec, 200)
	const want = `{"hostname": "odd host/\u00e9&x", "links": [{"href": "http://example.com/v1/conductors/odd%20host%2F%C3%A9&x", "rel": "self"}, {"href": "http://example.com/conductors/odd%20host%2F%C3%A9&x", "rel": "bookmark"}]}`
	if got := rec.Body.String(); got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	// The link and the marker of next links lead back to it.
	m := decode(t, rec.Body.Bytes()).(map[string]any)
	self := m["links"].([]any)[0].(map[string]any)["href"].(string)
	u, _ := url.Parse(self)
	expectStatus(t, f.get(u.RequestURI(), latest), 200)
	got := follow(t, f, "/v1/conductors?sort_key=hostname&sort_dir=desc&limit=1", "conductors", "hostname", latest)
	if len(got) != 6 || got[0] != "odd host/é&x" {
		t.Errorf("pages: %v", got)
	}
	expectStatus(t, f.get("/v1/conductors/a%2Fb", latest), 404)
	if msg := message(t, f.get("/v1/conductors/a%2Fb", latest)); msg != "Conductor a/b could not be found." {
		t.Errorf("%q", msg)
	}
	// The nodes of the gpu ring now spread over two conductors; the filter
	// takes the odd hostname as sent.
	var mine []string
	for _, n := range f.topology(t).Nodes {
		if n.Conductor == "odd host/é&x" {
			mine = append(mine, n.UUID)
		}
	}
	if got := follow(t, f, "/v1/nodes?conductor=odd+host%2F%C3%A9%26x&fields=uuid&limit=1", "nodes", "uuid", latest); !slices.Equal(got, mine) {
		t.Errorf("filter: %v, want %v", got, mine)
	}
}

// TestRoutingErrorsCarryNoVersionHeaders: like Ironic 21.4
// (captured/unknown-path-404.json, node-show-badname-400.json), errors
// raised while routing come before the version hook and carry no version
// headers; a request id is always there.
func TestRoutingErrorsCarryNoVersionHeaders(t *testing.T) {
	f := newFixture(t, testSnapshot(rules.PostgreSQL), nil, Options{})
	for _, tc := range []struct {
		path   string
		status int
	}{{"/v1/nope", 404}, {"/v1/nodes/bad%20name", 400}, {"/v1/nodes/bad%20name/conductor", 400}} {
		rec := f.get(tc.path, latest)
		expectStatus(t, rec, tc.status)
		for _, h := range []string{"X-OpenStack-Ironic-API-Minimum-Version", "X-OpenStack-Ironic-API-Maximum-Version", "X-OpenStack-Ironic-API-Version"} {
			if v := rec.Header().Get(h); v != "" {
				t.Errorf("%s: %s = %q, Ironic sends none", tc.path, h, v)
			}
		}
		if !requestIDRE.MatchString(rec.Header().Get("Openstack-Request-Id")) {
			t.Errorf("%s: no request id", tc.path)
		}
	}
	rec := f.get("/v1/conductors", latest)
	expectStatus(t, rec, 200)
	if rec.Header().Get("X-OpenStack-Ironic-API-Version") != "1.49" || rec.Header().Get("X-OpenStack-Ironic-API-Maximum-Version") != "1.49" {
		t.Errorf("version headers missing on a success: %v", rec.Header())
	}
}

// TestAffinityFieldNullWhenUnknown: the extension is the conductor's
// hostname, and null when conductor_affinity is NULL or names no
// conductor row.
func TestAffinityFieldNullWhenUnknown(t *testing.T) {
	snap := testSnapshot(rules.PostgreSQL)
	snap.Nodes[1].HasConductorAffinity, snap.Nodes[1].ConductorAffinity = true, 99 // no such conductor
	f := newFixture(t, snap, nil, Options{})
	links := func(u string) string {
		return `[{"href": "http://example.com/v1/nodes/` + u + `", "rel": "self"}, {"href": "http://example.com/nodes/` + u + `", "rel": "bookmark"}]`
	}
	for ident, want := range map[string]string{
		uuidN(1): `"Cond-C"`, // conductor id 3
		uuidN(2): `null`,     // id 99
		uuidN(3): `null`,     // NULL
	} {
		rec := f.get("/v1/nodes/"+ident+"?fields=uuid,"+AffinityField, latest)
		expectStatus(t, rec, 200)
		if got, want := rec.Body.String(), `{"uuid": "`+ident+`", "links": `+links(ident)+`, "`+AffinityField+`": `+want+`}`; got != want {
			t.Errorf("node %s:\n got %s\nwant %s", ident, got, want)
		}
	}
}
