package api

import (
	"math/big"
	"net/http"
	"strconv"
	"strings"
)

// Microversions (ironic/api/controllers/v1/versions.py) that change what the
// sidecar serves.
const (
	minMinor = 1 // v1.1, Ironic's minimum

	minor2AvailableState   = 2
	minor5NodeName         = 5
	minor8FieldsSubset     = 8
	minor9ProvisionFilter  = 9
	minor10UnrestrictedNam = 10
	minor16DriverFilter    = 16
	minor21ResourceClass   = 21
	minor39InspectWait     = 39
	minor42Fault           = 42
	minor43DetailQuery     = 43
	minor46ConductorGroup  = 46
	minor49Conductors      = 49
	minor50Owner           = 50
	minor65Lessee          = 65
	minor82Shard           = 82

	// DefaultMaxMicroversion is the newest microversion served by default:
	// 1.49 added /v1/conductors and the node's conductor field, and nothing
	// the sidecar serves changed after it.
	DefaultMaxMicroversion = minor49Conductors
	// highestMicroversion is the newest microversion of Ironic 21.4; no
	// later one can be claimed without knowing what it changes.
	highestMicroversion = minor82Shard
)

// Header names, in net/http's canonical form (Ironic spells them
// X-OpenStack-Ironic-API-*; header names are case-insensitive).
const (
	hdrVersion    = "X-Openstack-Ironic-Api-Version"
	hdrMinVersion = "X-Openstack-Ironic-Api-Minimum-Version"
	hdrMaxVersion = "X-Openstack-Ironic-Api-Maximum-Version"
	hdrRequestID  = "Openstack-Request-Id"
	// hdrOpenStackVersion is the generic microversion header
	// ("OpenStack-API-Version: baremetal 1.49"). Ironic 21.4 ignores it;
	// the sidecar honours it when the Ironic header is absent.
	hdrOpenStackVersion = "Openstack-Api-Version"
)

// versionString is "1.minor".
func versionString(minor int) string { return "1." + strconv.Itoa(minor) }

// negotiate returns the minor version a request asks for, as Ironic's
// base.Version.parse_headers and Controller._check_version decide it:
// "latest" (any case) is the maximum, anything but "<int>.<int>" is
// invalid, and a major other than 1 or a minor outside [1, max] is not
// acceptable (406). Unlike Ironic, whose default is the minimum (1.1), a
// request without a version header is answered as the maximum.
//
// routing selects the error shape: Ironic raises these errors inside the
// /v1 index (fault shape) but while routing for every resource under it
// (webob shape).
func (h *handler) negotiate(r *http.Request, routing bool) (int, *apiError) {
	var s string
	if vals := r.Header[hdrVersion]; len(vals) > 0 {
		s = vals[0]
		if len(vals) > 1 {
			s = strings.Join(vals, ", ") // what a WSGI server hands Ironic
		}
	} else if v, ok := openStackVersion(r.Header[hdrOpenStackVersion]); ok {
		s = v
	} else {
		return h.maxMinor, nil
	}
	if len(s) == 6 && strings.EqualFold(s, "latest") {
		return h.maxMinor, nil
	}
	mk := func(msg string) *apiError {
		e := clientError(http.StatusNotAcceptable, msg)
		e.routing, e.version = routing, true
		return e
	}
	majorStr, minorStr, ok := strings.Cut(s, ".")
	major, ok1 := parsePyInt(majorStr)
	minor, ok2 := parsePyInt(minorStr)
	if !ok || strings.Contains(minorStr, ".") || !ok1 || !ok2 {
		e := mk("Invalid value for X-OpenStack-Ironic-API-Version header")
		e.unparsable = true
		return 0, e
	}
	ver := major.String() + "." + minor.String()
	rng := "[" + versionString(minMinor) + ", " + versionString(h.maxMinor) + "]."
	if !major.IsInt64() || major.Int64() != 1 {
		return 0, mk("Mutually exclusive versions requested. Version " + ver +
			" requested but not supported by this service. The supported version range is: " + rng)
	}
	if !minor.IsInt64() || minor.Int64() < minMinor || minor.Int64() > int64(h.maxMinor) {
		return 0, mk("Version " + ver +
			" was requested but the minor version is not supported by this service. The supported version range is: " + rng)
	}
	return int(minor.Int64()), nil
}

// openStackVersion extracts the baremetal version from OpenStack-API-Version
// values ("baremetal 1.49", possibly in a comma-separated list).
func openStackVersion(vals []string) (string, bool) {
	for _, v := range vals {
		for item := range strings.SplitSeq(v, ",") {
			service, ver, ok := strings.Cut(strings.TrimSpace(item), " ")
			if ok && strings.EqualFold(service, "baremetal") {
				return strings.TrimSpace(ver), true
			}
		}
	}
	return "", false
}

// parsePyInt accepts what Python's int() accepts for ASCII input:
// surrounding whitespace, an optional sign, and decimal digits with single
// underscores between them. Python ints are unbounded, and so is the result.
func parsePyInt(s string) (*big.Int, bool) {
	s = strings.TrimSpace(s)
	digits := strings.TrimLeft(s, "+-")
	if digits == "" || digits[0] == '_' || strings.HasSuffix(digits, "_") || strings.Contains(digits, "__") {
		return nil, false
	}
	return new(big.Int).SetString(strings.ReplaceAll(s, "_", ""), 10)
}
