package rules

import "testing"

func TestConcurrencyLimits(t *testing.T) {
	for _, c := range []struct {
		name    string
		release Release
		s       Settings
		want    ConcurrencyLimits
		ok      bool
	}{
		{"21.0 has none", Release{21, 0}, Settings{}, ConcurrencyLimits{}, false},
		{"21.1 defaults", Release{21, 1}, Settings{}, ConcurrencyLimits{Deploy: 250, Clean: 50}, true},
		{"per group ignored before 35.0", Release{34, 0}, Settings{MaxConcurrentDeploy: 10, MaxConcurrentClean: 3, MaxConcurrentPerConductorGroup: true},
			ConcurrencyLimits{Deploy: 10, Clean: 3}, true},
		{"per group from 35.0", Release{35, 0}, Settings{MaxConcurrentDeploy: 10, MaxConcurrentPerConductorGroup: true},
			ConcurrencyLimits{Deploy: 10, Clean: 50, PerGroup: true}, true},
		{"35.0 global", Release{35, 0}, Settings{MaxConcurrentClean: 7}, ConcurrencyLimits{Deploy: 250, Clean: 7}, true},
	} {
		got, ok := New(c.release, PostgreSQL, c.s).ConcurrencyLimits()
		if got != c.want || ok != c.ok {
			t.Errorf("%s: %+v %v, want %+v %v", c.name, got, ok, c.want, c.ok)
		}
	}
}

func TestActionOf(t *testing.T) {
	want := map[string]Action{"deploying": ActionDeploy, "wait call-back": ActionDeploy,
		"deleting": ActionClean, "cleaning": ActionClean, "clean wait": ActionClean}
	for _, s := range []string{"deploying", "wait call-back", "deleting", "cleaning", "clean wait",
		"active", "available", "deploy failed", "clean failed", "clean hold", "deploy hold", "servicing", "Deploying", ""} {
		a, ok := ActionOf(s)
		w, wok := want[s]
		if ok != wok || a != w {
			t.Errorf("ActionOf(%q) = %v %v, want %v %v", s, a, ok, w, wok)
		}
	}
	if ActionDeploy.String() != "deploy" || ActionClean.String() != "clean" {
		t.Errorf("labels %q %q", ActionDeploy, ActionClean)
	}
}
