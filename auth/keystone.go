package auth

import (
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/singleflight"

	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/auth/policy"
)

// KeystoneConfig are keystonemiddleware's [keystone_authtoken] options the
// sidecar uses: the password plugin's service credentials.
type KeystoneConfig struct {
	// AuthURL is the Identity endpoint, e.g. http://keystone:5000/v3 (a
	// URL without /v3 gets it appended).
	AuthURL string
	// WWWAuthenticateURI is sent in WWW-Authenticate on a 401; default
	// AuthURL.
	WWWAuthenticateURI                 string
	Username, Password                 string
	UserDomainName, UserDomainID       string
	ProjectName                        string
	ProjectDomainName, ProjectDomainID string
	// TokenCacheTime bounds how long a validated token is trusted without
	// asking Keystone again (token_cache_time, default 300s); never past
	// the token's expiry.
	TokenCacheTime time.Duration
	// CacheSize bounds the validated tokens kept, and apart from them the
	// invalid ones (default 10000 each).
	CacheSize int
	// MaxValidations bounds the validations in flight at Keystone (default
	// 10): a slow Keystone holds at most these, and a request for a token
	// not in the caches waits up to ValidationWait (default 1 s) for one,
	// then gets 503.
	MaxValidations int
	ValidationWait time.Duration
	// Client sends the requests (TLS settings, a timeout); default one
	// with a 10s timeout.
	Client *http.Client
	Log    *slog.Logger
	// Now is the clock; default time.Now.
	Now func() time.Time
}

// Keystone is auth_strategy = keystone: keystonemiddleware's auth_token
// (keystonemiddleware/auth_token/__init__.py, python3-keystonemiddleware
// 10.1.0): X-Auth-Token validated with GET /v3/auth/tokens
// (X-Subject-Token) under the service's own token; a missing, invalid or
// expired token is a 401, Keystone unreachable or refusing the service (a
// 403: the service user lacks identity:validate_token; a 401 after one
// renewal of the service token; any other error) a 503, as
// _identity.verify_token raises ServiceError for them. Nothing is let
// through without a positive answer from Keystone.
//
// So that junk tokens cost Keystone and the sidecar little:
//   - a token Keystone said is invalid (404, or expired) is remembered as
//     such for TokenCacheTime (keystonemiddleware 10.1.0 keeps only valid
//     ones; a token ID never becomes valid later, so this only saves
//     Keystone the same question);
//   - one validation per token is in flight: the other requests with it
//     wait for that answer;
//   - at most MaxValidations are in flight at all;
//   - the service token is renewed by one request at a time; the others
//     use the token it got.
type Keystone struct {
	cfg  KeystoneConfig
	base string

	mu      sync.Mutex
	svc     string
	svcTo   time.Time
	valid   *lru[[32]byte, cached]
	invalid *lru[[32]byte, time.Time]
	// inflight holds one validation per token: the other requests with it
	// wait for that answer.
	inflight singleflight.Group

	// svcMu is held while the service token is fetched.
	svcMu sync.Mutex
	// slots are the validations in flight.
	slots chan struct{}
}

type cached struct {
	creds *Credentials
	until time.Time
}

// validation is the outcome of one token's validation.
type validation struct {
	creds *Credentials
	fail  *Failure
}

