package main

import (
	"errors"
	"fmt"
	"log"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/exporter-toolkit/web"
	"go.yaml.in/yaml/v2"

	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/auth"
	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/internal/limit"
)

// webLimits are the flags bounding the HTTP servers, so that a silent
// database, a slow or idle client, or many of them, never hold the
// process' memory or file descriptors.
type webLimits struct {
	readTimeout, writeTimeout, idleTimeout time.Duration
	maxRequests, maxRenders, maxConns      int
	externalURL                            string
}

// checkTelemetryPath refuses a telemetry path that is not an absolute,
// clean path of its own (it would panic in http.ServeMux or shadow another
// endpoint).
func checkTelemetryPath(p string) error {
	switch {
	case p == "" || p[0] != '/':
		return fmt.Errorf("--web.telemetry-path=%q: must start with /", p)
	case p == "/" || p == "/healthz" || p == "/readyz" || strings.HasPrefix(p, "/v1"):
		return fmt.Errorf("--web.telemetry-path=%q: taken by another endpoint", p)
	case strings.ContainsAny(p, " \t\n{}?#%") || strings.HasSuffix(p, "/") || strings.Contains(p, "//") ||
		strings.Contains(p, "/./") || strings.Contains(p, "/../") || strings.HasSuffix(p, "/.."):
		return fmt.Errorf("--web.telemetry-path=%q: not a plain path like /metrics", p)
	}
	return nil
}

// checkExternalURL accepts an absolute http(s) URL without query or
// fragment.
func checkExternalURL(s string) (string, error) {
	if s == "" {
		return "", nil
	}
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
		return "", fmt.Errorf("--web.external-url=%q: want an absolute http:// or https:// URL without query", s)
	}
	return strings.TrimRight(s, "/"), nil
}

// checkFlags names the flag of a value that makes no sense.
func checkFlags(cfg config) error {
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"--db.query-timeout", cfg.queryTimeout}, {"--refresh.timeout", cfg.refreshTimeout},
		{"--refresh.min-interval", cfg.minInterval}, {"--web.shutdown-grace-period", cfg.shutdownGracePeriod},
		{"--web.read-timeout", cfg.web.readTimeout}, {"--web.write-timeout", cfg.web.writeTimeout},
		{"--web.idle-timeout", cfg.web.idleTimeout}} {
		if d.v < 0 {
			return fmt.Errorf("%s=%s: must not be negative", d.name, d.v)
		}
	}
	for _, n := range []struct {
		name string
		v    int
	}{{"--db.max-open-conns", cfg.maxOpenConns}, {"--web.max-requests", cfg.web.maxRequests},
		{"--web.max-renders", cfg.web.maxRenders}, {"--web.max-connections", cfg.web.maxConns}} {
		if n.v < 0 {
			return fmt.Errorf("%s=%d: must not be negative", n.name, n.v)
		}
	}
	return checkTelemetryPath(cfg.telemetryPath)
}

// newServer is the http.Server with its timeouts, its connections'
// states told to the listeners' caps (limit.Track).
func newServer(h http.Handler, l webLimits, logger *slog.Logger) *http.Server {
	srv := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: min(10*time.Second, l.readTimeout),
		ReadTimeout:       l.readTimeout,
		WriteTimeout:      l.writeTimeout,
		IdleTimeout:       l.idleTimeout,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          serverErrorLog(logger),
	}
	limit.Track(srv)
	return srv
}

// serverErrorLog is http.Server's ErrorLog: accept errors (e.g. "too many
// open files", when the process is at its descriptor limit and every
// door stops answering) at warning, at most one line per acceptWarnEvery
// with the count of those left out; the rest (TLS handshake errors of
// scanners, clients gone) at debug.
func serverErrorLog(logger *slog.Logger) *log.Logger {
	w := &acceptWarner{logger: logger}
	return log.New(w, "", 0)
}

// acceptWarnEvery is the least time between two accept error warnings.
const acceptWarnEvery = 10 * time.Second

type acceptWarner struct {
	logger *slog.Logger
	mu     sync.Mutex
	last   time.Time
	held   int
}

