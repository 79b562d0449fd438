package testenv

// MiniSchemaPostgreSQL is the smallest PostgreSQL schema the exporter reads
// as Ironic's (the columns of the conductors, conductor_hardware_interfaces
// and nodes tables it selects), for tests that need rows Ironic's own
// migrations and DB API would never write (a SQL_ASCII database holding
// bytes that are not UTF-8, say). Tests of Ironic's behaviour use its real
// schema instead.
var MiniSchemaPostgreSQL = []string{
	`CREATE TABLE conductors (id serial PRIMARY KEY, hostname varchar(255) NOT NULL, conductor_group varchar(255),
			online boolean, drivers text, created_at timestamp, updated_at timestamp, version varchar(15))`,
	`CREATE TABLE conductor_hardware_interfaces (conductor_id int, hardware_type varchar(255))`,
	`CREATE TABLE nodes (id serial PRIMARY KEY, uuid varchar(36), name varchar(255), driver varchar(255),
			conductor_group varchar(255), reservation varchar(255), instance_uuid varchar(36), power_state varchar(15),
			provision_state varchar(15), maintenance boolean, resource_class varchar(80), created_at timestamp, updated_at timestamp,
			conductor_affinity int, target_provision_state varchar(15), owner varchar(255), lessee varchar(255))`,
}
