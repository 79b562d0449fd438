package exposition

import (
	"bytes"
	"compress/flate"
	"compress/gzip"
	"hash/crc32"
	"io"
	"math/rand/v2"
	"testing"
)

// TestCRCCombine: the CRC of a concatenation from the parts' CRCs.
func TestCRCCombine(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, sizes := range [][2]int{{0, 0}, {0, 5}, {5, 0}, {1, 1}, {17, 4096}, {100000, 3}, {70000, 131073}} {
		a, b := make([]byte, sizes[0]), make([]byte, sizes[1])
		for i := range a {
			a[i] = byte(rng.Uint32())
		}
		for i := range b {
			b[i] = byte(rng.Uint32())
		}
		shift := zeroesOperator(int64(len(b)))
		got := crcCombine(crc32.ChecksumIEEE(a), crc32.ChecksumIEEE(b), &shift)
		if want := crc32.ChecksumIEEE(append(a, b...)); got != want {
			t.Errorf("sizes %v: combined %08x, want %08x", sizes, got, want)
		}
	}
}

// TestGzipSplicing: stored blocks of any length (none, one, several of the
// 65,535-byte maximum) splice with compressed chunks into one gzip member
// that decodes to the concatenated text.
func TestGzipSplicing(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, sizes := range [][]int{{0}, {1}, {65535}, {65536}, {200001, 3}, {5, 0, 70000}} {
		var want []byte
		var out bytes.Buffer
		g := newGzipStream(&out)
		fw := NewFlate(flate.DefaultCompression)
		for i, n := range sizes {
			text := make([]byte, n)
			for j := range text {
				text[j] = "ab\"\\\n{}"[rng.IntN(7)]
			}
			want = append(want, text...)
			c := StoredChunk(text)
			if i%2 == 1 { // alternate with compressed chunks
				z := NewCompressor(fw)
				_, _ = z.Write(text)
				c = z.Finish()
			}
			g.chunk(&c)
		}
		if err := g.close(); err != nil {
			t.Fatal(err)
		}
		zr, err := gzip.NewReader(&out)
		if err != nil {
			t.Fatal(err)
		}
		zr.Multistream(false)
		got, err := io.ReadAll(zr)
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("sizes %v: %d bytes decoded (%v), want %d", sizes, len(got), err, len(want))
		}
	}
}
