package auth

import (
	"bytes"
	"cmp"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"iter"
	"log/slog"
	"net/http"
	"os"
	"runtime"
	"strings"
	"sync"
	"time"

	"golang.org/x/crypto/bcrypt"
)

// Basic is auth_strategy = http_basic: ironic-lib's BasicAuthMiddleware
// (ironic_lib/auth_basic.py, python3-ironic-lib 5.3.0; ironic/common/auth_basic.py
// on master) over Ironic's [DEFAULT]http_basic_auth_user_file, an Apache
// htpasswd file of bcrypt digests only ($2y$, $2a$, $2b$). The file is read
// on each request, as Ironic reads it: the first line starting with "user:"
// decides. Unlike Ironic, a line whose first non-blank character is '#' is
// a comment, as Apache reads the file: "#alice:..." is a user taken out,
// not a user named "#alice".
//
// bcrypt costs tens of milliseconds of a core per comparison (cost 10:
// ~55 ms, 12: ~210 ms), so three bounds keep a flood of passwords from
// taking the cores from /metrics and the probes:
//   - results are cached, true and false, for the last 256 (user, digest,
//     password) triples, as Ironic 32.0 does since 2a6271888 ("Memoize calls
//     to bcrypt.checkpw", functools.lru_cache(maxsize=256)); the key is a
//     SHA-256 of the triple, so no password is kept. The user is in the key
//     (Ironic's key is digest and password) so that one unknown user's
//     result never answers for another: with a shared key, (candidate, p)
//     then (other, p) answered from the cache exactly when the candidate
//     was unknown;
//   - at most Workers comparisons run at once (default half the cores, at
//     least 1); a request waits up to Wait (1 s) for one, then gets 503.
//
// Timing does not tell which users exist: an unknown user costs one
// comparison against the digest of a user of the file, the one a keyed
// hash of the name picks (HMAC-SHA256 under a secret drawn at start). So
// each unknown name costs, every time, what some user costs, and unknown
// names as a whole cost what the file's users cost, whatever mix of bcrypt
// costs the file holds; comparing every unknown name against one digest of
// the highest cost instead made the users with cheaper digests stand out
// (cost 4: ~3 ms against ~230 ms). Padding every check to the highest
// cost was the other way; it spends a core for nothing on every cheap
// user's request. A file without users falls back to a digest of cost 10.
type Basic struct {
	File string
	Log  *slog.Logger
	// Wait is how long a request waits for a bcrypt worker.
	Wait time.Duration

	workers chan struct{}
	// dummy is compared for unknown users when the file has no user.
	dummy []byte
	// secret keys the choice of a user's digest for an unknown name.
	secret [32]byte
	mu     sync.Mutex
	cache  *lru[[32]byte, bool]
}

// BasicCacheSize is the number of bcrypt results kept, as Ironic's
// lru_cache(maxsize=256).
const BasicCacheSize = 256

// NewBasic checks the file as validate_auth_file does: readable, and every
// line with a ":" (comments aside) holding a bcrypt digest. workers bounds
// the bcrypt comparisons at once (<= 0: half the cores, at least 1).
func NewBasic(file string, workers int, log *slog.Logger) (*Basic, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("http_basic_auth_user_file: %w", err)
	}
	for user, digest := range htpasswd(b) {
		if !isBcrypt(digest) {
			return nil, fmt.Errorf("http_basic_auth_user_file %s: only bcrypt digested passwords are supported for %s", file, user)
		}
	}
	log = cmp.Or(log, slog.New(slog.DiscardHandler))
	if workers <= 0 {
		workers = max(1, runtime.GOMAXPROCS(0)/2)
	}
	bb := &Basic{File: file, Log: log, Wait: time.Second, workers: make(chan struct{}, workers),
		cache: newLRU[[32]byte, bool](BasicCacheSize)}
	_, _ = rand.Read(bb.secret[:])
	dummy, err := bcrypt.GenerateFromPassword([]byte(hex.EncodeToString(bb.secret[:])), bcrypt.DefaultCost)
	if err != nil {
		return nil, err
	}
	bb.dummy = dummy
	return bb, nil
}

// stand picks the digest an unknown user is compared against: the one of
// the file's users (digests) a keyed hash of the name selects, or the
// start-up dummy when the file has none.
func (b *Basic) stand(user []byte, digests [][]byte) []byte {
	if len(digests) == 0 {
		return b.dummy
	}
	m := hmac.New(sha256.New, b.secret[:])
	m.Write(user)
	return digests[binary.BigEndian.Uint64(m.Sum(nil))%uint64(len(digests))]
}