// NewKeystone checks the configuration; it does not contact Keystone.
func NewKeystone(cfg KeystoneConfig) (*Keystone, error) {
	if cfg.AuthURL == "" {
		return nil, errors.New("keystone: no auth_url")
	}
	if cfg.Username == "" || cfg.Password == "" || cfg.ProjectName == "" {
		return nil, errors.New("keystone: the service credentials need username, password and project_name")
	}
	if cfg.TokenCacheTime <= 0 {
		cfg.TokenCacheTime = 300 * time.Second
	}
	if cfg.CacheSize <= 0 {
		cfg.CacheSize = 10000
	}
	if cfg.MaxValidations <= 0 {
		cfg.MaxValidations = 10
	}
	if cfg.ValidationWait <= 0 {
		cfg.ValidationWait = time.Second
	}
	cfg.Client = cmp.Or(cfg.Client, &http.Client{Timeout: 10 * time.Second})
	cfg.Log = cmp.Or(cfg.Log, slog.New(slog.DiscardHandler))
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	base := strings.TrimRight(cfg.AuthURL, "/")
	if !strings.HasSuffix(base, "/v3") {
		base += "/v3"
	}
	cfg.WWWAuthenticateURI = cmp.Or(cfg.WWWAuthenticateURI, cfg.AuthURL)
	return &Keystone{cfg: cfg, base: base, valid: newLRU[[32]byte, cached](cfg.CacheSize),
		invalid: newLRU[[32]byte, time.Time](cfg.CacheSize), slots: make(chan struct{}, cfg.MaxValidations)}, nil
}

// unauthorized is auth_token's 401 body and header.
func (k *Keystone) unauthorized() *Failure {
	return &Failure{Status: http.StatusUnauthorized,
		Header: http.Header{"Content-Type": {"application/json"},
			"Www-Authenticate": {fmt.Sprintf(`Keystone uri="%s"`, k.cfg.WWWAuthenticateURI)}},
		Body: []byte(`{"error": {"code": 401, "title": "Unauthorized", "message": "The request you have made requires authentication."}}`)}
}

// unavailable is the 503 of an unreachable Keystone, in Ironic's error body.
func unavailable() *Failure {
	return &Failure{Status: http.StatusServiceUnavailable, Header: http.Header{"Content-Type": {"application/json"}},
		Body: []byte(`{"error_message": "{\"faultcode\": \"Server\", \"faultstring\": \"The Keystone service is temporarily unavailable.\", \"debuginfo\": null}"}`)}
}

var (
	errKeystoneDown = errors.New("keystone unavailable")
	// errInvalidToken marks Keystone's definite no (remembered).
	errInvalidToken = errors.New("invalid token")
)

// Authenticate implements Authenticator.
func (k *Keystone) Authenticate(r *http.Request) (*Credentials, *Failure) {
	tok := cmp.Or(strings.TrimSpace(r.Header.Get("X-Auth-Token")), strings.TrimSpace(r.Header.Get("X-Storage-Token")))
	if tok == "" {
		return nil, k.unauthorized()
	}
	key := sha256.Sum256([]byte(tok))
	now := k.cfg.Now()
	k.mu.Lock()
	if c, ok := k.valid.get(key); ok {
		if now.Before(c.until) {
			k.mu.Unlock()
			return c.creds, nil
		}
		k.valid.remove(key)
	}
	if until, ok := k.invalid.get(key); ok {
		if now.Before(until) {
			k.mu.Unlock()
			return nil, k.unauthorized()
		}
		k.invalid.remove(key)
	}
	k.mu.Unlock()
	ch := k.inflight.DoChan(string(key[:]), func() (any, error) {
		creds, fail := k.lead(r.Context(), key, tok)
		return validation{creds, fail}, nil
	})
	select {
	case res := <-ch:
		v := res.Val.(validation)
		return v.creds, v.fail
	case <-r.Context().Done():
		return nil, unavailable()
	}
}

