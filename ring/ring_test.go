package ring_test

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/ring"
)

const uuid = "1be26c0b-03f2-4d2e-ae87-c02d7f33c123"

func mustNew(t testing.TB, hosts []string, exp int, alg ring.Algorithm) *ring.Ring {
	t.Helper()
	r, err := ring.New(hosts, exp, alg)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestNewErrors(t *testing.T) {
	for _, tc := range []struct {
		name  string
		exp   int
		alg   ring.Algorithm
		inErr string
	}{
		{"negative exponent", -1, ring.MD5, "partition exponent -1 out of range 0..16"},
		{"exponent too large", ring.MaxPartitionExponent + 1, ring.MD5, "partition exponent 17"},
		{"shake_128", 5, "shake_128", `"shake_128" is not usable by tooz`},
		{"shake_256", 5, "shake_256", `"shake_256" is not usable by tooz`},
		{"unknown", 5, "sha-256", `"sha-256" is unknown`},
		{"case matters", 5, "MD5", `"MD5" is unknown`},
		{"zero value", 5, "", `"" is unknown`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := ring.New([]string{"c1", "c2"}, tc.exp, tc.alg)
			if err == nil || r != nil {
				t.Fatalf("New = %v, %v; want an error", r, err)
			}
			if !strings.Contains(err.Error(), tc.inErr) {
				t.Errorf("error %q does not contain %q", err, tc.inErr)
			}
			if tc.exp == 5 && !strings.Contains(err.Error(), "valid: blake2b, blake2s, md5, sha1,") {
				t.Errorf("error %q does not list the valid algorithms", err)
			}
		})
	}
}

func TestParseAlgorithm(t *testing.T) {
	want := []string{"blake2b", "blake2s", "md5", "sha1", "sha224", "sha256", "sha384",
		"sha3_224", "sha3_256", "sha3_384", "sha3_512", "sha512"}
	if got := ring.Algorithms(); !slices.Equal(got, want) {
		t.Fatalf("Algorithms() = %q, want %q", got, want)
	}
	for _, name := range want {
		a, err := ring.ParseAlgorithm(name)
		if err != nil || string(a) != name {
			t.Errorf("ParseAlgorithm(%q) = %q, %v", name, a, err)
		}
	}
	for _, name := range []string{"shake_128", "shake_256", "sha512_256", "ripemd160", "Md5", " md5", ""} {
		if a, err := ring.ParseAlgorithm(name); err == nil {
			t.Errorf("ParseAlgorithm(%q) = %q, want an error", name, a)
		}
	}
}

func TestEmptyRing(t *testing.T) {
	for _, hosts := range [][]string{nil, {}} {
		r := mustNew(t, hosts, 5, ring.MD5)
		if h, ok := r.Get([]byte(uuid)); ok || h != "" {
			t.Errorf("Get = %q, %v; want \"\", false", h, ok)
		}
		if len(r.Hosts()) != 0 {
			t.Errorf("Hosts = %q", r.Hosts())
		}
	}
}

func TestOneHost(t *testing.T) {
	for _, exp := range []int{0, 1, 5, 10} {
		r := mustNew(t, []string{"conductor-1"}, exp, ring.MD5)
		for _, key := range []string{"", uuid, "x"} {
			if h, ok := r.Get([]byte(key)); !ok || h != "conductor-1" {
				t.Errorf("exp %d: Get(%q) = %q, %v", exp, key, h, ok)
			}
		}
	}
}

func TestExponentZero(t *testing.T) {
	hosts := []string{"c1", "c2", "c3"}
	r := mustNew(t, hosts, 0, ring.SHA256)
	seen := map[string]bool{}
	for i := range 200 {
		h, _ := r.Get(fmt.Appendf(nil, "node-%d", i))
		seen[h] = true
	}
	if len(seen) != 3 {
		t.Errorf("200 keys reached %d hosts, want 3", len(seen))
	}
}

func TestDuplicateHostsAndOrder(t *testing.T) {
	a := mustNew(t, []string{"c2", "c1", "c3", "c1", "c2"}, 5, ring.MD5)
	b := mustNew(t, []string{"c1", "c2", "c3"}, 5, ring.MD5)
	if !slices.Equal(a.Hosts(), []string{"c1", "c2", "c3"}) {
		t.Fatalf("Hosts = %q", a.Hosts())
	}
	for i := range 500 {
		key := fmt.Appendf(nil, "%08d-node", i)
		ha, _ := a.Get(key)
		hb, _ := b.Get(key)
		if ha != hb {
			t.Fatalf("key %s: %q vs %q", key, ha, hb)
		}
	}
}

func TestHostsIsACopy(t *testing.T) {
	r := mustNew(t, []string{"b", "a"}, 2, ring.MD5)
	h := r.Hosts()
	h[0] = "zzz"
	if got := r.Hosts(); !slices.Equal(got, []string{"a", "b"}) {
		t.Errorf("Hosts() = %q after changing a returned slice", got)
	}
}

func TestGetDoesNotAllocate(t *testing.T) {
	for _, name := range ring.Algorithms() {
		r := mustNew(t, []string{"c1", "c2", "c3"}, 5, ring.Algorithm(name))
		key := []byte(uuid)
		if n := testing.AllocsPerRun(100, func() { r.Get(key) }); n != 0 {
			t.Errorf("%s: Get allocates %v times", name, n)
		}
	}
}

func TestConcurrentUse(t *testing.T) {
	r := mustNew(t, []string{"c1", "c2", "c3", "c4", "c5"}, 6, ring.SHA1)
	want := map[string]string{}
	for i := range 200 {
		k := fmt.Sprintf("node-%d", i)
		want[k], _ = r.Get([]byte(k))
	}
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for k, w := range want {
				if got, _ := r.Get([]byte(k)); got != w {
					t.Errorf("Get(%s) = %q, want %q", k, got, w)
				}
			}
		})
	}
	wg.Wait()
}
