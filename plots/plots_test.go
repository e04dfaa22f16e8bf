// Copyright ©2026 The convexnn Authors. All rights reserved.

package plots

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"image/png"
	"io"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/go-echarts/go-echarts/v2/charts"
	"github.com/go-echarts/go-echarts/v2/opts"
)

// testGrid returns a small grid with z = x*y.
func testGrid(nx, ny int) Grid {
	var g Grid
	for j := 0; j < nx; j++ {
		g.X = append(g.X, float64(j)-float64(nx)/2)
	}
	for i := 0; i < ny; i++ {
		g.Y = append(g.Y, float64(i)/2)
	}
	for _, y := range g.Y {
		row := make([]float64, nx)
		for j, x := range g.X {
			row[j] = x * y
		}
		g.Z = append(g.Z, row)
	}
	return g
}

// testFigures returns one figure of each kind.
func testFigures(t *testing.T) map[string]*Figure {
	t.Helper()
	line, err := Line(LineOptions{Title: "loss", XLabel: "iteration", YLabel: "f", LogY: true},
		Series{Name: "gd", X: []float64{0, 1, 2}, Y: []float64{1, 0.1, 0.01}},
		Series{Name: "empty"})
	if err != nil {
		t.Fatal(err)
	}
	scatter, err := Scatter(ScatterOptions{Title: "points", Width: 500, Height: 300},
		Points{Name: "a", X: []float64{0, 1}, Y: []float64{1, 0}},
		Points{X: []float64{2}, Y: []float64{2}})
	if err != nil {
		t.Fatal(err)
	}
	heat, err := Heatmap(HeatmapOptions{Title: "regions", Diverging: true}, testGrid(6, 4),
		Points{Name: "y=-1", X: []float64{-1}, Y: []float64{0.5}},
		Points{Name: "y=+1", X: []float64{1}, Y: []float64{1}})
	if err != nil {
		t.Fatal(err)
	}
	surf, err := Surface(SurfaceOptions{Title: "surface", ZLabel: "loss"}, testGrid(5, 5))
	if err != nil {
		t.Fatal(err)
	}
	return map[string]*Figure{"line": line, "scatter": scatter, "heatmap": heat, "surface": surf}
}

// parts splits a snippet into its markup before the script and the
// script's body, checking the overall shape.
func parts(t *testing.T, h string) (markup, script string) {
	t.Helper()
	i := strings.Index(h, "<script>")
	if i < 0 {
		t.Fatalf("no <script> in snippet:\n%.300s", h)
	}
	if n := strings.Count(strings.ToLower(h[:i]), "<script"); n != 0 {
		t.Errorf("markup before the script has %d <script tags", n)
	}
	if n := strings.Count(strings.ToLower(h), "</script"); n != 1 {
		t.Errorf("snippet has %d </script sequences, want exactly the closing tag", n)
	}
	if !strings.HasSuffix(h, "</script>\n") {
		t.Errorf("snippet does not end with its closing script tag: %q", h[max(0, len(h)-40):])
	}
	if strings.Contains(h, "<!--") {
		t.Error("snippet contains <!--")
	}
	script = strings.TrimSuffix(h[i+len("<script>"):], "</script>\n")
	if strings.ContainsAny(script, "\u2028\u2029") {
		t.Error("script contains raw U+2028 or U+2029")
	}
	return h[:i], script
}

