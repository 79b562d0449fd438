package api

import (
	"net/http"
	"strconv"
)

// apiError is an error answer in one of Ironic's two error body shapes.
//
// Errors raised inside Ironic's controllers (method.expose) become
//
//	{"error_message": "{\"faultcode\": \"Client\", \"faultstring\": \"...\", \"debuginfo\": null}"}
//
// ("Server" for 5xx). Errors from Ironic's routing (pecan.abort, webob
// exceptions raised while looking a controller up: unknown paths, wrong
// methods, invalid node idents, unsupported versions on sub-resources) are
// webob's JSON error document instead:
//
//	{"error_message": "{\"code\": 404, \"title\": \"Not Found\", \"description\": \"\"}"}
//
// Both are wrapped by Ironic's ParsableErrorMiddleware; ironicclient reads
// faultstring or description.
type apiError struct {
	status int
	msg    string
	// routing selects webob's shape.
	routing bool
	// version marks an error of the version negotiation; unparsable one
	// for a header Ironic could not parse, whose answer carries no version
	// headers. Other routing errors carry none either.
	version, unparsable bool
}

func clientError(status int, msg string) *apiError { return &apiError{status: status, msg: msg} }

// forbidden is Ironic's HTTPForbidden (a policy refusal).
func forbidden(rule string) *apiError {
	return clientError(http.StatusForbidden, "Access was denied to the following resource: "+rule)
}

func badRequest(msg string) *apiError { return clientError(http.StatusBadRequest, msg) }

func routingError(status int, msg string) *apiError {
	return &apiError{status: status, msg: msg, routing: true}
}

// Ironic's NotFound and NotAcceptable (ironic/common/exception.py), and a
// routing 404.
var (
	errNotFound      = clientError(http.StatusNotFound, "Resource could not be found.")
	errNotAcceptable = clientError(http.StatusNotAcceptable, "Request not acceptable.")
	errRouteNotFound = routingError(http.StatusNotFound, "")
)

// body renders the error document.
func (e *apiError) body() []byte {
	var inner []byte
	if e.routing {
		inner = append(inner, `{"code": `...)
		inner = strconv.AppendInt(inner, int64(e.status), 10)
		inner = append(inner, `, "title": `...)
		inner = appendString(inner, http.StatusText(e.status))
		inner = append(inner, `, "description": `...)
		inner = appendString(inner, e.msg)
		inner = append(inner, '}')
	} else {
		code := "Client"
		if e.status >= 500 {
			code = "Server"
		}
		inner = append(inner, `{"faultcode": `...)
		inner = appendString(inner, code)
		inner = append(inner, `, "faultstring": `...)
		inner = appendString(inner, e.msg)
		inner = append(inner, `, "debuginfo": null}`...)
	}
	b := make([]byte, 0, len(inner)+32)
	b = append(b, `{"error_message": `...)
	b = appendString(b, string(inner))
	return append(b, '}')
}

// readOnly is the answer to a write: the sidecar reads Ironic's database
// and changes nothing. A faultstring (not webob's routing shape) because
// ironicclient prints the faultstring: `baremetal node maintenance set`
// shows the sentence followed by "(HTTP 405)".
func readOnly(method string) *apiError {
	return clientError(http.StatusMethodNotAllowed, "ironic-conductor-exporter is a read-only sidecar: "+
		method+" is not served. Send writes to the real Ironic API.")
}

// unservedResource reports Ironic's v1 resources the sidecar does not
// serve, unservedNodeResource the node sub-resources (switches rather than
// maps: they are asked on every request).
func unservedResource(s string) bool {
	switch s {
	case "ports", "portgroups", "chassis", "drivers", "volume", "lookup", "heartbeat", "allocations",
		"deploy_templates", "events", "shards", "runbooks", "continue_inspection":
		return true
	}
	return false
}

func unservedNodeResource(s string) bool {
	switch s {
	case "states", "management", "maintenance", "validate", "vendor_passthru", "firmware", "children", "virtual_media":
		return true
	}
	return reservedIdent(s)
}

// unserved is the answer for an Ironic resource the sidecar does not
// serve: 501, so that a client does not read it as "no such object", with
// a faultstring ironicclient prints (`baremetal port list`).
func unserved(resource string) *apiError {
	return clientError(http.StatusNotImplemented, "ironic-conductor-exporter is a read-only sidecar that serves "+
		"only conductors and nodes: /v1/"+resource+" is not served. Use the real Ironic API.")
}
