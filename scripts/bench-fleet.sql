-- A benchmark fleet in an Ironic schema (scripts/ironic-schema.sh):
-- 300 conductors in 6 groups, each registering 4 hardware types with 4
-- interfaces each, and :nodes nodes spread over the 24 rings, enrolled one
-- a second up to a day before (created_at naive UTC, as Ironic writes it).
-- psql -v nodes=100000 -f scripts/bench-fleet.sql DBNAME
DELETE FROM nodes;
DELETE FROM conductor_hardware_interfaces;
DELETE FROM conductors;
INSERT INTO conductors (id, hostname, drivers, online, conductor_group, created_at, updated_at)
SELECT i, 'conductor-' || i || '.example.com', '["ipmi","redfish","idrac","ilo"]', true,
       (ARRAY['', 'rack1', 'rack2', 'rack3', 'edge-a', 'edge-b'])[1 + i % 6],
       now() AT TIME ZONE 'utc', now() AT TIME ZONE 'utc'
FROM generate_series(1, 300) i;
INSERT INTO conductor_hardware_interfaces (conductor_id, hardware_type, interface_type, interface_name, "default", created_at)
SELECT c, hw, it, it || '-impl', true, now()
FROM generate_series(1, 300) c, unnest(ARRAY['ipmi','redfish','idrac','ilo']) hw,
     unnest(ARRAY['boot','deploy','power','management']) it;
INSERT INTO nodes (uuid, name, driver, conductor_group, provision_state, power_state, maintenance, created_at)
SELECT md5(i::text)::uuid::text, 'node-' || i,
       (ARRAY['ipmi','redfish','idrac','ilo'])[1 + i % 4],
       (ARRAY['', 'rack1', 'rack2', 'rack3', 'edge-a', 'edge-b'])[1 + (i / 4) % 6],
       'active', 'power on', false, (now() AT TIME ZONE 'utc') - interval '1 day' - (:nodes - i) * interval '1 second'
FROM generate_series(1, :nodes) i;
ANALYZE;
