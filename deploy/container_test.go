package deploy

import (
	"debug/elf"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// No container engine runs where the tests run, so the Containerfile is
// checked by reading it: it must build what `make build` builds (the same
// package, CGO_ENABLED=0, -trimpath, -s -w and the same -X version
// variables), on the Go release go.mod names, into a minimal image that runs
// as 65532 and exposes the exporter's default port.

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

// goBuild is what a go build command line sets.
type goBuild struct {
	cgoDisabled bool
	trimpath    bool
	ldflags     []string // fields of -ldflags
	output      string
	pkg         string
}

var ldflagsRe = regexp.MustCompile(`-ldflags\s+(?:'([^']*)'|"([^"]*)")`)

func parseGoBuild(t *testing.T, line string) goBuild {
	t.Helper()
	var b goBuild
	b.cgoDisabled = regexp.MustCompile(`(^|[\s;&])CGO_ENABLED=0\s`).MatchString(line)
	m := ldflagsRe.FindStringSubmatch(line)
	if m == nil {
		t.Fatalf("no quoted -ldflags in %q", line)
	}
	b.ldflags = strings.Fields(m[1] + m[2])
	rest := strings.Fields(strings.Replace(line, m[0], "", 1))
	i := slices.Index(rest, "build")
	if i < 1 || rest[i-1] != "go" && !strings.HasSuffix(rest[i-1], ")") {
		t.Fatalf("no go build in %q", line)
	}
	for j := i + 1; j < len(rest); j++ {
		switch a := rest[j]; {
		case a == "-trimpath":
			b.trimpath = true
		case a == "-o" && j+1 < len(rest):
			b.output = rest[j+1]
			j++
		case strings.HasPrefix(a, "./"):
			b.pkg = a
		}
	}
	return b
}

// xVars maps -X variable names to their values.
func xVars(t *testing.T, ldflags []string) map[string]string {
	t.Helper()
	vars := map[string]string{}
	for i := 0; i < len(ldflags); i++ {
		if ldflags[i] == "-X" && i+1 < len(ldflags) {
			k, v, _ := strings.Cut(ldflags[i+1], "=")
			vars[k] = v
			i++
		}
	}
	return vars
}

// makefileBuild reads the `build` target and LDFLAGS of the Makefile.
func makefileBuild(t *testing.T) (goBuild, string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	lines := logicalLines(string(b))
	vars := map[string]string{}
	var recipe string
	for i, l := range lines {
		if m := regexp.MustCompile(`^([A-Z_]+)\s*[:?]?=\s*(.*)$`).FindStringSubmatch(l); m != nil {
			vars[m[1]] = m[2]
		}
		if l == "build:" && i+1 < len(lines) {
			recipe = lines[i+1]
		}
	}
	if recipe == "" || vars["LDFLAGS"] == "" || vars["BIN"] == "" {
		t.Fatal("Makefile: no build target, LDFLAGS or BIN")
	}
	recipe = strings.ReplaceAll(recipe, "$(LDFLAGS)", vars["LDFLAGS"])
	recipe = strings.ReplaceAll(recipe, "$(GO)", "go")
	return parseGoBuild(t, recipe), vars["BIN"]
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

func TestContainerfileBuildsLikeMakefile(t *testing.T) {
	mk, bin := makefileBuild(t)
	ins := containerfile(t)

	var run *goBuild
	var stages []string
	args := map[string]string{}
	for _, in := range ins {
		switch in.cmd {
		case "ARG":
			k, v, _ := strings.Cut(in.args, "=")
			args[k] = v
		case "FROM":
			stages = append(stages, in.args)
		case "RUN":
			if strings.Contains(in.args, "go build") {
				if run != nil {
					t.Fatal("two go build steps")
				}
				b := parseGoBuild(t, in.args)
				run = &b
			}
		}
	}
	if run == nil {
		t.Fatal("no go build step")
	}
	if !mk.cgoDisabled || !run.cgoDisabled {
		t.Errorf("CGO_ENABLED=0: Makefile %v, Containerfile %v", mk.cgoDisabled, run.cgoDisabled)
	}
	if !mk.trimpath || !run.trimpath {
		t.Errorf("-trimpath: Makefile %v, Containerfile %v", mk.trimpath, run.trimpath)
	}
	if mk.pkg == "" || run.pkg != mk.pkg {
		t.Errorf("package: Makefile %q, Containerfile %q", mk.pkg, run.pkg)
	}
	if filepath.Base(run.output) != bin {
		t.Errorf("binary %q, the Makefile builds %q", filepath.Base(run.output), bin)
	}
	// The same linker flags: -s -w and the same -X variables.
	strip := func(f []string) []string {
		return slices.DeleteFunc(slices.Clone(f), func(s string) bool { return s != "-s" && s != "-w" })
	}
	if !slices.Equal(strip(mk.ldflags), []string{"-s", "-w"}) || !slices.Equal(strip(run.ldflags), strip(mk.ldflags)) {
		t.Errorf("-s -w: Makefile %v, Containerfile %v", strip(mk.ldflags), strip(run.ldflags))
	}
	mkX, runX := xVars(t, mk.ldflags), xVars(t, run.ldflags)
	if len(mkX) == 0 {
		t.Fatal("no -X in the Makefile's LDFLAGS")
	}
	for k := range mkX {
		v, ok := runX[k]
		if !ok {
			t.Errorf("-X %s missing from the Containerfile", k)
			continue
		}
		// Each value is a build argument, never a literal.
		if !regexp.MustCompile(`^\$\{?[A-Z_]+\}?$`).MatchString(v) {
			t.Errorf("-X %s=%s: want a build argument", k, v)
		} else if name := strings.Trim(v, "${}"); !hasKey(args, name) {
			t.Errorf("-X %s=%s: no ARG %s", k, v, name)
		}
	}
	for k := range runX {
		if _, ok := mkX[k]; !ok {
			t.Errorf("-X %s is not in the Makefile", k)
		}
	}

	// Builder on the Go release of go.mod; a minimal final image.
	if len(stages) != 2 {
		t.Fatalf("%d stages, want build and final", len(stages))
	}
	builder := strings.Fields(stages[0])
	goVer := strings.ReplaceAll(builder[0], "${GO_VERSION}", args["GO_VERSION"])
	if !strings.HasPrefix(goVer, "docker.io/library/golang:") || len(builder) != 3 || builder[1] != "AS" {
		t.Errorf("builder stage %q: want golang:<version> AS <name>", stages[0])
	}
	if want := goModRelease(t); strings.TrimPrefix(goVer, "docker.io/library/golang:") != want {
		t.Errorf("builder %s, go.mod asks for Go %s", goVer, want)
	}
	final := strings.Fields(stages[1])[0]
	if final != "gcr.io/distroless/static-debian12:nonroot" && final != "scratch" {
		t.Errorf("final image %s: want distroless static nonroot (or scratch)", final)
	}
}

func hasKey(m map[string]string, k string) bool { _, ok := m[k]; return ok }

// goModRelease is the major.minor of go.mod's go directive.
func goModRelease(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^go (\d+\.\d+)`).FindSubmatch(b)
	if m == nil {
		t.Fatal("go.mod: no go directive")
	}
	return string(m[1])
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
		case "COPY":
			f := strings.Fields(in.args)
			if len(f) == 3 && strings.HasPrefix(f[0], "--from=") {
				copied = f[2]
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
	if want := defaultPort(t); expose != want {
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

// TestContainerfileGoBuildRuns runs the Containerfile's build step itself
// (without the cache mounts, into a temporary directory) with made-up build
// arguments: it must build, produce a static binary, and stamp the version
// the arguments name.
func TestContainerfileGoBuildRuns(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	var step string
	for _, in := range containerfile(t) {
		if in.cmd == "RUN" && strings.Contains(in.args, "go build") {
			step = in.args
		}
	}
	var kept []string
	for _, f := range strings.Fields(step) {
		if !strings.HasPrefix(f, "--mount=") {
			kept = append(kept, f)
		}
	}
	step = strings.Join(kept, " ")
	out := t.TempDir()
	step = strings.ReplaceAll(step, "/out/", out+"/")
	cmd := exec.Command("sh", "-ec", step)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "VERSION=9.8.7-test", "REVISION=0123abc", "BRANCH=test-branch",
		"BUILD_USER=tester@container", "BUILD_DATE=")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build step: %v\n%s", err, b)
	}
	bin := filepath.Join(out, "ironic_conductor_exporter")
	f, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			t.Error("the binary has a dynamic loader: not static")
		}
	}
	if libs, _ := f.ImportedLibraries(); len(libs) > 0 {
		t.Errorf("the binary links %v", libs)
	}
	if f.Section(".symtab") != nil {
		t.Error("symbol table present: -s did not apply")
	}
	v, err := exec.Command(bin, "--version").CombinedOutput()
	if err != nil {
		t.Fatalf("--version: %v\n%s", err, v)
	}
	for _, want := range []string{"version 9.8.7-test", "branch: test-branch", "revision: 0123abc", "build user:       tester@container"} {
		if !strings.Contains(string(v), want) {
			t.Errorf("--version lacks %q:\n%s", want, v)
		}
	}
	if regexp.MustCompile(`build date:\s*\n`).Match(v) {
		t.Errorf("empty build date:\n%s", v)
	}
}