var (
	divRE = regexp.MustCompile(`^<div class="convexnn-chart" data-chart-kind="(2d|3d)" id="([^"]+)" style="width:([0-9]+px);max-width:100%;height:([0-9]+px);[^"]*">`)
	idRE  = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_-]*$`)
	imgRE = regexp.MustCompile(`<img class="convexnn-static" alt="[^"]*" style="[^"]*" src="data:image/png;base64,([A-Za-z0-9+/=]+)">`)
)

func TestHTMLStructure(t *testing.T) {
	figs := testFigures(t)
	seen := map[string]bool{}
	for name, f := range figs {
		h, err := f.HTML(Assets{BaseURL: "https://cdn.example.com/echarts"}, HTMLOptions{})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		markup, script := parts(t, h)
		m := divRE.FindStringSubmatch(markup)
		if m == nil {
			t.Fatalf("%s: unexpected chart element:\n%.400s", name, markup)
		}
		wantKind := "2d"
		if name == "surface" {
			wantKind = "3d"
		}
		if m[1] != wantKind {
			t.Errorf("%s: kind %s, want %s", name, m[1], wantKind)
		}
		if !idRE.MatchString(m[2]) {
			t.Errorf("%s: id %q is not a valid CSS identifier", name, m[2])
		}
		if seen[m[2]] {
			t.Errorf("%s: duplicate id %q", name, m[2])
		}
		seen[m[2]] = true
		wantW, wantH := "720px", "400px"
		if name == "scatter" {
			wantW, wantH = "500px", "300px"
		}
		if m[3] != wantW || m[4] != wantH {
			t.Errorf("%s: size %sx%s, want %sx%s", name, m[3], m[4], wantW, wantH)
		}
		im := imgRE.FindStringSubmatch(markup)
		if im == nil {
			t.Fatalf("%s: no static image in %.300s", name, markup)
		}
		raw, err := base64.StdEncoding.DecodeString(im[1])
		if err != nil {
			t.Fatalf("%s: static image: %v", name, err)
		}
		if _, err := png.Decode(bytes.NewReader(raw)); err != nil {
			t.Errorf("%s: static image does not decode: %v", name, err)
		}
		if !strings.Contains(script, `"id":"`+m[2]+`"`) {
			t.Errorf("%s: script does not refer to the element id", name)
		}
		if !strings.Contains(script, `"mode":"url"`) || !strings.Contains(script, `"echarts":"https://cdn.example.com/echarts/echarts.min.js"`) {
			t.Errorf("%s: script lacks the asset URL", name)
		}
		if !strings.Contains(script, `"echarts-gl":"https://cdn.example.com/echarts/echarts-gl.min.js"`) {
			t.Errorf("%s: script lacks the echarts-gl URL", name)
		}
		if !strings.Contains(script, "__convexnnECharts") || !strings.Contains(script, "r.config({ paths:") {
			t.Errorf("%s: script lacks the loader", name)
		}
		if strings.Contains(script, "__f__") {
			t.Errorf("%s: function markers left in the option", name)
		}
		if regexp.MustCompile(`"(formatter|valueFormatter|renderItem)":"`).MatchString(script) {
			t.Errorf("%s: a JavaScript function was left quoted as a string", name)
		}
	}
}

func TestHTMLOptions(t *testing.T) {
	f := testFigures(t)["line"]
	h, err := f.HTML(Assets{}, HTMLOptions{NoStatic: true})
	if err != nil {
		t.Fatal(err)
	}
	markup, script := parts(t, h)
	if strings.Contains(markup, "<img") {
		t.Error("NoStatic snippet has an image")
	}
	if !strings.Contains(script, `"echarts":"`+DefaultBaseURL+`echarts.min.js"`) {
		t.Error("zero Assets do not load from DefaultBaseURL")
	}

	dir := fakeAssets(t)
	h, err = f.HTML(Assets{Dir: dir}, HTMLOptions{OmitAssets: true})
	if err != nil {
		t.Fatal(err)
	}
	_, script = parts(t, h)
	if !strings.Contains(script, `"mode":"omit"`) {
		t.Error(`OmitAssets snippet is not in "omit" mode`)
	}
	if strings.Contains(script, `"payload"`) || strings.Contains(script, `"urls"`) {
		t.Error("OmitAssets snippet carries assets")
	}
	if _, err := f.HTML(Assets{BaseURL: `https://x/"><script>`}, HTMLOptions{}); err == nil {
		t.Error("no error for a base URL with quotes and angle brackets")
	}
	var nilFig *Figure
	if _, err := nilFig.HTML(Assets{}, HTMLOptions{}); err == nil {
		t.Error("no error for a nil Figure")
	}
}

func TestUniqueIDs(t *testing.T) {
	ids := map[string]bool{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 100 {
				id := newID()
				mu.Lock()
				if ids[id] {
					t.Errorf("duplicate id %q", id)
				}
				ids[id] = true
				mu.Unlock()
				if !idRE.MatchString(id) {
					t.Errorf("invalid id %q", id)
				}
			}
		}()
	}
	wg.Wait()
}

const hostile = "</script><script>alert(1)</script><!-- \u2028\u2029 \"quoted\" & 'single' __f__alert(2)__f__"

