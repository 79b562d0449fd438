package api

import (
	"cmp"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"strconv"
	"strings"

	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/internal/methods"
	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/nova"
	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/topology"
)

// Options configures the handler. Zero values take the documented defaults.
type Options struct {
	// Logger receives server-side errors; default discards.
	Logger *slog.Logger
	// MaxLimit is Ironic's [api]max_limit: the page size when a request
	// has no limit, and the cap of a larger one. Default 1000.
	MaxLimit int
	// MaxMicroversion is the minor number of the newest 1.x microversion
	// served, answered for "latest" and for requests without a version
	// header. Default (0) DefaultMaxMicroversion, 49; values are clamped to
	// [49, 82] (82 is the newest of Ironic 21.4; no microversion between
	// changes what the sidecar serves).
	MaxMicroversion int
	// PublicEndpoint is Ironic's [api]public_endpoint: the base URL of
	// links, e.g. "https://ironic.example.com:6385". Default: the scheme
	// and Host of each request.
	PublicEndpoint string
	// Access, when set, returns what Ironic's policy lets a request read
	// (auth_strategy = keystone); nil lets every request read everything,
	// as Ironic does under noauth and http_basic.
	Access func(r *http.Request) Access
	// Nova, when set (the exporter reads Nova's databases), answers the
	// NovaField extension of the node representation; nil: no such field.
	Nova NovaLookup
}

// NovaLookup answers the Nova side of a node.
type NovaLookup interface {
	// NodeComputes are the nova-computes whose views manage the node
	// (none: no view does); ok is false when the Nova answer does not
	// cover the node (not read yet, or a node newer than it).
	NodeComputes(uuid string) (claims []nova.FleetClaim, ok bool)
}

// Access is what Ironic's policy lets one request read (see auth.Access).
// A value belongs to one request and need not be safe for concurrent use
// (auth's reuses one target map between its checks).
type Access interface {
	// CanGetConductors is baremetal:conductor:get; it also decides whether
	// AffinityField shows the conductor's name.
	CanGetConductors() bool
	// CanSeeComputes is Nova's hypervisor policy: whether NovaField shows
	// the compute hosts.
	CanSeeComputes() bool
	// ListNodes is check_list_policy: the project to filter nodes by
	// ("" for none), or ok false and the rule that refused.
	ListNodes(project string) (filter, rule string, ok bool)
	// CanGetNode is baremetal:node:get on a node (a 404 when false).
	CanGetNode(owner, lessee *string) bool
	// ShowReservation is false when node_sanitize redacts reservation.
	ShowReservation(owner, lessee *string) bool
}

type handler struct {
	cache    *topology.Cache
	log      *slog.Logger
	maxLimit int
	maxMinor int
	public   string
	access   func(r *http.Request) Access
	nova     NovaLookup
}

// NewHandler returns the Ironic-compatible JSON API, rendered from cache:
// GET (and HEAD) of /, /v1, /v1/conductors, /v1/conductors/{hostname},
// /v1/nodes, /v1/nodes/detail, /v1/nodes/{node_ident} and
// /v1/nodes/{node_ident}/conductor. It never reads the database itself.
func NewHandler(cache *topology.Cache, opts Options) http.Handler {
	h := &handler{cache: cache, log: cmp.Or(opts.Logger, slog.New(slog.DiscardHandler)), maxLimit: opts.MaxLimit,
		maxMinor: opts.MaxMicroversion, public: strings.TrimRight(opts.PublicEndpoint, "/"), access: opts.Access, nova: opts.Nova}
	if h.maxLimit <= 0 {
		h.maxLimit = 1000
	}
	switch {
	case h.maxMinor == 0:
		h.maxMinor = DefaultMaxMicroversion
	case h.maxMinor < minor49Conductors:
		h.log.Warn("api: MaxMicroversion below 1.49 (conductors); using 1.49", "requested", h.maxMinor)
		h.maxMinor = minor49Conductors
	case h.maxMinor > highestMicroversion:
		h.log.Warn("api: MaxMicroversion above Ironic 21.4's 1.82; using 1.82", "requested", h.maxMinor)
		h.maxMinor = highestMicroversion
	}
	return h
}

// reservedIdent reports the node sub-controllers of Ironic; used as a node
// ident they are a routing 404 (NodesController._lookup).
func reservedIdent(s string) bool {
	switch s {
	case "ports", "portgroups", "vifs", "volume", "traits", "bios", "allocation", "history", "inventory":
		return true
	}
	return false
}

