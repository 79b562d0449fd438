package ironicconf

import (
	"encoding/json"
	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/internal/testenv"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// The files below are shaped like those the deployment tools write.

const kollaConf = `[DEFAULT]
debug = False
log_dir = /var/log/kolla/ironic
transport_url = rabbit://openstack:rabbitpw@192.168.1.10:5672//
my_ip = 192.168.1.10
enabled_network_interfaces = noop,flat,neutron
default_network_interface = neutron

[conductor]
automated_clean = True
deploy_kernel = http://192.168.1.10:8089/ironic-agent.kernel

[database]
connection = mysql+pymysql://ironic:Kolla-DB-Pa$$word@192.168.1.254:3306/ironic
connection_recycle_time = 10
max_pool_size = 1
max_retries = -1

[keystone_authtoken]
www_authenticate_uri = http://192.168.1.254:5000
password = keystonepw
`

const osaConf = `# Ansible managed

[DEFAULT]
# Disable stderr logging
use_stderr = False
debug = False
hash_partition_exponent = 7
hash_ring_algorithm = sha256

[conductor]
clean_callback_timeout = 1800
heartbeat_timeout: 30

[database]
connection = mysql+pymysql://ironic:osa-secret@172.29.236.100/ironic?charset=utf8&ssl_verify_cert=true
max_overflow = 50
max_pool_size = 5
pool_timeout = 30
connection_recycle_time = 600
`

const metal3Conf = `[DEFAULT]
auth_strategy = noauth
debug = true
default_deploy_interface = direct
enabled_hardware_types = ipmi,idrac,irmc,fake-hardware,redfish,manual-management,ilo,ilo5
isolinux_bin = /usr/share/syslinux/isolinux.bin
rpc_transport = none
use_stderr = true
hash_ring_algorithm = sha256
state_path = /var/lib/ironic

[agent]
deploy_logs_collect = always

[conductor]
automated_clean = true
bootloader = http://172.22.0.2:6180/uefi_esp.img
deploy_kernel = http://172.22.0.2:6180/images/ironic-python-agent.kernel
heartbeat_timeout = 120

[database]
connection = sqlite:///$state_path/ironic.sqlite
# Synchronous mode is required for data integrity
sqlite_synchronous = true
`

// tricky exercises the dialect's corners.
const trickyConf = `[DEFAULT]
; semicolon comment
hash_partition_exponent = 6
hash_partition_exponent = 8
Hash_Ring_Algorithm = sha1
[default]
hash_ring_algorithm = sha512
[Database]
connection = "postgresql://ironic:p%40ss@db/ironic" # not a comment
[CONDUCTOR]
heartbeat_timeout =
    45
`

type want struct {
	Connection        string `json:"connection"`
	HeartbeatSeconds  *int   `json:"heartbeat_timeout"`
	PartitionExponent *int   `json:"hash_partition_exponent"`
	Algorithm         string `json:"hash_ring_algorithm"`
	MaxDeploy         *int   `json:"max_concurrent_deploy"`
	MaxClean          *int   `json:"max_concurrent_clean"`
	PerGroup          *bool  `json:"max_concurrent_per_conductor_group"`
}

func bp(b bool) *bool { return &b }

func ip(i int) *int { return &i }

func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, body := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

func toWant(c *Config) want {
	var w want
	if c.Connection.Set {
		w.Connection = c.Connection.Value
	}
	if c.HeartbeatTimeout.Set {
		w.HeartbeatSeconds = ip(int(c.HeartbeatTimeout.Value / time.Second))
	}
	if c.HashPartitionExponent.Set {
		w.PartitionExponent = ip(c.HashPartitionExponent.Value)
	}
	if c.HashRingAlgorithm.Set {
		w.Algorithm = c.HashRingAlgorithm.Value
	}
	if c.MaxConcurrentDeploy.Set {
		w.MaxDeploy = ip(c.MaxConcurrentDeploy.Value)
	}
	if c.MaxConcurrentClean.Set {
		w.MaxClean = ip(c.MaxConcurrentClean.Value)
	}
	if c.MaxConcurrentPerConductorGroup.Set {
		w.PerGroup = bp(c.MaxConcurrentPerConductorGroup.Value)
	}
	return w
}

var loadCases = []struct {
	name  string
	files map[string]string
	args  []string // --config-file X / --config-dir X, relative to the temp dir
	want  want
}{
	{"kolla", map[string]string{"ironic.conf": kollaConf}, []string{"--config-file", "ironic.conf"},
		want{Connection: "mysql+pymysql://ironic:Kolla-DB-Pa$word@192.168.1.254:3306/ironic"}},
	{"openstack-ansible", map[string]string{"ironic.conf": osaConf}, []string{"--config-file", "ironic.conf"},
		want{Connection: "mysql+pymysql://ironic:osa-secret@172.29.236.100/ironic?charset=utf8&ssl_verify_cert=true",
			HeartbeatSeconds: ip(30), PartitionExponent: ip(7), Algorithm: "sha256"}},
	{"metal3", map[string]string{"ironic.conf": metal3Conf}, []string{"--config-file", "ironic.conf"},
		want{Connection: "sqlite:////var/lib/ironic/ironic.sqlite", HeartbeatSeconds: ip(120), Algorithm: "sha256"}},
	{"tricky", map[string]string{"ironic.conf": trickyConf}, []string{"--config-file", "ironic.conf"},
		want{Connection: "\"postgresql://ironic:p%40ss@db/ironic\" # not a comment",
			HeartbeatSeconds: ip(45), PartitionExponent: ip(8)}}, // the quotes do not wrap the whole value: they stay
	{"later files override", map[string]string{
		"ironic.conf":   kollaConf,
		"override.conf": "[conductor]\nheartbeat_timeout = 90\n[database]\nconnection = postgresql://o@db/ironic\n",
		"d/10-a.conf":   "[DEFAULT]\nhash_ring_algorithm = sha1\nhash_partition_exponent = 3\n",
		"d/20-b.conf":   "[DEFAULT]\nhash_ring_algorithm = blake2b\n",
		"d/30-c.txt":    "[DEFAULT]\nhash_ring_algorithm = ignored\n",
	}, []string{"--config-file", "ironic.conf", "--config-file", "override.conf", "--config-dir", "d"},
		want{Connection: "postgresql://o@db/ironic", HeartbeatSeconds: ip(90), PartitionExponent: ip(3), Algorithm: "blake2b"}},
	{"deprecated names", map[string]string{
		"a.conf": "[DEFAULT]\nsql_connection = postgresql://old@db/ironic\n",
		"b.conf": "[database]\nmax_pool_size = 5\n",
	}, []string{"--config-file", "a.conf", "--config-file", "b.conf"},
		want{Connection: "postgresql://old@db/ironic"}},
	{"later deprecated name beats earlier current name", map[string]string{
		"a.conf": "[database]\nconnection = postgresql://new@db/ironic\n",
		"b.conf": "[sql]\nconnection = postgresql://sql@db/ironic\n",
	}, []string{"--config-file", "a.conf", "--config-file", "b.conf"},
		want{Connection: "postgresql://sql@db/ironic"}},
	{"substitutions", map[string]string{
		"a.conf": "[DEFAULT]\nstate_path = /srv/$sub\nsub = ironic\n[conductor]\nheartbeat_timeout = ${conductor.base}0\nbase = 4\n[database]\nconnection = sqlite:///${state_path}/x$$y.db\n",
	}, []string{"--config-file", "a.conf"},
		want{Connection: "sqlite:////srv/ironic/x$y.db", HeartbeatSeconds: ip(40)}},
	{"nothing set", map[string]string{"a.conf": "[DEFAULT]\ndebug = true\n"}, []string{"--config-file", "a.conf"}, want{}},
	{"concurrency limits", map[string]string{
		"a.conf": "[conductor]\nmax_concurrent_deploy = 40\nmax_concurrent_clean = 8\nmax_concurrent_per_conductor_group = YES\n",
		"b.conf": "[conductor]\nmax_concurrent_clean = 9\n",
	}, []string{"--config-file", "a.conf", "--config-file", "b.conf"},
		want{MaxDeploy: ip(40), MaxClean: ip(9), PerGroup: bp(true)}},
	{"per group off", map[string]string{"a.conf": "[conductor]\nmax_concurrent_per_conductor_group = Off\n"},
		[]string{"--config-file", "a.conf"}, want{PerGroup: bp(false)}},
}

func load(t *testing.T, dir string, args []string) (*Config, error) {
	t.Helper()
	var files, dirs []string
	for i := 0; i < len(args); i += 2 {
		p := filepath.Join(dir, args[i+1])
		if args[i] == "--config-file" {
			files = append(files, p)
		} else {
			dirs = append(dirs, p)
		}
	}
	return Load(files, dirs)
}

func TestLoad(t *testing.T) {
	for _, tc := range loadCases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			writeFiles(t, dir, tc.files)
			c, err := load(t, dir, tc.args)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, toWant(c)); diff != "" {
				t.Errorf("options (-want +got):\n%s", diff)
			}
		})
	}
}

