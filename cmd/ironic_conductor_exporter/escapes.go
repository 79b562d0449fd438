package main

import (
	"bytes"
	"errors"
	"net"
	"strconv"
)

// Invalid %-escapes in request paths.
//
// net/http refuses a request line whose path has an invalid %-escape
// (/v1/nodes/%zz) with a plain-text "400 Bad Request" before any handler
// runs. Ironic (eventlet's WSGI server, webob, pecan) keeps such an escape
// literally, as urllib.parse.unquote does, and answers it as any other
// path: GET /v1/nodes/%zz gets 400 {"error_message": "{\"code\": 400, ...
// \"description\": \"Expected UUID or name for node: %zz\"}"}, exactly as
// /v1/nodes/%25zz does (measured on Ironic 21.4.4). escapeConn gives the
// handler the same request: it rewrites each invalid '%' of the path of a
// request line to "%25", so net/http parses it and api sees a literal '%'.
//
// It follows HTTP/1.x framing on the connection (request line, header
// section, a body of Content-Length bytes or chunked) to find every request
// line of a keep-alive connection, pipelined or not. It holds back at most
// two bytes (the look-ahead after a '%'), never buffers a line, and reads
// the socket only when net/http reads it, so MaxHeaderBytes and the read
// deadlines apply unchanged; a rewritten line is longer, so net/http's
// header limit can only refuse earlier. When the framing is not one it
// understands (two Content-Lengths that differ, a transfer coding other
// than chunked, a header line too long to inspect), the rest of the
// connection passes untouched: net/http refuses such a request and closes
// the connection. A TLS connection (first byte 0x16, a handshake record)
// passes untouched: the toolkit's TLS sits above this listener, so over
// TLS net/http's plain-text 400 remains.

// escapeListener wraps every accepted connection in an escapeConn.
type escapeListener struct{ net.Listener }

func (l escapeListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &escapeConn{Conn: c}, nil
}

// The states of escapeConn.
const (
	stStart       = iota // first byte of the connection
	stMethod             // request line, before the first space
	stTarget             // request target, in the path
	stQuery              // request target, after '?'
	stLineRest           // after the target, to the end of the line
	stHeaders            // header section
	stBody               // Content-Length body
	stChunkSize          // chunk-size line
	stChunkData          // chunk data
	stChunkCRLF          // CRLF after chunk data
	stTrailers           // trailer section
	stPassthrough        // untouched to the end
)

// maxInspect is the longest header line escapeConn keeps to read
// Content-Length and Transfer-Encoding; longer ones are only skipped.
const maxInspect = 256

// escapeConn is a server connection that rewrites invalid escapes in the
// paths of its HTTP/1.x request lines. Reads are not safe for concurrent
// use (net/http never reads a connection from two goroutines at once).
type escapeConn struct {
	net.Conn

	state int
	// slashes counts the '/' of an absolute-form target ("http://h/p"): its
	// path starts at the third.
	slashes  int
	absolute bool
	// hold is the look-ahead after a '%' (at most "%X").
	hold []byte
	// line is the current header or chunk line, up to maxInspect bytes;
	// long says it was longer.
	line []byte
	long bool
	// Framing of the current request's body.
	http10           bool
	contentLength    int64
	lengths          int
	chunked, badBody bool
	badTE            bool
	remaining        int64 // of the body or the chunk

	out     []byte // transformed bytes not yet returned
	scratch []byte
	err     error // the error of a read, returned once out is empty
}

