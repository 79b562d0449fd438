package nova

import (
	"encoding/json"
	"os"
	"testing"
)

// testdata/format_db_url.json holds [template, connection, Nova's answer]
// from Nova 31.0's own CellMapping._format_url
// (conformance/nova/format_db_url_golden.py in the trixie chroot).
func TestFormatDBURLGolden(t *testing.T) {
	b, err := os.ReadFile("testdata/format_db_url.json")
	if err != nil {
		t.Fatal(err)
	}
	var cases [][3]string
	if err := json.Unmarshal(b, &cases); err != nil {
		t.Fatal(err)
	}
	for _, c := range cases {
		got, ok := FormatDBURL(c[0], c[1])
		if !ok || got != c[2] {
			t.Errorf("FormatDBURL(%q, %q) = %q, %v; Nova: %q", c[0], c[1], got, ok, c[2])
		}
	}
	if len(cases) < 50 {
		t.Fatalf("%d golden cases", len(cases))
	}
	if got, ok := FormatDBURL("{port:05}", "mysql://h:1/x"); ok || got != "{port:05}" {
		t.Errorf("a format spec: %q, %v; want not modelled", got, ok)
	}
	if got, _ := FormatDBURL("{scheme}://x", ""); got != "{scheme}://x" {
		t.Errorf("no [database]connection: %q", got)
	}
}
