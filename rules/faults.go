package rules

// Faults are the values Ironic writes into nodes.fault when it puts a node
// in maintenance itself (ironic/common/faults.py VALID_FAULTS): a power
// state sync that failed (_power_failure_handling), a cleaning or a rescue
// abort that failed, and from 23.0 (commit 2366a4b86) a service step that
// failed. nodes.fault exists since 11.0 (commit 6b44f269c), so on every
// schema the exporter reads.
var Faults = []string{"power failure", "clean failure", "rescue abort failure", "service failure"}

// FaultOther is the label of a fault Ironic's list does not have (a newer
// release's, or anything else a database holds): labels stay bounded.
const FaultOther = "other"

// FaultLabel returns the bounded label of a fault: its value when Ironic
// writes it, FaultOther otherwise.
func FaultLabel(fault string) string {
	for _, f := range Faults {
		if f == fault {
			return f
		}
	}
	return FaultOther
}

var serviceFailureSince = Release{23, 0} // commit 2366a4b86

// ValidFaults are the faults of this release's faults.VALID_FAULTS, in its
// order: the values its API accepts in GET /v1/nodes?fault=
// (check_allow_filter_by_fault).
func (r Rules) ValidFaults() []string {
	if r.release.AtLeast(serviceFailureSince) {
		return Faults
	}
	return Faults[:3]
}

// Healths are the values of nodes.health (34.0, commit f61755d81): the
// hardware health the BMC reported at the node's last power state sync
// (ManagementInterface.get_node_health; Redfish's Status.Health).
var Healths = []string{"OK", "Warning", "Critical"}

// HealthLabel returns the bounded label of a health value: its value when
// Ironic writes it, FaultOther ("other") otherwise.
func HealthLabel(health string) string {
	for _, h := range Healths {
		if h == health {
			return h
		}
	}
	return FaultOther
}

// removedHardwareTypes are hardware types Ironic removed, with the release
// that removed them: nodes still enrolled with one have no ring after the
// upgrade (no conductor can register the type any more).
var removedHardwareTypes = map[string]Release{
	"oneview":  {12, 0}, // commit abb086577
	"xclarity": {26, 0}, // commit c02ad76fe
	"ibmc":     {26, 0}, // commit f14794ca2
	"ilo":      {36, 0}, // commit afb64cf26
	"ilo5":     {36, 0}, // commit afb64cf26
	"irmc":     {36, 0}, // commit 908d4d35f
	"snmp":     {36, 0}, // commit 95f99ac58
}

// HardwareTypeRemoved reports whether Ironic of this release no longer has
// the hardware type at all, and the release that removed it.
func (r Rules) HardwareTypeRemoved(hardwareType string) (Release, bool) {
	since, ok := removedHardwareTypes[hardwareType]
	return since, ok && r.release.AtLeast(since)
}

// HistorySeverityError is node_history's severity of an error event:
// node_history_record (ironic/conductor/utils.py, fbaad948d and 18.2's API)
// writes "ERROR" when the event is an error (it also sets last_error), else
// "INFO".
const HistorySeverityError = "ERROR"
