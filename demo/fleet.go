package demo

import (
	"context"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"
)

// The simulated fleet: conductor groups, hardware types, conductors and nodes.
// Every row is written as Ironic's DB API writes it on SQLite: naive UTC
// timestamps in SQLAlchemy's text form, booleans as 0/1, JSON columns as
// json.dumps text ("{}" for an empty dict), and the `version` column of the
// Ironic object that owns the row: objects.Conductor's of the demo's
// release (rules.ConductorObjectVersion: the exporter tells the release
// from it), objects.Node 1.37 (Ironic 21.4's; nothing reads it);
// conductor_hardware_interfaces has none.

// nodeObjectVersion is the Node object version the nodes are written with.
const nodeObjectVersion = "1.37"

// conductorSpec is one conductor of the fleet.
type conductorSpec struct {
	host, group   string
	hardwareTypes []string
	// stopped: shut down cleanly days ago and never restarted (online=false,
	// old heartbeat, no hardware interface rows).
	stopped bool
}

// fleetConductors are the conductors, in id order. Hostnames are Ironic's
// [DEFAULT]host values.
var fleetConductors = []conductorSpec{
	{host: "cond-1", group: "", hardwareTypes: []string{"ipmi", "redfish", "idrac", "ilo"}},
	{host: "cond-2", group: "", hardwareTypes: []string{"ipmi", "redfish", "idrac", "ilo"}},
	{host: "cond-3", group: "", hardwareTypes: []string{"ipmi", "redfish", "idrac"}},
	{host: "cond-4", group: "", hardwareTypes: []string{"redfish", "ilo"}},
	{host: "cond-a1", group: "rack-a", hardwareTypes: []string{"ipmi", "redfish"}},
	{host: "cond-a2", group: "rack-a", hardwareTypes: []string{"ipmi", "redfish"}},
	{host: "cond-a3", group: "rack-a", hardwareTypes: []string{"ipmi"}},
	{host: "cond-b1", group: "rack-b", hardwareTypes: []string{"redfish", "idrac"}},
	{host: "cond-b2", group: "rack-b", hardwareTypes: []string{"redfish", "idrac"}},
	{host: "cond-b3", group: "rack-b", hardwareTypes: []string{"idrac"}},
	{host: "cond-edge1", group: "edge", hardwareTypes: []string{"redfish"}},
	{host: "cond-edge2", group: "edge", hardwareTypes: []string{"redfish", "ipmi"}},
	{host: "cond-edge3", group: "edge", hardwareTypes: []string{"redfish"}, stopped: true},
}

// weighted is a driver (hardware type) and its share of a group's nodes.
type weighted struct {
	driver string
	weight int
}

// groupSpec is one conductor group's nodes.
type groupSpec struct {
	group, prefix, resourceClass string
	nodes                        int
	drivers                      []weighted
}

// fleetGroups are the nodes by group. Some are served by no conductor: irmc
// (no conductor enables it), idrac in edge (no edge conductor enables it) and
// the whole of rack-c (a group without conductors).
var fleetGroups = []groupSpec{
	{group: "", prefix: "node", resourceClass: "baremetal.general", nodes: 790,
		drivers: []weighted{{"ipmi", 39}, {"redfish", 30}, {"idrac", 15}, {"ilo", 14}, {"irmc", 2}}},
	{group: "rack-a", prefix: "rack-a", resourceClass: "baremetal.compute", nodes: 440,
		drivers: []weighted{{"ipmi", 60}, {"redfish", 40}}},
	{group: "rack-b", prefix: "rack-b", resourceClass: "baremetal.gpu", nodes: 440,
		drivers: []weighted{{"redfish", 50}, {"idrac", 50}}},
	{group: "edge", prefix: "edge", resourceClass: "baremetal.edge", nodes: 300,
		drivers: []weighted{{"redfish", 75}, {"ipmi", 20}, {"idrac", 5}}},
	{group: "rack-c", prefix: "rack-c", resourceClass: "baremetal.compute", nodes: 25,
		drivers: []weighted{{"ipmi", 100}}},
}

// iface is one row of conductor_hardware_interfaces (without the conductor).
type iface struct {
	typ, name string
	dflt      bool
}

// commonInterfaces are registered for every hardware type.
var commonInterfaces = []iface{
	{"console", "no-console", true},
	{"deploy", "direct", true}, {"deploy", "ramdisk", false},
	{"inspect", "no-inspect", true}, {"inspect", "inspector", false},
	{"network", "flat", true}, {"network", "noop", false},
	{"rescue", "no-rescue", true},
	{"storage", "noop", true},
}

// hardwareInterfaces are the interfaces specific to each hardware type.
var hardwareInterfaces = map[string][]iface{
	"ipmi": {{"power", "ipmitool", true}, {"management", "ipmitool", true},
		{"boot", "ipxe", true}, {"boot", "pxe", false}, {"bios", "no-bios", true},
		{"raid", "no-raid", true}, {"raid", "agent", false}, {"vendor", "ipmitool", true}, {"vendor", "no-vendor", false}},
	"redfish": {{"power", "redfish", true}, {"management", "redfish", true},
		{"boot", "ipxe", true}, {"boot", "redfish-virtual-media", false}, {"bios", "redfish", true}, {"bios", "no-bios", false},
		{"raid", "redfish", true}, {"raid", "no-raid", false}, {"vendor", "redfish", true}, {"vendor", "no-vendor", false}},
	"idrac": {{"power", "idrac-redfish", true}, {"management", "idrac-redfish", true},
		{"boot", "ipxe", true}, {"boot", "idrac-redfish-virtual-media", false}, {"bios", "idrac-redfish", true},
		{"raid", "idrac-redfish", true}, {"raid", "no-raid", false}, {"vendor", "idrac-redfish", true}},
	"ilo": {{"power", "ilo", true}, {"management", "ilo", true},
		{"boot", "ilo-virtual-media", true}, {"boot", "ilo-pxe", false}, {"bios", "ilo", true},
		{"raid", "no-raid", true}, {"vendor", "ilo", true}, {"vendor", "no-vendor", false}},
}