// request is one request being answered.
type request struct {
	h     *handler
	w     http.ResponseWriter
	r     *http.Request
	minor int
	// jsonSuffix is set when the path ended in ".json", which Ironic strips
	// (JsonExtensionMiddleware) and retries node lookups with.
	jsonSuffix bool
	// acc is the request's access under Ironic's policy; nil: everything.
	acc Access
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rq := request{h: h, w: w, r: r}
	defer rq.recoverPanic()
	if rest, ok := rq.front(); ok {
		rq.route(rest)
	}
}

// recoverPanic answers a panic of the request's handling with a 500 (a
// deferred call; http.ErrAbortHandler is passed on).
func (rq *request) recoverPanic() {
	if v := recover(); v != nil {
		if err, ok := v.(error); ok && errors.Is(err, http.ErrAbortHandler) {
			panic(v)
		}
		rq.h.log.Error("api: panic serving request", "path", rq.r.URL.Path, "panic", fmt.Sprint(v))
		rq.fail(&apiError{status: http.StatusInternalServerError, msg: "Internal error."})
	}
}

// front does what precedes the resources, as Ironic does it: the policy
// access, the request id, the method, the path's length and segments
// (at most maxSegments), the service root and the v1 document, the
// microversion. It returns the v1 resource path (at least one segment),
// or false when it answered the request itself. Benchmarks mount a trivial
// resource behind the same front (api/bench_test.go).
func (rq *request) front() ([]string, bool) {
	r := rq.r
	if rq.h.access != nil {
		rq.acc = rq.h.access(r)
	}
	hdr := rq.w.Header()
	hdr[hdrRequestID] = newRequestID()
	if !methods.Allowed(rq.w, r) {
		rq.fail(readOnly(r.Method))
		return nil, false
	}
	// Without RawPath the decoded Path is the path as sent (net/http keeps
	// RawPath when the encoding matters, e.g. for %2F).
	path, escaped := r.URL.Path, r.URL.RawPath != ""
	if escaped {
		path = r.URL.EscapedPath()
	}
	if len(path) > maxPathLen || len(r.URL.RawQuery) > maxQueryLen {
		rq.fail(badRequest("The request URI is too long."))
		return nil, false
	}
	rest, ok := rq.split(path, escaped)
	if !ok {
		rq.fail(errRouteNotFound)
		return nil, false
	}
	if len(rest) == 0 {
		// The service root: up to 26.0 Ironic parses no version here and
		// sends no version headers; 26.1+ negotiates as GET /v1 does
		// (rules.RootVersionHeaders). Without data, the older answer.
		if t := rq.h.cache.Get(r.Context()).Topology; t != nil && t.Rules.RootVersionHeaders() {
			if !rq.version(false) {
				return nil, false
			}
		}
		rq.root()
		return nil, false
	}
	if rest[0] == "v1" {
		rest = rest[1:]
		if len(rest) == 0 {
			if rq.version(false) {
				rq.v1()
			}
			return nil, false
		}
	} // else: Ironic routes paths without "v1" (the bookmark links) to v1
	if !rq.version(true) {
		return nil, false
	}
	return rest, true
}

// route serves the v1 resource named by rest (the path's segments after
// "v1", at least one).
func (rq *request) route(rest []string) {
	if unservedResource(rest[0]) {
		rq.fail(unserved(rest[0]))
		return
	}
	switch {
	case rest[0] == "conductors" && len(rest) == 1:
		rq.listConductors()
	case rest[0] == "conductors" && len(rest) == 2:
		rq.getConductor(rest[1])
	case rest[0] == "nodes" && len(rest) == 1:
		rq.listNodes(false)
	case rest[0] == "nodes" && len(rest) == 2 && rest[1] == "detail":
		rq.listNodes(true)
	case rest[0] == "nodes" && !reservedIdent(rest[1]):
		rq.routeNode(rest[1], rest[2:])
	default:
		rq.fail(errRouteNotFound)
	}
}

