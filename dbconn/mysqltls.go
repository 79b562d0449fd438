package dbconn

import (
	"bufio"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
)

// tlsConfig is the TLS of the connection as the URL's options ask for it.
func (s *mysqlSettings) tlsConfig(addr, network string) (*tls.Config, error) {
	mode := s.sslMode
	switch mode {
	case "", "DISABLED", "REQUIRED", "VERIFY_CA", "VERIFY_IDENTITY":
	case "PREFERRED":
		return nil, errors.New(`database option "ssl_mode=PREFERRED" is not supported: use REQUIRED, VERIFY_CA or VERIFY_IDENTITY (or DISABLED)`)
	default:
		return nil, fmt.Errorf("database option ssl_mode: unknown mode %q (DISABLED, PREFERRED, REQUIRED, VERIFY_CA, VERIFY_IDENTITY)", s.sslMode)
	}
	if isTrue(s.ssl["disabled"]) || mode == "DISABLED" {
		return nil, nil
	}
	hasCA := s.ssl["ca"] != "" || s.ssl["capath"] != ""
	want := mode != "" || hasCA || s.ssl["cert"] != "" || s.ssl["key"] != "" ||
		s.ssl["check_hostname"] != "" || isTrue(s.ssl["verify_cert"]) || isTrue(s.ssl["verify_identity"])
	if !want {
		return nil, nil
	}
	verifyChain := hasCA
	if s.ssl["verify_cert"] != "" {
		verifyChain = isTrue(s.ssl["verify_cert"])
	}
	verifyName := verifyChain && (s.ssl["check_hostname"] == "" || isTrue(s.ssl["check_hostname"]))
	if isTrue(s.ssl["verify_identity"]) {
		verifyChain, verifyName = true, true
	}
	switch mode {
	case "REQUIRED":
		verifyChain, verifyName = hasCA, hasCA && verifyName
	case "VERIFY_CA":
		verifyChain, verifyName = true, false
	case "VERIFY_IDENTITY":
		verifyChain, verifyName = true, true
	}

	cfg := newTLSConfig(addr, network)
	if hasCA {
		if err := s.addCAs(cfg, x509.NewCertPool()); err != nil {
			return nil, err
		}
	}
	if err := s.loadClientCert(cfg); err != nil {
		return nil, err
	}
	switch {
	case !verifyChain:
		cfg.InsecureSkipVerify = true
	case !verifyName || cfg.ServerName == "":
		// Check the chain, not the name (pymysql's check_hostname=False).
		verifyChainOnly(cfg)
	}
	return cfg, nil
}

// newTLSConfig is a TLS 1.2+ configuration that names the server by the
// host of a TCP address.
func newTLSConfig(addr, network string) *tls.Config {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if host, _, err := net.SplitHostPort(addr); err == nil && network == "tcp" {
		cfg.ServerName = host
	}
	return cfg
}

// sqlaBool is SQLAlchemy's util.asbool, which create_connect_args applies
// to ssl_check_hostname.
func sqlaBool(v string) (bool, error) {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "true", "yes", "on", "y", "t", "1":
		return true, nil
	case "false", "no", "off", "n", "f", "0":
		return false, nil
	}
	return false, fmt.Errorf("%q is not true or false", v)
}

