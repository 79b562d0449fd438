// Package ironicconf reads the few options the exporter shares with Ironic
// from Ironic's own configuration files, the way oslo.config reads them, so
// that the exporter can be pointed at the ironic.conf Ironic uses instead of
// repeating its settings on the command line.
//
// The options are Config's ([database] connection also under oslo.db's
// deprecated names [DEFAULT] sql_connection, [DATABASE] sql_connection and
// [sql] connection). oslo.config's behaviour, reproduced here (checked
// against oslo.config itself, see the tests):
//   - files are read in order (--config-file, repeatable), then every *.conf
//     of each --config-dir in lexical order; a later value overrides an
//     earlier one, within a file too;
//   - a line starting with '#' or ';' is a comment; there are no inline
//     comments ("x = 1 # one" is the value "1 # one");
//   - "key = value" and "key: value" (whichever of '=' and ':' comes first);
//     a value wrapped in matching single or double quotes loses them;
//   - an indented line continues the previous value (joined with "\n"); a
//     blank line ends it;
//   - section names are case-insensitive ([Database] is [database]) except
//     DEFAULT, which must be upper case ([default] is a section of its own);
//     keys are case-sensitive;
//   - an assignment before any section is an error;
//   - "$$" is a literal "$"; "$name" and "${name}" substitute the option
//     name of [DEFAULT], "$group.name" that of [group]. oslo.config takes the
//     value from the registered option, which may be a default the exporter
//     does not know (state_path's, for instance): a name that no file sets
//     is an error that says so;
//   - integers are whole numbers, surrounding blanks allowed.
//
// Errors name the file, line, section and key, never the value of
// [database] connection (it holds the database password).
package ironicconf

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Place is where a value was written: file, line, and section and key as
// written in the file (e.g. a deprecated name).
type Place struct {
	File    string
	Line    int
	Section string
	Key     string
}

// Where describes the place for a log line or an error:
// "[conductor] heartbeat_timeout in /etc/ironic/ironic.conf:12".
func (p Place) Where() string {
	return fmt.Sprintf("[%s] %s in %s:%d", p.Section, p.Key, p.File, p.Line)
}

// Opt is one option's value and where the value that won was written.
type Opt[T any] struct {
	// Value is the parsed value; the zero value when not Set.
	Value T
	// Set is true when a file gives the option.
	Set bool
	Place
	// deprecated: the value was written under one of oslo.db's deprecated
	// names of [database] connection.
	deprecated bool
}

// Deprecated reports whether the value was written under a deprecated
// name of [database] connection ([DEFAULT] sql_connection, [DATABASE]
// sql_connection, [sql] connection), which oslo.db 15.0 (2024.1) removed:
// releases from 2024.1 on do not read it (log a warning).
func (o Opt[T]) Deprecated() bool { return o.deprecated }

// Config holds the options the exporter reads from Ironic's files.
type Config struct {
	// Files are the files read, in order.
	Files []string
	// Connection is [database] connection, a SQLAlchemy URL that may hold a
	// password: never log it unredacted.
	Connection Opt[string]
	// HeartbeatTimeout is [conductor] heartbeat_timeout (whole seconds in
	// the file).
	HeartbeatTimeout Opt[time.Duration]
	// HashPartitionExponent is [DEFAULT] hash_partition_exponent.
	HashPartitionExponent Opt[int]
	// HashRingAlgorithm is [DEFAULT] hash_ring_algorithm, as written (the
	// caller checks it is an algorithm it knows).
	HashRingAlgorithm Opt[string]
	// PinReleaseVersion is [DEFAULT] pin_release_version (a release such as
	// "11.0" or "queens"): Ironic 11.1-16.0 ignore conductor groups in their
	// rings while it pins an RPC API older than 1.47.
	PinReleaseVersion Opt[string]
	// HashDistributionReplicas is [DEFAULT] hash_distribution_replicas
	// (Ironic 12.1 and older).
	HashDistributionReplicas Opt[int]
	// MaxConcurrentDeploy, MaxConcurrentClean and
	// MaxConcurrentPerConductorGroup are the [conductor] options of Ironic's
	// concurrency limits (rules.ConcurrencyLimits).
	MaxConcurrentDeploy, MaxConcurrentClean Opt[int]
	MaxConcurrentPerConductorGroup          Opt[bool]
	// GracefulShutdownTimeout is [DEFAULT] graceful_shutdown_timeout
	// (oslo.service, whole seconds; 0 is an endless wait), and
	// PeriodicMaxWorkers and SyncLocalStateInterval are [conductor]
	// periodic_max_workers and sync_local_state_interval: how long a
	// stopping conductor's workers may go on without their locks, and how
	// fast Ironic takes nodes over (rules.Rules NoLockBound, TakeoverTime).
	GracefulShutdownTimeout Opt[time.Duration]
	PeriodicMaxWorkers      Opt[int]
	SyncLocalStateInterval  Opt[time.Duration]
	// ConductorCleanupInterval and ConductorCleanupTimeout are [conductor]
	// conductor_cleanup_interval and conductor_cleanup_timeout (32.0+):
	// when Ironic deletes stale conductor rows (rules.Rules RowDeletion).
	ConductorCleanupInterval, ConductorCleanupTimeout Opt[time.Duration]
	// Auth holds the options of the API's authentication and policy
	// (AuthOptions), keyed "section.key"; an option no file sets is absent.
	// [keystone_authtoken] password is a secret: never log it.
	Auth map[string]Opt[string]
}