// osloScript loads the same files with oslo.config itself, with the four
// options registered as Ironic and oslo.db register them (their defaults
// replaced by None, so that "unset" shows), and prints them as JSON, or
// ERROR and the exception.
const osloScript = `
import json, sys
from oslo_config import cfg
c = cfg.ConfigOpts()
c.register_opts([cfg.IntOpt('hash_partition_exponent'), cfg.StrOpt('hash_ring_algorithm'),
                 cfg.StrOpt('state_path'), cfg.StrOpt('sub')])
c.register_opts([cfg.StrOpt('connection', deprecated_opts=[
    cfg.DeprecatedOpt('sql_connection', group='DEFAULT'),
    cfg.DeprecatedOpt('sql_connection', group='DATABASE'),
    cfg.DeprecatedOpt('connection', group='sql')])], group='database')
c.register_opts([cfg.IntOpt('heartbeat_timeout'), cfg.IntOpt('base'), cfg.IntOpt('max_concurrent_deploy', min=1),
                 cfg.IntOpt('max_concurrent_clean', min=1), cfg.BoolOpt('max_concurrent_per_conductor_group')],
                group='conductor')
try:
    c(sys.argv[1:], project='x', default_config_files=[], default_config_dirs=[])
    print(json.dumps({'connection': c.database.connection or '', 'heartbeat_timeout': c.conductor.heartbeat_timeout,
                      'hash_partition_exponent': c.hash_partition_exponent,
                      'hash_ring_algorithm': c.hash_ring_algorithm or '',
                      'max_concurrent_deploy': c.conductor.max_concurrent_deploy,
                      'max_concurrent_clean': c.conductor.max_concurrent_clean,
                      'max_concurrent_per_conductor_group': c.conductor.max_concurrent_per_conductor_group}))
except Exception as e:
    print('ERROR', type(e).__name__, e)
`

