package demo

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"slices"
	"time"

	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/dbconn"
	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/nova"
	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/novadb"
	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/rules"
)

// The demo's Nova: a nova_api database and one cell's (SQLite files beside
// Ironic's) holding the columns the exporter reads of Nova's schema, and
// NovaComputes, ironic nova-computes that heartbeat as Nova's servicegroup
// does (services.last_seen_up every NovaReportInterval). Once a cycle one
// of them dies (its heartbeat stops) and later comes back: in the
// exporter's answer the nodes without instance move to the other computes'
// rings at once, their compute records follow at the next resource update
// (as update_available_resource moves them, at atNovaUpdate and
// atNovaBackUpdate), and the dead compute's instances stay stranded on it
// until it is back. The simulated computes decide ownership with package
// nova, the exporter's own, as the simulated conductors use its topology.

// The demo's ironic nova-computes (Kolla's style: one per controller,
// "<host>-ironic"), and the one that dies in each cycle, in turn.
var (
	NovaComputes = []string{"ctl1-ironic", "ctl2-ironic", "ctl3-ironic"}
	novaVictims  = []string{"ctl2-ironic", "ctl3-ironic", "ctl1-ironic"}
)

// Nova's timings in the demo, at Speed 1: [DEFAULT]report_interval and
// service_down_time (Nova's defaults are 10s and 60s), so that a dead
// compute shows fast.
const (
	NovaReportInterval  = 2 * time.Second
	NovaServiceDownTime = 8 * time.Second
)

// Offsets of Nova's events in each cycle, at Speed 1.
const (
	atNovaDie        = 25 * time.Second
	atNovaUpdate     = 45 * time.Second
	atNovaBack       = 60 * time.Second
	atNovaBackUpdate = 80 * time.Second
)

// novaServiceVersion is services.version as Nova 29.x-30.x (2024.2) writes
// it: the simulated Nova is that release's whatever Ironic release the
// demo plays.
const novaServiceVersion = 67

// novaFiles are the demo's Nova files beside the Ironic database.
type novaFiles struct{ api, cell, conf, computes string }

func (d *Demo) novaFiles() novaFiles {
	return novaFiles{api: d.path + ".nova_api", cell: d.path + ".nova_cell1", conf: d.path + ".nova.conf",
		computes: d.path + ".nova-computes.yaml"}
}

// NovaConfig is the nova.conf the exporter reads the demo's Nova with
// (--nova.config-file): nova_api's connection and the demo's timings.
func (d *Demo) NovaConfig() string { return d.novaFiles().conf }

// NovaComputesFile is the computes file of the demo's nova-computes
// (--nova.computes-file): their hosts, no [ironic] option.
func (d *Demo) NovaComputesFile() string { return d.novaFiles().computes }

// simNova is the simulated Nova.
type simNova struct {
	db      *sql.DB // the cell's database
	beating map[string]bool
	created time.Time
}

// setupNova writes the Nova databases and the nova.conf.
func (s *simulator) setupNova(ctx context.Context, d *Demo) error {
	f := d.novaFiles()
	api, err := openNova(f.api)
	if err != nil {
		return err
	}
	defer func() { _ = api.Close() }()
	if _, err := api.ExecContext(ctx, novadb.MiniAPISchemaSQLite+`
INSERT INTO cell_mappings VALUES (1, '`+nova.Cell0UUID+`', 'cell0', 'sqlite:///`+f.path0()+`'),
  (2, 'c0a2b5e4-1b8e-4f43-9a55-0d3f1c2a7e61', 'cell1', 'sqlite:///`+f.cell+`')`); err != nil {
		return fmt.Errorf("nova_api: %w", err)
	}
	if s.nova.db, err = openNova(f.cell); err != nil {
		return err
	}
	if _, err := s.nova.db.ExecContext(ctx, novadb.MiniCellSchemaSQLite); err != nil {
		return fmt.Errorf("nova cell1: %w", err)
	}
	ns := s.novaSettings()
	conf := fmt.Sprintf("[DEFAULT]\nreport_interval = %d\nservice_down_time = %d\n[api_database]\nconnection = sqlite:///%s\n[database]\nconnection = sqlite:///%s\n",
		ns.ReportInterval, ns.ServiceDownTime, f.api, f.cell)
	if err := os.WriteFile(f.conf, []byte(conf), 0o600); err != nil {
		return fmt.Errorf("demo nova.conf: %w", err)
	}
	computes := "# The demo's ironic nova-computes: one per controller, no [ironic] option set.\ncomputes:\n"
	for _, h := range NovaComputes {
		computes += "- host: " + h + "\n"
	}
	if err := os.WriteFile(f.computes, []byte(computes), 0o600); err != nil {
		return fmt.Errorf("demo computes file: %w", err)
	}
	now := s.now()
	s.nova.created, s.nova.beating = now.Add(-30*24*time.Hour), map[string]bool{}
	return s.novaTx(ctx, func(tx *sql.Tx) error {
		for i, h := range NovaComputes {
			s.nova.beating[h] = true
			if _, err := tx.ExecContext(ctx, `INSERT INTO services VALUES (?, ?, 'nova-compute', 0, 0, 0, ?, ?, ?, ?)`,
				i+1, h, sqlaTime(s.nova.created), sqlaTime(now), sqlaTime(now), novaServiceVersion); err != nil {
				return err
			}
		}
		// Every node's compute record and instance, placed as the ring of
		// the three places them.
		return s.novaUpdate(ctx, tx, true)
	})
}

