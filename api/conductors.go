package api

import (
	"cmp"
	"net/http"
	"slices"
	"strings"

	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/rules"
	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/topology"
)

// conductorField is a set of the fields of Ironic's conductor
// representation: bit i is conductorFields[i] (TestConductorFieldsFit).
type conductorField uint64

// conductorFields are the fields in the order Ironic renders them
// (object_to_dict, then links and "alive"); links is always rendered.
var conductorFields = []conductorFieldDef{
	{name: "created_at", value: func(b []byte, _ string, c *topology.ConductorInfo) []byte { return appendTime(b, c.CreatedAt) }},
	{name: "updated_at", value: func(b []byte, _ string, c *topology.ConductorInfo) []byte { return appendTime(b, c.UpdatedAt) }},
	{name: "hostname", value: func(b []byte, _ string, c *topology.ConductorInfo) []byte { return appendString(b, c.Hostname) }},
	{name: "conductor_group", value: func(b []byte, _ string, c *topology.ConductorInfo) []byte {
		return appendString(b, c.ConductorGroup)
	}},
	{name: "drivers", value: func(b []byte, _ string, c *topology.ConductorInfo) []byte {
		b = append(b, '[')
		for i, d := range c.Drivers {
			if i > 0 {
				b = append(b, ',', ' ')
			}
			b = appendString(b, d)
		}
		return append(b, ']')
	}},
	{name: "links", always: true, value: func(b []byte, base string, c *topology.ConductorInfo) []byte {
		return appendLinks(b, base, "conductors", c.Hostname)
	}},
	{name: "alive", value: func(b []byte, _ string, c *topology.ConductorInfo) []byte { return appendBool(b, c.Alive) }},
}

type conductorFieldDef struct {
	name   string
	always bool
	value  func(b []byte, base string, c *topology.ConductorInfo) []byte
}

// cfAll is every field.
var cfAll = conductorField(1<<len(conductorFields) - 1)

// conductorDefaultFields is DEFAULT_RETURN_FIELDS of
// ironic/api/controllers/v1/conductor.py.
var conductorDefaultFields = []string{"hostname", "conductor_group", "alive"}

// conductorMask turns requested fields into a mask; nil is every field.
// Unknown fields are Ironic's check_for_invalid_fields error.
func conductorMask(fields []string) (conductorField, *apiError) {
	if fields == nil {
		return cfAll, nil
	}
	var m conductorField
	var invalid []string
	for _, f := range fields {
		i := slices.IndexFunc(conductorFields, func(cf conductorFieldDef) bool { return cf.name == f })
		if i < 0 {
			invalid = append(invalid, f)
			continue
		}
		m |= 1 << i
	}
	if invalid != nil {
		return 0, badRequest(`Field(s) "` + strings.Join(invalid, ", ") + `" are not valid`)
	}
	return m, nil
}

// appendConductor appends Ironic's conductor representation.
func appendConductor(b []byte, base string, c *topology.ConductorInfo, m conductorField) []byte {
	b = append(b, '{')
	first := true
	for i, f := range conductorFields {
		if f.always || m&(1<<i) != 0 {
			b = appendKey(b, first, f.name)
			b = f.value(b, base, c)
			first = false
		}
	}
	return append(b, '}')
}

func conductorNotFound(hostname string) *apiError {
	return clientError(http.StatusNotFound, "Conductor "+hostname+" could not be found.")
}

