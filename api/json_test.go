package api

import (
	"encoding/json"
	"testing"
	"time"
	"unicode/utf8"
)

// Expectations produced by Python's json.dumps (ensure_ascii), what Ironic
// answers with.
func TestAppendStringMatchesPython(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"", `""`},
		{"plain", `"plain"`},
		{"quote\"back\\slash", `"quote\"back\\slash"`},
		{"ctl\n\r\t\b\f\u0000\u001f\u007f", `"ctl\n\r\t\b\f\u0000\u001f\u007f"`},
		{"</script>&", `"</script>&"`},
		{"\u00e9\u4e2d\u6587", `"\u00e9\u4e2d\u6587"`},
		{"emoji😀", `"emoji\ud83d\ude00"`},
		{"slash/ok", `"slash/ok"`},
		{"~`!@#$%^&*()", `"~` + "`" + `!@#$%^&*()"`},
		{"bad\xffutf8", `"bad\ufffdutf8"`},
	} {
		if got := string(appendString(nil, tc.in)); got != tc.want {
			t.Errorf("appendString(%q) = %s, want %s", tc.in, got, tc.want)
		}
	}
}

func TestAppendStringRoundTrip(t *testing.T) {
	for _, s := range []string{"a\x00b", "ünï\u2028cödé", "\U0010FFFF", "x\"y\\z", string([]byte{0xed, 0xa0, 0x80})} {
		var back string
		if err := json.Unmarshal(appendString(nil, s), &back); err != nil {
			t.Fatalf("%q: %v", s, err)
		}
		want := s
		if !utf8.ValidString(s) {
			want = "\ufffd\ufffd\ufffd"
		}
		if back != want {
			t.Errorf("round trip %q -> %q", s, back)
		}
	}
}

func TestAppendTimeMatchesPython(t *testing.T) {
	for _, tc := range []struct {
		in   time.Time
		want string
	}{
		{time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), `"2026-01-02T03:04:05+00:00"`},
		{time.Date(2026, 1, 2, 3, 4, 5, 120999, time.UTC), `"2026-01-02T03:04:05.000120+00:00"`}, // microseconds, truncated
		{time.Date(1, 1, 1, 0, 0, 1, 999999000, time.UTC), `"0001-01-01T00:00:01.999999+00:00"`},
		{time.Date(2026, 1, 2, 4, 4, 5, 0, time.FixedZone("x", 3600)), `"2026-01-02T03:04:05+00:00"`},
		{time.Time{}, `null`},
	} {
		if got := string(appendTime(nil, tc.in)); got != tc.want {
			t.Errorf("appendTime(%v) = %s, want %s", tc.in, got, tc.want)
		}
	}
}

func TestEscapes(t *testing.T) {
	for _, tc := range []struct{ in, seg, query string }{
		{"cond-1.example.com:6385", "cond-1.example.com:6385", "cond-1.example.com:6385"},
		{"Node_1.rack~2", "Node_1.rack~2", "Node_1.rack~2"},
		{"a b/c?d#e%f&g+h=i", "a%20b%2Fc%3Fd%23e%25f&g+h=i", "a%20b/c?d%23e%25f%26g%2Bh%3Di"},
		{"uuid,name", "uuid,name", "uuid,name"},
		{"é", "%C3%A9", "%C3%A9"},
	} {
		if got := escapeSegment(tc.in); got != tc.seg {
			t.Errorf("escapeSegment(%q) = %q, want %q", tc.in, got, tc.seg)
		}
		if got := escapeQueryValue(tc.in); got != tc.query {
			t.Errorf("escapeQueryValue(%q) = %q, want %q", tc.in, got, tc.query)
		}
	}
}

func TestIsUUIDLike(t *testing.T) {
	for s, want := range map[string]bool{
		"6b4013ef-254b-4c4e-810c-4759482c9cbc":          true,
		"6B4013EF-254B-4C4E-810C-4759482C9CBC":          true,
		"6b4013ef254b4c4e810c4759482c9cbc":              true,
		"{6b4013ef-254b-4c4e-810c-4759482c9cbc}":        true,
		"urn:uuid:6b4013ef-254b-4c4e-810c-4759482c9cbc": true,
		"6b4013ef-254b-4c4e-810c-4759482c9cb":           false,
		"6b4013ef-254b-4c4e-810c-4759482c9cbg":          false,
		"node-1":                                        false,
		"":                                              false,
	} {
		if got := isUUIDLike(s); got != want {
			t.Errorf("isUUIDLike(%q) = %v", s, got)
		}
	}
}

func TestParsePyInt(t *testing.T) {
	for s, want := range map[string]string{
		"1": "1", " 49 ": "49", "+3": "3", "-0": "0", "007": "7", "1_0": "10", "-5": "-5",
	} {
		p, ok := parsePyInt(s)
		if !ok || p.String() != want {
			t.Errorf("parsePyInt(%q) = %v %v, want %s", s, p, ok, want)
		}
	}
	for _, s := range []string{"", "+", "1__0", "_1", "1_", "0x10", "1.5", "١"} {
		if _, ok := parsePyInt(s); ok {
			t.Errorf("parsePyInt(%q) accepted", s)
		}
	}
}

func TestIsHostnameSafe(t *testing.T) {
	for s, want := range map[string]bool{
		"node-1": true, "node-1.example.com": true, "node-1.": true, "a.-b_c": true,
		"Node-1": false, "-node": false, "node_1": false, "node..x": false, "": false,
	} {
		if got := isHostnameSafe(s); got != want {
			t.Errorf("isHostnameSafe(%q) = %v", s, got)
		}
	}
}