// novaSettings are Nova's report_interval and service_down_time at the
// demo's speed, in whole seconds as nova.conf has them.
func (s *simulator) novaSettings() rules.NovaSettings {
	ri := max(1, int(s.scale(NovaReportInterval).Seconds()+0.5))
	return rules.NovaSettings{ReportInterval: ri, ServiceDownTime: max(ri+1, int(s.scale(NovaServiceDownTime).Seconds()))}
}

// path0 is a cell0 database that is never opened (the exporter skips cell0).
func (f novaFiles) path0() string { return f.api + ".cell0" }

// openNova opens one of the demo's Nova databases for writing.
func openNova(path string) (*sql.DB, error) {
	db, err := openWritable(path)
	if err != nil {
		return nil, fmt.Errorf("demo nova database: %w", err)
	}
	return db, nil
}

// novaTx runs f in one write transaction on the cell's database.
func (s *simulator) novaTx(ctx context.Context, f func(tx *sql.Tx) error) error {
	return inTx(ctx, s.nova.db, f)
}

// novaTick is the computes' heartbeat (ServiceGroup's report_state).
func (s *simulator) novaTick(ctx context.Context) error {
	now := s.now()
	return s.novaTx(ctx, func(tx *sql.Tx) error {
		for _, h := range NovaComputes {
			if s.nova.beating[h] {
				if _, err := tx.ExecContext(ctx, `UPDATE services SET last_seen_up=?, updated_at=? WHERE host=?`, sqlaTime(now), sqlaTime(now), h); err != nil {
					return err
				}
			}
		}
		return nil
	})
}

// novaCell is the cell as the simulated computes see it now.
func (s *simulator) novaCell(ctx context.Context, tx *sql.Tx) (nova.Cell, error) {
	c := nova.Cell{Name: "cell1"}
	rows, err := tx.QueryContext(ctx, `SELECT id, host, last_seen_up FROM services WHERE deleted = 0`)
	if err != nil {
		return c, err
	}
	defer func() { _ = rows.Close() }()
	for rows.Next() {
		var sv nova.Service
		var seen dbconn.Time
		if err := rows.Scan(&sv.ID, &sv.Host, &seen); err != nil {
			return c, err
		}
		sv.Binary, sv.LastSeenUp, sv.CreatedAt, sv.Version = "nova-compute", seen.T, s.nova.created, novaServiceVersion
		c.Services = append(c.Services, sv)
		c.ComputeNodes = append(c.ComputeNodes, nova.ComputeNode{Host: sv.Host})
	}
	if err := rows.Err(); err != nil {
		return c, err
	}
	irows, err := tx.QueryContext(ctx, `SELECT uuid, host, node FROM instances WHERE deleted = 0`)
	if err != nil {
		return c, err
	}
	defer func() { _ = irows.Close() }()
	for irows.Next() {
		var u, host, node string
		if err := irows.Scan(&u, &host, &node); err != nil {
			return c, err
		}
		c.Instances = append(c.Instances, nova.Instance{UUID: nova.KeyOf(u), Host: host, Node: nova.KeyOf(node)})
	}
	return c, irows.Err()
}

