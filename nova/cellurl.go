package nova

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// CellMapping is a row of nova_api's cell_mappings.
type CellMapping struct {
	UUID, Name string
	// DatabaseConnection as stored: a URL, or a template such as
	// "{scheme}://{username}:{password}@{hostname}/nova_cell1".
	DatabaseConnection string
	Disabled           bool
}

// Cell0UUID is cell0's uuid (objects.CellMapping.CELL0_UUID): a cell with
// no computes, skipped.
const Cell0UUID = "00000000-0000-0000-0000-000000000000"

// FormatDBURL is Nova's CellMapping.format_db_url (nova/objects/
// cell_mapping.py, templates from commit 50658eee4f, 18.0): url is
// formatted with str.format from the parts of connection (Nova's
// [database]connection) as urllib.parse.urlparse gives them: scheme,
// username, password, hostname (lowercased), port, path (without its
// leading slashes), query, fragment; a part that is absent formats as
// "None". When the netloc lists several hosts ("a@h1:1,b@h2:2"), the keys
// username1, hostname1, port1, password1, ... are added. Where Nova would
// fail (connection empty, an unknown key, a bad port, a brace alone) it
// logs and uses url unformatted: so does this. Format specs, conversions
// and attribute or index lookups ({port:05}, {port!r}, {x.y}) are not
// modelled: url is returned unformatted and ok is false.
func FormatDBURL(url, connection string) (formatted string, ok bool) {
	if connection == "" {
		return url, true
	}
	subs, good := urlParts(connection)
	if !good {
		return url, true
	}
	out, err := formatURL(url, subs)
	switch {
	case errors.Is(err, errNotModelled):
		return url, false
	case err != nil:
		return url, true // Nova logs it and uses url as it is
	}
	return out, true
}

// FillCellTemplate gives a cell's connection from the exporter's own
// template (--nova.cell-dsn-template): template is formatted as
// FormatDBURL formats a cell_mappings template, with the parts of
// cellURL, the cell's connection as Nova uses it (cell_mappings' value,
// itself formatted with FormatDBURL). So
// "mysql+pymysql://reader:secret@{hostname}:{port}/{path}" reaches each
// cell's own server and database as the exporter's read-only user. Unlike
// FormatDBURL it never falls back to a text it could not format: a key
// the cell's URL lacks, a brace alone or a bad port in cellURL is an
// error, so that a cell is never reached with cell_mappings' (Nova's
// read-write) credentials by mistake. Errors hold no password.
func FillCellTemplate(template, cellURL string) (string, error) {
	if cellURL == "" {
		return "", errors.New("the cell's connection in cell_mappings is empty")
	}
	subs, good := urlParts(cellURL)
	if !good {
		return "", errors.New("the cell's connection in cell_mappings has a port that is not a number in 0-65535")
	}
	out, err := formatURL(template, subs)
	if err != nil {
		return "", fmt.Errorf("--nova.cell-dsn-template: %w", err)
	}
	return out, nil
}

// errNotModelled: a format spec, conversion or lookup ({port:05}).
var errNotModelled = errors.New("a format spec, conversion or field lookup (only plain {key} is supported)")

// formatURL is Python's str.format of url with subs, for the plain {key}
// fields _format_url's templates use; the errors say what Python raises
// (without any value, which may be a password).
func formatURL(url string, subs map[string]string) (string, error) {
	var b strings.Builder
	for i := 0; i < len(url); i++ {
		c := url[i]
		switch {
		case c == '{' && i+1 < len(url) && url[i+1] == '{':
			b.WriteByte('{')
			i++
		case c == '}' && i+1 < len(url) && url[i+1] == '}':
			b.WriteByte('}')
			i++
		case c == '{':
			j := strings.IndexByte(url[i:], '}')
			if j < 0 {
				return "", errors.New("a '{' without its '}'") // ValueError
			}
			key := url[i+1 : i+j]
			if strings.ContainsAny(key, "!:.[{") {
				return "", errNotModelled
			}
			v, known := subs[key]
			if !known {
				return "", fmt.Errorf("unknown key {%s} (the keys are those of Nova's database_connection templates: scheme, username, password, hostname, port, path, query, fragment)", key) // KeyError, or IndexError for {}
			}
			b.WriteString(v)
			i += j
		case c == '}':
			return "", errors.New("a '}' alone") // ValueError
		default:
			b.WriteByte(c)
		}
	}
	return b.String(), nil
}

