package db

import (
	"database/sql"
	"testing"
	"unsafe"
)

// TestDecoderKeepsLastStrings: a row of a node the last read returned keeps
// that node's UUID, name and instance strings when their bytes are equal,
// and has its own where they differ or the node is new.
func TestDecoderKeepsLastStrings(t *testing.T) {
	name, inst := "node-1", "inst-1"
	prev := []Node{{ID: 1, UUID: "u-1", Name: &name, InstanceUUID: &inst}, {ID: 3, UUID: "u-3"}}
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
