-- A benchmark Nova beside the fleet of scripts/bench-fleet.sql, in the same
-- database (its tables share no name with Ironic's): nova_api's
-- cell_mappings with one cell, :computes ironic nova-computes heartbeating
-- now, a compute_nodes row for every node and an instance on 72% of them
-- (Ironic's instance_uuid set to match), each on compute id % :computes.
-- The columns are those the exporter reads of Nova's tables.
-- psql -v computes=100 -v cell="'postgresql://...'" -f scripts/bench-nova.sql DBNAME
DROP TABLE IF EXISTS cell_mappings, services, compute_nodes, instances;
CREATE TABLE cell_mappings (id serial PRIMARY KEY, uuid varchar(36), name varchar(255), database_connection text);
CREATE TABLE services (id serial PRIMARY KEY, host varchar(255), "binary" varchar(255), disabled boolean,
  forced_down boolean, deleted integer DEFAULT 0, created_at timestamp, updated_at timestamp, last_seen_up timestamp, version integer);
CREATE TABLE compute_nodes (id serial PRIMARY KEY, uuid varchar(36), host varchar(255), hypervisor_hostname varchar(255),
  hypervisor_type varchar(255), deleted integer DEFAULT 0, created_at timestamp, updated_at timestamp, deleted_at timestamp);
CREATE TABLE instances (id serial PRIMARY KEY, uuid varchar(36), host varchar(255), node varchar(255),
  deleted integer DEFAULT 0, created_at timestamp, updated_at timestamp, deleted_at timestamp);
-- Nova's own indexes on the columns the reads filter on.
CREATE INDEX compute_nodes_hypervisor_type ON compute_nodes (hypervisor_type);
CREATE INDEX instances_host_deleted_idx ON instances (host, deleted);
INSERT INTO cell_mappings (uuid, name, database_connection) VALUES
  ('00000000-0000-0000-0000-000000000000', 'cell0', 'postgresql://nowhere/cell0'),
  ('1b9d3c4e-0f5a-4e6b-9d2c-7a8e5f4b3c21', 'cell1', :cell);
INSERT INTO services (host, "binary", disabled, forced_down, created_at, last_seen_up, version)
SELECT 'ctl' || i || '-ironic', 'nova-compute', false, false, now() AT TIME ZONE 'utc', now() AT TIME ZONE 'utc', 68
FROM generate_series(0, :computes - 1) i;
UPDATE nodes SET instance_uuid = md5('instance-' || id)::uuid::text WHERE id % 100 < 72;
INSERT INTO compute_nodes (uuid, host, hypervisor_hostname, hypervisor_type, created_at)
SELECT uuid, 'ctl' || (id % :computes) || '-ironic', uuid, 'ironic', now() AT TIME ZONE 'utc' FROM nodes;
INSERT INTO instances (uuid, host, node, created_at)
SELECT instance_uuid, 'ctl' || (id % :computes) || '-ironic', uuid, now() AT TIME ZONE 'utc' FROM nodes WHERE instance_uuid IS NOT NULL;
ANALYZE;
