package ring

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"fmt"
	"maps"
	"math"
	"slices"
	"sync"
)

// MaxPartitionExponent is the largest partition exponent New accepts:
// 2**16 partitions per host.
const MaxPartitionExponent = 16

// Ring is a tooz-compatible consistent hash ring. It is immutable after New
// and safe for concurrent use.
type Ring struct {
	alg  Algorithm
	size int // digest length in bytes

	hosts []string // sorted, unique

	// Partitions in ascending digest order. first[i] is the big-endian first
	// eight bytes of digest i, digests[i*size:(i+1)*size] the whole digest,
	// owner[i] the index in hosts of the host the partition belongs to.
	first   []uint64
	digests []byte
	owner   []int32
}

// New builds the ring tooz's HashRing(hosts, partitions=2**partitionExponent,
// hash_function=alg) builds. Duplicate hosts count once, as with set(); the
// order of hosts does not matter. A host is hashed as the bytes of its name
// (tooz encodes it to UTF-8, which a Go string from Ironic's database already
// is). An empty host list gives an empty ring.
// It fails for an algorithm not listed by Algorithms and for a partition
// exponent outside 0..MaxPartitionExponent.
func New(hosts []string, partitionExponent int, alg Algorithm) (*Ring, error) {
	c, err := NewHostCache(partitionExponent, alg)
	if err != nil {
		return nil, err
	}
	return c.New(hosts)
}

// HostCache remembers the partition digests of hosts for one partition
// exponent and algorithm. A host's partitions do not depend on the ring it
// is in, and every ring of a conductor group holds the same conductors, one
// ring per hardware type: building those rings through one HostCache
// hashes each host once, and so does building them again on the next
// refresh. It is safe for concurrent use.
type HostCache struct {
	alg Algorithm
	exp int
	mu  sync.Mutex
	// digests of a host: its 2**exp partition digests, concatenated.
	digests map[string][]byte
}

// NewHostCache returns an empty cache for rings of partitionExponent and
// alg; it fails for an algorithm not listed by Algorithms and for a
// partition exponent outside 0..MaxPartitionExponent.
func NewHostCache(partitionExponent int, alg Algorithm) (*HostCache, error) {
	if _, ok := algorithms[alg]; !ok {
		return nil, unknownAlgorithm(string(alg))
	}
	if partitionExponent < 0 || partitionExponent > MaxPartitionExponent {
		return nil, fmt.Errorf("ring: partition exponent %d out of range 0..%d",
			partitionExponent, MaxPartitionExponent)
	}
	return &HostCache{alg: alg, exp: partitionExponent, digests: map[string][]byte{}}, nil
}

// Retain forgets every host for which keep is false, so that a long-lived
// cache holds only current conductors.
func (c *HostCache) Retain(keep func(host string) bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	maps.DeleteFunc(c.digests, func(h string, _ []byte) bool { return !keep(h) })
}

// hostDigests returns the concatenated partition digests of host: tooz's
// key_hash = hashlib.new(alg, key), then per partition
// key_hash.update(key) and hexdigest() (Sum does not reset the state).
func (c *HostCache) hostDigests(host string, parts int) []byte {
	c.mu.Lock()
	d, ok := c.digests[host]
	c.mu.Unlock()
	if ok {
		return d
	}
	st := algorithms[c.alg]()
	d = make([]byte, 0, parts*st.Size())
	key := []byte(host)
	st.Write(key)
	for range parts {
		st.Write(key)
		d = st.Sum(d)
	}
	c.mu.Lock()
	c.digests[host] = d
	c.mu.Unlock()
	return d
}

