package status

import (
	"cmp"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/db"
	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/rules"
	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/topology"
)

// maxNodeRows bounds the node tables of the page: on a large fleet the
// rest is counted, not listed.
const maxNodeRows = 500

// stateRank orders the conductors' states, trouble first: dead, stopped,
// draining, then alive (Index's -1 as 3).
func stateRank(s rules.State) int {
	return (slices.Index([]rules.State{rules.StateDead, rules.StateStopped, rules.StateDraining}, s) + 4) % 4
}

func provision(n *topology.NodeInfo) string {
	if n.ProvisionState == nil {
		return "—"
	}
	return *n.ProvisionState
}

// nodeTrouble lists the nodes whose boot files are on a conductor that is
// not running, and the stuck nodes, each at most maxNodeRows.
func nodeTrouble(t *topology.Topology) (stranded []strandedRow, stuck []nodeRow) {
	for i := range t.Nodes {
		n := &t.Nodes[i]
		if (n.Affinity == topology.AffinityNotAlive || n.Affinity == topology.AffinityMissing) && len(stranded) < maxNodeRows {
			r := strandedRow{UUID: n.UUID, Name: n.NameOrEmpty(), State: provision(n), Host: n.AffinityHost(),
				Gone: n.Affinity == topology.AffinityMissing, Conductor: n.Conductor}
			if c, ok := t.Conductor(n.AffinityHost()); ok {
				r.HostState = c.State
			}
			stranded = append(stranded, r)
		}
		if n.Stuck != topology.NotStuck && len(stuck) < maxNodeRows {
			stuck = append(stuck, newNodeRow(t, n))
		}
	}
	return stranded, stuck
}

// summarize says first what is wrong, worst first, each with the section
// that shows it.
// levelRank orders the summary's levels, worst first.
func levelRank(level string) int {
	if level == "bad" {
		return 0
	}
	return 1
}

func summarize(d pageData, t *topology.Topology) summary {
	var s summary
	add := func(level, anchor, format string, args ...any) {
		s.Problems = append(s.Problems, problem{Level: level, Text: fmt.Sprintf(format, args...), Anchor: anchor})
	}
	switch {
	case d.Permanent:
		add("bad", "", "The database is not Ironic's (no conductors or nodes table): check --db.dsn; retrying will not help.")
	case !d.HasData:
		add("bad", "", "No data: the exporter has not read Ironic's database yet.")
	case !d.Up:
		add("bad", "", "Stale data: the last refresh failed; what follows is %s old.", humanAge(d.DataAge))
	}
	if t != nil {
		if n := d.Counts[string(rules.StateDead)]; n > 0 {
			add("bad", "conductors-h", "%d conductor(s) dead: online with no heartbeat (crashed, hung, or stopped without unregistering).", n)
		}
		if groups := groupsWithoutRunning(t); len(groups) > 0 {
			add("bad", "conductors-h", "%d conductor group(s) without a live conductor: %s.", len(groups), strings.Join(groups, ", "))
		}
		if n := sum(t.Orphans); n > 0 { // d.Orphans has a row per entry
			add("bad", "orphans-h", "%d node(s) without a conductor.", n)
		}
		for _, text := range unregisteredProblems(t) {
			add("bad", "orphans-h", "%s", text)
		}
		locks := 0
		for _, st := range d.Stuck {
			locks += st.Nodes
		}
		if locks > 0 {
			add("warn", "stuck-h", "%d node(s) locked by hosts that are not running.", locks)
		}
		if n := sum(t.Stuck); n > 0 {
			add("warn", "stuck-nodes-h", "%d node(s) stuck in progress with no running conductor to finish%s.", n, stuckBreakdown(t))
		}
		if n := sum(t.AffinityUnavailable); n > 0 {
			add("warn", "stranded-h", "%d node(s) with boot files on a conductor that is not running%s.", n, takeoverPace(t))
		}
		if n := d.Counts[string(rules.StateDraining)]; n > 0 {
			add("warn", "conductors-h", "%d conductor(s) draining: unregistered, out of the rings, possibly finishing work.", n)
		}
		if n := d.Counts[string(rules.StateStopped)]; n > 0 {
			add("warn", "conductors-h", "%d conductor(s) stopped.", n)
		}
		if n := sum(t.Faults); n > 0 {
			add("warn", "faults-h", "%d node(s) put in maintenance by Ironic itself (a power, cleaning, rescue or service failure).", n)
		}
		critical := 0
		for k, n := range t.Health {
			if k.Fault == "Critical" {
				critical += n
			}
		}
		if critical > 0 {
			add("warn", "", "%d node(s) whose BMC reports Critical hardware health.", critical)
		}
		for _, text := range limitProblems(d.Limits) {
			add("warn", "limits-h", "%s", text)
		}
	}
	if d.Nova != nil {
		summarizeNova(&s, d.Nova)
	}
	// Bad first, in the order added.
	slices.SortStableFunc(s.Problems, func(a, b problem) int { return levelRank(a.Level) - levelRank(b.Level) })
	s.Level = "ok"
	if len(s.Problems) > 0 {
		s.Level = s.Problems[0].Level
	}
	return s
}

