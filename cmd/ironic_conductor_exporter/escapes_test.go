package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/promslog"

	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/api"
	fx "github.com/ironic-conductor-exporter/ironic-conductor-exporter/internal/fixture"
	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/ring"
	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/rules"
	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/topology"
)

// serveEscaped serves h as serve does (newServer over an escapeListener)
// and returns its address.
func serveEscaped(t *testing.T, h http.Handler) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := newServer(h, webLimits{readTimeout: 30 * time.Second, writeTimeout: 30 * time.Second, idleTimeout: 30 * time.Second},
		promslog.NewNopLogger())
	go srv.Serve(escapeListener{l})
	t.Cleanup(func() { srv.Close() })
	return l.Addr().String()
}

// exchange writes raw on one connection, in pieces of at most chunk bytes,
// and reads n responses from it.
func exchange(t *testing.T, addr, raw string, chunk, n int) []*http.Response {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(20 * time.Second))
	go func() {
		for s := raw; s != ""; {
			k := min(chunk, len(s))
			if _, err := io.WriteString(c, s[:k]); err != nil {
				return
			}
			s = s[k:]
		}
	}()
	br := bufio.NewReader(c)
	var out []*http.Response
	for i := range n {
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("response %d: %v", i, err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body = io.NopCloser(strings.NewReader(string(b)))
		out = append(out, resp)
	}
	return out
}

func body(r *http.Response) string { b, _ := io.ReadAll(r.Body); return string(b) }

// TestInvalidEscapeGetsIronicError: a path with an invalid %-escape gets
// Ironic's JSON error, as real Ironic 21.4.4 answers it (eventlet keeps the
// escape literally), on every request of a keep-alive connection.
func TestInvalidEscapeGetsIronicError(t *testing.T) {
	cache, err := topology.NewCache(topology.CacheConfig{Source: fx.NewSource(fx.Golden()),
		Settings:    topology.Settings{Settings: rules.Settings{HeartbeatTimeout: time.Minute, PartitionExponent: 5, Algorithm: ring.MD5}},
		MinInterval: time.Hour, Now: func() time.Time { return fx.Now }})
	if err != nil {
		t.Fatal(err)
	}
	addr := serveEscaped(t, api.NewHandler(cache, api.Options{Logger: promslog.NewNopLogger()}))
	// Status and body of Ironic 21.4.4 (python3-ironic), measured with
	// conformance/ironic_fleet.py serve and a raw request line.
	nodeErr := func(ident string) string {
		return `{"error_message": "{\"code\": 400, \"title\": \"Bad Request\", \"description\": \"Expected UUID or name for node: ` + ident + `\"}"}`
	}
	cases := []struct {
		path   string
		status int
		body   string
	}{
		{"/v1/nodes/%zz", 400, nodeErr("%zz")},
		{"/v1/nodes/%zz/conductor", 400, nodeErr("%zz")},
		{"/v1/nodes/a%2", 400, nodeErr("a%2")},
		{"/v1/nodes/%25zz", 400, nodeErr("%zz")},
		{"/v1/nodes/%", 400, nodeErr("%")},
		{"/%zz", 404, `{"error_message": "{\"code\": 404, \"title\": \"Not Found\", \"description\": \"\"}"}`},
		{"/v1/%zz", 404, `{"error_message": "{\"code\": 404, \"title\": \"Not Found\", \"description\": \"\"}"}`},
	}
	var raw strings.Builder
	for _, tc := range cases {
		fmt.Fprintf(&raw, "GET %s HTTP/1.1\r\nHost: x\r\nX-OpenStack-Ironic-API-Version: 1.49\r\n\r\n", tc.path)
	}
	for _, chunk := range []int{1 << 20, 1, 7} {
		resps := exchange(t, addr, raw.String(), chunk, len(cases))
		for i, tc := range cases {
			r := resps[i]
			if got := body(r); r.StatusCode != tc.status || got != tc.body || r.Header.Get("Content-Type") != "application/json" {
				t.Errorf("chunk %d: GET %s: %d %s %s, want %d %s", chunk, tc.path, r.StatusCode, r.Header.Get("Content-Type"), got, tc.status, tc.body)
			}
		}
	}
}

