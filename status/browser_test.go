package status

import (
	"context"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// TestInChromium drives the page in headless Chromium (Debian chromium): it
// loads the page, types a node name into the lookup box, submits, reads the
// conductor from the result, and takes a screenshot. Set
// ICE_SCREENSHOT_DIR to keep the screenshots.
func TestInChromium(t *testing.T) {
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
