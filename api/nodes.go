package api

import (
	"cmp"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/topology"
)

// nodeField is one field of the node representation the sidecar serves.
type nodeField uint8

const (
	nfUUID nodeField = iota
	nfCreatedAt
	nfUpdatedAt
	nfConductorGroup
	nfDriver
	nfInstanceUUID
	nfMaintenance
	nfName
	nfPowerState
	nfProvisionState
	nfReservation
	nfResourceClass
	nfLinks
	nfConductor
)

var nodeFieldNames = [...]string{
	nfUUID: "uuid", nfCreatedAt: "created_at", nfUpdatedAt: "updated_at",
	nfConductorGroup: "conductor_group", nfDriver: "driver", nfInstanceUUID: "instance_uuid",
	nfMaintenance: "maintenance", nfName: "name", nfPowerState: "power_state",
	nfProvisionState: "provision_state", nfReservation: "reservation",
	nfResourceClass: "resource_class", nfLinks: "links", nfConductor: "conductor",
}

// nodeDetailFields is the full representation in Ironic's key order
// (node_convert_with_links: uuid, created_at, updated_at, the node fields
// alphabetically, links, then conductor).
var nodeDetailFields = []nodeField{nfUUID, nfCreatedAt, nfUpdatedAt, nfConductorGroup, nfDriver,
	nfInstanceUUID, nfMaintenance, nfName, nfPowerState, nfProvisionState, nfReservation,
	nfResourceClass, nfLinks, nfConductor}

// nodeDefaultFields is _DEFAULT_RETURN_FIELDS of
// ironic/api/controllers/v1/node.py.
var nodeDefaultFields = []string{"instance_uuid", "maintenance", "power_state", "provision_state", "uuid", "name"}

// servedNodeFields maps the node fields a request may name in fields= to
// what the sidecar renders.
var servedNodeFields = map[string]nodeField{
	"uuid": nfUUID, "conductor_group": nfConductorGroup, "driver": nfDriver,
	"instance_uuid": nfInstanceUUID, "maintenance": nfMaintenance, "name": nfName,
	"power_state": nfPowerState, "provision_state": nfProvisionState,
	"reservation": nfReservation, "resource_class": nfResourceClass, "conductor": nfConductor,
}

// UnservedNodeFields are the fields of Ironic's node (as of 21.4) the
// sidecar does not serve: it reads only the columns it needs from the
// nodes table, and has no ports, chassis, allocations or traits. Asking for
// one of them with fields= is a 400 naming it; the detail representations
// leave them out (ironicclient shows them empty).
var UnservedNodeFields = []string{
	"allocation_uuid", "automated_clean", "bios_interface", "boot_interface", "boot_mode",
	"chassis_uuid", "clean_step", "console_enabled", "console_interface", "deploy_interface",
	"deploy_step", "description", "driver_info", "driver_internal_info", "extra", "fault",
	"inspect_interface", "inspection_finished_at", "inspection_started_at", "instance_info",
	"last_error", "lessee", "maintenance_reason", "management_interface", "network_data",
	"network_interface", "owner", "power_interface", "properties", "protected",
	"protected_reason", "provision_updated_at", "raid_config", "raid_interface",
	"rescue_interface", "retired", "retired_reason", "secure_boot", "shard",
	"storage_interface", "target_power_state", "target_provision_state", "target_raid_config",
	"traits", "vendor_interface",
	// and the sub-resource links: ports, states, portgroups, volume.
}

var unservedNodeField = func() map[string]bool {
	m := map[string]bool{}
	for _, f := range UnservedNodeFields {
		m[f] = true
	}
	return m
}()

// nodeFieldMinor is the microversion that introduced a served field.
func nodeFieldMinor(f nodeField) int {
	switch f {
	case nfName:
		return minor5NodeName
	case nfResourceClass:
		return minor21ResourceClass
	case nfConductorGroup:
		return minor46ConductorGroup
	case nfConductor:
		return minor49Conductors
	}
	return 0
}

