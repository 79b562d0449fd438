package db

import (
	"errors"

	"github.com/lib/pq"
)

// queries are the statements of a snapshot, as a dialect words them, with
// the columns of SQLConductors, SQLHardwareTypes and SQLNodes; a timestamp
// may come as a time or as SQLAlchemy's text, a boolean as a boolean or an
// integer, and the hardware types need not be distinct (the reader
// deduplicates them byte-wise).
type queries struct {
	conductors, hardwareTypes string
	// nodes reads the nodes of a schema of each generation (NULL for the
	// columns it lacks, see schemaGen).
	nodes [schemaGens]string
	// probe is SQLNodeProbe as the dialect words it.
	probe string
	// changedNodes are nodes limited to the rows that may have changed
	// since a probe (changedWhere), read as nodes is.
	changedNodes [schemaGens]string
	// binaryNodes says that nodes and changedNodes hand their text
	// columns over as bytea and their timestamps as timestamp_send's
	// bytes, to be run as a prepared statement (see pgQueries).
	binaryNodes bool
}

// pgRawTextQueries are the statements for a PostgreSQL database whose text
// is not all valid in its encoding (SQL_ASCII): the text columns come as
// bytea, unconverted, so that the server never refuses a row.
var pgRawTextQueries = func() queries {
	q := pgRawTextWording.queries(dollarParam)
	q.hardwareTypes = `SELECT DISTINCT conductor_id, convert_to(hardware_type, 'SQL_ASCII')
FROM conductor_hardware_interfaces
ORDER BY 1, 2`
	return q
}()

// isInvalidEncoding reports PostgreSQL's refusal to convert text to the
// client's encoding (22021 character_not_in_repertoire, 22P05
// untranslatable_character).
func isInvalidEncoding(err error) bool {
	var pqErr *pq.Error
	return errors.As(err, &pqErr) && (pqErr.Code == "22021" || pqErr.Code == "22P05")
}

// standardQueries are the statements as written above (PostgreSQL's
// pgQueries read the nodes from them in binary).
var standardQueries = plainWording.queries(dollarParam)

// pgQueries are standardQueries with the nodes (all, and the delta read's)
// read in binary: text through textsend (bytea of the text in the client's
// encoding, which PostgreSQL checks as it does for text), timestamps through
// timestamp_send (their microseconds), id and conductor_affinity as
// integers, maintenance as text. Prepared, lib/pq hands bytea and integers
// over without a copy or a parse, where a text column costs it a string and
// a conversion, and a timestamp a parse: about half the client's work per
// row, which keeps the full read inside 2x the COPY of the same rows.
var pgQueries = func() queries {
	q := standardQueries
	binary := pgBinaryWording.queries(dollarParam)
	q.nodes, q.changedNodes = binary.nodes, binary.changedNodes
	q.binaryNodes = true
	return q
}()

// mysqlQueries: MySQL compares strings by the column's collation, which in
// Ironic's schema is case- and accent-insensitive (utf8mb3_general_ci) and
// pads spaces: SELECT DISTINCT would fold "ipmi" and "Ipmi" into one row,
// where Ironic (Python) keeps two ring keys. The rows are read as they are
// and deduplicated byte-wise by the reader.
var mysqlQueries = func() queries {
	q := plainWording.queries(questionParam)
	q.hardwareTypes = `SELECT conductor_id, hardware_type
FROM conductor_hardware_interfaces
ORDER BY conductor_id`
	return q
}()

// sqliteQueries read timestamps as text (sqliteWording).
var sqliteQueries = func() queries {
	q := sqliteWording.queries(questionParam)
	q.probe = `SELECT count(*), coalesce(max(id), 0), CAST(max(updated_at) AS TEXT), count(reservation),
       CAST(max(created_at) AS TEXT)
FROM nodes`
	return q
}()

// queriesFor are the statements of a snapshot on backend.
func queriesFor(backend Backend) *queries {
	switch backend {
	case BackendMySQL:
		return &mysqlQueries
	case BackendSQLite:
		return &sqliteQueries
	}
	return &pgQueries
}
