package rules

import (
	"fmt"
	"slices"
)

// novaServiceVersions is SERVICE_VERSION (nova/objects/service.py) as each
// Nova release writes it into services.version for its own service rows:
// the same for every point release of a series (read from every X.Y.Z tag
// of openstack/nova from 20.0.0 to 33.0.2; 74 from Debian sid's 34.0.0).
// Each nova-compute writes its own, so during an upgrade the rows tell
// each compute's release apart: each compute computes its view with its
// own release's rules.
var novaServiceVersions = []struct {
	version        int
	oldest, newest Release
}{
	{40, Release{20, 0}, Release{20, 6}},
	{51, Release{21, 0}, Release{21, 2}},
	{53, Release{22, 0}, Release{22, 4}},
	{56, Release{23, 0}, Release{23, 2}},
	{60, Release{24, 0}, Release{24, 2}},
	{61, Release{25, 0}, Release{25, 3}},
	{64, Release{26, 0}, Release{26, 3}},
	{66, Release{27, 0}, Release{28, 3}}, // 28.0 only renamed partition_key
	{67, Release{29, 0}, Release{30, 3}},
	{68, Release{31, 0}, Release{31, 3}},
	{70, Release{32, 0}, Release{32, 2}},
	{72, Release{33, 0}, Release{33, 0}},
	{74, Release{34, 0}, Release{34, 0}},
}

// NovaReleaseOfServiceVersion returns the Nova releases that write
// services.version v (oldest and newest known), and whether v is known.
// A version between two known ones (a development version: master at
// 33.0.0-373 wrote 73) gives the older release's newest and ok false.
func NovaReleaseOfServiceVersion(v int) (oldest, newest Release, ok bool) {
	i, found := slices.BinarySearchFunc(novaServiceVersions, v, func(e struct {
		version        int
		oldest, newest Release
	}, v int) int {
		return e.version - v
	})
	if found {
		e := novaServiceVersions[i]
		return e.oldest, e.newest, true
	}
	if i == 0 {
		return Release{}, Release{}, false
	}
	e := novaServiceVersions[i-1]
	return e.newest, e.newest, false
}

// NovaRulesRelease is the release whose rules a service of
// services.version v follows: the oldest release writing v (the releases
// sharing a version share the rules of package nova; 27.x and 28.x differ
// only in the name of the conductor group option). A version newer than
// every known one takes the newest rules, and a warning.
func NovaRulesRelease(v int) (Release, string) {
	oldest, newest, ok := NovaReleaseOfServiceVersion(v)
	switch {
	case ok:
		return oldest, ""
	case oldest.IsZero():
		first := novaServiceVersions[0]
		return first.oldest, fmt.Sprintf("nova services.version %d is older than %s (%d): its rules are taken as %s's", v, first.oldest, first.version, first.oldest)
	}
	return newest, fmt.Sprintf("nova services.version %d is not a released one: its rules are taken as %s's", v, newest)
}
