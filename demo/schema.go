package demo

import _ "embed"

// schemaSQL is Ironic's real schema on SQLite, as `ironic-dbsync
// create_schema` builds it, dumped by scripts/gen-demo-schema.sh.
//
//go:generate ../scripts/gen-demo-schema.sh schema.sql
//go:embed schema.sql
var schemaSQL string

// Schema returns the embedded SQL script that creates Ironic's tables (all of
// them, with their indexes) and stamps alembic_version.
func Schema() string { return schemaSQL }
