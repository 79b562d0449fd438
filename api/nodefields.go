package api

import (
	"cmp"
	"slices"
	"time"

	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/rules"
	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/topology"
)

// AffinityField is the sidecar's extension of the node representation: the
// hostname of the conductor that last prepared the node's boot environment
// (nodes.conductor_affinity, an id into conductors), null when unset or
// when no such conductor row exists. Its "exporter_" prefix keeps it apart
// from any field Ironic may add; it is rendered last, after conductor.
const AffinityField = "exporter_conductor_affinity"

// NovaField is the extension that answers the Nova side, with Nova
// configured only: the nova-computes that manage the node as Nova's ironic
// driver computes it, a list of {"cell", "host", "source" (instance or
// ring), "up"} ([] when no view claims the node), null when the Nova
// answer does not cover the node. Rendered last.
const NovaField = "exporter_nova_computes"

// fieldKind is how a node field is rendered.
type fieldKind uint8

const (
	kindUnserved  fieldKind = iota // an Ironic field the sidecar does not read
	kindColumn                     // a column (or a name Ironic versions) that is not a field
	kindString                     // a nullable text column
	kindTime                       // a timestamp column
	kindBool                       // a boolean column
	kindLinks                      // the self and bookmark links
	kindConductor                  // the ring's conductor (computed)
	kindAffinity                   // the affinity conductor's hostname (extension)
	kindNova                       // the managing nova-computes (extension, with Nova only)
)

// sortRule is what Ironic does with a node field as sort_key.
type sortRule uint8

const (
	sortNone    sortRule = iota // not a column: "The sort_key value "x" is an invalid field"
	sortBy                      // the sidecar sorts as the database would (nodeField.cmp)
	sortRefused                 // NodesController.invalid_sort_key_list
	sortUnread                  // a column Ironic sorts by that the sidecar does not read
)

// nodeField describes one field (or column) of Ironic's node: the single
// table the node representation, fields=, sort_key and the equality filters
// are derived from.
type nodeField struct {
	name string
	// minor is the microversion that introduced the field
	// (api_utils.VERSIONED_FIELDS): asking for it earlier is a 406, and the
	// representation hides it (hide_fields_in_newer_versions).
	minor int
	kind  fieldKind
	// selectable: a request may name it in fields=.
	selectable bool
	// tail: rendered after links, in table order, also with fields=.
	tail bool
	sort sortRule
	// filter: a query parameter of the same name filters by equality under
	// the database's collation.
	filter bool
	// hidden, when set, is the field-level rule of node_sanitize: true
	// when the caller's access may not see the node's value, which is
	// then rendered as redacted (also a null one). Without an Access
	// (noauth, http_basic) every value is shown.
	hidden func(acc Access, n *topology.NodeInfo) bool
	// redacted is the text node_sanitize puts in place of a hidden value.
	redacted string
	str      func(*topology.NodeInfo) *string
	time     func(*topology.NodeInfo) time.Time
	bool     func(*topology.NodeInfo) bool
	cmp      func(a, b *topology.NodeInfo, c collation) int
}

