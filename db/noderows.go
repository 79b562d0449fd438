package db

import (
	"database/sql"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/dbconn"
)

// readNodes reads every node with query, prepared when binary (see
// pgQueries). probe, the one in the same transaction, sizes the nodes and is
// kept with the rows' problems (DB.lastNodeRead).
func (d *DB) readNodes(s *dbconn.Session, query string, binary bool, probe NodeProbe, w *warner) ([]*Node, error) {
	out, nw, err := d.decodeNodes(s, "reading nodes", query, binary, int(probe.Count))
	if err != nil {
		return nil, err
	}
	if last := d.lastNodeRead.Load(); last != nil {
		out = sameAs(out, last.nodes)
	}
	// Kept for the refreshes whose probe says the nodes did not change: the
	// rows, and so their problems, are the same.
	d.lastNodeRead.Store(&nodeRead{probe: probe, warnings: nw, nodes: out})
	w.addNodes(nw)
	return out, nil
}

// sameAs returns last when nodes are its very nodes (no row changed), so
// that a topology built from last is reused whole (topology.Build); nodes
// otherwise.
func sameAs(nodes, last []*Node) []*Node {
	if slices.Equal(nodes, last) {
		return last
	}
	return nodes
}

// decodeNodes reads the nodes query returns (given args), as one step,
// into a slice of capacity size, and tells their problems.
func (d *DB) decodeNodes(s *dbconn.Session, step, query string, binary bool, size int, args ...any) ([]*Node, []nodeWarning, error) {
	dec := newNodeDecoder(size)
	if last := d.lastNodeRead.Load(); last != nil {
		dec.prev = last.nodes
	}
	// Scan targets, reused across rows. Text columns are scanned as
	// sql.RawBytes (the driver's buffer, no copy).
	var r nodeRow
	targets := r.targets(binary)
	err := s.Rows(step, query, binary, func(rows *sql.Rows) error {
		if err := rows.Scan(targets...); err != nil {
			return err
		}
		dec.add(&r)
		return nil
	}, args...)
	if err != nil {
		return nil, nil, err
	}
	return dec.out, dec.warnings(), nil
}

// The text columns of a node row, in nodeRow.text.
const (
	colUUID = iota
	colName
	colDriver
	colGroup
	colReservation
	colInstance
	colPower
	colProvision
	colResourceClass
	colTarget
	colOwner
	colLessee
	colShard
	colParent
	colFault
	colHealth
	nodeTextCols
)

// nodeTextNames name the columns of nodeRow.text, for warnings.
var nodeTextNames = [nodeTextCols]string{"uuid", "name", "driver", "conductor_group", "reservation",
	"instance_uuid", "power_state", "provision_state", "resource_class", "target_provision_state",
	"owner", "lessee", "shard", "parent_node", "fault", "health"}

// targets are the scan targets of r, one per column of nodeColumns in
// their order; with binary the timestamps are timestamp_send's. It panics
// on a column without a field in nodeRow (TestNodeRowTargets).
func (r *nodeRow) targets(binary bool) []any {
	out := make([]any, 0, len(nodeColumns))
	for _, c := range nodeColumns {
		var t any
		switch c.name {
		case "id":
			t = &r.id
		case "maintenance":
			t = &r.maintenance
		case "conductor_affinity":
			t = &r.affinity
		case "created_at", "updated_at":
			v := &r.created
			if c.name == "updated_at" {
				v = &r.updated
			}
			t = v
			if binary {
				t = (*pgBinaryTime)(v)
			}
		default:
			if i := slices.Index(nodeTextNames[:], c.name); i >= 0 && c.kind == columnText {
				t = &r.text[i]
			}
		}
		if t == nil {
			panic("db: nodeRow has no field for nodes." + c.name)
		}
		out = append(out, t)
	}
	return out
}

// nodeRow is one row of the nodes query as the driver hands it over. The
// text columns may be views of the driver's buffer, valid until its next
// row; nil is NULL.
type nodeRow struct {
	id               int64
	text             [nodeTextCols]sql.RawBytes
	maintenance      anyBool
	created, updated dbconn.Time
	affinity         anyInt
}

// nodeDecoder turns node rows into Nodes, the values of low-cardinality
// columns shared. It tallies the rows' problems for warnings.
type nodeDecoder struct {
	out []*Node
	in  dbconn.Interner
	// prev are the nodes of the last read, ordered by id, and next the
	// index in prev of the next row's id or above: a row of a node read
	// before is that *Node when no column changed, and keeps the strings
	// that did not change otherwise, so that a refresh holds new values only
	// for the nodes that changed (peak RSS within twice the live heap).
	prev                       []*Node
	next                       int
	badTimes                   int
	firstBad                   string
	nulls, notUTF8, outOfRange rowTally
	badValue                   rowTally
}

// newNodeDecoder returns a decoder sized for n nodes.
func newNodeDecoder(n int) *nodeDecoder {
	return &nodeDecoder{out: make([]*Node, 0, n), in: dbconn.Interner{}}
}

