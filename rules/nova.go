package rules

import (
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// Nova's rules: how a nova-compute running Nova's ironic driver decides
// which Ironic nodes it manages, by Nova release. The release points are
// Nova's (the first X.Y.0 tag of openstack/nova containing the commit); a
// Release holds a Nova release as it holds an Ironic one.
//
// The functions mirrored, in nova/virt/ironic/driver.py:
// IronicDriver._refresh_hash_ring (the ring's members as one compute sees
// them) and IronicDriver._refresh_cache (the nodes it manages); in
// nova/servicegroup/api.py API.__init__ and service_is_up, and
// nova/servicegroup/drivers/db.py DbDriver.is_up (a service is up).
// Both driver functions are the same text from 26.0 to 27.x and from 29.0
// to master (33.0.0-373-g00a030403f), and Debian's 26.2.2, 31.0.0 and
// 34.0.0 ship them unpatched; 28.0 only renamed partition_key and added a
// warning.
var (
	// novaGroupsSince: [ironic]partition_key, the peer_list and the
	// conductor_group filter of the node list (commit 2728dec51a "ironic:
	// partition compute services by conductor group", 19.0.0).
	novaGroupsSince = Release{19, 0}
	// novaLowerSince: ring members and the compute's own name lowercased
	// (commit 7145100ee4 "Lowercase ironic driver hash ring and ignore case
	// in cache", 21.0.0, bug 1866380).
	novaLowerSince = Release{21, 0}
	// novaConductorGroupNameSince: the option is [ironic]conductor_group,
	// partition_key its deprecated name (commit cbf400df1d "Deprecate
	// ironic.peer_list", 28.0.0). Same behaviour under either name.
	novaConductorGroupNameSince = Release{28, 0}
	// novaShardSince: [ironic]shard (commit f1a4857d61 "Limit nodes by
	// ironic shard key", 29.0.0; its first landing f5a12f511b was reverted
	// by 9a27434ffc before 28.0.0 was tagged).
	novaShardSince = Release{29, 0}
)

// NovaSettings are the nova.conf options of the nova-computes that change
// Nova's answers and are the same for the whole deployment.
type NovaSettings struct {
	// ServiceDownTime is [DEFAULT]service_down_time in seconds (Nova's
	// default 60).
	ServiceDownTime int
	// ReportInterval is [DEFAULT]report_interval in seconds (default 10).
	ReportInterval int
	// ServicegroupDriver is [DEFAULT]servicegroup_driver (default "db";
	// "" reads as "db").
	ServicegroupDriver string
}

// DefaultNovaSettings are Nova's defaults (nova/conf/service.py,
// nova/conf/servicegroup.py).
func DefaultNovaSettings() NovaSettings {
	return NovaSettings{ServiceDownTime: 60, ReportInterval: 10, ServicegroupDriver: "db"}
}

// LivenessKnown reports whether the database says which services are up:
// only with servicegroup_driver "db" (DbDriver.is_up reads
// services.last_seen_up). Any other driver (Nova's "mc",
// MemcachedDriver: the heartbeat is a memcached key, last_seen_up is not
// written) keeps it where the exporter does not look: a service is then
// known down only when forced down (servicegroup.API.service_is_up
// answers False for forced_down before asking any driver).
func (s NovaSettings) LivenessKnown() bool {
	return s.ServicegroupDriver == "" || s.ServicegroupDriver == "db"
}

// NovaRules are Nova's rules for one Nova release, the backend of Nova's
// cell database, and the settings.
type NovaRules struct {
	release  Release
	backend  Backend
	s        NovaSettings
	downTime int // EffectiveServiceDownTime
}

// NewNova builds Nova's rules of release on backend with settings s (give
// DefaultNovaSettings() for Nova's defaults: zero is a valid setting).
func NewNova(release Release, backend Backend, s NovaSettings) NovaRules {
	return NovaRules{release: release, backend: backend, s: s,
		downTime: EffectiveServiceDownTime(s.ServiceDownTime, s.ReportInterval)}
}

// ServiceDownTime is the service_down_time in effect, in seconds.
func (n NovaRules) ServiceDownTime() int { return n.downTime }

// EffectiveServiceDownTime is the service_down_time Nova uses: when it is
// <= report_interval, servicegroup.API.__init__ overrides it with
// int(report_interval * 2.5) (nova/servicegroup/api.py, commit 94e2cbd6de
// "Make sure report_interval is less than service_down_time", 2013, in
// every release since), before DbDriver.__init__ reads it.
func EffectiveServiceDownTime(serviceDownTime, reportInterval int) int {
	if serviceDownTime <= reportInterval {
		// int() of a float truncates toward zero; 2.5*r is exact for
		// any int a nova.conf holds (well under 2**52).
		return int(float64(reportInterval) * 2.5)
	}
	return serviceDownTime
}

// ServiceIsUp is Nova's servicegroup answer for a service row:
// servicegroup.API.service_is_up returns False for forced_down (commit
// e6c5b4bcf7 "Service group drivers forced_down flag utilization"), else
// DbDriver.is_up: abs(delta_seconds(last_seen_up or created_at,
// utcnow())) <= service_down_time (the abs from commit 7a77dd7496,
// last_seen_up from 594b1b1520 "Don't use 'updated_at' to check service's
// status", Newton). A heartbeat in the future counts as fresh up to
// service_down_time ahead. lastSeenUp zero is NULL; times are naive UTC
// (databases and Python's datetime hold microseconds). A service
// with neither time is not up (Nova would raise).
//
// serviceDownTime and reportInterval are the nova.conf values, the
// override applied here (EffectiveServiceDownTime). last_seen_up is
// written by nova-conductor's clock (nova/db/main/api.py service_update),
// now is the clock of the compute that asks.
func ServiceIsUp(now, lastSeenUp, createdAt time.Time, forcedDown bool, serviceDownTime, reportInterval int) bool {
	if forcedDown {
		return false
	}
	hb := ServiceHeartbeat(lastSeenUp, createdAt)
	if hb.IsZero() {
		return false
	}
	d := now.Sub(hb)
	if d < 0 {
		d = -d
	}
	return d <= time.Duration(EffectiveServiceDownTime(serviceDownTime, reportInterval))*time.Second
}

// ServiceHeartbeat is the time DbDriver.is_up (nova/servicegroup/drivers/
// db.py) judges a service by: last_seen_up (commit 594b1b1520, Newton), or
// created_at for a service that never reported; zero when both are NULL.
func ServiceHeartbeat(lastSeenUp, createdAt time.Time) time.Time {
	if lastSeenUp.IsZero() {
		return createdAt
	}
	return lastSeenUp
}

// ServiceIsUp is ServiceIsUp with these rules' settings. When the
// database does not say (Settings.LivenessKnown false), a service not
// forced down is taken as up: the rings then hold every enabled compute,
// as they do while all are up, and the outputs say its liveness is
// unknown rather than report it.
func (n NovaRules) ServiceIsUp(now, lastSeenUp, createdAt time.Time, forcedDown bool) bool {
	if !n.s.LivenessKnown() {
		return !forcedDown
	}
	return ServiceIsUp(now, lastSeenUp, createdAt, forcedDown, n.s.ServiceDownTime, n.s.ReportInterval)
}

// NovaCompute is one nova-compute's own settings: its nova.conf, in no
// database.
type NovaCompute struct {
	// Host is [DEFAULT]host (CONF.host), exactly as written: a
	// HostDomainOpt from 24.0 (commit 0d84833e96), so ASCII letters,
	// digits, '-', '_' and '.' (or an IP address); services rows, written
	// by anything, may hold any text.
	Host string
	// ConductorGroup is [ironic]conductor_group ([ironic]partition_key
	// before 28.0); nil when unset, which differs from "" (the default
	// conductor group).
	ConductorGroup *string
	// Shard is [ironic]shard (29.0+); "" when unset.
	Shard string
	// PeerList is [ironic]peer_list.
	PeerList []string
}

// ConductorGroupOption names the nova.conf option of the conductor group
// in release n: "partition_key" before 28.0, "conductor_group" from 28.0
// (which still reads partition_key as a deprecated name).
func (n NovaRules) ConductorGroupOption() string {
	if n.release.Before(novaConductorGroupNameSince) {
		return "partition_key"
	}
	return "conductor_group"
}

// UsesShard reports whether the compute's shard is in effect: set, and
// Nova 29.0+ (commit f1a4857d61); older releases have no such option.
func (n NovaRules) UsesShard(c NovaCompute) bool {
	return c.Shard != "" && n.release.AtLeast(novaShardSince)
}

// UsesConductorGroup reports whether the compute's conductor group is in
// effect: set (even to ""), and Nova 19.0+ (commit 2728dec51a).
func (n NovaRules) UsesConductorGroup(c NovaCompute) bool {
	return c.ConductorGroup != nil && n.release.AtLeast(novaGroupsSince)
}

// InvalidPeerList is the error Nova raises (exception.InvalidPeerList from
// _check_peer_list) when the peer list is in effect but empty or without
// the compute's own host: _refresh_hash_ring raises it, so the compute
// fails to start (init_host) or to refresh its nodes.
type InvalidPeerList struct {
	Host  string
	Empty bool // peer_list empty, else Host not in it
}

// Error says what is wrong with the compute's settings.
func (e *InvalidPeerList) Error() string {
	if e.Empty {
		return "[ironic]peer_list is empty while [ironic]conductor_group is set: nova-compute " + e.Host + " raises InvalidPeerList"
	}
	return "[ironic]peer_list does not contain the compute's own host " + e.Host + ": it raises InvalidPeerList"
}

// RingPeers is the set a compute limits its ring to, as
// _refresh_hash_ring computes peer_list: nil (no limit) unless the shard
// is in effect ({CONF.host}, 29.0+, and then the conductor group is not
// looked at for the ring) or the conductor group is ([ironic]peer_list,
// 19.0+, checked by _check_peer_list: err when it is empty or lacks
// CONF.host, compared exactly). The conductor group's peer list needs
// Ironic API 1.46 (Ironic 11.1+), which this assumes.
func (n NovaRules) RingPeers(c NovaCompute) (peers []string, limited bool, err error) {
	if n.UsesShard(c) {
		return []string{c.Host}, true, nil
	}
	if !n.UsesConductorGroup(c) {
		return nil, false, nil
	}
	switch {
	case len(c.PeerList) == 0:
		return nil, true, &InvalidPeerList{Host: c.Host, Empty: true}
	case !slices.Contains(c.PeerList, c.Host):
		return nil, true, &InvalidPeerList{Host: c.Host}
	}
	return slices.Clone(c.PeerList), true, nil
}

// RingName is the name a host has in the ring and in the ring's answer:
// Python's str.lower() of it from 21.0 (commit 7145100ee4, bug 1866380:
// services.add(svc.host.lower()), services.add(CONF.host.lower()), and
// CONF.host.lower() in hash_ring.get_nodes(...)), as stored before.
func (n NovaRules) RingName(host string) string {
	if n.release.AtLeast(novaLowerSince) {
		return PyLower(host)
	}
	return host
}

// SQLEqual is string equality as Nova's cell database compares in
// service_get_all_computes_by_hv_type (nova/db/main/api.py: the join
// services.host = compute_nodes.host, hypervisor_type = 'ironic', binary
// = 'nova-compute'): exact on PostgreSQL and SQLite; on MySQL/MariaDB,
// whose Nova tables are utf8 with a case-insensitive PAD SPACE collation,
// equal up to ASCII case and trailing spaces. (Non-ASCII letters also
// compare by accent-folded weights there; hostnames are ASCII, and this
// does not model that.)
func (n NovaRules) SQLEqual(a, b string) bool { return sqlEqual(n.backend, a, b) }

// SQLKey is a key under which strings SQLEqual calls equal are equal
// (for indexing a join).
func (n NovaRules) SQLKey(s string) string { return sqlKey(n.backend, s) }

func sqlEqual(b Backend, x, y string) bool { return sqlKey(b, x) == sqlKey(b, y) }

func sqlKey(b Backend, s string) string {
	if b != MySQL {
		return s
	}
	s = strings.TrimRight(s, " ")
	if isASCII(s) {
		return strings.ToLower(s)
	}
	return s
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// IronicFilterEqual is how Ironic's node list compares the conductor_group
// a compute asks for with a node's (ironic/db/sqlalchemy/api.py
// _add_nodes_filters: filter_by(conductor_group=...)): the comparison of
// Ironic's database, exact on PostgreSQL and SQLite, case-insensitive on
// MySQL/MariaDB. Ironic's API stores conductor groups lowercased, while a
// compute's conductor_group is used as written: "GroupA" finds no node on
// PostgreSQL. The shard (shard IN (...)) compares alike.
func IronicFilterEqual(ironic Backend, asked, node string) bool {
	return sqlEqual(ironic, asked, node)
}

// NovaSource says why a compute manages a node.
type NovaSource string

// The reasons of NovaManages.
const (
	NovaSourceNone     NovaSource = ""
	NovaSourceInstance NovaSource = "instance" // the node's instance is one of the compute's
	NovaSourceRing     NovaSource = "ring"     // no instance, and the compute owns it on its ring
)

// NovaManages is _refresh_cache's decision for one node the compute's
// node list holds (the list already filtered by conductor group and shard,
// Ironic's children excluded): the node's instance_uuid is among the
// compute's instances (instances.host == CONF.host exactly, deleted = 0:
// InstanceList.get_uuids_by_host, keyed by the stored host, so exact on
// every backend), or the node has no instance and the compute's own ring
// name is the ring's owner of the node's uuid (encoded as UTF-8). A node
// whose instance belongs to another host is not managed, even when the
// ring says so (commit 6047d790a3 "Ironic: allow multiple compute
// services", 14.0, in every release since).
func (n NovaRules) NovaManages(c NovaCompute, nodeInstance string, ownInstance bool, ringOwner string) NovaSource {
	switch {
	case nodeInstance != "" && ownInstance:
		return NovaSourceInstance
	case nodeInstance == "" && ringOwner == n.RingName(c.Host):
		return NovaSourceRing
	}
	return NovaSourceNone
}

// NodeListed reports whether Ironic's node list, as the compute asks for
// it in _refresh_cache, holds a node of conductor group group, shard
// shard and parent parent ("" for none): conductor_group=... when the
// compute's conductor group is in effect, shard=... when its shard is
// (29.0+; needs Ironic API 1.82, Ironic 21.4+, assumed); child nodes
// (parent_node set, Ironic 22.0+) are never listed without
// include_children, which Nova does not ask for
// (ironic/db/sqlalchemy/api.py _add_nodes_filters). ironic is the backend
// of Ironic's database.
func (n NovaRules) NodeListed(c NovaCompute, ironic Backend, group, shard, parent string) bool {
	if parent != "" {
		return false
	}
	if n.UsesConductorGroup(c) && !IronicFilterEqual(ironic, *c.ConductorGroup, group) {
		return false
	}
	if n.UsesShard(c) && !IronicFilterEqual(ironic, c.Shard, shard) {
		return false
	}
	return true
}

// PyLower is Python 3's str.lower(): Unicode lowercase with the full
// mappings Python applies and Go's strings.ToLower does not: U+0130 (İ)
// becomes "i̇" (two code points), and a capital sigma at the end of a
// word becomes final sigma ς (Python's Final_Sigma rule). ASCII is
// lowered byte by byte.
func PyLower(s string) string {
	if isASCII(s) {
		return strings.ToLower(s)
	}
	rs := []rune(s)
	var b strings.Builder
	for i, r := range rs {
		switch {
		case r == 'İ':
			b.WriteString("i\u0307")
		case r == 'Σ' && finalSigma(rs, i):
			b.WriteRune('ς')
		default:
			b.WriteRune(unicode.ToLower(r))
		}
	}
	return b.String()
}

// finalSigma is Python's (and Unicode's) Final_Sigma condition for rs[i]:
// preceded by a cased letter (skipping case-ignorable ones) and not
// followed by one.
func finalSigma(rs []rune, i int) bool {
	j := i - 1
	for j >= 0 && caseIgnorable(rs[j]) {
		j--
	}
	if j < 0 || !cased(rs[j]) {
		return false
	}
	j = i + 1
	for j < len(rs) && caseIgnorable(rs[j]) {
		j++
	}
	return j == len(rs) || !cased(rs[j])
}

func cased(r rune) bool {
	return unicode.IsUpper(r) || unicode.IsLower(r) || unicode.IsTitle(r)
}

func caseIgnorable(r rune) bool {
	return unicode.In(r, unicode.Mn, unicode.Me, unicode.Cf, unicode.Lm, unicode.Sk) ||
		r == '\'' || r == '.' || r == ':' || r == '^' || r == '`' || r == '\u00b7' || r == '\u2019'
}