// stuckBreakdown names the reasons of the stuck nodes that say more than
// "no running conductor": a lock Ironic never releases, a step with no
// worker.
func stuckBreakdown(t *topology.Topology) string {
	by := map[topology.Stuck]int{}
	for k, n := range t.Stuck {
		by[k.Reason] += n
	}
	var parts []string
	if n := by[topology.StuckLockNeverReleased]; n > 0 {
		parts = append(parts, fmt.Sprintf("%d locked by a HOST:PORT conductor that is not running, which Ironic never releases", n))
	}
	if n := by[topology.StuckNoWorker]; n > 0 {
		parts = append(parts, fmt.Sprintf("%d with no lock and no worker, until a conductor mapping them starts or an operator acts", n))
	}
	if len(parts) == 0 {
		return ""
	}
	return " (" + strings.Join(parts, "; ") + ")"
}

// takeoverCandidate reports whether Ironic's _sync_local_state on the
// node's ring conductor c takes n over: ACTIVE, not in maintenance, not
// locked, and conductor_affinity not c's id (NULL included: Python's
// None != id; ironic/conductor/manager.py).
func takeoverCandidate(n *topology.NodeInfo, c *topology.ConductorInfo) bool {
	return n.ProvisionState != nil && *n.ProvisionState == "active" && !n.Maintenance && n.Reservation == nil &&
		(!n.HasConductorAffinity || int64(n.ConductorAffinity) != c.ID)
}

// takeoverPending counts the nodes conductor c will take over.
func takeoverPending(t *topology.Topology, c *topology.ConductorInfo) int {
	pending := 0
	for _, i := range c.Nodes {
		if takeoverCandidate(&t.Nodes[i], c) {
			pending++
		}
	}
	return pending
}

// takeoverPace says how long the pending takeovers take at Ironic's pace
// (rules.Rules TakeoverTime: periodic_max_workers nodes per conductor every
// sync_local_state_interval), "" when no running conductor has any.
func takeoverPace(t *topology.Topology) string {
	most, host := 0, ""
	for i := range t.Conductors {
		c := &t.Conductors[i]
		if !c.Running() {
			continue
		}
		if n := takeoverPending(t, c); n > most {
			most, host = n, c.Hostname
		}
	}
	if most == 0 {
		return ""
	}
	s := t.Rules.Settings()
	return fmt.Sprintf("; Ironic takes over at most %d node(s) per conductor every %s: %s has %d to take over, about %s",
		s.PeriodicMaxWorkers, s.SyncLocalStateInterval, host, most, t.Rules.TakeoverTime(most))
}

