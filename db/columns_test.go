package db

import (
	"slices"
	"testing"
)

// TestNodeRowTargets: the node read scans one field of nodeRow per column
// of nodeColumns, each once, and every text column into the slot its name
// has in nodeTextNames, so that a column added to the statements has a
// reader.
func TestNodeRowTargets(t *testing.T) {
	for _, binary := range []bool{false, true} {
		var r nodeRow
		targets := r.targets(binary)
		if len(targets) != len(nodeColumns) {
			t.Fatalf("binary=%v: %d targets for %d columns", binary, len(targets), len(nodeColumns))
		}
		seen := map[any]string{}
		for i, tg := range targets {
			if other, dup := seen[tg]; dup {
				t.Errorf("binary=%v: %s and %s scan into the same field", binary, other, nodeColumns[i].name)
			}
			seen[tg] = nodeColumns[i].name
		}
	}
	var text []string
	for _, c := range nodeColumns {
		if c.kind == columnText {
			text = append(text, c.name)
		}
	}
	if !slices.Equal(text, nodeTextNames[:]) {
		t.Errorf("text columns of nodeColumns %q, nodeTextNames %q", text, nodeTextNames)
	}
}
