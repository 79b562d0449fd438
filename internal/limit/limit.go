// Package limit bounds how many requests a handler serves at once
// (node_exporter's --web.max-requests). It lives apart from the command so
// that the api benchmarks mount their handlers behind the very limiter the
// binary uses.
package limit

import (
	"net/http"
	"strconv"
	"time"
)

// Concurrent lets at most n requests run h at once; the others wait up to
// wait for a slot, then get 503 ("limit of N concurrent WHAT reached"). A
// request whose client goes away while it waits is dropped. n <= 0 is no
// limit (h itself).
//
// A free slot is taken at once, without a timer: only a request that has
// to wait arms one.
func Concurrent(h http.Handler, n int, wait time.Duration, what string) http.Handler {
	if n <= 0 {
		return h
	}
	l := &limiter{h: h, sem: make(chan struct{}, n), wait: wait,
		msg: "limit of " + strconv.Itoa(n) + " concurrent " + what + " reached"}
	return l
}

type limiter struct {
	h    http.Handler
	sem  chan struct{}
	wait time.Duration
	msg  string
}

func (l *limiter) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	select {
	case l.sem <- struct{}{}:
	default:
		if !l.await(w, r) {
			return
		}
	}
	defer l.release()
	l.h.ServeHTTP(w, r)
}

func (l *limiter) release() { <-l.sem }

// await waits for a slot up to l.wait; false when it answered 503 or the
// client went away.
func (l *limiter) await(w http.ResponseWriter, r *http.Request) bool {
	t := time.NewTimer(l.wait)
	defer t.Stop()
	select {
	case l.sem <- struct{}{}:
		return true
	case <-t.C:
		http.Error(w, l.msg, http.StatusServiceUnavailable)
	case <-r.Context().Done():
	}
	return false
}