func TestEscaping(t *testing.T) {
	hostileName := `"><img src=x onerror=alert(3)></SCRIPT ` + hostile
	line, err := Line(LineOptions{Title: hostile, XLabel: hostile, YLabel: hostile},
		Series{Name: hostileName, X: []float64{1, 2}, Y: []float64{1, 2}})
	if err != nil {
		t.Fatal(err)
	}
	heat, err := Heatmap(HeatmapOptions{Title: hostile, XLabel: hostile, YLabel: hostile}, testGrid(3, 3),
		Points{Name: hostileName, X: []float64{0}, Y: []float64{0}})
	if err != nil {
		t.Fatal(err)
	}
	scatter, err := Scatter(ScatterOptions{Title: hostile}, Points{Name: hostileName, X: []float64{0}, Y: []float64{0}})
	if err != nil {
		t.Fatal(err)
	}
	surf, err := Surface(SurfaceOptions{Title: hostile, XLabel: hostile, ZLabel: hostile}, testGrid(3, 3))
	if err != nil {
		t.Fatal(err)
	}
	for name, f := range map[string]*Figure{"line": line, "heatmap": heat, "scatter": scatter, "surface": surf} {
		h, err := f.HTML(Assets{}, HTMLOptions{})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		markup, script := parts(t, h)
		if strings.Contains(markup, "<script") || strings.Contains(markup, "<img src") || strings.Contains(markup, "\"quoted") {
			t.Errorf("%s: user text leaked into the markup:\n%.600s", name, markup)
		}
		if !strings.Contains(markup, `alt="&lt;/script&gt;&lt;script&gt;alert(1)&lt;/script&gt;&lt;!-- `) {
			t.Errorf("%s: title not escaped in the alt attribute:\n%.600s", name, markup)
		}
		// The title is still there, as a JavaScript string.
		if !strings.Contains(script, `"text":"<\/script><script>alert(1)<\/script><\!-- \u2028\u2029 \"quoted\" & 'single' _`+"\u200b"+`_f__alert(2)_`+"\u200b"+`_f__"`) {
			t.Errorf("%s: title not found as an escaped string in the script", name)
		}
		// go-echarts' function markers in user text must not become code.
		if strings.Contains(script, "__f__alert") || strings.Contains(script, "\"alert(2)") || strings.Contains(script, ",alert(2)") {
			t.Errorf("%s: user text turned into code", name)
		}
	}

	// The tooltip label of heatmap cells is built in JavaScript from
	// character codes of the HTML-escaped label.
	if !strings.Contains(jsString("<a>"), "String.fromCharCode(60,97,62)") {
		t.Errorf("jsString(<a>) = %s", jsString("<a>"))
	}
	if got := jsString("😀"); got != "String.fromCharCode(55357,56832)" {
		t.Errorf("jsString(😀) = %s", got)
	}
}

func TestScriptSafe(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{`a</script>b`, `a<\/script>b`},
		{`a</SCRIPT`, `a<\/SCRIPT`},
		{`<!-- x`, `<\!-- x`},
		{"a\u2028b\u2029c", `a\u2028b\u2029c`},
		{`a < b`, `a < b`},
	} {
		if got := scriptSafe(c.in); got != c.want {
			t.Errorf("scriptSafe(%q) = %q, want %q", c.in, got, c.want)
		}
	}
	for name, src := range map[string]string{"loader.js": loaderJS, "stub.js": stubJS, "shared.js": sharedJS, "assembled loader": loaderMin, "assembled stub": stubMin} {
		if strings.Contains(src, "</") || strings.Contains(src, "<!--") {
			t.Errorf("%s contains </ or <!--", name)
		}
		// minifyJS would cut a string holding a comment marker.
		for _, lit := range regexp.MustCompile(`"(?:[^"\\\n]|\\.)*"`).FindAllString(src, -1) {
			if strings.Contains(lit, "/*") || strings.Contains(lit, "*/") {
				t.Errorf("%s has a string with a comment marker: %s", name, lit)
			}
		}
	}
	if !strings.HasPrefix(strings.TrimSpace(loaderJS), "function load(cfg, option) {") {
		t.Error("loader.js is not a function expression")
	}
	for name, src := range map[string]string{"loader": loaderMin, "stub": stubMin} {
		if strings.Contains(src, sharedMarker) || !strings.Contains(src, "function besideDir(folder)") || !strings.Contains(src, "function showError(id, msg)") {
			t.Errorf("the %s was not assembled with shared.js", name)
		}
	}
}

