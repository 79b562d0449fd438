// Package demo runs the exporter on a database of its own: a SQLite file
// with Ironic's real schema (schema*.sql, from Ironic's `ironic-dbsync
// create_schema`: the one of the demo's release, see schemaFor), a
// simulated fleet of about 2,000 nodes and 13 conductors in four conductor
// groups, and a simulator that plays the conductors of one Ironic release
// (Release, the newest the exporter knows, unless Options.Settings names
// another) against it: heartbeats, locks, and on a fixed 90-second cycle a
// graceful stop, a crash, restarts and new nodes, each as that release's
// conductors do them (simulator.go); trace_test.go holds it to what the
// sidecar showed beside real conductors.
//
// A fleet of 13 conductors exists only on a networked database (Ironic on
// SQLite runs one combined process and keeps no heartbeats), so the demo
// stores it in SQLite (nothing to install) but has the exporter judge it as
// on the MariaDB/MySQL such a fleet uses (MultiConductor): heartbeats decide
// liveness, a crash turns a conductor dead and out of its rings, a stop
// shows as draining. The simulated conductors heartbeat as Ironic's do there.
//
// The simulator writes through its own read-write connection, as Ironic's
// conductors would; the exporter reads the file read-only through db.Open,
// as in production, and the simulator judges the fleet through the same
// reads and Settings (see simulator.go). cmd/ironic_conductor_exporter
// wires the exporter to DSN and Settings.
package demo

import (
	"cmp"
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	_ "modernc.org/sqlite" // the "sqlite" database/sql driver, pure Go

	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/db"
	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/dbconn"
	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/rules"
	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/topology"
)

// MaxSpeed bounds Options.Speed: faster, the heartbeats of the simulated
// fleet would come closer together than a refresh of the exporter takes.
const MaxSpeed = 20

// Options configure a demo. The zero value is a real-time demo in a new
// temporary directory.
type Options struct {
	// Path is the database file to create. It must not exist; it is removed
	// by Close. Empty: ironic.sqlite in a new temporary directory, removed
	// with the directory by Close.
	Path string
	// Speed runs the simulation this many times faster: the heartbeat
	// interval, heartbeat timeout, refresh interval and the cycle of events
	// are divided by it. Default 1; at most MaxSpeed.
	Speed int
	// Seed makes the fleet and the random choices of the simulator;
	// default 1. Equal seeds give equal fleets.
	Seed uint64
	// Logger receives what happens in the fleet, at info level; default
	// discards.
	Logger *slog.Logger
	// Settings are the Ironic options the fleet is judged by, by the
	// simulator and by the exporter (Demo.Settings): zero fields take the
	// demo's (see Demo.Settings), the others are used as given.
	Settings topology.Settings
}

// Release is the Ironic release the demo's fleet follows unless
// Options.Settings names another (--ironic.release): the newest release
// whose rules package rules knows (rules.Newest). Its simulated conductors
// write the Conductor object version of the release, stop, heartbeat and
// break each other's locks as the conductors of that release do (see
// simulator.go), and the exporter judges the fleet by the same release.
var Release = rules.Newest

// settings are opts.Settings with the demo's defaults filled in: heartbeat
// timeout HeartbeatTimeout, graceful_shutdown_timeout
// GracefulShutdownTimeout and sync_local_state_interval
// SyncLocalStateInterval (each divided by the speed), Release, and
// Ironic's defaults as package rules fills them in (exponent, algorithm,
// periodic_max_workers).
func (o Options) settings() topology.Settings {
	s := o.Settings
	speed := time.Duration(o.Speed)
	s.HeartbeatTimeout = cmp.Or(s.HeartbeatTimeout, HeartbeatTimeout/speed)
	s.GracefulShutdownTimeout = cmp.Or(s.GracefulShutdownTimeout, GracefulShutdownTimeout/speed)
	s.SyncLocalStateInterval = cmp.Or(s.SyncLocalStateInterval, SyncLocalStateInterval/speed)
	s.Release = cmp.Or(s.Release, Release)
	ironic := rules.New(s.Release, rules.MySQL, rules.Settings{PartitionExponent: s.PartitionExponent,
		Algorithm: s.Algorithm, PeriodicMaxWorkers: s.PeriodicMaxWorkers}).Settings()
	s.PartitionExponent, s.Algorithm, s.PeriodicMaxWorkers = ironic.PartitionExponent, ironic.Algorithm, ironic.PeriodicMaxWorkers
	return s
}