// lead validates tok for every request waiting for it, within a slot, and
// caches the answer.
func (k *Keystone) lead(ctx context.Context, key [32]byte, tok string) (*Credentials, *Failure) {
	// The wait and the validation belong to every request waiting for
	// this token: they go on when the one that started them goes away.
	t := time.NewTimer(k.cfg.ValidationWait)
	select {
	case k.slots <- struct{}{}:
		t.Stop()
	case <-t.C:
		k.cfg.Log.Warn("auth: too many token validations in flight at Keystone", "max", cap(k.slots))
		return nil, unavailable()
	}
	creds, expires, err := k.validate(context.WithoutCancel(ctx), tok)
	<-k.slots
	now := k.cfg.Now()
	switch {
	case errors.Is(err, errKeystoneDown):
		k.cfg.Log.Error("auth: unable to validate token", "err", err)
		return nil, unavailable()
	case err != nil:
		k.cfg.Log.Info("auth: token rejected", "err", err)
		if errors.Is(err, errInvalidToken) {
			k.mu.Lock()
			k.invalid.put(key, now.Add(k.cfg.TokenCacheTime))
			k.mu.Unlock()
		}
		return nil, k.unauthorized()
	}
	until := now.Add(k.cfg.TokenCacheTime)
	if expires.Before(until) {
		until = expires
	}
	k.mu.Lock()
	k.valid.put(key, cached{creds: creds, until: until})
	k.mu.Unlock()
	return creds, nil
}

// tokenBody is the part of Keystone's token document the policy needs.
type tokenBody struct {
	Token struct {
		ExpiresAt string `json:"expires_at"`
		User      struct {
			ID, Name string
			Domain   struct{ ID, Name string } `json:"domain"`
		} `json:"user"`
		Project *struct {
			ID, Name string
			Domain   struct{ ID, Name string } `json:"domain"`
		} `json:"project"`
		Domain *struct{ ID, Name string }  `json:"domain"`
		System map[string]bool             `json:"system"`
		Roles  []struct{ ID, Name string } `json:"roles"`
		// IsAdminProject is absent unless Keystone has an admin project;
		// keystonemiddleware then sends True.
		IsAdminProject *bool `json:"is_admin_project"`
	} `json:"token"`
}

// validate asks Keystone about tok, renewing the service token once when
// Keystone refuses it.
func (k *Keystone) validate(ctx context.Context, tok string) (*Credentials, time.Time, error) {
	if k.cfg.Client.Timeout == 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
	}
	refused := ""
	for attempt := 0; ; attempt++ {
		svc, err := k.serviceToken(ctx, refused)
		if err != nil {
			return nil, time.Time{}, err
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, k.base+"/auth/tokens?nocatalog", nil)
		if err != nil {
			return nil, time.Time{}, fmt.Errorf("%w: %w", errKeystoneDown, err)
		}
		req.Header.Set("X-Auth-Token", svc)
		req.Header.Set("X-Subject-Token", tok)
		req.Header.Set("Accept", "application/json")
		resp, err := k.cfg.Client.Do(req)
		if err != nil {
			return nil, time.Time{}, fmt.Errorf("%w: %w", errKeystoneDown, err)
		}
		body, err := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
		_ = resp.Body.Close() // read in full or failed: nothing more to learn from Close
		if err != nil {
			return nil, time.Time{}, fmt.Errorf("%w: reading token: %w", errKeystoneDown, err)
		}
		switch {
		case resp.StatusCode == http.StatusOK:
			return k.credentials(body)
		case resp.StatusCode == http.StatusNotFound:
			return nil, time.Time{}, fmt.Errorf("%w: not found (invalid, expired or revoked)", errInvalidToken)
		case resp.StatusCode == http.StatusUnauthorized && attempt == 0:
			refused = svc // the service token expired or was revoked: renew it
			continue
		}
		// keystonemiddleware's ServiceError: a 403 (the service user may
		// not validate tokens), a second 401, any other answer.
		return nil, time.Time{}, fmt.Errorf("%w: keystone answered %s validating a token", errKeystoneDown, resp.Status)
	}
}

