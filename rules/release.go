// Package rules holds OpenStack Ironic's rules by release: which release
// wrote a database (Detect, from its schema revision and the Conductor object
// versions), and, for a release, a backend and Ironic's settings, how Ironic
// decides that a conductor is alive, who is in its hash rings, whether
// heartbeats exist, what ring key a node or conductor has and which answers
// its API gives (Rules). It is pure: no database, no Prometheus, no HTTP.
//
// Every rule cites the Ironic function it mirrors and the commit that made
// it, with the first release (X.Y.0 tag) containing that commit.
package rules

import (
	"cmp"
	"fmt"
	"strconv"
	"strings"
)

// Release is an Ironic release as its version says it: Major.Minor (29.0,
// 21.4). Point releases share their rules with the X.Y they belong to.
type Release struct {
	Major, Minor int
}

// series maps OpenStack series names to the Ironic release that closed the
// series, as ironic/common/release_mappings.py aliases them (RELEASE_MAPPING
// ['2025.1'] = RELEASE_MAPPING['29.0'], ...).
var series = map[string]Release{
	"queens": {10, 1}, "rocky": {11, 1}, "stein": {12, 1}, "train": {13, 0},
	"ussuri": {15, 0}, "victoria": {16, 0}, "yoga": {20, 1}, "zed": {21, 1},
	"antelope": {21, 4}, "2023.1": {21, 4}, "2023.2": {23, 0}, "2024.1": {24, 1},
	"2024.2": {26, 1}, "2025.1": {29, 0}, "2025.2": {32, 0}, "2026.1": {35, 0},
}

// ParseRelease reads a release in any of the spellings people use: an
// Ironic version ("29.0", "29.0.5", Debian's "1:29.0.5-0+deb13u3"), an
// OpenStack series ("2025.1") or a series name ("victoria", "2023.1").
func ParseRelease(s string) (Release, error) {
	v := strings.ToLower(strings.TrimSpace(s))
	if r, ok := series[v]; ok {
		return r, nil
	}
	if i := strings.IndexByte(v, ':'); i >= 0 { // Debian epoch
		v = v[i+1:]
	}
	if i := strings.IndexAny(v, "-+~"); i >= 0 { // Debian revision, suffixes
		v = v[:i]
	}
	parts := strings.Split(v, ".")
	if len(parts) < 2 || len(parts) > 3 {
		return Release{}, fmt.Errorf("ironic release %q: want X.Y (29.0) or a series (2025.1)", s)
	}
	maj, err1 := strconv.Atoi(parts[0])
	min, err2 := strconv.Atoi(parts[1])
	if err1 != nil || err2 != nil || maj < 0 || min < 0 {
		return Release{}, fmt.Errorf("ironic release %q: want X.Y (29.0) or a series (2025.1)", s)
	}
	if maj >= 2000 { // a series spelled YYYY.N that no release closes yet
		return Release{}, fmt.Errorf("ironic release %q: unknown series (known: 2023.1 to 2026.1)", s)
	}
	return Release{maj, min}, nil
}

// MustRelease is ParseRelease for constants; it panics on a bad spelling.
func MustRelease(s string) Release {
	r, err := ParseRelease(s)
	if err != nil {
		panic(err)
	}
	return r
}

// String spells the release as Ironic's version does ("29.0").
func (r Release) String() string {
	if r.IsZero() {
		return ""
	}
	return fmt.Sprintf("%d.%d", r.Major, r.Minor)
}

// IsZero reports whether r is the zero Release (none known).
func (r Release) IsZero() bool { return r == Release{} }

// Compare orders releases: -1 when r is older than o, 0 when equal, +1 when newer.
func (r Release) Compare(o Release) int {
	return cmp.Or(cmp.Compare(r.Major, o.Major), cmp.Compare(r.Minor, o.Minor))
}

// AtLeast reports whether r is o or newer.
func (r Release) AtLeast(o Release) bool { return r.Compare(o) >= 0 }

// Before reports whether r is older than o.
func (r Release) Before(o Release) bool { return r.Compare(o) < 0 }