// routeNode serves /v1/nodes/{ident}/rest...
func (rq *request) routeNode(ident string, rest []string) {
	if !isUUIDLike(ident) && !isValidLogicalName(ident) {
		rq.fail(routingError(http.StatusBadRequest, "Expected UUID or name for node: "+ident))
		return
	}
	switch {
	case len(rest) == 0:
		rq.getNode(ident)
	case len(rest) == 1 && rest[0] == "conductor":
		rq.nodeConductor(ident)
	case unservedNodeResource(rest[0]):
		rq.fail(unserved("nodes/{node_ident}/" + rest[0]))
	default:
		rq.fail(errRouteNotFound)
	}
}

// maxSegments is the most path segments of a served resource
// (/v1/nodes/{ident}/conductor).
const maxSegments = 4

// split cuts the path into segments, unescaping them when escaped, after
// dropping trailing slashes and a ".json" extension as Ironic does. It
// reports false for more than maxSegments or an empty one ("//").
func (rq *request) split(path string, escaped bool) ([]string, bool) {
	path = strings.TrimRight(path, "/")
	if p, ok := strings.CutSuffix(path, ".json"); ok {
		path = strings.TrimRight(p, "/")
		rq.jsonSuffix = true
	}
	path = strings.TrimPrefix(path, "/")
	if path == "" {
		return nil, true
	}
	segs := strings.SplitN(path, "/", maxSegments+1)
	if len(segs) > maxSegments {
		return nil, false
	}
	for i, seg := range segs {
		if seg == "" {
			return nil, false
		}
		if escaped && strings.IndexByte(seg, '%') >= 0 {
			// %XX decoded, invalid escapes kept literally, '+' kept.
			segs[i] = unquotePlus(strings.ReplaceAll(seg, "+", "%2B"))
		}
	}
	return segs, true
}

// version negotiates the request's microversion and sets the response
// header; on failure it answers the error and reports false.
func (rq *request) version(routing bool) bool {
	m, err := rq.h.negotiate(rq.r, routing)
	hdr := rq.w.Header()
	if err == nil || !err.unparsable {
		// Ironic's version hook sets the range headers once it could parse
		// the requested version, even one out of range; errors raised
		// before it (routing, an unparsable header) carry none.
		hdr[hdrMinVersion] = []string{versionString(minMinor)}
		hdr[hdrMaxVersion] = []string{versionString(rq.h.maxMinor)}
	}
	if err != nil {
		rq.fail(err)
		return false
	}
	rq.minor = m
	hdr[hdrVersion] = []string{versionString(m)}
	return true
}

// newRequestID returns the value of an Openstack-Request-Id header in the
// form of Ironic's ("req-" and a random UUID). It only correlates logs, so
// a non-cryptographic source is enough.
func newRequestID() []string {
	var u [16]byte
	binary.LittleEndian.PutUint64(u[:8], rand.Uint64())
	binary.LittleEndian.PutUint64(u[8:], rand.Uint64())
	u[6] = u[6]&0x0f | 0x40 // version 4
	u[8] = u[8]&0x3f | 0x80 // RFC 4122 variant
	h := hex.EncodeToString(u[:])
	return []string{"req-" + h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]}
}

// base returns the base URL of links, like Ironic's request.public_url.
func (rq *request) base() string {
	if rq.h.public != "" {
		return rq.h.public
	}
	// Not the Host header nor an absolute request URL, which the client
	// chooses (links to anywhere): the address the request arrived at.
	// Without a connection (a request handled in-process), the Host.
	host := rq.r.Host
	if a, _ := rq.r.Context().Value(http.LocalAddrContextKey).(net.Addr); a != nil {
		host = a.String()
	}
	if rq.r.TLS != nil {
		return "https://" + cmp.Or(host, "localhost")
	}
	return "http://" + cmp.Or(host, "localhost")
}

// Headers of JSON answers rendered from a stale topology: the last refresh
// failed, or the data is older than the cache's MinInterval allows (plus
// topology.RefreshGrace, the time a refresh itself may take).
const (
	hdrStale   = "X-Ironic-Exporter-Stale"
	hdrDataAge = "X-Ironic-Exporter-Data-Age"
)