// TestAgainstOsloConfig loads every case with the real oslo.config
// (Debian's python3-oslo.config, which python3-ironic brings) and checks
// that it finds the same values.
func TestAgainstOsloConfig(t *testing.T) {
	for _, tc := range loadCases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			writeFiles(t, dir, tc.files)
			args := make([]string, len(tc.args))
			for i, a := range tc.args {
				if i%2 == 1 {
					a = filepath.Join(dir, a)
				}
				args[i] = a
			}
			testenv.Need(t, testenv.OsloConfig)
			py, err := testenv.Python()
			if err != nil {
				t.Fatal(err)
			}
			out, err := exec.Command(py, append([]string{"-c", osloScript}, args...)...).CombinedOutput()
			if err != nil {
				t.Fatalf("oslo.config (apt-get install python3-oslo.config): %v\n%s", err, out)
			}
			lines := strings.Split(strings.TrimSpace(string(out)), "\n")
			last := lines[len(lines)-1]
			var got want
			if err := json.Unmarshal([]byte(last), &got); err != nil {
				t.Fatalf("oslo.config: %s", out)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("oslo.config disagrees with the case (-case +oslo.config):\n%s", diff)
			}
		})
	}
}

func TestLoadErrors(t *testing.T) {
	for _, tc := range []struct {
		name, body, want string
	}{
		{"assignment before a section", "debug = 1\n[DEFAULT]\n", "a.conf:1: assignment before any [section]"},
		{"unclosed section", "[DEFAULT\n", "a.conf:1: section header without closing ']'"},
		{"empty section", "[]\n", "a.conf:1: empty section name"},
		{"leading continuation", "[DEFAULT]\n  x\n", "a.conf:2: unexpected continuation line"},
		{"no assignment", "[DEFAULT]\njust words\n", "a.conf:2: neither a section, a comment nor key = value"},
		{"empty key", "[DEFAULT]\n= 3\n", "a.conf:2: empty key"},
		{"not an integer", "[conductor]\nheartbeat_timeout = 1.5\n", `a.conf:2: [conductor] heartbeat_timeout: not an integer: "1.5"`},
		{"empty integer", "[DEFAULT]\nhash_partition_exponent =\n", "a.conf:2: [DEFAULT] hash_partition_exponent: empty value"},
		{"unknown substitution", "[database]\nconnection = mysql+pymysql://u:SECRET@h/$nosuch\n",
			`a.conf:2: [database] connection: substitution $nosuch: [DEFAULT] nosuch is set in no config file`},
		{"lone dollar", "[database]\nconnection = mysql+pymysql://u:SECRET$@h/ironic\n",
			`a.conf:2: [database] connection: a "$" that starts no substitution (write "$$" for a literal "$")`},
		{"substitution loop", "[DEFAULT]\na = $b\nb = $a\nhash_ring_algorithm = $a\n", "nest too deep"},
		{"empty connection", "[database]\nconnection =\n", "a.conf:2: [database] connection: empty value"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			writeFiles(t, dir, map[string]string{"a.conf": tc.body})
			_, err := Load([]string{filepath.Join(dir, "a.conf")}, nil)
			if err == nil {
				t.Fatalf("no error, want %q", tc.want)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q, want it to contain %q", err, tc.want)
			}
			if strings.Contains(err.Error(), "SECRET") {
				t.Errorf("error %q contains the password", err)
			}
			if !strings.HasPrefix(err.Error(), "ironic config "+filepath.Join(dir, "a.conf")) {
				t.Errorf("error %q does not start with the file", err)
			}
		})
	}
	dir := t.TempDir()
	if _, err := Load([]string{filepath.Join(dir, "missing.conf")}, nil); err == nil || !strings.Contains(err.Error(), "missing.conf") {
		t.Errorf("missing file: %v", err)
	}
	if _, err := Load(nil, []string{filepath.Join(dir, "missing.d")}); err == nil || !strings.Contains(err.Error(), "missing.d") {
		t.Errorf("missing directory: %v", err)
	}
	writeFiles(t, dir, map[string]string{"a.conf": "[DEFAULT]\n"})
	if _, err := Load(nil, []string{filepath.Join(dir, "a.conf")}); err == nil || !strings.Contains(err.Error(), "not a directory") {
		t.Errorf("file as a directory: %v", err)
	}
}

