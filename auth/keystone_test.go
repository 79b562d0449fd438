package auth

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// fakeKeystone issues service tokens svc-1, svc-2, ... and answers
// validations with validate(service token, subject token) after delay.
type fakeKeystone struct {
	*httptest.Server
	posts, gets atomic.Int32
}

func newFakeKeystone(t *testing.T, delay time.Duration, validate func(svc, subject string) int) *fakeKeystone {
	t.Helper()
	k := &fakeKeystone{}
	k.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(delay)
		exp := time.Now().Add(time.Hour).UTC().Format(time.RFC3339)
		if r.Method == http.MethodPost {
			n := k.posts.Add(1)
			w.Header().Set("X-Subject-Token", fmt.Sprintf("svc-%d", n))
			w.WriteHeader(http.StatusCreated)
			fmt.Fprintf(w, `{"token": {"expires_at": %q}}`, exp)
			return
		}
		k.gets.Add(1)
		code := validate(r.Header.Get("X-Auth-Token"), r.Header.Get("X-Subject-Token"))
		w.WriteHeader(code)
		if code == 200 {
			fmt.Fprintf(w, `{"token": {"expires_at": %q, "user": {"name": "u"}, "roles": [{"name": "reader"}]}}`, exp)
		}
	}))
	t.Cleanup(k.Close)
	return k
}

func (k *fakeKeystone) authn(t *testing.T, maxValidations int, wait time.Duration) *Keystone {
	t.Helper()
	ks, err := NewKeystone(KeystoneConfig{AuthURL: k.URL, Username: "ironic", Password: "p", ProjectName: "service",
		MaxValidations: maxValidations, ValidationWait: wait})
	if err != nil {
		t.Fatal(err)
	}
	return ks
}

func tokenRequest(tok string) *http.Request {
	r := httptest.NewRequest(http.MethodGet, "/v1/conductors", nil)
	r.Header.Set("X-Auth-Token", tok)
	return r
}

// concurrently authenticates n requests, the i-th with token(i), and
// counts the answers by status.
func concurrently(ks *Keystone, n int, token func(i int) string) map[int]int {
	var mu sync.Mutex
	codes := map[int]int{}
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			code := 200
			if _, f := ks.Authenticate(tokenRequest(token(i))); f != nil {
				code = f.Status
			}
			mu.Lock()
			codes[code]++
			mu.Unlock()
		}()
	}
	wg.Wait()
	return codes
}

// TestKeystoneInvalidTokensCached: Keystone is asked once about a junk
// token, however often and however concurrently it comes.
func TestKeystoneInvalidTokensCached(t *testing.T) {
	k := newFakeKeystone(t, 100*time.Millisecond, func(_, sub string) int { return http.StatusNotFound })
	ks := k.authn(t, 0, 0)
	if codes := concurrently(ks, 50, func(int) string { return "junk" }); codes[401] != 50 {
		t.Errorf("answers %v, want 50 x 401", codes)
	}
	for range 50 {
		if _, f := ks.Authenticate(tokenRequest("junk")); f == nil || f.Status != 401 {
			t.Fatalf("junk token: %+v", f)
		}
	}
	if n := k.gets.Load(); n != 1 {
		t.Errorf("%d validations of one junk token, want 1", n)
	}
	if n := k.posts.Load(); n != 1 {
		t.Errorf("%d service-token requests, want 1", n)
	}
}

// TestKeystoneOneValidationPerToken: concurrent requests with one new
// valid token share one validation.
func TestKeystoneOneValidationPerToken(t *testing.T) {
	k := newFakeKeystone(t, 100*time.Millisecond, func(_, sub string) int { return http.StatusOK })
	ks := k.authn(t, 0, 0)
	if codes := concurrently(ks, 30, func(int) string { return "good" }); codes[200] != 30 {
		t.Errorf("answers %v, want 30 x 200", codes)
	}
	if n := k.gets.Load(); n != 1 {
		t.Errorf("%d validations, want 1", n)
	}
}

// TestKeystoneServiceTokenRenewedOnce: when Keystone refuses the service
// token, one request renews it and the others use the new one.
func TestKeystoneServiceTokenRenewedOnce(t *testing.T) {
	k := newFakeKeystone(t, 20*time.Millisecond, func(svc, _ string) int {
		if svc == "svc-1" {
			return http.StatusUnauthorized
		}
		return http.StatusOK
	})
	ks := k.authn(t, 20, time.Second)
	if _, f := ks.Authenticate(tokenRequest("first")); f != nil {
		t.Fatalf("first: %+v", f)
	}
	// svc-2 is current; make Keystone refuse it too, once, for 20 tokens.
	k.posts.Store(1)
	ks.mu.Lock()
	ks.svc = "svc-1"
	ks.mu.Unlock()
	if codes := concurrently(ks, 20, func(i int) string { return fmt.Sprint("t", i) }); codes[200] != 20 {
		t.Errorf("answers %v, want 20 x 200", codes)
	}
	if n := k.posts.Load(); n != 2 {
		t.Errorf("%d service-token requests after the refusal, want 1", n-1)
	}
}

// TestKeystoneRefusesService: a 403 on validation (the service user may not
// validate tokens), a second 401 and a 500 are keystonemiddleware's 503,
// never the client's 401; a 404 is the client's 401.
func TestKeystoneRefusesService(t *testing.T) {
	for _, c := range []struct{ keystone, want int }{{403, 503}, {401, 503}, {500, 503}, {400, 503}, {404, 401}} {
		k := newFakeKeystone(t, 0, func(_, _ string) int { return c.keystone })
		_, f := k.authn(t, 0, 0).Authenticate(tokenRequest("tok"))
		if f == nil || f.Status != c.want {
			t.Errorf("Keystone %d: %+v, want %d", c.keystone, f, c.want)
		}
	}
}

// TestKeystoneSlowHoldsItsShare: with Keystone slow, at most
// MaxValidations are in flight; the rest get 503 after ValidationWait,
// and a cached token passes meanwhile.
func TestKeystoneSlowHoldsItsShare(t *testing.T) {
	var slow atomic.Bool
	k := newFakeKeystone(t, 0, func(_, sub string) int {
		if sub == "good" {
			return http.StatusOK
		}
		slow.Store(true)
		time.Sleep(time.Second)
		return http.StatusNotFound
	})
	ks := k.authn(t, 2, 100*time.Millisecond)
	if _, f := ks.Authenticate(tokenRequest("good")); f != nil {
		t.Fatal(f)
	}
	done := make(chan map[int]int)
	go func() { done <- concurrently(ks, 10, func(i int) string { return fmt.Sprint("junk", i) }) }()
	for !slow.Load() {
		time.Sleep(time.Millisecond)
	}
	start := time.Now()
	if _, f := ks.Authenticate(tokenRequest("good")); f != nil || time.Since(start) > 50*time.Millisecond {
		t.Errorf("a cached token while Keystone is slow: %+v after %s", f, time.Since(start))
	}
	codes := <-done
	if codes[401] != 2 || codes[503] != 8 {
		t.Errorf("answers %v, want 2 x 401 (validated) and 8 x 503", codes)
	}
}
