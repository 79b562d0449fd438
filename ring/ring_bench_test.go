package ring_test

import (
	"crypto/md5"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/ring"
)

// benchUUIDs returns 100,000 random version-4 UUID strings as Ironic stores
// node.uuid, converted to bytes once, as get_conductor_for hashes them.
func benchUUIDs() [][]byte {
	rng := rand.New(rand.NewPCG(42, 42))
	keys := make([][]byte, 100_000)
	for i := range keys {
		a, b := rng.Uint64(), rng.Uint64()
		keys[i] = fmt.Appendf(nil, "%08x-%04x-4%03x-%04x-%012x",
			a>>32, (a>>16)&0xffff, a&0xfff, (b>>48)&0x3fff|0x8000, b&0xffffffffffff)
	}
	return keys
}

func benchHosts(n int) []string {
	hosts := make([]string, n)
	for i := range hosts {
		hosts[i] = fmt.Sprintf("ironic-conductor-%02d.example.com", i)
	}
	return hosts
}

var (
	sinkHost string
	sinkSum  [md5.Size]byte
)

// BenchmarkGet maps node UUIDs over a ring of 12 hosts with 2**5 partitions
// each (Ironic's default exponent), per algorithm.
func BenchmarkGet(b *testing.B) {
	keys := benchUUIDs()
	for _, name := range ring.Algorithms() {
		b.Run(name, func(b *testing.B) {
			r, err := ring.New(benchHosts(12), 5, ring.Algorithm(name))
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				sinkHost, _ = r.Get(keys[i%len(keys)])
			}
		})
	}
}

// BenchmarkMD5Floor is the cost of hashing the key alone, the floor of Get
// with md5.
func BenchmarkMD5Floor(b *testing.B) {
	keys := benchUUIDs()
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		sinkSum = md5.Sum(keys[i%len(keys)])
	}
}

// BenchmarkGetStringKey shows the cost of converting a string UUID at the
// call site.
func BenchmarkGetStringKey(b *testing.B) {
	keys := benchUUIDs()
	strs := make([]string, len(keys))
	for i, k := range keys {
		strs[i] = string(k)
	}
	r, err := ring.New(benchHosts(12), 5, ring.MD5)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		sinkHost, _ = r.Get([]byte(strs[i%len(strs)]))
	}
}

// BenchmarkNew builds a large ring: 300 hosts with 2**10 partitions each.
func BenchmarkNew(b *testing.B) {
	hosts := benchHosts(300)
	for _, name := range []string{"md5", "sha512", "sha3_512", "blake2b"} {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := ring.New(hosts, 10, ring.Algorithm(name)); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
