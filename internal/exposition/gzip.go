package exposition

import (
	"bytes"
	"compress/flate"
	"encoding/binary"
	"hash/crc32"
	"io"
)

// A gzip response is spliced from pieces compressed at different times (a
// large family once when it changes, the families of a view once per view)
// or not at all (what a scrape renders for itself goes in stored,
// uncompressed, blocks). Each piece is a run of non-final deflate blocks
// ending on a byte boundary (a sync flush, RFC 1951 3.2.4 stored block of
// length 0, or a stored block's end), whose back-references stay inside the
// piece; such runs concatenate into one valid deflate stream, which one
// final empty block closes. The gzip trailer's CRC-32 of the whole is
// combined from the pieces' CRCs (the GF(2) operator of appending n zero
// bytes, as zlib's crc32_combine), so a cached piece needs no plain copy
// (the figures it keeps: collector/handler.go).

// Chunk is one piece of a gzip response: deflate blocks and what the
// trailer needs of the plain text they hold.
type Chunk struct {
	data  []byte      // non-final deflate blocks, byte-aligned
	crc   uint32      // CRC-32 (IEEE) of the plain text
	size  int64       // length of the plain text
	shift crcOperator // appending size zero bytes, for crcCombine
}

// Compressor compresses plain text into a Chunk, in memory: its writes do
// not fail.
type Compressor struct {
	buf  bytes.Buffer
	fw   *flate.Writer
	crc  uint32
	size int64
}

// NewFlate returns a deflate compressor at level (a valid flate level). A
// compressor is over a megabyte, whatever the level: one serves all the
// chunks of a rendering (NewCompressor resets it).
func NewFlate(level int) *flate.Writer {
	fw, err := flate.NewWriter(io.Discard, level)
	if err != nil {
		panic(err) // only for an invalid level
	}
	return fw
}

// NewCompressor starts a chunk compressed by fw.
func NewCompressor(fw *flate.Writer) *Compressor {
	z := &Compressor{fw: fw}
	z.fw.Reset(&z.buf)
	return z
}

// Write compresses p into the chunk.
func (z *Compressor) Write(p []byte) (int, error) {
	z.crc = crc32.Update(z.crc, crc32.IEEETable, p)
	z.size += int64(len(p))
	return z.fw.Write(p)
}

// Finish ends the chunk with a sync flush.
func (z *Compressor) Finish() Chunk {
	_ = z.fw.Flush() // into memory: no error
	z.fw.Reset(io.Discard)
	data := bytes.Clone(z.buf.Bytes()) // exact size: it is kept
	return Chunk{data: data, crc: z.crc, size: z.size, shift: zeroesOperator(z.size)}
}

// StoredChunk returns plain as a chunk of stored (uncompressed) deflate
// blocks (RFC 1951 3.2.4: starting on a byte boundary, a header byte 0 for
// BFINAL=0 BTYPE=00 and its padding, LEN and NLEN, then at most 65,535
// bytes): what a scrape renders for itself (a few kilobytes) is not worth
// a compressor's garbage (the steady-state CPU row).
func StoredChunk(plain []byte) Chunk {
	const maxStored = 65535
	data := make([]byte, 0, len(plain)+5*(len(plain)/maxStored+1))
	for rest := plain; len(rest) > 0; {
		n := min(len(rest), maxStored)
		data = append(data, 0, byte(n), byte(n>>8), ^byte(n), ^byte(n>>8))
		data = append(data, rest[:n]...)
		rest = rest[n:]
	}
	size := int64(len(plain))
	return Chunk{data: data, crc: crc32.ChecksumIEEE(plain), size: size, shift: zeroesOperator(size)}
}

// gzipStream writes one gzip member from chunks.
type gzipStream struct {
	w    io.Writer
	crc  uint32
	size int64
	err  error
}

var gzipHeader = []byte{0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff} // no name, no mtime, OS unknown

func newGzipStream(w io.Writer) *gzipStream {
	g := &gzipStream{w: w}
	_, g.err = w.Write(gzipHeader)
	return g
}

func (g *gzipStream) chunk(c *Chunk) {
	if g.err != nil {
		return
	}
	_, g.err = g.w.Write(c.data)
	g.crc = crcCombine(g.crc, c.crc, &c.shift)
	g.size += c.size
}

// close writes the final empty block (fixed Huffman, BFINAL=1: 0x03 0x00)
// and the trailer.
func (g *gzipStream) close() error {
	if g.err != nil {
		return g.err
	}
	var tail [10]byte
	tail[0], tail[1] = 0x03, 0x00
	binary.LittleEndian.PutUint32(tail[2:], g.crc)
	binary.LittleEndian.PutUint32(tail[6:], uint32(g.size)) // ISIZE is the size mod 2^32
	_, err := g.w.Write(tail[:])
	return err
}

// crcOperator is a 32x32 GF(2) matrix acting on a CRC-32 register, one
// column per bit.
type crcOperator [32]uint32

func (m *crcOperator) times(v uint32) uint32 {
	var sum uint32
	for i := 0; v != 0; i, v = i+1, v>>1 {
		if v&1 != 0 {
			sum ^= m[i]
		}
	}
	return sum
}

func (m *crcOperator) mul(n *crcOperator) crcOperator { // m after n
	var p crcOperator
	for i := range n {
		p[i] = m.times(n[i])
	}
	return p
}

// zeroesOperator returns the operator of feeding n zero bytes through the
// CRC-32 register (the reflected IEEE polynomial 0xedb88320).
func zeroesOperator(n int64) crcOperator {
	var op, result crcOperator
	op[0] = 0xedb88320 // one zero bit
	for i := 1; i < 32; i++ {
		op[i] = 1 << (i - 1)
	}
	for i := range result {
		result[i] = 1 << i
	}
	op = op.mul(&op) // 2 bits
	op = op.mul(&op) // 4 bits
	op = op.mul(&op) // 8 bits: one byte
	for ; n > 0; n >>= 1 {
		if n&1 != 0 {
			result = op.mul(&result)
		}
		op = op.mul(&op)
	}
	return result
}

// crcCombine returns the CRC-32 of A followed by B from crcA, crcB and the
// operator of B's length.
func crcCombine(crcA, crcB uint32, shiftB *crcOperator) uint32 {
	return shiftB.times(crcA) ^ crcB
}
