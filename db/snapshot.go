// Package db reads a consistent, read-only snapshot of the Ironic tables the
// exporter needs (conductors, conductor_hardware_interfaces and nodes) through
// dbconn's sessions, and turns their rows into plain values. It knows nothing
// about Prometheus, HTTP or the hash ring. Timestamps are naive UTC in every
// backend, exactly as Ironic stores them, returned as time.Time in time.UTC.
package db

import "github.com/ironic-conductor-exporter/ironic-conductor-exporter/rules"

import "time"

// Snapshot is everything one refresh reads, taken in a single read-only
// transaction so that conductors, their hardware types and nodes agree.
type Snapshot struct {
	// Backend is the kind of database the snapshot came from.
	Backend rules.Backend
	// Conductors are the rows of the conductors table, ordered by id.
	Conductors []Conductor
	// Nodes are the rows of the nodes table, ordered by id; none when
	// NodeRead is NodeReadSkipped. A read shares the *Node of each row that
	// did not change since the last read (after a delta read, every row not
	// read again): a refresh holds new values only for the nodes that changed.
	Nodes []*Node
	// NodeProbe is what SQLNodeProbe said of the nodes table, in the same
	// transaction.
	NodeProbe NodeProbe
	// NodeRead says how the nodes were read (after a delta, Nodes are
	// complete all the same).
	NodeRead NodeRead
	// Warnings describe rows that could not be fully decoded and were kept
	// with the undecodable value left empty (e.g. a conductor whose drivers
	// column is not JSON: Drivers nil). One human-readable line each; they
	// contain hostnames, never database credentials.
	Warnings []string
	// SchemaRevision is alembic_version.version_num, the schema's alembic
	// revision ("" when the database has no alembic_version table).
	SchemaRevision string
	// WarningCounts count the rows behind Warnings by table and reason
	// (ReasonBadJSON, ...), sorted; nil when there are none.
	WarningCounts []WarningCount
}

// WarningCount is how many rows of a table had one kind of problem.
type WarningCount struct {
	// Table is conductors, conductor_hardware_interfaces or nodes.
	Table string
	// Reason is one of the Reason constants.
	Reason string
	// Rows is the number of rows.
	Rows int
}

// Conductor is one row of the conductors table with the hardware types it
// registered in conductor_hardware_interfaces.
type Conductor struct {
	// ID is the primary key; Ironic's default sort order for conductors.
	ID int64
	// Hostname is the conductor's [DEFAULT]host, exactly as stored.
	Hostname string
	// ConductorGroup is the group, exactly as stored ("" is the default group).
	ConductorGroup string
	// Online is the online column; NULL reads as false, as in Ironic's
	// online.is_(True) filter.
	Online bool
	// CreatedAt is the row's creation time (UTC); zero when NULL.
	CreatedAt time.Time
	// UpdatedAt is the last heartbeat (UTC); zero when NULL.
	UpdatedAt time.Time
	// Drivers is the decoded JSON list in the drivers column (what Ironic's
	// API shows as "drivers"); nil when NULL.
	Drivers []string
	// HardwareTypes are the distinct hardware types of this conductor in
	// conductor_hardware_interfaces, sorted.
	HardwareTypes []string
	// Version is the Conductor object version the conductor wrote
	// (conductors.version, e.g. "1.3"); "" when NULL.
	Version string
}

// Node is one row of the nodes table, limited to the columns the exporter
// uses. Nullable text columns are *string: nil is SQL NULL.
//
// A Node, and what its pointers point to, is frozen once a read returned it:
// a read shares an unchanged row's *Node with the read before, and
// topology.Build reuses the results of the very same nodes (the slice's
// identity is its key), so a write would change what earlier snapshots and
// topologies say. TestNodesAreFrozen (cmd/ironic_conductor_exporter) checks
// that no consumer, wired as in production, writes one.
type Node struct {
	// ID is the primary key; Ironic's default sort order for nodes.
	ID int64
	// UUID is the node's UUID, the key hashed onto the ring.
	UUID string
	// Name is the node's logical name, or nil.
	Name *string
	// Driver is the node's hardware type.
	Driver string
	// ConductorGroup is the node's conductor group, exactly as stored.
	ConductorGroup string
	// Reservation is the hostname holding the node's lock, or nil.
	Reservation *string
	// InstanceUUID is the instance deployed on the node, or nil.
	InstanceUUID *string
	// PowerState is the current power state, or nil.
	PowerState *string
	// ProvisionState is the current provision state, or nil.
	ProvisionState *string
	// TargetProvisionState is the state the node is moving to, or nil.
	TargetProvisionState *string
	// Maintenance is the maintenance flag.
	Maintenance bool
	// HasConductorAffinity says whether conductor_affinity is set (not
	// NULL); ConductorAffinity is then the conductors.id of the conductor
	// that last prepared the node's boot environment (deploy, takeover: the
	// one holding it; Ironic sets it in ironic/conductor/deployments.py and
	// _do_takeover in ironic/conductor/manager.py). An int32, as Ironic's
	// Integer column is on PostgreSQL and MySQL (a value beyond it, which
	// only SQLite could store, reads as -1, no conductor's id), beside the
	// flags: 16 bytes a node less than a pointer to an int64 (the memory row
	// with the Nova side in docs/performance.md's contract, 800 B/node at
	// 100k nodes; Stamp says the rest).
	HasConductorAffinity bool
	ConductorAffinity    int32
	// ResourceClass is the node's resource class, or nil.
	ResourceClass *string
	// Owner is the project owning the node (nodes.owner), or nil; also nil
	// on schemas without the column.
	Owner *string
	// Lessee is the project leasing the node (nodes.lessee), or nil.
	Lessee *string
	// Shard is the node's shard (nodes.shard), or nil; also nil on
	// schemas without the column (before Ironic 21.4).
	Shard *string
	// ParentNode is the uuid of the node's parent (nodes.parent_node), or
	// nil; also nil on schemas without the column (before Ironic 22.0).
	ParentNode *string
	// Fault is why Ironic itself put the node in maintenance (nodes.fault,
	// since 11.0, commit 6b44f269c: "power failure", "clean failure",
	// "rescue abort failure", "service failure" from 23.0), or nil.
	Fault *string
	// Health is the hardware health the BMC reported at the last power
	// sync (nodes.health, since 34.0, commit f61755d81: "OK", "Warning",
	// "Critical"), or nil; also nil on schemas without the column.
	Health *string
	// CreatedAt is the row's creation time; zero when NULL.
	CreatedAt Stamp
	// UpdatedAt is the row's last update; zero when NULL.
	UpdatedAt Stamp
}

// Text is the text of a nullable column as read (*p), "" for NULL (nil).
func Text(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}
