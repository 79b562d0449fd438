package db

import (
	"errors"
	"strings"

	"github.com/lib/pq"

	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/dbconn"
	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/rules"
)

// column is one column a snapshot statement reads.
type column struct {
	name string
	kind columnKind
	// since is the schema generation that added the column: the
	// statements for an older schema read NULL in its place.
	since schemaGen
}

// schemaGen is a generation of the nodes table: the columns the exporter
// reads that a schema may lack, by the migration that added them, oldest
// first. Each generation has every column of the ones before it.
type schemaGen int8

const (
	// genRocky: the columns every supported schema has (Ironic Rocky,
	// alembic 664f85c2f622, added conductor_group).
	genRocky schemaGen = iota
	// genLessee: nodes.owner (alembic f190f9d00a11, Ironic 12.1, Stein)
	// and nodes.lessee (b2ad35726bb0, 15.0, Ussuri).
	genLessee
	// genShard: nodes.shard (alembic 4dbec778866e, Ironic 21.4, 2023.1).
	genShard
	// genParentNode: nodes.parent_node (alembic fe222f476baf, Ironic
	// 22.0, 2023.2).
	genParentNode
	// genHealth: nodes.health (alembic 9f8c7d6e5b4a, Ironic 34.0, commit
	// f61755d81).
	genHealth
	// schemaGens counts the generations; the newest is schemaGens-1.
	schemaGens
)

// columnKind is what a dialect may have to adapt in a column.
type columnKind uint8

const (
	columnPlain columnKind = iota // an integer or boolean, read as it is
	columnText                    // a text column
	columnTime                    // a timestamp column
)

// conductorColumns and nodeColumns are the columns of the conductors and
// nodes statements, in the order the readers scan them (readConductors,
// readNodes). Every dialect's statement is worded from these lists, so a
// column cannot be added to one statement and not to the others.
var (
	conductorColumns = []column{
		{name: "id"}, {name: "hostname", kind: columnText}, {name: "conductor_group", kind: columnText},
		{name: "online"}, {name: "drivers", kind: columnText},
		{name: "created_at", kind: columnTime}, {name: "updated_at", kind: columnTime},
		{name: "version", kind: columnText},
	}
	nodeColumns = []column{
		{name: "id"}, {name: "uuid", kind: columnText}, {name: "name", kind: columnText},
		{name: "driver", kind: columnText}, {name: "conductor_group", kind: columnText},
		{name: "reservation", kind: columnText}, {name: "instance_uuid", kind: columnText},
		{name: "power_state", kind: columnText}, {name: "provision_state", kind: columnText},
		{name: "maintenance"}, {name: "resource_class", kind: columnText},
		{name: "created_at", kind: columnTime}, {name: "updated_at", kind: columnTime},
		{name: "conductor_affinity"}, {name: "target_provision_state", kind: columnText},
		{name: "owner", kind: columnText, since: genLessee}, {name: "lessee", kind: columnText, since: genLessee},
		{name: "shard", kind: columnText, since: genShard}, {name: "parent_node", kind: columnText, since: genParentNode},
		{name: "fault", kind: columnText}, {name: "health", kind: columnText, since: genHealth},
	}
)

// wording is how a dialect words the columns of a statement.
type wording struct {
	// text and time word a text and a timestamp column; nil: as it is.
	text, time func(name string) string
	// null stands for a column the schema lacks.
	null string
}

// The wordings of the dialects.
var (
	// plainWording reads every column as it is (PostgreSQL, MySQL).
	plainWording = wording{null: "NULL"}
	// sqliteWording reads timestamps as text: the column's declared type
	// would make the driver parse them with formats of its own choosing.
	sqliteWording = wording{time: func(c string) string { return "CAST(" + c + " AS TEXT)" }, null: "NULL"}
	// pgRawTextWording reads text as bytea, unconverted, for a PostgreSQL
	// database whose text is not all valid in its encoding (SQL_ASCII).
	pgRawTextWording = wording{text: func(c string) string { return "convert_to(" + c + ", 'SQL_ASCII')" }, null: "NULL::bytea"}
	// pgBinaryWording reads text through textsend and timestamps through
	// timestamp_send, for the binary node read of pgQueries.
	pgBinaryWording = wording{text: func(c string) string { return "textsend(" + c + ")" },
		time: func(c string) string { return "timestamp_send(" + c + ")" }, null: "NULL::bytea"}
)

// word words one column for a schema of generation gen.
func (w wording) word(c column, gen schemaGen) string {
	switch {
	case c.since > gen:
		return w.null
	case c.kind == columnText && w.text != nil:
		return w.text(c.name)
	case c.kind == columnTime && w.time != nil:
		return w.time(c.name)
	}
	return c.name
}

// selectFrom words the statement that reads cols of table (the rows where
// where holds, all when it is ""), sorted by the primary key, as Ironic's
// list calls do by default, on a schema of generation gen (NULL for the
// columns it lacks). Lines are wrapped for the logs.
func (w wording) selectFrom(table string, cols []column, gen schemaGen, where string) string {
	var b strings.Builder
	b.WriteString("SELECT ")
	line := len("SELECT ")
	for i, c := range cols {
		s := w.word(c, gen)
		if i > 0 {
			b.WriteByte(',')
			if line+2+len(s) > 100 {
				b.WriteString("\n       ")
				line = len("       ")
			} else {
				b.WriteByte(' ')
				line += 2
			}
		}
		b.WriteString(s)
		line += len(s)
	}
	b.WriteString("\nFROM " + table)
	if where != "" {
		b.WriteString("\nWHERE " + where)
	}
	b.WriteString("\nORDER BY id")
	return b.String()
}

// changedWhere is the condition of the delta node read (readDelta): the
// rows enrolled or written since a probe, given its max(id) as the first
// parameter and, as the second and third, the time from which a write may
// have landed (changedSince). The columns are compared as stored, never
// through the wording's conversions. param words the n-th parameter.
func changedWhere(param func(n int) string) string {
	return "id > " + param(1) + " OR updated_at >= " + param(2) + " OR created_at >= " + param(3)
}

// The parameter markers of the drivers (dbconn.Param).
var (
	dollarParam   = func(n int) string { return dbconn.Param(rules.PostgreSQL, n) }
	questionParam = func(n int) string { return dbconn.Param(rules.MySQL, n) }
)

// queries words the statements of a dialect, the delta node reads with
// param's markers; the hardware types and the probe are SQLHardwareTypes
// and SQLNodeProbe, for the caller to adapt.
func (w wording) queries(param func(n int) string) queries {
	where := changedWhere(param)
	q := queries{
		conductors:    w.selectFrom("conductors", conductorColumns, genRocky, ""),
		hardwareTypes: SQLHardwareTypes,
		probe:         SQLNodeProbe,
	}
	for gen := range schemaGens {
		q.nodes[gen] = w.selectFrom("nodes", nodeColumns, gen, "")
		q.changedNodes[gen] = w.selectFrom("nodes", nodeColumns, gen, where)
	}
	return q
}

// The statements as PostgreSQL and MySQL read them.
var (
	// SQLConductors reads the conductors table.
	SQLConductors = standardQueries.conductors
	// SQLNodes reads the nodes table of the newest schema, with owner and
	// lessee for the API's policy, shard and parent_node for Nova's node
	// list; an older schema reads NULL for the columns it lacks
	// (see schemaGen).
	SQLNodes = standardQueries.nodes[schemaGens-1]
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
func queriesFor(backend rules.Backend) *queries {
	switch backend {
	case rules.MySQL:
		return &mysqlQueries
	case rules.SQLite:
		return &sqliteQueries
	}
	return &pgQueries
}