// pymysqlTLSConfig gives the URL's TLS options the meaning that SQLAlchemy
// (dialects/mysql/mysqldb.py create_connect_args, the same in 1.4 and 2.0)
// and PyMySQL (connections.py Connection.__init__ and _create_ssl_ctx,
// 1.0 and 1.1) give them together:
//   - SQLAlchemy moves ssl_ca, ssl_capath, ssl_cert, ssl_key, ssl_cipher
//     and ssl_check_hostname into connect(ssl={...}), replacing the URL's
//     own "ssl"; ssl_verify_cert, ssl_verify_identity and ssl_disabled are
//     passed on as strings;
//   - any non-empty ssl_disabled disables TLS ("ssl_disabled=false" too:
//     a non-empty Python string is true);
//   - a non-empty ssl_verify_cert or ssl_verify_identity makes PyMySQL
//     rebuild the dict from its own ssl_ca/ssl_cert/ssl_key arguments, which
//     SQLAlchemy left empty: the CA, client certificate and key of the URL
//     are dropped, the chain is verified against the system roots when
//     ssl_verify_cert is "true", "1", "yes", "required" or "optional", and
//     the host name is never checked (check_hostname needs a CA).
//     OpenStack-Ansible writes ssl_verify_cert=true&ssl_ca=...: Ironic then
//     trusts the system store (where OpenStack-Ansible installs its CA).
//     The exporter adds the URL's CA to the system roots, so that it also
//     connects where its own trust store (a container's) lacks that CA;
//   - otherwise, with a CA (ssl_ca, ssl_capath, or ssl-ca/ssl-capath of the
//     option file) the chain and the host name are checked, the name
//     unless ssl_check_hostname is false; without one TLS is on, unverified,
//     when any ssl_* option (or ssl-* of the option file) is given;
//   - "ssl" alone makes PyMySQL fail ('str' object has no attribute 'get'),
//     so it is an error here too.
func (s *mysqlSettings) pymysqlTLSConfig(addr, network string, urlSSL bool) (*tls.Config, error) {
	if s.sslMode != "" {
		return s.tlsConfig(addr, network)
	}
	if s.ssl["disabled"] != "" {
		return nil, nil
	}
	rebuilt := s.ssl["verify_cert"] != "" || s.ssl["verify_identity"] != ""
	if !rebuilt && s.hasSSLRaw && !urlSSL {
		return nil, errors.New(`database URL option "ssl" alone is not usable: PyMySQL fails on it; give ssl_ca (SQLAlchemy replaces "ssl" by the ssl_* options) or ssl_verify_cert=true`)
	}
	cfg := newTLSConfig(addr, network)
	if rebuilt {
		// PyMySQL: ssl = {"ca": None, "check_hostname": ...,
		// "verify_mode": ssl_verify_cert or False}.
		switch strings.ToLower(s.ssl["verify_cert"]) {
		case "required", "1", "true", "yes", "optional":
		default:
			cfg.InsecureSkipVerify = true
			return cfg, nil
		}
		roots, err := x509.SystemCertPool()
		if err != nil || roots == nil {
			roots = x509.NewCertPool()
		}
		if err := s.addCAs(cfg, roots); err != nil {
			return nil, err
		}
		verifyChainOnly(cfg)
		return cfg, nil
	}
	hasCA := s.ssl["ca"] != "" || s.ssl["capath"] != ""
	if !hasCA && s.ssl["cert"] == "" && s.ssl["key"] == "" && !urlSSL {
		return nil, nil
	}
	if err := s.loadClientCert(cfg); err != nil {
		return nil, err
	}
	if !hasCA {
		cfg.InsecureSkipVerify = true
		return cfg, nil
	}
	if err := s.addCAs(cfg, x509.NewCertPool()); err != nil {
		return nil, err
	}
	checkName := true
	if v, ok := s.ssl["check_hostname"]; ok {
		checkName, _ = sqlaBool(v)
	}
	if !checkName || cfg.ServerName == "" {
		verifyChainOnly(cfg)
	}
	return cfg, nil
}

