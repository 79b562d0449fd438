package novadb

// The smallest Nova schema the reader reads, on SQLite: the columns of
// cell_mappings (nova_api) and of a cell's services, compute_nodes and
// instances that its statements select or filter on, for the demo's
// simulated Nova and for tests that need rows Nova itself would not write.
// The reader's tests of Nova's real schema are in conformance/nova.
const (
	// MiniAPISchemaSQLite is nova_api's cell_mappings.
	MiniAPISchemaSQLite = `CREATE TABLE cell_mappings (id INTEGER PRIMARY KEY, uuid VARCHAR(36), name VARCHAR(255),
  database_connection TEXT);`

	// MiniCellSchemaSQLite is a cell's services, compute_nodes and
	// instances.
	MiniCellSchemaSQLite = `
CREATE TABLE services (id INTEGER PRIMARY KEY, host VARCHAR(255), "binary" VARCHAR(255), disabled BOOLEAN,
  forced_down BOOLEAN, deleted INTEGER DEFAULT 0, created_at DATETIME, updated_at DATETIME, last_seen_up DATETIME, version INTEGER);
CREATE TABLE compute_nodes (id INTEGER PRIMARY KEY, uuid VARCHAR(36), host VARCHAR(255), hypervisor_hostname VARCHAR(255),
  hypervisor_type VARCHAR(255), deleted INTEGER DEFAULT 0, created_at DATETIME, updated_at DATETIME, deleted_at DATETIME);
CREATE TABLE instances (id INTEGER PRIMARY KEY, uuid VARCHAR(36), host VARCHAR(255), node VARCHAR(255),
  deleted INTEGER DEFAULT 0, created_at DATETIME, updated_at DATETIME, deleted_at DATETIME);
`
)
