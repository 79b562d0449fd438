package api

import (
	"net/http"
	"slices"
	"sort"
	"strings"

	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/rules"
	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/topology"
)

func nodeNotFound(ident string) *apiError {
	return clientError(http.StatusNotFound, "Node "+ident+" could not be found.")
}

// findVisibleNode resolves a node_ident as api_utils.get_rpc_node does: a
// UUID-like ident only by UUID (exactly as stored), otherwise by name when
// the microversion has names (1.5) and the name is valid; then, when Ironic
// stripped a ".json" extension, the ident with it. As
// check_node_policy_and_retrieve's baremetal:node:get, a node the caller
// may not see is not found.
func (rq *request) findVisibleNode(t *topology.Topology, ident string) (*topology.NodeInfo, *apiError) {
	n, err := rq.findNodeOnce(t, ident)
	if err != nil && err.status == http.StatusNotFound && rq.jsonSuffix {
		if n2, err2 := rq.findNodeOnce(t, ident+".json"); err2 == nil {
			n, err = n2, nil
		}
	}
	if err == nil && rq.acc != nil && !rq.acc.CanGetNode(n.Owner, n.Lessee) {
		return nil, nodeNotFound(ident)
	}
	return n, err
}

func (rq *request) findNodeOnce(t *topology.Topology, ident string) (*topology.NodeInfo, *apiError) {
	c := collationOf(t)
	if isUUIDLike(ident) {
		if n, ok := c.node(t, nodeFieldUUID, ident); ok {
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
	if n, ok := c.node(t, nodeFieldName, ident); ok {
		return n, nil
	}
	return nil, nodeNotFound(ident)
}

// getNode answers GET /v1/nodes/{node_ident} (NodesController.get_one).
func (rq *request) getNode(ident string) {
	n, list, err := rq.nodeRequest(ident)
	if err != nil {
		rq.fail(err)
		return
	}
	rq.reply(rq.appendNode(nil, rq.base(), n, list))
}

// nodeRequest validates GET /v1/nodes/{node_ident}, in Ironic's order, and
// finds the node.
func (rq *request) nodeRequest(ident string) (*topology.NodeInfo, []*nodeField, *apiError) {
	fields, hasFields, err := rq.fieldsArg()
	if err != nil {
		return nil, nil, err
	}
	t, err := rq.topology()
	if err != nil {
		return nil, nil, err
	}
	n, err := rq.findVisibleNode(t, ident)
	if err != nil {
		return nil, nil, err
	}
	if err := rq.checkFields(fields, hasFields); err != nil {
		return nil, nil, err
	}
	list, err := rq.nodeFieldList(fields)
	return n, list, err
}

// nodeConductor answers GET /v1/nodes/{node_ident}/conductor: the conductor
// the hash ring maps the node to, rendered as GET /v1/conductors/{hostname}
// renders it (the endpoint of the "expose conductors" spec; Ironic never
// implemented it). A node no conductor can serve is Ironic's NoValidHost,
// a 404.
func (rq *request) nodeConductor(ident string) {
	fields, t, err := rq.conductorRequest()
	if err != nil {
		rq.fail(err)
		return
	}
	n, err := rq.findVisibleNode(t, ident)
	if err != nil {
		rq.fail(err)
		return
	}
	if !rq.canGetConductors() {
		return
	}
	if n.Conductor == "" {
		rq.fail(clientError(http.StatusNotFound, "No valid host was found. Reason: No conductor service registered which supports driver "+
			n.Driver+` for conductor group "`+n.ConductorGroup+`".`))
		return
	}
	c, ok := t.Conductor(n.Conductor)
	if !ok {
		rq.fail(conductorNotFound(n.Conductor))
		return
	}
	rq.replyConductor(t, c, fields)
}

// nodeListParams are the parameters of NodesController.get_all, in the
// order args.validate checks them.
var nodeListParams = []param{
	{name: "chassis_uuid", kind: paramUUID, unread: true},
	{name: "instance_uuid", kind: paramUUID, field: nodeFieldByName["instance_uuid"]},
	{name: "associated", kind: paramBool},
	{name: "maintenance", kind: paramBool},
	{name: "retired", kind: paramBool, unread: true},
	{name: "provision_state", field: nodeFieldByName["provision_state"]},
	{name: "marker", kind: paramUUID},
	{name: "limit", kind: paramInt},
	{name: "sort_key"},
	{name: "sort_dir"},
	{name: "driver", gate: minor16DriverFilter, field: nodeFieldByName["driver"]},
	{name: "fields", kind: paramStringList},
	{name: "resource_class", gate: minor21ResourceClass, field: nodeFieldByName["resource_class"]},
	{name: "fault", gate: minor42Fault, field: nodeFieldByName["fault"]},
	{name: "conductor_group", gate: minor46ConductorGroup, field: nodeFieldByName["conductor_group"]},
	{name: "detail", kind: paramBool},
	{name: "conductor", gate: minor49Conductors},
	{name: "owner", gate: minor50Owner, unread: true},
	{name: "description_contains", unread: true},
	{name: "lessee", gate: minor65Lessee, unread: true},
	{name: "project", unread: true},
	{name: "shard", kind: paramStringList, gate: minor82Shard, unread: true},
	{name: "sharded", kind: paramBool, gate: minor82Shard, unread: true},
}

// nodeDetailParams are detail's: get_all's but fields and detail.
var nodeDetailParams = slices.DeleteFunc(slices.Clone(nodeListParams), func(p param) bool {
	return p.name == "fields" || p.name == "detail"
})

// provisionStates are Ironic's states.machine.states.
var provisionStates = map[string]bool{
	"active": true, "adopt failed": true, "adopting": true, "available": true, "clean failed": true,
	"clean wait": true, "cleaning": true, "deleting": true, "deploy failed": true, "deploying": true,
	"enroll": true, "error": true, "inspect failed": true, "inspect wait": true, "inspecting": true,
	"manageable": true, "rescue": true, "rescue wait": true, "rescue failed": true, "rescuing": true,
	"unrescue failed": true, "unrescuing": true, "verifying": true, "wait call-back": true,
}

// eqFilter is an equality filter the database applies.
type eqFilter struct {
	param *param
	want  string
}

// nodeListArgs are the parsed parameters of a node list.
type nodeListArgs struct {
	listArgs
	detailEndpoint          bool
	given                   query // the raw parameters, for presence
	eq                      []eqFilter
	conductor               *string
	associated, maintenance *bool
	// project is check_list_policy's filter: only the nodes it owns or
	// leases; nil for none.
	project *string
}

func (a *nodeListArgs) filter(name string) *string {
	for i := range a.eq {
		if a.eq[i].param.name == name {
			return &a.eq[i].want
		}
	}
	return nil
}

// nodeListArgs parses and validates the parameters of a node list with the
// checks of get_all and detail, in their order.
func (rq *request) nodeListArgs(detailEndpoint bool) (*nodeListArgs, *apiError) {
	q := parseQuery(rq.r.URL.RawQuery)
	params := nodeListParams
	if detailEndpoint {
		params = nodeDetailParams
	}
	if err := q.validate(params); err != nil {
		return nil, err
	}
	a := &nodeListArgs{listArgs: readListArgs(q), detailEndpoint: detailEndpoint, given: q}
	for i := range nodeListParams {
		if p := &nodeListParams[i]; p.field != nil {
			if v, ok, _ := q.str(p.name); ok {
				a.eq = append(a.eq, eqFilter{param: p, want: v})
			}
		}
	}
	if v, ok, _ := q.str("conductor"); ok {
		a.conductor = &v
	}
	if v, ok, _ := q.boolean("associated"); ok {
		a.associated = &v
	}
	if v, ok, _ := q.boolean("maintenance"); ok {
		a.maintenance = &v
	}
	// check_list_policy, the first thing get_all and detail do after
	// args.validate.
	if rq.acc != nil {
		project, _, _ := q.str("project")
		filter, rule, ok := rq.acc.ListNodes(project)
		if !ok {
			return nil, forbidden(rule)
		}
		if filter != "" {
			a.project = &filter
		}
	}
	// On detail, fields is not given: both checks pass.
	if err := rq.checkFields(a.fields, a.hasFields); err != nil {
		return nil, err
	}
	if err := rq.checkAllowedFields([]string{a.sortKey}); err != nil {
		return nil, err
	}
	if err := rq.checkNodeFilters(a); err != nil {
		return nil, err
	}
	if !detailEndpoint {
		if err := rq.returnFields(&a.listArgs, nodeDefaultFields); err != nil {
			return nil, err
		}
	}
	for _, p := range nodeListParams {
		if _, given := q[p.name]; given && p.unread {
			return nil, badRequest("Filtering nodes by " + p.name + " is not supported by ironic-conductor-exporter: it does not read that from Ironic's database.")
		}
	}
	if err := rq.checkPage(&a.listArgs); err != nil {
		return nil, err
	}
	if f := nodeFieldByName[a.sortKey]; f != nil && f.sort == sortRefused {
		return nil, badRequest("The sort_key value " + a.sortKey + " is an invalid field for sorting")
	}
	return a, nil
}

// checkNodeFilters is the provision state check, then the filters'
// microversion gates in parameter order.
func (rq *request) checkNodeFilters(a *nodeListArgs) *apiError {
	if ps := a.filter("provision_state"); ps != nil {
		if rq.minor < minor9ProvisionFilter {
			return errNotAcceptable
		}
		if !provisionStates[*ps] {
			return badRequest(`Provision state "` + *ps + `" is not valid`)
		}
	}
	for _, p := range nodeListParams {
		if _, given := a.given[p.name]; given && p.gate > 0 && rq.minor < p.gate {
			return minVersionError(p.gate)
		}
		if fault := a.filter("fault"); p.name == "fault" && fault != nil {
			if err := rq.checkFault(*fault); err != nil {
				return err
			}
		}
	}
	return nil
}

// checkFault is check_allow_filter_by_fault's value check: a fault of the
// release's faults.VALID_FAULTS (the release of the served topology, the
// newest's before one is read), named in the error as Python prints the
// tuple.
func (rq *request) checkFault(fault string) *apiError {
	valid := rules.Faults
	if t := rq.h.cache.Get(rq.r.Context()).Topology; t != nil {
		valid = t.Rules.ValidFaults()
	}
	if slices.Contains(valid, fault) {
		return nil
	}
	quoted := make([]string, len(valid))
	for i, f := range valid {
		quoted[i] = "'" + f + "'"
	}
	return badRequest(`Unrecognized fault "` + fault + `" is specified, allowed faults are (` + strings.Join(quoted, ", ") + ")")
}

// nodeSortField resolves the sort key, once the topology is known.
func nodeSortField(key string) (*nodeField, *apiError) {
	f := nodeFieldByName[key]
	switch {
	case f != nil && f.sort == sortBy:
		return f, nil
	case f != nil && f.sort == sortUnread:
		return nil, badRequest("Sorting nodes by " + key + " is not supported by ironic-conductor-exporter: it does not read that from Ironic's database.")
	}
	return nil, badRequest(`The sort_key value "` + key + `" is an invalid field for sorting`)
}

// match applies the filters as the database does (under its collation),
// except conductor, which Ironic compares in Python and the caller applies
// by listing that conductor's nodes. The policy's project filter is
// Ironic's "owner = project OR lessee = project".
func (a *nodeListArgs) match(n *topology.NodeInfo, c collation) bool {
	for i := range a.eq {
		got := a.eq[i].param.field.str(n)
		if got == nil || !c.equal(*got, a.eq[i].want) {
			return false
		}
	}
	switch {
	case a.associated != nil && (n.InstanceUUID != nil) != *a.associated:
		return false
	case a.maintenance != nil && n.Maintenance != *a.maintenance:
		return false
	case a.project != nil && !equalNullable(c, n.Owner, *a.project) && !equalNullable(c, n.Lessee, *a.project):
		return false
	}
	return true
}

// equalNullable is the database's "column = value": false for NULL.
func equalNullable(c collation, got *string, want string) bool {
	return got != nil && c.equal(*got, want)
}

// listNodes answers GET /v1/nodes (detail=false) and GET /v1/nodes/detail
// (NodesController.get_all and detail).
func (rq *request) listNodes(detailEndpoint bool) {
	a, err := rq.nodeListArgs(detailEndpoint)
	if err != nil {
		rq.fail(err)
		return
	}
	t, err := rq.topology()
	if err != nil {
		rq.fail(err)
		return
	}
	var marker *topology.NodeInfo
	if a.marker != "" {
		var ok bool
		if marker, ok = collationOf(t).node(t, nodeFieldUUID, a.marker); !ok {
			rq.fail(nodeNotFound(a.marker))
			return
		}
	}
	key, err := nodeSortField(a.sortKey)
	if err != nil {
		rq.fail(err)
		return
	}
	list, err := rq.nodeFieldList(a.retFields)
	if err != nil {
		rq.fail(err)
		return
	}
	items := selectNodes(t, a, key, marker)
	rq.reply(rq.appendNodeList(nil, a, items, list))
}

// selectNodes returns the page: the nodes that match, after the marker, in
// the requested order, at most limit of them. Unlike Ironic, which applies
// the conductor filter to a page already cut to limit (so that pages come
// out short or empty), every filter applies before pagination. The work is
// proportional to the candidates (one conductor's nodes for ?conductor=)
// and, in id order, to the page.
func selectNodes(t *topology.Topology, a *nodeListArgs, key *nodeField, marker *topology.NodeInfo) []*topology.NodeInfo {
	coll := collationOf(t)
	n, at := candidates(t, a)
	if key.name == "id" || key.name == "" {
		return pageInIDOrder(a, n, at, marker, coll)
	}
	order := paginationOrder(func(x, y *topology.NodeInfo) int { return key.compare(x, y, coll) },
		func(x *topology.NodeInfo) int64 { return x.ID }, a.sortDir == "desc")
	items := make([]*topology.NodeInfo, 0, min(n, a.limit+1))
	for i := range n {
		if node := at(i); a.match(node, coll) && (marker == nil || order(node, marker) > 0) {
			items = append(items, node)
		}
	}
	slices.SortStableFunc(items, order)
	return items[:min(len(items), a.limit)]
}

// candidates are the nodes a list starts from, in id order: n of them,
// the i-th at(i). They are every node or, for ?conductor=X (Ironic: "if
// conductor:", an empty one filters nothing), the nodes mapped to X,
// compared exactly.
func candidates(t *topology.Topology, a *nodeListArgs) (n int, at func(int) *topology.NodeInfo) {
	if a.conductor == nil || *a.conductor == "" {
		return len(t.Nodes), func(i int) *topology.NodeInfo { return &t.Nodes[i] }
	}
	c, ok := t.Conductor(*a.conductor)
	if !ok {
		return 0, nil
	}
	return len(c.Nodes), func(i int) *topology.NodeInfo { return &t.Nodes[c.Nodes[i]] }
}

// pageInIDOrder walks the candidates from the marker, forwards or
// backwards, until the page is full.
func pageInIDOrder(a *nodeListArgs, n int, at func(int) *topology.NodeInfo, marker *topology.NodeInfo, coll collation) []*topology.NodeInfo {
	desc := a.sortDir == "desc"
	start, step := 0, 1
	if desc {
		start, step = n-1, -1
	}
	if marker != nil {
		// The first candidate with an id above the marker's.
		i := sort.Search(n, func(i int) bool { return at(i).ID >= marker.ID })
		start = i
		if i < n && at(i).ID == marker.ID && !desc {
			start++
		}
		if desc {
			start = i - 1
		}
	}
	items := make([]*topology.NodeInfo, 0, min(n, a.limit))
	for i := start; i >= 0 && i < n && len(items) < a.limit; i += step {
		if node := at(i); a.match(node, coll) {
			items = append(items, node)
		}
	}
	return items
}

// appendNodeList renders the page and its next link.
func (rq *request) appendNodeList(b []byte, a *nodeListArgs, items []*topology.NodeInfo, list []*nodeField) []byte {
	base := rq.base()
	b = append(b, `{"nodes": [`...)
	b = appendList(b, items, func(b []byte, n *topology.NodeInfo) []byte { return rq.appendNode(b, base, n, list) })
	b = append(b, ']')
	nextLimit := a.limit
	if a.filter("instance_uuid") != nil {
		nextLimit = 0 // Ironic: instance_uuid is unique, never a next link
	}
	if len(items) > 0 && len(items) == nextLimit {
		resource := "nodes"
		if a.detailEndpoint {
			resource = "nodes/detail"
		}
		b = append(b, `, "next": `...)
		b = nextLink(b, base, resource, a.nextParams(), a.limit, items[len(items)-1].UUID)
	}
	return append(b, '}')
}

// nextParams are the parameters of a next link: Ironic's, in its order and
// format, then the filters Ironic drops from its next links (so that
// following them lists other nodes), kept here.
func (a *nodeListArgs) nextParams() [][2]string {
	np := [][2]string{{"sort_key", a.sortKey}, {"sort_dir", a.sortDir}}
	if a.associated != nil && *a.associated {
		np = append(np, [2]string{"associated", "True"})
	}
	if a.maintenance != nil && *a.maintenance {
		np = append(np, [2]string{"maintenance", "True"})
	}
	np = a.appendDetailFields(np)
	if a.associated != nil && !*a.associated {
		np = append(np, [2]string{"associated", "False"})
	}
	if a.maintenance != nil && !*a.maintenance {
		np = append(np, [2]string{"maintenance", "False"})
	}
	for _, name := range []string{"provision_state", "driver", "resource_class", "conductor_group"} {
		if v := a.filter(name); v != nil {
			np = append(np, [2]string{name, *v})
		}
	}
	if a.conductor != nil && *a.conductor != "" {
		np = append(np, [2]string{"conductor", *a.conductor})
	}
	return np
}
