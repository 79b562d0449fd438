package novadb

import (
	"database/sql"

	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/dbconn"
	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/nova"
	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/rules"
)

// readServices runs SQLServices. A NULL disabled reads as true (the ring's
// filter disabled = false excludes it), a NULL forced_down as false.
func readServices(s *dbconn.Session) ([]nova.Service, error) {
	var out []nova.Service
	err := s.Rows("reading services", SQLServices, false, func(rows *sql.Rows) error {
		var (
			host, binary         sql.NullString
			disabled, forcedDown sql.NullBool
			created, lastSeen    dbconn.Time
			version              sql.NullInt64
			sv                   nova.Service
		)
		if err := rows.Scan(&sv.ID, &host, &binary, &disabled, &forcedDown, &created, &lastSeen, &version); err != nil {
			return err
		}
		sv.Host, sv.Binary = host.String, binary.String
		sv.Disabled = !disabled.Valid || disabled.Bool
		sv.ForcedDown = forcedDown.Valid && forcedDown.Bool
		sv.CreatedAt, sv.LastSeenUp, sv.Version = created.T, lastSeen.T, int(version.Int64)
		out = append(out, sv)
		return nil
	})
	return out, err
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
// the hosts are interned and hypervisor_hostname shares uuid's string when
// they are equal (an ironic compute node's are), and the slice is made for
// count, the probe's count of the table (every row, ironic or not), not
// grown by appending.
func readComputeNodes(s *dbconn.Session, count int64) (live []nova.ComputeNode, softDeleted []string, err error) {
	live = make([]nova.ComputeNode, 0, count)
	hosts := dbconn.Interner{}
	deletedHosts := map[string]bool{}
	err = s.Rows("reading compute_nodes", SQLComputeNodes, false, func(rows *sql.Rows) error {
		var (
			uuid     sql.NullString
			host, hh sql.RawBytes
			deleted  sql.NullInt64
			cn       nova.ComputeNode
		)
		if err := rows.Scan(&uuid, &host, &hh, &deleted); err != nil {
			return err
		}
		h := hosts.Str(host)
		if deleted.Int64 != 0 {
			if !deletedHosts[h] {
				deletedHosts[h] = true
				softDeleted = append(softDeleted, h)
			}
			return nil
		}
		cn.UUID, cn.Host = uuid.String, h
		if cn.HypervisorHostname = cn.UUID; string(hh) != cn.UUID {
			cn.HypervisorHostname = string(hh)
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
			out = append(out, nova.Instance{UUID: uuid.String, Host: h, Node: node.String})
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