// add decodes one row; r's text may be rewritten (invalid UTF-8 replaced).
func (dec *nodeDecoder) add(r *nodeRow) {
	if r.created.Bad != "" || r.updated.Bad != "" {
		if dec.badTimes++; dec.badTimes == 1 {
			dec.firstBad = fmt.Sprintf("node %s (id %d): created_at %s, updated_at %s",
				r.text[colUUID], r.id, r.created.Describe(), r.updated.Describe())
		}
	}
	if r.text[colGroup] == nil {
		// Ironic's model: conductor_group NOT NULL, default ''.
		dec.nulls.add(string(r.text[colUUID]), r.id, "conductor_group")
	}
	if r.maintenance.Bad != "" {
		dec.badValue.add(string(r.text[colUUID]), r.id, "maintenance "+r.maintenance.Bad)
	}
	if r.affinity.Bad != "" {
		dec.badValue.add(string(r.text[colUUID]), r.id, "conductor_affinity "+r.affinity.Bad)
	}
	if r.affinity.Int64 != int64(int32(r.affinity.Int64)) {
		dec.outOfRange.add(string(r.text[colUUID]), r.id, "conductor_affinity")
	}
	for i := range r.text {
		if v := r.text[i]; v != nil && !utf8.Valid(v) {
			r.text[i] = sql.RawBytes(strings.ToValidUTF8(string(v), "\uFFFD"))
			dec.notUTF8.add(string(r.text[colUUID]), r.id, nodeTextNames[i])
		}
	}
	t := &r.text
	old := &unread
	for dec.next < len(dec.prev) && dec.prev[dec.next].ID < r.id {
		dec.next++
	}
	if dec.next < len(dec.prev) && dec.prev[dec.next].ID == r.id {
		old = dec.prev[dec.next]
	}
	uuid := old.UUID
	if uuid != string(t[colUUID]) {
		uuid = string(t[colUUID]) // NULL (never in practice) reads as ""
	}
	n := Node{
		ID:                   r.id,
		UUID:                 uuid,
		Name:                 ptrOf(t[colName], old.Name),
		Driver:               dec.in.Str(t[colDriver]),
		ConductorGroup:       dec.in.Str(t[colGroup]),
		Reservation:          dec.in.Keep(t[colReservation], old.Reservation),
		InstanceUUID:         ptrOf(t[colInstance], old.InstanceUUID),
		PowerState:           dec.in.Keep(t[colPower], old.PowerState),
		ProvisionState:       dec.in.Keep(t[colProvision], old.ProvisionState),
		Maintenance:          r.maintenance.V,
		ResourceClass:        dec.in.Keep(t[colResourceClass], old.ResourceClass),
		CreatedAt:            StampOf(r.created.T),
		UpdatedAt:            StampOf(r.updated.T),
		TargetProvisionState: dec.in.Keep(t[colTarget], old.TargetProvisionState),
		Owner:                dec.in.Keep(t[colOwner], old.Owner),
		Lessee:               dec.in.Keep(t[colLessee], old.Lessee),
		Shard:                dec.in.Keep(t[colShard], old.Shard),
		ParentNode:           ptrOf(t[colParent], old.ParentNode),
		Fault:                dec.in.Keep(t[colFault], old.Fault),
		Health:               dec.in.Keep(t[colHealth], old.Health),
		HasConductorAffinity: r.affinity.Valid,
		ConductorAffinity:    affinity(r.affinity),
	}
	if old != &unread && n == *old {
		dec.out = append(dec.out, old) // every pointer is old's: the same values
		return
	}
	p := new(Node) // not &n: n would then be allocated for every row
	*p = n
	dec.out = append(dec.out, p)
}

// unread is the previous node of a row that no read had.
var unread Node

// affinity is conductor_affinity as Node keeps it: 0 for NULL, -1 for a
// value beyond int32 (add counts it for warnings).
func affinity(v anyInt) int32 {
	if v.Int64 != int64(int32(v.Int64)) {
		return -1
	}
	return int32(v.Int64)
}

// warnings describes the problems of the rows added.
func (dec *nodeDecoder) warnings() []nodeWarning {
	var nw []nodeWarning
	if dec.badTimes > 0 {
		nw = append(nw, nodeWarning{ReasonBadTimestamp, dec.badTimes, fmt.Sprintf(
			"%d node(s) with a created_at or updated_at that is not a timestamp, read as NULL; first: %s", dec.badTimes, dec.firstBad)})
	}
	if dec.nulls.n > 0 {
		nw = append(nw, nodeWarning{ReasonNull, dec.nulls.n, fmt.Sprintf(
			"%d node(s) with conductor_group NULL, read as the default group \"\"; first: %s", dec.nulls.n, dec.nulls.first)})
	}
	if dec.notUTF8.n > 0 {
		nw = append(nw, nodeWarning{ReasonNotUTF8, dec.notUTF8.n, fmt.Sprintf(
			"%d node(s) with text that is not UTF-8, invalid bytes read as U+FFFD; first: %s", dec.notUTF8.n, dec.notUTF8.first)})
	}
	if dec.outOfRange.n > 0 {
		nw = append(nw, nodeWarning{ReasonOutOfRange, dec.outOfRange.n, fmt.Sprintf(
			"%d node(s) with a conductor_affinity beyond 32 bits (Ironic's Integer column), read as -1, no conductor; first: %s",
			dec.outOfRange.n, dec.outOfRange.first)})
	}
	if dec.badValue.n > 0 {
		nw = append(nw, nodeWarning{ReasonBadValue, dec.badValue.n, fmt.Sprintf(
			"%d node(s) with a maintenance that is no boolean (read as false) or a conductor_affinity that is no integer (read as NULL); first: %s",
			dec.badValue.n, dec.badValue.first)})
	}
	return nw
}

// nodeRead is what DB.lastNodeRead keeps of a node read.
type nodeRead struct {
	probe    NodeProbe
	warnings []nodeWarning
	// nodes are the nodes it returned (those the cache holds), which the
	// next read reuses where a row did not change, and their strings where
	// a column did not (nodeDecoder.prev, sameAs).
	nodes []*Node
}

// nodeWarning is one kind of problem of the nodes of a read.
type nodeWarning struct {
	reason string
	rows   int
	line   string
}