// conductorSortKeys compares conductors by each sort key Ironic accepts and
// the sidecar can sort by (columns of the conductors table).
var conductorSortKeys = map[string]func(a, b *topology.ConductorInfo, c collation) int{
	"id": func(a, b *topology.ConductorInfo, _ collation) int { return cmp.Compare(a.ID, b.ID) },
	"":   func(a, b *topology.ConductorInfo, _ collation) int { return 0 }, // Ironic: by id only
	"hostname": func(a, b *topology.ConductorInfo, c collation) int {
		return c.compare(a.Hostname, b.Hostname)
	},
	"conductor_group": func(a, b *topology.ConductorInfo, c collation) int {
		return c.compare(a.ConductorGroup, b.ConductorGroup)
	},
	"online": func(a, b *topology.ConductorInfo, _ collation) int { return rules.CompareBool(a.Online, b.Online) },
	"created_at": func(a, b *topology.ConductorInfo, c collation) int {
		return compareTime(a.CreatedAt, b.CreatedAt, c)
	},
	"updated_at": func(a, b *topology.ConductorInfo, c collation) int {
		return compareTime(a.UpdatedAt, b.UpdatedAt, c)
	},
}

// conductorListArgs are the parsed parameters of a conductor list.
type conductorListArgs struct {
	listArgs
	key  func(a, b *topology.ConductorInfo, c collation) int
	mask conductorField
}

// conductorListParams are the parameters of ConductorsController.get_all.
var conductorListParams = []param{{name: "marker", kind: paramName}, {name: "limit", kind: paramInt},
	{name: "sort_key"}, {name: "sort_dir"}, {name: "fields", kind: paramStringList}, {name: "detail", kind: paramBool}}

// conductorListArgs parses and validates the parameters of
// ConductorsController.get_all, in Ironic's order, up to what needs the
// topology.
func (rq *request) conductorListArgs() (*conductorListArgs, *apiError) {
	q := parseQuery(rq.r.URL.RawQuery)
	if err := q.validate(conductorListParams); err != nil {
		return nil, err
	}
	a := &conductorListArgs{listArgs: readListArgs(q)}
	if rq.minor < minor49Conductors {
		return nil, rq.conductorsTooOld()
	}
	if err := rq.checkFields(a.fields, a.hasFields); err != nil {
		return nil, err
	}
	if err := rq.checkAllowedFields([]string{a.sortKey}); err != nil {
		return nil, err
	}
	if err := rq.returnFields(&a.listArgs, conductorDefaultFields); err != nil {
		return nil, err
	}
	if err := rq.checkPage(&a.listArgs); err != nil {
		return nil, err
	}
	if a.sortKey == "alive" || a.sortKey == "drivers" {
		return nil, badRequest("The sort_key value " + a.sortKey + " is an invalid field for sorting")
	}
	return a, nil
}

// resolve finds the marker and checks the sort key and fields, once the
// topology is known.
func (a *conductorListArgs) resolve(t *topology.Topology) (marker *topology.ConductorInfo, err *apiError) {
	if a.marker != "" {
		var ok bool
		if marker, ok = collationOf(t).conductor(t, a.marker); !ok {
			return nil, conductorNotFound(a.marker)
		}
	}
	var known bool
	if a.key, known = conductorSortKeys[a.sortKey]; !known {
		if a.sortKey == "version" {
			return nil, badRequest("Sorting conductors by version is not supported by ironic-conductor-exporter")
		}
		return nil, badRequest(`The sort_key value "` + a.sortKey + `" is an invalid field for sorting`)
	}
	a.mask, err = conductorMask(a.retFields)
	return marker, err
}

// listConductors answers GET /v1/conductors (ConductorsController.get_all).
func (rq *request) listConductors() {
	if !rq.canGetConductors() {
		return
	}
	a, err := rq.conductorListArgs()
	if err != nil {
		rq.fail(err)
		return
	}
	t, err := rq.topology()
	if err != nil {
		rq.fail(err)
		return
	}
	marker, err := a.resolve(t)
	if err != nil {
		rq.fail(err)
		return
	}
	rq.reply(rq.appendConductorList(nil, a, conductorPage(t, a, marker)))
}

