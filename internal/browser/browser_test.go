package browser

import (
	"context"
	"fmt"
	"image"
	"image/color"
	mrand "math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/convexnn/convexnn/internal/testenv"
)

// The tests that run Chromium skip when there is none, but fail when
// CONVEXNN_REQUIRE_BROWSER=1.
const envRequireBrowser = "CONVEXNN_REQUIRE_BROWSER"

func requireBrowser(t *testing.T) {
	t.Helper()
	if _, err := FindExecPath(Options{}); err != nil {
		if os.Getenv(envRequireBrowser) == "1" {
			t.Fatalf("%s=1 but no browser: %v", envRequireBrowser, err)
		}
		t.Skipf("skipping: no browser (set %s=1 to make this a failure): %v", envRequireBrowser, err)
	}
}

// assetsDir returns <repo root>/.cache/assets, where "make setup" puts the
// echarts copies.
func assetsDir(t *testing.T) string {
	t.Helper()
	assets := filepath.Join(testenv.RepoRoot(t), ".cache", "assets")
	for _, f := range []string{"echarts.min.js", "echarts-gl.min.js"} {
		if _, err := os.Stat(filepath.Join(assets, f)); err != nil {
			t.Fatalf("echarts asset missing (run make setup): %v", err)
		}
	}
	return assets
}

