package ring

import (
	"bytes"
	"encoding/binary"
	"math/rand/v2"
	"slices"
	"sort"
	"testing"
)

// TestSearchFirstWordTies checks search against a plain bisect_right over
// whole digests on synthetic rings whose partitions often share their first
// eight bytes, a case real digests practically never produce.
func TestSearchFirstWordTies(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	const size = 16
	for n := 1; n <= 40; n++ {
		for trial := range 20 {
			firsts := []uint64{0, 1, 1 << 63, ^uint64(0), rng.Uint64()}
			var digs [][]byte
			for len(digs) < n {
				d := make([]byte, size)
				binary.BigEndian.PutUint64(d, firsts[rng.IntN(len(firsts))])
				binary.BigEndian.PutUint64(d[8:], rng.Uint64()%16) // 5*16 distinct digests
				if !slices.ContainsFunc(digs, func(e []byte) bool { return bytes.Equal(e, d) }) {
					digs = append(digs, d)
				}
			}
			slices.SortFunc(digs, bytes.Compare)
			r := &Ring{size: size, hosts: []string{"h"}}
			for _, d := range digs {
				r.first = append(r.first, binary.BigEndian.Uint64(d))
				r.digests = append(r.digests, d...)
				r.owner = append(r.owner, 0)
			}
			var keys [][]byte
			for _, d := range digs {
				for _, delta := range []uint64{0, 1, ^uint64(0)} { // equal, +1, -1
					k := slices.Clone(d)
					binary.BigEndian.PutUint64(k[8:], binary.BigEndian.Uint64(d[8:])+delta)
					keys = append(keys, k)
				}
			}
			for _, f := range firsts {
				k := make([]byte, size)
				binary.BigEndian.PutUint64(k, f)
				binary.BigEndian.PutUint64(k[8:], rng.Uint64())
				keys = append(keys, k)
			}
			for _, k := range keys {
				want := sort.Search(n, func(i int) bool { return bytes.Compare(digs[i], k) > 0 })
				if want == n {
					want = 0
				}
				var d [maxDigest]byte
				copy(d[:], k)
				if got := r.search(&d); got != want {
					t.Fatalf("n=%d trial=%d key %x: search = %d, bisect_right = %d", n, trial, k, got, want)
				}
			}
		}
	}
}
