package rules

import (
	"cmp"
	"fmt"
	"strings"
	"time"

	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/ring"
)

// Backend is the kind of database Ironic runs on.
type Backend int

// The backends Ironic supports.
const (
	PostgreSQL Backend = iota + 1
	MySQL
	SQLite
)

// String names the backend as the exporter's logs and labels do.
func (b Backend) String() string {
	switch b {
	case PostgreSQL:
		return "postgresql"
	case MySQL:
		return "mysql"
	case SQLite:
		return "sqlite"
	}
	return "unknown"
}

// CompareBool orders booleans as every backend stores and sorts them,
// false (0) before true (1): how Ironic's API sorts a boolean column
// (sort_key=maintenance, online) on any database, and the order of Nova's
// groups of computes.
func CompareBool(a, b bool) int {
	switch {
	case a == b:
		return 0
	case a:
		return 1
	}
	return -1
}

// IronicUsesSQLite is how Ironic itself decides that it runs on SQLite:
// the word "sqlite" anywhere in [database]connection, case-insensitively
// (ironic/common/utils.py is_ironic_using_sqlite, commit 0099d1812
// "Don't actually heartbeat with sqlite", 22.1.0). So a PostgreSQL database
// or password containing "sqlite" turns Ironic's SQLite rules on.
func IronicUsesSQLite(connection string) bool {
	return strings.Contains(strings.ToLower(connection), "sqlite")
}

// Settings are the ironic.conf options that change Ironic's answers.
type Settings struct {
	// HeartbeatTimeout is [conductor]heartbeat_timeout (Ironic's default
	// 60s); zero and negative values are Ironic's timeout <= 0.
	HeartbeatTimeout time.Duration
	// PartitionExponent is [DEFAULT]hash_partition_exponent (default 5).
	PartitionExponent int
	// Algorithm is [DEFAULT]hash_ring_algorithm (default md5).
	Algorithm ring.Algorithm
	// PinReleaseVersion is [DEFAULT]pin_release_version ("" when unset).
	PinReleaseVersion string
	// HashDistributionReplicas is [DEFAULT]hash_distribution_replicas
	// (1 when unset; the option exists up to 12.1).
	HashDistributionReplicas int
	// Connection is Ironic's [database]connection when known (from its
	// ironic.conf); it decides IronicUsesSQLite. When empty, the backend the
	// exporter reads decides.
	Connection string
	// MaxConcurrentDeploy and MaxConcurrentClean are [conductor]
	// max_concurrent_deploy and max_concurrent_clean (0: Ironic's defaults,
	// 250 and 50); MaxConcurrentPerConductorGroup is [conductor]
	// max_concurrent_per_conductor_group (ConcurrencyLimits).
	MaxConcurrentDeploy, MaxConcurrentClean int
	MaxConcurrentPerConductorGroup          bool
	// GracefulShutdownTimeout is [DEFAULT]graceful_shutdown_timeout
	// (oslo.service): how long a stopping conductor waits for its workers
	// before it exits. Zero takes the default, 60s; negative is the file's
	// 0, an endless wait.
	GracefulShutdownTimeout time.Duration
	// PeriodicMaxWorkers is [conductor]periodic_max_workers (default 8):
	// the nodes one conductor takes over per sync_local_state_interval.
	PeriodicMaxWorkers int
	// SyncLocalStateInterval is [conductor]sync_local_state_interval
	// (default 180s), the spacing of _sync_local_state's takeovers.
	SyncLocalStateInterval time.Duration
	// ConductorCleanupInterval and ConductorCleanupTimeout are [conductor]
	// conductor_cleanup_interval (default 1 day; negative is the file's 0,
	// the cleanup disabled) and conductor_cleanup_timeout (default two
	// weeks): when Ironic deletes the rows of conductors gone for good
	// (RowDeletion, 32.0+).
	ConductorCleanupInterval, ConductorCleanupTimeout time.Duration
}

