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
func Concurrent(h http.Handler, n int, wait time.Duration, what string) http.Handler {
	if n <= 0 {
		return h
	}
	l := newLimiter(n, wait, what)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if l.acquire(w, r) {
			defer l.release()
			h.ServeHTTP(w, r)
		}
	})
}

type limiter struct {
	sem  chan struct{}
	wait time.Duration
	msg  string
}

func newLimiter(n int, wait time.Duration, what string) *limiter {
	return &limiter{sem: make(chan struct{}, n), wait: wait,
		msg: "limit of " + strconv.Itoa(n) + " concurrent " + what + " reached"}
}

func (l *limiter) release() { <-l.sem }

// acquire takes a slot, waiting up to l.wait for one (a free slot is taken
// even when wait is 0); false when it answered 503 or the client went away.
func (l *limiter) acquire(w http.ResponseWriter, r *http.Request) bool {
	select {
	case l.sem <- struct{}{}:
		return true
	default:
	}
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

// Renders is Concurrent for a handler whose output may be larger than the
// socket buffers: a request holds its slot while the handler works, not
// while a write waits for the client to read. Each Write and Flush gives
// the slot back and takes it again after, so clients that never read hold
// connections (until the write timeout), never the slots, and the others'
// renders go on.
func Renders(h http.Handler, n int, wait time.Duration, what string) http.Handler {
	if n <= 0 {
		return h
	}
	l := newLimiter(n, wait, what)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !l.acquire(w, r) {
			return
		}
		yw := &yieldWriter{ResponseWriter: w, l: l, done: r.Context().Done(), held: true}
		defer func() {
			if yw.held {
				l.release()
			}
		}()
		h.ServeHTTP(yw, r)
	})
}

// yieldWriter gives its limiter's slot back during each write.
type yieldWriter struct {
	http.ResponseWriter
	l    *limiter
	done <-chan struct{}
	held bool
}

// around runs f without the slot, then takes it again unless the client
// went away.
func (y *yieldWriter) around(f func()) {
	if y.held {
		y.l.release()
		y.held = false
	}
	f()
	select {
	case y.l.sem <- struct{}{}:
		y.held = true
	case <-y.done:
	}
}

func (y *yieldWriter) Write(p []byte) (n int, err error) {
	y.around(func() { n, err = y.ResponseWriter.Write(p) })
	return n, err
}

// Flush keeps http.Flusher working through the wrapper.
func (y *yieldWriter) Flush() {
	if f, ok := y.ResponseWriter.(http.Flusher); ok {
		y.around(f.Flush)
	}
}

// Unwrap lets http.ResponseController reach the connection.
func (y *yieldWriter) Unwrap() http.ResponseWriter { return y.ResponseWriter }
