package rules

import "testing"

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
