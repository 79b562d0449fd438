package api

import (
	"net/http"
	"strconv"
	"strings"
)

// listArgs are the parameters every list takes.
type listArgs struct {
	marker            string
	limit             int
	hasLimit          bool
	fields            []string
	hasFields         bool
	detail, hasDetail bool
	sortKey, sortDir  string
	// retFields are the fields to render (returnFields), nil for all.
	retFields []string
}

// readListArgs reads the parameters every list takes from a validated
// query.
func readListArgs(q query) listArgs {
	a := listArgs{sortKey: "id", sortDir: "asc"}
	a.marker, _, _ = q.str("marker")
	a.limit, a.hasLimit, _ = q.integer("limit")
	a.fields, a.hasFields, _ = q.strList("fields")
	a.detail, a.hasDetail, _ = q.boolean("detail")
	if v, ok, _ := q.str("sort_key"); ok {
		a.sortKey = v
	}
	if v, ok, _ := q.str("sort_dir"); ok {
		a.sortDir = v
	}
	return a
}

// checkPage is api_utils.validate_limit (the page size: no more than
// maxLimit, maxLimit when not given), then validate_sort_dir.
func (rq *request) checkPage(a *listArgs) *apiError {
	if !a.hasLimit {
		a.limit = rq.h.maxLimit
	}
	switch {
	case a.limit <= 0:
		return badRequest("Limit must be positive")
	case a.sortDir != "asc" && a.sortDir != "desc":
		return badRequest("Invalid sort direction: " + a.sortDir + ". Acceptable values are 'asc' or 'desc'")
	}
	a.limit = min(a.limit, rq.h.maxLimit)
	return nil
}

// checkAllowedFields is api_utils.check_allowed_fields: a field newer than
// the request's microversion is not acceptable.
func (rq *request) checkAllowedFields(fields []string) *apiError {
	for _, f := range fields {
		if v, ok := versionedFields[f]; ok && rq.minor < v {
			return errNotAcceptable
		}
	}
	return nil
}

// fieldsArg parses the query of a request for one resource (get_one),
// whose only argument is fields.
func (rq *request) fieldsArg() ([]string, bool, *apiError) {
	q := parseQuery(rq.r.URL.RawQuery)
	if err := q.validate([]param{{name: "fields", kind: paramStringList}}); err != nil {
		return nil, false, err
	}
	return q.strList("fields")
}

// checkFields is check_allow_specify_fields then check_allowed_fields.
func (rq *request) checkFields(fields []string, given bool) *apiError {
	if given && rq.minor < minor8FieldsSubset {
		return errNotAcceptable
	}
	return rq.checkAllowedFields(fields)
}

func pyBool(v bool) string {
	if v {
		return "True"
	}
	return "False"
}

// returnFields is api_utils.get_request_return_fields: it sets the fields
// to render, nil for all of them.
func (rq *request) returnFields(a *listArgs, defaults []string) *apiError {
	switch {
	case a.hasDetail && rq.minor < minor43DetailQuery:
		return badRequest("Invalid query parameter ?detail=" + pyBool(a.detail) + " received.")
	case a.hasFields && a.detail:
		return badRequest("Can not specify ?detail=True and fields in the same request.")
	case !a.hasFields && !a.detail:
		a.retFields = defaults
	default:
		a.retFields = a.fields
	}
	return nil
}

// appendDetailFields appends the detail and fields parameters of a next
// link.
func (a *listArgs) appendDetailFields(params [][2]string) [][2]string {
	if a.hasDetail {
		params = append(params, [2]string{"detail", pyBool(a.detail)})
	}
	if len(a.retFields) > 0 {
		params = append(params, [2]string{"fields", strings.Join(a.retFields, ",")})
	}
	return params
}

// minVersionError is the 406 of Ironic's check_allow_filter_by_* helpers.
func minVersionError(minor int) *apiError {
	return clientError(http.StatusNotAcceptable,
		"Request not acceptable. The minimal required API version should be 1."+strconv.Itoa(minor))
}

// nextLink builds the "next" URL as Ironic's collection.get_next does:
// BASE/v1/RESOURCE?k=v&...&limit=N&marker=M, with params in order.
func nextLink(b []byte, base, resource string, params [][2]string, limit int, marker string) []byte {
	b = append(b, '"')
	b = appendRawJSON(b, base)
	b = append(b, "/v1/"...)
	b = append(b, resource...)
	b = append(b, '?')
	for _, p := range params {
		b = appendRawJSON(b, p[0])
		b = append(b, '=')
		b = appendRawJSON(b, escapeQueryValue(p[1]))
		b = append(b, '&')
	}
	b = append(b, "limit="...)
	b = strconv.AppendInt(b, int64(limit), 10)
	b = append(b, "&marker="...)
	b = appendRawJSON(b, escapeQueryValue(marker))
	return append(b, '"')
}