// Rules are Ironic's rules for one release, backend and settings.
type Rules struct {
	release Release
	backend Backend
	sqlite  bool // Ironic believes it runs on SQLite
	s       Settings
}

// Release points that rules share with changes; the doc of each rule cites
// its commit, as it does for the release points written in the rule itself.
var (
	algorithmSince   = Release{15, 2} // commit 9189b4bb2: EffectiveAlgorithm
	sqliteSince      = Release{22, 1} // commit 0099d1812: RingMember, Heartbeats, RingsCachedForProcess
	onlineAliveSince = Release{25, 0} // commit 161374f76: Alive
)

// changes are the release points where a rule changed; Detect warns when a
// detected range straddles one of them.
var changes = []struct {
	since Release
	what  string
}{
	{Release{12, 2}, "hash_distribution_replicas (removed)"},
	{algorithmSince, "hash_ring_algorithm (honoured)"},
	{Release{16, 1}, "pin_release_version's ungrouped rings (removed)"},
	{concurrencySince, "the concurrency limits of deploys and cleanings"},
	{sqliteSince, "SQLite heartbeats and ring membership"},
	{hostPortSince, "HOST:PORT conductor names, locks kept as HOST"},
	{drainHeartbeatsSince, "the drain on stop (online=false while heartbeating)"},
	{drainKeepaliveHaltedSince, "the drain's keepalive halted at unregister"},
	{onlineAliveSince, "the API's alive (online and a fresh heartbeat)"},
	{concurrencyPerGroupSince, "max_concurrent_per_conductor_group"},
	{conductorCleanupSince, "the deletion of stale conductor rows"},
	// (not the root's version headers (26.1), alone not worth a warning,
	// nor host:port names (24.0) or the NoValidHost reason (24.1), which
	// the API answers alike on every release: api/doc.go)
}

// New builds the rules of release on backend with settings s. Zero
// settings take Ironic's defaults (exponent 5, md5, one replica, a 60s
// graceful shutdown, 8 periodic workers every 180s), except
// HeartbeatTimeout: Ironic accepts 0 (and rings then ignore heartbeats from
// 22.1), so the caller gives it (Ironic's default is 60s).
func New(release Release, backend Backend, s Settings) Rules {
	s.PartitionExponent = cmp.Or(s.PartitionExponent, 5)
	s.Algorithm = cmp.Or(s.Algorithm, ring.MD5)
	s.HashDistributionReplicas = cmp.Or(s.HashDistributionReplicas, 1)
	s.GracefulShutdownTimeout = cmp.Or(s.GracefulShutdownTimeout, 60*time.Second)
	s.PeriodicMaxWorkers = cmp.Or(s.PeriodicMaxWorkers, 8)
	s.SyncLocalStateInterval = cmp.Or(s.SyncLocalStateInterval, 180*time.Second)
	s.ConductorCleanupInterval = cmp.Or(s.ConductorCleanupInterval, defaultCleanupInterval)
	s.ConductorCleanupTimeout = cmp.Or(s.ConductorCleanupTimeout, defaultCleanupTimeout)
	sqlite := backend == SQLite
	if s.Connection != "" {
		sqlite = IronicUsesSQLite(s.Connection)
	}
	return Rules{release: release, backend: backend, sqlite: sqlite, s: s}
}

// Release is the release the rules are of.
func (r Rules) Release() Release { return r.release }

// Backend is the database kind the rules were built for.
func (r Rules) Backend() Backend { return r.backend }

// Settings are the settings in effect (defaults filled in).
func (r Rules) Settings() Settings { return r.s }

// IronicUsesSQLite reports whether Ironic applies its SQLite rules (see the
// function of that name).
func (r Rules) IronicUsesSQLite() bool { return r.sqlite }

// fresh mirrors oslo_utils timeutils.is_older_than(updated_at, timeout)
// negated: the heartbeat is at most heartbeat_timeout old (a NULL heartbeat
// is never fresh).
func (r Rules) fresh(updatedAt, now time.Time) bool {
	return !updatedAt.IsZero() && now.Sub(updatedAt) <= r.s.HeartbeatTimeout
}

