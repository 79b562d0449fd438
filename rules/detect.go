package rules

import (
	"cmp"
	_ "embed"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
)

// releasesTSV is extracted from openstack/ironic's git history by
// scripts/extract-alembic-chain.sh: every alembic revision with its
// down_revision and the first release whose tree has it (revision ids are
// random hex: only the chain orders them), and the Conductor object version
// each release writes (ironic/common/release_mappings.py).
//
//go:embed releases.tsv
var releasesTSV string

type revision struct {
	down  string
	first Release // zero for a revision not in a release yet ("master")
}

var (
	revisions     = map[string]revision{}
	children      = map[string][]string{}  // down_revision -> revisions
	knownReleases []Release                // every X.Y.0 in the data, oldest first
	objVersions   = map[string][]Release{} // Conductor object version -> releases writing it
	// Newest is the newest release whose rules this package knows.
	Newest Release
	// oldestGrouped is the first release with conductors.conductor_group
	// (ironic/db/sqlalchemy/alembic/versions/664f85c2f622, commit 26fd55f7d
	// "Use conductor group for hash ring calculations", 11.1.0).
	oldestGrouped = Release{11, 1}
)

func init() {
	for _, line := range strings.Split(releasesTSV, "\n") {
		f := strings.Split(line, "\t")
		switch {
		case len(f) == 4 && f[0] == "revision":
			rev := revision{down: f[2]}
			if f[3] != "master" {
				rev.first = MustRelease(f[3])
			}
			revisions[f[1]] = rev
			children[f[2]] = append(children[f[2]], f[1])
		case len(f) == 3 && f[0] == "conductor":
			r := MustRelease(f[1])
			knownReleases = append(knownReleases, r)
			objVersions[f[2]] = append(objVersions[f[2]], r)
		}
	}
	slices.SortFunc(knownReleases, Release.Compare)
	Newest = knownReleases[len(knownReleases)-1]
}

// Detection is what the database says about the Ironic release that wrote it.
type Detection struct {
	// Release is the release whose rules apply: the newest release
	// consistent with the database (Min..Max).
	Release Release
	// Min and Max bound the releases consistent with the schema revision and
	// the Conductor object versions (Max is Newest when nothing newer is
	// excluded).
	Min, Max Release
	// SchemaRevision is alembic_version.version_num ("" when absent).
	SchemaRevision string
	// ConductorVersions are the distinct conductors.version values, sorted.
	ConductorVersions []string
	// From says what the release was told by: "alembic_version",
	// "conductors.version", both joined by "+", or "none" (newest rules).
	From string
	// Warnings are the reasons the answer may not be Ironic's (an unknown
	// revision, a mid-upgrade fleet, rules that change inside Min..Max).
	Warnings []string
}

