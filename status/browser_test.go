package status

import (
	"context"
	"errors"
	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/internal/testenv"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/db"
)

// TestInChromium drives the page in headless Chromium (Debian chromium): it
// loads the page, types a node name into the lookup box, submits, reads the
// conductor from the result, and takes a screenshot. Set
// ICE_SCREENSHOT_DIR to keep the screenshots.
func TestInChromium(t *testing.T) {
	testenv.Need(t, testenv.Chromium)
	browser, err := exec.LookPath("chromium")
	if err != nil {
		t.Fatal("chromium not found: install Debian's chromium package (.ci/run does)")
	}
	srv := httptest.NewServer(newHandler(t, &source{snap: testSnapshot()}))
	defer srv.Close()

	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(browser),
		chromedp.NoSandbox, chromedp.Flag("disable-gpu", true), chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true), chromedp.UserDataDir(t.TempDir()), chromedp.WindowSize(1280, 900))
	actx, cancel := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancel()
	ctx, cancel := chromedp.NewContext(actx)
	defer cancel()
	ctx, cancel = context.WithTimeout(ctx, 60*time.Second)
	defer cancel()

	step := func(what string, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("chromium: %s: %v", what, err)
		}
	}
	step("loading the page", chromedp.Do(ctx, chromedp.Navigate(srv.URL+"/"), chromedp.WaitVisible(chromedp.CSS("#conductors"))))
	title, err := chromedp.Run(ctx, chromedp.Title())
	step("title", err)
	label, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(`label[for="node"]`)))
	step("label", err)
	overview, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	step("screenshot", err)
	step("looking up web-1", chromedp.Do(ctx,
		chromedp.SendKeys(chromedp.CSS("#node"), "web-1"),
		chromedp.Click(chromedp.CSS(`form[role="search"] button`)),
		chromedp.WaitVisible(chromedp.CSS("#lookup-conductor"))))
	conductor, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS("#lookup-conductor")))
	step("reading the result", err)
	result, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	step("screenshot", err)
	if title != "Ironic conductors" {
		t.Errorf("title %q", title)
	}
	if strings.TrimSpace(label) == "" {
		t.Error("the lookup box has no label")
	}
	if conductor != "cond-a.example.com:6385" {
		t.Errorf("lookup of web-1 shows conductor %q, want cond-a.example.com:6385", conductor)
	}
	for name, png := range map[string][]byte{"status-overview.png": overview, "status-lookup.png": result} {
		if len(png) < 1000 {
			t.Errorf("%s: screenshot of %d bytes", name, len(png))
		}
		if dir := os.Getenv("ICE_SCREENSHOT_DIR"); dir != "" {
			if err := os.WriteFile(filepath.Join(dir, name), png, 0o644); err != nil {
				t.Error(err)
			}
		}
	}
}

