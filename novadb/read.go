package novadb

import (
	"database/sql"
	"fmt"

	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/dbconn"
	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/nova"
	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/rules"
)

// readServices runs SQLServices. A NULL disabled reads as true (the ring's
// filter disabled = false excludes it), a NULL forced_down as false. An
// odd value (SQLite keeps any value in any column: disabled 'maybe',
// version 'abc') is a warning about its row, never a failed read: it reads
// as NULL does, but an odd disabled reads as true (SQLite's disabled = 0
// is false for it too).
func readServices(s *dbconn.Session, odd *oddValues) ([]nova.Service, error) {
	var out []nova.Service
	err := s.Rows("reading services", SQLServices, false, func(rows *sql.Rows) error {
		var (
			host, binary         sql.NullString
			disabled, forcedDown dbconn.Bool
			created, lastSeen    dbconn.Time
			version              dbconn.Int
			sv                   nova.Service
		)
		if err := rows.Scan(&sv.ID, &host, &binary, &disabled, &forcedDown, &created, &lastSeen, &version); err != nil {
			return err
		}
		sv.Host, sv.Binary = host.String, binary.String
		sv.Disabled = !disabled.Valid || disabled.V
		sv.ForcedDown = forcedDown.Valid && forcedDown.V
		sv.CreatedAt, sv.LastSeenUp, sv.Version = created.T, lastSeen.T, int(version.Int64)
		for _, b := range []struct{ col, bad string }{{"disabled", disabled.Bad}, {"forced_down", forcedDown.Bad},
			{"created_at", created.Bad}, {"updated_at or last_seen_up", lastSeen.Bad}, {"version", version.Bad}} {
			if b.bad != "" {
				odd.add("services", fmt.Sprintf("id %d (host %q) %s %s", sv.ID, sv.Host, b.col, b.bad))
			}
		}
		out = append(out, sv)
		return nil
	})
	return out, err
}

// oddValues tallies the rows with a value their column's type cannot hold
// (SQLite keeps any value in any column), per table, for warnings.
type oddValues struct {
	tables []string
	count  map[string]int
	first  map[string]string
}

func (o *oddValues) add(table, what string) {
	if o.count == nil {
		o.count, o.first = map[string]int{}, map[string]string{}
	}
	if o.count[table] == 0 {
		o.tables, o.first[table] = append(o.tables, table), what
	}
	o.count[table]++
}

// counts are the values tallied per table, as RowWarnings.
func (o *oddValues) counts() []nova.RowWarning {
	var out []nova.RowWarning
	for _, t := range o.tables {
		out = append(out, nova.RowWarning{Table: t, Reason: nova.ReasonBadValue, Rows: o.count[t]})
	}
	return out
}

// warnings are one line per table.
func (o *oddValues) warnings() []string {
	var out []string
	for _, t := range o.tables {
		out = append(out, fmt.Sprintf("%d value(s) in Nova's %s that their column's type cannot hold, read as NULL; first: %s",
			o.count[t], t, o.first[t]))
	}
	return out
}

// readProbe runs one of the probe statements.
func readProbe(s *dbconn.Session, step, query string) (probe, error) {
	var (
		p                          probe
		count, maxID               sql.NullInt64
		created, updated, deletedA dbconn.Time
	)
	err := s.Rows(step, query, false, func(rows *sql.Rows) error {
		return rows.Scan(&count, &maxID, &created, &updated, &deletedA)
	})
	p.count, p.maxID = count.Int64, maxID.Int64
	p.created, p.updated, p.deletedAt = created.T, updated.T, deletedA.T
	return p, err
}

// readComputeNodes runs SQLComputeNodes. The rows are kept between reads:
// the hosts are interned, the uuids kept as nova.Keys, and the slice is
// made for count, the probe's count of the table (every row, ironic or
// not), not grown by appending.
// A deleted that is no integer is a warning (odd) and reads as deleted,
// as SQLite's deleted = 0 has it.
func readComputeNodes(s *dbconn.Session, count int64, odd *oddValues) (live []nova.ComputeNode, softDeleted []string, err error) {
	live = make([]nova.ComputeNode, 0, count)
	hosts := dbconn.Interner{}
	deletedHosts := map[string]bool{}
	err = s.Rows("reading compute_nodes", SQLComputeNodes, false, func(rows *sql.Rows) error {
		var (
			uuid     sql.NullString
			host, hh sql.RawBytes
			deleted  dbconn.Int
			cn       nova.ComputeNode
		)
		if err := rows.Scan(&uuid, &host, &hh, &deleted); err != nil {
			return err
		}
		h := hosts.Str(host)
		if deleted.Bad != "" {
			odd.add("compute_nodes", fmt.Sprintf("uuid %q deleted %s", uuid.String, deleted.Bad))
		}
		if deleted.Int64 != 0 || deleted.Bad != "" {
			if !deletedHosts[h] {
				deletedHosts[h] = true
				softDeleted = append(softDeleted, h)
			}
			return nil
		}
		cn.UUID, cn.Host = nova.KeyOf(uuid.String), h
		if cn.HypervisorHostname = cn.UUID; string(hh) != uuid.String {
			cn.HypervisorHostname = nova.KeyOf(string(hh))
		}
		live = append(live, cn)
		return nil
	})
	return live, softDeleted, err
}

// readInstances runs SQLInstances, then SQLInstancesOfHost for each of
// hosts that no compute node's host is (exactly), each instance once.
func readInstances(s *dbconn.Session, backend rules.Backend, cell nova.Cell, hosts []string) ([]nova.Instance, error) {
	var out []nova.Instance
	seen := map[string]bool{}
	interned := dbconn.Interner{} // hosts, as readComputeNodes interns them
	scan := func(rows *sql.Rows) error {
		var (
			uuid, node sql.NullString
			host       sql.RawBytes
		)
		if err := rows.Scan(&uuid, &host, &node); err != nil {
			return err
		}
		h := interned.Str(host)
		if !seen[uuid.String] {
			seen[uuid.String] = true
			out = append(out, nova.Instance{UUID: nova.KeyOf(uuid.String), Host: h, Node: nova.KeyOf(node.String)})
		}
		return nil
	}
	if err := s.Rows("reading instances", SQLInstances, false, scan); err != nil {
		return nil, err
	}
	cnHosts := map[string]bool{} // every ironic compute node's, soft-deleted too (SQLInstances')
	for _, cn := range cell.ComputeNodes {
		cnHosts[cn.Host] = true
	}
	for _, h := range cell.SoftDeletedHosts {
		cnHosts[h] = true
	}
	q := SQLInstancesOfHost(dbconn.Param(backend, 1))
	for _, h := range hosts {
		if !cnHosts[h] {
			if err := s.Rows("reading instances of "+h, q, true, scan, h); err != nil {
				return nil, err
			}
		}
	}
	return out, nil
}