// AuthOptions are the options read into Config.Auth: Ironic's
// [DEFAULT]auth_strategy and http_basic_auth_user_file, keystonemiddleware's
// [keystone_authtoken] service credentials and oslo.policy's [oslo_policy].
var AuthOptions = []string{"DEFAULT.auth_strategy", "DEFAULT.http_basic_auth_user_file",
	"keystone_authtoken.auth_url", "keystone_authtoken.www_authenticate_uri",
	"keystone_authtoken.username", "keystone_authtoken.password",
	"keystone_authtoken.user_domain_name", "keystone_authtoken.user_domain_id",
	"keystone_authtoken.project_name", "keystone_authtoken.project_domain_name",
	"keystone_authtoken.project_domain_id", "keystone_authtoken.token_cache_time",
	"keystone_authtoken.cafile", "keystone_authtoken.insecure",
	"oslo_policy.policy_file", "oslo_policy.enforce_scope", "oslo_policy.enforce_new_defaults"}

// Error is a problem with a configuration file. It never contains the value
// of a secret option.
type Error struct {
	Place // Line 0: about the whole file; Section "": not about an option
	Msg   string
	Err   error // underlying error, if any
}

func (e *Error) Error() string {
	s := "ironic config " + e.File
	if e.Line > 0 {
		s += ":" + strconv.Itoa(e.Line)
	}
	if e.Section != "" || e.Key != "" {
		s += ": [" + e.Section + "] " + e.Key
	}
	s += ": " + e.Msg
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

func (e *Error) Unwrap() error { return e.Err }

// value is one assignment in a file.
type value struct {
	text string
	Place
	normalSection string
}

// File is a parsed configuration file: for each normalised section name
// (DEFAULT, or lower case), for each key, its assignments in order.
type File struct {
	Name     string
	sections map[string]map[string][]value
}

// normalSection is oslo.config's _normalize_group_name.
func normalSection(s string) string {
	if s == "DEFAULT" {
		return s
	}
	return strings.ToLower(s)
}

// Parse reads one file in oslo.config's ini dialect (oslo_config.iniparser).
// name is used in errors.
func Parse(r io.Reader, name string) (*File, error) {
	f := &File{Name: name, sections: map[string]map[string][]value{}}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	var (
		section string
		cur     *value // the assignment being continued
		lineno  int
		lines   []string
	)
	flush := func() {
		if cur != nil {
			cur.text = strings.Join(lines, "\n")
			m := f.sections[cur.normalSection]
			m[cur.Key] = append(m[cur.Key], *cur)
			cur, lines = nil, nil
		}
	}
	perr := func(msg string) error { return &Error{Place: Place{File: name, Line: lineno}, Msg: msg} }
	for sc.Scan() {
		lineno++
		line := strings.TrimRight(sc.Text(), " \t\r\n\v\f")
		if lineno == 1 {
			line = strings.TrimPrefix(line, "\ufeff")
		}
		switch {
		case line == "":
			flush()
			continue
		case line[0] == ' ' || line[0] == '\t':
			if cur == nil {
				return nil, perr("unexpected continuation line (an indented line must continue a value)")
			}
			lines = append(lines, strings.TrimLeft(line, " \t"))
			continue
		}
		flush()
		switch line[0] {
		case '[':
			if !strings.HasSuffix(line, "]") {
				return nil, perr("section header without closing ']'")
			}
			if len(line) <= 2 {
				return nil, perr("empty section name")
			}
			section = line[1 : len(line)-1]
			if _, ok := f.sections[normalSection(section)]; !ok {
				f.sections[normalSection(section)] = map[string][]value{}
			}
		case '#', ';':
		default:
			i := strings.IndexAny(line, ":=") // whichever comes first
			if i < 0 {
				return nil, perr("neither a section, a comment nor key = value")
			}
			key, val := strings.TrimSpace(line[:i]), strings.TrimSpace(line[i+1:])
			if len(val) >= 2 && (val[0] == '"' || val[0] == '\'') && val[len(val)-1] == val[0] {
				val = val[1 : len(val)-1]
			}
			if key == "" {
				return nil, perr("empty key")
			}
			if section == "" {
				return nil, perr("assignment before any [section]")
			}
			cur = &value{Place: Place{File: name, Line: lineno, Section: section, Key: key}, normalSection: normalSection(section)}
			lines = []string{val}
		}
	}
	if err := sc.Err(); err != nil {
		return nil, &Error{Place: Place{File: name}, Msg: "reading", Err: err}
	}
	flush()
	return f, nil
}

// optName is where an option may be written: section (normalised) and key.
type optName struct{ section, key string }

// connectionNames are where [database]connection may be written: its
// name, then oslo.db's deprecated names.
var connectionNames = []optName{{"database", "connection"}, {"DEFAULT", "sql_connection"},
	{"database", "sql_connection"}, {"sql", "connection"}}

// lookup finds the winning assignment of an option as oslo.config's
// _get_file_value does: the last file that sets any of names wins; within
// it, the first of names it sets, and of that the last assignment.
// which is the index in names of the name it was written under.
func (r *reader) lookup(names []optName) (v value, which int, ok bool) {
	for i := len(r.files) - 1; i >= 0; i-- {
		for j, n := range names {
			if vs := r.files[i].sections[n.section][n.key]; len(vs) > 0 {
				return vs[len(vs)-1], j, true
			}
		}
	}
	return value{}, 0, false
}

// templateRef matches "$$", "$name", "${name}" and "$group.name" as
// oslo.config's string.Template subclass does.
var templateRef = regexp.MustCompile(`\$(?:(\$)|([_a-zA-Z][._a-zA-Z0-9]*)|\{([_a-zA-Z][._a-zA-Z0-9]*)\}|)`)

// substitute expands $-references in v (oslo.config's _substitute).
// secret says whether v's text must stay out of errors.
func (r *reader) substitute(v value, secret bool, depth int) (string, error) {
	if !strings.Contains(v.text, "$") {
		return v.text, nil
	}
	verr := func(msg string) error { return &Error{Place: v.Place, Msg: msg} }
	if depth > 10 {
		return "", verr("substitutions nest too deep (a $reference loop?)")
	}
	var firstErr error
	out := templateRef.ReplaceAllStringFunc(v.text, func(m string) string {
		if firstErr != nil {
			return ""
		}
		sm := templateRef.FindStringSubmatch(m)
		switch {
		case sm[1] != "":
			return "$"
		case sm[2] == "" && sm[3] == "":
			if secret {
				firstErr = verr(`a "$" that starts no substitution (write "$$" for a literal "$")`)
			} else {
				firstErr = verr(fmt.Sprintf(`a "$" that starts no substitution in %q (write "$$" for a literal "$")`, v.text))
			}
			return ""
		}
		ref := sm[2] + sm[3]
		section, key := "DEFAULT", ref
		if g, k, ok := strings.Cut(ref, "."); ok {
			section, key = normalSection(g), k
		}
		target, _, ok := r.lookup([]optName{{section, key}})
		if !ok {
			firstErr = verr(fmt.Sprintf("substitution $%s: [%s] %s is set in no config file, and the exporter does not know Ironic's default for it (set it, or write the value out; \"$$\" is a literal \"$\")", ref, section, key))
			return ""
		}
		text, err := r.substitute(target, secret, depth+1)
		if err != nil {
			firstErr = err
			return ""
		}
		return text
	})
	if firstErr != nil {
		return "", firstErr
	}
	return out, nil
}

// reader reads options from the parsed files, in order, collecting their
// errors.
type reader struct {
	files []*File
	errs  []error
}

// str is the value of the option written under names (see lookup), its
// $-references expanded and surrounding blanks trimmed.
func (r *reader) str(names []optName, secret bool) Opt[string] {
	v, which, ok := r.lookup(names)
	if !ok {
		return Opt[string]{}
	}
	text, err := r.substitute(v, secret, 0)
	if err != nil {
		r.errs = append(r.errs, err)
		return Opt[string]{}
	}
	return Opt[string]{Value: strings.TrimSpace(text), Set: true, Place: v.Place, deprecated: which > 0}
}

// integer is the whole number of [section] key.
func (r *reader) integer(section, key string) Opt[int] {
	so := r.str([]optName{{section, key}}, false)
	n, err := strconv.Atoi(so.Value)
	if !so.Set || err == nil {
		return Opt[int]{Value: n, Set: so.Set, Place: so.Place}
	}
	msg := fmt.Sprintf("not an integer: %q", so.Value)
	switch {
	case so.Value == "":
		msg = "empty value (remove the line to use Ironic's default)"
	case errors.Is(err, strconv.ErrRange):
		msg = fmt.Sprintf("integer out of range: %q", so.Value)
	}
	r.errs = append(r.errs, &Error{Place: so.Place, Msg: msg})
	return Opt[int]{}
}

// boolean is the true or false of [section] key, as oslo.config's Boolean
// type reads it: true, yes, on or 1, false, no, off or 0, in any case.
func (r *reader) boolean(section, key string) Opt[bool] {
	so := r.str([]optName{{section, key}}, false)
	if !so.Set {
		return Opt[bool]{}
	}
	switch strings.ToLower(so.Value) {
	case "true", "yes", "on", "1":
		return Opt[bool]{Value: true, Set: true, Place: so.Place}
	case "false", "no", "off", "0":
		return Opt[bool]{Set: true, Place: so.Place}
	}
	r.errs = append(r.errs, &Error{Place: so.Place, Msg: fmt.Sprintf("not a boolean: %q", so.Value)})
	return Opt[bool]{}
}

// Load reads files, then every *.conf file of each of dirs (sorted), and
// returns the options found. A missing file or directory is an error, as in
// oslo.config; an option no file sets is not (its Set is false).
func Load(files, dirs []string) (*Config, error) {
	r, paths, err := readFiles(files, dirs)
	if err != nil {
		return nil, err
	}
	return r.config(paths)
}

// readFiles parses files, then every *.conf file of each of dirs (sorted),
// as Load describes.
func readFiles(files, dirs []string) (*reader, []string, error) {
	paths := slices.Clone(files)
	for _, dir := range dirs {
		entries, err := os.ReadDir(dir) // sorted by name
		if err != nil {
			return nil, nil, &Error{Place: Place{File: dir}, Msg: "config directory", Err: err}
		}
		for _, e := range entries {
			if strings.HasSuffix(e.Name(), ".conf") {
				paths = append(paths, filepath.Join(dir, e.Name()))
			}
		}
	}
	r := &reader{}
	for _, p := range paths {
		f, err := os.Open(p)
		if err != nil {
			return nil, nil, &Error{Place: Place{File: p}, Msg: "config file", Err: err}
		}
		pf, err := Parse(f, p)
		_ = f.Close()
		if err != nil {
			return nil, nil, err
		}
		r.files = append(r.files, pf)
	}
	return r, paths, nil
}

// seconds reads an integer option of whole seconds.
func (r *reader) seconds(section, key string) Opt[time.Duration] {
	o := r.integer(section, key)
	return Opt[time.Duration]{Value: time.Duration(o.Value) * time.Second, Set: o.Set, Place: o.Place}
}

func (r *reader) config(paths []string) (*Config, error) {
	c := &Config{
		Files:                          paths,
		Connection:                     r.str(connectionNames, true),
		HashPartitionExponent:          r.integer("DEFAULT", "hash_partition_exponent"),
		HashRingAlgorithm:              r.str([]optName{{"DEFAULT", "hash_ring_algorithm"}}, false),
		PinReleaseVersion:              r.str([]optName{{"DEFAULT", "pin_release_version"}}, false),
		HashDistributionReplicas:       r.integer("DEFAULT", "hash_distribution_replicas"),
		PeriodicMaxWorkers:             r.integer("conductor", "periodic_max_workers"),
		HeartbeatTimeout:               r.seconds("conductor", "heartbeat_timeout"),
		GracefulShutdownTimeout:        r.seconds("DEFAULT", "graceful_shutdown_timeout"),
		SyncLocalStateInterval:         r.seconds("conductor", "sync_local_state_interval"),
		ConductorCleanupInterval:       r.seconds("conductor", "conductor_cleanup_interval"),
		ConductorCleanupTimeout:        r.seconds("conductor", "conductor_cleanup_timeout"),
		MaxConcurrentDeploy:            r.integer("conductor", "max_concurrent_deploy"),
		MaxConcurrentClean:             r.integer("conductor", "max_concurrent_clean"),
		MaxConcurrentPerConductorGroup: r.boolean("conductor", "max_concurrent_per_conductor_group"),
		Auth:                           map[string]Opt[string]{},
	}
	for _, name := range AuthOptions {
		section, key, _ := strings.Cut(name, ".")
		if o := r.str([]optName{{section, key}}, key == "password"); o.Set {
			c.Auth[name] = o
		}
	}
	if c.Connection.Set && c.Connection.Value == "" {
		r.errs = append(r.errs, &Error{Place: c.Connection.Place, Msg: "empty value"})
	}
	if err := errors.Join(r.errs...); err != nil {
		return nil, err
	}
	return c, nil
}
