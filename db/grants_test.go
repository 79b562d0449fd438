package db

import (
	"flag"
	"os"
	"strings"
	"testing"
)

var updateGrants = flag.Bool("update", false, "write deploy/sql/ from GrantSQL")

// TestGrantFiles: deploy/sql/ holds GrantSQL's scripts for Ironic's usual
// database "ironic" (go generate ./db writes them), and
// docs/operators.md's read-only user section shows each statement but
// psql's \connect.
func TestGrantFiles(t *testing.T) {
	docs, err := os.ReadFile("../docs/operators.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, backend := range GrantBackends {
		path := "../deploy/sql/ironic-readonly." + backend.String() + ".sql"
		want := GrantSQL(backend, "ironic_exporter", "ironic")
		if *updateGrants {
			if err := os.WriteFile(path, []byte(want), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		got, err := os.ReadFile(path)
		if err != nil || string(got) != want {
			t.Errorf("%s is not GrantSQL's (%v): run go generate ./db", path, err)
		}
		for _, line := range strings.Split(strings.TrimSpace(want), "\n") {
			if !strings.HasPrefix(line, "--") && !strings.HasPrefix(line, `\connect`) && !strings.Contains(string(docs), "\n"+line+"\n") {
				t.Errorf("docs/operators.md lacks the line %q of %s", line, path)
			}
		}
	}
}