// check is bcrypt.CompareHashAndPassword, cached and bounded; ok false
// when no worker was free within b.Wait (or the client went away).
func (b *Basic) check(ctx context.Context, user, digest, pass []byte) (match, ok bool) {
	h := sha256.New()
	h.Write(user)
	h.Write([]byte{0})
	h.Write(digest)
	h.Write([]byte{0})
	h.Write(pass)
	var key [32]byte
	h.Sum(key[:0])
	b.mu.Lock()
	v, hit := b.cache.get(key)
	b.mu.Unlock()
	if hit {
		return v, true
	}
	t := time.NewTimer(b.Wait)
	defer t.Stop()
	select {
	case b.workers <- struct{}{}:
	case <-t.C:
		return false, false
	case <-ctx.Done():
		return false, false
	}
	match = bcrypt.CompareHashAndPassword(digest, pass) == nil
	<-b.workers
	b.mu.Lock()
	b.cache.put(key, match)
	b.mu.Unlock()
	return match, true
}

// htpasswd yields the user and digest of each line of an htpasswd file,
// blank lines, comments and lines without a ':' aside.
func htpasswd(data []byte) iter.Seq2[string, string] {
	return func(yield func(user, digest string) bool) {
		for line := range strings.Lines(string(data)) {
			line = strings.TrimSpace(line)
			if line == "" || line[0] == '#' {
				continue
			}
			if user, digest, ok := strings.Cut(line, ":"); ok && !yield(user, digest) {
				return
			}
		}
	}
}

func isBcrypt(d string) bool {
	return strings.HasPrefix(d, "$2y$") || strings.HasPrefix(d, "$2a$") || strings.HasPrefix(d, "$2b$")
}

// basicFailure is BasicAuthMiddleware.format_exception's answer.
func basicFailure(status int, msg string) *Failure {
	h := http.Header{"Content-Type": {"application/json"}}
	if status == http.StatusUnauthorized {
		h.Set("WWW-Authenticate", `Basic realm="Baremetal API"`)
	}
	quoted, _ := json.Marshal(msg) // a string always marshals
	return &Failure{Status: status, Header: h,
		Body: fmt.Appendf(nil, `{"error": {"message": %s, "code": %d}}`, quoted, status)}
}

// Authenticate implements Authenticator (parse_header, parse_token,
// authenticate).
func (b *Basic) Authenticate(r *http.Request) (*Credentials, *Failure) {
	hdr, ok := r.Header["Authorization"]
	if !ok || len(hdr) == 0 {
		return nil, basicFailure(http.StatusUnauthorized, "Authorization required")
	}
	typ, token, ok := strings.Cut(strings.TrimSpace(hdr[0]), " ")
	token = strings.TrimSpace(token)
	if !ok || token == "" {
		return nil, basicFailure(http.StatusBadRequest, "Could not parse Authorization header")
	}
	if !strings.EqualFold(typ, "basic") {
		return nil, basicFailure(http.StatusBadRequest, fmt.Sprintf("Unsupported authorization type \"%s\"", typ))
	}
	pair, err := base64.StdEncoding.DecodeString(token)
	user, pass, ok := bytes.Cut(pair, []byte(":"))
	if err != nil || !ok {
		return nil, basicFailure(http.StatusBadRequest, "Could not decode authorization token")
	}
	data, err := os.ReadFile(b.File)
	if err != nil {
		b.Log.Error("auth: reading the http_basic user file", "err", err)
		return nil, basicFailure(http.StatusInternalServerError, "Invalid configuration file. Problem reading auth user file")
	}
	var digest []byte
	var digests [][]byte // the users' digests, for an unknown user's stand-in
	for u, d := range htpasswd(data) {
		if u == string(user) && digest == nil {
			if !isBcrypt(d) {
				return nil, basicFailure(http.StatusInternalServerError, "Invalid configuration file. Only bcrypt digested passwords are supported for "+string(user))
			}
			digest = []byte(d)
		}
		if isBcrypt(d) {
			digests = append(digests, []byte(d))
		}
	}
	known := digest != nil
	if !known {
		digest = b.stand(user, digests)
	}
	match, ok := b.check(r.Context(), user, digest, pass)
	switch {
	case !ok:
		return nil, basicFailure(http.StatusServiceUnavailable, "Too many authentication requests at once, try again later")
	case !match || !known:
		return nil, basicFailure(http.StatusUnauthorized, "Incorrect username or password")
	}
	return &Credentials{User: string(user)}, nil
}