// maintenanceReasons are free text, as operators write them.
var maintenanceReasons = []string{"BMC unreachable", "fan failure, ticket HW-4711", "firmware upgrade", "disk replaced, needs cleaning"}

// sqlaTime formats t as SQLAlchemy stores a DATETIME on SQLite: naive UTC
// with microseconds, always six digits.
func sqlaTime(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05.000000") }

// jsonList is Python's json.dumps of a list of plain strings.
func jsonList(items []string) string {
	q := make([]string, len(items))
	for i, s := range items {
		q[i] = `"` + s + `"`
	}
	return "[" + strings.Join(q, ", ") + "]"
}

// newUUID is a random (version 4) UUID from rng, deterministic for a seed.
func newUUID(rng *rand.Rand) string {
	var b [16]byte
	for i := range b {
		b[i] = byte(rng.Uint32())
	}
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

func pickDriver(rng *rand.Rand, ds []weighted) string {
	total := 0
	for _, d := range ds {
		total += d.weight
	}
	n := rng.IntN(total)
	for _, d := range ds {
		if n < d.weight {
			return d.driver
		}
		n -= d.weight
	}
	return ds[len(ds)-1].driver
}

// registerInterfaces writes the hardware interface rows of a conductor, as
// objects.Conductor.register_hardware_interfaces does at start-up.
func registerInterfaces(ctx context.Context, tx *sql.Tx, conductorID int64, hardwareTypes []string, now time.Time) error {
	for _, ht := range hardwareTypes {
		for _, f := range append(append([]iface(nil), hardwareInterfaces[ht]...), commonInterfaces...) {
			if _, err := tx.ExecContext(ctx, `INSERT INTO conductor_hardware_interfaces
  (created_at, conductor_id, hardware_type, interface_type, interface_name, "default")
VALUES (?, ?, ?, ?, ?, ?)`, sqlaTime(now), conductorID, ht, f.typ, f.name, f.dflt); err != nil {
				return fmt.Errorf("registering hardware interfaces of conductor %d: %w", conductorID, err)
			}
		}
	}
	return nil
}

// insertNode writes node n, named name, and sets its id and provision state.
// enrolled: a node just created through the API (provision state enroll, no
// power state, no timestamps but created_at); otherwise a node that has been
// in service for a while.
func insertNode(ctx context.Context, tx *sql.Tx, rng *rand.Rand, n *simNode, name, rc string, now time.Time, enrolled bool) error {
	var (
		created               = now
		updated, provUpdated  any
		power, instance       any
		provision             = "enroll"
		maintenance           = false
		maintenanceReason     any
		properties            = "{}"
		powerIface, mgmtIface any
	)
	if !enrolled {
		created = now.Add(-time.Duration(1+rng.IntN(400)) * 24 * time.Hour).Add(-time.Duration(rng.IntN(86400)) * time.Second)
		updated = sqlaTime(now.Add(-time.Duration(rng.IntN(86400)) * time.Second))
		provUpdated = updated
		switch r := rng.IntN(100); {
		case r < 72:
			provision, power, instance = "active", "power on", newUUID(rng)
		case r < 88:
			provision, power = "available", "power off"
		case r < 94:
			provision, power = "manageable", "power off"
		case r < 97:
			provision, power = "clean wait", "power on"
		case r < 98:
			provision, power = "deploy failed", "power on"
		default:
			provision = "enroll"
		}
		if rng.IntN(50) == 0 {
			maintenance = true
			maintenanceReason = maintenanceReasons[rng.IntN(len(maintenanceReasons))]
		}
		properties = fmt.Sprintf(`{"cpus": %d, "memory_mb": %d, "local_gb": %d, "cpu_arch": "x86_64"}`,
			[]int{32, 64, 128}[rng.IntN(3)], []int{131072, 262144, 524288}[rng.IntN(3)], []int{480, 960, 1920}[rng.IntN(3)])
		if hw, ok := hardwareInterfaces[n.driver]; ok {
			powerIface, mgmtIface = hw[0].name, hw[1].name
		}
	}
	res, err := tx.ExecContext(ctx, `INSERT INTO nodes
  (created_at, updated_at, version, uuid, instance_uuid, name, power_state, provision_state, provision_updated_at,
   instance_info, properties, driver, driver_info, driver_internal_info, clean_step, deploy_step,
   resource_class, raid_config, target_raid_config, conductor_group, maintenance, maintenance_reason,
   console_enabled, extra, protected, retired, network_data, power_interface, management_interface)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, '{}', ?, ?, '{}', '{}', '{}', '{}', ?, '{}', '{}', ?, ?, ?, 0, '{}', 0, 0, '{}', ?, ?)`,
		sqlaTime(created), updated, nodeObjectVersion, n.uuid, instance, name, power, provision, provUpdated,
		properties, n.driver, rc, n.group, maintenance, maintenanceReason, powerIface, mgmtIface)
	if err != nil {
		return fmt.Errorf("inserting node %s: %w", n.uuid, err)
	}
	n.state, n.maintenance = provision, maintenance
	if u, ok := instance.(string); ok {
		n.instance = u
	}
	n.id, err = res.LastInsertId()
	return err
}