// New builds the ring New(hosts, exponent, algorithm) builds, reusing and
// remembering the hosts' partition digests.
func (c *HostCache) New(hosts []string) (*Ring, error) {
	uniq := slices.Clone(hosts)
	slices.Sort(uniq)
	uniq = slices.Compact(uniq)

	size := algorithms[c.alg]().Size()
	parts := 1 << c.exp
	total := len(uniq) * parts
	if total > math.MaxInt32 {
		return nil, fmt.Errorf("ring: %d hosts x 2**%d partitions is too many",
			len(uniq), c.exp)
	}
	raw := make([]byte, total*size)

	type entry struct {
		first uint64
		host  int32 // index in uniq
		pos   int32 // index of the digest in raw
	}
	entries := make([]entry, 0, total)
	for hi, h := range uniq {
		copy(raw[len(entries)*size:], c.hostDigests(h, parts))
		for range parts {
			pos := len(entries)
			entries = append(entries, entry{binary.BigEndian.Uint64(raw[pos*size:]), int32(hi), int32(pos)})
		}
	}
	digest := func(pos int32) []byte { return raw[int(pos)*size : (int(pos)+1)*size] }
	slices.SortFunc(entries, func(a, b entry) int {
		if c := cmp.Compare(a.first, b.first); c != 0 {
			return c
		}
		if c := bytes.Compare(digest(a.pos), digest(b.pos)); c != 0 {
			return c
		}
		return cmp.Compare(b.host, a.host)
	})

	// Equal digests are one partition, as in tooz's dict. Entries with equal
	// digests are adjacent and ordered by host, last first, so the one kept
	// is the host that sorts last: tooz with hosts inserted in sorted order.
	entries = slices.CompactFunc(entries, func(a, b entry) bool {
		return a.first == b.first && bytes.Equal(digest(a.pos), digest(b.pos))
	})
	n := len(entries)
	r := &Ring{alg: c.alg, size: size, hosts: uniq,
		first: make([]uint64, n), digests: make([]byte, n*size), owner: make([]int32, n)}
	for i, e := range entries {
		r.first[i] = e.first
		copy(r.digests[i*size:], digest(e.pos))
		r.owner[i] = e.host
	}
	return r, nil
}

// Get returns the host the key maps to, as Ironic's get_conductor_for does
// with tooz's get_nodes(key) (one replica, nothing ignored). ok is false when
// the ring has no hosts. Get does not allocate.
func (r *Ring) Get(key []byte) (host string, ok bool) {
	if len(r.first) == 0 {
		return "", false
	}
	return r.hosts[r.owner[r.position(key)]], true
}

// Hosts returns the ring's members, sorted and without duplicates.
func (r *Ring) Hosts() []string {
	return slices.Clone(r.hosts)
}

// position is tooz's _get_partition: bisect_right of the key's digest in the
// partitions, wrapped to 0 past the end. The ring must not be empty.
func (r *Ring) position(key []byte) int {
	var d [maxDigest]byte
	sum(r.alg, key, &d)
	return r.search(&d)
}

// Prefix returns the first 64 bits (big-endian) of the digest of key under
// the ring's algorithm: where key falls on this ring and on every ring of
// the same algorithm, up to the rare ties that LocatePrefix reports.
// Hashing each key once and then locating keys ring by ring keeps each
// ring's tables in cache when mapping many keys over many rings.
func (r *Ring) Prefix(key []byte) uint64 {
	var d [maxDigest]byte
	sum(r.alg, key, &d)
	return binary.BigEndian.Uint64(d[:8])
}

// Locate returns the index in Hosts() of the host Get returns, or -1 for
// an empty ring.
func (r *Ring) Locate(key []byte) int {
	if len(r.first) == 0 {
		return -1
	}
	return int(r.owner[r.position(key)])
}

// LocatePrefix is Locate for a key whose Prefix is p. When p equals the prefix of a partition the whole digest decides,
// and LocatePrefix returns tie true: call Locate with the key instead. An
// empty ring gives -1.
func (r *Ring) LocatePrefix(p uint64) (host int, tie bool) {
	if len(r.first) == 0 {
		return -1, false
	}
	i := r.upper(p)
	if i > 0 && r.first[i-1] == p {
		return -1, true
	}
	if i == len(r.first) {
		i = 0
	}
	return int(r.owner[i]), false
}

// search returns the index of the first partition whose digest is greater
// than d, or 0 if there is none. The ring must not be empty.
func (r *Ring) search(d *[maxDigest]byte) int {
	k := binary.BigEndian.Uint64(d[:8])
	i := r.upper(k)
	if i > 0 && r.first[i-1] == k {
		i = r.resolveTie(i, d)
	}
	if i == len(r.first) {
		i = 0
	}
	return i
}

// upper returns the number of partitions whose first word is <= k.
func (r *Ring) upper(k uint64) int {
	i, found := slices.BinarySearch(r.first, k)
	for found && i < len(r.first) && r.first[i] == k {
		i++
	}
	return i
}

// resolveTie handles partitions whose first word equals the key's: they end
// at i-1, and the answer is the first of them whose whole digest is greater.
func (r *Ring) resolveTie(i int, d *[maxDigest]byte) int {
	k := r.first[i-1]
	key := d[:r.size]
	for i > 0 && r.first[i-1] == k &&
		bytes.Compare(r.digests[(i-1)*r.size:i*r.size], key) > 0 {
		i--
	}
	return i
}
