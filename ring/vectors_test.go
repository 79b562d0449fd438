package ring_test

import (
	"compress/gzip"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/ring"
)

// vectors is ring/testdata/vectors.json.gz, written by
// scripts/gen-ring-vectors.py from the real tooz.
type vectors struct {
	ToozVersion          string   `json:"tooz_version"`
	AlgorithmsGuaranteed []string `json:"algorithms_guaranteed"`
	AlgorithmsFailing    []struct {
		Algorithm string `json:"algorithm"`
		Error     string `json:"error"`
		Message   string `json:"message"`
	} `json:"algorithms_failing"`
	Rings []vectorRing `json:"rings"`
}

type vectorRing struct {
	Name      string     `json:"name"`
	Algorithm string     `json:"algorithm"`
	Exponent  int        `json:"exponent"`
	Hosts     []string   `json:"hosts"`
	Ambiguous bool       `json:"ambiguous"`
	Families  [][]string `json:"families"`
	Lookups   []struct {
		Key      *string  `json:"key"`
		KeyHex   string   `json:"key_hex"`
		Ignore   []string `json:"ignore"`
		Replicas int      `json:"replicas"`
		Want     []string `json:"want"`
		// Possible is set when tooz's answer depends on its insertion
		// order (PYTHONHASHSEED); null entries mean tooz never returns.
		Possible [][]string `json:"possible"`
	} `json:"lookups"`
	HashseedDistinct int `json:"hashseed_distinct_answer_sets"`
}

func loadVectors(t *testing.T) *vectors {
	t.Helper()
	f, err := os.Open("testdata/vectors.json.gz")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	var v vectors
	if err := json.NewDecoder(zr).Decode(&v); err != nil {
		t.Fatal(err)
	}
	return &v
}

func TestVectors(t *testing.T) {
	v := loadVectors(t)
	t.Logf("tooz %s: %d rings", v.ToozVersion, len(v.Rings))
	lookups, ambiguous, algs := 0, 0, map[string]bool{}
	for _, vr := range v.Rings {
		algs[vr.Algorithm] = true
		t.Run(vr.Name, func(t *testing.T) {
			lookups += checkRing(t, vr)
		})
		if vr.Ambiguous {
			ambiguous++
		}
	}
	if lookups < 10000 {
		t.Errorf("only %d lookups checked", lookups)
	}
	if ambiguous == 0 {
		t.Error("no ambiguous (repetition collision) ring in the vectors")
	}
	for _, name := range ring.Algorithms() {
		if !algs[name] {
			t.Errorf("no vectors for algorithm %s", name)
		}
	}
	t.Logf("%d lookups checked, %d ambiguous rings", lookups, ambiguous)
}

// TestVectorsThroughHostCache reproduces every vector again with rings
// built through HostCaches shared by all rings of one algorithm and
// exponent, built twice each, as the topology builds them.
func TestVectorsThroughHostCache(t *testing.T) {
	v := loadVectors(t)
	type key struct {
		alg string
		exp int
	}
	caches := map[key]*ring.HostCache{}
	for _, vr := range v.Rings {
		k := key{vr.Algorithm, vr.Exponent}
		if caches[k] == nil {
			c, err := ring.NewHostCache(vr.Exponent, ring.Algorithm(vr.Algorithm))
			if err != nil {
				t.Fatal(err)
			}
			caches[k] = c
		}
		for range 2 {
			t.Run(vr.Name, func(t *testing.T) {
				checkRingWith(t, vr, func(hosts []string, _ int, _ ring.Algorithm) (*ring.Ring, error) {
					return caches[k].New(hosts)
				})
			})
		}
	}
}

func checkRing(t *testing.T, vr vectorRing) int { return checkRingWith(t, vr, ring.New) }

