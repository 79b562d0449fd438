// Package status renders the cached topology as an HTML page for people: the
// conductors with their state, a node lookup, the rings' balance, and the
// exporter's own health. It uses no external assets and no script, so it
// works offline and in any browser.
package status

import (
	"bytes"
	"cmp"
	"embed"
	"errors"
	"html/template"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/db"
	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/internal/methods"
	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/nova"
	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/novacache"
	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/rules"
	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/topology"
)

//go:embed page.html.tmpl
var templates embed.FS

var page = template.Must(template.New("page.html.tmpl").Funcs(template.FuncMap{
	"age": humanAge,
	"join": func(s []string) string {
		if len(s) == 0 {
			return "—"
		}
		return strings.Join(s, ", ")
	},
	"conductorURL": func(host string) string { return "/?conductor=" + url.QueryEscape(host) },
	"nodeURL":      func(ident string) string { return "/?node=" + url.QueryEscape(ident) },
	"groupName":    func(g string) string { return cmp.Or(g, "(default)") },
}).ParseFS(templates, "page.html.tmpl"))

// Options configures the status page.
type Options struct {
	// Logger receives rendering errors; default discards.
	Logger *slog.Logger
	// Version is shown in the footer.
	Version string
	// MetricsPath is linked from the page.
	MetricsPath string
	// History, when set, gives each conductor's page its state changes
	// since the exporter started. Feed it the cache's refreshes.
	History *History
	// Nova, when set (the exporter reads Nova's databases), is the Nova
	// answer: the lookup then takes instance UUIDs too and shows the
	// node's nova-compute, and the page its computes and problems.
	Nova func() *novacache.State
	// NovaAllowed, when set, says whether the request's caller may see
	// the Nova side (compute hosts, which Nova shows to whom its
	// os_compute_api:os-hypervisors policy allows, admins by default); the
	// page leaves it out, and says so, for the others. Unset: everyone.
	NovaAllowed func(*http.Request) bool
}

// refreshSeconds is the page's meta refresh period.
const refreshSeconds = 30

// NewHandler returns the status page handler. GET / renders the page; the
// query parameter "node" (a UUID or name) adds a lookup result.
func NewHandler(cache *topology.Cache, opts Options) http.Handler {
	opts.Logger = cmp.Or(opts.Logger, slog.New(slog.DiscardHandler))
	opts.MetricsPath = cmp.Or(opts.MetricsPath, "/metrics")
	return methods.GetHead(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		v := cache.Get(r.Context())
		q := r.URL.Query()
		o := opts
		novaHidden := o.Nova != nil && o.NovaAllowed != nil && !o.NovaAllowed(r)
		if novaHidden {
			o.Nova = nil
		}
		data := build(v, time.Now(), strings.TrimSpace(q.Get("node")), o)
		data.NovaHidden = novaHidden
		data.NoRefresh = q.Get("refresh") == "off"
		data.RefreshSeconds = refreshSeconds
		tmpl := "page"
		data.Title = "Ironic conductors"
		if host := q.Get("conductor"); host != "" {
			tmpl = "conductor"
			data.Conductor = conductorPage(v.Topology, host, opts.History)
			data.Title = "Ironic conductor " + host
		}
		data.SelfURL, data.ToggleURL = selfURLs(r, data.NoRefresh)
		var buf bytes.Buffer
		if err := page.ExecuteTemplate(&buf, tmpl, data); err != nil {
			opts.Logger.Error("rendering the status page", "err", err)
			http.Error(w, "cannot render the status page", http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		w.Header().Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'")
		if (data.Lookup != nil && data.Lookup.NotFound) || (data.Conductor != nil && data.Conductor.NotFound) {
			w.WriteHeader(http.StatusNotFound)
		}
		_, _ = w.Write(buf.Bytes())
	}))
}

// WantsHTML reports whether a request for / comes from a browser: it
// accepts text/html and does not prefer JSON. API clients (ironicclient,
// openstacksdk, curl) send application/json or */* and get Ironic's root.
func WantsHTML(r *http.Request) bool {
	accept := r.Header.Get("Accept")
	return strings.Contains(accept, "text/html") && !strings.HasPrefix(strings.TrimSpace(accept), "application/json")
}