// testPage copies testdata/name into a new temporary directory, with the echarts
// assets next to it when withAssets, applies the replacements (old, new,
// ...) to it, and returns its path.
func testPage(t *testing.T, name string, withAssets bool, replace ...string) string {
	t.Helper()
	dir := t.TempDir()
	if withAssets {
		assets := assetsDir(t)
		for _, f := range []string{"echarts.min.js", "echarts-gl.min.js"} {
			copyFile(t, filepath.Join(assets, f), filepath.Join(dir, f))
		}
	}
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	s := strings.NewReplacer(replace...).Replace(string(b))
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func copyFile(t *testing.T, src, dst string) {
	t.Helper()
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dst, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestMain closes the tests' pool of browsers (pool) after the last test.
func TestMain(m *testing.M) {
	code := m.Run()
	testPool.Close()
	os.Exit(code)
}

var testPool LazyPool

// pool returns the tests' two browsers, started at the first call: most
// tests check their pages on them (each page in a browser context of its
// own, as Check's own browser would), instead of starting a browser per
// page. TestChartsDraw and the tests of errors, hooks, origins and time-outs
// run Check's own browser.
func pool(t *testing.T) *Pool {
	t.Helper()
	p, err := testPool.Get()
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// check checks path on the tests' pool and logs the report.
func check(t *testing.T, path string, o Options) *Report {
	t.Helper()
	return logged(t, path, func() (*Report, error) { return pool(t).Check(context.Background(), path, o) })
}

// checkOnce checks path with Check's own browser and logs the report.
func checkOnce(t *testing.T, path string, o Options) *Report {
	t.Helper()
	return logged(t, path, func() (*Report, error) { return Check(context.Background(), path, o) })
}

func logged(t *testing.T, path string, run func() (*Report, error)) *Report {
	t.Helper()
	start := time.Now()
	r, err := run()
	if err != nil {
		t.Fatalf("Check(%s): %v", path, err)
	}
	t.Logf("Check(%s) took %v", filepath.Base(path), time.Since(start).Round(time.Millisecond))
	for _, c := range r.Charts {
		t.Logf("chart %+v", c)
	}
	for _, c := range r.Console {
		t.Logf("console: %s", c)
	}
	for _, w := range r.Warnings {
		t.Logf("warning: %s", w)
	}
	return r
}

func chart(t *testing.T, r *Report, id string) Chart {
	t.Helper()
	for _, c := range r.Charts {
		if c.ID == id {
			return c
		}
	}
	t.Fatalf("no chart %q in %+v", id, r.Charts)
	return Chart{}
}

func contains(list []string, sub ...string) bool {
next:
	for _, s := range list {
		for _, x := range sub {
			if !strings.Contains(s, x) {
				continue next
			}
		}
		return true
	}
	return false
}

func TestChartsDraw(t *testing.T) {
	requireBrowser(t)
	r := checkOnce(t, testPage(t, "charts.html", true), Options{})
	if len(r.Charts) != 2 {
		t.Fatalf("got %d charts, want 2", len(r.Charts))
	}
	for _, want := range []struct {
		id, kind string
		minInk   float64
	}{{"line2d", "2d", 0.01}, {"surface3d", "3d", 0.05}} {
		c := chart(t, r, want.id)
		if c.Kind != want.kind || c.Canvases < 1 || c.Inked < want.minInk {
			t.Errorf("chart %s: got %+v, want kind %s, a canvas and ink >= %v", want.id, c, want.kind, want.minInk)
		}
	}
	if p := r.Problems(0.01); len(p) != 0 {
		t.Errorf("Problems: %q", p)
	}
	if !strings.HasPrefix(r.URL, "file:///") || !strings.HasSuffix(r.URL, "/charts.html") {
		t.Errorf("URL = %q", r.URL)
	}
}

// The page of TestChartsDraw, but echarts cannot be loaded.
func TestUnreachableScript(t *testing.T) {
	requireBrowser(t)
	for _, tc := range []struct {
		name, errText, scriptURL string
		page                     func(t *testing.T) string
	}{
		{"cdn", "net::ERR_INTERNET_DISCONNECTED", "https://cdn.example.invalid/echarts.min.js", func(t *testing.T) string {
			return testPage(t, "charts.html", false, `src="echarts`, `src="https://cdn.example.invalid/echarts`)
		}},
		{"missing-file", "net::ERR_FILE_NOT_FOUND", "/echarts.min.js", func(t *testing.T) string {
			return testPage(t, "charts.html", false)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := check(t, tc.page(t), Options{})
			p := r.Problems(0.01)
			for _, id := range []string{"line2d (2d)", "surface3d (3d)"} {
				if !contains(p, "chart "+id+": no canvas") {
					t.Errorf("Problems has no %q: %q", "chart "+id+": no canvas", p)
				}
			}
			if !contains(p, "console: ", tc.errText, tc.scriptURL) {
				t.Errorf("Problems has no failed load of %s (%s): %q", tc.scriptURL, tc.errText, p)
			}
			if !contains(r.Console, "Uncaught ReferenceError: echarts is not defined at file://") {
				t.Errorf("Console has no ReferenceError: %q", r.Console)
			}
		})
	}
}

func TestException(t *testing.T) {
	requireBrowser(t)
	r := check(t, testPage(t, "exception.html", true), Options{})
	if !contains(r.Console, "Uncaught ReferenceError: notDefinedAnywhere is not defined at file://", "/exception.html:22:3") {
		t.Errorf("Console has no uncaught exception with its location: %q", r.Console)
	}
	if !contains(r.Console, "console.error: fixture console error at file://", "/exception.html:18:") {
		t.Errorf("Console has no console.error with its location: %q", r.Console)
	}
	if c := chart(t, r, "good"); c.Canvases < 1 || c.Inked < 0.01 {
		t.Errorf("chart good: %+v", c)
	}
	if c := chart(t, r, "blank"); c.Canvases != 1 || c.Inked > 0.001 {
		t.Errorf("chart blank: %+v, want 1 canvas and no ink", c)
	}
	p := r.Problems(0.01)
	if !contains(p, "chart blank (2d): only 0% of pixels drawn") {
		t.Errorf("Problems has no blank chart: %q", p)
	}
	if contains(p, "chart good") {
		t.Errorf("Problems has the good chart: %q", p)
	}
	if !contains(p, "console: Uncaught ReferenceError") {
		t.Errorf("Problems has no exception: %q", p)
	}
}

func TestNoCharts(t *testing.T) {
	requireBrowser(t)
	start := time.Now()
	r := check(t, testPage(t, "nocharts.html", false), Options{})
	if len(r.Charts) != 0 {
		t.Errorf("Charts = %+v", r.Charts)
	}
	if p := r.Problems(0.01); len(p) != 1 || p[0] != "no charts found" {
		t.Errorf("Problems = %q, want [no charts found]", p)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("a page without charts took %v", d)
	}
}

// TestInk checks the measurement on canvases with known ink, below the fold
// and on a dark page, with a fixed Settle.
func TestInk(t *testing.T) {
	requireBrowser(t)
	r := check(t, testPage(t, "ink.html", false), Options{Settle: 300 * time.Millisecond})
	for _, want := range []struct {
		id       string
		canvases int
		lo, hi   float64
	}{
		{"quarter", 1, 0.24, 0.26},
		{"webgl-half", 1, 0.49, 0.51},
		{"empty", 1, 0, 0.001},
		{"message", 0, 0.001, 0.2},
	} {
		c := chart(t, r, want.id)
		if c.Canvases != want.canvases || c.Inked < want.lo || c.Inked > want.hi {
			t.Errorf("chart %s: %+v, want %d canvases and ink in [%v, %v]", want.id, c, want.canvases, want.lo, want.hi)
		}
	}
	if c := chart(t, r, "message"); c.Text != "Chart failed: WebGL is not available" {
		t.Errorf("chart message: Text = %q", c.Text)
	}
	p := r.Problems(0.01)
	want := []string{
		`chart empty (2d): only 0% of pixels drawn (want at least 1%)`,
		`chart message (3d): no canvas; text: "Chart failed: WebGL is not available"`,
	}
	if fmt.Sprint(p) != fmt.Sprint(want) {
		t.Errorf("Problems:\n got %q\nwant %q", p, want)
	}
}

// TestNoNetwork checks that the page reaches nothing over the network, not
// even a server on the loopback interface, with the Fetch interception and
// with the command-line flags alone.
func TestNoNetwork(t *testing.T) {
	requireBrowser(t)
	port, conns := listenCounting(t)
	for _, intercept := range []bool{true, false} {
		t.Run(fmt.Sprintf("intercept=%v", intercept), func(t *testing.T) {
			defer func(v bool) { interceptRequests = v }(interceptRequests)
			interceptRequests = intercept
			r := check(t, testPage(t, "network.html", false, "PORT", port), Options{Settle: time.Second})
			if n := conns.Load(); n != 0 {
				t.Errorf("the page made %d connections to 127.0.0.1:%s", n, port)
			}
			for _, u := range []string{"http://127.0.0.1:" + port + "/script.js", "http://localhost:" + port + "/style.css", "https://example.com/image.png"} {
				if !contains(r.Console, "Failed to load resource: net::ERR_", u) {
					t.Errorf("Console has no failed load of %s: %q", u, r.Console)
				}
			}
			if !contains(r.Console, "Uncaught (in promise) TypeError: Failed to fetch") {
				t.Errorf("Console has no failed fetch: %q", r.Console)
			}
			if c := chart(t, r, "status"); c.Text != "loaded" {
				t.Errorf("the page did not finish its script: %+v", c)
			}
		})
	}
}

func TestCheckErrors(t *testing.T) {
	if _, err := Check(context.Background(), filepath.Join(t.TempDir(), "missing.html"), Options{}); err == nil {
		t.Error("Check of a missing file: no error")
	}
	t.Setenv(EnvExecPath, "")
	p := testPage(t, "nocharts.html", false)
	_, err := Check(context.Background(), p, Options{ExecPath: filepath.Join(t.TempDir(), "no-chromium")})
	if err == nil || !strings.Contains(err.Error(), "ExecPath") {
		t.Errorf("Check with a missing ExecPath: %v", err)
	}
	t.Setenv(EnvExecPath, filepath.Join(t.TempDir(), "no-chromium"))
	_, err = Check(context.Background(), p, Options{})
	if err == nil || !strings.Contains(err.Error(), EnvExecPath) {
		t.Errorf("Check with a missing $%s: %v", EnvExecPath, err)
	}
	t.Setenv(EnvExecPath, "")
	t.Setenv("PATH", t.TempDir())
	_, err = Check(context.Background(), p, Options{})
	if err == nil || !strings.Contains(err.Error(), "no Chromium found") {
		t.Errorf("Check without a browser on PATH: %v", err)
	}
}

func TestProblems(t *testing.T) {
	r := &Report{
		Charts: []Chart{
			{ID: "a", Kind: "2d", Canvases: 1, Inked: 0.2},
			{ID: "b", Kind: "3d", Canvases: 0, Inked: 0.3, Text: "Error: no WebGL"},
			{ID: "c", Kind: "2d", Canvases: 2, Inked: 0.001},
			{Kind: "3d", Canvases: 1, Inked: 0.5},
		},
		Console: []string{"Uncaught ReferenceError: x is not defined at file:///p.html:12:3"},
	}
	got := r.Problems(0.01)
	want := []string{
		`chart b (3d): no canvas; text: "Error: no WebGL"`,
		`chart c (2d): only 0.1% of pixels drawn (want at least 1%)`,
		`console: Uncaught ReferenceError: x is not defined at file:///p.html:12:3`,
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("Problems:\n got %q\nwant %q", got, want)
	}
	if got := (&Report{}).Problems(0.01); fmt.Sprint(got) != "[no charts found]" {
		t.Errorf("Problems of an empty report: %q", got)
	}
}

// TestInkFractionTypes checks the pixel-slice readers of RGBA and NRGBA
// screenshots (sub-images and translucent pixels included) against the
// generic reader of colors.
func TestInkFractionTypes(t *testing.T) {
	rng := mrand.New(mrand.NewPCG(1, 2))
	for trial := range 20 {
		r := image.Rect(-3, 2, 3+rng.IntN(40), 4+rng.IntN(30))
		rgba, nrgba := image.NewRGBA(r), image.NewNRGBA(r)
		for y := r.Min.Y; y < r.Max.Y; y++ {
			for x := r.Min.X; x < r.Max.X; x++ {
				c := color.NRGBA{uint8(rng.IntN(256)), uint8(rng.IntN(256)), uint8(rng.IntN(256)), 255}
				if rng.IntN(4) == 0 {
					c = color.NRGBA{30 + uint8(rng.IntN(20)), 30, 30 + uint8(rng.IntN(20)), 255}
				}
				if rng.IntN(5) == 0 {
					c.A = uint8(rng.IntN(256))
				}
				nrgba.SetNRGBA(x, y, c)
				rgba.Set(x, y, c)
			}
		}
		sub := image.Rect(r.Min.X+1, r.Min.Y+1, r.Max.X, r.Max.Y)
		bg := [3]uint8{35, 30, 40}
		for name, img := range map[string]image.Image{
			"rgba": rgba, "nrgba": nrgba, "rgba-sub": rgba.SubImage(sub), "nrgba-sub": nrgba.SubImage(sub),
		} {
			got, want := inkFraction(img, bg, inkTolerance), inkFraction(genericImage{img}, bg, inkTolerance)
			if got != want {
				t.Errorf("trial %d, %s: inkFraction %v, generic reader %v", trial, name, got, want)
			}
		}
	}
}

// genericImage hides an image's type, so that inkFraction reads its colors.
type genericImage struct{ image.Image }

func TestInkFraction(t *testing.T) {
	img := image.NewRGBA(image.Rect(0, 0, 10, 10))
	bg := color.RGBA{30, 30, 30, 255}
	for y := range 10 {
		for x := range 10 {
			c := bg
			switch {
			case y < 2: // ink
				c = color.RGBA{200, 0, 0, 255}
			case y < 4: // within the tolerance: background
				c = color.RGBA{35, 25, 40, 255}
			}
			img.Set(x, y, c)
		}
	}
	if got := inkFraction(img, [3]uint8{30, 30, 30}, inkTolerance); got != 0.2 {
		t.Errorf("inkFraction = %v, want 0.2", got)
	}
	if got := borderColor(img); got != [3]uint8{30, 30, 30} {
		t.Errorf("borderColor = %v", got)
	}
}

// TestTimeout checks that a page that never finishes loading makes Check fail
// in time and leaves no browser behind.
func TestTimeout(t *testing.T) {
	requireBrowser(t)
	p := filepath.Join(t.TempDir(), "hang.html")
	if err := os.WriteFile(p, []byte(`<div class="convexnn-chart" data-chart-kind="2d" id="x"></div><script>for (;;) {}</script>`), 0o644); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, err := Check(context.Background(), p, Options{Timeout: 5 * time.Second})
	d := time.Since(start)
	t.Logf("Check took %v: %v", d.Round(time.Millisecond), err)
	if err == nil {
		t.Error("Check of a hanging page: no error")
	}
	if d > 15*time.Second {
		t.Errorf("Check of a hanging page with Timeout 5s took %v", d)
	}
}

// TestMath finds TeX left in the visible text of markdown cells: a literal
// $, a \command or _{, but not inside code or MathJax's output.
func TestMath(t *testing.T) {
	requireBrowser(t)
	for _, c := range []struct {
		text string
		want string
	}{
		{"all rendered", ""},
		{"eq. (hinge<em>adv</em>D): $\\epsilon", "$"},
		{"the loss \\ell", "\\\\ell"},
		{"d_{ik} in text", "_{"},
	} {
		r := check(t, testPage(t, "math.html", false, "PROBLEM", c.text), Options{Settle: time.Millisecond})
		switch {
		case c.want == "" && len(r.Math) != 0:
			t.Errorf("%q: Math = %q, want none", c.text, r.Math)
		case c.want != "" && (len(r.Math) != 1 || !strings.Contains(r.Math[0], "markdown cell 2") || !strings.Contains(r.Math[0], c.want)):
			t.Errorf("%q: Math = %q, want cell 2 with %q", c.text, r.Math, c.want)
		}
	}
}

// TestBrowserTabs checks pages asked for side by side of one browser (they
// take turns) and of a pool: each check reports its own page (its charts,
// console and problems, as the tests of a browser each expect them), the
// browser outlives a check that timed out, and options that need another
// browser are refused.
func TestBrowserTabs(t *testing.T) {
	requireBrowser(t)
	charts, exception := testPage(t, "charts.html", true), testPage(t, "exception.html", true)
	b, err := Start(context.Background(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	pool, err := StartPool(context.Background(), 2, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	pages := []string{charts, exception, charts, exception, charts, exception}
	reps := make([]*Report, len(pages))
	errs := make([]error, len(pages))
	var wg sync.WaitGroup
	for i, p := range pages {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var o Options
			if p == exception {
				// Its chart stays blank: measure after 2 s instead of
				// polling 15 s for ink.
				o.Settle = 2 * time.Second
			}
			if i < 2 {
				reps[i], errs[i] = b.Check(context.Background(), p, o)
			} else {
				reps[i], errs[i] = pool.Check(context.Background(), p, o)
			}
		}()
	}
	wg.Wait()
	if _, err := b.Check(context.Background(), charts, Options{Timeout: time.Millisecond}); err == nil {
		t.Error("a check of 1 ms did not time out")
	}
	rep, err := b.Check(context.Background(), charts, Options{})
	reps, errs = append(reps, rep), append(errs, err)
	for i, err := range errs {
		if err != nil {
			t.Fatalf("check %d: %v", i, err)
		}
	}
	for i, rep := range reps {
		p := rep.Problems(0.01)
		if i%2 == 0 {
			if len(rep.Charts) < 2 || len(p) != 0 || contains(rep.Console, "notDefinedAnywhere") {
				t.Errorf("charts page in check %d: %d charts, problems %q", i, len(rep.Charts), p)
			}
			continue
		}
		if !contains(rep.Console, "Uncaught ReferenceError: notDefinedAnywhere is not defined at file://", "/exception.html:22:3") ||
			!contains(p, "chart blank (2d): only 0% of pixels drawn") {
			t.Errorf("exception page in check %d: console %q, problems %q", i, rep.Console, p)
		}
	}
	if _, err := b.Check(context.Background(), charts, Options{AllowOrigins: []string{"http://127.0.0.1:8888"}}); err == nil || !strings.Contains(err.Error(), "AllowOrigins") {
		t.Errorf("other AllowOrigins: %v", err)
	}
	b.Close()
	if _, err := b.Check(context.Background(), charts, Options{}); err == nil || !strings.Contains(err.Error(), "closed") {
		t.Errorf("check on a closed browser: %v", err)
	}
	if _, err := StartPool(context.Background(), 0, Options{}); err == nil {
		t.Error("a pool of 0 browsers started")
	}
}
