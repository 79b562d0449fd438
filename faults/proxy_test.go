package faults

import (
	"io"
	"net"
	"sync"
	"testing"
	"time"
)

// mode is what the proxy does to the traffic.
type mode int

const (
	pass      mode = iota
	blackhole      // accept, never answer; established connections freeze
	drop           // close every connection, and each new one at once
	slow           // forward 512 bytes every 20ms
)

func (m mode) String() string { return [...]string{"pass", "blackhole", "drop", "slow"}[m] }

// proxy is a TCP proxy between the exporter and a database server that
// fails on demand.
type proxy struct {
	t      *testing.T
	addr   string
	target string
	ln     net.Listener

	mu    sync.Mutex
	mode  mode
	conns map[net.Conn]bool
	wake  *sync.Cond
}

func newProxy(t *testing.T, target string) *proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &proxy{t: t, addr: ln.Addr().String(), target: target, ln: ln, conns: map[net.Conn]bool{}}
	p.wake = sync.NewCond(&p.mu)
	go p.accept()
	t.Cleanup(func() { ln.Close(); p.set(drop) })
	return p
}

func (p *proxy) set(m mode) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.mode = m
	if m == drop {
		for c := range p.conns {
			c.Close()
		}
		clear(p.conns)
	}
	p.wake.Broadcast()
}

func (p *proxy) get() mode {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.mode
}

func (p *proxy) track(cs ...net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.mode == drop {
		for _, c := range cs {
			c.Close()
		}
		return false
	}
	for _, c := range cs {
		p.conns[c] = true
	}
	return true
}

func (p *proxy) accept() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		go p.serve(c)
	}
}

func (p *proxy) serve(c net.Conn) {
	if !p.track(c) {
		return
	}
	// A connection opened during a black hole stays unanswered, even once
	// the hole is gone: the client must give up on it.
	if p.get() == blackhole {
		_, _ = io.Copy(io.Discard, c)
		c.Close()
		return
	}
	s, err := net.DialTimeout("tcp", p.target, 5*time.Second)
	if err != nil {
		c.Close()
		return
	}
	if !p.track(s) {
		c.Close()
		return
	}
	go p.pipe(s, c)
	p.pipe(c, s)
}

// pipe copies src to dst as the mode allows.
func (p *proxy) pipe(dst, src net.Conn) {
	defer dst.Close()
	defer src.Close()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			p.mu.Lock()
			for p.mode == blackhole {
				p.wake.Wait() // bytes swallowed until the hole closes
			}
			m := p.mode
			p.mu.Unlock()
			if m == drop {
				return
			}
			data := buf[:n]
			for len(data) > 0 {
				k := len(data)
				if m == slow {
					k = min(k, 512)
					time.Sleep(20 * time.Millisecond)
				}
				if _, werr := dst.Write(data[:k]); werr != nil {
					return
				}
				data = data[k:]
			}
		}
		if err != nil {
			return
		}
	}
}