// Alive is the API's `alive` of a conductor
// (ironic/api/controllers/v1/conductor.py convert_with_links):
// 12.0-24.x: a heartbeat not older than heartbeat_timeout, online ignored;
// 25.0+ (commit 161374f76 "Expose conductor online boolean for accurate
// alive", merged 2024-04): online and a fresh heartbeat. The same on every
// backend: on SQLite 22.1+, where nothing heartbeats, conductors read as not
// alive heartbeat_timeout after they registered, although they serve nodes.
func (r Rules) Alive(online bool, updatedAt, now time.Time) bool {
	if r.release.AtLeast(onlineAliveSince) {
		return online && r.fresh(updatedAt, now)
	}
	return r.fresh(updatedAt, now)
}

// RingMember says whether Ironic puts the conductor in its hash rings
// (ironic/db/sqlalchemy/api.py _filter_active_conductors, used by
// get_active_hardware_type_dict): 11.1-22.0 on every backend, online and
// updated_at >= now - heartbeat_timeout (also for a timeout <= 0); 22.1+
// (commit 0099d1812 "Don't actually heartbeat with sqlite"): the same,
// except on SQLite or with heartbeat_timeout <= 0, where online alone
// decides.
func (r Rules) RingMember(online bool, updatedAt, now time.Time) bool {
	if r.release.AtLeast(sqliteSince) && (r.sqlite || r.s.HeartbeatTimeout <= 0) {
		return online
	}
	return online && r.fresh(updatedAt, now)
}

// Heartbeats reports whether conductors heartbeat (update updated_at every
// heartbeat_interval): always, except on SQLite from 22.1
// (ironic/conductor/base_manager.py _conductor_service_record_keepalive
// returns at once, commit 0099d1812): updated_at changes only when a
// conductor registers or unregisters.
func (r Rules) Heartbeats() bool {
	return !r.sqlite || !r.release.AtLeast(sqliteSince)
}

// State is a conductor's state as the exporter names it.
type State string

// The states of ironic_conductor_state, named by what the database can
// tell (the values are a metric's label: they stay). What each means on
// each release is StateMeaning's.
const (
	// StateAlive: online, fresh heartbeat (or online where nothing
	// heartbeats).
	StateAlive State = "alive"
	// StateDraining: online=false with a heartbeat not older than
	// heartbeat_timeout: the conductor unregistered less than that ago.
	StateDraining State = "draining"
	// StateStopped: online=false, stale heartbeat: it unregistered and
	// stopped.
	StateStopped State = "stopped"
	// StateDead: online=true with a stale heartbeat: crashed, hung, or
	// stopped without unregistering (SIGUSR1 then SIGTERM, and on 32.0+ a
	// SIGUSR1 stop): the database cannot tell these apart.
	StateDead State = "dead"
)

// drainHeartbeatsSince and drainKeepaliveHaltedSince bound the releases
// whose keepalive goes on writing online=false while a stopping conductor
// finishes its work: 23.1 (commit 3f9151163 "Introduce conductor touch
// while offline") to 31.x; 32.0 (commit bbf57b1c2) halts the keepalive in
// del_host right after unregistering.
var (
	drainHeartbeatsSince      = Release{23, 1}
	drainKeepaliveHaltedSince = Release{32, 0}
)

// DrainHeartbeats reports whether a stopping conductor keeps heartbeating
// (online=false) until its work ends: 23.1-31.x. Elsewhere its heartbeat
// stops when it unregisters, so draining lasts heartbeat_timeout whether
// or not the process still runs.
func (r Rules) DrainHeartbeats() bool {
	return r.release.AtLeast(drainHeartbeatsSince) && r.release.Before(drainKeepaliveHaltedSince)
}