// addCAs adds the certificates of ssl_ca and of the files in ssl_capath to
// pool, and makes it cfg's roots.
func (s *mysqlSettings) addCAs(cfg *tls.Config, pool *x509.CertPool) error {
	files := []string{}
	if ca := s.ssl["ca"]; ca != "" {
		files = append(files, ca)
	}
	if dir := s.ssl["capath"]; dir != "" {
		entries, err := os.ReadDir(dir)
		if err != nil {
			return fmt.Errorf("database option ssl_capath: %w", err)
		}
		for _, e := range entries {
			if !e.IsDir() {
				files = append(files, filepath.Join(dir, e.Name()))
			}
		}
	}
	for _, f := range files {
		pem, err := os.ReadFile(f)
		if err != nil {
			return fmt.Errorf("database option ssl_ca/ssl_capath: %w", err)
		}
		if !pool.AppendCertsFromPEM(pem) && f == s.ssl["ca"] {
			return fmt.Errorf("database option ssl_ca: %s holds no PEM certificate", f)
		}
	}
	cfg.RootCAs = pool
	return nil
}

// loadClientCert loads ssl_cert (and ssl_key, else the key in ssl_cert).
func (s *mysqlSettings) loadClientCert(cfg *tls.Config) error {
	cert, key := s.ssl["cert"], s.ssl["key"]
	if cert == "" {
		if key != "" {
			return errors.New("database option ssl_key needs ssl_cert")
		}
		return nil
	}
	if key == "" {
		key = cert
	}
	pair, err := tls.LoadX509KeyPair(cert, key)
	if err != nil {
		return fmt.Errorf("database options ssl_cert/ssl_key: %w", err)
	}
	cfg.Certificates = []tls.Certificate{pair}
	return nil
}

// verifyChainOnly makes cfg check the server's chain against cfg.RootCAs
// but not its name (Python's check_hostname=False with CERT_REQUIRED).
func verifyChainOnly(cfg *tls.Config) {
	roots := cfg.RootCAs
	cfg.InsecureSkipVerify = true
	cfg.VerifyConnection = func(cs tls.ConnectionState) error {
		if len(cs.PeerCertificates) == 0 {
			return errors.New("the server sent no certificate")
		}
		opts := x509.VerifyOptions{Roots: roots, Intermediates: x509.NewCertPool()}
		for _, c := range cs.PeerCertificates[1:] {
			opts.Intermediates.AddCert(c)
		}
		_, err := cs.PeerCertificates[0].Verify(opts)
		return err
	}
}

// readOptionFile fills the settings the URL left empty from group of a
// MySQL option file (my.cnf), as pymysql's read_default_file does: keys
// user, password, host, database, socket, port, bind-address and ssl-ca,
// ssl-capath, ssl-cert, ssl-key; "!include" lines and other keys are
// ignored, and values may be quoted.
func (s *mysqlSettings) readOptionFile(path, group string) error {
	if strings.HasPrefix(path, "~/") {
		if home, err := os.UserHomeDir(); err == nil {
			path = filepath.Join(home, path[2:])
		}
	}
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("database option read_default_file: %w (mount the file into the exporter's container, or put its settings in the URL)", err)
	}
	defer func() { _ = f.Close() }()
	vals := map[string]string{}
	in := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		switch {
		case line == "" || line[0] == '#' || line[0] == ';' || line[0] == '!':
			continue
		case line[0] == '[':
			in = strings.TrimSpace(strings.Trim(line, "[]")) == group
			continue
		case !in:
			continue
		}
		k, v, _ := strings.Cut(line, "=")
		k = strings.ReplaceAll(strings.TrimSpace(k), "_", "-")
		v = strings.TrimSpace(v)
		if len(v) >= 2 && (v[0] == '"' || v[0] == '\'') && v[len(v)-1] == v[0] {
			v = v[1 : len(v)-1]
		}
		vals[k] = v
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("database option read_default_file %s: %w", path, err)
	}
	for dst, key := range map[*string]string{&s.user: "user", &s.password: "password", &s.host: "host",
		&s.database: "database", &s.socket: "socket", &s.port: "port", &s.bindAddress: "bind-address"} {
		if *dst == "" {
			*dst = vals[key]
		}
	}
	for _, k := range []string{"ca", "capath", "cert", "key"} {
		if s.ssl[k] == "" && vals["ssl-"+k] != "" {
			s.ssl[k] = vals["ssl-"+k]
		}
	}
	return nil
}
