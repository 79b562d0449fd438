package deploy

import (
	"bufio"
	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/internal/testenv"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

const (
	unitPath    = "deploy/systemd/ironic-conductor-exporter.service"
	defaultPath = "deploy/systemd/ironic-conductor-exporter.default"
	unitBinary  = "/usr/local/bin/ironic_conductor_exporter"
)

// unit is a parsed systemd unit file: section -> key -> values in order
// (a key may repeat; an empty assignment is kept, it resets the list).
type unit map[string]map[string][]string

func parseUnit(t *testing.T, path string) unit {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	u := unit{}
	section := ""
	sc := bufio.NewScanner(f)
	var cont string
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if cont != "" {
			line, cont = cont+" "+line, ""
		}
		if strings.HasSuffix(line, `\`) {
			cont = strings.TrimSuffix(line, `\`)
			continue
		}
		switch {
		case line == "" || line[0] == '#' || line[0] == ';':
		case line[0] == '[' && line[len(line)-1] == ']':
			section = line[1 : len(line)-1]
			if u[section] != nil {
				t.Errorf("%s:%d: section [%s] twice", path, n, section)
			}
			u[section] = map[string][]string{}
		case section == "":
			t.Errorf("%s:%d: assignment outside a section", path, n)
		default:
			k, v, ok := strings.Cut(line, "=")
			if !ok {
				t.Errorf("%s:%d: not key=value: %q", path, n, line)
				continue
			}
			k, v = strings.TrimSpace(k), strings.TrimSpace(v)
			u[section][k] = append(u[section][k], v)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return u
}

// last is the effective value of a single-valued key.
func (u unit) last(section, key string) string {
	v := u[section][key]
	if len(v) == 0 {
		return ""
	}
	return v[len(v)-1]
}

// TestSystemdUnitHardening checks the keys the unit must carry, with their
// values, and that ExecStart uses flags the binary knows.
func TestSystemdUnitHardening(t *testing.T) {
	u := parseUnit(t, filepath.Join(root, unitPath))
	for _, s := range []string{"Unit", "Service", "Install"} {
		if u[s] == nil {
			t.Fatalf("no [%s] section", s)
		}
	}
	want := map[string]string{
		"DynamicUser":             "yes",
		"NoNewPrivileges":         "yes",
		"ProtectSystem":           "strict",
		"ProtectHome":             "yes",
		"PrivateTmp":              "yes",
		"PrivateDevices":          "yes",
		"CapabilityBoundingSet":   "",
		"AmbientCapabilities":     "",
		"RestrictAddressFamilies": "AF_INET AF_INET6 AF_UNIX",
		"RestrictNamespaces":      "yes",
		"RestrictSUIDSGID":        "yes",
		"LockPersonality":         "yes",
		"MemoryDenyWriteExecute":  "yes",
		"ProtectKernelTunables":   "yes",
		"ProtectKernelModules":    "yes",
		"ProtectControlGroups":    "yes",
		"SystemCallArchitectures": "native",
		"Restart":                 "on-failure",
		"EnvironmentFile":         "-/etc/default/ironic-conductor-exporter",
		"LoadCredential":          "dsn:/etc/ironic-conductor-exporter/dsn",
		"ReadOnlyPaths":           "-/var/lib/ironic",
	}
	for k, v := range want {
		got, ok := u["Service"][k]
		if !ok {
			t.Errorf("[Service] %s missing", k)
			continue
		}
		if got[len(got)-1] != v {
			t.Errorf("[Service] %s=%s, want %q", k, got[len(got)-1], v)
		}
	}
	if !slices.Contains(u["Service"]["SystemCallFilter"], "@system-service") {
		t.Error("SystemCallFilter=@system-service missing")
	}
	if m := u.last("Service", "MemoryMax"); !regexp.MustCompile(`^[0-9]+[KMG]$`).MatchString(m) {
		t.Errorf("MemoryMax=%q, want a fixed size", m)
	}
	if u.last("Install", "WantedBy") != "multi-user.target" {
		t.Error("WantedBy=multi-user.target missing")
	}
	for _, k := range []string{"User", "Group", "PrivateUsers"} {
		if _, ok := u["Service"][k]; ok {
			t.Errorf("[Service] %s= set: DynamicUser allocates the user; PrivateUsers would drop SupplementaryGroups", k)
		}
	}

	// ExecStart: the installed binary, the DSN from the credential, the
	// rest from $ARGS of the EnvironmentFile.
	exec := u.last("Service", "ExecStart")
	fields := strings.Fields(exec)
	if len(fields) == 0 || fields[0] != unitBinary {
		t.Fatalf("ExecStart=%s: want %s", exec, unitBinary)
	}
	if !slices.Contains(fields, "--db.dsn-file=${CREDENTIALS_DIRECTORY}/dsn") {
		t.Error("ExecStart does not read the DSN from the dsn credential")
	}
	if !slices.Contains(fields, "$ARGS") {
		t.Error("ExecStart does not pass $ARGS")
	}
	flags := binaryFlags(t)
	args := append(fields[1:], defaultArgs(t)...)
	for _, a := range args {
		if a == "$ARGS" {
			continue
		}
		name, _, _ := strings.Cut(strings.TrimPrefix(a, "--"), "=")
		if !strings.HasPrefix(a, "--") || !flags[name] {
			t.Errorf("%q is not a flag of the exporter", a)
		}
	}
}

// defaultArgs are the flags of ARGS in the example /etc/default file, which
// must not also set the DSN (the unit already does).
func defaultArgs(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, defaultPath))
	if err != nil {
		t.Fatal(err)
	}
	var args []string
	found := false
	for _, line := range strings.Split(string(b), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		switch {
		case !ok:
			t.Errorf("%s: not KEY=value: %q", defaultPath, line)
		case k == "ARGS":
			found = true
			args = strings.Fields(strings.Trim(v, `"`))
		case k == "IRONIC_EXPORTER_DB_DSN":
			t.Errorf("%s sets IRONIC_EXPORTER_DB_DSN by default: with the unit's --db.dsn-file the exporter refuses to start", defaultPath)
		default:
			t.Errorf("%s: unexpected variable %s", defaultPath, k)
		}
	}
	if !found {
		t.Errorf("%s: no ARGS", defaultPath)
	}
	for _, f := range []string{"--ironic.heartbeat-timeout=", "--ironic.hash-partition-exponent=", "--ironic.hash-ring-algorithm="} {
		if !slices.ContainsFunc(args, func(a string) bool { return strings.HasPrefix(a, f) }) {
			t.Errorf("%s: ARGS lacks %s (must match ironic.conf)", defaultPath, f)
		}
	}
	return args
}

