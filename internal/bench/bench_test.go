package bench

import (
	"slices"
	"testing"
)

func TestRounds(t *testing.T) {
	for _, c := range []struct {
		env  string
		want []int
	}{
		{"", []int{1, 2}},
		{"0", []int{1, 2}},
		{"x", []int{1, 2}},
		{"1", []int{1, 2}},
		{"3", []int{1, 2, 1, 2, 1, 2}},
	} {
		t.Setenv(RoundsEnv, c.env)
		if got := Rounds(1, 2); !slices.Equal(got, c.want) {
			t.Errorf("%s=%q: Rounds(1, 2) = %v, want %v", RoundsEnv, c.env, got, c.want)
		}
	}
}
