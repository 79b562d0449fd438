package deploy

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/chartutil"
	"sigs.k8s.io/yaml"
)

// TestImageNamedEverywhere: the chart and every kustomization that runs the
// exporter name the image a release publishes: goreleaser's image, tagged
// "v" + the chart's appVersion (goreleaser's "v{{ .Version }}" tag).
func TestImageNamedEverywhere(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(root, ".goreleaser.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var gr struct {
		DockersV2 []struct {
			Images []string `json:"images"`
			Tags   []string `json:"tags"`
		} `json:"dockers_v2"`
	}
	if err := yaml.Unmarshal(b, &gr); err != nil {
		t.Fatal(err)
	}
	if len(gr.DockersV2) != 1 || len(gr.DockersV2[0].Images) != 1 {
		t.Fatalf("want one dockers_v2 image, got %+v", gr.DockersV2)
	}
	repo := gr.DockersV2[0].Images[0]
	if !strings.Contains(strings.Join(gr.DockersV2[0].Tags, " "), "v{{ .Version }}") {
		t.Errorf("goreleaser tags %v: no v{{ .Version }}", gr.DockersV2[0].Tags)
	}
	ch := loadChart(t)
	tag := "v" + ch.Metadata.AppVersion
	want := repo + ":" + tag
	r := renderProfile(t, helmProfiles[0])
	if got := r.deployments[0].Spec.Template.Spec.Containers[0].Image; got != want {
		t.Errorf("chart image %s, want %s", got, want)
	}
	if v, err := chartutil.ReadValuesFile(filepath.Join(chartDir(), "values.yaml")); err != nil {
		t.Fatal(err)
	} else if img, _ := v["image"].(map[string]any); img["repository"] != repo {
		t.Errorf("values image.repository %v, want %s", img["repository"], repo)
	}
	for name, b := range overlays(t) {
		for _, d := range b.deployments {
			c := container(t, &d.Spec.Template.Spec, exporterContainer)
			if c.Image != want {
				t.Errorf("overlay %s: image %s, want %s", name, c.Image, want)
			}
		}
	}
	base := kustomizeBuild(t, filepath.Join(kubeDir(), "base"))
	if !strings.Contains(string(base), "image: "+want+"\n") {
		t.Errorf("base: image is not %s", want)
	}
}
