package deploy

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// The Containerfile is read here for what a run of the image cannot show
// (the exec form of its ENTRYPOINT, the port it documents); podman_test.go
// builds and runs it.

const containerfilePath = "deploy/container/Containerfile"

// logicalLines joins backslash-continued lines and drops comments.
func logicalLines(text string) []string {
	var out []string
	cur := ""
	for _, l := range strings.Split(text, "\n") {
		t := strings.TrimSpace(l)
		if cur == "" && (t == "" || strings.HasPrefix(t, "#")) {
			continue
		}
		if strings.HasSuffix(t, `\`) {
			cur += strings.TrimSuffix(t, `\`) + " "
			continue
		}
		out = append(out, strings.TrimSpace(cur+t))
		cur = ""
	}
	if cur != "" {
		out = append(out, strings.TrimSpace(cur))
	}
	return out
}

type instruction struct {
	cmd  string // upper case
	args string
}

func containerfile(t *testing.T) []instruction {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, containerfilePath))
	if err != nil {
		t.Fatal(err)
	}
	var ins []instruction
	for _, l := range logicalLines(string(b)) {
		cmd, args, _ := strings.Cut(l, " ")
		ins = append(ins, instruction{strings.ToUpper(cmd), strings.TrimSpace(args)})
	}
	return ins
}

func TestContainerfileRuntime(t *testing.T) {
	ins := containerfile(t)
	var final []instruction
	for i, in := range ins {
		if in.cmd == "FROM" {
			final = ins[i:]
		}
	}
	var user, expose, copied string
	var entrypoint []string
	for _, in := range final {
		switch in.cmd {
		case "USER":
			user = in.args
		case "EXPOSE":
			expose = in.args
		case "FROM":
			if in.args != "scratch" {
				t.Errorf("FROM %s: the base is made here (rootfs.tar), from no registry", in.args)
			}
		case "COPY":
			f := strings.Fields(in.args)
			if len(f) == 2 && f[0] == "$TARGETPLATFORM/ironic_conductor_exporter" {
				copied = f[1]
			}
		case "ENTRYPOINT":
			if err := json.Unmarshal([]byte(in.args), &entrypoint); err != nil {
				t.Errorf("ENTRYPOINT %s: want the exec (JSON) form: %v", in.args, err)
			}
		case "RUN":
			t.Errorf("RUN in the final stage: the image has no shell")
		}
	}
	if u, _, _ := strings.Cut(user, ":"); u != "65532" {
		t.Errorf("USER %q: want the numeric 65532 (runAsNonRoot can only verify a numeric user)", user)
	}
	if want := defaultPort(t); strings.Fields(expose)[0] != want {
		t.Errorf("EXPOSE %q, the exporter listens on %s by default", expose, want)
	}
	if copied == "" || len(entrypoint) != 1 || entrypoint[0] != copied {
		t.Errorf("ENTRYPOINT %v does not run the copied binary %q", entrypoint, copied)
	}
}

// defaultPort is the port of kingpinflag.AddFlags' default address in main.go.
func defaultPort(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, "cmd", "ironic_conductor_exporter", "main.go"))
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`kingpinflag\.AddFlags\(app, ":"\+defaultPort\)`).Match(b) {
		t.Fatal("main.go: kingpinflag.AddFlags does not listen on defaultPort")
	}
	m := regexp.MustCompile(`defaultPort += "(\d+)"`).FindSubmatch(b)
	if m == nil {
		t.Fatal("main.go: default listen address not found")
	}
	return string(m[1])
}
