package auth

import (
	"encoding/base64"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"
)

func basicRequest(user, pass string) *http.Request {
	r := httptest.NewRequest(http.MethodGet, "/v1/conductors", nil)
	r.Header.Set("Authorization", "Basic "+base64.StdEncoding.EncodeToString([]byte(user+":"+pass)))
	return r
}

func digest(t *testing.T, pass string, cost int) string {
	t.Helper()
	d, err := bcrypt.GenerateFromPassword([]byte(pass), cost)
	if err != nil {
		t.Fatal(err)
	}
	return string(d)
}

// TestBasic: results are cached (true and false) as Ironic's
// lru_cache(maxsize=256), keyed by user too; an unknown user costs a
// comparison; '#' lines are comments as Apache reads them; when no
// bcrypt worker frees up in time the answer is 503 and cached results still
// pass.
func TestBasic(t *testing.T) {
	file := filepath.Join(t.TempDir(), "htpasswd")
	content := "# a comment: with a colon\n#alice:" + digest(t, "old", bcrypt.MinCost) + "\n" +
		"admin:" + digest(t, "right", bcrypt.MinCost) + "\n  bob:" + digest(t, "b", bcrypt.MinCost+1) + "\n"
	if err := os.WriteFile(file, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	b, err := NewBasic(file, 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	status := func(user, pass string) int {
		creds, f := b.Authenticate(basicRequest(user, pass))
		if f != nil {
			return f.Status
		}
		if creds.User != user {
			t.Errorf("authenticated as %q, want %q", creds.User, user)
		}
		return 200
	}
	for _, c := range []struct {
		user, pass   string
		want, cached int
	}{
		{"admin", "right", 200, 1}, {"admin", "right", 200, 1}, {"admin", "wrong", 401, 2}, {"admin", "wrong", 401, 2},
		{"nobody", "x", 401, 3}, {"#alice", "old", 401, 4}, {"bob", "b", 200, 5},
		// One unknown user's result never answers for another, nor for a
		// known user with the same password.
		{"other", "x", 401, 6}, {"admin", "x", 401, 7}, {"nobody", "x", 401, 7},
	} {
		if got := status(c.user, c.pass); got != c.want {
			t.Errorf("%s:%s: %d, want %d", c.user, c.pass, got, c.want)
		}
		if n := len(b.cache.m); n != c.cached {
			t.Errorf("after %s:%s, %d results cached, want %d", c.user, c.pass, n, c.cached)
		}
	}
	// Every worker busy: an uncached pair waits Wait, then 503.
	b.Wait = 50 * time.Millisecond
	b.workers <- struct{}{}
	if got := status("admin", "third"); got != http.StatusServiceUnavailable {
		t.Errorf("with no worker free: %d, want 503", got)
	}
	if got := status("admin", "right"); got != 200 {
		t.Errorf("a cached pair with no worker free: %d, want 200", got)
	}
	<-b.workers
	if _, err := NewBasic(filepath.Join(t.TempDir(), "none"), 0, nil); err == nil {
		t.Error("a missing file was accepted")
	}
}

// TestLRU: the least recently used entry goes first.
func TestLRU(t *testing.T) {
	c := newLRU[int, int](2)
	c.put(1, 1)
	c.put(2, 2)
	c.get(1)
	c.put(3, 3)
	if _, ok := c.get(2); ok {
		t.Error("2 kept, the least recently used")
	}
	if _, ok := c.get(1); !ok {
		t.Error("1 dropped")
	}
	c.remove(1)
	if len(c.m) != 1 {
		t.Errorf("len %d", len(c.m))
	}
}

// TestFailureNoSniff: an authentication failure's JSON body (which may
// echo the Authorization type the client sent) carries
// X-Content-Type-Options: nosniff.
func TestFailureNoSniff(t *testing.T) {
	r := httptest.NewRequest(http.MethodGet, "/v1/nodes", nil)
	r.Header.Set("Authorization", "<script>alert(1)</script> x")
	_, f := (&Basic{}).Authenticate(r)
	if f == nil || f.Status != http.StatusBadRequest {
		t.Fatalf("an unknown Authorization type: %+v, want 400", f)
	}
	rec := httptest.NewRecorder()
	f.Send(rec)
	if got := rec.Header().Get("X-Content-Type-Options"); got != "nosniff" {
		t.Errorf("X-Content-Type-Options %q, want nosniff", got)
	}
	if got := rec.Header().Get("Content-Type"); got != "application/json" {
		t.Errorf("Content-Type %q", got)
	}
}
