package api

import (
	"cmp"
	"strings"

	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/topology"
)

// collation mimics how Ironic's database compares the strings it looks up,
// filters and sorts by. On MySQL/MariaDB Ironic's tables use a
// case-insensitive collation (utf8*_general_ci): GET /v1/conductors/host
// finds the row stored as "Host". PostgreSQL and SQLite compare bytes.
// Values computed in Python (the node's conductor) always compare exactly.
type collation struct {
	fold      bool // case-insensitive equality and order (MySQL)
	unicode   bool // with fold: utf8mb4_unicode_ci's order (MySQL, Ironic 35.0+)
	nullsLast bool // NULL after values in ascending order (PostgreSQL)
}

func collationOf(t *topology.Topology) collation {
	return collation{fold: t.Collation.FoldCase, unicode: t.Collation.UnicodeCI, nullsLast: t.Collation.NullsLast}
}

func (c collation) equal(a, b string) bool {
	if c.fold {
		return strings.EqualFold(a, b)
	}
	return a == b
}

// compare orders strings; case-insensitively (ASCII letters) under fold,
// by utf8mb4_unicode_ci's weights under unicode, with the bytes as the
// tie-break so the order stays total.
func (c collation) compare(a, b string) int {
	if c.fold {
		weight := lowerWeight
		if c.unicode {
			weight = unicodeWeight
		}
		for i := range min(len(a), len(b)) {
			if o := cmp.Compare(weight(a[i]), weight(b[i])); o != 0 {
				return o
			}
		}
		if o := cmp.Compare(len(a), len(b)); o != 0 {
			return o
		}
	}
	return strings.Compare(a, b)
}

// uciPunctuation is the order of the ASCII punctuation and symbols among
// themselves in the Unicode Collation Algorithm's default table, which
// utf8mb4_unicode_ci uses (non-ignorable, primary level): all of them sort
// before the digits, which sort before the letters.
const uciPunctuation = " _-,;:!?.'\"()[]{}@*/\\&#%`^+<=>|~$"

// unicodeWeight is a byte's primary weight under utf8mb4_unicode_ci, for
// the ASCII of hostnames, names and driver names; other bytes (UTF-8
// sequences) sort after every ASCII character, by value.
func unicodeWeight(b byte) int {
	switch {
	case b >= '0' && b <= '9':
		return 100 + int(b-'0')
	case b >= 'a' && b <= 'z':
		return 200 + int(b-'a')
	case b >= 'A' && b <= 'Z':
		return 200 + int(b-'A')
	case b >= 0x80:
		return 300 + int(b)
	}
	if i := strings.IndexByte(uciPunctuation, b); i >= 0 {
		return 10 + i
	}
	return int(b) - 64 // control characters first
}

// lowerWeight is a byte's weight under utf8*_general_ci for ASCII: its
// lower case.
func lowerWeight(c byte) int {
	if c >= 'A' && c <= 'Z' {
		c += 'a' - 'A'
	}
	return int(c)
}

// compareNullable orders nil (NULL) as the database orders NULL.
func (c collation) compareNullable(a, b *string) int {
	if o, null := c.compareNulls(a == nil, b == nil); null {
		return o
	}
	return c.compare(*a, *b)
}

// compareNulls orders two values of which one or both are NULL as the
// database does; null is false when neither is, for the caller to compare
// the values.
func (c collation) compareNulls(aNull, bNull bool) (o int, null bool) {
	first := -1 // NULL's order against a value
	if c.nullsLast {
		first = 1
	}
	switch {
	case aNull && bNull:
		return 0, true
	case aNull:
		return first, true
	case bNull:
		return -first, true
	}
	return 0, false
}

// conductor finds a conductor by hostname as the database would.
func (c collation) conductor(t *topology.Topology, hostname string) (*topology.ConductorInfo, bool) {
	if ci, ok := t.Conductor(hostname); ok || !c.fold {
		return ci, ok
	}
	for i := range t.Conductors {
		if strings.EqualFold(t.Conductors[i].Hostname, hostname) {
			return &t.Conductors[i], true
		}
	}
	return nil, false
}

// node finds the node whose field f (nodeFieldUUID or nodeFieldName)
// equals ident as the database would: the topology's exact index first,
// then, under a case-insensitive collation, every node.
func (c collation) node(t *topology.Topology, f *nodeField, ident string) (*topology.NodeInfo, bool) {
	if n, ok := t.Node(ident); ok {
		if v := f.str(n); v != nil && *v == ident {
			return n, true
		}
	}
	if c.fold {
		for i := range t.Nodes {
			if v := f.str(&t.Nodes[i]); v != nil && strings.EqualFold(*v, ident) {
				return &t.Nodes[i], true
			}
		}
	}
	return nil, false
}

// paginationOrder is the order of Ironic's paginate_query: by the sort key,
// then by id, the whole order reversed for sort_dir=desc.
func paginationOrder[T any](key func(a, b T) int, id func(T) int64, desc bool) func(a, b T) int {
	return func(a, b T) int {
		c := cmp.Or(key(a, b), cmp.Compare(id(a), id(b)))
		if desc {
			c = -c
		}
		return c
	}
}
