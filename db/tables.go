package db

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/jmoiron/sqlx"

	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/dbconn"
)

// readConductors reads the conductors table with query, in id order.
func (d *DB) readConductors(s *dbconn.Session, query string, w *warner) ([]Conductor, error) {
	var out []Conductor
	err := s.Rows("reading conductors", query, false, func(rows *sql.Rows) error {
		var (
			c                Conductor
			online           anyBool
			drivers          sql.NullString
			created, updated dbconn.Time
			hostname, cgroup sql.NullString
			version          sql.NullString
		)
		if err := rows.Scan(&c.ID, &hostname, &cgroup, &online, &drivers, &created, &updated, &version); err != nil {
			return err
		}
		c.Hostname = w.conductorText(c.ID, hostname.String, "hostname", hostname.Valid, hostname.String)
		c.ConductorGroup = w.conductorText(c.ID, c.Hostname, "conductor_group", cgroup.Valid, cgroup.String)
		c.Online = online.V
		if online.Bad != "" {
			w.add(tableConductors, ReasonBadValue, fmt.Sprintf(
				"conductor %q (id %d): online %s is not a boolean, read as false", c.Hostname, c.ID, online.Bad))
		}
		c.CreatedAt, c.UpdatedAt = created.T, updated.T
		c.Version = version.String
		for _, col := range []struct {
			name string
			v    *dbconn.Time
		}{{"created_at", &created}, {"updated_at", &updated}} {
			if col.v.Bad != "" {
				w.add(tableConductors, ReasonBadTimestamp, fmt.Sprintf(
					"conductor %q (id %d): %s %s is not a timestamp, read as NULL", c.Hostname, c.ID, col.name, col.v.Bad))
			}
		}
		if drivers.Valid {
			if err := json.Unmarshal([]byte(drivers.String), &c.Drivers); err != nil {
				c.Drivers = nil
				w.add(tableConductors, ReasonBadJSON, fmt.Sprintf(
					"conductor %q (id %d): drivers column is not a JSON list of strings, read as empty: %v",
					c.Hostname, c.ID, err))
			}
			for i, dr := range c.Drivers {
				c.Drivers[i] = strings.ToValidUTF8(dr, "\uFFFD") // s itself when valid
			}
		}
		out = append(out, c)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// readSchemaRevision reads alembic_version: "" when the table is missing
// (PostgreSQL 42P01, MySQL 1146, SQLite "no such table"), empty, or not
// granted to the exporter's role (then with a warning: the release is told
// by conductors.version alone). Several rows (never written by Ironic,
// whose chain is linear) join with ",". A deadline or a lost connection is
// an error as for the other queries.
func (d *DB) readSchemaRevision(s *dbconn.Session) (rev, warning string, err error) {
	var revs []string
	err = s.Step("reading alembic_version", func(ctx context.Context, tx *sqlx.Tx) error {
		err := tx.SelectContext(ctx, &revs, SQLSchemaRevision)
		if err == nil {
			return nil
		}
		revs = nil
		msg := err.Error()
		switch {
		case ctx.Err() != nil || !strings.Contains(msg, "alembic_version"):
			return err
		case strings.Contains(msg, "does not exist") || strings.Contains(msg, "doesn't exist") || strings.Contains(msg, "no such table"):
			return nil
		}
		warning = "alembic_version cannot be read (grant SELECT on it to tell the Ironic release by the schema): " + msg
		return nil
	})
	if err != nil {
		return "", "", err
	}
	return strings.Join(revs, ","), warning, nil
}

// readHardwareTypes fills HardwareTypes of conductors (ordered by ID).
func (d *DB) readHardwareTypes(s *dbconn.Session, query string, conductors []Conductor, w *warner) error {
	err := s.Rows("reading conductor hardware types", query, false, func(rows *sql.Rows) error {
		var (
			id int64
			nt sql.NullString
		)
		if err := rows.Scan(&id, &nt); err != nil {
			return err
		}
		if !nt.Valid {
			w.add(tableHardwareInterfaces, ReasonNull, fmt.Sprintf(
				"conductor_hardware_interfaces (conductor_id %d): hardware_type is NULL, row skipped", id))
			return nil
		}
		ht := nt.String
		if !utf8.ValidString(ht) {
			ht = strings.ToValidUTF8(ht, "\uFFFD")
			w.add(tableHardwareInterfaces, ReasonNotUTF8, fmt.Sprintf(
				"conductor_hardware_interfaces (conductor_id %d): hardware_type is not UTF-8, read as %q", id, ht))
		}
		// Rows of a conductor the snapshot does not have cannot exist (a
		// foreign key, the same transaction); skip them if they do.
		if i, ok := slices.BinarySearchFunc(conductors, id, func(c Conductor, id int64) int {
			return cmp.Compare(c.ID, id)
		}); ok {
			conductors[i].HardwareTypes = append(conductors[i].HardwareTypes, ht)
		}
		return nil
	})
	if err != nil {
		return err
	}
	// The server sorts by its collation; the snapshot promises byte order and
	// byte-wise distinct values.
	for i := range conductors {
		slices.Sort(conductors[i].HardwareTypes)
		conductors[i].HardwareTypes = slices.Compact(conductors[i].HardwareTypes)
	}
	return nil
}
