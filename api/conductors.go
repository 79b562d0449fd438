package api

import (
	"cmp"
	"net/http"
	"slices"
	"strings"

	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/topology"
)

// conductorField is one field of Ironic's conductor representation.
type conductorField uint8

// The fields in the order Ironic renders them (object_to_dict, then
// "alive"): created_at, updated_at, hostname, conductor_group, drivers,
// links, alive. links is always rendered.
const (
	cfCreatedAt conductorField = 1 << iota
	cfUpdatedAt
	cfHostname
	cfGroup
	cfDrivers
	cfAlive

	cfAll = cfCreatedAt | cfUpdatedAt | cfHostname | cfGroup | cfDrivers | cfAlive
)

var conductorFieldByName = map[string]conductorField{
	"created_at": cfCreatedAt, "updated_at": cfUpdatedAt, "hostname": cfHostname,
	"conductor_group": cfGroup, "drivers": cfDrivers, "alive": cfAlive, "links": 0,
}

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
		bit, ok := conductorFieldByName[f]
		if !ok {
			invalid = append(invalid, f)
		}
		m |= bit
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
	if m&cfCreatedAt != 0 {
		b = appendKey(b, first, "created_at")
		b = appendTime(b, c.CreatedAt)
		first = false
	}
	if m&cfUpdatedAt != 0 {
		b = appendKey(b, first, "updated_at")
		b = appendTime(b, c.UpdatedAt)
		first = false
	}
	if m&cfHostname != 0 {
		b = appendKey(b, first, "hostname")
		b = appendString(b, c.Hostname)
		first = false
	}
	if m&cfGroup != 0 {
		b = appendKey(b, first, "conductor_group")
		b = appendString(b, c.ConductorGroup)
		first = false
	}
	if m&cfDrivers != 0 {
		b = appendKey(b, first, "drivers")
		b = append(b, '[')
		for i, d := range c.Drivers {
			if i > 0 {
				b = append(b, ',', ' ')
			}
			b = appendString(b, d)
		}
		b = append(b, ']')
		first = false
	}
	b = appendKey(b, first, "links")
	b = appendLinks(b, base, "conductors", c.Hostname)
	if m&cfAlive != 0 {
		b = append(b, `, "alive": `...)
		b = appendBool(b, c.Alive)
	}
	return append(b, '}')
}

func conductorNotFound(hostname string) *apiError {
	return clientError(http.StatusNotFound, "Conductor "+hostname+" could not be found.")
}

// lookupConductor finds a conductor by hostname, retrying with the ".json"
// Ironic stripped from the path.
func (rq *request) lookupConductor(t *topology.Topology, hostname string) (*topology.ConductorInfo, bool) {
	coll := collationOf(t)
	c, ok := coll.conductor(t, hostname)
	if !ok && rq.jsonSuffix {
		c, ok = coll.conductor(t, hostname+".json")
	}
	return c, ok
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
	"online": func(a, b *topology.ConductorInfo, _ collation) int { return compareBool(a.Online, b.Online) },
	"created_at": func(a, b *topology.ConductorInfo, c collation) int {
		return compareTime(a.CreatedAt, b.CreatedAt, c)
	},
	"updated_at": func(a, b *topology.ConductorInfo, c collation) int {
		return compareTime(a.UpdatedAt, b.UpdatedAt, c)
	},
}

func compareBool(a, b bool) int {
	switch {
	case a == b:
		return 0
	case a:
		return 1
	default:
		return -1
	}
}

