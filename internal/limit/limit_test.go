package limit

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestConcurrent: n requests run at once, the next waits for a slot and is
// served when one frees up in time, gets 503 when none does, and is
// dropped when its client goes away; n 0 is no limit.
func TestConcurrent(t *testing.T) {
	release := make(chan struct{})
	var running sync.WaitGroup
	blocking := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/block" {
			running.Done()
			<-release
		}
		_, _ = w.Write([]byte("ok"))
	})
	h := Concurrent(blocking, 2, 200*time.Millisecond, "requests")
	get := func(ctx context.Context, path string) *httptest.ResponseRecorder {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil).WithContext(ctx))
		return rec
	}
	if rec := get(context.Background(), "/"); rec.Code != http.StatusOK || rec.Body.String() != "ok" {
		t.Fatalf("free slot: %d %q", rec.Code, rec.Body)
	}
	// Fill both slots.
	running.Add(2)
	var done sync.WaitGroup
	for range 2 {
		done.Add(1)
		go func() { defer done.Done(); get(context.Background(), "/block") }()
	}
	running.Wait()
	rec := get(context.Background(), "/")
	if rec.Code != http.StatusServiceUnavailable || !strings.Contains(rec.Body.String(), "limit of 2 concurrent requests reached") {
		t.Errorf("no slot within the wait: %d %q", rec.Code, rec.Body)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if rec := get(ctx, "/"); rec.Code != http.StatusOK || rec.Body.Len() != 0 {
		t.Errorf("client gone while waiting: %d %q, want nothing written", rec.Code, rec.Body)
	}
	// A slot that frees up while a request waits serves it.
	waited := make(chan *httptest.ResponseRecorder)
	go func() { waited <- get(context.Background(), "/") }()
	time.Sleep(20 * time.Millisecond)
	close(release)
	if rec := <-waited; rec.Code != http.StatusOK || rec.Body.String() != "ok" {
		t.Errorf("slot freed while waiting: %d %q", rec.Code, rec.Body)
	}
	done.Wait()

	// n 0: three requests run at once.
	release = make(chan struct{})
	h = Concurrent(blocking, 0, time.Millisecond, "requests")
	running.Add(3)
	for range 3 {
		done.Add(1)
		go func() {
			defer done.Done()
			if rec := get(context.Background(), "/block"); rec.Code != http.StatusOK {
				t.Errorf("no limit: %d", rec.Code)
			}
		}()
	}
	running.Wait()
	close(release)
	done.Wait()
}

// TestRendersNotHeldByReaders: a client that never reads a response larger
// than the socket buffers holds its connection, not the render slot: the
// next request is rendered and answered at once.
func TestRendersNotHeldByReaders(t *testing.T) {
	body := []byte(strings.Repeat("x", 1<<16))
	var renders atomic.Int32
	h := Renders(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		renders.Add(1)
		if r.URL.Path == "/small" {
			_, _ = w.Write([]byte("ok"))
			return
		}
		for range 256 { // 16 MB
			if _, err := w.Write(body); err != nil {
				return
			}
		}
	}), 1, 200*time.Millisecond, "renders")
	srv := httptest.NewServer(h)
	defer srv.Close()
	c, err := net.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.(*net.TCPConn).SetReadBuffer(4096)
	_, _ = io.WriteString(c, "GET /big HTTP/1.1\r\nHost: x\r\n\r\n")
	for renders.Load() == 0 {
		time.Sleep(time.Millisecond)
	}
	time.Sleep(100 * time.Millisecond) // the big write is blocked now
	resp, err := http.Get(srv.URL + "/small")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Errorf("a render while a client does not read: %d, want 200", resp.StatusCode)
	}
}