func TestText(t *testing.T) {
	for _, s := range []string{"__f__", "___f__", "__f____f__", "__f__f__", "a__f__b__f__c"} {
		if got := text(s); strings.Contains(got, "__f__") {
			t.Errorf("text(%q) = %q still has the marker", s, got)
		}
	}
	if got := text("plain"); got != "plain" {
		t.Errorf("text(plain) = %q", got)
	}
}

func TestValidation(t *testing.T) {
	nan, inf := math.NaN(), math.Inf(1)
	ok := testGrid(3, 2)
	for _, c := range []struct {
		name string
		err  func() error
		want []string
	}{
		{"line no series", func() error { _, err := Line(LineOptions{}); return err }, []string{"no series"}},
		{"line lengths", func() error {
			_, err := Line(LineOptions{}, Series{Name: "loss", X: []float64{1, 2, 3}, Y: []float64{1, 2}})
			return err
		}, []string{`series 0 ("loss")`, "3 X values but 2 Y values"}},
		{"line NaN", func() error {
			_, err := Line(LineOptions{}, Series{X: []float64{1, 2}, Y: []float64{1, 2}}, Series{Name: "b", X: []float64{1, 2}, Y: []float64{1, nan}})
			return err
		}, []string{`series 1 ("b")`, "Y[1] = NaN"}},
		{"line Inf X", func() error {
			_, err := Line(LineOptions{}, Series{X: []float64{inf}, Y: []float64{1}})
			return err
		}, []string{"series 0", "X[0] = +Inf"}},
		{"line LogY", func() error {
			_, err := Line(LineOptions{LogY: true}, Series{Name: "gap", X: []float64{1, 2}, Y: []float64{1, 0}})
			return err
		}, []string{"LogY", `"gap"`, "Y[1] = 0"}},
		{"line size", func() error {
			_, err := Line(LineOptions{Width: -1}, Series{})
			return err
		}, []string{"negative size"}},
		{"scatter lengths", func() error {
			_, err := Scatter(ScatterOptions{}, Points{Name: "p", X: []float64{1}, Y: nil})
			return err
		}, []string{`group 0 ("p")`, "1 X values but 0 Y values"}},
		{"scatter none", func() error { _, err := Scatter(ScatterOptions{}); return err }, []string{"no point groups"}},
		{"heatmap empty", func() error { _, err := Heatmap(HeatmapOptions{}, Grid{}); return err }, []string{"empty grid"}},
		{"heatmap rows", func() error {
			g := ok
			g.Z = g.Z[:1]
			_, err := Heatmap(HeatmapOptions{}, g)
			return err
		}, []string{"Z has 1 rows but Y has 2 values"}},
		{"heatmap ragged", func() error {
			g := Grid{X: []float64{0, 1}, Y: []float64{0, 1}, Z: [][]float64{{1, 2}, {3}}}
			_, err := Heatmap(HeatmapOptions{}, g)
			return err
		}, []string{"ragged", "Z[1] has 1 values but X has 2"}},
		{"heatmap order", func() error {
			g := Grid{X: []float64{0, 2, 1}, Y: []float64{0}, Z: [][]float64{{1, 2, 3}}}
			_, err := Heatmap(HeatmapOptions{}, g)
			return err
		}, []string{"X must be strictly increasing", "X[2] = 1"}},
		{"heatmap NaN", func() error {
			g := Grid{X: []float64{0, 1}, Y: []float64{0}, Z: [][]float64{{1, nan}}}
			_, err := Heatmap(HeatmapOptions{}, g)
			return err
		}, []string{"Z[0][1] = NaN"}},
		{"heatmap overlay", func() error {
			_, err := Heatmap(HeatmapOptions{}, ok, Points{Name: "pos", X: []float64{0}, Y: []float64{inf}})
			return err
		}, []string{`overlay group 0 ("pos")`, "Y[0] = +Inf"}},
		{"surface small", func() error {
			_, err := Surface(SurfaceOptions{}, Grid{X: []float64{0}, Y: []float64{0}, Z: [][]float64{{1}}})
			return err
		}, []string{"too small"}},
		{"surface NaN axis", func() error {
			g := Grid{X: []float64{0, nan}, Y: []float64{0, 1}, Z: [][]float64{{1, 2}, {3, 4}}}
			_, err := Surface(SurfaceOptions{}, g)
			return err
		}, []string{"X[1] = NaN"}},
	} {
		err := c.err()
		if err == nil {
			t.Errorf("%s: no error", c.name)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: error %q does not mention %q", c.name, err, w)
			}
		}
		if !strings.HasPrefix(err.Error(), "plots: ") {
			t.Errorf("%s: error %q lacks the package prefix", c.name, err)
		}
	}
}