func (k *Keystone) credentials(body []byte) (*Credentials, time.Time, error) {
	var tb tokenBody
	if err := json.Unmarshal(body, &tb); err != nil {
		return nil, time.Time{}, fmt.Errorf("%w: decoding token: %w", errKeystoneDown, err)
	}
	t := tb.Token
	exp, err := time.Parse(time.RFC3339Nano, t.ExpiresAt)
	if err != nil {
		return nil, time.Time{}, fmt.Errorf("token without a valid expires_at %q", t.ExpiresAt)
	}
	if !k.cfg.Now().Before(exp) {
		return nil, time.Time{}, fmt.Errorf("%w: expired", errInvalidToken)
	}
	roles := make([]string, 0, len(t.Roles))
	for _, r := range t.Roles {
		roles = append(roles, r.Name)
	}
	v := policy.Values{
		"user_id": t.User.ID, "user_domain_id": t.User.Domain.ID, "roles": roles,
		"system_scope": nil, "domain_id": nil, "project_id": nil, "project_domain_id": nil,
		"project_name": nil, "is_admin_project": t.IsAdminProject == nil || *t.IsAdminProject,
		"is_public_api": false, "service_user_id": nil, "service_user_domain_id": nil,
		"service_project_id": nil, "service_project_domain_id": nil, "service_roles": []string{},
	}
	if t.Project != nil {
		v["project_id"], v["project_name"], v["project_domain_id"] = t.Project.ID, t.Project.Name, t.Project.Domain.ID
	}
	if t.Domain != nil {
		v["domain_id"] = t.Domain.ID
	}
	if t.System["all"] {
		v["system_scope"] = "all"
	}
	return &Credentials{User: t.User.Name, Values: v}, exp, nil
}

// serviceToken returns the service's own token, fetched with the password
// method and kept until shortly before it expires; refused is a token
// Keystone refused ("" when none), never returned again. One request at a
// time fetches it; the others then take the token it got.
func (k *Keystone) serviceToken(ctx context.Context, refused string) (string, error) {
	current := func() (string, bool) {
		k.mu.Lock()
		defer k.mu.Unlock()
		return k.svc, k.svc != "" && k.svc != refused && k.cfg.Now().Before(k.svcTo)
	}
	if s, ok := current(); ok {
		return s, nil
	}
	k.svcMu.Lock()
	defer k.svcMu.Unlock()
	if s, ok := current(); ok {
		return s, nil
	}
	dom := func(name, id string) map[string]string {
		if id != "" {
			return map[string]string{"id": id}
		}
		if name == "" {
			name = "Default"
		}
		return map[string]string{"name": name}
	}
	reqBody := map[string]any{"auth": map[string]any{
		"identity": map[string]any{"methods": []string{"password"}, "password": map[string]any{
			"user": map[string]any{"name": k.cfg.Username, "password": k.cfg.Password,
				"domain": dom(k.cfg.UserDomainName, k.cfg.UserDomainID)}}},
		"scope": map[string]any{"project": map[string]any{"name": k.cfg.ProjectName,
			"domain": dom(k.cfg.ProjectDomainName, k.cfg.ProjectDomainID)}},
	}}
	b, _ := json.Marshal(reqBody)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, k.base+"/auth/tokens?nocatalog", bytes.NewReader(b))
	if err != nil {
		return "", fmt.Errorf("%w: %w", errKeystoneDown, err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := k.cfg.Client.Do(req)
	if err != nil {
		return "", fmt.Errorf("%w: service token: %w", errKeystoneDown, err)
	}
	defer func() { _ = resp.Body.Close() }()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	if resp.StatusCode != http.StatusCreated {
		// Wrong service credentials leave no token to validate with: the
		// API is unavailable, never open.
		return "", fmt.Errorf("%w: service token: keystone answered %s", errKeystoneDown, resp.Status)
	}
	var tb tokenBody
	if err := json.Unmarshal(body, &tb); err != nil {
		return "", fmt.Errorf("%w: service token: %w", errKeystoneDown, err)
	}
	exp, err := time.Parse(time.RFC3339Nano, tb.Token.ExpiresAt)
	if err != nil {
		return "", fmt.Errorf("%w: service token expires_at %q", errKeystoneDown, tb.Token.ExpiresAt)
	}
	s := resp.Header.Get("X-Subject-Token")
	k.mu.Lock()
	k.svc, k.svcTo = s, exp.Add(-time.Minute)
	k.mu.Unlock()
	return s, nil
}
