// Command gen-prometheusrule writes the PrometheusRule of
// deploy/kubernetes/components/prometheus-rules from the Prometheus rule files
// in alerts/. Run it as `go generate ./deploy` (or `go run
// ./deploy/cmd/gen-prometheusrule`) from anywhere in the repository; -check
// only reports whether the file is up to date.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/deploy"
)

func main() { os.Exit(run()) }

func run() int {
	check := flag.Bool("check", false, "exit 1 if the PrometheusRule differs from what alerts/ generates, write nothing")
	flag.Parse()
	wd, err := os.Getwd()
	if err == nil {
		wd, err = deploy.FindRepoRoot(wd)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "gen-prometheusrule:", err)
		return 1
	}
	want, err := deploy.RenderPrometheusRule(filepath.Join(wd, deploy.AlertsDir))
	if err != nil {
		fmt.Fprintln(os.Stderr, "gen-prometheusrule:", err)
		return 1
	}
	out := filepath.Join(wd, deploy.PrometheusRulePath)
	have, _ := os.ReadFile(out)
	if bytes.Equal(have, want) {
		return 0
	}
	if *check {
		fmt.Fprintf(os.Stderr, "gen-prometheusrule: %s is out of date: run go generate ./deploy\n", deploy.PrometheusRulePath)
		return 1
	}
	if err := os.WriteFile(out, want, 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "gen-prometheusrule:", err)
		return 1
	}
	fmt.Println("wrote", deploy.PrometheusRulePath)
	return 0
}