func TestStaticImages(t *testing.T) {
	for name, f := range testFigures(t) {
		b, err := f.PNG()
		if err != nil {
			t.Fatalf("%s: PNG: %v", name, err)
		}
		im, err := png.Decode(bytes.NewReader(b))
		if err != nil {
			t.Fatalf("%s: PNG does not decode: %v", name, err)
		}
		w, h := im.Bounds().Dx(), im.Bounds().Dy()
		if w != f.width || h != f.height {
			t.Errorf("%s: PNG is %dx%d, want %dx%d", name, w, h, f.width, f.height)
		}
		if len(b) > 150_000 {
			t.Errorf("%s: PNG is %d bytes, too big to embed", name, len(b))
		}
		s, err := f.SVG()
		if err != nil {
			t.Fatalf("%s: SVG: %v", name, err)
		}
		if !bytes.Contains(s, []byte("<svg")) {
			t.Errorf("%s: SVG has no <svg element", name)
		}
	}
	if _, err := (&Figure{width: 100, height: 100}).PNG(); err == nil {
		t.Error("no error for a figure without a static twin")
	}
}

// TestLogYEdgeCases draws log charts whose ranges gonum cannot pick alone.
func TestLogYEdgeCases(t *testing.T) {
	for _, s := range [][]Series{
		{{Name: "empty"}},
		{{X: []float64{1}, Y: []float64{0.5}}},
		{{X: []float64{1, 2}, Y: []float64{3, 3}}},
	} {
		f, err := Line(LineOptions{LogY: true}, s...)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.PNG(); err != nil {
			t.Errorf("%v: %v", s, err)
		}
	}
}

func TestHeatmapColors(t *testing.T) {
	g := Grid{X: []float64{0, 1}, Y: []float64{0, 1}, Z: [][]float64{{-1, 1}, {1, 1}}}
	f, err := Heatmap(HeatmapOptions{}, g)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(f.option, `"type":"piecewise"`) {
		t.Error("two-valued grid is not drawn with a piecewise visualMap")
	}
	g.Z[0][0], g.Z[1][1] = 0.5, -0.25
	f, err = Heatmap(HeatmapOptions{Diverging: true}, g)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(f.option, `"type":"continuous"`) || !strings.Contains(f.option, `"min":-1,"max":1`) {
		t.Errorf("diverging visualMap is not continuous and symmetric: %s", f.option)
	}
	if !strings.Contains(f.option, `"seriesIndex":0`) {
		t.Error("visualMap would color the overlay points too")
	}
	if !strings.Contains(f.option, `"animation":false`) {
		t.Error("heatmap is animated")
	}
}

func TestSurfaceOption(t *testing.T) {
	f := testFigures(t)["surface"]
	if !strings.Contains(f.option, `"type":"surface"`) {
		t.Errorf("surface series has the wrong type: %.400s", f.option)
	}
	if strings.Contains(f.option, `"scatter3D"`) {
		t.Error("surface series left as scatter3D")
	}
	// x varies fastest, as echarts-gl needs.
	if !strings.Contains(f.option, `"data":[[-2.5,0,-0],[-1.5,0,-0]`) && !strings.Contains(f.option, `"data":[[-2.5,0,0],[-1.5,0,0]`) {
		t.Errorf("unexpected surface data order: %.600s", f.option[strings.Index(f.option, `"data"`):])
	}
}