func checkRingWith(t *testing.T, vr vectorRing, build func([]string, int, ring.Algorithm) (*ring.Ring, error)) int {
	alg, err := ring.ParseAlgorithm(vr.Algorithm)
	if err != nil {
		t.Fatal(err)
	}
	r, err := build(vr.Hosts, vr.Exponent, alg)
	if err != nil {
		t.Fatal(err)
	}
	desc := fmt.Sprintf("%s exp=%d hosts=%d", vr.Algorithm, vr.Exponent, len(r.Hosts()))
	wantHosts := slices.Compact(slices.Sorted(slices.Values(vr.Hosts)))
	if got := r.Hosts(); !slices.Equal(got, wantHosts) {
		t.Errorf("%s: Hosts() = %q, want %q", desc, got, wantHosts)
	}
	failures, checked := 0, 0
	for i, lk := range vr.Lookups {
		// Ironic asks for one replica and ignores nothing: Get.
		if len(lk.Ignore) != 0 || lk.Replicas != 1 {
			continue
		}
		checked++
		var key []byte
		keyDesc := ""
		if lk.Key != nil {
			key = []byte(*lk.Key)
			keyDesc = fmt.Sprintf("key %q", *lk.Key)
		} else {
			if key, err = hex.DecodeString(lk.KeyHex); err != nil {
				t.Fatal(err)
			}
			keyDesc = "key 0x" + lk.KeyHex
		}
		fail := func(format string, args ...any) {
			t.Helper()
			failures++
			t.Errorf("%s: lookup %d (%s): %s", desc, i, keyDesc, fmt.Sprintf(format, args...))
		}
		host, ok := r.Get(key)
		var got []string
		if ok {
			got = []string{host}
		}
		if !slices.Equal(got, lk.Want) {
			fail("Get = %q, tooz = %q", got, lk.Want)
		}
		if lk.Possible != nil && !slices.ContainsFunc(lk.Possible, func(p []string) bool {
			return p != nil && slices.Equal(p, got)
		}) {
			fail("Get = %q, not one of tooz's possible answers %q", got, lk.Possible)
		}
		// The two-step lookup the topology uses must agree with Get.
		idx, tie := r.LocatePrefix(r.Prefix(key))
		if tie {
			idx = r.Locate(key)
		}
		if loc := r.Locate(key); idx != loc || (ok && r.Hosts()[loc] != host) || (!ok && loc != -1) {
			fail("LocatePrefix/Locate = %d/%d, Get = %q", idx, loc, host)
		}
		if failures >= 10 {
			t.Fatalf("%s: giving up after %d failures", desc, failures)
		}
	}
	return checked
}

func TestVectorsAlgorithmNames(t *testing.T) {
	v := loadVectors(t)
	failing := map[string]bool{}
	for _, e := range v.AlgorithmsFailing {
		failing[e.Algorithm] = true
		if _, err := ring.ParseAlgorithm(e.Algorithm); err == nil {
			t.Errorf("ParseAlgorithm(%q) succeeded; tooz raises %s: %s", e.Algorithm, e.Error, e.Message)
		} else if !strings.Contains(err.Error(), fmt.Sprintf("%q", e.Algorithm)) ||
			!strings.Contains(err.Error(), "md5, sha1, sha224") {
			t.Errorf("ParseAlgorithm(%q) error %q should name it and list the valid ones", e.Algorithm, err)
		}
		if _, err := ring.New([]string{"a"}, 1, ring.Algorithm(e.Algorithm)); err == nil {
			t.Errorf("New with algorithm %q succeeded", e.Algorithm)
		}
	}
	for _, name := range []string{"shake_128", "shake_256"} {
		if !failing[name] {
			t.Errorf("vectors do not record tooz failing for %s", name)
		}
	}
	// The valid names are exactly Ironic's choices (algorithms_guaranteed)
	// that tooz does not reject.
	var want []string
	for _, name := range v.AlgorithmsGuaranteed {
		if !failing[name] {
			want = append(want, name)
		}
	}
	slices.Sort(want)
	if got := ring.Algorithms(); !slices.Equal(got, want) {
		t.Errorf("Algorithms() = %q, want %q", got, want)
	}
	for _, name := range want {
		if a, err := ring.ParseAlgorithm(name); err != nil || string(a) != name {
			t.Errorf("ParseAlgorithm(%q) = %q, %v", name, a, err)
		}
	}
}
