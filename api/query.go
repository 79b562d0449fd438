package api

import (
	"math/big"
	"regexp"
	"slices"
	"strings"

	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/internal/pyurl"
)

// maxQueryLen bounds the raw query string; longer ones are refused (400).
// Ironic's eventlet server refuses request lines over 8 KiB.
const maxQueryLen = 8192

// maxPathLen bounds the escaped path.
const maxPathLen = 4096

// query is a parsed query string: the values of each parameter in order.
type query map[string][]string

// parseQuery parses a query string as Python's urllib.parse.parse_qsl does
// for webob (keep_blank_values): pairs split on '&' only, empty pairs
// skipped, '+' is a space, invalid %-escapes kept literally and invalid
// UTF-8 replaced by U+FFFD.
func parseQuery(raw string) query {
	if raw == "" {
		return nil
	}
	q := query{}
	for pair := range strings.SplitSeq(raw, "&") {
		if pair == "" {
			continue
		}
		k, v, _ := strings.Cut(pair, "=")
		k, v = unquotePlus(k), unquotePlus(v)
		q[k] = append(q[k], v)
	}
	return q
}

// unquotePlus is Python's urllib.parse.unquote_plus (errors="replace").
func unquotePlus(s string) string { return strings.ToValidUTF8(pyurl.Unquote(s, true), "\uFFFD") }

// paramKind is the args validator Ironic applies to a parameter.
type paramKind uint8

const (
	paramString paramKind = iota
	// paramName is args.name, relaxed to any non-empty string: hostnames
	// are looked up as stored (doc.go).
	paramName
	paramUUID
	paramBool
	paramInt
	paramStringList
)

// param is one parameter of a controller method.
type param struct {
	name string
	kind paramKind
	// The node list's: gate is the microversion Ironic requires for the
	// filter (the check_allow_filter_* helpers), 0 for none; unread: Ironic
	// filters by it, the sidecar does not read the column; field is the
	// node field an equality filter compares.
	gate   int
	unread bool
	field  *nodeField
}