// nodeFieldList returns the fields to render in order: all of them
// (fields == nil), or the requested ones in Ironic's order: uuid, the
// others as requested, links, conductor. Fields newer than the request's
// microversion are hidden (hide_fields_in_newer_versions).
func (rq *request) nodeFieldList(fields []string) ([]nodeField, *apiError) {
	var out []nodeField
	if fields == nil {
		out = make([]nodeField, 0, len(nodeDetailFields))
		out = append(out, nodeDetailFields...)
	} else {
		for _, f := range fields {
			if _, ok := servedNodeFields[f]; ok {
				continue
			}
			if unservedNodeField[f] {
				return nil, badRequest("Field " + f + " is not served by ironic-conductor-exporter: it does not read it from Ironic's database.")
			}
			return nil, badRequest("Field " + f + " is not a valid field.")
		}
		out = make([]nodeField, 0, len(fields)+2)
		if slices.Contains(fields, "uuid") {
			out = append(out, nfUUID)
		}
		for _, f := range fields {
			if nf := servedNodeFields[f]; nf != nfUUID && nf != nfConductor {
				out = append(out, nf)
			}
		}
		out = append(out, nfLinks)
		if slices.Contains(fields, "conductor") {
			out = append(out, nfConductor)
		}
	}
	return slices.DeleteFunc(out, func(f nodeField) bool { return rq.minor < nodeFieldMinor(f) }), nil
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
func (rq *request) appendNode(b []byte, base string, n *topology.NodeInfo, fields []nodeField) []byte {
	b = append(b, '{')
	for i, f := range fields {
		b = appendKey(b, i == 0, nodeFieldNames[f])
		switch f {
		case nfUUID:
			b = appendString(b, n.UUID)
		case nfCreatedAt:
			b = appendTime(b, n.CreatedAt)
		case nfUpdatedAt:
			b = appendTime(b, n.UpdatedAt)
		case nfConductorGroup:
			b = appendString(b, n.ConductorGroup)
		case nfDriver:
			b = appendString(b, n.Driver)
		case nfInstanceUUID:
			b = appendNullableString(b, n.InstanceUUID)
		case nfMaintenance:
			b = appendBool(b, n.Maintenance)
		case nfName:
			b = appendNullableString(b, n.Name)
		case nfPowerState:
			b = appendNullableString(b, n.PowerState)
		case nfProvisionState:
			b = appendNullableString(b, rq.provisionState(n.ProvisionState))
		case nfReservation:
			b = appendNullableString(b, n.Reservation)
		case nfResourceClass:
			b = appendNullableString(b, n.ResourceClass)
		case nfLinks:
			b = appendLinks(b, base, "nodes", n.UUID)
		case nfConductor:
			if n.Conductor == "" {
				b = append(b, "null"...)
			} else {
				b = appendString(b, n.Conductor)
			}
		}
	}
	return append(b, '}')
}

func nodeNotFound(ident string) *apiError {
	return clientError(http.StatusNotFound, "Node "+ident+" could not be found.")
}

// findNode resolves a node_ident as api_utils.get_rpc_node does: a
// UUID-like ident only by UUID (exactly as stored), otherwise by name when
// the microversion has names (1.5) and the name is valid; then, when Ironic
// stripped a ".json" extension, the ident with it.
func (rq *request) findNode(t *topology.Topology, ident string) (*topology.NodeInfo, *apiError) {
	n, err := rq.findNodeOnce(t, ident)
	if err != nil && err.status == http.StatusNotFound && rq.jsonSuffix {
		if n2, err2 := rq.findNodeOnce(t, ident+".json"); err2 == nil {
			return n2, nil
		}
	}
	return n, err
}

func (rq *request) findNodeOnce(t *topology.Topology, ident string) (*topology.NodeInfo, *apiError) {
	c := collationOf(t)
	if isUUIDLike(ident) {
		if n, ok := c.nodeByUUID(t, ident); ok {
			return n, nil
		}
		return nil, nodeNotFound(ident)
	}
	if rq.minor < minor5NodeName {
		return nil, nodeNotFound(ident)
	}
	valid := isValidLogicalName(ident)
	if rq.minor < minor10UnrestrictedNam {
		valid = isHostnameSafe(ident)
	}
	if !valid {
		return nil, badRequest("Expected a logical name or UUID but received " + ident + ".")
	}
	if n, ok := c.nodeByName(t, ident); ok {
		return n, nil
	}
	return nil, nodeNotFound(ident)
}

// getNode answers GET /v1/nodes/{node_ident} (NodesController.get_one).
func (rq *request) getNode(ident string) {
	q := parseQuery(rq.r.URL.RawQuery)
	if err := q.checkArgs("fields"); err != nil {
		rq.fail(err)
		return
	}
	fields, hasFields, err := q.strList("fields")
	var t *topology.Topology
	if err == nil {
		t, err = rq.topology()
	}
	var n *topology.NodeInfo
	if err == nil {
		n, err = rq.findNode(t, ident)
	}
	if err == nil {
		err = rq.checkAllowSpecifyFields(hasFields)
	}
	if err == nil {
		err = rq.checkAllowedFields(fields)
	}
	var list []nodeField
	if err == nil {
		list, err = rq.nodeFieldList(fields)
	}
	if err != nil {
		rq.fail(err)
		return
	}
	bp := getBuf()
	defer putBuf(bp)
	b := rq.appendNode(*bp, rq.base(), n, list)
	*bp = b
	rq.reply(b)
}

// nodeConductor answers GET /v1/nodes/{node_ident}/conductor: the conductor
// the hash ring maps the node to, rendered as GET /v1/conductors/{hostname}
// renders it (the endpoint of the "expose conductors" spec; Ironic never
// implemented it). A node no conductor can serve is Ironic's NoValidHost,
// a 404.
func (rq *request) nodeConductor(ident string) {
	fields, t, err := rq.conductorRequest()
	var n *topology.NodeInfo
	if err == nil {
		n, err = rq.findNode(t, ident)
	}
	var c *topology.ConductorInfo
	if err == nil {
		if n.Conductor == "" {
			err = clientError(http.StatusNotFound, "No valid host was found. Reason: No conductor service registered which supports driver "+
				n.Driver+` for conductor group "`+n.ConductorGroup+`".`)
		} else if c, _ = t.Conductor(n.Conductor); c == nil {
			err = conductorNotFound(n.Conductor)
		}
	}
	if err != nil {
		rq.fail(err)
		return
	}
	rq.replyConductor(c, fields)
}

// nodeListParams are the parameters of NodesController.get_all, in the
// order args.validate checks them; detail() takes them all but fields and
// detail.
var nodeListParams = []string{"chassis_uuid", "instance_uuid", "associated", "maintenance", "retired",
	"provision_state", "marker", "limit", "sort_key", "sort_dir", "driver", "fields", "resource_class",
	"fault", "conductor_group", "detail", "conductor", "owner", "description_contains", "lessee",
	"project", "shard", "sharded"}

var nodeDetailParams = slices.DeleteFunc(slices.Clone(nodeListParams),
	func(p string) bool { return p == "fields" || p == "detail" })

// provisionStates are Ironic's states.machine.states.
var provisionStates = map[string]bool{
	"active": true, "adopt failed": true, "adopting": true, "available": true, "clean failed": true,
	"clean wait": true, "cleaning": true, "deleting": true, "deploy failed": true, "deploying": true,
	"enroll": true, "error": true, "inspect failed": true, "inspect wait": true, "inspecting": true,
	"manageable": true, "rescue": true, "rescue failed": true, "rescue wait": true, "rescuing": true,
	"unrescue failed": true, "unrescuing": true, "verifying": true, "wait call-back": true,
}

// invalidNodeSortKeys is NodesController.invalid_sort_key_list.
var invalidNodeSortKeys = map[string]bool{
	"properties": true, "driver_info": true, "extra": true, "instance_info": true,
	"driver_internal_info": true, "clean_step": true, "deploy_step": true, "raid_config": true,
	"target_raid_config": true, "traits": true, "network_data": true,
}

// nodeColumns are the other columns of Ironic's nodes table: valid sort keys
// for Ironic that the sidecar does not have.
var nodeColumns = map[string]bool{
	"allocation_id": true, "automated_clean": true, "bios_interface": true, "boot_interface": true,
	"boot_mode": true, "chassis_id": true, "conductor_affinity": true, "console_enabled": true,
	"console_interface": true, "deploy_interface": true, "description": true, "fault": true,
	"inspect_interface": true, "inspection_finished_at": true, "inspection_started_at": true,
	"last_error": true, "lessee": true, "maintenance_reason": true, "management_interface": true,
	"network_interface": true, "owner": true, "power_interface": true, "protected": true,
	"protected_reason": true, "provision_updated_at": true, "raid_interface": true,
	"rescue_interface": true, "retired": true, "retired_reason": true, "secure_boot": true,
	"shard": true, "storage_interface": true, "target_power_state": true,
	"target_provision_state": true, "vendor_interface": true, "version": true,
}

// nodeCmp compares two nodes by one sort key under the database's
// collation.
type nodeCmp func(a, b *topology.NodeInfo, c collation) int

// compareTime orders the zero time (NULL) as the database orders NULL.
func compareTime(a, b time.Time, c collation) int {
	switch {
	case a.IsZero() && b.IsZero():
		return 0
	case a.IsZero():
		return c.nullOrder()
	case b.IsZero():
		return -c.nullOrder()
	}
	return a.Compare(b)
}

var nodeSortKeys = map[string]nodeCmp{
	"id":   func(a, b *topology.NodeInfo, _ collation) int { return cmp.Compare(a.ID, b.ID) },
	"":     func(a, b *topology.NodeInfo, _ collation) int { return 0 }, // Ironic: by id only
	"uuid": func(a, b *topology.NodeInfo, c collation) int { return c.compare(a.UUID, b.UUID) },
	"name": func(a, b *topology.NodeInfo, c collation) int { return c.compareNullable(a.Name, b.Name) },
	"instance_uuid": func(a, b *topology.NodeInfo, c collation) int {
		return c.compareNullable(a.InstanceUUID, b.InstanceUUID)
	},
	"power_state": func(a, b *topology.NodeInfo, c collation) int {
		return c.compareNullable(a.PowerState, b.PowerState)
	},
	"provision_state": func(a, b *topology.NodeInfo, c collation) int {
		return c.compareNullable(a.ProvisionState, b.ProvisionState)
	},
	"maintenance": func(a, b *topology.NodeInfo, _ collation) int {
		return compareBool(a.Maintenance, b.Maintenance)
	},
	"driver": func(a, b *topology.NodeInfo, c collation) int { return c.compare(a.Driver, b.Driver) },
	"conductor_group": func(a, b *topology.NodeInfo, c collation) int {
		return c.compare(a.ConductorGroup, b.ConductorGroup)
	},
	"resource_class": func(a, b *topology.NodeInfo, c collation) int {
		return c.compareNullable(a.ResourceClass, b.ResourceClass)
	},
	"reservation": func(a, b *topology.NodeInfo, c collation) int {
		return c.compareNullable(a.Reservation, b.Reservation)
	},
	"created_at": func(a, b *topology.NodeInfo, c collation) int { return compareTime(a.CreatedAt, b.CreatedAt, c) },
	"updated_at": func(a, b *topology.NodeInfo, c collation) int { return compareTime(a.UpdatedAt, b.UpdatedAt, c) },
}

// nodeFilter holds the filters of a node list.
type nodeFilter struct {
	instanceUUID, provisionState, driver, resourceClass, conductorGroup, conductor *string
	associated, maintenance                                                        *bool
}

// match applies the filters as the database does (under its collation),
// except conductor, which Ironic compares in Python.
func (f *nodeFilter) match(n *topology.NodeInfo, c collation) bool {
	eq := func(want, got *string) bool { return want == nil || got != nil && c.equal(*got, *want) }
	switch {
	case !eq(f.instanceUUID, n.InstanceUUID), !eq(f.provisionState, n.ProvisionState),
		!eq(f.resourceClass, n.ResourceClass), !eq(f.driver, &n.Driver),
		!eq(f.conductorGroup, &n.ConductorGroup):
		return false
	case f.conductor != nil && *f.conductor != "" && n.Conductor != *f.conductor:
		return false // Ironic: "if conductor:" - an empty one filters nothing
	case f.associated != nil && (n.InstanceUUID != nil) != *f.associated:
		return false
	case f.maintenance != nil && n.Maintenance != *f.maintenance:
		return false
	}
	return true
}

// nodeFilterGates are the microversions Ironic requires for node filters
// (the check_allow_filter_* helpers), in the order it checks them.
var nodeFilterGates = []struct {
	name  string
	minor int
}{
	{"driver", minor16DriverFilter}, {"resource_class", minor21ResourceClass}, {"fault", minor42Fault},
	{"conductor_group", minor46ConductorGroup}, {"conductor", minor49Conductors},
	{"owner", minor50Owner}, {"lessee", minor65Lessee}, {"shard", minor82Shard}, {"sharded", minor82Shard},
}

// unsupportedNodeFilters are the filters of Ironic's node list the sidecar
// cannot apply: it does not read those columns.
var unsupportedNodeFilters = []string{"chassis_uuid", "retired", "fault", "owner",
	"description_contains", "lessee", "project", "shard", "sharded"}

// listNodes answers GET /v1/nodes (detail=false) and GET /v1/nodes/detail
// (NodesController.get_all and detail).
func (rq *request) listNodes(detailEndpoint bool) {
	q := parseQuery(rq.r.URL.RawQuery)
	params := nodeListParams
	if detailEndpoint {
		params = nodeDetailParams
	}
	if err := q.checkArgs(params...); err != nil {
		rq.fail(err)
		return
	}
	var (
		err               *apiError
		f                 nodeFilter
		marker            string
		limit             int
		hasLimit          bool
		fields            []string
		hasFields         bool
		detail, hasDetail bool
		sortKey, sortDir  = "id", "asc"
	)
	// args.validate, in signature order.
	for _, p := range params {
		if _, present := q[p]; !present || err != nil {
			continue
		}
		switch p {
		case "chassis_uuid":
			_, _, err = q.uuid(p)
		case "instance_uuid":
			var v string
			v, _, err = q.uuid(p)
			f.instanceUUID = &v
		case "associated", "maintenance", "retired", "sharded":
			var v bool
			v, _, err = q.boolean(p)
			switch p {
			case "associated":
				f.associated = &v
			case "maintenance":
				f.maintenance = &v
			}
		case "marker":
			marker, _, err = q.uuid(p)
		case "limit":
			limit, hasLimit, err = q.integer(p)
		case "sort_key":
			sortKey, _, err = q.str(p)
		case "sort_dir":
			sortDir, _, err = q.str(p)
		case "fields":
			fields, hasFields, err = q.strList(p)
		case "detail":
			detail, hasDetail, err = q.boolean(p)
		case "shard":
			_, _, err = q.strList(p)
		default: // the string filters
			var v string
			v, _, err = q.str(p)
			switch p {
			case "provision_state":
				f.provisionState = &v
			case "driver":
				f.driver = &v
			case "resource_class":
				f.resourceClass = &v
			case "conductor_group":
				f.conductorGroup = &v
			case "conductor":
				f.conductor = &v
			}
		}
	}
	// The microversion checks of get_all and detail, in their order.
	if err == nil && !detailEndpoint {
		err = rq.checkAllowSpecifyFields(hasFields)
		if err == nil {
			err = rq.checkAllowedFields(fields)
		}
	}
	if err == nil {
		err = rq.checkAllowedFields([]string{sortKey})
	}
	if err == nil && f.provisionState != nil {
		if rq.minor < minor9ProvisionFilter {
			err = errNotAcceptable
		} else if !provisionStates[*f.provisionState] {
			err = badRequest(`Provision state "` + *f.provisionState + `" is not valid`)
		}
	}
	for _, g := range nodeFilterGates {
		if _, given := q[g.name]; err == nil && given && rq.minor < g.minor {
			err = minVersionError(g.minor)
		}
	}
	var retFields []string // nil: every field (the detail endpoint)
	if err == nil && !detailEndpoint {
		retFields, err = rq.returnFields(fields, hasFields, detail, hasDetail, nodeDefaultFields)
	}
	for _, p := range unsupportedNodeFilters {
		if _, given := q[p]; err == nil && given {
			err = badRequest("Filtering nodes by " + p + " is not supported by ironic-conductor-exporter: it does not read that from Ironic's database.")
		}
	}
	if err == nil {
		limit, err = rq.validateLimit(limit, hasLimit)
	}
	if err == nil {
		err = validateSortDir(sortDir)
	}
	if err == nil && invalidNodeSortKeys[sortKey] {
		err = badRequest("The sort_key value " + sortKey + " is an invalid field for sorting")
	}
	var t *topology.Topology
	if err == nil {
		t, err = rq.topology()
	}
	var markerN *topology.NodeInfo
	if err == nil && marker != "" {
		if n, ok := collationOf(t).nodeByUUID(t, marker); ok {
			markerN = n
		} else {
			err = nodeNotFound(marker)
		}
	}
	keyCmp, known := nodeSortKeys[sortKey]
	if err == nil && !known {
		if nodeColumns[sortKey] {
			err = badRequest("Sorting nodes by " + sortKey + " is not supported by ironic-conductor-exporter: it does not read that from Ironic's database.")
		} else {
			err = badRequest(`The sort_key value "` + sortKey + `" is an invalid field for sorting`)
		}
	}
	var list []nodeField
	if err == nil {
		list, err = rq.nodeFieldList(retFields)
	}
	if err != nil {
		rq.fail(err)
		return
	}

	coll := collationOf(t)
	order := paginationOrder(func(a, b *topology.NodeInfo) int { return keyCmp(a, b, coll) },
		func(x *topology.NodeInfo) int64 { return x.ID }, sortDir == "desc")
	// Unlike Ironic, which applies the conductor filter to a page already
	// cut to limit (so that pages come out short or empty), every filter
	// applies before pagination.
	items := make([]*topology.NodeInfo, 0, min(len(t.Nodes), limit+1))
	sorted := sortKey == "id" && sortDir == "asc" // t.Nodes is in id order
	for i := range t.Nodes {
		n := &t.Nodes[i]
		if !f.match(n, coll) || markerN != nil && order(n, markerN) <= 0 {
			continue
		}
		items = append(items, n)
		if sorted && len(items) == limit {
			break
		}
	}
	if !sorted {
		slices.SortStableFunc(items, order)
	}
	if len(items) > limit {
		items = items[:limit]
	}

	base := rq.base()
	bp := getBuf()
	defer putBuf(bp)
	b := append(*bp, `{"nodes": [`...)
	for i, n := range items {
		if i > 0 {
			b = append(b, ',', ' ')
		}
		b = rq.appendNode(b, base, n, list)
	}
	b = append(b, ']')
	nextLimit := limit
	if f.instanceUUID != nil {
		nextLimit = 0 // Ironic: instance_uuid is unique, never a next link
	}
	if len(items) > 0 && len(items) == nextLimit {
		// Ironic's parameters first, in its order and format...
		var np [][2]string
		np = append(np, [2]string{"sort_key", sortKey}, [2]string{"sort_dir", sortDir})
		if f.associated != nil && *f.associated {
			np = append(np, [2]string{"associated", "True"})
		}
		if f.maintenance != nil && *f.maintenance {
			np = append(np, [2]string{"maintenance", "True"})
		}
		if hasDetail {
			np = append(np, [2]string{"detail", pyBool(detail)})
		}
		if len(retFields) > 0 {
			np = append(np, [2]string{"fields", strings.Join(retFields, ",")})
		}
		// ...then the filters Ironic drops from its next links (so that
		// following them lists other nodes); kept here.
		if f.associated != nil && !*f.associated {
			np = append(np, [2]string{"associated", "False"})
		}
		if f.maintenance != nil && !*f.maintenance {
			np = append(np, [2]string{"maintenance", "False"})
		}
		for _, kv := range []struct {
			k string
			v *string
		}{{"provision_state", f.provisionState}, {"driver", f.driver}, {"resource_class", f.resourceClass},
			{"conductor_group", f.conductorGroup}, {"conductor", f.conductor}} {
			if kv.v != nil && (kv.k != "conductor" || *kv.v != "") {
				np = append(np, [2]string{kv.k, *kv.v})
			}
		}
		resource := "nodes"
		if detailEndpoint {
			resource = "nodes/detail"
		}
		b = append(b, `, "next": `...)
		b = nextLink(b, base, resource, np, limit, items[len(items)-1].UUID)
	}
	b = append(b, '}')
	*bp = b
	rq.reply(b)
}
