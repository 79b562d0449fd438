// Package api serves Ironic-compatible JSON about conductors and the nodes
// the hash rings map to them, rendered from the cached topology of package
// topology. A handler never runs SQL: a scrape of /metrics and a lookup here
// at the same moment read the same topology.
//
// The answers reproduce Ironic 21.4's API byte for byte where the sidecar
// has the data (checked against a running Ironic; see
// conformance/captured): Python's json.dumps formatting, key order, link
// formats, next links, error bodies and messages, version headers.
//
// # Routes (GET and HEAD)
//
//	/                                  service root (versions, default_version)
//	/v1, /v1/                          v1 document (links to nodes, and conductors from 1.49)
//	/v1/conductors                     marker, limit, sort_key, sort_dir, fields, detail
//	/v1/conductors/{hostname}          fields
//	/v1/nodes                          the filters below, fields, detail, limit, marker, sort_key, sort_dir
//	/v1/nodes/detail                   the same without fields and detail
//	/v1/nodes/{node_ident}             fields
//	/v1/nodes/{node_ident}/conductor   fields; the conductor the ring maps the node to
//
// Like Ironic, paths without "/v1" (the bookmark links), trailing slashes and
// a ".json" extension are accepted. Node filters: conductor, conductor_group,
// driver, fault, provision_state, resource_class, maintenance, associated,
// instance_uuid. Sort keys: conductors id, hostname, conductor_group,
// online, created_at, updated_at; nodes id, uuid, name, instance_uuid,
// power_state, provision_state, maintenance, driver, conductor_group,
// fault, resource_class, reservation, created_at, updated_at.
//
// Status codes: 200; 400 invalid parameters (Ironic's messages, including
// "Unexpected arguments: x" for unknown ones); 404 unknown resources and
// paths, conductor resources below 1.49, a node no conductor can serve on
// /conductor (Ironic's NoValidHost); 405 other methods (read-only); 501
// Ironic's resources not served; 406 unsupported microversions and fields or
// filters newer than the request's microversion; 503 while the database was
// never read (a stale topology is served).
//
// # Microversions
//
// X-OpenStack-Ironic-API-Version (or "OpenStack-API-Version: baremetal
// X.Y") selects the microversion as in Ironic: "latest" is the maximum,
// anything but "<int>.<int>" and versions outside [1.1, max] are 406 with
// Ironic's messages. As in Ironic, responses carry the Minimum and Maximum
// headers once the version header was parsed (also when it is out of range)
// and X-OpenStack-Ironic-API-Version once negotiated; routing errors and
// unparsable versions carry none, and so does the root up to Ironic 26.0
// (from 26.1 it negotiates as /v1 does: the release read from the database
// decides). Every response has an Openstack-Request-Id. The maximum is 1.49
// by default (Options.MaxMicroversion, up to 1.82): the version that added
// conductors; nothing the sidecar serves changed after it. Below 1.49 the
// conductor resources are 404, the node's conductor field is absent and the
// conductor filter is 406; older fields (conductor_group 1.46,
// resource_class 1.21, name 1.5) and states ("available" before 1.2,
// "inspect wait" before 1.39) follow Ironic too.
//
// # Where the sidecar differs from Ironic 21.4, on purpose
//
//   - A request without a version header is answered as the maximum version
//     (Ironic: 1.1, where /v1/conductors is a 404).
//   - Hostnames are looked up as stored: host:port and other names Ironic's
//     logical-name check refuses (400 "Expected name for hostname") work, in
//     the path and as marker.
//   - fields=...,conductor works on node lists (Ironic 21.4: 500).
//   - /v1/nodes/{node_ident}/conductor exists (the spec's endpoint; Ironic
//     21.4 routes it to the node with fields=conductor).
//   - Its 404 for a node no conductor can serve has 21.4's NoValidHost
//     reason on every release (Ironic 24.1 appends "Ensure the driver is
//     valid and enabled.", commit 4a9a7949c).
//   - The conductor filter applies before pagination (Ironic filters a page
//     already cut to limit, so pages come out short), and next links keep
//     the filters (Ironic drops all but associated, maintenance and retired
//     when true). Without filters next links are Ironic's bytes.
//   - Values in links are percent-encoded where a URL needs it; for
//     hostnames, names and UUIDs of unreserved characters and ':' they are
//     Ironic's bytes.
//   - Pages after a marker include rows whose sort key is NULL (oslo.db's
//     marker criteria skip them); NULL sorts last in ascending order on
//     PostgreSQL, first elsewhere, and strings compare case-insensitively on
//     MySQL/MariaDB, as the database would.
//   - HEAD works (Ironic: 405); other methods are 405 with "Allow: GET, HEAD"
//     and a faultstring saying the sidecar is read-only (Ironic answers
//     OPTIONS and POST / with 200). Ironic's resources the sidecar does not
//     serve (/v1/ports, /v1/chassis, ..., node sub-resources such as
//     /states) are a 501 whose faultstring says so: ironicclient prints
//     it, and a 501 is not mistaken for a missing object.
//   - The v1 document lists only nodes and conductors; trailing slashes work
//     everywhere (Ironic 404s /v1/nodes/detail/).
//   - GET /v1/nodes/{node_ident}/conductor below 1.49 is a 404, as the
//     specification says for conductor resources (Ironic 21.4: 406, since
//     it treats the path as the node's conductor field).
//   - A path with an invalid %-escape (/v1/nodes/%zz) is refused by Go's
//     HTTP server with a plain-text "400 Bad Request" before any handler
//     runs; Ironic keeps the escape literally and answers its JSON 400
//     "Expected UUID or name for node: %zz". Both are a 400 that ironicclient
//     reports as an error.
//
// # Extensions
//
// The node representation has one field Ironic does not have,
// AffinityField ("exporter_conductor_affinity"): the hostname of the
// conductor whose id is in nodes.conductor_affinity, the one that last
// prepared the node's boot environment; null when unset or unknown. It is
// rendered last, in the detail representations and when fields= names it,
// from 1.49 like conductor. With Options.Nova (the exporter reads Nova's
// databases) a second, NovaField ("exporter_nova_computes"): the
// nova-computes that manage the node as Nova's ironic driver computes it,
// each with its cell, host, source and up (null when Nova's liveness is
// unknown: servicegroup_driver not db), [] when none, null when the Nova
// answer does not cover the node; without
// Nova it is absent and fields= naming it is a 400 saying why. Answers
// rendered from stale data (the last
// refresh failed, or the data is older than the cache's MinInterval plus a
// second) carry X-Ironic-Exporter-Stale: true and
// X-Ironic-Exporter-Data-Age (seconds, one decimal). While no topology was
// ever read, the 503 says whether the database is not Ironic's (a missing
// table or column: topology.View.Permanent) or the failure may pass.
//
// # Node fields not served
//
// The sidecar reads only the columns it needs. The node representation has
// uuid, created_at, updated_at, conductor_group, driver, fault,
// instance_uuid, maintenance, name, power_state, provision_state, reservation,
// resource_class, links and conductor; Ironic 21.4's other fields (owner,
// properties, driver_info, ...: the unserved entries of nodeFields) and the
// ports/states/portgroups/volume links are left out, and asking for one
// with fields= is a 400 that names it. Filtering or sorting by a column it
// does not have (owner, shard, ...) is a 400 too, never a silently
// wrong answer.
package api
