// Package pyurl decodes percent-escapes as Python's urllib.parse does, for
// the strings the exporter reads as Python would: SQLAlchemy URLs (dbconn)
// and the paths and queries of Ironic's API (api).
package pyurl

import (
	"strconv"
	"strings"
)

// Unquote decodes %XX escapes like Python's urllib.parse.unquote (and
// unquote_plus when plus is set): an invalid escape is kept as it is. The
// decoded bytes are returned as they are, valid UTF-8 or not.
func Unquote(s string, plus bool) string {
	if !strings.ContainsAny(s, "%+") {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '%' && i+2 < len(s) {
			// Base 16 takes neither a sign nor '_': exactly two hex digits.
			if n, err := strconv.ParseUint(s[i+1:i+3], 16, 8); err == nil {
				b.WriteByte(byte(n))
				i += 2
				continue
			}
		}
		if c == '+' && plus {
			c = ' '
		}
		b.WriteByte(c)
	}
	return b.String()
}
