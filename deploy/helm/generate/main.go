// Command generate writes the chart's copies of the rule file and the
// dashboards (helm.Files) and removes copies of dashboards that no longer
// exist. Run it with `go generate ./deploy/helm`.
package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/deploy"
	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/deploy/helm"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "generate:", err)
		os.Exit(1)
	}
}

func run() error {
	root, err := deploy.FindRepoRoot(".")
	if err != nil {
		return err
	}
	files, err := helm.Files(root)
	if err != nil {
		return err
	}
	keep := map[string]bool{}
	for _, f := range files {
		p := filepath.Join(root, f.Path)
		keep[p] = true
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, f.Data, 0o644); err != nil {
			return err
		}
	}
	old, err := filepath.Glob(filepath.Join(root, helm.DashboardsCopyDir, "*"))
	if err != nil {
		return err
	}
	for _, p := range old {
		if !keep[p] {
			if err := os.Remove(p); err != nil {
				return err
			}
		}
	}
	return nil
}
