package status

import (
	"context"
	"errors"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/db"
	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/internal/fixture"
	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/internal/testenv"
	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/rules"
)

// chromium is headless Chromium (Debian chromium) driven by one test.
type chromium struct {
	t *testing.T
	// ctx runs the browser's steps; it ends at the deadline given to
	// startChromium, or when the test ends.
	ctx context.Context
	// shots are the screenshots taken so far, by file name.
	shots map[string][]byte
}

// startChromium starts headless Chromium with a profile of the test's own
// and a 1280x900 window, for at most timeout; the test's cleanup stops it.
// The test needs testenv.Chromium.
func startChromium(t *testing.T, timeout time.Duration) *chromium {
	t.Helper()
	testenv.Need(t, testenv.Chromium)
	browser, err := exec.LookPath("chromium")
	if err != nil {
		t.Fatal("chromium not found: install Debian's chromium package (make provision does)")
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(browser),
		chromedp.NoSandbox, chromedp.Flag("disable-gpu", true), chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true), chromedp.UserDataDir(t.TempDir()), chromedp.WindowSize(1280, 900))
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	t.Cleanup(cancelAlloc)
	ctx, cancelBrowser := chromedp.NewContext(actx)
	t.Cleanup(cancelBrowser)
	ctx, cancel := context.WithTimeout(ctx, timeout)
	t.Cleanup(cancel)
	return &chromium{t: t, ctx: ctx, shots: map[string][]byte{}}
}

// step fails the test when the browser step what returned err.
func (c *chromium) step(what string, err error) {
	c.t.Helper()
	if err != nil {
		c.t.Fatalf("chromium: %s: %v", what, err)
	}
}

// shoot takes a screenshot of the whole page, kept under name.
func (c *chromium) shoot(name string) {
	c.t.Helper()
	png, err := chromedp.Run(c.ctx, chromedp.FullScreenshot(100))
	c.step("screenshot "+name, err)
	c.shots[name] = png
}

// checkShots checks that every screenshot has an image in it, and writes
// them to ICE_SCREENSHOT_DIR when it is set.
func (c *chromium) checkShots() {
	c.t.Helper()
	for name, png := range c.shots {
		if len(png) < 1000 {
			c.t.Errorf("%s: screenshot of %d bytes", name, len(png))
		}
		if dir := os.Getenv("ICE_SCREENSHOT_DIR"); dir != "" {
			if err := os.WriteFile(filepath.Join(dir, name), png, 0o644); err != nil {
				c.t.Error(err)
			}
		}
	}
}

// TestInChromium drives the page in headless Chromium (Debian chromium): it
// loads the page, types a node name into the lookup box, submits, reads the
// conductor from the result, and takes a screenshot. Set
// ICE_SCREENSHOT_DIR to keep the screenshots.
func TestInChromium(t *testing.T) {
	srv := httptest.NewServer(newHandler(t, fixture.NewSource(testSnapshot())))
	t.Cleanup(srv.Close) // after the browser stops
	c := startChromium(t, 60*time.Second)

	ctx, step := c.ctx, c.step
	step("loading the page", chromedp.Do(ctx, chromedp.Navigate(srv.URL+"/"), chromedp.WaitVisible(chromedp.CSS("#conductors"))))
	title, err := chromedp.Run(ctx, chromedp.Title())
	step("title", err)
	label, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(`label[for="node"]`)))
	step("label", err)
	c.shoot("status-overview.png")
	step("looking up web-1", chromedp.Do(ctx,
		chromedp.SendKeys(chromedp.CSS("#node"), "web-1"),
		chromedp.Click(chromedp.CSS(`form[role="search"] button`)),
		chromedp.WaitVisible(chromedp.CSS("#lookup-conductor"))))
	conductor, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS("#lookup-conductor")))
	step("reading the result", err)
	c.shoot("status-lookup.png")
	if title != "Ironic conductors" {
		t.Errorf("title %q", title)
	}
	if strings.TrimSpace(label) == "" {
		t.Error("the lookup box has no label")
	}
	if conductor != "cond-a.example.com:6385" {
		t.Errorf("lookup of web-1 shows conductor %q, want cond-a.example.com:6385", conductor)
	}
	c.checkShots()
}

// TestScreenshotsInChromium renders the healthy, degraded and stale cases in
// headless Chromium, reads the key facts from the DOM (the summary's colour
// and problems, a conductor page reached by clicking its hostname, the
// affinity of a lookup) and keeps the screenshots in ICE_SCREENSHOT_DIR.
func TestScreenshotsInChromium(t *testing.T) {
	healthy := &db.Snapshot{Backend: rules.PostgreSQL, Conductors: testSnapshot().Conductors[:1], Nodes: testSnapshot().Nodes[:1]}
	degraded := fixture.NewSource(degradedSnapshot())
	stale := fixture.NewSource(degradedSnapshot())
	healthySrv := httptest.NewServer(newHandler(t, fixture.NewSource(healthy)))
	t.Cleanup(healthySrv.Close) // the servers close after the browser stops
	degradedSrv := httptest.NewServer(newHistoryHandler(t, degraded, 0).h)
	t.Cleanup(degradedSrv.Close)
	staleHandler := newHandler(t, stale)
	staleSrv := httptest.NewServer(staleHandler)
	t.Cleanup(staleSrv.Close)
	get(t, staleHandler, "/")
	stale.Set(nil, errors.New("dial tcp 10.0.0.5:5432: connect: connection refused"))

	c := startChromium(t, 90*time.Second)
	ctx, step, shoot := c.ctx, c.step, c.shoot
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
		!strings.Contains(affinity, "takes it over (") || !strings.Contains(affinity, "Ironic takes over at most 8 per conductor every 3m0s") {
		t.Errorf("lookup of web-2: affinity %q", affinity)
	}
	t.Logf("lookup of web-2: %s", affinity)
	shoot("status-affinity-lookup.png")

	if class, text := summaryOf(staleSrv.URL); class != "banner summary bad" || !strings.Contains(text, "Stale data") {
		t.Errorf("stale: summary %q %q", class, text)
	}
	shoot("status-stale.png")
	c.checkShots()
}