// novaUpdate is update_available_resource on every compute that is up:
// each writes the compute record of the nodes its own view manages (in
// place, as 27.0+), soft-deletes the records of nodes gone from Ironic, and
// at first each active node's instance is placed on its owner.
func (s *simulator) novaUpdate(ctx context.Context, tx *sql.Tx, first bool) error {
	cell, err := s.novaCell(ctx, tx)
	if err != nil {
		return err
	}
	now := s.now()
	ids := slices.Sorted(func(yield func(int64) bool) {
		for id := range s.nodes {
			if !yield(id) {
				return
			}
		}
	})
	var nodes nova.Nodes
	for _, id := range ids {
		n := s.nodes[id]
		in := nova.IronicNode{UUID: n.uuid, ConductorGroup: n.group, InstanceUUID: n.instance}
		if first {
			in.InstanceUUID = "" // the instances were booted where the ring had their nodes
		}
		nodes = append(nodes, in)
	}
	a := nova.Answer(nova.AnswerInput{Now: now, Backend: rules.SQLite, IronicBackend: rules.MySQL, Settings: s.novaSettings(),
		Cell: cell, Nodes: nodes})
	owner := map[string]string{}
	for i, v := range a.Views {
		if !a.Computes[i].Up {
			continue // a dead compute updates nothing
		}
		for _, m := range v.Nodes {
			owner[nodes[m.Node].UUID] = v.Host
		}
	}
	// The live records, read once: by uuid, their id and host.
	type record struct {
		id   int64
		host string
	}
	records := map[string]record{}
	rows, err := tx.QueryContext(ctx, `SELECT id, uuid, host FROM compute_nodes WHERE deleted = 0`)
	if err != nil {
		return err
	}
	for rows.Next() {
		var r record
		var u string
		if err := rows.Scan(&r.id, &u, &r.host); err != nil {
			_ = rows.Close()
			return err
		}
		records[u] = r
	}
	if err := errors.Join(rows.Err(), rows.Close()); err != nil {
		return err
	}
	for _, id := range ids {
		n := s.nodes[id]
		host, ok := owner[n.uuid]
		if !ok {
			continue
		}
		switch r, have := records[n.uuid]; {
		case !have:
			if _, err := tx.ExecContext(ctx, `INSERT INTO compute_nodes (uuid, host, hypervisor_hostname, hypervisor_type, deleted, created_at)
VALUES (?, ?, ?, 'ironic', 0, ?)`, n.uuid, host, n.uuid, sqlaTime(now)); err != nil {
				return err
			}
		case r.host != host:
			if _, err := tx.ExecContext(ctx, `UPDATE compute_nodes SET host=?, updated_at=? WHERE id=?`, host, sqlaTime(now), r.id); err != nil {
				return err
			}
		}
		if first && n.instance != "" {
			if _, err := tx.ExecContext(ctx, `INSERT INTO instances (uuid, host, node, deleted, created_at) VALUES (?, ?, ?, 0, ?)`,
				n.instance, host, n.uuid, sqlaTime(now)); err != nil {
				return err
			}
		}
	}
	live := map[string]bool{}
	for _, n := range s.nodes {
		live[n.uuid] = true
	}
	var gone []int64
	for u, r := range records {
		if !live[u] {
			gone = append(gone, r.id)
		}
	}
	for _, id := range gone {
		if _, err := tx.ExecContext(ctx, `UPDATE compute_nodes SET deleted=id, deleted_at=? WHERE id=?`, sqlaTime(now), id); err != nil {
			return err
		}
	}
	return nil
}

// novaDie: the cycle's victim stops heartbeating (the process is gone).
func (s *simulator) novaDie(_ context.Context, cycle int) error {
	h := novaVictims[cycle%len(novaVictims)]
	s.nova.beating[h] = false
	s.log.Info("demo: nova-compute "+h+" dies: its heartbeat stops; the others' rings take its nodes without instance, its instances stay stranded", "cycle", cycle)
	return nil
}

// novaBack: the victim heartbeats again.
func (s *simulator) novaBack(ctx context.Context, cycle int) error {
	h := novaVictims[cycle%len(novaVictims)]
	s.nova.beating[h] = true
	s.log.Info("demo: nova-compute "+h+" is back", "cycle", cycle)
	return s.novaTick(ctx)
}

// novaResourceUpdate is the computes' periodic update_available_resource.
func (s *simulator) novaResourceUpdate(ctx context.Context, _ int) error {
	return s.novaTx(ctx, func(tx *sql.Tx) error { return s.novaUpdate(ctx, tx, false) })
}
