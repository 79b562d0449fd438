// Package methods is the one method guard of every endpoint: the sidecar is
// read-only, so each serves GET and HEAD, and answers 405 with "Allow: GET,
// HEAD" to anything else.
package methods

import "net/http"

// Allowed reports whether r's method is GET or HEAD; when it is not, it
// sets the Allow header on w, and the caller writes the 405 in its own body
// format (the JSON API writes Ironic's error body).
func Allowed(w http.ResponseWriter, r *http.Request) bool {
	if r.Method == http.MethodGet || r.Method == http.MethodHead {
		return true
	}
	w.Header().Set("Allow", "GET, HEAD")
	return false
}

// GetHead serves h for GET and HEAD, and a plain-text 405 otherwise.
func GetHead(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !Allowed(w, r) {
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		h.ServeHTTP(w, r)
	})
}