// Detect tells the release from the schema revision (alembic_version) and
// the Conductor object version each conductor row wrote (conductors.version;
// empty values are ignored). An unknown revision or object version falls
// back to the newest known rules with a warning; a schema older than 11.1
// (no conductors.conductor_group) is an error.
func Detect(schemaRevision string, conductorVersions []string) (Detection, error) {
	d := Detection{SchemaRevision: schemaRevision, Min: knownReleases[0], Max: Newest}
	var from []string
	if schemaRevision != "" {
		rev, ok := revisions[schemaRevision]
		switch {
		case !ok:
			d.Warnings = append(d.Warnings, fmt.Sprintf(
				"unknown schema revision %s (newer than this exporter?): using the rules of %s", schemaRevision, Newest))
			d.Min = Newest
		case !hasConductorGroup(schemaRevision):
			return d, fmt.Errorf("schema revision %s is Ironic %s or older, which has no conductors.conductor_group: Ironic 11.1 (Rocky) or newer is needed",
				schemaRevision, releaseBefore(oldestGrouped))
		case rev.first.IsZero(): // on Ironic's branch tip, in no release yet
			d.Min = Newest
		default:
			d.Min = rev.first
			// a child revision's release would have migrated past this one
			for _, c := range children[schemaRevision] {
				if cr := revisions[c]; !cr.first.IsZero() && cr.first.AtLeast(d.Min) {
					if before := releaseBefore(cr.first); before.Before(d.Max) {
						d.Max = before
					}
				}
			}
		}
		from = append(from, "alembic_version")
	}
	versions := slices.DeleteFunc(slices.Clone(conductorVersions), func(v string) bool { return v == "" })
	slices.Sort(versions)
	d.ConductorVersions = slices.Compact(versions)
	if len(d.ConductorVersions) > 0 {
		from = append(from, "conductors.version")
		if len(d.ConductorVersions) > 1 {
			d.Warnings = append(d.Warnings, fmt.Sprintf(
				"conductors wrote different object versions %s: a fleet mid-upgrade (or pinned by pin_release_version); answers follow the newest",
				strings.Join(d.ConductorVersions, ", ")))
		}
		newest := d.ConductorVersions[len(d.ConductorVersions)-1]
		rels, ok := objVersions[newest]
		switch {
		case !ok && compareVersions(newest, slices.MaxFunc(slices.Collect(maps.Keys(objVersions)), compareVersions)) > 0:
			d.Warnings = append(d.Warnings, fmt.Sprintf(
				"unknown Conductor object version %s: using the rules of %s", newest, Newest))
			d.Min = Newest
		case !ok:
			if schemaRevision == "" {
				return d, fmt.Errorf("conductors wrote object version %s, older than Ironic 11.1's 1.3: Ironic 11.1 (Rocky) or newer is needed", newest)
			}
		case rels[len(rels)-1].Before(oldestGrouped) && schemaRevision == "":
			return d, fmt.Errorf("conductors wrote object version %s, of Ironic %s or older, which has no conductor_group: Ironic 11.1 (Rocky) or newer is needed", newest, rels[len(rels)-1])
		default:
			lo, hi := rels[0], rels[len(rels)-1]
			if lo.AtLeast(d.Min) && lo.Compare(d.Max) <= 0 {
				d.Min = lo
			}
			if hi.Before(d.Max) && hi.AtLeast(d.Min) {
				d.Max = hi
			}
			if hi.Before(d.Min) || lo.Compare(d.Max) > 0 {
				d.Warnings = append(d.Warnings, fmt.Sprintf(
					"conductors wrote object version %s (Ironic %s-%s) but the schema is of %s-%s: pinned by pin_release_version or mid-upgrade; following the schema",
					newest, lo, hi, d.Min, d.Max))
			}
		}
	}
	if len(from) == 0 {
		from = append(from, "none")
		d.Warnings = append(d.Warnings, "neither a schema revision nor a conductor version to tell the release: using the rules of "+Newest.String())
		d.Min = Newest
	}
	d.From = strings.Join(from, "+")
	d.Release = d.Max
	for _, c := range changes {
		if c.since.Compare(d.Min) > 0 && c.since.Compare(d.Max) <= 0 {
			d.Warnings = append(d.Warnings, fmt.Sprintf(
				"the database fits Ironic %s to %s and %s changed in %s: following %s", d.Min, d.Max, c.what, c.since, d.Release))
		}
	}
	return d, nil
}

// groupRevision added conductors.conductor_group and nodes.conductor_group
// (ironic/db/sqlalchemy/alembic/versions/664f85c2f622_add_conductor_group_to_nodes_conductors.py,
// commit 26fd55f7d's series, 11.1.0).
const groupRevision = "664f85c2f622"

// hasConductorGroup reports whether the schema at rev (a known revision)
// has conductor_group: groupRevision is rev or one of its ancestors.
func hasConductorGroup(rev string) bool {
	for i := 0; i <= len(revisions); i++ {
		if rev == groupRevision {
			return true
		}
		r, ok := revisions[rev]
		if !ok {
			return false
		}
		rev = r.down
	}
	return false
}

// releaseBefore is the newest known release older than r (the oldest known
// when there is none).
func releaseBefore(r Release) Release {
	i, _ := slices.BinarySearchFunc(knownReleases, r, Release.Compare)
	return knownReleases[max(i-1, 0)]
}

// compareVersions orders dotted object versions numerically ("1.10" >
// "1.9"); a part that is not a number orders as 0.
func compareVersions(a, b string) int {
	as, bs := strings.Split(a, "."), strings.Split(b, ".")
	for i := range min(len(as), len(bs)) {
		x, _ := strconv.Atoi(as[i])
		y, _ := strconv.Atoi(bs[i])
		if c := cmp.Compare(x, y); c != 0 {
			return c
		}
	}
	return cmp.Compare(len(as), len(bs))
}