// TestBifrostDropIn: the Bifrost drop-in's flags are the binary's, and it
// gives the exporter the htpasswd file Bifrost's Ironic uses.
func TestBifrostDropIn(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(root, "deploy", "systemd", "bifrost.conf"))
	if err != nil {
		t.Fatal(err)
	}
	flags := binaryFlags(t)
	var execStart string
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "ExecStart="); ok && v != "" {
			execStart = v
		}
	}
	if execStart == "" {
		t.Fatal("bifrost.conf: no ExecStart")
	}
	for _, f := range strings.Fields(execStart)[1:] {
		name, _, _ := strings.Cut(strings.TrimPrefix(f, "--"), "=")
		if f != "$ARGS" && !flags[name] {
			t.Errorf("bifrost.conf: %s is no flag of the exporter", f)
		}
	}
	if !strings.Contains(string(b), "LoadCredential=htpasswd:/etc/ironic/htpasswd") ||
		!strings.Contains(execStart, "--auth.http-basic-user-file=${CREDENTIALS_DIRECTORY}/htpasswd") {
		t.Error("bifrost.conf does not pass Bifrost's htpasswd as a credential")
	}
}

// TestSystemdAnalyze runs systemd's own checks when systemd-analyze is
// installed: `verify` (syntax, known directives, an executable ExecStart: the
// unit is copied with ExecStart pointing at a freshly built binary) and the
// offline `security` review, whose exposure must stay at most 2.0 ("OK"; --threshold counts in tenths).
func TestSystemdAnalyze(t *testing.T) {
	testenv.Need(t, testenv.SystemdAnalyze)
	sa, err := exec.LookPath("systemd-analyze")
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(root, unitPath))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	unitFile := filepath.Join(dir, "ironic-conductor-exporter.service")
	text := strings.ReplaceAll(string(b), unitBinary, exporterBinary(t))
	if err := os.WriteFile(unitFile, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	// The drop-ins (Bifrost's, the Nova side's, Kolla's TLS CA), loaded
	// from the unit's directory as systemd does.
	if err := os.Mkdir(unitFile+".d", 0o755); err != nil {
		t.Fatal(err)
	}
	for _, name := range dropIns {
		dropIn, err := os.ReadFile(filepath.Join(root, "deploy", "systemd", name))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(unitFile+".d", name),
			[]byte(strings.ReplaceAll(string(dropIn), unitBinary, exporterBinary(t))), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	out, err := exec.Command(sa, "verify", "--man=no", unitFile).CombinedOutput()
	// verify also loads the machine's own units and reports their faults
	// (a package's unit with a dependency on itself, say): only what it
	// says of ours, or a failure, counts.
	var ours []string
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if strings.Contains(line, "ironic-conductor-exporter") || strings.Contains(line, unitFile) {
			ours = append(ours, line)
		} else if line != "" {
			t.Logf("systemd-analyze verify, about another unit: %s", line)
		}
	}
	if err != nil || len(ours) > 0 {
		t.Errorf("systemd-analyze verify: %v\n%s", err, strings.Join(ours, "\n"))
	}
	out, err = exec.Command(sa, "security", "--offline=true", "--threshold=20", "--no-pager", unitFile).CombinedOutput()
	if err != nil {
		t.Errorf("systemd-analyze security: exposure above 2.0 or error: %v\n%s", err, out)
	}
	if m := regexp.MustCompile(`Overall exposure level for \S+: ([0-9.]+)`).FindSubmatch(out); m == nil {
		t.Errorf("systemd-analyze security printed no exposure level:\n%s", out)
	} else {
		t.Logf("systemd-analyze security: exposure %s", m[1])
	}
}

