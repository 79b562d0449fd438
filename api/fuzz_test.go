package api

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/rules"
)

// FuzzHandler sends arbitrary paths, queries and version headers: the
// handler must never panic nor answer 500, and every answer must be JSON
// in Ironic's shapes with the version range headers.
func FuzzHandler(f *testing.F) {
	for _, seed := range []struct{ path, query, version string }{
		{"/", "", ""},
		{"/v1", "", "latest"},
		{"/v1/conductors", "limit=2&sort_key=hostname&sort_dir=desc", "1.49"},
		{"/v1/conductors/cond-b.example.com:6385", "fields=hostname,alive", ""},
		{"/v1/nodes", "conductor=cond-e&fields=uuid,conductor&limit=1", "latest"},
		{"/v1/nodes/detail", "marker=" + uuidN(3) + "&sort_key=name", "1.48"},
		{"/v1/nodes/node-1/conductor", "fields=", "1.1"},
		{"/v1/nodes/%ff/conductor", "%zz=%", "garbage"},
		{"/nodes/" + uuidN(9) + ".json", "detail=True&limit=-1", "2.0"},
		{"/v1//", "&&=&", "1.99999999999999999999"},
		{"/v1/nodes", "fields=a&fields=b&limit=1_0", " 1 . 49 "},
	} {
		f.Add(seed.path, seed.query, seed.version)
	}
	fx := newFixture(f, testSnapshot(rules.PostgreSQL), nil, Options{MaxLimit: 3})
	empty := newFixture(f, nil, errDown, Options{})
	f.Fuzz(func(t *testing.T, path, query, version string) {
		if !strings.HasPrefix(path, "/") {
			path = "/" + path
		}
		target := path
		if query != "" {
			target += "?" + query
		}
		var hdr []string
		if version != "" && !strings.ContainsAny(version, "\r\n") {
			hdr = append(hdr, "X-OpenStack-Ironic-API-Version: "+version)
		}
		for _, x := range []*fixture{fx, empty} {
			for _, method := range []string{http.MethodGet, http.MethodHead} {
				rec := x.do(method, target, hdr...)
				switch rec.Code {
				case 200, 400, 404, 405, 406, 503:
				default:
					t.Fatalf("%s %q %q: status %d: %s", method, target, version, rec.Code, rec.Body)
				}
				if x == fx && rec.Code == 503 {
					t.Fatalf("%q: 503 with data", target)
				}
				h := rec.Header()
				if h.Get("Content-Type") != "application/json" || h.Get("Openstack-Request-Id") == "" {
					t.Fatalf("%q: headers %v", target, h)
				}
				if method == http.MethodHead {
					continue
				}
				var v map[string]any
				if err := json.Unmarshal(rec.Body.Bytes(), &v); err != nil {
					t.Fatalf("%q: invalid JSON %q", target, rec.Body)
				}
				if rec.Code != 200 {
					fault(t, rec)
				}
			}
		}
	})
}