// StateMeaning says in words what a state means under these rules: what
// the database shows and what the conductor may be doing, as the release
// behaves (base_manager.py del_host and the keepalive).
func (r Rules) StateMeaning(s State) string {
	switch s {
	case StateAlive:
		return "online and heartbeating: serves its nodes"
	case StateDraining:
		switch {
		case r.DrainHeartbeats():
			return "unregistered and still heartbeating: finishing its work, keeping its locks (SIGUSR2 drain or SIGTERM); out of the rings"
		case r.release.AtLeast(drainKeepaliveHaltedSince):
			return "unregistered less than heartbeat_timeout ago: may still finish its work, holding its locks; after heartbeat_timeout peers break them and fail its deploys and cleanings"
		case r.release.AtLeast(Release{22, 0}):
			return "unregistered less than heartbeat_timeout ago (SIGTERM): it may still finish its work, holding its locks, for up to graceful_shutdown_timeout, or have exited already"
		}
		return "unregistered less than heartbeat_timeout ago (SIGTERM): its locks are already cleared, its workers may go on for up to graceful_shutdown_timeout, or it has exited already"
	case StateStopped:
		return "unregistered and no longer heartbeating: stopped"
	case StateDead:
		return "online with a stale heartbeat: crashed, hung, or stopped without unregistering (SIGUSR1): the database cannot tell which"
	}
	return ""
}

// States are the states a conductor can be in under these rules, in the
// order the metrics list them. Where nothing heartbeats (SQLite 22.1+) the
// heartbeat tells nothing: alive and stopped only.
func (r Rules) States() []State {
	if !r.Heartbeats() {
		return []State{StateAlive, StateStopped}
	}
	return []State{StateAlive, StateDraining, StateStopped, StateDead}
}

// State is the conductor's state. Draining lasts, on 23.1-31.x, while a
// stopping conductor finishes its work (DrainHeartbeats); on other
// releases exactly heartbeat_timeout after it unregistered, whatever the
// process does (StateMeaning).
func (r Rules) State(online bool, updatedAt, now time.Time) State {
	if !r.Heartbeats() {
		if online {
			return StateAlive
		}
		return StateStopped
	}
	fresh := r.fresh(updatedAt, now)
	switch {
	case online && fresh:
		return StateAlive
	case online:
		return StateDead
	case fresh:
		return StateDraining
	}
	return StateStopped
}

// UngroupedRings reports whether Ironic's rings ignore conductor groups:
// 11.1-16.0 while pin_release_version pins an RPC API older than 1.47
// (ironic/conductor/rpcapi.py ConductorAPI.__init__:
// HashRingManager(use_groups=self.client.can_send_version('1.47')), from
// commit 26fd55f7d, 11.1.0; pins of 11.0 and older are RPC 1.44 or less);
// 16.1 removed it (commit f5589de02).
func (r Rules) UngroupedRings() bool {
	if r.s.PinReleaseVersion == "" || r.release.AtLeast(Release{16, 1}) {
		return false
	}
	pin, err := ParseRelease(r.s.PinReleaseVersion)
	return err == nil && pin.Before(oldestGrouped)
}

// RingKey is the key of the ring that serves a node of hardware type
// (driver) hardwareType in conductor group group, and that a conductor
// registering hardwareType in group joins: "%s:%s" % (group, hardware_type)
// (ironic/common/hash_ring.py _get_ring and
// ironic/db/sqlalchemy/api.py get_active_hardware_type_dict, commit
// 26fd55f7d, 11.1.0), or the hardware type alone for UngroupedRings.
func (r Rules) RingKey(group, hardwareType string) string {
	if r.UngroupedRings() {
		return hardwareType
	}
	return group + ":" + hardwareType
}

// EffectiveAlgorithm is the hash the rings use: hash_ring_algorithm from
// 15.2 (commit 9189b4bb2 "Add an option to choose the hash ring
// algorithm"), md5 before, whatever the setting says.
func (r Rules) EffectiveAlgorithm() ring.Algorithm {
	if r.release.Before(algorithmSince) {
		return ring.MD5
	}
	return r.s.Algorithm
}

