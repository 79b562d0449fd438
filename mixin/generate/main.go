// Command generate writes the files rendered from the mixin with its
// default _config: alerts/ironic-conductor-exporter.rules.yml, the Kolla
// rules file, scrape snippet and dashboards of deploy/kolla/, and the
// PrometheusRule of deploy/kubernetes/components/prometheus-rules (from the
// rule file, as `go generate ./deploy` does). Run it with `go generate
// ./mixin`.
package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/deploy"
	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/mixin"
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
	files, err := mixin.Files(root)
	if err != nil {
		return err
	}
	for _, f := range files {
		p := filepath.Join(root, f.Path)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, f.Data, 0o644); err != nil {
			return err
		}
	}
	// The PrometheusRule follows the rule file just written.
	pr, err := deploy.RenderPrometheusRule(filepath.Join(root, deploy.AlertsDir))
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(root, deploy.PrometheusRulePath), pr, 0o644)
}