func (a *acceptWarner) Write(p []byte) (int, error) {
	msg := strings.TrimSpace(string(p))
	if !strings.HasPrefix(msg, "http: Accept error") {
		a.logger.Debug(msg)
		return len(p), nil
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if now := time.Now(); now.Sub(a.last) >= acceptWarnEvery {
		a.logger.Warn("accepting connections failed: every door may stop answering", "err", msg, "repeats_left_out", a.held)
		a.last, a.held = now, 0
	} else {
		a.held++
	}
	return len(p), nil
}

// listenAndServe is web.ListenAndServe with at most maxConns connections
// open per listener (0: no limit): a flood of connections waits in the
// kernel's backlog instead of taking a file descriptor and a goroutine
// each. systemd and vsock listeners are left to the toolkit as they are.
func listenAndServe(srv *http.Server, flags *web.FlagConfig, maxConns int, logger *slog.Logger) error {
	special := flags.WebSystemdSocket != nil && *flags.WebSystemdSocket
	for _, a := range *flags.WebListenAddresses {
		special = special || strings.HasPrefix(a, "vsock://")
	}
	if special {
		return web.ListenAndServe(srv, flags, logger)
	}
	ls, err := listen(*flags.WebListenAddresses, maxConns)
	if err != nil {
		return err
	}
	return web.ServeMultiple(ls, srv, flags, logger)
}

// listen opens a TCP listener per address, each holding at most maxConns
// connections at once (0: no limit), the one idle longest closed to make
// room for a new one (limit.Conns), and each letting GOMAXPROCS of its
// connections compute at once (limit.CPU: a flood of handshakes or
// requests through one door queues on its own tokens, not on the CPU the
// other doors need).
func listen(addrs []string, maxConns int) ([]net.Listener, error) {
	var ls []net.Listener
	for _, a := range addrs {
		l, err := net.Listen("tcp", a)
		if err != nil {
			for _, o := range ls {
				_ = o.Close()
			}
			return nil, err
		}
		if maxConns > 0 {
			l = limit.NewConns(l, maxConns)
		}
		l = limit.NewCPU(l, runtime.GOMAXPROCS(0))
		ls = append(ls, l)
	}
	return ls, nil
}

// checkDoors refuses a combination of doors that cannot work, and checks
// --api.config-file (a TLS minimum below 1.2 is warned about). On one door, the basic auth of --web.config.file
// wraps the API too: a Keystone token alone would get its 401.
func checkDoors(cfg config, flags *web.FlagConfig, mode string, logger *slog.Logger) error {
	warnWeakTLS("--web.config.file", *flags.WebConfigFile, logger)
	warnWeakTLS("--api.config-file", cfg.apiConfigFile, logger)
	if len(cfg.apiListen) == 0 {
		if cfg.apiConfigFile != "" {
			return errors.New("--api.config-file: needs --api.listen-address")
		}
		users, err := basicAuthUsers(*flags.WebConfigFile)
		if err != nil || users == 0 {
			return err
		}
		switch mode {
		case auth.ModeKeystone:
			return fmt.Errorf("--web.config.file %s has basic_auth_users, which would ask the Keystone clients of the JSON API for a password too "+
				"(auth strategy keystone): serve the API on a door of its own with --api.listen-address (e.g. :%s)", *flags.WebConfigFile, defaultAPIPort)
		case auth.ModeHTTPBasic:
			logger.Warn("--web.config.file's basic_auth_users and the http_basic user file both check every API request: "+
				"a client passes only with a user and password both accept; --api.listen-address serves the API apart", "web_config", *flags.WebConfigFile)
		}
		return nil
	}
	for _, a := range cfg.apiListen {
		if slices.Contains(*flags.WebListenAddresses, a) {
			return fmt.Errorf("--api.listen-address=%s is also a --web.listen-address", a)
		}
		if a == cfg.probeListenAddress {
			return fmt.Errorf("--api.listen-address=%s is also --web.probe-listen-address", a)
		}
	}
	if cfg.apiConfigFile == "" {
		return nil
	}
	if err := web.Validate(cfg.apiConfigFile); err != nil {
		return fmt.Errorf("--api.config-file: %w", err)
	}
	users, err := basicAuthUsers(cfg.apiConfigFile)
	if err != nil {
		return fmt.Errorf("--api.config-file: %w", err)
	}
	if users > 0 {
		return fmt.Errorf("--api.config-file %s: basic_auth_users must be empty: --auth.strategy (%s) locks the API's door", cfg.apiConfigFile, mode)
	}
	return nil
}

// webConfigFile is what the exporter checks itself in a web configuration
// file (the exporter-toolkit reads the rest).
type webConfigFile struct {
	Users map[string]string `yaml:"basic_auth_users"`
	TLS   struct {
		MinVersion string `yaml:"min_version"`
	} `yaml:"tls_server_config"`
}

// readWebConfig reads a web configuration file ("": an empty one).
func readWebConfig(file string) (webConfigFile, error) {
	var c webConfigFile
	if file == "" {
		return c, nil
	}
	b, err := os.ReadFile(file)
	if err != nil {
		return c, err
	}
	if err := yaml.Unmarshal(b, &c); err != nil {
		return c, fmt.Errorf("%s: %w", file, err)
	}
	return c, nil
}

// basicAuthUsers counts the basic_auth_users of a web configuration file
// ("" : none).
func basicAuthUsers(file string) (int, error) {
	c, err := readWebConfig(file)
	return len(c.Users), err
}

// warnWeakTLS warns when a web configuration file lets clients negotiate
// TLS 1.0 or 1.1 (RFC 8996 deprecates both). A warning, not a refusal: the
// toolkit's format takes these values and other exporters sharing the file
// run with them; the operator who needs them for an old client keeps them,
// knowingly. An unreadable file is left to the toolkit's own check.
func warnWeakTLS(flag, file string, logger *slog.Logger) {
	c, err := readWebConfig(file)
	if err != nil {
		return
	}
	switch strings.ToUpper(c.TLS.MinVersion) {
	case "TLS10", "TLS11":
		logger.Warn(flag+": tls_server_config.min_version is below TLS 1.2: clients may negotiate TLS 1.0 or 1.1, "+
			"deprecated by RFC 8996 (remove it for the toolkit's default, TLS12)", "file", file, "min_version", c.TLS.MinVersion)
	}
}

// quietOnDisconnect hides write errors from h after the first one: a
// client that went away mid-response costs one debug line, not one error
// per metric family.
func quietOnDisconnect(h http.Handler, logger *slog.Logger) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		qw := &quietWriter{ResponseWriter: w}
		h.ServeHTTP(qw, r)
		if qw.err != nil {
			logger.Debug("client went away before the response was written", "path", r.URL.Path,
				"remote", r.RemoteAddr, "err", qw.err)
		}
	})
}

type quietWriter struct {
	http.ResponseWriter
	err error
}

func (q *quietWriter) Write(p []byte) (int, error) {
	if q.err == nil {
		_, q.err = q.ResponseWriter.Write(p)
	}
	return len(p), nil
}

// Flush keeps http.Flusher working through the wrapper.
func (q *quietWriter) Flush() {
	if f, ok := q.ResponseWriter.(http.Flusher); ok && q.err == nil {
		f.Flush()
	}
}

// Unwrap lets http.ResponseController reach the connection.
func (q *quietWriter) Unwrap() http.ResponseWriter { return q.ResponseWriter }
