package ring

import (
	"crypto"
	"crypto/md5"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha3"
	"crypto/sha512"
	"fmt"
	"hash"
	"sort"
	"strings"

	"golang.org/x/crypto/blake2b"
	"golang.org/x/crypto/blake2s"
)

// Algorithm is a hash algorithm name as Ironic's hash_ring_algorithm spells
// it (a hashlib name such as "md5" or "sha3_256"). Obtain one from
// ParseAlgorithm or use one of the constants; New rejects any other value.
type Algorithm string

// The algorithms tooz can use: hashlib.algorithms_guaranteed (the choices of
// Ironic's hash_ring_algorithm) less shake_128 and shake_256, whose
// hexdigest() needs a length, so tooz raises TypeError on them.
const (
	MD5      Algorithm = "md5" // Ironic's default
	SHA1     Algorithm = "sha1"
	SHA224   Algorithm = "sha224"
	SHA256   Algorithm = "sha256"
	SHA384   Algorithm = "sha384"
	SHA512   Algorithm = "sha512"
	SHA3_224 Algorithm = "sha3_224" //nolint:revive // spelt as crypto.SHA3_224 and hashlib's sha3_224
	SHA3_256 Algorithm = "sha3_256" //nolint:revive // spelt as crypto.SHA3_256 and hashlib's sha3_256
	SHA3_384 Algorithm = "sha3_384" //nolint:revive // spelt as crypto.SHA3_384 and hashlib's sha3_384
	SHA3_512 Algorithm = "sha3_512" //nolint:revive // spelt as crypto.SHA3_512 and hashlib's sha3_512
	BLAKE2b  Algorithm = "blake2b"  // hashlib's default: 64-byte digest, no key
	BLAKE2s  Algorithm = "blake2s"  // hashlib's default: 32-byte digest, no key
)

// maxDigest is the widest digest of any supported algorithm, in bytes.
const maxDigest = 64

// algorithms are the streaming hashes New builds partitions with, as the
// packages sum calls register them; lookups hash with sum.
var algorithms = map[Algorithm]func() hash.Hash{
	MD5:      crypto.MD5.New,
	SHA1:     crypto.SHA1.New,
	SHA224:   crypto.SHA224.New,
	SHA256:   crypto.SHA256.New,
	SHA384:   crypto.SHA384.New,
	SHA512:   crypto.SHA512.New,
	SHA3_224: crypto.SHA3_224.New,
	SHA3_256: crypto.SHA3_256.New,
	SHA3_384: crypto.SHA3_384.New,
	SHA3_512: crypto.SHA3_512.New,
	BLAKE2b:  crypto.BLAKE2b_512.New,
	BLAKE2s:  crypto.BLAKE2s_256.New,
}

// Algorithms returns the valid algorithm names, sorted.
func Algorithms() []string {
	names := make([]string, 0, len(algorithms))
	for a := range algorithms {
		names = append(names, string(a))
	}
	sort.Strings(names)
	return names
}

// ParseAlgorithm returns the Algorithm called name, spelled exactly as in
// Ironic's hash_ring_algorithm option (case matters, as in hashlib.new). It
// fails for any other name, including shake_128 and shake_256, which Ironic's
// option accepts but tooz cannot use.
func ParseAlgorithm(name string) (Algorithm, error) {
	a := Algorithm(name)
	if _, ok := algorithms[a]; !ok {
		return "", unknownAlgorithm(name)
	}
	return a, nil
}

func unknownAlgorithm(name string) error {
	why := "unknown"
	if name == "shake_128" || name == "shake_256" {
		why = "not usable by tooz (its variable-length digest has no default length)"
	}
	return fmt.Errorf("ring: hash algorithm %q is %s; valid: %s",
		name, why, strings.Join(Algorithms(), ", "))
}

// sum writes the digest of key into d and returns its size. It is a switch
// of direct calls of fixed-size Sum functions so that the digest stays on
// the stack and Get does not allocate (a call through a function value
// would move it to the heap).
func sum(alg Algorithm, key []byte, d *[maxDigest]byte) int {
	switch alg {
	case MD5:
		s := md5.Sum(key)
		return copy(d[:], s[:])
	case SHA1:
		s := sha1.Sum(key)
		return copy(d[:], s[:])
	case SHA224:
		s := sha256.Sum224(key)
		return copy(d[:], s[:])
	case SHA256:
		s := sha256.Sum256(key)
		return copy(d[:], s[:])
	case SHA384:
		s := sha512.Sum384(key)
		return copy(d[:], s[:])
	case SHA512:
		s := sha512.Sum512(key)
		return copy(d[:], s[:])
	case SHA3_224:
		s := sha3.Sum224(key)
		return copy(d[:], s[:])
	case SHA3_256:
		s := sha3.Sum256(key)
		return copy(d[:], s[:])
	case SHA3_384:
		s := sha3.Sum384(key)
		return copy(d[:], s[:])
	case SHA3_512:
		s := sha3.Sum512(key)
		return copy(d[:], s[:])
	case BLAKE2b:
		s := blake2b.Sum512(key)
		return copy(d[:], s[:])
	case BLAKE2s:
		s := blake2s.Sum256(key)
		return copy(d[:], s[:])
	}
	panic("ring: unknown algorithm " + string(alg))
}