// nodeFields are Ironic 21.4's node fields: first the served ones in the
// order of the detail representation (node_convert_with_links: uuid,
// created_at, updated_at, the node fields alphabetically, links, then
// conductor; the extension last), then the columns the sidecar sorts by
// that are not fields, then the fields it does not read.
var nodeFields = []nodeField{
	{name: "uuid", kind: kindString, selectable: true, sort: sortBy, str: func(n *topology.NodeInfo) *string { return &n.UUID }},
	{name: "created_at", kind: kindTime, sort: sortBy, time: func(n *topology.NodeInfo) time.Time { return n.CreatedAt.Time() }},
	{name: "updated_at", kind: kindTime, sort: sortBy, time: func(n *topology.NodeInfo) time.Time { return n.UpdatedAt.Time() }},
	{name: "conductor_group", minor: minor46ConductorGroup, kind: kindString, selectable: true, sort: sortBy, filter: true,
		str: func(n *topology.NodeInfo) *string { return &n.ConductorGroup }},
	{name: "driver", kind: kindString, selectable: true, sort: sortBy, filter: true,
		str: func(n *topology.NodeInfo) *string { return &n.Driver }},
	{name: "fault", minor: minor42Fault, kind: kindString, selectable: true, sort: sortBy, filter: true,
		str: func(n *topology.NodeInfo) *string { return n.Fault }},
	{name: "instance_uuid", kind: kindString, selectable: true, sort: sortBy, filter: true,
		str: func(n *topology.NodeInfo) *string { return n.InstanceUUID }},
	{name: "maintenance", kind: kindBool, selectable: true, sort: sortBy,
		bool: func(n *topology.NodeInfo) bool { return n.Maintenance }},
	{name: "name", minor: minor5NodeName, kind: kindString, selectable: true, sort: sortBy,
		str: func(n *topology.NodeInfo) *string { return n.Name }},
	{name: "power_state", kind: kindString, selectable: true, sort: sortBy,
		str: func(n *topology.NodeInfo) *string { return n.PowerState }},
	{name: "provision_state", kind: kindString, selectable: true, sort: sortBy, filter: true,
		str: func(n *topology.NodeInfo) *string { return n.ProvisionState }},
	{name: "reservation", kind: kindString, selectable: true, sort: sortBy,
		str: func(n *topology.NodeInfo) *string { return n.Reservation },
		// _node_sanitize_extended, baremetal:node:get:reservation.
		hidden:   func(acc Access, n *topology.NodeInfo) bool { return !acc.ShowReservation(n.Owner, n.Lessee) },
		redacted: "** Redacted - requires baremetal:node:get:reservation permission. **"},
	{name: "resource_class", minor: minor21ResourceClass, kind: kindString, selectable: true, sort: sortBy, filter: true,
		str: func(n *topology.NodeInfo) *string { return n.ResourceClass }},
	{name: "links", kind: kindLinks},
	{name: "conductor", minor: minor49Conductors, kind: kindConductor, selectable: true, tail: true},
	// The extensions show what the API that owns the value shows the
	// caller: the conductor's name as GET /v1/conductors does
	// (baremetal:conductor:get), the compute hosts as Nova's hypervisors
	// API does.
	{name: AffinityField, minor: minor49Conductors, kind: kindAffinity, selectable: true, tail: true,
		hidden:   func(acc Access, _ *topology.NodeInfo) bool { return !acc.CanGetConductors() },
		redacted: "** Redacted - requires baremetal:conductor:get permission. **"},
	{name: NovaField, minor: minor49Conductors, kind: kindNova, selectable: true, tail: true,
		hidden:   func(acc Access, _ *topology.NodeInfo) bool { return !acc.CanSeeComputes() },
		redacted: "** Redacted - requires os_compute_api:os-hypervisors:show permission. **"},

	{name: "id", kind: kindColumn, sort: sortBy, cmp: func(a, b *topology.NodeInfo, _ collation) int { return cmp.Compare(a.ID, b.ID) }},
	{name: "", kind: kindColumn, sort: sortBy, cmp: func(a, b *topology.NodeInfo, _ collation) int { return 0 }}, // Ironic: by id only
	{name: "conductor_affinity", kind: kindColumn, sort: sortBy, cmp: func(a, b *topology.NodeInfo, c collation) int {
		return compareNullableInt(a.HasConductorAffinity, b.HasConductorAffinity, a.ConductorAffinity, b.ConductorAffinity, c)
	}},
	{name: "allocation_id", kind: kindColumn, sort: sortUnread},
	{name: "chassis_id", kind: kindColumn, sort: sortUnread},
	{name: "version", kind: kindColumn, sort: sortUnread},
	{name: "events", minor: 54, kind: kindColumn},

	{name: "allocation_uuid", minor: 52}, {name: "automated_clean", minor: 47, sort: sortUnread},
	{name: "bios_interface", minor: 40, sort: sortUnread}, {name: "boot_interface", minor: 31, sort: sortUnread},
	{name: "boot_mode", minor: 75, sort: sortUnread}, {name: "chassis_uuid"},
	{name: "clean_step", minor: 7, sort: sortRefused}, {name: "console_enabled", sort: sortUnread},
	{name: "console_interface", minor: 31, sort: sortUnread}, {name: "deploy_interface", minor: 31, sort: sortUnread},
	{name: "deploy_step", minor: 44, sort: sortRefused}, {name: "description", minor: 51, sort: sortUnread},
	{name: "driver_info", sort: sortRefused}, {name: "driver_internal_info", minor: 3, sort: sortRefused},
	{name: "extra", sort: sortRefused},
	{name: "inspect_interface", minor: 31, sort: sortUnread}, {name: "inspection_finished_at", minor: 6, sort: sortUnread},
	{name: "inspection_started_at", minor: 6, sort: sortUnread}, {name: "instance_info", sort: sortRefused},
	{name: "last_error", sort: sortUnread}, {name: "lessee", minor: 65, sort: sortUnread},
	{name: "maintenance_reason", sort: sortUnread}, {name: "management_interface", minor: 31, sort: sortUnread},
	{name: "network_data", minor: 66, sort: sortRefused}, {name: "network_interface", minor: 20, sort: sortUnread},
	{name: "owner", minor: 50, sort: sortUnread}, {name: "power_interface", minor: 31, sort: sortUnread},
	{name: "properties", sort: sortRefused}, {name: "protected", minor: 48, sort: sortUnread},
	{name: "protected_reason", minor: 48, sort: sortUnread}, {name: "provision_updated_at", sort: sortUnread},
	{name: "raid_config", minor: 12, sort: sortRefused}, {name: "raid_interface", minor: 31, sort: sortUnread},
	{name: "rescue_interface", minor: 38, sort: sortUnread}, {name: "retired", minor: 61, sort: sortUnread},
	{name: "retired_reason", minor: 61, sort: sortUnread}, {name: "secure_boot", minor: 75, sort: sortUnread},
	{name: "shard", minor: 82, sort: sortUnread}, {name: "storage_interface", minor: 33, sort: sortUnread},
	{name: "target_power_state", sort: sortUnread}, {name: "target_provision_state", sort: sortUnread},
	{name: "target_raid_config", minor: 12, sort: sortRefused}, {name: "traits", minor: 37, sort: sortRefused},
	{name: "vendor_interface", minor: 31, sort: sortUnread},
	// and the sub-resource links: ports, states, portgroups, volume.
}

