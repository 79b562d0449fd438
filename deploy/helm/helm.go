// Package helm keeps the Helm chart of deploy/helm/ironic-conductor-exporter
// in step with the files it copies: Helm reads nothing outside the chart
// directory, so the chart holds the mixin's rule file
// (alerts/ironic-conductor-exporter.rules.yml), the dashboards of
// dashboards/ and the read-only users' scripts of deploy/sql/ (its dbInit
// Job runs them) under files/. `go generate ./mixin` writes them after
// their sources (deploy/sql/ after `go generate ./db ./novadb`), and
// deploy/helmchart_test.go fails when a copy differs from its source.
package helm

import (
	"fmt"
	"os"
	"path"
	"path/filepath"

	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/mixin"
)

// Paths relative to the repository root.
const (
	// ChartDir is the chart.
	ChartDir = "deploy/helm/ironic-conductor-exporter"
	// RulesCopy is the chart's copy of mixin.RulesPath, read by the
	// PrometheusRule template with .Files.Get.
	RulesCopy = ChartDir + "/files/ironic-conductor-exporter.rules.yml"
	// DashboardsCopyDir holds the chart's copies of dashboards/*.json.
	DashboardsCopyDir = ChartDir + "/files/dashboards"
	// DashboardsDir holds the generated dashboards.
	DashboardsDir = "dashboards"
	// SQLDir holds the read-only users' scripts (db.GrantSQL,
	// novadb.GrantSQL).
	SQLDir = "deploy/sql"
	// SQLCopyDir holds the chart's copies of deploy/sql/*.sql, read by the
	// dbInit Job's template with .Files.Get.
	SQLCopyDir = ChartDir + "/files/sql"
)

// Files renders the chart's copies from the repository at root: the rule
// file as the mixin renders it with its default _config (not read from
// alerts/, so the copy never lags the mixin), and every dashboards/*.json
// and deploy/sql/*.sql as it is.
func Files(root string) ([]mixin.File, error) {
	r, err := mixin.Render(root, "")
	if err != nil {
		return nil, fmt.Errorf("rendering the mixin: %w", err)
	}
	rules, err := r.RulesYAML()
	if err != nil {
		return nil, fmt.Errorf("rendering the rule file: %w", err)
	}
	files := []mixin.File{{Path: RulesCopy, Data: rules}}
	dashboards, err := filepath.Glob(filepath.Join(root, DashboardsDir, "*.json"))
	if err != nil {
		return nil, err
	}
	if len(dashboards) == 0 {
		return nil, fmt.Errorf("no dashboard in %s", filepath.Join(root, DashboardsDir))
	}
	for _, d := range dashboards {
		b, err := os.ReadFile(d)
		if err != nil {
			return nil, fmt.Errorf("reading a dashboard: %w", err)
		}
		files = append(files, mixin.File{Path: path.Join(DashboardsCopyDir, filepath.Base(d)), Data: b})
	}
	scripts, err := filepath.Glob(filepath.Join(root, SQLDir, "*.sql"))
	if err != nil {
		return nil, err
	}
	if len(scripts) == 0 {
		return nil, fmt.Errorf("no script in %s", filepath.Join(root, SQLDir))
	}
	for _, s := range scripts {
		b, err := os.ReadFile(s)
		if err != nil {
			return nil, fmt.Errorf("reading a read-only user's script: %w", err)
		}
		files = append(files, mixin.File{Path: path.Join(SQLCopyDir, filepath.Base(s)), Data: b})
	}
	return files, nil
}