func TestWhere(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"ironic.conf": osaConf})
	c, err := Load([]string{filepath.Join(dir, "ironic.conf")}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := c.HeartbeatTimeout.Where(), "[conductor] heartbeat_timeout in "+filepath.Join(dir, "ironic.conf")+":12"; got != want {
		t.Errorf("Where() = %q, want %q", got, want)
	}
	if c.HeartbeatTimeout.Value != 30*time.Second {
		t.Errorf("heartbeat timeout %v", c.HeartbeatTimeout.Value)
	}
}

// TestLoadRingOptions reads the two other options that change Ironic's
// rings, as oslo.config would (the last file wins, values trimmed).
func TestLoadRingOptions(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{
		"a.conf": "[DEFAULT]\npin_release_version = 10.1\nhash_distribution_replicas = 3\n",
		"b.conf": "[DEFAULT]\npin_release_version =  11.0 \n",
	})
	c, err := Load([]string{filepath.Join(dir, "a.conf"), filepath.Join(dir, "b.conf")}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if c.PinReleaseVersion.Value != "11.0" || !c.PinReleaseVersion.Set || c.HashDistributionReplicas.Value != 3 {
		t.Errorf("pin %+v replicas %+v", c.PinReleaseVersion, c.HashDistributionReplicas)
	}
	writeFiles(t, dir, map[string]string{"c.conf": "[DEFAULT]\nhash_distribution_replicas = many\n"})
	if _, err := Load([]string{filepath.Join(dir, "c.conf")}, nil); err == nil || !strings.Contains(err.Error(), "hash_distribution_replicas") {
		t.Errorf("a non-integer replica count: %v", err)
	}
}

