package novaconformance

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/internal/testenv"
	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/ironicconf"
)

// novaConfScript reads the files given with Nova's own options (nova.conf's
// CONF, every option Nova registers) and prints the five the exporter reads
// as JSON, null for an option left at its default so that "unset" shows.
const novaConfScript = `
import json, sys
import nova.conf
CONF = nova.conf.CONF
CONF(['--config-file=' + f for f in sys.argv[1:]], project='nova', default_config_files=[], default_config_dirs=[])
def given(group, name):
    opt = CONF._get_opt_info(name, group)['opt']
    v = CONF[group][name] if group else CONF[name]
    return None if v == opt.default else v
aliases = any(d.name == 'sql_connection' for d in CONF._get_opt_info('connection', 'database')['opt'].deprecated_opts)
print(json.dumps({'api_connection': given('api_database', 'connection'), 'connection': given('database', 'connection'),
                  'service_down_time': given(None, 'service_down_time'), 'report_interval': given(None, 'report_interval'),
                  'servicegroup_driver': given(None, 'servicegroup_driver'), 'aliases': aliases}))
`

// TestNovaConfOptions: ironicconf.LoadNova reads from nova.conf what Nova
// itself reads, on each release: the option names, oslo.db's deprecated
// names of [database]connection, later files winning. oslo.db 15.0
// (2024.1) removed the deprecated names, which LoadNova still reads (the
// release is not known before the database is read): there a value it
// reads through one is one Nova does not see, and its Place says so
// (ironicconf.Opt.Deprecated).
func TestNovaConfOptions(t *testing.T) {
	cases := []struct {
		name  string
		files []string
	}{
		{"all set", []string{"[DEFAULT]\nservice_down_time = 120\nreport_interval = 30\nservicegroup_driver = mc\n[api_database]\n" +
			"connection = mysql+pymysql://nova:secret@db/nova_api\n[database]\nconnection = mysql+pymysql://nova:secret@db/nova\n"}},
		// Nova's [api_database] options are a copy of oslo.db's [database]
		// ones, deprecated names included: [DEFAULT]sql_connection sets both.
		{"deprecated name", []string{"[DEFAULT]\nsql_connection = postgresql://nova@db/nova\n"}},
		{"deprecated and new", []string{"[sql]\nconnection = postgresql://nova@db/old\n[api_database]\nconnection = postgresql://nova@db/nova_api\n"}},
		{"later file wins", []string{"[DEFAULT]\nreport_interval = 5\n[api_database]\nconnection = sqlite:///a\n",
			"[DEFAULT]\nreport_interval = 7\n[api_database]\nconnection = sqlite:///b\n"}},
		{"none", []string{"[ironic]\npeer_list = a,b\n"}},
	}
	type answer struct {
		APIConnection   *string `json:"api_connection"`
		Connection      *string `json:"connection"`
		ServiceDownTime *int    `json:"service_down_time"`
		ReportInterval  *int    `json:"report_interval"`
		Servicegroup    *string `json:"servicegroup_driver"`
		Aliases         bool    `json:"aliases"`
	}
	for _, suite := range testenv.NovaSuites() {
		t.Run(suite, func(t *testing.T) {
			testenv.Need(t, testenv.NovaChroot(suite))
			root := testenv.NovaChrootDir(suite)
			dir, err := os.MkdirTemp(filepath.Join(root, "tmp"), "novaconf")
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = os.RemoveAll(dir) }()
			inside := "/tmp/" + filepath.Base(dir)
			for _, tc := range cases {
				t.Run(tc.name, func(t *testing.T) {
					var paths, args []string
					for i, body := range tc.files {
						name := tc.name + string(rune('a'+i)) + ".conf"
						if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
							t.Fatal(err)
						}
						paths, args = append(paths, filepath.Join(dir, name)), append(args, inside+"/"+name)
					}
					cmd := testenv.Chroot(root, append([]string{"/usr/bin/python3", "-c", novaConfScript}, args...)...)
					var stderr strings.Builder
					cmd.Stderr = &stderr
					out, err := cmd.Output()
					if err != nil {
						t.Fatalf("Nova's CONF: %v\n%s", err, stderr.String())
					}
					lines := strings.Split(strings.TrimSpace(string(out)), "\n")
					var nova answer
					if err := json.Unmarshal([]byte(lines[len(lines)-1]), &nova); err != nil {
						t.Fatalf("Nova's CONF: %s", out)
					}
					c, err := ironicconf.LoadNova(paths, nil)
					if err != nil {
						t.Fatal(err)
					}
					str := func(o ironicconf.Opt[string]) *string {
						if !o.Set || o.Deprecated() && !nova.Aliases {
							return nil
						}
						return &o.Value
					}
					num := func(o ironicconf.Opt[int]) *int {
						if !o.Set {
							return nil
						}
						return &o.Value
					}
					ours := answer{str(c.APIConnection), str(c.Connection), num(c.ServiceDownTime), num(c.ReportInterval),
						str(c.ServicegroupDriver), nova.Aliases}
					if diff := cmp.Diff(nova, ours); diff != "" {
						t.Errorf("(-Nova +LoadNova):\n%s", diff)
					}
				})
			}
		})
	}
}
