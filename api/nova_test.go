package api

import (
	"strings"
	"testing"

	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/nova"
	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/rules"
)

type fakeNova map[string][]nova.FleetClaim

func (f fakeNova) NodeComputes(uuid string) ([]nova.FleetClaim, bool) {
	c, ok := f[uuid]
	return c, ok
}

// TestNovaField: with Nova, the extension lists the managing computes ([]
// when none, null when the answer does not cover the node; up null when
// the computes' liveness is unknown), in the detail
// representation (so `baremetal node show --instance` shows it) and with
// fields=; without Nova it is absent and asking for it is a 400 saying why.
func TestNovaField(t *testing.T) {
	snap := testSnapshot(rules.PostgreSQL)
	computes := fakeNova{
		uuidN(1): {{Cell: "cell1", Host: "c-a", Source: "instance", Up: true, UpKnown: true}},
		uuidN(2): {{Cell: "cell1", Host: "c-a", Source: "ring", Up: true, UpKnown: true}, {Cell: "cell1", Host: "c-b", Source: "ring", UpKnown: true}},
		uuidN(3): {},
		uuidN(4): {{Cell: "cell1", Host: "c-c", Source: "ring", Up: true}}, // servicegroup_driver mc
	}
	f := newFixture(t, snap, nil, Options{Nova: computes})
	for ident, want := range map[string]string{
		uuidN(1): `[{"cell": "cell1", "host": "c-a", "source": "instance", "up": true}]`,
		uuidN(2): `[{"cell": "cell1", "host": "c-a", "source": "ring", "up": true}, {"cell": "cell1", "host": "c-b", "source": "ring", "up": false}]`,
		uuidN(3): `[]`,
		uuidN(4): `[{"cell": "cell1", "host": "c-c", "source": "ring", "up": null}]`,
	} {
		rec := f.get("/v1/nodes/"+ident+"?fields=uuid,"+NovaField, latest)
		expectStatus(t, rec, 200)
		if got := rec.Body.String(); !strings.HasSuffix(got, `"`+NovaField+`": `+want+`}`) {
			t.Errorf("node %s: %s, want %s last", ident, got, want)
		}
	}
	if snap.Nodes[0].InstanceUUID == nil {
		t.Fatal("the test snapshot's first node has no instance")
	}
	rec := f.get("/v1/nodes/detail?instance_uuid="+*snap.Nodes[0].InstanceUUID, latest)
	expectStatus(t, rec, 200)
	if !strings.Contains(rec.Body.String(), `"`+NovaField+`": [{"cell": "cell1", "host": "c-a"`) {
		t.Errorf("detail by instance lacks the Nova side: %s", rec.Body.String())
	}
	partial := newFixture(t, snap, nil, Options{Nova: fakeNova{}})
	if rec := partial.get("/v1/nodes/"+uuidN(1)+"?fields="+NovaField, latest); !strings.Contains(rec.Body.String(), `"`+NovaField+`": null`) {
		t.Errorf("a node the Nova answer does not cover: %s", rec.Body.String())
	}

	plain := newFixture(t, snap, nil, Options{})
	if body := plain.get("/v1/nodes/"+uuidN(1), latest).Body.String(); strings.Contains(body, NovaField) {
		t.Errorf("without Nova the node carries %s: %s", NovaField, body)
	}
	rec = plain.get("/v1/nodes/"+uuidN(1)+"?fields="+NovaField, latest)
	expectStatus(t, rec, 400)
	if !strings.Contains(rec.Body.String(), "reads Nova's databases") {
		t.Errorf("without Nova, fields=%s: %s", NovaField, rec.Body.String())
	}
}
