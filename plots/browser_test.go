package plots

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/convexnn/convexnn/internal/browser"
	"github.com/convexnn/convexnn/internal/testenv"
)

// TestSmokePagesRenderInChromium opens the smoke pages in headless Chromium
// with no network: with the library embedded or loaded by URL, with and
// without RequireJS on the page (classic Notebook has it; JupyterLab, VS Code
// and plain exports do not), every chart, 2-D and 3-D, must draw with no
// console error, also where each library is embedded once on the page or
// comes from the copy next to it; with an unreachable library, or none on the
// page and no copy, every chart must fail visibly.
func TestSmokePagesRenderInChromium(t *testing.T) {
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	assets := filepath.Join(root, ".cache", "assets")
	if _, err := os.Stat(filepath.Join(assets, "echarts-gl.min.js")); err != nil {
		testenv.Missing(t, "chart assets missing in %s: run make setup", assets)
	}
	if _, err := browser.FindExecPath(browser.Options{}); err != nil {
		testenv.Missing(t, "%v", err)
	}
	out := os.Getenv("CONVEXNN_PLOTS_SMOKE")
	if out == "" {
		out = t.TempDir()
	}
	writeSmokePages(t, out, assets)
	// Two browsers, each page in a browser context of its own: a page whose
	// library cannot load sees nothing another page loaded.
	pool, err := browser.StartPool(context.Background(), 2, browser.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close) // after the parallel subtests
	for _, page := range []string{"index.html", "require.html", "url.html", "url-require.html", "broken.html", "broken-require.html",
		"once.html", "once-require.html", "beside.html", "beside-require.html", "nowhere.html"} {
		t.Run(page, func(t *testing.T) {
			t.Parallel() // two pages at a time (-parallel: GOMAXPROCS; the pool's two browsers)
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			rep, err := pool.Check(ctx, filepath.Join(out, page), browser.Options{})
			if err != nil {
				t.Fatal(err)
			}
			kinds := map[string]int{}
			for _, c := range rep.Charts {
				kinds[c.Kind]++
			}
			if kinds["2d"] == 0 || kinds["3d"] == 0 || len(rep.Charts) < 6 {
				t.Fatalf("page has charts %v, want at least 6 with 2-D and 3-D", kinds)
			}
			probs := rep.Problems(0.01)
			if !strings.HasPrefix(page, "broken") && page != "nowhere.html" {
				for _, p := range probs {
					t.Error(p)
				}
				return
			}
			if len(probs) == 0 {
				t.Fatal("a page whose library cannot be loaded passed the check")
			}
			want := "could not be loaded"
			if page == "nowhere.html" {
				want = "is not on this page and its copy"
			}
			for _, c := range rep.Charts {
				if c.Canvases != 0 || !strings.Contains(c.Text, want) {
					t.Errorf("chart %s: %d canvases, text %q; want no canvas and the load error", c.ID, c.Canvases, c.Text)
				}
			}
		})
	}
}