type pageData struct {
	Title       string
	Up          bool
	Err         string
	Permanent   bool // the database is not Ironic's: retrying will not help
	HasData     bool
	DataAge     time.Duration
	LastSuccess time.Time
	Now         time.Time
	Settings    topology.Settings
	Backend     string
	Counts      map[string]int // conductors per state
	Conductors  []conductorRow
	Rings       []ringRow
	Orphans     []orphanRow
	Stuck       []stuckRow
	Nodes       int
	Query       string
	Lookup      *lookupResult
	Version     string
	MetricsPath string

	Summary        summary
	Stranded       []strandedRow
	StuckNodes     []nodeRow
	Conductor      *conductorData
	NoRefresh      bool
	RefreshSeconds int
	SelfURL        string // this page without the refresh switch
	ToggleURL      string // this page with the refresh switch flipped
	// Nova is the Nova side; nil without Nova, or when NovaHidden.
	Nova *novaData
	// NovaHidden: the caller may not see the Nova side (Options.NovaAllowed).
	NovaHidden bool
	// Limits are Ironic's concurrency limits; nil before 21.1.
	Limits *limitsData
	// Faults are the nodes Ironic put in maintenance itself.
	Faults []faultRow
	// Events are the node_history errors by conductor; nil when none is
	// read (before Ironic 18.2, or --ironic.history-window 0).
	Events *eventsData
}

// summary is the banner at the top: the worst level and what is wrong.
type summary struct {
	Level    string // "ok", "warn" or "bad"
	Problems []problem
}

type problem struct {
	Level, Text, Anchor string
}

type strandedRow struct {
	UUID, Name, State, Host string
	HostState               rules.State
	Gone                    bool
	Conductor               string
}

type conductorRow struct {
	Hostname, Group string
	State           rules.State
	HardwareTypes   []string
	HeartbeatAge    time.Duration
	NoHeartbeat     bool
	NotKept         bool // the backend keeps no heartbeats (SQLite)
	Nodes           int
	Member          bool
	// RowDeletion says when Ironic's cleanup (32.0+) deletes the row of a
	// conductor that is not alive, or that it never will; "" otherwise
	// (rules.Rules RowDeletion, CleanupFails).
	RowDeletion string
}

type ringRow struct {
	Group, HardwareType string
	Members, Nodes      int
	Min, Max            int
	Spread              string
}

type orphanRow struct {
	Group, Driver string
	Nodes         int
}

type stuckRow struct {
	Host  string
	Nodes int
	Why   string
}

type lookupResult struct {
	NotFound             bool
	UUID, Name           string
	Group, Driver        string
	Conductor            string
	ConductorState       rules.State
	Reservation, PowerSt string
	ProvisionState       string
	ConductorKnown       bool
	Maintenance          bool
	Fault                string // why Ironic put the node in maintenance itself, "" when it did not
	Health               string // the hardware health the BMC reported (34.0+), "" when none
	AffinityHost         string
	AffinityState        rules.State
	AffinityText         string // where the boot files are, in words
	StuckText            string
	Instance             string
	// ByInstance: the query was the node's instance UUID.
	ByInstance bool
	// NovaKnown: the Nova answer covers the node; NovaClaims are the
	// computes that manage it (none: no view does).
	NovaKnown  bool
	NovaClaims []nova.FleetClaim
	// Events are the node's last node_history events of the window;
	// HistoryRead says that node_history is read at all.
	Events      []eventRow
	HistoryRead bool
}