// TestDeprecatedConnection: a connection written under one of oslo.db's
// deprecated names is marked (oslo.db 15.0, 2024.1, removed them), one
// under [database]connection is not, whichever file wins.
func TestDeprecatedConnection(t *testing.T) {
	for _, tc := range []struct {
		files      map[string]string
		deprecated bool
	}{
		{map[string]string{"a.conf": "[DEFAULT]\nsql_connection = postgresql://old@db/ironic\n"}, true},
		{map[string]string{"a.conf": "[sql]\nconnection = postgresql://old@db/ironic\n"}, true},
		{map[string]string{"a.conf": "[database]\nconnection = postgresql://new@db/ironic\n[DEFAULT]\nsql_connection = postgresql://old@db/ironic\n"}, false},
	} {
		dir := t.TempDir()
		writeFiles(t, dir, tc.files)
		c, err := load(t, dir, []string{"--config-file", "a.conf"})
		if err != nil {
			t.Fatal(err)
		}
		if got := c.Connection.Deprecated(); got != tc.deprecated {
			t.Errorf("%q: Deprecated() %v, want %v", tc.files["a.conf"], got, tc.deprecated)
		}
		n, err := LoadNova([]string{filepath.Join(dir, "a.conf")}, nil)
		if err != nil {
			t.Fatal(err)
		}
		// No file sets [api_database]connection: where it is set, it is
		// through a deprecated name (Nova's api_db_opts are oslo.db's).
		if n.Connection.Deprecated() != tc.deprecated || n.APIConnection.Set && !n.APIConnection.Deprecated() {
			t.Errorf("%q: LoadNova's Deprecated() %v (api_database %v), want %v", tc.files["a.conf"], n.Connection.Deprecated(), n.APIConnection.Deprecated(), tc.deprecated)
		}
	}
}

// TestLoadBadBoolean: a value oslo.config's Boolean refuses is an error
// naming the option, as Ironic refuses to start with it.
func TestLoadBadBoolean(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"a.conf": "[conductor]\nmax_concurrent_per_conductor_group = maybe\n"})
	if _, err := Load([]string{filepath.Join(dir, "a.conf")}, nil); err == nil || !strings.Contains(err.Error(), "max_concurrent_per_conductor_group") {
		t.Errorf("a boolean that is not: %v", err)
	}
}

// TestLoadShutdownAndTakeoverOptions reads graceful_shutdown_timeout,
// periodic_max_workers and sync_local_state_interval (whole seconds where
// they are times), the last file winning.
func TestLoadShutdownAndTakeoverOptions(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{
		"a.conf": "[DEFAULT]\ngraceful_shutdown_timeout = 90\n[conductor]\nperiodic_max_workers = 4\nsync_local_state_interval = 20\n" +
			"conductor_cleanup_interval = 0\nconductor_cleanup_timeout = 600\n",
		"b.conf": "[DEFAULT]\ngraceful_shutdown_timeout = 0\n",
	})
	c, err := Load([]string{filepath.Join(dir, "a.conf")}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !c.GracefulShutdownTimeout.Set || c.GracefulShutdownTimeout.Value != 90*time.Second ||
		c.PeriodicMaxWorkers.Value != 4 || c.SyncLocalStateInterval.Value != 20*time.Second {
		t.Errorf("read %+v, %+v, %+v", c.GracefulShutdownTimeout, c.PeriodicMaxWorkers, c.SyncLocalStateInterval)
	}
	if !c.ConductorCleanupInterval.Set || c.ConductorCleanupInterval.Value != 0 || c.ConductorCleanupTimeout.Value != 10*time.Minute {
		t.Errorf("read %+v, %+v", c.ConductorCleanupInterval, c.ConductorCleanupTimeout)
	}
	if c, err = Load([]string{filepath.Join(dir, "a.conf"), filepath.Join(dir, "b.conf")}, nil); err != nil {
		t.Fatal(err)
	}
	if !c.GracefulShutdownTimeout.Set || c.GracefulShutdownTimeout.Value != 0 {
		t.Errorf("the last file's 0: %+v", c.GracefulShutdownTimeout)
	}
	if c, err = Load([]string{filepath.Join(dir, "b.conf")}, nil); err != nil || c.PeriodicMaxWorkers.Set || c.SyncLocalStateInterval.Set {
		t.Errorf("unset options read as set: %v %+v %+v", err, c.PeriodicMaxWorkers, c.SyncLocalStateInterval)
	}
}