// TestScreenshotsInChromium renders the healthy, degraded and stale cases in
// headless Chromium, reads the key facts from the DOM (the summary's colour
// and problems, a conductor page reached by clicking its hostname, the
// affinity of a lookup) and keeps the screenshots in ICE_SCREENSHOT_DIR.
func TestScreenshotsInChromium(t *testing.T) {
	testenv.Need(t, testenv.Chromium)
	browser, err := exec.LookPath("chromium")
	if err != nil {
		t.Fatal("chromium not found: install Debian's chromium package (.ci/run does)")
	}
	healthy := &db.Snapshot{Backend: db.BackendPostgreSQL, Conductors: testSnapshot().Conductors[:1], Nodes: testSnapshot().Nodes[:1]}
	degraded := &source{snap: degradedSnapshot()}
	stale := &source{snap: degradedSnapshot()}
	healthySrv := httptest.NewServer(newHandler(t, &source{snap: healthy}))
	defer healthySrv.Close()
	degradedSrv := httptest.NewServer(newHistoryHandler(t, degraded, 0).h)
	defer degradedSrv.Close()
	staleHandler := newHandler(t, stale)
	staleSrv := httptest.NewServer(staleHandler)
	defer staleSrv.Close()
	get(t, staleHandler, "/")
	stale.mu.Lock()
	stale.snap, stale.err = nil, errors.New("dial tcp 10.0.0.5:5432: connect: connection refused")
	stale.mu.Unlock()

	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(browser),
		chromedp.NoSandbox, chromedp.Flag("disable-gpu", true), chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true), chromedp.UserDataDir(t.TempDir()), chromedp.WindowSize(1280, 900))
	actx, cancel := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancel()
	ctx, cancel := chromedp.NewContext(actx)
	defer cancel()
	ctx, cancel = context.WithTimeout(ctx, 90*time.Second)
	defer cancel()
	step := func(what string, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("chromium: %s: %v", what, err)
		}
	}
	shots := map[string][]byte{}
	shoot := func(name string) {
		t.Helper()
		png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
		step("screenshot "+name, err)
		shots[name] = png
	}
	summaryOf := func(url string) (class, text string) {
		t.Helper()
		// ?refresh=off: a meta refresh must not reload the page under the test.
		step("loading "+url, chromedp.Do(ctx, chromedp.Navigate(url+"/?refresh=off"), chromedp.WaitVisible(chromedp.CSS("#summary"))))
		attr, err := chromedp.Run(ctx, chromedp.AttributeValue(chromedp.CSS("#summary"), "class"))
		step("summary class", err)
		class = attr.Value
		text, err = chromedp.Run(ctx, chromedp.Text(chromedp.CSS("#summary")))
		step("summary text", err)
		return class, text
	}

	if class, text := summaryOf(healthySrv.URL); class != "banner summary ok" || !strings.Contains(text, "All clear") {
		t.Errorf("healthy: summary %q %q", class, text)
	}
	shoot("status-healthy.png")

	class, text := summaryOf(degradedSrv.URL)
	if class != "banner summary bad" || !strings.Contains(text, "1 conductor(s) dead") ||
		!strings.Contains(text, "2 node(s) with boot files on a conductor that is not running") {
		t.Errorf("degraded: summary %q %q", class, text)
	}
	first, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS("#conductors tbody tr:first-child th")))
	step("first conductor row", err)
	if first != "cond-b" {
		t.Errorf("degraded: first conductor row %q, want the dead cond-b", first)
	}
	shoot("status-degraded.png")
	step("clicking cond-b", chromedp.Do(ctx, chromedp.Click(chromedp.CSS("#conductors tbody tr:first-child th a")),
		chromedp.WaitVisible(chromedp.CSS("#c-state"))))
	state, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS("#c-state")))
	step("conductor state", err)
	prepared, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS("#c-prepared")))
	step("prepared nodes", err)
	if state != "dead" || !strings.Contains(prepared, "web-2") || !strings.Contains(prepared, "web-3") {
		t.Errorf("cond-b's page: state %q, boot files of %q", state, prepared)
	}
	shoot("status-conductor.png")
	step("looking up web-2", chromedp.Do(ctx, chromedp.Navigate(degradedSrv.URL+"/?refresh=off"),
		chromedp.WaitVisible(chromedp.CSS("#node")),
		chromedp.SendKeys(chromedp.CSS("#node"), "AAAAAAAA-3333-4333-8333-333333333333"),
		chromedp.Click(chromedp.CSS(`form[role="search"] button`)),
		chromedp.WaitVisible(chromedp.CSS("#lookup-affinity"))))
	affinity, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS("#lookup-affinity")))
	step("reading the affinity", err)
	if !strings.Contains(affinity, "Boot files were prepared by cond-b (dead); the ring now maps the node to ") ||
		!strings.Contains(affinity, ": a takeover will rebuild them.") {
		t.Errorf("lookup of web-2: affinity %q", affinity)
	}
	t.Logf("lookup of web-2: %s", affinity)
	shoot("status-affinity-lookup.png")

	if class, text := summaryOf(staleSrv.URL); class != "banner summary bad" || !strings.Contains(text, "Stale data") {
		t.Errorf("stale: summary %q %q", class, text)
	}
	shoot("status-stale.png")

	for name, png := range shots {
		if len(png) < 1000 {
			t.Errorf("%s: screenshot of %d bytes", name, len(png))
		}
		if dir := os.Getenv("ICE_SCREENSHOT_DIR"); dir != "" {
			if err := os.WriteFile(filepath.Join(dir, name), png, 0o644); err != nil {
				t.Error(err)
			}
		}
	}
}
