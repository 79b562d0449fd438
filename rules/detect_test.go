package rules

import (
	"strings"
	"testing"
)

func TestDetect(t *testing.T) {
	for _, c := range []struct {
		name     string
		rev      string
		versions []string
		release  string
		from     string
		warnings []string // substrings, one per warning expected
	}{
		// Debian bullseye's 16.0: 15.1's head, nothing until 16.1 migrates
		{"16.0", "cf1a80fdb352", []string{"1.3"}, "16.0", "alembic_version+conductors.version",
			[]string{"hash_ring_algorithm (honoured) changed in 15.2"}},
		{"21.4 (bookworm)", "4dbec778866e", []string{"1.3", "1.3"}, "21.4", "alembic_version+conductors.version", nil},
		{"22.1", "d163df1bab88", nil, "22.1", "alembic_version", nil},
		// 24.1's head serves 24.1 to 26.0; conductors.version 1.3 says 24.1
		{"24.1 by the object version", "01f21d5e5195", []string{"1.3"}, "24.1", "alembic_version+conductors.version", nil},
		{"25.0 by the object version", "01f21d5e5195", []string{"1.4"}, "26.0", "alembic_version+conductors.version", nil},
		{"29.0 (trixie)", "21c48150dea9", []string{"1.4"}, "29.0", "alembic_version+conductors.version", nil},
		{"38.0", "16990309ad9d", []string{"1.6"}, "38.0", "alembic_version+conductors.version", nil},
		{"branch tip", "9fb44677ef15", []string{"1.6"}, "38.0", "alembic_version+conductors.version", nil},
		{"unknown revision", "ffffffffffff", []string{"1.6"}, Newest.String(), "alembic_version+conductors.version",
			[]string{"unknown schema revision ffffffffffff"}},
		{"mid-upgrade", "21c48150dea9", []string{"1.3", "1.4"}, "29.0", "alembic_version+conductors.version",
			[]string{"different object versions 1.3, 1.4"}},
		{"pinned conductors", "21c48150dea9", []string{"1.3"}, "29.0", "alembic_version+conductors.version",
			[]string{"pinned by pin_release_version"}},
		{"object version only", "", []string{"1.4"}, "31.0", "conductors.version", nil},
		{"object version 1.3 only", "", []string{"1.3"}, "24.1", "conductors.version",
			[]string{"changed in 12.2", "changed in 15.2", "changed in 16.1", "changed in 21.1", "changed in 22.1", "changed in 23.0", "changed in 23.1"}},
		{"nothing", "", nil, Newest.String(), "none", []string{"neither a schema revision"}},
		{"newer object version", "", []string{"1.10"}, Newest.String(), "conductors.version", []string{"unknown Conductor object version 1.10"}},
	} {
		d, err := Detect(c.rev, c.versions)
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if d.Release.String() != c.release || d.From != c.from {
			t.Errorf("%s: release %s from %s (range %s-%s), want %s from %s", c.name, d.Release, d.From, d.Min, d.Max, c.release, c.from)
		}
		if len(d.Warnings) != len(c.warnings) {
			t.Errorf("%s: warnings %q, want %d", c.name, d.Warnings, len(c.warnings))
			continue
		}
		for i, w := range c.warnings {
			if !strings.Contains(d.Warnings[i], w) {
				t.Errorf("%s: warning %q lacks %q", c.name, d.Warnings[i], w)
			}
		}
	}
}

func TestDetectTooOld(t *testing.T) {
	// 664f85c2f622 added conductor_group in 11.1; its parent is 10.1's
	for _, c := range []struct {
		rev      string
		versions []string
	}{{revisions["664f85c2f622"].down, nil}, {"", []string{"1.2"}}} {
		if d, err := Detect(c.rev, c.versions); err == nil || !strings.Contains(err.Error(), "11.1") {
			t.Errorf("Detect(%q, %v) = %+v, %v; want an error naming 11.1", c.rev, c.versions, d, err)
		}
	}
	if d, err := Detect("664f85c2f622", nil); err != nil || d.Min.String() != "11.1" {
		t.Errorf("Detect(664f85c2f622) = %+v, %v; want 11.1", d, err)
	}
}

// TestChain: the embedded chain is linear, each revision's parent known
// (but the first), and no release older than its parent's.
func TestChain(t *testing.T) {
	roots := 0
	for id, r := range revisions {
		if r.down == "None" {
			roots++
			continue
		}
		p, ok := revisions[r.down]
		if !ok {
			t.Errorf("%s: parent %s unknown", id, r.down)
			continue
		}
		if !r.first.IsZero() && p.first.IsZero() || (!r.first.IsZero() && r.first.Before(p.first)) {
			t.Errorf("%s (%s) is older than its parent %s (%s)", id, r.first, r.down, p.first)
		}
		if len(children[r.down]) != 1 {
			t.Errorf("%s has children %v: the chain branches", r.down, children[r.down])
		}
	}
	if roots != 1 || len(revisions) < 80 {
		t.Errorf("%d roots, %d revisions", roots, len(revisions))
	}
}