func build(v topology.View, now time.Time, query string, opts Options) pageData {
	d := pageData{Up: v.Up(), Now: now.UTC(), Query: query, Version: opts.Version, MetricsPath: opts.MetricsPath,
		Counts: map[string]int{}}
	if v.Err != nil {
		// The database's own message (addresses, user names) stays in the
		// logs; the public page says only what kind of failure it was.
		d.Err = publicError(v)
		d.Permanent = v.Permanent()
	}
	t := v.Topology
	if t == nil {
		d.Summary = summarize(d, nil)
		return d
	}
	d.HasData = true
	d.LastSuccess = v.LastSuccess.UTC()
	d.DataAge = now.Sub(v.LastSuccess).Round(time.Second)
	d.Settings = t.Settings
	if t.Backend != 0 {
		d.Backend = t.Backend.String()
	}
	d.Nodes = len(t.Nodes)
	for i := range t.Conductors {
		c := &t.Conductors[i]
		d.Counts[string(c.State)]++
		d.Conductors = append(d.Conductors, newConductorRow(t, c))
	}
	// Trouble first: dead, then stopped, draining, alive.
	slices.SortStableFunc(d.Conductors, func(a, b conductorRow) int {
		return cmp.Or(stateRank(a.State)-stateRank(b.State), strings.Compare(a.Group, b.Group), strings.Compare(a.Hostname, b.Hostname))
	})
	d.Rings = ringRows(t)
	for k, n := range t.Orphans {
		d.Orphans = append(d.Orphans, orphanRow{Group: k.ConductorGroup, Driver: k.Driver, Nodes: n})
	}
	slices.SortFunc(d.Orphans, func(a, b orphanRow) int {
		return cmp.Or(b.Nodes-a.Nodes, strings.Compare(a.Group, b.Group), strings.Compare(a.Driver, b.Driver))
	})
	for host, n := range t.Reservations {
		c, ok := t.Conductor(host)
		switch {
		case !ok:
			d.Stuck = append(d.Stuck, stuckRow{Host: host, Nodes: n, Why: "no such conductor"})
		case !c.Running():
			// Running, not Alive: a draining conductor still owns its
			// locks, and on SQLite 22.1+ Alive is false for conductors
			// that work. Ironic releases the locks of the hosts
			// get_offline_conductors returns (_check_orphan_nodes).
			why := "conductor " + string(c.State)
			if name := t.Rules.ReservationName(host); name != host {
				why += "; its locks name " + name + ", which Ironic never releases"
			}
			d.Stuck = append(d.Stuck, stuckRow{Host: host, Nodes: n, Why: why})
		}
	}
	slices.SortFunc(d.Stuck, func(a, b stuckRow) int { return cmp.Or(b.Nodes-a.Nodes, strings.Compare(a.Host, b.Host)) })
	d.Stranded, d.StuckNodes = nodeTrouble(t)
	d.Limits = buildLimits(t)
	d.Faults = faultRows(t)
	d.Events = buildEvents(t)
	var novaState *novacache.State
	if opts.Nova != nil {
		novaState = opts.Nova()
		d.Nova = buildNova(novaState, now)
	}
	if query != "" {
		d.Lookup = lookup(t, query, novaState)
	}
	d.Summary = summarize(d, t)
	return d
}

// newConductorRow is a conductor's row of the page.
func newConductorRow(t *topology.Topology, c *topology.ConductorInfo) conductorRow {
	row := conductorRow{Hostname: c.Hostname, Group: c.ConductorGroup, State: c.State, HardwareTypes: c.HardwareTypes,
		Nodes: len(c.Nodes), Member: c.Active, NoHeartbeat: c.UpdatedAt.IsZero() || !t.Heartbeats, NotKept: !t.Heartbeats}
	if !row.NoHeartbeat {
		row.HeartbeatAge = t.Now.Sub(c.UpdatedAt).Round(time.Second)
	}
	switch due, ok := t.Rules.RowDeletion(c.Online, c.UpdatedAt); {
	case ok && due.After(t.Now):
		row.RowDeletion = "Ironic deletes this row in " + humanAge(due.Sub(t.Now).Round(time.Second)) +
			" (its cleanup runs every " + humanAge(t.Rules.ConductorCleanupInterval()) + ")"
	case ok:
		row.RowDeletion = "Ironic deletes this row at its next cleanup (every " + humanAge(t.Rules.ConductorCleanupInterval()) + ")"
	case t.Rules.CleanupFails() && (c.State == rules.StateStopped || c.State == rules.StateDead):
		row.RowDeletion = "Ironic's stale conductor cleanup fails on this database and never deletes this row " +
			"(its log: \"Encountered error while cleaning up stale conductors\")"
	}
	return row
}