// Demo is a running demo database with its simulator.
type Demo struct {
	path     string
	dir      string // the temporary directory Start made, or ""
	speed    int
	settings topology.Settings
	db       *sql.DB
	reader   *db.DB  // the simulator's read-only view, as the exporter's
	novaDB   *sql.DB // the simulated Nova cell's, or nil
	log      *slog.Logger
	cancel   context.CancelFunc
	done     chan struct{}

	closeOnce sync.Once
	closeErr  error
}

// Start creates the database, writes the fleet and starts the simulator. The
// database is complete when Start returns.
func Start(opts Options) (*Demo, error) {
	d, sim, err := create(opts, time.Now)
	if err != nil {
		return nil, err
	}
	runCtx, stop := context.WithCancel(context.Background())
	d.cancel, d.done = stop, make(chan struct{})
	go func() {
		defer close(d.done)
		sim.run(runCtx)
	}()
	return d, nil
}

// create is Start without the simulator's loop: the database with its fleet,
// and the simulator, on the clock now, for the caller to drive (tests).
func create(opts Options, now func() time.Time) (_ *Demo, _ *simulator, err error) {
	opts.Speed = cmp.Or(opts.Speed, 1)
	if opts.Speed < 1 || opts.Speed > MaxSpeed {
		return nil, nil, fmt.Errorf("demo speed %d: want 1 to %d", opts.Speed, MaxSpeed)
	}
	opts.Seed = cmp.Or(opts.Seed, 1)
	opts.Logger = cmp.Or(opts.Logger, slog.New(slog.DiscardHandler))
	d := &Demo{speed: opts.Speed, settings: opts.settings(), log: opts.Logger, cancel: func() {}, done: make(chan struct{})}
	close(d.done) // no loop until Start runs one
	if opts.Path == "" {
		if d.dir, err = os.MkdirTemp("", "ironic-demo-"); err != nil {
			return nil, nil, fmt.Errorf("demo database: %w", err)
		}
		d.path = filepath.Join(d.dir, "ironic.sqlite")
	} else {
		if d.path, err = filepath.Abs(opts.Path); err != nil {
			return nil, nil, fmt.Errorf("demo database: %w", err)
		}
		if _, err := os.Lstat(d.path); err == nil {
			return nil, nil, fmt.Errorf("demo database %s already exists: remove it or give another path (the demo creates it and removes it on exit)", d.path)
		}
		// Fail now, not as "unable to open database file".
		if st, err := os.Stat(filepath.Dir(d.path)); err != nil || !st.IsDir() {
			return nil, nil, fmt.Errorf("demo database %s: directory %s does not exist", d.path, filepath.Dir(d.path))
		}
	}
	defer func() {
		if err != nil {
			_ = d.removeFiles()
		}
	}()

	if d.db, err = openWritable(d.path); err != nil {
		return nil, nil, fmt.Errorf("demo database: %w", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	defer func() {
		if err != nil {
			_ = d.closeDBs()
		}
	}()
	schema := schemaFor(d.settings.Release)
	if _, err := d.db.ExecContext(ctx, schema.sql); err != nil {
		return nil, nil, fmt.Errorf("demo database: creating Ironic's schema: %w", err)
	}
	// The simulator's view of the fleet is read as the exporter reads it.
	if d.reader, err = db.Open(d.DSN(), dbconn.Options{}); err != nil {
		return nil, nil, fmt.Errorf("demo database: %w", err)
	}
	sim := newSimulator(d, opts.Seed, now)
	if err := sim.setup(ctx); err != nil {
		return nil, nil, fmt.Errorf("demo database: writing the fleet: %w", err)
	}
	err = sim.setupNova(ctx, d)
	d.novaDB = sim.nova.db // closed with the others, also on an error
	if err != nil {
		return nil, nil, fmt.Errorf("demo Nova: %w", err)
	}
	d.log.Info("demo: created a SQLite database with Ironic's real schema ("+schema.source()+") and a simulated fleet",
		"path", d.path, "ironic_release", d.settings.Release, "fleet", sim.describe())
	return d, sim, nil
}

// schemaFiles are Ironic's real schemas on SQLite, as `ironic-dbsync
// create_schema` builds them (every table with its indexes, alembic_version
// stamped), dumped by scripts/gen-demo-schema.sh: schema.sql from the
// host's Ironic, schema-X.Y.sql from the Ironic of a chroot (CHROOT=...).
//
//go:generate ../scripts/gen-demo-schema.sh schema.sql
//go:embed schema*.sql
var schemaFiles embed.FS

// demoSchema is one of schemaFiles.
type demoSchema struct {
	name, sql string
	// release is the release the exporter tells from the schema's
	// alembic_version (rules.Detect): the newest of its revision's range.
	release rules.Release
}

// schemas are schemaFiles, oldest release first.
var schemas = func() []demoSchema {
	entries, err := schemaFiles.ReadDir(".")
	if err != nil {
		panic(err)
	}
	var out []demoSchema
	for _, e := range entries {
		b, err := schemaFiles.ReadFile(e.Name())
		if err != nil {
			panic(err)
		}
		sc := demoSchema{name: e.Name(), sql: string(b)}
		det, err := rules.Detect(sc.revision(), nil)
		if err != nil {
			panic(fmt.Sprintf("demo schema %s: %v", sc.name, err))
		}
		sc.release = det.Release
		out = append(out, sc)
	}
	slices.SortFunc(out, func(a, b demoSchema) int { return a.release.Compare(b.release) })
	return out
}()

// schemaFor is the schema the demo creates for release r: the newest of
// schemas whose release is not newer than r (the columns and tables of
// newer releases are absent, as in that release's database; the exporter
// reads what the schema has), or the oldest for a release older than all.
func schemaFor(r rules.Release) demoSchema {
	best := schemas[0]
	for _, sc := range schemas {
		if !r.Before(sc.release) {
			best = sc
		}
	}
	return best
}

// revision is the alembic revision the schema stamps.
func (sc demoSchema) revision() string {
	const prefix = "INSERT INTO alembic_version (version_num) VALUES ('"
	for line := range strings.Lines(sc.sql) {
		if rev, ok := strings.CutPrefix(strings.TrimSpace(line), prefix); ok {
			return strings.TrimSuffix(rev, "');")
		}
	}
	return ""
}

// source is the "Source:" line of the schema, without the prefix.
func (sc demoSchema) source() string {
	for line := range strings.Lines(sc.sql) {
		if s, ok := strings.CutPrefix(strings.TrimSpace(line), "-- Source: "); ok {
			return strings.TrimSuffix(s, ".")
		}
	}
	return "Ironic's create_schema"
}

// openWritable is the simulator's writable connection to the SQLite file
// at path, like a conductor's (or a nova-compute's): rollback journal
// (SQLite's and Python's default), and a busy timeout so that a commit
// waits out the exporter's read transactions.
func openWritable(path string) (*sql.DB, error) {
	q := url.Values{}
	q.Add("_pragma", "busy_timeout(5000)")
	q.Set("_txlock", "immediate")
	db, err := sql.Open("sqlite", "file:"+(&url.URL{Path: path}).EscapedPath()+"?"+q.Encode())
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(1)
	return db, nil
}

// DSN is the database as Ironic's [database]connection names it
// (sqlite:////absolute/path), for db.Open.
func (d *Demo) DSN() string { return "sqlite:///" + d.path }

// Settings are the Ironic options the simulator judges the fleet by, which
// the exporter must run with too: Options.Settings with the demo's defaults
// (heartbeat timeout HeartbeatTimeout divided by the speed, Release, and
// Ironic's defaults: exponent 5, md5).
func (d *Demo) Settings() topology.Settings { return d.settings }

// MinInterval is the --refresh.min-interval the exporter should run with.
func (d *Demo) MinInterval() time.Duration { return MinInterval / time.Duration(d.speed) }

// LogIntro logs the settings, what to expect and the URLs to open, for the
// first of the exporter's listen addresses (":10067" is http://127.0.0.1:10067).
func (d *Demo) LogIntro(listenAddresses []string, metricsPath string) {
	s := time.Duration(d.speed)
	d.log.Info("demo: the exporter runs with heartbeat_timeout="+d.settings.HeartbeatTimeout.String()+
		" (Ironic's default is 60s) and refresh.min-interval="+d.MinInterval().String()+" so that changes show fast",
		"heartbeat_interval", HeartbeatInterval/s)
	d.log.Info("demo: the simulated conductors lock and take over the nodes the exporter maps to them: both judge the fleet "+
		"with the same code and settings", "ironic_release", d.settings.Release, "heartbeat_timeout", d.settings.HeartbeatTimeout,
		"hash_partition_exponent", d.settings.PartitionExponent, "hash_ring_algorithm", d.settings.Algorithm,
		"graceful_shutdown_timeout", d.settings.GracefulShutdownTimeout, "pick_another_release", "--ironic.release")
	d.log.Info(fmt.Sprintf("demo: every %s: at %s a conductor rebuilding nodes stops gracefully (SIGTERM) as Ironic %s does, "+
		"at %s another crashes holding locks, at %s new nodes are enrolled, at %s the crashed one restarts and at %s the stopped one starts again; "+
		"peers break the locks of conductors whose heartbeat is stale and take over boot files, periodic_max_workers=%d every %s",
		Cycle/s, atDrain/s, d.settings.Release, atCrash/s, atEnroll/s, atCrashBack/s, atDrainRestart/s,
		d.settings.PeriodicMaxWorkers, d.settings.SyncLocalStateInterval))
	d.log.Info(fmt.Sprintf("demo: Nova beside it, %d ironic nova-computes: at %s one dies (its nodes without instance move to the others' rings, "+
		"its instances stay stranded), at %s the others move the compute records, at %s it comes back and at %s the records move back",
		len(NovaComputes), atNovaDie/s, atNovaUpdate/s, atNovaBack/s, atNovaBackUpdate/s))
	d.log.Info("demo: the fleet is stored in SQLite but judged as on MariaDB/MySQL, the database a multi-conductor " +
		"Ironic uses: Ironic on SQLite runs a single conductor and keeps no heartbeats, so there (and in production " +
		"on SQLite) conductor states follow the online column alone")
	if len(listenAddresses) == 0 {
		return
	}
	base := baseURL(listenAddresses[0])
	d.log.Info("demo: open the status page in a browser", "url", base+"/")
	d.log.Info("demo: the metrics", "url", base+metricsPath)
	d.log.Info("demo: Ironic's own CLI works against the JSON API",
		"command", "baremetal --os-endpoint "+base+" --os-auth-type none conductor list")
}

// baseURL is the http URL a local browser reaches addr at.
func baseURL(addr string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "http://" + addr
	}
	switch host {
	case "", "0.0.0.0", "::":
		host = "127.0.0.1"
	}
	return "http://" + net.JoinHostPort(host, port)
}

// Close stops the simulator and removes the database (and the temporary
// directory Start made). It is safe to call more than once.
func (d *Demo) Close() error {
	d.closeOnce.Do(func() {
		d.cancel()
		<-d.done
		d.closeErr = errors.Join(d.closeDBs(), d.removeFiles())
		if d.closeErr == nil {
			d.log.Info("demo: removed the database", "path", d.path)
		}
	})
	return d.closeErr
}

// closeDBs closes the simulator's connections (the reader may not be open
// yet when create fails).
func (d *Demo) closeDBs() error {
	err := d.db.Close()
	if d.reader != nil {
		err = errors.Join(d.reader.Close(), err)
	}
	if d.novaDB != nil {
		err = errors.Join(d.novaDB.Close(), err)
	}
	return err
}

func (d *Demo) removeFiles() error {
	if d.dir != "" {
		return os.RemoveAll(d.dir)
	}
	var errs []error
	f := d.novaFiles()
	for _, p := range []string{d.path, d.path + "-journal", f.api, f.api + "-journal", f.cell, f.cell + "-journal", f.conf, f.computes} {
		if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// MultiConductor wraps the demo database's snapshots so that the exporter
// judges them as on MariaDB/MySQL (see the package doc): everything read
// is the file's, only Snapshot.Backend says mysql. The simulator reads its
// own view through it too.
func MultiConductor(src topology.Source) topology.Source { return multiConductor{src} }

type multiConductor struct{ src topology.Source }

func (m multiConductor) SnapshotChanges(ctx context.Context, known *db.Known) (*db.Snapshot, error) {
	snap, err := m.src.SnapshotChanges(ctx, known)
	if err == nil {
		snap.Backend = rules.MySQL
	}
	return snap, err
}