// CloseWrite lets net/http half-close the connection after an error
// response, as it does on a *net.TCPConn.
func (c *escapeConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

func (c *escapeConn) Read(p []byte) (int, error) {
	for len(c.out) == 0 {
		if c.err != nil {
			err := c.err
			c.err = nil
			return 0, err
		}
		if c.state == stPassthrough && len(c.hold) == 0 {
			return c.Conn.Read(p)
		}
		if c.scratch == nil {
			c.scratch = make([]byte, 4096)
		}
		n, err := c.Conn.Read(c.scratch)
		c.out = c.feed(c.out[:0], c.scratch[:n])
		if err != nil && isTimeout(err) {
			// A deadline ends nothing: net/http aborts its background
			// read of an idle keep-alive connection by setting one in the
			// past, then moves it and reads on. So the look-ahead stays,
			// and the error is not kept for the next Read, which would
			// otherwise fail the next request: it is returned only when
			// there is nothing to return instead.
			if len(c.out) == 0 {
				return 0, err
			}
			break
		}
		if err != nil {
			// The look-ahead will never complete: an invalid escape.
			if len(c.hold) > 0 {
				c.out = append(c.out, "%25"...)
				c.out = append(c.out, c.hold[1:]...)
				c.hold = c.hold[:0]
			}
			c.err = err
		}
	}
	n := copy(p, c.out)
	c.out = c.out[n:]
	return n, nil
}

// feed appends the transformed in to out.
func (c *escapeConn) feed(out, in []byte) []byte {
	for i := 0; i < len(in); i++ {
		b := in[i]
		if len(c.hold) > 0 {
			c.hold = append(c.hold, b)
			if !isHex(b) {
				// "%" or "%X" followed by a non-hex byte: invalid. Emit
				// "%25", then read again what followed the '%'.
				out = append(out, "%25"...)
				rest := append([]byte(nil), c.hold[1:]...)
				c.hold = c.hold[:0]
				out = c.feed(out, rest)
				continue
			}
			if len(c.hold) == 3 {
				out = append(out, c.hold...)
				c.hold = c.hold[:0]
			}
			continue
		}
		switch c.state {
		case stStart:
			switch b {
			case 0x16:
				c.state = stPassthrough
				return append(out, in[i:]...)
			case '\r', '\n':
				// net/http skips these after a POST body (old clients).
			default:
				c.state, c.http10 = stMethod, false
				i--
				continue
			}
		case stMethod:
			switch b {
			case ' ':
				c.state, c.slashes, c.absolute = stTarget, 0, false
			case '\n':
				c.startHeaders()
			}
		case stTarget:
			switch {
			case b == ' ':
				c.state, c.line = stLineRest, c.line[:0]
			case b == '\n':
				c.startHeaders()
			case b == '?':
				c.state = stQuery
			case b == '/':
				c.slashes++
			case b == '%' && (!c.absolute || c.slashes >= 3):
				c.hold = append(c.hold[:0], b)
				continue
			default:
				if c.slashes == 0 {
					c.absolute = true // not origin-form: "http://host/path"
				}
			}
		case stQuery:
			switch b {
			case ' ':
				c.state, c.line = stLineRest, c.line[:0]
			case '\n':
				c.startHeaders()
			}
		case stLineRest:
			if b != '\n' {
				if len(c.line) < maxInspect {
					c.line = append(c.line, b)
				}
				break
			}
			// net/http ignores Transfer-Encoding on HTTP/1.0 requests.
			c.http10 = string(bytes.TrimSuffix(c.line, []byte("\r"))) == "HTTP/1.0"
			c.startHeaders()
		case stHeaders, stTrailers, stChunkSize:
			if b != '\n' {
				if len(c.line) < maxInspect {
					c.line = append(c.line, b)
				} else {
					c.long = true
				}
				break
			}
			out = append(out, b)
			c.endLine()
			continue
		case stBody, stChunkData:
			k := int64(len(in) - i)
			if k > c.remaining {
				k = c.remaining
			}
			out = append(out, in[i:i+int(k)]...)
			i += int(k) - 1
			c.remaining -= k
			if c.remaining == 0 {
				if c.state == stBody {
					c.state = stStart
				} else {
					c.state, c.remaining = stChunkCRLF, 2
				}
			}
			continue
		case stChunkCRLF:
			want := byte('\n')
			if c.remaining == 2 {
				want = '\r'
			}
			if b != want {
				c.state = stPassthrough
				return append(out, in[i:]...)
			}
			if c.remaining--; c.remaining == 0 {
				c.state = stChunkSize
			}
		case stPassthrough:
			return append(out, in[i:]...)
		}
		out = append(out, b)
	}
	return out
}

// startHeaders begins the header section of a request.
func (c *escapeConn) startHeaders() {
	c.state = stHeaders
	c.line, c.long = c.line[:0], false
	c.contentLength, c.lengths, c.chunked, c.badBody, c.badTE = 0, 0, false, false, false
}

// endLine ends a line of the header, chunk-size or trailer state.
func (c *escapeConn) endLine() {
	line := bytes.TrimSuffix(c.line, []byte("\r"))
	long := c.long
	c.line, c.long = c.line[:0], false
	switch c.state {
	case stHeaders:
		if len(line) == 0 && !long {
			switch {
			case c.badBody || c.badTE && !c.http10:
				c.state = stPassthrough
			case c.chunked && !c.http10:
				c.state = stChunkSize
			case c.contentLength > 0:
				c.state, c.remaining = stBody, c.contentLength
			default:
				c.state = stStart
			}
			return
		}
		c.header(line, long)
	case stChunkSize:
		size := line
		if i := bytes.IndexByte(size, ';'); i >= 0 {
			size = size[:i]
		}
		n, err := strconv.ParseUint(string(bytes.TrimRight(size, " \t")), 16, 63)
		switch {
		case long || err != nil:
			c.state = stPassthrough
		case n == 0:
			c.state = stTrailers
		default:
			c.state, c.remaining = stChunkData, int64(n)
		}
	case stTrailers:
		if len(line) == 0 && !long {
			c.state = stStart
		}
	}
}

// header notes the framing headers of a header line.
func (c *escapeConn) header(line []byte, long bool) {
	if len(line) > 0 && (line[0] == ' ' || line[0] == '\t') {
		return // obs-fold: net/http refuses it in framing headers anyway
	}
	name, value, ok := bytes.Cut(line, []byte(":"))
	if !ok {
		return
	}
	value = bytes.Trim(value, " \t")
	switch {
	case bytes.EqualFold(name, []byte("Content-Length")):
		n, err := strconv.ParseUint(string(value), 10, 63)
		if long || err != nil || (c.lengths > 0 && int64(n) != c.contentLength) {
			c.badBody = true
		}
		c.contentLength = int64(n)
		c.lengths++
	case bytes.EqualFold(name, []byte("Transfer-Encoding")):
		if long || c.chunked || !bytes.EqualFold(value, []byte("chunked")) {
			c.badTE = true
		}
		c.chunked = true
	}
}

func isHex(b byte) bool {
	return '0' <= b && b <= '9' || 'a' <= b && b <= 'f' || 'A' <= b && b <= 'F'
}

// isTimeout reports whether err is a deadline's: temporary, the
// connection goes on once the deadline moves.
func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}