// validate is ironic.common.args.validate: parameters the method does not
// take are refused ("Unexpected arguments: a, b"), then each given one is
// checked by its validator, in the method's order. Once validated, the
// values are read with the validators, whose errors are then nil.
func (q query) validate(params []param) *apiError {
	var extra []string
	for k := range q {
		if !slices.ContainsFunc(params, func(p param) bool { return p.name == k }) {
			extra = append(extra, k)
		}
	}
	if extra != nil {
		slices.Sort(extra) // Ironic joins a set: any order
		return badRequest("Unexpected arguments: " + strings.Join(extra, ", "))
	}
	for _, p := range params {
		if _, given := q[p.name]; !given {
			continue
		}
		var err *apiError
		switch p.kind {
		case paramName:
			var v string
			if v, _, err = q.str(p.name); err == nil && v == "" {
				err = badRequest("Expected name for " + p.name + ": ")
			}
		case paramUUID:
			_, _, err = q.uuid(p.name)
		case paramBool:
			_, _, err = q.boolean(p.name)
		case paramInt:
			_, _, err = q.integer(p.name)
		case paramStringList:
			_, _, err = q.strList(p.name)
		case paramString:
			_, _, err = q.str(p.name)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// display is how Ironic prints a parameter value in its messages: the
// string itself, or the Python repr of the list pecan passes for a
// repeated parameter.
func display(vals []string) string {
	if len(vals) == 1 {
		return vals[0]
	}
	reprs := make([]string, len(vals))
	for i, v := range vals {
		reprs[i] = pyRepr(v)
	}
	return "[" + strings.Join(reprs, ", ") + "]"
}

// pyRepr approximates Python's repr() of a str.
func pyRepr(s string) string {
	quote := byte('\'')
	if strings.Contains(s, "'") && !strings.Contains(s, `"`) {
		quote = '"'
	}
	var b strings.Builder
	b.WriteByte(quote)
	for _, r := range s {
		switch {
		case r == '\\':
			b.WriteString(`\\`)
		case r == rune(quote):
			b.WriteByte('\\')
			b.WriteRune(r)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r < ' ' || r == 0x7f:
			b.WriteString(`\x`)
			b.WriteByte(hexDigits[r>>4])
			b.WriteByte(hexDigits[r&0xF])
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte(quote)
	return b.String()
}

// The validators of ironic.common.args. Each returns ok=false when the
// parameter is absent.

// str is args.string.
func (q query) str(name string) (string, bool, *apiError) {
	vals, ok := q[name]
	if !ok {
		return "", false, nil
	}
	if len(vals) != 1 {
		return "", false, badRequest("Expected string for " + name + ": " + display(vals))
	}
	return vals[0], true, nil
}

// strList is args.string_list: comma separated, items trimmed, lower-cased
// and de-duplicated, empty items dropped.
func (q query) strList(name string) ([]string, bool, *apiError) {
	s, ok, err := q.str(name)
	if !ok || err != nil {
		return nil, ok, err
	}
	items := []string{}
	for v := range strings.SplitSeq(s, ",") {
		v = strings.ToLower(strings.TrimSpace(v))
		if v != "" && !slices.Contains(items, v) {
			items = append(items, v)
		}
	}
	return items, true, nil
}

var boolValues = map[string]bool{
	"1": true, "t": true, "true": true, "on": true, "y": true, "yes": true,
	"0": false, "f": false, "false": false, "off": false, "n": false, "no": false,
}

// boolean is args.boolean (oslo strutils.bool_from_string, strict).
func (q query) boolean(name string) (bool, bool, *apiError) {
	vals, ok := q[name]
	if !ok {
		return false, false, nil
	}
	s := display(vals)
	if v, known := boolValues[strings.ToLower(strings.TrimSpace(s))]; known && len(vals) == 1 {
		return v, true, nil
	}
	return false, false, badRequest("Invalid " + name + ": Unrecognized value '" + s +
		"', acceptable values are: '0', '1', 'f', 'false', 'n', 'no', 'off', 'on', 't', 'true', 'y', 'yes'")
}

// maxInteger bounds the values of integer, which only ever meet a limit.
const maxInteger = 1 << 30

// integer is args.integer, its value clamped to ±maxInteger.
func (q query) integer(name string) (int, bool, *apiError) {
	vals, ok := q[name]
	if !ok {
		return 0, false, nil
	}
	var p *big.Int
	if len(vals) == 1 {
		p, ok = parsePyInt(vals[0])
	}
	if p == nil || !ok {
		return 0, false, badRequest("Expected an integer for " + name + ": " + display(vals))
	}
	if p.CmpAbs(big.NewInt(maxInteger)) > 0 {
		p.SetInt64(int64(p.Sign()) * maxInteger)
	}
	return int(p.Int64()), true, nil
}

// uuid is args.uuid.
func (q query) uuid(name string) (string, bool, *apiError) {
	vals, ok := q[name]
	if !ok {
		return "", false, nil
	}
	if len(vals) != 1 || !isUUIDLike(vals[0]) {
		return "", false, badRequest("Expected UUID for " + name + ": " + display(vals))
	}
	return vals[0], true, nil
}

// isUUIDLike is oslo_utils.uuidutils.is_uuid_like: after removing "urn:",
// "uuid:", surrounding braces and dashes, 32 hex digits.
func isUUIDLike(s string) bool {
	if len(s) < 32 || len(s) > 1024 {
		return false
	}
	s = strings.ReplaceAll(s, "urn:", "")
	s = strings.ReplaceAll(s, "uuid:", "")
	s = strings.Trim(s, "{}")
	digits := 0
	for i := 0; i < len(s); i++ {
		if strings.IndexByte("0123456789abcdefABCDEF", s[i]) >= 0 {
			digits++
		} else if s[i] != '-' {
			return false
		}
	}
	return digits == 32
}

// The regular expressions of ironic.common.utils.
var (
	logicalName  = regexp.MustCompile(`^[A-Za-z0-9._~-]+$`)
	hostnameSafe = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?(\.[a-z0-9_-]{0,62}[a-z0-9])*\.?$`)
)

// isValidLogicalName is ironic.common.utils.is_valid_logical_name: RFC 3986
// unreserved characters only, at most 255 of them.
func isValidLogicalName(s string) bool { return len(s) <= 255 && logicalName.MatchString(s) }

// isHostnameSafe is ironic.common.utils.is_hostname_safe, the node name
// check of microversions before 1.10.
func isHostnameSafe(s string) bool { return len(s) <= 255 && hostnameSafe.MatchString(s) }

// escapeSegment percent-encodes what may not appear in a URL path segment.
// Hostnames, names and UUIDs made of unreserved characters and ':' are
// returned unchanged, so links are Ironic's bytes for every sane value.
func escapeSegment(s string) string { return escape(s, "-._~:@!$&'()*+,=") }

// escapeQueryValue percent-encodes a value for the query of a next link.
// Ironic interpolates values raw; unreserved characters, ':' and ',' (the
// separator of fields) are kept, so ordinary values are Ironic's bytes.
func escapeQueryValue(s string) string { return escape(s, "-._~:@!$'()*,/?") }

func escape(s, keep string) string {
	n := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !isAlnum(c) && strings.IndexByte(keep, c) < 0 {
			n++
		}
	}
	if n == 0 {
		return s
	}
	b := make([]byte, 0, len(s)+2*n)
	for i := 0; i < len(s); i++ {
		c := s[i]
		if isAlnum(c) || strings.IndexByte(keep, c) >= 0 {
			b = append(b, c)
		} else {
			b = append(b, '%', "0123456789ABCDEF"[c>>4], "0123456789ABCDEF"[c&0xF])
		}
	}
	return string(b)
}

func isAlnum(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}
