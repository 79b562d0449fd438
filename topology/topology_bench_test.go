package topology

import (
	"crypto/md5"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/db"
	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/rules"
)

// benchFleet is 300 conductors in 6 groups, each registering 4 hardware
// types, and n nodes spread over the 24 rings.
func benchFleet(n int) *db.Snapshot {
	groups := []string{"", "rack1", "rack2", "rack3", "edge-a", "edge-b"}
	types := []string{"ipmi", "redfish", "idrac", "ilo"}
	rng := rand.New(rand.NewPCG(1, 2))
	snap := &db.Snapshot{Backend: rules.PostgreSQL}
	for i := 0; i < 300; i++ {
		snap.Conductors = append(snap.Conductors, db.Conductor{
			ID: int64(i + 1), Hostname: fmt.Sprintf("conductor-%03d.example.com", i),
			ConductorGroup: groups[i%len(groups)], Online: true,
			UpdatedAt: ago(time.Duration(rng.IntN(30)) * time.Second), HardwareTypes: types,
		})
	}
	for i := 0; i < n; i++ {
		snap.Nodes = append(snap.Nodes, &db.Node{
			ID: int64(i + 1), UUID: benchUUID(rng),
			ConductorGroup: groups[rng.IntN(len(groups))], Driver: types[rng.IntN(len(types))],
		})
	}
	return snap
}

func benchUUID(rng *rand.Rand) string {
	return fmt.Sprintf("%08x-%04x-4%03x-8%03x-%012x", rng.Uint32(), rng.Uint32()&0xffff,
		rng.Uint32()&0xfff, rng.Uint32()&0xfff, rng.Uint64()&0xffffffffffff)
}

// BenchmarkMD5UUIDFloor is the floor of the mapping: one MD5 of a UUID per
// node, which any tooz-compatible lookup must pay. Compare ns/node.
func BenchmarkMD5UUIDFloor(b *testing.B) {
	snap := benchFleet(100_000)
	b.ResetTimer()
	var sink byte
	var key []byte
	for b.Loop() {
		for i := range snap.Nodes {
			key = append(key[:0], snap.Nodes[i].UUID...)
			s := md5.Sum(key)
			sink ^= s[0]
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(len(snap.Nodes)), "ns/node")
	_ = sink
}

// BenchmarkBuild maps 100,000 nodes over 300 conductors in 6 groups x 4
// hardware types from scratch: rings built, every node hashed.
func BenchmarkBuild(b *testing.B) {
	snap := benchFleet(100_000)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Build(snap, testSettings, testNow, nil); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(len(snap.Nodes)), "ns/node")
}

// BenchmarkRebuildUnchanged rebuilds over the same snapshot with the
// previous topology, as a refresh does when the change probe vouches for
// the nodes: the very node slice, conductors judged alike, so every
// node-derived result is reused (O(conductors)).
func BenchmarkRebuildUnchanged(b *testing.B) {
	snap := benchFleet(100_000)
	prev, err := Build(snap, testSettings, testNow, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		t, err := Build(snap, testSettings, testNow, prev)
		if err != nil {
			b.Fatal(err)
		}
		if !sharesNodes(prev, t) {
			b.Fatal("the node results were recomputed")
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(len(snap.Nodes)), "ns/node")
}

// BenchmarkRebuildSameRows rebuilds over a copy of the same node rows with
// the previous topology, as a refresh that read the nodes again does when
// nothing changed: rings and mappings are reused, nothing is hashed, but
// every node is walked (Build's full path).
func BenchmarkRebuildSameRows(b *testing.B) {
	snap := benchFleet(100_000)
	prev, err := Build(snap, testSettings, testNow, nil)
	if err != nil {
		b.Fatal(err)
	}
	again := copiedNodes(snap)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Build(again, testSettings, testNow, prev); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(len(snap.Nodes)), "ns/node")
}

// BenchmarkRebuildOneConductorDied rebuilds after one conductor's
// heartbeat went stale: only the four rings of its group are rebuilt and
// only their nodes rehashed.
func BenchmarkRebuildOneConductorDied(b *testing.B) {
	snap := benchFleet(100_000)
	prev, err := Build(snap, testSettings, testNow, nil)
	if err != nil {
		b.Fatal(err)
	}
	changed := *snap
	changed.Conductors = append([]db.Conductor(nil), snap.Conductors...)
	changed.Conductors[7].UpdatedAt = ago(time.Hour)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Build(&changed, testSettings, testNow, prev); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(len(snap.Nodes)), "ns/node")
}
