package api

import (
	"slices"
	"time"
	"unicode/utf8"
)

// The encoder below writes JSON byte for byte as Ironic does: Python's
// json.dumps with its defaults (", " and ": " separators, ensure_ascii, keys
// in insertion order). It appends to a byte slice without reflection, which
// keeps the hot lookups cheap.

const hexDigits = "0123456789abcdef"

// plain reports the bytes Python's json.dumps writes as they are.
func plain(c byte) bool { return c >= ' ' && c <= '~' && c != '"' && c != '\\' }

// shortEscape is the letter of json.dumps' two-character escape of an ASCII
// byte, 0 for the bytes it writes as \u00XX.
var shortEscape = [utf8.RuneSelf]byte{'"': '"', '\\': '\\', '\n': 'n', '\r': 'r', '\t': 't', '\b': 'b', '\f': 'f'}

// appendString appends s as a JSON string the way Python's json.dumps does
// with ensure_ascii=True: '"' and '\\' escaped, the usual short escapes for
// \n \r \t \b \f, every other byte outside ' '..'~' as \u00XX, and non-ASCII
// runes as \uXXXX (surrogate pairs above U+FFFF). Invalid UTF-8 becomes
// U+FFFD.
func appendString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if plain(c) {
			i++
			continue
		}
		b = append(b, s[start:i]...)
		if c < utf8.RuneSelf {
			if e := shortEscape[c]; e != 0 {
				b = append(b, '\\', e)
			} else {
				b = appendU4(b, rune(c))
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r > 0xFFFF {
			r -= 0x10000
			b = appendU4(b, 0xD800+(r>>10)&0x3FF)
			b = appendU4(b, 0xDC00+r&0x3FF)
		} else {
			b = appendU4(b, r) // utf8.RuneError (U+FFFD) for invalid bytes
		}
		i += size
		start = i
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

func appendU4(b []byte, r rune) []byte {
	return append(b, '\\', 'u',
		hexDigits[r>>12&0xF], hexDigits[r>>8&0xF], hexDigits[r>>4&0xF], hexDigits[r&0xF])
}

// appendKey appends `"key": `, preceded by ", " unless it is the first key
// of its object.
func appendKey(b []byte, first bool, key string) []byte {
	if !first {
		b = append(b, ',', ' ')
	}
	b = appendString(b, key)
	return append(b, ':', ' ')
}

func appendBool(b []byte, v bool) []byte {
	if v {
		return append(b, "true"...)
	}
	return append(b, "false"...)
}

func appendNullableString(b []byte, s *string) []byte {
	if s == nil {
		return append(b, "null"...)
	}
	return appendString(b, *s)
}

// appendTime appends a timestamp as Ironic renders a DateTimeField:
// datetime.isoformat() of an aware UTC value, "2006-01-02T15:04:05+00:00",
// with ".ffffff" only when the microseconds are not zero. The zero time
// (SQL NULL) is null.
func appendTime(b []byte, t time.Time) []byte {
	if t.IsZero() {
		return append(b, "null"...)
	}
	b = t.UTC().AppendFormat(append(b, '"'), "2006-01-02T15:04:05.000000")
	if t.Nanosecond() < 1000 {
		b = b[:len(b)-len(".000000")]
	}
	return append(b, "+00:00\""...)
}

// appendList appends the items rendered by item, ", " between them. The
// first item's size reserves room for all: one allocation for a page, where
// growing by doubling made three times the page in garbage (GET
// /v1/conductors at 300 conductors: the >= 50x real Ironic target).
func appendList[T any](b []byte, items []T, item func([]byte, T) []byte) []byte {
	for i, it := range items {
		if i > 0 {
			b = append(b, ',', ' ')
		}
		start := len(b)
		b = item(b, it)
		if i == 0 {
			b = slices.Grow(b, (len(b)-start+2)*(len(items)-1))
		}
	}
	return b
}

// appendLinks appends Ironic's "links" value for a resource (a collection
// when arg is ""): a "self" link under /v1 and a "bookmark" link without it.
//
//	[{"href": "BASE/v1/RES/ARG", "rel": "self"}, {"href": "BASE/RES/ARG", "rel": "bookmark"}]
func appendLinks(b []byte, base, resource, arg string) []byte {
	b = append(b, `[{"href": `...)
	b = appendHref(b, base, "/v1/", resource, arg)
	b = append(b, `, "rel": "self"}, {"href": `...)
	b = appendHref(b, base, "/", resource, arg)
	return append(b, `, "rel": "bookmark"}]`...)
}

// appendHref appends the JSON string base+prefix+resource+"/"+escaped(arg).
// arg is escaped as a path segment: for hostnames and UUIDs made of
// unreserved characters and ':' the link is the bytes Ironic builds.
func appendHref(b []byte, base, prefix, resource, arg string) []byte {
	b = append(b, '"')
	b = appendRawJSON(b, base)
	b = append(b, prefix...)
	b = append(b, resource...)
	b = append(b, '/')
	b = appendRawJSON(b, escapeSegment(arg))
	return append(b, '"')
}

// appendRawJSON appends the body of a JSON string (no quotes).
func appendRawJSON(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if !plain(s[i]) {
			q := appendString(nil, s)
			return append(b, q[1:len(q)-1]...)
		}
	}
	return append(b, s...)
}