// listConductors answers GET /v1/conductors (ConductorsController.get_all).
func (rq *request) listConductors() {
	q := parseQuery(rq.r.URL.RawQuery)
	if err := q.checkArgs("marker", "limit", "sort_key", "sort_dir", "fields", "detail"); err != nil {
		rq.fail(err)
		return
	}
	marker, hasMarker, err := q.str("marker")
	if err == nil && hasMarker && marker == "" {
		err = badRequest("Expected name for marker: ") // args.name
	}
	var limit int
	var hasLimit, hasFields, detail, hasDetail bool
	var fields []string
	sortKey, sortDir := "id", "asc"
	if err == nil {
		limit, hasLimit, err = q.integer("limit")
	}
	if err == nil {
		if v, ok, e := q.str("sort_key"); ok || e != nil {
			sortKey, err = v, e
		}
	}
	if err == nil {
		if v, ok, e := q.str("sort_dir"); ok || e != nil {
			sortDir, err = v, e
		}
	}
	if err == nil {
		fields, hasFields, err = q.strList("fields")
	}
	if err == nil {
		detail, hasDetail, err = q.boolean("detail")
	}
	if err == nil && rq.minor < minor49Conductors {
		err = errNotFound
	}
	if err == nil {
		err = rq.checkAllowSpecifyFields(hasFields)
	}
	if err == nil {
		err = rq.checkAllowedFields(fields)
	}
	if err == nil {
		err = rq.checkAllowedFields([]string{sortKey})
	}
	if err == nil {
		fields, err = rq.returnFields(fields, hasFields, detail, hasDetail, conductorDefaultFields)
	}
	if err == nil {
		limit, err = rq.validateLimit(limit, hasLimit)
	}
	if err == nil {
		err = validateSortDir(sortDir)
	}
	if err == nil && (sortKey == "alive" || sortKey == "drivers") {
		err = badRequest("The sort_key value " + sortKey + " is an invalid field for sorting")
	}
	var t *topology.Topology
	if err == nil {
		t, err = rq.topology()
	}
	var markerC *topology.ConductorInfo
	if err == nil && marker != "" {
		var ok bool
		if markerC, ok = collationOf(t).conductor(t, marker); !ok {
			err = conductorNotFound(marker)
		}
	}
	keyCmp, known := conductorSortKeys[sortKey]
	if err == nil && !known {
		if sortKey == "version" {
			err = badRequest("Sorting conductors by version is not supported by ironic-conductor-exporter")
		} else {
			err = badRequest(`The sort_key value "` + sortKey + `" is an invalid field for sorting`)
		}
	}
	var mask conductorField
	if err == nil {
		mask, err = conductorMask(fields)
	}
	if err != nil {
		rq.fail(err)
		return
	}

	// Ironic's paginate_query: order by (sort_key, id) in one direction,
	// rows strictly after the marker's (sort_key, id).
	coll := collationOf(t)
	order := paginationOrder(func(a, b *topology.ConductorInfo) int { return keyCmp(a, b, coll) },
		func(x *topology.ConductorInfo) int64 { return x.ID }, sortDir == "desc")
	items := make([]*topology.ConductorInfo, 0, len(t.Conductors))
	for i := range t.Conductors {
		c := &t.Conductors[i]
		if markerC == nil || order(c, markerC) > 0 {
			items = append(items, c)
		}
	}
	if sortKey != "id" || sortDir != "asc" {
		slices.SortStableFunc(items, order)
	}
	if len(items) > limit {
		items = items[:limit]
	}

	base := rq.base()
	bp := getBuf()
	defer putBuf(bp)
	b := append(*bp, `{"conductors": [`...)
	for i, c := range items {
		if i > 0 {
			b = append(b, ',', ' ')
		}
		b = appendConductor(b, base, c, mask)
	}
	b = append(b, ']')
	if len(items) > 0 && len(items) == limit {
		params := [][2]string{{"sort_key", sortKey}, {"sort_dir", sortDir}}
		if hasDetail {
			params = append(params, [2]string{"detail", pyBool(detail)})
		}
		if len(fields) > 0 {
			params = append(params, [2]string{"fields", strings.Join(fields, ",")})
		}
		b = append(b, `, "next": `...)
		b = nextLink(b, base, "conductors", params, limit, items[len(items)-1].Hostname)
	}
	b = append(b, '}')
	*bp = b
	rq.reply(b)
}

// getConductor answers GET /v1/conductors/{hostname}
// (ConductorsController.get_one). Unlike Ironic 21.4, which validates the
// hostname as a logical name and refuses "host:6385" with a 400, any
// hostname is looked up.
func (rq *request) getConductor(hostname string) {
	fields, t, err := rq.conductorRequest()
	var c *topology.ConductorInfo
	if err == nil {
		var ok bool
		if c, ok = rq.lookupConductor(t, hostname); !ok {
			err = conductorNotFound(hostname)
		}
	}
	if err != nil {
		rq.fail(err)
		return
	}
	rq.replyConductor(c, fields)
}

// conductorRequest validates what every request answered by one
// conductor's detail shares (only a fields argument, a microversion that
// exposes conductors) and returns the fields and the topology.
func (rq *request) conductorRequest() ([]string, *topology.Topology, *apiError) {
	var q query
	if rq.r.URL.RawQuery != "" {
		q = parseQuery(rq.r.URL.RawQuery)
	}
	if err := q.checkArgs("fields"); err != nil {
		return nil, nil, err
	}
	fields, hasFields, err := q.strList("fields")
	if err == nil && rq.minor < minor49Conductors {
		err = errNotFound
	}
	if err == nil {
		err = rq.checkAllowSpecifyFields(hasFields)
	}
	if err == nil {
		err = rq.checkAllowedFields(fields)
	}
	if err != nil {
		return nil, nil, err
	}
	t, err := rq.topology()
	return fields, t, err
}

// replyConductor renders one conductor with the requested fields.
func (rq *request) replyConductor(c *topology.ConductorInfo, fields []string) {
	mask, err := conductorMask(fields)
	if err != nil {
		rq.fail(err)
		return
	}
	bp := getBuf()
	defer putBuf(bp)
	b := appendConductor(*bp, rq.base(), c, mask)
	*bp = b
	rq.reply(b)
}