func TestChartHTML(t *testing.T) {
	s := charts.NewSurface3D()
	s.SetGlobalOptions(charts.WithInitializationOpts(opts.Initialization{Width: "640px", Height: "480px"}),
		charts.WithTitleOpts(opts.Title{Title: hostile}))
	s.AddSeries("s", []opts.Chart3DData{{Value: []interface{}{0, 0, 1}}, {Value: []interface{}{1, 0, 2}}})
	h, err := ChartHTML(s, Assets{}, HTMLOptions{})
	if err != nil {
		t.Fatal(err)
	}
	markup, script := parts(t, h)
	m := divRE.FindStringSubmatch(markup)
	if m == nil {
		t.Fatalf("unexpected chart element:\n%.400s", markup)
	}
	if m[1] != "3d" {
		t.Errorf("Surface3D detected as %s", m[1])
	}
	if m[3] != "640px" || m[4] != "480px" {
		t.Errorf("size %sx%s, want 640pxx480px", m[3], m[4])
	}
	if strings.Contains(markup, "<img") {
		t.Error("ChartHTML snippet has a static image")
	}
	if !strings.Contains(script, "xAxis3D") {
		t.Error("option missing from the script")
	}

	l := charts.NewLine()
	l.SetGlobalOptions(charts.WithTooltipOpts(opts.Tooltip{Show: opts.Bool(true), Formatter: opts.FuncOpts("function (p) { return 'x'; }")}))
	l.SetXAxis([]string{"a", "b"}).AddSeries("l", []opts.LineData{{Value: 1}, {Value: 2}})
	h, err = ChartHTML(l, Assets{}, HTMLOptions{})
	if err != nil {
		t.Fatal(err)
	}
	markup, script = parts(t, h)
	if m := divRE.FindStringSubmatch(markup); m == nil || m[1] != "2d" || m[3] != "900px" {
		t.Errorf("unexpected chart element for a Line:\n%.400s", markup)
	}
	if !strings.Contains(script, `"formatter":function (p) { return 'x'; }`) {
		t.Error("JavaScript function of a go-echarts chart not passed as code")
	}
	if _, err := ChartHTML(nil, Assets{}, HTMLOptions{}); err == nil {
		t.Error("no error for a nil chart")
	}

	// 3-D detected from the option alone.
	if !is3D(struct{}{}, `{"series":[{"type":"scatter3D"}]}`) || is3D(struct{}{}, `{"series":[{"type":"scatter"}]}`) {
		t.Error("is3D misjudges options")
	}
}

