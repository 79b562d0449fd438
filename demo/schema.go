package demo

import _ "embed"

// schemaSQL is Ironic's real schema on SQLite, as `ironic-dbsync
// create_schema` builds it (every table with its indexes, alembic_version
// stamped), dumped by scripts/gen-demo-schema.sh.
//
//go:generate ../scripts/gen-demo-schema.sh schema.sql
//go:embed schema.sql
var schemaSQL string
