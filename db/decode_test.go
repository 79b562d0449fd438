package db

import (
	"database/sql"
	"strings"
	"testing"
	"unsafe"
)

// TestDecoderKeepsLastStrings: a row of a node the last read returned keeps
// that node's UUID, name and instance strings when their bytes are equal,
// and has its own where they differ or the node is new.
func TestDecoderKeepsLastStrings(t *testing.T) {
	name, inst := "node-1", "inst-1"
	prev := []*Node{{ID: 1, UUID: "u-1", Name: &name, InstanceUUID: &inst}, {ID: 3, UUID: "u-3"}}
	row := func(id int64, uuid, name, inst string) *nodeRow {
		r := &nodeRow{id: id}
		r.text[colUUID], r.text[colGroup] = sql.RawBytes(uuid), sql.RawBytes("")
		if name != "" {
			r.text[colName] = sql.RawBytes(name)
		}
		if inst != "" {
			r.text[colInstance] = sql.RawBytes(inst)
		}
		return r
	}
	dec := newNodeDecoder(3)
	dec.prev = prev
	dec.add(row(1, "u-1", "node-1", "inst-2"))
	dec.add(row(2, "u-2", "node-2", ""))
	dec.add(row(3, "u-3x", "", ""))
	got := dec.out
	if got[0].Name != &name || unsafeData(got[0].UUID) != unsafeData(prev[0].UUID) {
		t.Errorf("node 1 does not keep its name and UUID")
	}
	if got[0].InstanceUUID == &inst || *got[0].InstanceUUID != "inst-2" {
		t.Errorf("node 1's instance: %v, want a new inst-2", got[0].InstanceUUID)
	}
	if got[1].UUID != "u-2" || *got[1].Name != "node-2" || got[1].InstanceUUID != nil {
		t.Errorf("node 2: %+v", got[1])
	}
	if got[2].UUID != "u-3x" || got[2].Name != nil {
		t.Errorf("node 3: %+v", got[2])
	}
}

// unsafeData is where s's bytes are, to tell a shared string from an equal one.
func unsafeData(s string) *byte { return unsafe.StringData(s) }

// TestDecoderKeepsUnchangedNodes: a row equal in every column to the node
// the last read returned is that *Node; a row that differs in any column
// (here its power state, or its affinity) is a new Node, and the last
// read's node is not written.
func TestDecoderKeepsUnchangedNodes(t *testing.T) {
	row := func(id int64, power string, affinity int64) *nodeRow {
		r := &nodeRow{id: id}
		r.text[colUUID], r.text[colGroup], r.text[colDriver] = sql.RawBytes("u"), sql.RawBytes("g"), sql.RawBytes("ipmi")
		r.text[colName], r.text[colPower], r.text[colProvision] = sql.RawBytes("name"), sql.RawBytes(power), sql.RawBytes("active")
		r.affinity = anyInt{Int64: affinity, Valid: true}
		r.maintenance = anyBool{V: true}
		return r
	}
	first := newNodeDecoder(3)
	for id := range int64(3) {
		first.add(row(id+1, "power on", 7))
	}
	prev := first.out
	kept := *prev[1]
	dec := newNodeDecoder(3)
	dec.prev = prev
	dec.add(row(1, "power on", 7))
	dec.add(row(2, "power off", 7))
	dec.add(row(3, "power on", 8))
	got := dec.out
	if got[0] != prev[0] {
		t.Errorf("node 1, unchanged, is a new Node: %+v", got[0])
	}
	if got[1] == prev[1] || *got[1].PowerState != "power off" || *prev[1] != kept {
		t.Errorf("node 2, powered off: %+v (the last read's: %+v)", got[1], prev[1])
	}
	if got[2] == prev[2] || got[2].ConductorAffinity != 8 || got[2].Name != prev[2].Name {
		t.Errorf("node 3, another affinity: %+v, want a new Node sharing its name", got[2])
	}
}

// TestDecoderAffinityBeyondInt32: a conductor_affinity that Ironic's Integer
// column cannot hold (SQLite stores it) reads as -1, set, with a warning
// naming the row; one within int32 reads as itself, without one.
func TestDecoderAffinityBeyondInt32(t *testing.T) {
	row := func(id, affinity int64) *nodeRow {
		r := &nodeRow{id: id}
		r.text[colUUID], r.text[colGroup] = sql.RawBytes("u-"+string(rune('0'+id))), sql.RawBytes("")
		r.affinity = anyInt{Int64: affinity, Valid: true}
		return r
	}
	dec := newNodeDecoder(2)
	dec.add(row(1, -2147483648))
	dec.add(row(2, 1<<40))
	got := dec.out
	if !got[0].HasConductorAffinity || got[0].ConductorAffinity != -2147483648 {
		t.Errorf("node 1: %+v, want affinity -2147483648", got[0])
	}
	if !got[1].HasConductorAffinity || got[1].ConductorAffinity != -1 {
		t.Errorf("node 2: %+v, want affinity -1", got[1])
	}
	w := dec.warnings()
	if len(w) != 1 || w[0].reason != ReasonOutOfRange || w[0].rows != 1 || !strings.Contains(w[0].line, "node u-2 (id 2), column conductor_affinity") {
		t.Errorf("warnings: %+v", w)
	}
}