const pyNone = "None"

// urlParts are the substitutions of _format_url, as Python's str() of
// urlparse's attributes; good is false where reading them raises
// (a port that is not a number in 0-65535).
func urlParts(conn string) (map[string]string, bool) {
	scheme, rest := "", conn
	if i := strings.IndexByte(conn, ':'); i > 0 && validScheme(conn[:i]) {
		scheme, rest = strings.ToLower(conn[:i]), conn[i+1:]
	}
	netloc := ""
	if strings.HasPrefix(rest, "//") {
		rest = rest[2:]
		end := strings.IndexAny(rest, "/?#")
		if end < 0 {
			end = len(rest)
		}
		netloc, rest = rest[:end], rest[end:]
	}
	fragment := ""
	if i := strings.IndexByte(rest, '#'); i >= 0 {
		rest, fragment = rest[:i], rest[i+1:]
	}
	query := ""
	if i := strings.IndexByte(rest, '?'); i >= 0 {
		rest, query = rest[:i], rest[i+1:]
	}
	subs := map[string]string{"scheme": scheme, "query": query, "fragment": fragment,
		"path": strings.TrimLeft(rest, "/"), "username": pyNone, "password": pyNone, "hostname": pyNone, "port": pyNone}
	// urlparse's username/password: the text before the last '@'
	if at := strings.LastIndexByte(netloc, '@'); at >= 0 {
		user, pass, has := strings.Cut(netloc[:at], ":")
		subs["username"] = user
		if has {
			subs["password"] = pass
		}
	}
	hostinfo := netloc[strings.LastIndexByte(netloc, '@')+1:]
	host, port := hostinfo, ""
	hasPort := false
	if strings.HasPrefix(hostinfo, "[") {
		if j := strings.IndexByte(hostinfo, ']'); j >= 0 {
			host = hostinfo[1:j]
			if p, found := strings.CutPrefix(hostinfo[j+1:], ":"); found {
				port, hasPort = p, true
			}
		}
	} else if h, p, found := strings.Cut(hostinfo, ":"); found {
		host, port, hasPort = h, p, true
	}
	if host != "" {
		subs["hostname"] = strings.ToLower(host)
	}
	if hasPort && port != "" {
		n, err := strconv.Atoi(port)
		if err != nil || n < 0 || n > 65535 || strings.TrimLeft(port, "0123456789") != "" {
			return nil, false
		}
		subs["port"] = strconv.Itoa(n)
	}
	if strings.Contains(netloc, ",") {
		for i, nl := range strings.Split(netloc, ",") {
			parseNetloc(subs, strconv.Itoa(i+1), nl)
		}
	}
	return subs, true
}

// parseNetloc is cell_mapping.py's _parse_netloc for one host of a
// comma-separated netloc, its keys suffixed with idx.
func parseNetloc(subs map[string]string, idx, netloc string) {
	userpass, hostport := "", netloc
	if u, h, found := strings.Cut(netloc, "@"); found {
		userpass, hostport = u, h
	}
	host, port := hostport, pyNone // oslo_utils netutils.parse_host_port
	if strings.HasPrefix(hostport, "[") {
		if j := strings.IndexByte(hostport, ']'); j >= 0 {
			host = hostport[1:j]
			if p, found := strings.CutPrefix(hostport[j+1:], ":"); found && p != "" {
				port = p
			}
		}
	} else if strings.Count(hostport, ":") == 1 {
		h, p, _ := strings.Cut(hostport, ":")
		host = h
		if p != "" {
			port = p
		}
	}
	subs["hostname"+idx], subs["port"+idx] = host, port
	subs["username"+idx], subs["password"+idx] = userpass, pyNone
	if u, p, found := strings.Cut(userpass, ":"); found {
		subs["username"+idx], subs["password"+idx] = u, p
	}
}

// validScheme is urlparse's test of a scheme: a letter, then letters,
// digits, '+', '-' or '.'.
func validScheme(s string) bool {
	for i, c := range s {
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z':
		case i > 0 && ('0' <= c && c <= '9' || c == '+' || c == '-' || c == '.'):
		default:
			return false
		}
	}
	return s != ""
}