// conductorPage is Ironic's paginate_query: order by (sort_key, id) in one
// direction, rows strictly after the marker's (sort_key, id), at most limit.
func conductorPage(t *topology.Topology, a *conductorListArgs, marker *topology.ConductorInfo) []*topology.ConductorInfo {
	coll := collationOf(t)
	order := paginationOrder(func(x, y *topology.ConductorInfo) int { return a.key(x, y, coll) },
		func(x *topology.ConductorInfo) int64 { return x.ID }, a.sortDir == "desc")
	items := make([]*topology.ConductorInfo, 0, len(t.Conductors))
	for i := range t.Conductors {
		c := &t.Conductors[i]
		if marker == nil || order(c, marker) > 0 {
			items = append(items, c)
		}
	}
	if a.sortKey != "id" || a.sortDir != "asc" {
		slices.SortStableFunc(items, order)
	}
	return items[:min(len(items), a.limit)]
}

// appendConductorList renders a page of conductors and its next link.
func (rq *request) appendConductorList(b []byte, a *conductorListArgs, items []*topology.ConductorInfo) []byte {
	base := rq.base()
	b = append(b, `{"conductors": [`...)
	b = appendList(b, items, func(b []byte, c *topology.ConductorInfo) []byte { return appendConductor(b, base, c, a.mask) })
	b = append(b, ']')
	if len(items) > 0 && len(items) == a.limit {
		params := a.appendDetailFields([][2]string{{"sort_key", a.sortKey}, {"sort_dir", a.sortDir}})
		b = append(b, `, "next": `...)
		b = nextLink(b, base, "conductors", params, a.limit, items[len(items)-1].Hostname)
	}
	return append(b, '}')
}

// getConductor answers GET /v1/conductors/{hostname}
// (ConductorsController.get_one). Unlike Ironic 21.4, which validates the
// hostname as a logical name and refuses "host:6385" with a 400, any
// hostname is looked up.
func (rq *request) getConductor(hostname string) {
	if !rq.canGetConductors() {
		return
	}
	fields, t, err := rq.conductorRequest()
	if err != nil {
		rq.fail(err)
		return
	}
	coll := collationOf(t)
	c, ok := coll.conductor(t, hostname)
	if !ok && rq.jsonSuffix { // retry with the ".json" Ironic stripped
		c, ok = coll.conductor(t, hostname+".json")
	}
	if !ok {
		rq.fail(conductorNotFound(hostname))
		return
	}
	rq.replyConductor(t, c, fields)
}

// canGetConductors checks baremetal:conductor:get first, as
// ConductorsController.get_all and get_one do, and answers 403 when it fails.
func (rq *request) canGetConductors() bool {
	if rq.acc != nil && !rq.acc.CanGetConductors() {
		rq.fail(forbidden("baremetal:conductor:get"))
		return false
	}
	return true
}

// conductorRequest validates what every request answered by one
// conductor's detail shares (only a fields argument, a microversion that
// exposes conductors) and returns the fields and the topology.
func (rq *request) conductorRequest() ([]string, *topology.Topology, *apiError) {
	fields, hasFields, err := rq.fieldsArg()
	if err != nil {
		return nil, nil, err
	}
	if rq.minor < minor49Conductors {
		return nil, nil, rq.conductorsTooOld()
	}
	if err := rq.checkFields(fields, hasFields); err != nil {
		return nil, nil, err
	}
	t, err := rq.topology()
	return fields, t, err
}

// replyConductor renders one conductor of t with the requested fields.
func (rq *request) replyConductor(t *topology.Topology, c *topology.ConductorInfo, fields []string) {
	mask, err := conductorMask(fields)
	if err != nil {
		rq.fail(err)
		return
	}
	rq.reply(appendConductor(nil, rq.base(), c, mask))
}

// conductorsTooOld is the 404 of the conductor resources below 1.49:
// "Resource could not be found." up to Ironic 37.x, "The API is not
// supported for this version" from 38.0 (rules.ConductorsVersionMessage).
// Without data, the older message.
func (rq *request) conductorsTooOld() *apiError {
	if t := rq.h.cache.Get(rq.r.Context()).Topology; t != nil {
		if msg := t.Rules.ConductorsVersionMessage(); msg != "" {
			return clientError(http.StatusNotFound, msg)
		}
	}
	return errNotFound
}
