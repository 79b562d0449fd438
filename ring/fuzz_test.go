package ring_test

import (
	"bytes"
	"crypto/md5"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha3"
	"crypto/sha512"
	"hash"
	"slices"
	"sort"
	"strings"
	"testing"

	"golang.org/x/crypto/blake2b"
	"golang.org/x/crypto/blake2s"

	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/ring"
)

// model is a literal transcription of tooz's HashRing, with hosts added in
// sorted order (the package's rule for shared digests): a map from digest
// to host and a sorted list of digests.
type model struct {
	newHash    func() hash.Hash
	nodes      []string
	ring       map[string]string
	partitions []string
}

var modelHashes = map[string]func() hash.Hash{
	"md5": md5.New, "sha1": sha1.New, "sha224": sha256.New224, "sha256": sha256.New,
	"sha384": sha512.New384, "sha512": sha512.New,
	"sha3_224": func() hash.Hash { return sha3.New224() },
	"sha3_256": func() hash.Hash { return sha3.New256() },
	"sha3_384": func() hash.Hash { return sha3.New384() },
	"sha3_512": func() hash.Hash { return sha3.New512() },
	"blake2b":  func() hash.Hash { h, _ := blake2b.New512(nil); return h },
	"blake2s":  func() hash.Hash { h, _ := blake2s.New256(nil); return h },
}

func newModel(hosts []string, partitions int, alg string) *model {
	m := &model{newHash: modelHashes[alg], ring: map[string]string{}}
	m.nodes = slices.Compact(slices.Sorted(slices.Values(hosts)))
	for _, node := range m.nodes {
		keyHash := m.newHash()
		keyHash.Write([]byte(node))
		for range partitions {
			keyHash.Write([]byte(node))
			m.ring[string(keyHash.Sum(nil))] = node
		}
	}
	for d := range m.ring {
		m.partitions = append(m.partitions, d)
	}
	sort.Strings(m.partitions) // equal-length digests: byte order is integer order
	return m
}

// get is tooz's get_nodes(data) with one replica and nothing ignored: the
// host of the first partition past the key's digest, "" for no hosts.
func (m *model) get(data []byte) string {
	if len(m.partitions) == 0 {
		return ""
	}
	h := m.newHash()
	h.Write(data)
	key := string(h.Sum(nil))
	partition := sort.Search(len(m.partitions), func(i int) bool { return m.partitions[i] > key })
	if partition >= len(m.partitions) {
		partition = 0
	}
	return m.ring[m.partitions[partition]]
}

func FuzzRing(f *testing.F) {
	f.Add("conductor-1\nconductor-2\nconductor-3", uint8(5), uint8(2), []byte(uuid))
	f.Add("conductor-1\nconductor-2\nconductor-3", uint8(3), uint8(0), []byte(uuid))
	f.Add("a\naa\naaa\naaaa\naaaaa", uint8(2), uint8(2), []byte("k"))
	f.Add("ab\nabab\nababab\ncd", uint8(3), uint8(7), []byte("abab"))
	f.Add("cönductor-ü.例\nhost:6385\nHOST_b", uint8(4), uint8(11), []byte{0, 1, 2})
	f.Add("", uint8(1), uint8(0), []byte(""))
	f.Add("\nx", uint8(2), uint8(1), []byte(""))
	algs := ring.Algorithms()
	f.Fuzz(func(t *testing.T, hostBlob string, exp, algIdx uint8, key []byte) {
		var hosts []string
		if hostBlob != "" {
			hosts = strings.Split(hostBlob, "\n")
		}
		if len(hosts) > 12 {
			hosts = hosts[:12]
		}
		exponent := int(exp % 6)
		alg := ring.Algorithm(algs[int(algIdx)%len(algs)])
		r, err := ring.New(hosts, exponent, alg)
		if err != nil {
			t.Fatal(err)
		}
		members := r.Hosts()

		// Same hosts in another order, with duplicates: same ring.
		shuffled := slices.Clone(hosts)
		slices.Reverse(shuffled)
		shuffled = append(shuffled, hosts...)
		r2, err := ring.New(shuffled, exponent, alg)
		if err != nil {
			t.Fatal(err)
		}
		got, ok := r.Get(key)
		if got2, ok2 := r2.Get(key); got2 != got || ok2 != ok {
			t.Fatalf("order changes the answer: %q,%v vs %q,%v", got, ok, got2, ok2)
		}
		if ok != (len(members) > 0) || (ok && !slices.Contains(members, got)) {
			t.Fatalf("Get = %q, %v; members %q", got, ok, members)
		}

		// The literal transcription of tooz agrees.
		if want := newModel(hosts, 1<<exponent, string(alg)).get(key); want != got {
			t.Fatalf("Get = %q, model %q", got, want)
		}

		// Removing a host moves only the keys it owned. This holds for hosts
		// whose names repeat one word too: removing one only deletes
		// partitions or hands them to another host with the same digest, and
		// a partition another host owns stays that host's (it sorted last
		// among the hosts sharing it, and still does).
		for _, gone := range members {
			rest := slices.DeleteFunc(slices.Clone(members), func(h string) bool { return h == gone })
			r3, err := ring.New(rest, exponent, alg)
			if err != nil {
				t.Fatal(err)
			}
			if got3, _ := r3.Get(key); got != gone && got3 != got {
				t.Fatalf("removing %q moved key %x from %q to %q", gone, key, got, got3)
			}
		}
	})
}

// TestModelSanity keeps the fuzz model honest on a ring the vectors cover.
func TestModelSanity(t *testing.T) {
	hosts := []string{"ab", "abab", "ababab", "cd"}
	r := mustNew(t, hosts, 3, ring.MD5)
	m := newModel(hosts, 8, "md5")
	for i := range 300 {
		key := bytes.Repeat([]byte("ab"), i%20)
		key = append(key, byte(i))
		if got, _ := r.Get(key); got != m.get(key) {
			t.Fatalf("key %q: %q vs model %q", key, got, m.get(key))
		}
	}
}
