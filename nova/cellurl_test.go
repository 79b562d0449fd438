package nova

import (
	"encoding/json"
	"os"
	"strings"
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

// TestFillCellTemplate: the exporter's template reaches each cell's own
// server and database with its own user, and fails rather than use
// cell_mappings' URL when it cannot be filled.
func TestFillCellTemplate(t *testing.T) {
	const tmpl = "mysql+pymysql://reader:s3cret@{hostname}:{port}/{path}?{query}"
	got, err := FillCellTemplate(tmpl, "mysql+pymysql://nova:NOVAPW@DB1.example:3306/nova_cell1?charset=utf8")
	if want := "mysql+pymysql://reader:s3cret@db1.example:3306/nova_cell1?charset=utf8"; err != nil || got != want {
		t.Errorf("got %q, %v; want %q", got, err, want)
	}
	for _, c := range []struct{ tmpl, cell string }{
		{"postgresql://reader@{hostname}/{database}", "postgresql://nova:NOVAPW@h/nova_cell1"}, // unknown key
		{"postgresql://reader@{hostname/x", "postgresql://nova:NOVAPW@h/nova_cell1"},
		{"postgresql://reader@{hostname}}/x", "postgresql://nova:NOVAPW@h/nova_cell1"},
		{"postgresql://reader@{port:05}/x", "postgresql://nova:NOVAPW@h:1/nova_cell1"},
		{tmpl, "mysql://nova:NOVAPW@h:99999/nova"},
		{tmpl, ""},
	} {
		got, err := FillCellTemplate(c.tmpl, c.cell)
		if err == nil || got != "" {
			t.Errorf("FillCellTemplate(%q, %q) = %q, %v; want an error", c.tmpl, c.cell, got, err)
		} else if strings.Contains(err.Error(), "NOVAPW") {
			t.Errorf("the error holds the cell's password: %v", err)
		}
	}
}