// topology returns the cached topology, or the 503 to answer while none was
// ever read. A stale topology (the last refresh failed) is served, marked
// by the X-Ironic-Exporter-Stale and -Data-Age headers.
func (rq *request) topology() (*topology.Topology, *apiError) {
	v := rq.h.cache.Get(rq.r.Context())
	if v.Topology == nil {
		rq.h.log.Debug("api: no topology to serve yet", "err", v.Err)
		if v.Permanent() {
			return nil, &apiError{status: http.StatusServiceUnavailable,
				msg: "The exporter's database is not Ironic's: a table or column Ironic has is missing. Check --db.dsn (or [database]connection)."}
		}
		return nil, &apiError{status: http.StatusServiceUnavailable,
			msg: "The exporter has not read Ironic's database yet; retry later."}
	}
	age := rq.h.cache.Now().Sub(v.LastSuccess)
	if v.Err != nil || age > rq.h.cache.MinInterval()+topology.RefreshGrace {
		hdr := rq.w.Header()
		hdr[hdrStale] = []string{"true"}
		hdr[hdrDataAge] = []string{strconv.FormatFloat(max(age.Seconds(), 0), 'f', 1, 64)}
	}
	return v.Topology, nil
}

// hdrNoSniff is X-Content-Type-Options (Ironic does not send it).
const hdrNoSniff = "X-Content-Type-Options"

// reply writes a 200 JSON body.
func (rq *request) reply(body []byte) { rq.write(http.StatusOK, body) }

// write writes a JSON body (none for HEAD) with its status. nosniff keeps
// a browser from reading as HTML an error body that echoes the request.
func (rq *request) write(status int, body []byte) {
	hdr := rq.w.Header()
	hdr["Content-Type"] = []string{"application/json"}
	hdr[hdrNoSniff] = []string{"nosniff"}
	hdr["Content-Length"] = []string{strconv.Itoa(len(body))}
	rq.w.WriteHeader(status)
	if rq.r.Method != http.MethodHead {
		_, _ = rq.w.Write(body)
	}
}

// fail writes an error in Ironic's shape.
func (rq *request) fail(e *apiError) {
	if e.status >= 500 && e.status != http.StatusNotImplemented {
		rq.h.log.Warn("api: server error", "path", rq.r.URL.Path, "status", e.status, "msg", e.msg)
	}
	body := e.body()
	hdr := rq.w.Header()
	if e.routing && !e.version {
		// Ironic raises these while routing, before its version hook.
		delete(hdr, hdrMinVersion)
		delete(hdr, hdrMaxVersion)
		delete(hdr, hdrVersion)
	}
	rq.write(e.status, body)
}

const (
	rootName        = "OpenStack Ironic API"
	rootDescription = "Ironic is an OpenStack project which enables the provision and management of baremetal machines."
)

// appendVersion appends Ironic's version.default_version() document.
func (rq *request) appendVersion(b []byte, base string) []byte {
	b = append(b, `{"id": "v1", "links": [{"href": `...)
	b = appendString(b, base+"/v1/")
	b = append(b, `, "rel": "self"}], "status": "CURRENT", "min_version": `...)
	b = appendString(b, versionString(minMinor))
	b = append(b, `, "version": `...)
	b = appendString(b, versionString(rq.h.maxMinor))
	return append(b, '}')
}

// root answers GET /: Ironic's service root with the version documents
// openstacksdk and ironicclient discover.
func (rq *request) root() {
	base := rq.base()
	b := append([]byte(nil), `{"name": `...)
	b = appendString(b, rootName)
	b = append(b, `, "description": `...)
	b = appendString(b, rootDescription)
	b = append(b, `, "default_version": `...)
	b = rq.appendVersion(b, base)
	b = append(b, `, "versions": [`...)
	b = rq.appendVersion(b, base)
	b = append(b, "]}"...)
	rq.reply(b)
}

// v1 answers GET /v1: Ironic's v1 document, listing only the resources the
// sidecar serves (nodes, and conductors from 1.49).
func (rq *request) v1() {
	base := rq.base()
	b := append([]byte(nil), `{"id": "v1", "links": [{"href": `...)
	b = appendString(b, base+"/v1/")
	b = append(b, `, "rel": "self"}, {"href": "https://docs.openstack.org//ironic/latest/contributor//webapi.html", "rel": "describedby", "type": "text/html"}], "media_types": {"base": "application/json", "type": "application/vnd.openstack.ironic.v1+json"}, "nodes": `...)
	b = appendLinks(b, base, "nodes", "")
	b = append(b, `, "version": `...)
	b = rq.appendVersion(b, base)
	if rq.minor >= minor49Conductors {
		b = append(b, `, "conductors": `...)
		b = appendLinks(b, base, "conductors", "")
	}
	b = append(b, '}')
	rq.reply(b)
}

// Shared validation of Ironic's list parameters.
