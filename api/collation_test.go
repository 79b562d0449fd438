package api

import (
	"slices"
	"testing"
)

// TestCollationOrders: MySQL's utf8(mb3)_general_ci compares case-folded
// code points, utf8mb4_unicode_ci (Ironic 35.0+) UCA weights: "_" before
// "-" before ":" before "." before digits before letters.
func TestCollationOrders(t *testing.T) {
	hosts := []string{"cond.2", "cond-10", "Cond9", "cond_3", "cond:1", "conda"}
	for _, tc := range []struct {
		name string
		c    collation
		want []string
	}{
		{"bytes", collation{}, []string{"Cond9", "cond-10", "cond.2", "cond:1", "cond_3", "conda"}},
		{"general_ci", collation{fold: true}, []string{"cond-10", "cond.2", "Cond9", "cond:1", "cond_3", "conda"}},
		{"unicode_ci", collation{fold: true, unicode: true}, []string{"cond_3", "cond-10", "cond:1", "cond.2", "Cond9", "conda"}},
	} {
		got := slices.Clone(hosts)
		slices.SortFunc(got, tc.c.compare)
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
	if !(collation{fold: true, unicode: true}).equal("Cond_3", "cond_3") {
		t.Error("unicode_ci equality is case-sensitive")
	}
}