// ringRows computes, per ring, how many of its nodes each member serves.
func ringRows(t *topology.Topology) []ringRow {
	type key struct{ group, hw, host string }
	perMember := map[key]int{}
	for i := range t.Nodes {
		n := &t.Nodes[i]
		if n.Conductor != "" {
			perMember[key{n.ConductorGroup, n.Driver, n.Conductor}]++
		}
	}
	rows := make([]ringRow, 0, len(t.Rings))
	for i := range t.Rings {
		r := &t.Rings[i]
		hosts := r.Ring.Hosts()
		row := ringRow{Group: r.ConductorGroup, HardwareType: r.HardwareType, Members: len(hosts), Nodes: r.Nodes, Spread: "—"}
		served := make([]int, len(hosts))
		for j, h := range hosts {
			served[j] = perMember[key{r.ConductorGroup, r.HardwareType, h}]
		}
		if len(hosts) > 0 {
			row.Min, row.Max = slices.Min(served), slices.Max(served)
		}
		if r.Nodes > 0 && len(hosts) > 0 {
			ideal := float64(r.Nodes) / float64(len(hosts))
			row.Spread = strconv.FormatFloat(float64(row.Max)/ideal, 'f', 2, 64) + "× ideal"
		}
		rows = append(rows, row)
	}
	return rows
}

// lookup finds the node of ident (its UUID or name, or with Nova its
// instance's UUID) and says where it is served.
func lookup(t *topology.Topology, ident string, novaState *novacache.State) *lookupResult {
	n, ok := t.Node(ident)
	if !ok {
		// Ironic stores UUIDs in lower case; people paste them in any.
		n, ok = t.Node(strings.ToLower(ident))
	}
	byInstance := false
	if !ok && novaState != nil {
		n, ok = nodeOfInstance(t, ident)
		byInstance = ok
	}
	if !ok {
		return &lookupResult{NotFound: true}
	}
	res := &lookupResult{UUID: n.UUID, Name: n.NameOrEmpty(), Group: n.ConductorGroup, Driver: n.Driver,
		Conductor: n.Conductor, Reservation: db.Text(n.Reservation), PowerSt: db.Text(n.PowerState),
		ProvisionState: db.Text(n.ProvisionState), Maintenance: n.Maintenance, Fault: db.Text(n.Fault), Health: db.Text(n.Health), AffinityHost: n.AffinityHost()}
	if c, ok := t.Conductor(n.Conductor); ok {
		res.ConductorState = c.State
		res.ConductorKnown = true
	}
	if c, ok := t.Conductor(n.AffinityHost()); ok {
		res.AffinityState = c.State
	}
	res.AffinityText = affinityText(t, n, res)
	res.StuckText = stuckText(t, n)
	res.Instance, res.ByInstance = db.Text(n.InstanceUUID), byInstance
	res.Events, res.HistoryRead = nodeEvents(t, n.ID), t.History != nil
	if novaState != nil {
		res.NovaClaims, res.NovaKnown = novaState.NodeClaims(n.UUID)
	}
	return res
}

// humanAge renders a duration the way people read heartbeat ages.
func humanAge(d time.Duration) string {
	switch {
	case d < 0:
		return "in the future"
	case d < time.Minute:
		return strconv.Itoa(int(d/time.Second)) + "s"
	case d < time.Hour:
		return strconv.Itoa(int(d/time.Minute)) + "m" + strconv.Itoa(int(d%time.Minute/time.Second)) + "s"
	case d < 48*time.Hour:
		return strconv.Itoa(int(d/time.Hour)) + "h" + strconv.Itoa(int(d%time.Hour/time.Minute)) + "m"
	default:
		return strconv.Itoa(int(d/(24*time.Hour))) + "d"
	}
}

// publicError is the generic text of a refresh error for the public page.
func publicError(v topology.View) string {
	if errors.Is(v.Err, topology.ErrNoData) {
		return v.Err.Error()
	}
	return "the latest refresh from the database failed (" + v.ErrKind() + "); the exporter's log has the details"
}
