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

func TestFaultLabel(t *testing.T) {
	for in, want := range map[string]string{"power failure": "power failure", "clean failure": "clean failure",
		"rescue abort failure": "rescue abort failure", "service failure": "service failure",
		"Power Failure": "other", "": "other", "bmc on fire": "other"} {
		if got := FaultLabel(in); got != want {
			t.Errorf("FaultLabel(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestValidFaults(t *testing.T) {
	if got := New(Release{22, 1}, PostgreSQL, Settings{}).ValidFaults(); len(got) != 3 || got[2] != "rescue abort failure" {
		t.Errorf("22.1: %q", got)
	}
	if got := New(Release{23, 0}, PostgreSQL, Settings{}).ValidFaults(); len(got) != 4 || got[3] != "service failure" {
		t.Errorf("23.0: %q", got)
	}
}

func TestHealthLabel(t *testing.T) {
	for in, want := range map[string]string{"OK": "OK", "Warning": "Warning", "Critical": "Critical", "ok": "other", "": "other"} {
		if got := HealthLabel(in); got != want {
			t.Errorf("HealthLabel(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestHardwareTypeRemoved(t *testing.T) {
	for _, c := range []struct {
		release Release
		driver  string
		removed bool
	}{
		{Release{35, 0}, "ilo", false}, {Release{36, 0}, "ilo", true}, {Release{36, 0}, "irmc", true},
		{Release{39, 0}, "snmp", true}, {Release{25, 0}, "ibmc", false}, {Release{26, 0}, "xclarity", true},
		{Release{39, 0}, "redfish", false}, {Release{39, 0}, "ipmi", false},
	} {
		if _, got := New(c.release, PostgreSQL, Settings{}).HardwareTypeRemoved(c.driver); got != c.removed {
			t.Errorf("%s on %s: removed %v, want %v", c.driver, c.release, got, c.removed)
		}
	}
}