// fakeAssets writes stand-ins for the two library files to a temporary
// directory.
func fakeAssets(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for name, body := range map[string]string{
		ECharts.file():   "window.echarts = {init: function () {}}; // fake echarts </script>",
		EChartsGL.file(): "window['echarts-gl'] = {}; // fake echarts-gl",
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// payloadsOf returns the library files embedded in a snippet's script.
func payloadsOf(t *testing.T, script string) map[string]string {
	t.Helper()
	i := strings.Index(script, `{"version":`)
	if i < 0 {
		t.Fatal("no loader configuration in the script")
	}
	var cfg loaderConfig
	if err := json.NewDecoder(strings.NewReader(strings.ReplaceAll(script[i:], `<\!--`, `<!--`))).Decode(&cfg); err != nil {
		t.Fatalf("loader configuration: %v", err)
	}
	if len(cfg.Payload) == 0 {
		return nil
	}
	got := map[string]string{}
	for name, p := range cfg.Payload {
		raw, err := unz85(p)
		if err != nil {
			t.Fatalf("%s payload: %v", name, err)
		}
		zr, err := gzip.NewReader(bytes.NewReader(raw))
		if err != nil {
			t.Fatalf("%s payload: %v", name, err)
		}
		b, err := io.ReadAll(zr)
		if err != nil {
			t.Fatalf("%s payload: %v", name, err)
		}
		got[name] = string(b)
	}
	return got
}

// unz85 decodes a payload: length, colon, Z85 text.
func unz85(p string) ([]byte, error) {
	n, text, ok := strings.Cut(p, ":")
	if !ok {
		return nil, errors.New("no length")
	}
	size, err := strconv.Atoi(n)
	if err != nil || len(text)%5 != 0 || len(text)/5*4 < size {
		return nil, fmt.Errorf("length %q for %d characters", n, len(text))
	}
	out := make([]byte, 0, len(text)/5*4)
	for i := 0; i < len(text); i += 5 {
		var v uint64
		for _, c := range []byte(text[i : i+5]) {
			d := strings.IndexByte(z85Alphabet, c)
			if d < 0 {
				return nil, fmt.Errorf("character %q is not Z85", c)
			}
			v = v*85 + uint64(d)
		}
		if v >= 1<<32 {
			return nil, errors.New("group out of range")
		}
		out = append(out, byte(v>>24), byte(v>>16), byte(v>>8), byte(v))
	}
	return out[:size], nil
}

func TestZ85(t *testing.T) {
	// RFC 32's test vector.
	if got := z85([]byte{0x86, 0x4F, 0xD2, 0x6F, 0xB5, 0x59, 0xF7, 0x5B}); got != "HelloWorld" {
		t.Errorf("z85 = %q, want HelloWorld", got)
	}
	for n := 0; n < 40; n++ {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(251*i + 7*n)
		}
		got, err := unz85(strconv.Itoa(n) + ":" + z85(b))
		if err != nil || !bytes.Equal(got, b) {
			t.Fatalf("%d bytes: round trip %v, %v", n, got, err)
		}
	}
}

func TestEmbeddedAssets(t *testing.T) {
	dir := fakeAssets(t)
	figs := testFigures(t)

	h, err := figs["line"].HTML(Assets{Dir: dir, BaseURL: "https://ignored.example/"}, HTMLOptions{})
	if err != nil {
		t.Fatal(err)
	}
	_, script := parts(t, h)
	if !strings.Contains(script, `"mode":"embed"`) || strings.Contains(script, "ignored.example") {
		t.Error("Dir does not take precedence over BaseURL")
	}
	got := payloadsOf(t, script)
	if len(got) != 1 || !strings.Contains(got["echarts"], "fake echarts </script>") {
		t.Errorf("2-D payload = %v, want echarts only", got)
	}

	h, err = figs["surface"].HTML(Assets{Dir: dir}, HTMLOptions{})
	if err != nil {
		t.Fatal(err)
	}
	_, script = parts(t, h)
	got = payloadsOf(t, script)
	if len(got) != 2 || !strings.Contains(got["echarts-gl"], "fake echarts-gl") {
		t.Errorf("3-D payload = %v, want echarts and echarts-gl", got)
	}

	// A changed file is read again.
	if err := os.WriteFile(filepath.Join(dir, ECharts.file()), []byte("window.echarts = {init: function () {}}; // version 2, longer"), 0o644); err != nil {
		t.Fatal(err)
	}
	h, err = figs["line"].HTML(Assets{Dir: dir}, HTMLOptions{})
	if err != nil {
		t.Fatal(err)
	}
	_, script = parts(t, h)
	if got := payloadsOf(t, script); !strings.Contains(got["echarts"], "version 2") {
		t.Errorf("changed asset not reloaded: %q", got["echarts"])
	}
}

// TestEmbedOnce checks HTMLOptions.Embed and Beside: a library the page has
// already is left out, with the folder of its copy named, and WriteBeside
// puts the copies there once.
func TestEmbedOnce(t *testing.T) {
	dir := fakeAssets(t)
	figs := testFigures(t)
	asked := map[Library]int{}
	have := map[Library]bool{ECharts: true}
	o := HTMLOptions{Beside: BesideDir, Embed: func(l Library) bool { asked[l]++; return !have[l] }}
	h, err := figs["surface"].HTML(Assets{Dir: dir}, o)
	if err != nil {
		t.Fatal(err)
	}
	_, script := parts(t, h)
	got := payloadsOf(t, script)
	if len(got) != 1 || got["echarts-gl"] == "" {
		t.Errorf("3-D payload with echarts on the page = %v, want echarts-gl only", got)
	}
	if asked[ECharts] != 1 || asked[EChartsGL] != 1 {
		t.Errorf("Embed asked %v, want each library once", asked)
	}
	if !strings.Contains(script, `"beside":"`+BesideDir+`"`) {
		t.Error("a snippet that leaves a library out does not name the folder of its copy")
	}
	h, err = figs["line"].HTML(Assets{Dir: dir}, o)
	if err != nil {
		t.Fatal(err)
	}
	if _, script = parts(t, h); len(payloadsOf(t, script)) != 0 {
		t.Error("2-D snippet carries echarts though the page has it")
	}
	if strings.Contains(script, "function load(cfg, option)") || !strings.Contains(script, `"`+loaderFile()+`"`) {
		t.Error("a snippet that carries no library carries the loader instead of the stub")
	}
	// Embedding everything names no folder.
	h, err = figs["line"].HTML(Assets{Dir: dir}, HTMLOptions{Beside: BesideDir, Embed: func(Library) bool { return true }})
	if err != nil {
		t.Fatal(err)
	}
	if _, script = parts(t, h); strings.Contains(script, `"beside"`) {
		t.Error("a snippet that carries its libraries names a folder")
	}
	for _, bad := range []string{"../x", "/abs", "a b", `x"y`, "a//b"} {
		if _, err := figs["line"].HTML(Assets{Dir: dir}, HTMLOptions{Beside: bad, OmitAssets: true}); err == nil {
			t.Errorf("no error for Beside %q", bad)
		}
	}

	page := t.TempDir()
	if err := WriteBeside(Assets{Dir: dir}, page); err != nil {
		t.Fatal(err)
	}
	for _, l := range []Library{ECharts, EChartsGL} {
		want, _ := os.ReadFile(filepath.Join(dir, l.file()))
		got, err := os.ReadFile(filepath.Join(page, BesideDir, l.file()))
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("copy of %s: %v, equal %v", l, err, bytes.Equal(got, want))
		}
	}
	if got, err := os.ReadFile(filepath.Join(page, BesideDir, loaderFile())); err != nil || string(got) != loaderFileJS() {
		t.Errorf("copy of the loader: %v", err)
	}
	st, _ := os.Stat(filepath.Join(page, BesideDir, ECharts.file()))
	if err := WriteBeside(Assets{Dir: dir}, page); err != nil {
		t.Fatal(err)
	}
	if st2, _ := os.Stat(filepath.Join(page, BesideDir, ECharts.file())); !os.SameFile(st, st2) {
		t.Error("an unchanged copy was written again")
	}
	if err := WriteBeside(Assets{BaseURL: DefaultBaseURL}, page); err == nil {
		t.Error("no error for WriteBeside without local assets")
	}
	if err := WriteBeside(Assets{Dir: filepath.Join(dir, "missing")}, page); err == nil || !strings.Contains(err.Error(), "make setup") {
		t.Errorf("WriteBeside from a missing folder: %v, want an error naming make setup", err)
	}
}

