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

// Messages of Ironic's exception classes (ironic/common/exception.py).
const (
	msgNotFound      = "Resource could not be found."
	msgNotAcceptable = "Request not acceptable."
)

var (
	errNotFound         = clientError(http.StatusNotFound, msgNotFound)
	errNotAcceptable    = clientError(http.StatusNotAcceptable, msgNotAcceptable)
	errRouteNotFound    = routingError(http.StatusNotFound, "")
	errMethodNotAllowed = routingError(http.StatusMethodNotAllowed, "")
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
