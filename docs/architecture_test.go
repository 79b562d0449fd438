// Package docs holds the tests that keep the developers' documents true to
// the code.
package docs

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite docs/architecture.md's package graph from go list")

const (
	module     = "github.com/ironic-conductor-exporter/ironic-conductor-exporter/"
	graphTitle = "### Package graph"
)

// packageGraph is the module's import graph as `go list` tells it: one line
// per package, the module's packages it imports in its non-test files.
func packageGraph(t *testing.T) string {
	t.Helper()
	cmd := exec.Command("go", "list", "-json", "./...")
	cmd.Dir = ".."
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	var lines []string
	width := 0
	type pkg struct {
		ImportPath string
		Imports    []string
		GoFiles    []string
	}
	var pkgs []pkg
	for dec := json.NewDecoder(bytes.NewReader(out)); dec.More(); {
		var p pkg
		if err := dec.Decode(&p); err != nil {
			t.Fatalf("go list's output: %v", err)
		}
		p.ImportPath = strings.TrimPrefix(p.ImportPath, module)
		width = max(width, len(p.ImportPath))
		pkgs = append(pkgs, p)
	}
	for _, p := range pkgs {
		var deps []string
		for _, imp := range p.Imports {
			if rest, ok := strings.CutPrefix(imp, module); ok {
				deps = append(deps, rest)
			}
		}
		slices.Sort(deps)
		switch {
		case len(p.GoFiles) == 0:
			deps = []string{"(tests only)"}
		case len(deps) == 0:
			deps = []string{"(nothing)"}
		}
		lines = append(lines, fmt.Sprintf("%-*s  %s", width, p.ImportPath, strings.Join(deps, " ")))
	}
	slices.Sort(lines)
	return strings.Join(lines, "\n") + "\n"
}

// TestPackageGraph: the package graph in docs/architecture.md is the one
// `go list` tells (go test ./docs -update rewrites it).
func TestPackageGraph(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Fatalf("go is not on PATH: %v", err)
	}
	path := filepath.Join("architecture.md")
	doc, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	text := string(doc)
	at := strings.Index(text, graphTitle)
	if at < 0 {
		t.Fatalf("%s has no %q section", path, graphTitle)
	}
	open := strings.Index(text[at:], "```\n")
	if open < 0 {
		t.Fatalf("%s: no code block under %q", path, graphTitle)
	}
	start := at + open + len("```\n")
	end := strings.Index(text[start:], "```")
	if end < 0 {
		t.Fatalf("%s: the package graph's block is not closed", path)
	}
	end += start
	want := packageGraph(t)
	if got := text[start:end]; got != want {
		if *update {
			if err := os.WriteFile(path, []byte(text[:start]+want+text[end:]), 0o644); err != nil {
				t.Fatal(err)
			}
			return
		}
		t.Errorf("docs/architecture.md's package graph is not go list's (go test ./docs -update rewrites it):\n--- doc\n%s--- go list\n%s", got, want)
	}
}
