package novadb

// The statements, the same text on PostgreSQL, MySQL/MariaDB and SQLite.
// services.binary is written qualified: BINARY is a reserved word of MySQL
// and PostgreSQL, and both accept any word after a table's name and a dot.
//
// Every filter is one Nova's own query makes, in the cell database's own
// comparison (so a MySQL collation compares as Nova's query does): the
// exporter narrows nothing that Nova's answer reads.
const (
	// SQLCellMappings lists nova_api's cells (objects.CellMappingList
	// .get_all, ordered by id as Nova's query is). cell0 is skipped by its
	// uuid (nova.Cell0UUID), never by name.
	SQLCellMappings = `SELECT uuid, name, database_connection FROM cell_mappings ORDER BY id`

	// SQLServices reads the nova-compute services that are not deleted:
	// the rows service_get_all_computes_by_hv_type's filters deleted = 0
	// and binary = 'nova-compute' keep (nova/db/main/api.py, commit
	// 6047d790a3); disabled ones too, for the metrics and DefaultComputes.
	SQLServices = `SELECT id, host, services.binary, disabled, forced_down, created_at, last_seen_up, version
FROM services
WHERE deleted = 0 AND services.binary = 'nova-compute'
ORDER BY id`

	// SQLComputeNodes reads the ironic compute nodes, soft-deleted ones
	// too: the join of service_get_all_computes_by_hv_type does not filter
	// compute_nodes.deleted.
	SQLComputeNodes = `SELECT uuid, host, hypervisor_hostname, deleted
FROM compute_nodes
WHERE hypervisor_type = 'ironic'
ORDER BY id`

	// SQLInstances reads the live instances of the hosts that have an
	// ironic compute node (live or soft-deleted): the rows
	// InstanceList.get_uuids_by_host (deleted = 0, host = CONF.host) gives
	// every compute whose view the exporter computes without a settings
	// file (nova.DefaultComputes). On MySQL the IN compares case-
	// insensitively, a superset that package nova narrows to the exact
	// host, as Nova's dict of uuids by stored host does.
	SQLInstances = `SELECT uuid, host, node
FROM instances
WHERE deleted = 0 AND host IN (SELECT host FROM compute_nodes WHERE hypervisor_type = 'ironic')
ORDER BY id`

	// SQLProbeComputeNodes and SQLProbeInstances ask whether a table may
	// have changed since the last read: oslo.db's TimestampMixin sets
	// created_at on insert and updated_at on every ORM update; its
	// soft_delete keeps updated_at and sets deleted_at; count and max(id)
	// catch rows archived or purged (nova-manage db archive_deleted_rows).
	SQLProbeComputeNodes = `SELECT count(*), coalesce(max(id), 0), max(created_at), max(updated_at), max(deleted_at) FROM compute_nodes`
	SQLProbeInstances    = `SELECT count(*), coalesce(max(id), 0), max(created_at), max(updated_at), max(deleted_at) FROM instances`
)

// SQLInstancesOfHost reads the live instances of one host: for a compute of
// the settings file that has no ironic compute node (its rows all moved to
// other computes), whose instances SQLInstances does not read. param is
// its one parameter's marker (dbconn.Param).
func SQLInstancesOfHost(param string) string {
	return `SELECT uuid, host, node FROM instances WHERE deleted = 0 AND host = ` + param + ` ORDER BY id`
}