// dropIns are the drop-ins of deploy/systemd.
var dropIns = []string{"bifrost.conf", "nova.conf", "kolla-tls.conf"}

// TestSystemdDropIns: deploy/systemd holds the drop-ins the tests load;
// each variable the Nova drop-in sets is a flag's, each file it names a
// credential (the service's own copy) or a file any user may read.
func TestSystemdDropIns(t *testing.T) {
	confs, _ := filepath.Glob(filepath.Join(root, "deploy", "systemd", "*.conf"))
	if len(confs) != len(dropIns) {
		t.Errorf("deploy/systemd has %d drop-ins, the tests load %v", len(confs), dropIns)
	}
	flags := binaryFlags(t)
	envs := map[string]bool{}
	for f := range flags {
		envs["IRONIC_EXPORTER_"+strings.ToUpper(strings.NewReplacer(".", "_", "-", "_").Replace(f))] = true
	}
	b, err := os.ReadFile(filepath.Join(root, "deploy", "systemd", "nova.conf"))
	if err != nil {
		t.Fatal(err)
	}
	creds := map[string]bool{}
	set := map[string]string{}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "LoadCredential="); ok {
			name, _, _ := strings.Cut(v, ":")
			creds[name] = true
		}
		if v, ok := strings.CutPrefix(l, "Environment="); ok {
			k, val, _ := strings.Cut(v, "=")
			if !envs[k] {
				t.Errorf("nova.conf: %s is no flag's variable", k)
			}
			set[k] = val
			if c, ok := strings.CutPrefix(val, "%d/"); ok && !creds[c] {
				t.Errorf("nova.conf: %s=%s is no credential it loads", k, val)
			}
		}
	}
	for _, k := range []string{"IRONIC_EXPORTER_NOVA_DSN_FILE", "IRONIC_EXPORTER_NOVA_CELL_DSN_TEMPLATE_FILE", "IRONIC_EXPORTER_NOVA_CONFIG_FILE"} {
		if !strings.HasPrefix(set[k], "%d/") {
			t.Errorf("nova.conf: %s=%q is not a credential", k, set[k])
		}
	}
}