// TestEscapeConnFraming: the rewrite touches only request-line paths,
// across bodies (Content-Length and chunked, with trailers) that contain
// text like a request line, queries, absolute targets and pipelining.
func TestEscapeConnFraming(t *testing.T) {
	addr := serveEscaped(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		fmt.Fprintf(w, "%s|%s|%s", r.URL.Path, r.URL.RawQuery, b)
	}))
	inner := "GET /in%zz HTTP/1.1\r\n\r\n"
	raw := "GET /a%zz?q=%zz HTTP/1.1\r\nHost: x\r\n\r\n" +
		fmt.Sprintf("POST /b%%4 HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n%s", len(inner), inner) +
		fmt.Sprintf("POST /c HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n%x;ext=1\r\n%s\r\n3\r\n%%zz\r\n0\r\nX-T: %%zz\r\n\r\n", len(inner), inner) +
		"\r\nGET /d%%41%zz%4 HTTP/1.1\r\nHost: x\r\n\r\n" +
		"GET http://x/e%zz HTTP/1.1\r\nHost: x\r\n\r\n" +
		"GET /f%41 HTTP/1.0\r\nHost: x\r\n\r\n"
	want := []string{"/a%zz|q=%zz|", "/b%4|" + "|" + inner, "/c||" + inner + "%zz", "/d%A%zz%4||", "/e%zz||", "/fA||"}
	for _, chunk := range []int{1 << 20, 1, 2, 3} {
		resps := exchange(t, addr, raw, chunk, len(want))
		for i, w := range want {
			if got := body(resps[i]); resps[i].StatusCode != 200 || got != w {
				t.Errorf("chunk %d: request %d: %d %q, want %q", chunk, i, resps[i].StatusCode, got, w)
			}
		}
	}
}

// TestEscapeConnKeepsHeaderLimit: a request line longer than the header
// limit is still refused with 431, with or without escapes to rewrite.
func TestEscapeConnKeepsHeaderLimit(t *testing.T) {
	addr := serveEscaped(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	for _, seg := range []string{"a", "%zz"} {
		raw := "GET /" + strings.Repeat(seg, (80<<10)/len(seg)) + " HTTP/1.1\r\nHost: x\r\n\r\n"
		if r := exchange(t, addr, raw, 1<<20, 1)[0]; r.StatusCode != http.StatusRequestHeaderFieldsTooLarge {
			t.Errorf("%q x %d: status %d, want 431", seg, (80<<10)/len(seg), r.StatusCode)
		}
	}
}

// scriptedConn is a net.Conn whose reads return, in turn, the given
// pieces and errors.
type scriptedConn struct {
	net.Conn
	reads []scriptedRead
}

type scriptedRead struct {
	data string
	err  error
}

func (c *scriptedConn) Read(p []byte) (int, error) {
	if len(c.reads) == 0 {
		return 0, io.EOF
	}
	r := c.reads[0]
	c.reads = c.reads[1:]
	return copy(p, r.data), r.err
}

// timeoutErr is the error of a read past its deadline.
var timeoutErr error = &net.OpError{Op: "read", Net: "tcp", Err: os.ErrDeadlineExceeded}

// TestEscapeConnSurvivesDeadlines: net/http aborts its background read of
// a keep-alive connection with a deadline in the past, then reads the next
// request. A deadline's error must not outlive the read it ended (it
// failed the next request: TestEscapeConnFraming lost a response in about
// one run of 200 under load), nor end an escape split across it.
func TestEscapeConnSurvivesDeadlines(t *testing.T) {
	c := &escapeConn{Conn: &scriptedConn{reads: []scriptedRead{
		{"GET /a%", nil}, {"", timeoutErr}, {"4", timeoutErr}, {"1%z", nil}, {"z HTTP/1.1\r\n", timeoutErr},
		{"Host: x\r\n\r\n", io.EOF},
	}}}
	var got strings.Builder
	buf := make([]byte, 64)
	timeouts := 0
	for {
		n, err := c.Read(buf)
		got.Write(buf[:n])
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			if !isTimeout(err) {
				t.Fatalf("read: %v", err)
			}
			if n != 0 {
				t.Errorf("a timeout returned with %d bytes", n)
			}
			timeouts++
		}
	}
	if want := "GET /a%41%25zz HTTP/1.1\r\nHost: x\r\n\r\n"; got.String() != want {
		t.Errorf("read %q, want %q", got.String(), want)
	}
	if timeouts != 2 { // "" and "4": the look-ahead holds the 4, nothing to return
		t.Errorf("%d timeouts returned, want 2 (the reads that gave nothing to return)", timeouts)
	}
}
