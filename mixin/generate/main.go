// Command generate writes every monitoring file the project generates, each
// after the files it is made from:
//
//  1. dashboards/*.json, from the Go of package dashboards;
//  2. what the mixin renders with its default _config (mixin.Files):
//     alerts/ironic-conductor-exporter.rules.yml and the Kolla-Ansible and
//     Kayobe rules, scrape snippets and dashboards of deploy/kolla/;
//  3. the PrometheusRule of deploy/kubernetes/components/prometheus-rules,
//     from the rule files of alerts/;
//  4. the Helm chart's copies of the rule file, the dashboards and the
//     read-only users' scripts of deploy/sql/
//     (helm.Files).
//
// Copies of a dashboard that no longer exists are removed. It is the one
// generator of these files: run it with `go generate ./mixin`. The tests of
// dashboards/, mixin/ and deploy/ fail when a committed file differs from
// what it writes.
package main

import (
	"fmt"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"

	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/dashboards"
	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/deploy"
	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/deploy/helm"
	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/internal/testenv"
	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/mixin"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "generate:", err)
		os.Exit(1)
	}
}

// writer writes files under root and remembers which.
type writer struct {
	root    string
	written map[string]bool
}

// write writes data to p (relative to the root).
func (w *writer) write(p string, data []byte) error {
	full := filepath.Join(w.root, p)
	if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
		return fmt.Errorf("writing %s: %w", p, err)
	}
	if err := os.WriteFile(full, data, 0o644); err != nil {
		return fmt.Errorf("writing %s: %w", p, err)
	}
	w.written[full] = true
	return nil
}

// writeAll writes files.
func (w *writer) writeAll(files []mixin.File) error {
	for _, f := range files {
		if err := w.write(f.Path, f.Data); err != nil {
			return err
		}
	}
	return nil
}

// prune removes the files matching pattern (relative to the root) that
// this run did not write: copies of a dashboard that no longer exists.
func (w *writer) prune(pattern string) error {
	old, err := filepath.Glob(filepath.Join(w.root, pattern))
	if err != nil {
		return fmt.Errorf("listing %s: %w", pattern, err)
	}
	for _, p := range old {
		if !w.written[p] {
			if err := os.Remove(p); err != nil {
				return fmt.Errorf("removing a stale copy: %w", err)
			}
		}
	}
	return nil
}

func run() error {
	root, err := testenv.ModuleRoot()
	if err != nil {
		return err
	}
	w := &writer{root: root, written: map[string]bool{}}

	// 1. The dashboards: the mixin and the chart copy their JSON.
	boards, err := dashboards.Generate()
	if err != nil {
		return fmt.Errorf("generating the dashboards: %w", err)
	}
	for _, name := range slices.Sorted(maps.Keys(boards)) {
		if err := w.write(path.Join(helm.DashboardsDir, name), boards[name]); err != nil {
			return err
		}
	}
	// Before anything copies them.
	if err := w.prune(path.Join(helm.DashboardsDir, "*.json")); err != nil {
		return err
	}

	// 2. The mixin's files, among them the rule file of alerts/.
	files, err := mixin.Files(root)
	if err != nil {
		return fmt.Errorf("rendering the mixin: %w", err)
	}
	if err := w.writeAll(files); err != nil {
		return err
	}
	if err := w.prune(path.Join(mixin.KollaDashboardsDir, "*")); err != nil {
		return err
	}

	// 3. The PrometheusRule follows the rule files just written.
	pr, err := deploy.RenderPrometheusRule(filepath.Join(root, deploy.AlertsDir))
	if err != nil {
		return fmt.Errorf("rendering the PrometheusRule: %w", err)
	}
	if err := w.write(deploy.PrometheusRulePath, pr); err != nil {
		return err
	}

	// 4. The Helm chart's copies.
	copies, err := helm.Files(root)
	if err != nil {
		return fmt.Errorf("rendering the chart's copies: %w", err)
	}
	if err := w.writeAll(copies); err != nil {
		return err
	}
	if err := w.prune(path.Join(helm.SQLCopyDir, "*")); err != nil {
		return err
	}
	return w.prune(path.Join(helm.DashboardsCopyDir, "*"))
}