// PartitionExponent is hash_partition_exponent (2**exponent partitions per
// host, ironic/common/hash_ring.py _load_hash_rings; no release changed it).
func (r Rules) PartitionExponent() int { return r.s.PartitionExponent }

// MySQLUnicodeCollation reports whether, on MySQL/MariaDB, Ironic's tables
// compare text with utf8mb4_unicode_ci (UCA weights: "_" before "-" before
// ":" before "." before digits before letters, case-insensitive) rather than
// utf8(mb3)_general_ci (case-folded code points): 35.0+, whose migration
// converts the tables (commit abf2e577a). It changes the order of
// ?sort_key=hostname and the like; equality stays case-insensitive.
func (r Rules) MySQLUnicodeCollation() bool {
	return r.backend == MySQL && r.release.AtLeast(Release{35, 0})
}

// RootVersionHeaders reports whether GET / negotiates the microversion and
// sends the Minimum/Maximum/Version headers as GET /v1 does
// (ironic/api/controllers/root.py RootController.index calls
// V1.add_version_attributes(), 26.1+, commit b19507d64 "Add microversion
// headers to root ('/') endpoint"); older releases send none there.
func (r Rules) RootVersionHeaders() bool { return r.release.AtLeast(Release{26, 1}) }

// SecureRBACDefaults reports whether Ironic release r enforces scope and
// only the new policy defaults unless ironic.conf says otherwise: from 24.0
// (commit 435932355 "Disable legacy RBAC policy by default.":
// opts.set_defaults(..., enforce_scope=True, enforce_new_defaults=True) in
// ironic/common/policy.py; 3f6507d85, 26.1, drops the override because
// oslo.policy 4.4 defaults to the same, with no change in behaviour). The
// zero (unknown) release is the newest's. A Release method, not a Rules one:
// the policy is needed before the first topology is read.
func (r Release) SecureRBACDefaults() bool { return r.IsZero() || r.AtLeast(Release{24, 0}) }

// ConductorsVersionMessage is the message of the 404 that GET
// /v1/conductors and /v1/conductors/{hostname} answer below microversion
// 1.49 when it is not pecan's "Resource could not be found.": from 38.0
// ironic/api/validation api_version answers "The API is not supported for
// this version" (commit 4393baf91 "api: Add schema for conductors API");
// "" before.
func (r Rules) ConductorsVersionMessage() string {
	if r.release.AtLeast(Release{38, 0}) {
		return "The API is not supported for this version"
	}
	return ""
}

// RingsCachedForProcess reports whether Ironic keeps the rings it built
// first for the life of the process, rebuilding them only when a ring is
// missing (ironic/common/hash_ring.py HashRingManager.ring skips
// hash_ring_reset_interval on SQLite; commit 0099d1812, 22.1.0). The
// exporter's rings then match a process started after the last change of
// the fleet.
func (r Rules) RingsCachedForProcess() bool {
	return r.sqlite && r.release.AtLeast(sqliteSince)
}

// Exact lists why the exporter's answers may not be Ironic's under these
// rules (empty when they are exact): replicas above 1 before 12.2 (commit
// e9540f5d2 removed the option; get_conductor_for pops an arbitrary member
// of a set of replicas), rings cached for the process life on SQLite.
func (r Rules) Exact() []string {
	var c []string
	if r.s.HashDistributionReplicas > 1 && r.release.Before(Release{12, 2}) {
		c = append(c, fmt.Sprintf("hash_distribution_replicas = %d: Ironic %s picks an arbitrary one of the replicas (a Python set's pop); the exporter names the first",
			r.s.HashDistributionReplicas, r.release))
	}
	if r.RingsCachedForProcess() {
		c = append(c, "Ironic on SQLite keeps the rings it built at start: after a conductor joins or leaves, a running Ironic may still map nodes as before until restarted")
	}
	return c
}
