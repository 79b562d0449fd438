// Package auth authenticates the sidecar's JSON API and status page as
// Ironic's API does ([DEFAULT]auth_strategy: noauth, http_basic, keystone)
// and answers, per request, what Ironic's policy lets the caller read.
package auth

import (
	"context"
	"maps"
	"net/http"
	"regexp"
	"strings"

	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/auth/policy"
)

// Modes of [DEFAULT]auth_strategy.
const (
	ModeNoauth    = "noauth"
	ModeHTTPBasic = "http_basic"
	ModeKeystone  = "keystone"
)

// Credentials are who a request authenticated as: oslo.context's
// to_policy_values (plus Ironic's project_name and is_public_api).
type Credentials struct {
	// User is the user's name, for logs.
	User string
	// Values are the policy credentials.
	Values policy.Values
}

// Authenticator checks one request's credentials.
type Authenticator interface {
	// Authenticate returns the caller's credentials, or a Failure to send.
	Authenticate(r *http.Request) (*Credentials, *Failure)
}

// Failure is the answer to a request that did not authenticate.
type Failure struct {
	Status int
	Header http.Header
	Body   []byte
}

// Send writes the failure as the answer, with X-Content-Type-Options:
// nosniff (its body may echo what the client sent).
func (f *Failure) Send(w http.ResponseWriter) {
	maps.Copy(w.Header(), f.Header)
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(f.Status)
	w.Write(f.Body) //nolint:errcheck // the client is gone if it fails: nothing to tell it
}

type ctxKey struct{}

// FromContext returns the credentials Middleware stored, or nil (a public
// route, or noauth).
func FromContext(ctx context.Context) *Credentials {
	c, _ := ctx.Value(ctxKey{}).(*Credentials)
	return c
}

// publicRoutes are Ironic's acl_public_routes (ironic/api/config.py) as
// AuthPublicRoutes matches them (ironic/api/middleware/auth_public_routes.py):
// on the path without trailing slashes, with an optional .json or .xml.
var publicRoutes = regexp.MustCompile(`^(/|/v1|/v1/lookup|/v1/heartbeat/[a-z0-9\-]+)(\.json|\.xml)?$`)

// IsPublic reports whether Ironic answers path without authentication.
func IsPublic(path string) bool {
	p := strings.TrimRight(path, "/")
	if p == "" {
		p = path
	}
	return publicRoutes.MatchString(p)
}

// Middleware authenticates every request to next except Ironic's public
// routes; a nil Authenticator (noauth) lets everything through.
func Middleware(a Authenticator, next http.Handler) http.Handler {
	if a == nil {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if IsPublic(r.URL.Path) {
			next.ServeHTTP(w, r)
			return
		}
		c, f := a.Authenticate(r)
		if f != nil {
			f.Send(w)
			return
		}
		next.ServeHTTP(w, r.WithContext(WithCredentials(r.Context(), c)))
	})
}

// Access is what one request may read under Ironic's policy
// (ironic/api/controllers/v1/utils.py check_policy, check_list_policy,
// check_node_policy_and_retrieve; node.py node_sanitize). Ironic applies
// its policy only when auth_strategy = keystone (policy.authorize).
//
// An Access is one request's: its methods are not safe for concurrent use
// (the node checks reuse one target).
type Access struct {
	e *policy.Enforcer
	c policy.Values
	// t is the target of the node checks: a copy of c, with the node's
	// owner and lessee set per check (nodeTarget).
	t policy.Values
}

// NewAccess returns the access of creds under e.
func NewAccess(e *policy.Enforcer, creds *Credentials) *Access {
	v := policy.Values{}
	if creds != nil {
		v = creds.Values
	}
	return &Access{e: e, c: v}
}

// Node target keys: the node's owner and lessee.
const (
	keyOwner  = "node.owner"
	keyLessee = "node.lessee"
)

// nodeTarget returns the target of a node check: the credentials' values
// with, when set, the node's owner (always, None when unset, with
// ownerAlways) and lessee. Policy checks only read their target, so one
// map serves every node check of the request.
func (a *Access) nodeTarget(owner, lessee *string, ownerAlways bool) policy.Values {
	if a.t == nil {
		a.t = make(policy.Values, len(a.c)+2)
		maps.Copy(a.t, a.c)
	}
	t := a.t
	for _, k := range []string{keyOwner, keyLessee} {
		if v, ok := a.c[k]; ok {
			t[k] = v
		} else {
			delete(t, k)
		}
	}
	switch {
	case owner != nil && *owner != "":
		t[keyOwner] = *owner
	case ownerAlways && owner != nil:
		t[keyOwner] = ""
	case ownerAlways:
		t[keyOwner] = nil // None
	}
	if lessee != nil && *lessee != "" {
		t[keyLessee] = *lessee
	}
	return t
}

// CanGetConductors is baremetal:conductor:get.
func (a *Access) CanGetConductors() bool {
	// The target is the credentials' values, as Ironic's cdict; Check only
	// reads it.
	return a.e.Check(policy.RuleConductorGet, a.c, a.c)
}

// CanSeeComputes is Nova's os_compute_api:os-hypervisors:show (admin only
// by default): whether the caller may see which compute hosts manage a
// node.
func (a *Access) CanSeeComputes() bool {
	return a.e.Check(policy.RuleNovaHypervisors, a.c, a.c)
}

// ListNodes is check_list_policy('node', project): every node when
// baremetal:node:list_all allows it; otherwise, for a project-scoped caller
// whom baremetal:node:list allows, the nodes its project owns or leases
// (filter is the project); otherwise forbidden (ok false, rule names the
// rule that refused).
func (a *Access) ListNodes(project string) (filter string, rule string, ok bool) {
	if a.e.Check(policy.RuleNodeListAll, a.c, a.c) {
		return project, "", true
	}
	own, _ := a.c["project_id"].(string)
	if own == "" || project != "" && project != own {
		return "", policy.RuleNodeListAll, false
	}
	if !a.e.Check(policy.RuleNodeList, a.c, a.c) {
		return "", policy.RuleNodeList, false
	}
	return own, "", true
}

// CanGetNode is check_owner_policy('node', 'baremetal:node:get', owner,
// lessee): the owner is always in the target (None when unset), the lessee
// only when set. Ironic answers 404 when it fails.
func (a *Access) CanGetNode(owner, lessee *string) bool {
	return a.e.Check(policy.RuleNodeGet, a.nodeTarget(owner, lessee, true), a.c)
}

// ShowReservation is node_sanitize's: with baremetal:node:get:filter_threshold
// everything shows; otherwise baremetal:node:get:reservation decides. The
// target has owner and lessee only when set.
func (a *Access) ShowReservation(owner, lessee *string) bool {
	t := a.nodeTarget(owner, lessee, false)
	if a.e.Check(policy.RuleNodeFilterThreshold, t, a.c) {
		return true
	}
	return a.e.Check(policy.RuleNodeReservation, t, a.c)
}

// WithCredentials returns ctx carrying creds, as Middleware stores them.
func WithCredentials(ctx context.Context, creds *Credentials) context.Context {
	return context.WithValue(ctx, ctxKey{}, creds)
}
