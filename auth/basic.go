package auth

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"strings"

	"golang.org/x/crypto/bcrypt"
)

// Basic is auth_strategy = http_basic: ironic-lib's BasicAuthMiddleware
// (ironic_lib/auth_basic.py, python3-ironic-lib 5.3.0) over Ironic's
// [DEFAULT]http_basic_auth_user_file, an Apache htpasswd file of bcrypt
// digests only ($2y$, $2a$, $2b$). The file is read on each request, as
// ironic-lib reads it: the first line starting with "user:" decides.
type Basic struct {
	File string
	Log  *slog.Logger
}

// NewBasic checks the file as validate_auth_file does: readable, and every
// line with a ":" holding a bcrypt digest.
func NewBasic(file string, log *slog.Logger) (*Basic, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("http_basic_auth_user_file: %w", err)
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || !strings.Contains(line, ":") {
			continue
		}
		user, digest, _ := strings.Cut(line, ":")
		if !isBcrypt(digest) {
			return nil, fmt.Errorf("http_basic_auth_user_file %s: only bcrypt digested passwords are supported for %s", file, user)
		}
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Basic{File: file, Log: log}, nil
}

func isBcrypt(d string) bool {
	return strings.HasPrefix(d, "$2y$") || strings.HasPrefix(d, "$2a$") || strings.HasPrefix(d, "$2b$")
}

// basicFailure is BasicAuthMiddleware.format_exception's answer.
func basicFailure(status int, msg string) *Failure {
	h := http.Header{"Content-Type": {"application/json"}}
	if status == http.StatusUnauthorized {
		h.Set("WWW-Authenticate", `Basic realm="Baremetal API"`)
	}
	return &Failure{Status: status, Header: h,
		Body: fmt.Appendf(nil, `{"error": {"message": %s, "code": %d}}`, jsonString(msg), status)}
}

// Authenticate implements Authenticator (parse_header, parse_token,
// authenticate).
func (b *Basic) Authenticate(r *http.Request) (*Credentials, *Failure) {
	hdr, ok := r.Header["Authorization"]
	if !ok || len(hdr) == 0 {
		return nil, basicFailure(http.StatusUnauthorized, "Authorization required")
	}
	typ, token, ok := strings.Cut(strings.TrimSpace(hdr[0]), " ")
	token = strings.TrimSpace(token)
	if !ok || token == "" {
		return nil, basicFailure(http.StatusBadRequest, "Could not parse Authorization header")
	}
	if !strings.EqualFold(typ, "basic") {
		return nil, basicFailure(http.StatusBadRequest, fmt.Sprintf("Unsupported authorization type \"%s\"", typ))
	}
	pair, err := base64.StdEncoding.DecodeString(token)
	user, pass, ok := bytes.Cut(pair, []byte(":"))
	if err != nil || !ok {
		return nil, basicFailure(http.StatusBadRequest, "Could not decode authorization token")
	}
	data, err := os.ReadFile(b.File)
	if err != nil {
		b.Log.Error("auth: reading the http_basic user file", "err", err)
		return nil, basicFailure(http.StatusInternalServerError, "Invalid configuration file. Problem reading auth user file")
	}
	prefix := string(user) + ":"
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || !strings.HasPrefix(line, prefix) {
			continue
		}
		digest := line[len(prefix):]
		if !isBcrypt(digest) {
			return nil, basicFailure(http.StatusInternalServerError, "Invalid configuration file. Only bcrypt digested passwords are supported for "+string(user))
		}
		if bcrypt.CompareHashAndPassword([]byte(digest), pass) != nil {
			return nil, basicFailure(http.StatusUnauthorized, "Incorrect username or password")
		}
		return &Credentials{User: string(user)}, nil
	}
	return nil, basicFailure(http.StatusUnauthorized, "Incorrect username or password")
}

// jsonString quotes s as a JSON string.
func jsonString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r < 0x20:
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}