// The views of nodeFields the handlers use.
var (
	nodeFieldByName = func() map[string]*nodeField {
		m := make(map[string]*nodeField, len(nodeFields))
		for i := range nodeFields {
			m[nodeFields[i].name] = &nodeFields[i]
		}
		return m
	}()
	// nodeDetailFields is the full representation, in order.
	nodeDetailFields = func() (out []*nodeField) {
		for i := range nodeFields {
			if f := &nodeFields[i]; f.served() {
				out = append(out, f)
			}
		}
		return out
	}()
	// versionedFields is api_utils.VERSIONED_FIELDS (as of Ironic 21.4):
	// Ironic checks every requested field and sort key against it, for
	// conductors too.
	versionedFields = func() map[string]int {
		m := map[string]int{}
		for _, f := range nodeFields {
			if f.minor > 0 && f.kind != kindAffinity && f.kind != kindNova {
				m[f.name] = f.minor
			}
		}
		return m
	}()
	// nodeFieldLinks is the links field, rendered with every fields=.
	nodeFieldLinks = nodeFieldByName["links"]
	nodeFieldUUID  = nodeFieldByName["uuid"]
	nodeFieldName  = nodeFieldByName["name"]
)

// served reports whether the field is part of the sidecar's representation.
func (f *nodeField) served() bool { return f.kind != kindUnserved && f.kind != kindColumn }

// compare orders two nodes by the field under the database's collation.
func (f *nodeField) compare(a, b *topology.NodeInfo, c collation) int {
	switch {
	case f.cmp != nil:
		return f.cmp(a, b, c)
	case f.str != nil:
		return c.compareNullable(f.str(a), f.str(b))
	case f.time != nil:
		return compareTime(f.time(a), f.time(b), c)
	default:
		return rules.CompareBool(f.bool(a), f.bool(b))
	}
}

// nodeDefaultFields is _DEFAULT_RETURN_FIELDS of
// ironic/api/controllers/v1/node.py.
var nodeDefaultFields = []string{"instance_uuid", "maintenance", "power_state", "provision_state", "uuid", "name"}

