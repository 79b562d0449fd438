package limit

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"runtime"
	"slices"
	"testing"
	"time"

	"golang.org/x/net/netutil"
)

// flooded serves ln (capped by wrap) with a server whose headers time out
// after 3 s, floods it with idle connections and slowloris connections
// (a header byte every 100 ms), and returns the times 20 fresh requests
// took meanwhile (the client gives up after 5 s), and how many failed.
func flooded(t *testing.T, requests int, wrap func(net.Listener) net.Listener) (took []time.Duration, failed int) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{ReadHeaderTimeout: 3 * time.Second, IdleTimeout: 3 * time.Second,
		Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok") })}
	Track(srv)
	go func() { _ = srv.Serve(wrap(ln)) }()
	defer srv.Close()
	addr := ln.Addr().String()
	var flood []net.Conn
	defer func() {
		for _, c := range flood {
			c.Close()
		}
	}()
	stop := make(chan struct{})
	defer close(stop)
	for i := range 60 {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		flood = append(flood, c)
		if i%3 == 0 { // a slowloris
			go func() {
				_, _ = io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\n")
				for {
					select {
					case <-stop:
						return
					case <-time.After(100 * time.Millisecond):
					}
					if _, err := io.WriteString(c, "X"); err != nil {
						return
					}
				}
			}()
		}
	}
	time.Sleep(200 * time.Millisecond) // the flood is accepted first
	cl := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	for range requests {
		start := time.Now()
		resp, err := cl.Get("http://" + addr + "/")
		if err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
		if err != nil || resp.StatusCode != 200 {
			failed++
		}
		took = append(took, time.Since(start))
	}
	slices.Sort(took)
	return took, failed
}

// TestConnsFlood: 60 connections that send nothing or dribble their
// headers (slowloris) on a listener capped at 8 leave fresh requests
// answering at once: the idle ones are closed to make room, and no more
// than 9 are ever open. netutil.LimitListener, measured in the same test,
// makes each fresh request wait for the flood's header timeout.
func TestConnsFlood(t *testing.T) {
	const n = 8
	before, failedBefore := flooded(t, 3, func(l net.Listener) net.Listener { return netutil.LimitListener(l, n) })
	var c *Conns
	after, failed := flooded(t, 20, func(l net.Listener) net.Listener { c = NewConns(l, n); return c })
	fmt.Printf("FIGURES idle+slowloris flood (60 conns, cap %d): fresh request p50/max %s/%s (%d of %d failed) with LimitListener, "+
		"%s/%s (%d of %d failed) evicting idle (%d evicted)\n",
		n, before[len(before)/2].Round(time.Millisecond), before[len(before)-1].Round(time.Millisecond), failedBefore, len(before),
		after[len(after)/2].Round(time.Millisecond), after[len(after)-1].Round(time.Millisecond), failed, len(after), c.Evicted())
	if failed > 0 {
		t.Errorf("%d of %d fresh requests failed during the flood", failed, len(after))
	}
	if worst := after[len(after)-1]; worst >= time.Second {
		t.Errorf("a fresh request took %s during the flood, want under 1 s", worst)
	}
	if c.Evicted() < 60-n {
		t.Errorf("%d connections evicted, want at least %d", c.Evicted(), 60-n)
	}
	c.mu.Lock()
	open := len(c.open)
	c.mu.Unlock()
	if open > n {
		t.Errorf("%d connections open, cap %d", open, n)
	}
}

// TestConnsBusyNotEvicted: a connection serving a request is never closed
// to make room; a new one waits until a request ends.
func TestConnsBusyNotEvicted(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	release := make(chan struct{})
	srv := &http.Server{ReadHeaderTimeout: 5 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/hold" {
			<-release
		}
		_, _ = io.WriteString(w, "ok")
	})}
	Track(srv)
	go func() { _ = srv.Serve(NewConns(ln, 1)) }()
	defer srv.Close()
	cl := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	held := make(chan error, 1)
	go func() {
		resp, err := cl.Get("http://" + ln.Addr().String() + "/hold")
		if err == nil {
			resp.Body.Close()
		}
		held <- err
	}()
	time.Sleep(300 * time.Millisecond) // the held request is being served
	second := make(chan error, 1)
	go func() {
		resp, err := cl.Get("http://" + ln.Addr().String() + "/")
		if err == nil {
			resp.Body.Close()
		}
		second <- err
	}()
	select {
	case err := <-second:
		t.Fatalf("a second connection was served while the only slot was busy (err %v)", err)
	case <-time.After(500 * time.Millisecond):
	}
	close(release)
	if err := <-held; err != nil {
		t.Errorf("the busy request was cut: %v", err)
	}
	if err := <-second; err != nil {
		t.Errorf("the waiting request: %v", err)
	}
}

// TestPending: a socket holding bytes not read yet is pending; once they
// are read, it is not (Linux; elsewhere never).
func TestPending(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	s, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if pending(s) {
		t.Error("pending before any byte was sent")
	}
	if _, err := io.WriteString(c, "GET / HTTP/1.1\r\n"); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(2 * time.Second)
	for !pending(s) && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if !pending(s) && runtime.GOOS == "linux" {
		t.Error("not pending with 16 bytes unread")
	}
	buf := make([]byte, 64)
	if _, err := s.Read(buf); err != nil {
		t.Fatal(err)
	}
	if pending(s) {
		t.Error("pending after the bytes were read")
	}
}
