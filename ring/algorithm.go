package ring

import (
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

// algID selects the hash in the lookup hot path with a switch: a direct call
// of a fixed-size Sum function keeps the digest on the stack, where a call
// through a function value would move it to the heap.
type algID uint8

const (
	idMD5 algID = iota
	idSHA1
	idSHA224
	idSHA256
	idSHA384
	idSHA512
	idSHA3_224
	idSHA3_256
	idSHA3_384
	idSHA3_512
	idBLAKE2b
	idBLAKE2s
)

// maxDigest is the widest digest of any supported algorithm, in bytes.
const maxDigest = 64

type algSpec struct {
	id   algID
	size int
	// newHash returns a fresh streaming hash; used only by New.
	newHash func() hash.Hash
}

var algorithms = map[Algorithm]algSpec{
	MD5:      {idMD5, md5.Size, md5.New},
	SHA1:     {idSHA1, sha1.Size, sha1.New},
	SHA224:   {idSHA224, sha256.Size224, sha256.New224},
	SHA256:   {idSHA256, sha256.Size, sha256.New},
	SHA384:   {idSHA384, sha512.Size384, sha512.New384},
	SHA512:   {idSHA512, sha512.Size, sha512.New},
	SHA3_224: {idSHA3_224, 28, func() hash.Hash { return sha3.New224() }},
	SHA3_256: {idSHA3_256, 32, func() hash.Hash { return sha3.New256() }},
	SHA3_384: {idSHA3_384, 48, func() hash.Hash { return sha3.New384() }},
	SHA3_512: {idSHA3_512, 64, func() hash.Hash { return sha3.New512() }},
	BLAKE2b:  {idBLAKE2b, blake2b.Size, mustHash(blake2b.New512)},
	BLAKE2s:  {idBLAKE2s, blake2s.Size, mustHash(blake2s.New256)},
}

// mustHash adapts the keyed constructors of x/crypto/blake2; with a nil key
// they cannot fail.
func mustHash(f func(key []byte) (hash.Hash, error)) func() hash.Hash {
	return func() hash.Hash {
		h, err := f(nil)
		if err != nil {
			panic(err)
		}
		return h
	}
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
// of direct calls so that nothing escapes and Get does not allocate.
func sum(id algID, key []byte, d *[maxDigest]byte) int {
	switch id {
	case idMD5:
		s := md5.Sum(key)
		return copy(d[:], s[:])
	case idSHA1:
		s := sha1.Sum(key)
		return copy(d[:], s[:])
	case idSHA224:
		s := sha256.Sum224(key)
		return copy(d[:], s[:])
	case idSHA256:
		s := sha256.Sum256(key)
		return copy(d[:], s[:])
	case idSHA384:
		s := sha512.Sum384(key)
		return copy(d[:], s[:])
	case idSHA512:
		s := sha512.Sum512(key)
		return copy(d[:], s[:])
	case idSHA3_224:
		s := sha3.Sum224(key)
		return copy(d[:], s[:])
	case idSHA3_256:
		s := sha3.Sum256(key)
		return copy(d[:], s[:])
	case idSHA3_384:
		s := sha3.Sum384(key)
		return copy(d[:], s[:])
	case idSHA3_512:
		s := sha3.Sum512(key)
		return copy(d[:], s[:])
	case idBLAKE2b:
		s := blake2b.Sum512(key)
		return copy(d[:], s[:])
	case idBLAKE2s:
		s := blake2s.Sum256(key)
		return copy(d[:], s[:])
	}
	panic("ring: unreachable algorithm id")
}