func sum[K comparable](m map[K]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

// groupsWithoutRunning lists the conductor groups that have conductors or
// nodes but no conductor that is alive.
func groupsWithoutRunning(t *topology.Topology) []string {
	has, live := map[string]bool{}, map[string]bool{}
	for i := range t.Conductors {
		c := &t.Conductors[i]
		has[c.ConductorGroup] = true
		live[c.ConductorGroup] = live[c.ConductorGroup] || c.State == rules.StateAlive
	}
	for k := range t.Orphans {
		has[k.ConductorGroup] = true
	}
	var out []string
	for g := range has {
		if !live[g] {
			out = append(out, cmp.Or(g, "(default)"))
		}
	}
	slices.Sort(out)
	return out
}

// affinityText says, in words, where the node's boot files are and what
// Ironic will do about them (_sync_local_state takes over ACTIVE nodes not
// in maintenance and not locked whose conductor_affinity is not the ring's
// conductor; _do_takeover rebuilds the boot environment).
func affinityText(t *topology.Topology, n *topology.NodeInfo, r *lookupResult) string {
	var where string
	switch n.Affinity {
	case topology.AffinityNone:
		where = "No conductor has prepared this node's boot environment yet (conductor_affinity is empty)"
		if c, ok := t.Conductor(n.Conductor); ok && takeoverCandidate(n, c) {
			return where + "; Ironic takes over an active node with no affinity as any other: " + takeoverWhen(t, c) + "."
		}
		return where + "."
	case topology.AffinityMissing:
		where = fmt.Sprintf("Boot files were prepared by a conductor that no longer exists (id %d)", n.ConductorAffinity)
	default:
		where = fmt.Sprintf("Boot files were prepared by %s (%s)", n.AffinityHost(), r.AffinityState)
	}
	switch n.Conductor {
	case "":
		return where + "; no conductor serves the node now, so nothing will rebuild them."
	case n.AffinityHost():
		return where + "; the ring maps the node to the same conductor: its files and logs are there."
	}
	where += "; the ring now maps the node to " + n.Conductor
	active := n.ProvisionState != nil && *n.ProvisionState == "active"
	c, ok := t.Conductor(n.Conductor)
	switch {
	case ok && takeoverCandidate(n, c):
		return where + ": " + takeoverWhen(t, c) + "."
	case active && n.Maintenance:
		return where + ": no takeover while the node is in maintenance."
	case active:
		return where + ": no takeover while it is locked by " + *n.Reservation + " (a takeover holds the lock itself while it rebuilds them)."
	}
	return where + ": Ironic takes over only active nodes; the next operation prepares the node there."
}

// takeoverWhen says when c's takeover (_sync_local_state, at most
// periodic_max_workers nodes per sync_local_state_interval) reaches its
// pending nodes.
func takeoverWhen(t *topology.Topology, c *topology.ConductorInfo) string {
	pending := takeoverPending(t, c)
	s := t.Rules.Settings()
	return fmt.Sprintf("%s takes it over (%d node(s) pending there; Ironic takes over at most %d per conductor every %s: within about %s)",
		c.Hostname, pending, s.PeriodicMaxWorkers, s.SyncLocalStateInterval, t.Rules.TakeoverTime(pending))
}

func stuckText(t *topology.Topology, n *topology.NodeInfo) string {
	switch n.Stuck {
	case topology.StuckLockHolder:
		return "locked by " + *n.Reservation + ", which is not running"
	case topology.StuckLockNeverReleased:
		holder := *n.Reservation
		if c, _ := t.LockHolder(holder); c != nil {
			holder = c.Hostname
		}
		return "locked as " + *n.Reservation + " by " + holder + ", which is not running: Ironic compares exact names and never releases this lock (clear nodes.reservation, see the runbook)"
	case topology.StuckNoWorker:
		return "no lock and no worker: nothing resumes " + provision(n) + " until a conductor mapping it (re)starts and fails it (restart " + cmp.Or(n.Conductor, "its conductor") + ")"
	case topology.StuckNoConductor:
		return "no conductor serves it"
	case topology.StuckConductorNotAlive:
		return "its conductor " + n.Conductor + " is not running"
	}
	return ""
}

// conductorData is the page of one conductor.
type conductorData struct {
	NotFound   bool
	Hostname   string
	Row        conductorRow
	Online     bool
	Rings      []string
	History    []historyRow
	Dropped    int
	Since      time.Time
	Nodes      []nodeRow
	NodesMore  int
	Prepared   []nodeRow
	PrepMore   int
	Maintained int
	Elsewhere  int
	Meaning    string // what the state means on the release that wrote the database
	// Limits are its nodes in flight against its group's concurrency
	// limits (21.1+).
	Limits []conductorLimit
}

type historyRow struct {
	At    time.Time
	State string
}

type nodeRow struct {
	UUID, Name, State, Reservation, Conductor string
	Maintenance                               bool
	Stuck                                     string // why the node is stuck, "" when it is not
}

// newNodeRow is a node's row in the page's node tables.
func newNodeRow(t *topology.Topology, n *topology.NodeInfo) nodeRow {
	return nodeRow{UUID: n.UUID, Name: n.NameOrEmpty(), State: provision(n), Reservation: db.Text(n.Reservation),
		Conductor: n.Conductor, Maintenance: n.Maintenance, Stuck: stuckText(t, n)}
}

func conductorPage(t *topology.Topology, host string, h *History) *conductorData {
	d := &conductorData{Hostname: host}
	events, dropped, since := h.Events(host)
	for _, e := range events {
		s := string(e.State)
		if s == "" {
			s = "gone from the database"
		}
		d.History = append(d.History, historyRow{At: e.At.UTC(), State: s})
	}
	d.Dropped, d.Since = dropped, since.UTC()
	if t == nil {
		d.NotFound = len(events) == 0
		return d
	}
	c, ok := t.Conductor(host)
	if !ok {
		d.NotFound = true
		return d
	}
	d.Row = newConductorRow(t, c)
	d.Meaning = t.Rules.StateMeaning(c.State)
	d.Limits = conductorLimits(t, c)
	d.Online, d.Maintained, d.Elsewhere = c.Online, c.Maintenance, c.AffinityElsewhere
	for i := range t.Rings {
		r := &t.Rings[i]
		if slices.Contains(r.Ring.Hosts(), host) {
			d.Rings = append(d.Rings, r.Key())
		}
	}
	list := func(idx []int) (rows []nodeRow, more int) {
		// Trouble first: stuck, then locked, then the rest in id order.
		sorted := slices.Clone(idx)
		slices.SortStableFunc(sorted, func(a, b int) int { return trouble(&t.Nodes[a]) - trouble(&t.Nodes[b]) })
		for j, i := range sorted {
			if j == maxNodeRows {
				return rows, len(sorted) - j
			}
			rows = append(rows, newNodeRow(t, &t.Nodes[i]))
		}
		return rows, 0
	}
	d.Nodes, d.NodesMore = list(c.Nodes)
	d.Prepared, d.PrepMore = list(c.Prepared)
	return d
}

func trouble(n *topology.NodeInfo) int {
	switch {
	case n.Stuck != topology.NotStuck:
		return 0
	case n.Reservation != nil:
		return 1
	case n.Maintenance:
		return 2
	}
	return 3
}

// selfURLs returns the request's page without the refresh switch, and with
// it flipped.
func selfURLs(r *http.Request, off bool) (self, toggle string) {
	page := func(q url.Values) string {
		if e := q.Encode(); e != "" {
			return "/?" + e
		}
		return "/"
	}
	q := r.URL.Query()
	q.Del("refresh")
	self = page(q)
	if !off {
		q.Set("refresh", "off")
	}
	return self, page(q)
}