func TestMissingAssets(t *testing.T) {
	figs := testFigures(t)
	missing := filepath.Join(t.TempDir(), "nowhere")
	_, err := figs["line"].HTML(Assets{Dir: missing}, HTMLOptions{})
	if err == nil {
		t.Fatal("no error for a missing asset directory")
	}
	for _, w := range []string{missing, "make setup", "CONVEXNN_ASSETS", "does not exist"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q does not mention %q", err, w)
		}
	}

	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, ECharts.file()), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := figs["line"].HTML(Assets{Dir: dir}, HTMLOptions{}); err != nil {
		t.Errorf("2-D chart needs only echarts.min.js: %v", err)
	}
	_, err = figs["surface"].HTML(Assets{Dir: dir}, HTMLOptions{})
	if err == nil {
		t.Fatal("no error for a missing echarts-gl.min.js")
	}
	for _, w := range []string{filepath.Join(dir, EChartsGL.file()), "make setup", "CONVEXNN_ASSETS"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q does not mention %q", err, w)
		}
	}
	// OmitAssets does not read the directory.
	if _, err := figs["surface"].HTML(Assets{Dir: missing}, HTMLOptions{OmitAssets: true}); err != nil {
		t.Errorf("OmitAssets read the assets: %v", err)
	}
}

func TestAssetsFromEnv(t *testing.T) {
	t.Setenv(envAssetsDir, "")
	t.Setenv(envAssetsURL, "")
	if a := AssetsFromEnv(); a.Dir != "" || a.BaseURL != DefaultBaseURL {
		t.Errorf("default AssetsFromEnv() = %+v", a)
	}
	t.Setenv(envAssetsURL, "https://mirror.example/assets/")
	if a := AssetsFromEnv(); a.Dir != "" || a.BaseURL != "https://mirror.example/assets/" {
		t.Errorf("with %s: %+v", envAssetsURL, a)
	}
	t.Setenv(envAssetsDir, " /opt/echarts ")
	if a := AssetsFromEnv(); a.Dir != "/opt/echarts" || !a.embedded() {
		t.Errorf("with %s: %+v", envAssetsDir, a)
	}
}

func TestDefaultBaseURL(t *testing.T) {
	var in opts.Initialization
	in.Validate()
	if in.AssetsHost != DefaultBaseURL {
		t.Errorf("DefaultBaseURL = %q, go-echarts' default asset host is %q", DefaultBaseURL, in.AssetsHost)
	}
}

func TestConcurrentHTML(t *testing.T) {
	figs := testFigures(t)
	dir := fakeAssets(t)
	var wg sync.WaitGroup
	for _, f := range figs {
		for range 3 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if _, err := f.HTML(Assets{Dir: dir}, HTMLOptions{}); err != nil {
					t.Error(err)
				}
				if _, err := f.SVG(); err != nil {
					t.Error(err)
				}
			}()
		}
	}
	wg.Wait()
}