// nodeFieldList returns the fields to render in order: all of them (fields ==
// nil), or the requested ones in Ironic's order: uuid, the others as
// requested, links, then conductor and the extension. Fields newer than the
// request's microversion are hidden (hide_fields_in_newer_versions).
func (rq *request) nodeFieldList(fields []string) ([]*nodeField, *apiError) {
	if fields == nil {
		return rq.visible(slices.Clone(nodeDetailFields)), nil
	}
	for _, name := range fields {
		f := nodeFieldByName[name]
		switch {
		case f != nil && f.kind == kindNova && rq.h.nova == nil:
			return nil, badRequest("Field " + name + " is served only when ironic-conductor-exporter reads Nova's databases (--nova.dsn or --nova.config-file).")
		case f != nil && f.selectable:
		case f != nil && f.kind == kindUnserved:
			return nil, badRequest("Field " + name + " is not served by ironic-conductor-exporter: it does not read it from Ironic's database.")
		default:
			return nil, badRequest("Field " + name + " is not a valid field.")
		}
	}
	out := make([]*nodeField, 0, len(fields)+2)
	if slices.Contains(fields, "uuid") {
		out = append(out, nodeFieldUUID)
	}
	for _, name := range fields {
		if f := nodeFieldByName[name]; f != nodeFieldUUID && !f.tail {
			out = append(out, f)
		}
	}
	out = append(out, nodeFieldLinks)
	for _, f := range nodeDetailFields {
		if f.tail && slices.Contains(fields, f.name) {
			out = append(out, f)
		}
	}
	return rq.visible(out), nil
}

func (rq *request) visible(fields []*nodeField) []*nodeField {
	return slices.DeleteFunc(fields, func(f *nodeField) bool {
		return rq.minor < f.minor || f.kind == kindNova && rq.h.nova == nil
	})
}

// provisionState is the provision state as the microversion shows it
// (update_state_in_older_versions).
func (rq *request) provisionState(s *string) *string {
	if s == nil {
		return nil
	}
	switch {
	case rq.minor < minor2AvailableState && *s == "available":
		return nil // NOSTATE
	case rq.minor < minor39InspectWait && *s == "inspect wait":
		inspecting := "inspecting"
		return &inspecting
	}
	return s
}

// appendNode appends a node with the given fields.
func (rq *request) appendNode(b []byte, base string, n *topology.NodeInfo, fields []*nodeField) []byte {
	b = append(b, '{')
	for i, f := range fields {
		b = appendKey(b, i == 0, f.name)
		if f.hidden != nil && rq.acc != nil && f.hidden(rq.acc, n) {
			b = appendString(b, f.redacted)
			continue
		}
		switch f.kind {
		case kindString:
			v := f.str(n)
			if f.name == "provision_state" {
				v = rq.provisionState(v)
			}
			b = appendNullableString(b, v)
		case kindTime:
			b = appendTime(b, f.time(n))
		case kindBool:
			b = appendBool(b, f.bool(n))
		case kindLinks:
			b = appendLinks(b, base, "nodes", n.UUID)
		case kindConductor:
			b = appendHostname(b, n.Conductor)
		case kindAffinity:
			b = appendHostname(b, n.AffinityHost())
		case kindNova:
			b = appendNovaClaims(b, rq.h.nova, n.UUID)
		}
	}
	return append(b, '}')
}

// appendNovaClaims appends NovaField's value for the node.
func appendNovaClaims(b []byte, lookup NovaLookup, uuid string) []byte {
	claims, ok := lookup.NodeComputes(uuid)
	if !ok {
		return append(b, "null"...)
	}
	b = append(b, '[')
	for i, c := range claims {
		if i > 0 {
			b = append(b, ',', ' ')
		}
		b = appendKey(append(b, '{'), true, "cell")
		b = appendString(b, c.Cell)
		b = appendString(appendKey(b, false, "host"), c.Host)
		b = appendString(appendKey(b, false, "source"), c.Source)
		b = appendKey(b, false, "up")
		if c.UpKnown {
			b = appendBool(b, c.Up)
		} else {
			b = append(b, "null"...) // servicegroup_driver not db: the liveness is not in the database
		}
		b = append(b, '}')
	}
	return append(b, ']')
}

// appendHostname appends a hostname, null for "".
func appendHostname(b []byte, host string) []byte {
	if host == "" {
		return append(b, "null"...)
	}
	return appendString(b, host)
}

// compareTime orders the zero time (NULL) as the database orders NULL.
func compareTime(a, b time.Time, c collation) int {
	if o, null := c.compareNulls(a.IsZero(), b.IsZero()); null {
		return o
	}
	return a.Compare(b)
}

// compareNullableInt orders a and b, NULL unless hasA and hasB, as the
// database orders NULL.
func compareNullableInt(hasA, hasB bool, a, b int32, c collation) int {
	if o, null := c.compareNulls(!hasA, !hasB); null {
		return o
	}
	return cmp.Compare(a, b)
}
