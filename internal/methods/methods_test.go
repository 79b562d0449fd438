package methods

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

// TestGetHead: GET and HEAD reach the handler; every other method gets 405
// with Allow and never reaches it.
func TestGetHead(t *testing.T) {
	reached := false
	h := GetHead(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { reached = true }))
	for _, m := range []string{http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodDelete,
		http.MethodPatch, http.MethodOptions, "PROPFIND"} {
		reached = false
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest(m, "/", nil))
		ok := m == http.MethodGet || m == http.MethodHead
		if reached != ok {
			t.Errorf("%s reached the handler: %v", m, reached)
		}
		if !ok && (w.Code != http.StatusMethodNotAllowed || w.Header().Get("Allow") != "GET, HEAD") {
			t.Errorf("%s: %d, Allow %q; want 405 and GET, HEAD", m, w.Code, w.Header().Get("Allow"))
		}
	}
}
