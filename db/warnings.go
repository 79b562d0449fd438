package db

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"unicode/utf8"
)

// addNodes adds the problems of a node read.
func (w *warner) addNodes(nw []nodeWarning) {
	for _, x := range nw {
		w.addN(tableNodes, x.reason, x.rows, x.line)
	}
}

// rowTally counts the nodes with one kind of problem and names the first.
type rowTally struct {
	n     int
	last  int64
	first string
}

func (t *rowTally) add(uuid string, id int64, column string) {
	if t.n > 0 && t.last == id {
		return // one count per row
	}
	if t.n++; t.n == 1 {
		t.first = fmt.Sprintf("node %s (id %d), column %s", strings.ToValidUTF8(uuid, "\uFFFD"), id, column)
	}
	t.last = id
}

// The tables and reasons of WarningCount (bounded values, for labels).
const (
	tableConductors         = "conductors"
	tableHardwareInterfaces = "conductor_hardware_interfaces"
	tableNodes              = "nodes"

	// ReasonBadJSON: a JSON column (conductors.drivers) that does not
	// decode; read as empty.
	ReasonBadJSON = "bad_json"
	// ReasonBadTimestamp: a timestamp column that holds no timestamp;
	// read as NULL.
	ReasonBadTimestamp = "bad_timestamp"
	// ReasonNotUTF8: text that is not UTF-8 (e.g. a PostgreSQL SQL_ASCII
	// or a MySQL latin1 database); invalid bytes read as U+FFFD.
	ReasonNotUTF8 = "not_utf8"
	// ReasonNull: NULL in a column Ironic's model declares NOT NULL; read
	// as Ironic's default ("" for conductor_group), or the row skipped
	// (a NULL hardware_type).
	ReasonNull = "null"
)

// warner collects the problems of the rows of one snapshot.
type warner struct {
	lines  []string
	counts map[[2]string]int
}

func (w *warner) add(table, reason, line string) { w.addN(table, reason, 1, line) }

func (w *warner) addN(table, reason string, rows int, line string) {
	if w.counts == nil {
		w.counts = map[[2]string]int{}
	}
	w.counts[[2]string{table, reason}] += rows
	w.lines = append(w.lines, line)
}

// conductorText checks one text column of a conductor row: NULL reads as
// "", text that is not UTF-8 has its invalid bytes replaced.
func (w *warner) conductorText(id int64, host, column string, valid bool, v string) string {
	host = strings.ToValidUTF8(host, "\uFFFD")
	if !valid {
		w.add(tableConductors, ReasonNull, fmt.Sprintf("conductor %q (id %d): %s is NULL, read as \"\"", host, id, column))
		return ""
	}
	if !utf8.ValidString(v) {
		v = strings.ToValidUTF8(v, "\uFFFD")
		w.add(tableConductors, ReasonNotUTF8, fmt.Sprintf("conductor %q (id %d): %s is not UTF-8, read as %q", host, id, column, v))
	}
	return v
}

func (w *warner) result() ([]string, []WarningCount) {
	if len(w.counts) == 0 {
		return w.lines, nil
	}
	out := make([]WarningCount, 0, len(w.counts))
	for _, k := range slices.SortedFunc(maps.Keys(w.counts), func(a, b [2]string) int { return slices.Compare(a[:], b[:]) }) {
		out = append(out, WarningCount{Table: k[0], Reason: k[1], Rows: w.counts[k]})
	}
	return w.lines, out
}
