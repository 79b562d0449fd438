package testenv

import (
	"bytes"
	"net"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// FreeAddr returns a loopback address ("127.0.0.1:port") nobody listens on
// right now.
func FreeAddr(t testing.TB) string {
	t.Helper()
	return FreeAddrs(t, 1)[0]
}

// FreeAddrs returns n distinct loopback addresses nobody listens on right
// now (all are held open until all are chosen, so none repeats).
func FreeAddrs(t testing.TB, n int) []string {
	t.Helper()
	var addrs []string
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = l.Close() }()
		addrs = append(addrs, l.Addr().String())
	}
	return addrs
}

// logBuffer collects a process' output; it is safe for concurrent use.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// Process is a child process run by a test and ended in the test's cleanup.
type Process struct {
	name string
	cmd  *exec.Cmd
	logs logBuffer
	done chan struct{}
	err  error
}

// Start runs bin with args and the environment plus env ("KEY=value"),
// collecting its standard output and error together. The test's cleanup
// stops it (SIGTERM, then SIGKILL after 5s) and, if the test failed, logs
// the last lines of its output under name.
func Start(t testing.TB, name, bin string, env []string, args ...string) *Process {
	t.Helper()
	p := &Process{name: name, cmd: exec.Command(bin, args...), done: make(chan struct{})}
	p.cmd.Stdout, p.cmd.Stderr = &p.logs, &p.logs
	p.cmd.Env = append(os.Environ(), env...)
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("starting %s: %v", name, err)
	}
	go func() { p.err = p.cmd.Wait(); close(p.done) }()
	t.Cleanup(func() {
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.done:
		case <-time.After(5 * time.Second):
			_ = p.cmd.Process.Kill()
			<-p.done
		}
		if t.Failed() {
			t.Logf("%s output (last lines):\n%s", name, p.Tail(40))
		}
	})
	return p
}

// Name returns the name given to Start.
func (p *Process) Name() string { return p.name }

// Logs returns all the output so far.
func (p *Process) Logs() string { return p.logs.String() }

// Tail returns the last n lines of the output so far.
func (p *Process) Tail(n int) string {
	lines := strings.Split(strings.TrimRight(p.logs.String(), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// Done is closed when the process has exited and its output is collected.
func (p *Process) Done() <-chan struct{} { return p.done }

// Err returns how the process exited (nil for status 0); it is only
// meaningful once Done is closed.
func (p *Process) Err() error {
	select {
	case <-p.done:
		return p.err
	default:
		return nil
	}
}

// Signal sends sig to the process.
func (p *Process) Signal(sig os.Signal) error { return p.cmd.Process.Signal(sig) }

// PID returns the process id, to read /proc/PID.
func (p *Process) PID() int { return p.cmd.Process.Pid }
