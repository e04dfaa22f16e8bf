// Copyright ©2026 The convexnn Authors. All rights reserved.

package plots

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-echarts/go-echarts/v2/charts"
	"github.com/go-echarts/go-echarts/v2/opts"
)

// The smoke pages (written by writeSmokePages, checked in a real browser by
// TestSmokePagesRenderInChromium; set CONVEXNN_PLOTS_SMOKE=DIR to keep them
// for a look by hand) each log a "SMOKE {...}" summary to the console
// (charts drawn, error boxes, how echarts was loaded); live.html logs
// "LIVE {...}". The pages are index.html (embedded assets), require.html
// (embedded, with RequireJS on the page and outputs inserted the way classic
// Jupyter does), url.html and url-require.html (assets loaded by URL), and
// broken.html and broken-require.html (a URL that fails, showing the error
// message); once.html and once-require.html (each library embedded in the
// first output that needs it and left out of the others, as in a notebook),
// beside.html and beside-require.html (no output carries a library: they load
// the copies that WriteBeside put next to the page), and nowhere.html (no
// output carries a library and there is no copy: every chart says so).
// writeSmokePages writes the smoke pages into out, taking echarts, echarts-gl and require.js from assets.
func writeSmokePages(t *testing.T, out, assets string) {
	t.Helper()
	if err := os.MkdirAll(out, 0o755); err != nil {
		t.Fatal(err)
	}
	figs := smokeFigures(t)
	writeLivePage(t, out, Assets{Dir: assets})
	absAssets, err := filepath.Abs(assets)
	if err != nil {
		t.Fatal(err)
	}
	requireJS := "file://" + filepath.Join(absAssets, "require.js")
	embed := Assets{Dir: assets}
	url := Assets{BaseURL: "file://" + absAssets}
	broken := Assets{BaseURL: "file://" + filepath.Join(absAssets, "missing")}

	if err := WriteBeside(embed, out); err != nil {
		t.Fatal(err)
	}
	pages := []struct {
		name    string
		a       Assets
		require bool // RequireJS in <head>
		jupyter bool // insert outputs like classic Jupyter: scripts run before the output is attached
		once    bool // each library embedded in the first output that needs it only
		beside  string
	}{
		{name: "index.html", a: embed},
		{name: "require.html", a: embed, require: true, jupyter: true},
		{name: "url.html", a: url},
		{name: "url-require.html", a: url, require: true, jupyter: true},
		{name: "broken.html", a: broken},
		{name: "broken-require.html", a: broken, require: true, jupyter: true},
		{name: "once.html", a: embed, once: true, beside: "missing-assets"},
		{name: "once-require.html", a: embed, require: true, jupyter: true, once: true, beside: "missing-assets"},
		{name: "beside.html", a: embed, beside: BesideDir},
		{name: "beside-require.html", a: embed, require: true, jupyter: true, beside: BesideDir},
		{name: "nowhere.html", a: embed, beside: "missing-assets"},
	}
	for _, p := range pages {
		var snippets []string
		embedded := map[Library]bool{}
		for _, f := range figs {
			o := HTMLOptions{Beside: p.beside}
			if p.beside != "" {
				o.Embed = func(l Library) bool {
					if !p.once || embedded[l] {
						return false
					}
					embedded[l] = true
					return true
				}
			}
			s, err := f(p.a, o)
			if err != nil {
				t.Fatal(err)
			}
			snippets = append(snippets, s)
		}
		// A live-update style output reusing the library.
		s, err := figs[0](p.a, HTMLOptions{OmitAssets: true, NoStatic: true, Beside: p.beside})
		if err != nil {
			t.Fatal(err)
		}
		snippets = append(snippets, s)

		var b strings.Builder
		b.WriteString("<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>plots smoke</title>\n")
		if p.require {
			b.WriteString(`<script src="` + requireJS + `"></script>` + "\n")
		}
		b.WriteString(`<script>
function jupyterAppend(html) {
  var out = document.createElement('div');
  out.className = 'output';
  out.innerHTML = html;
  var scripts = out.querySelectorAll('script');
  for (var i = 0; i < scripts.length; i++) {
    var n = document.createElement('script');
    n.text = scripts[i].text;
    document.head.appendChild(n).parentNode.removeChild(n);
  }
  document.body.appendChild(out);
}
</script>
</head><body style="font-family:sans-serif">
<h1>` + p.name + "</h1>\n")
		for _, s := range snippets {
			if p.jupyter {
				j, err := json.Marshal(s)
				if err != nil {
					t.Fatal(err)
				}
				b.WriteString("<script>jupyterAppend(" + string(j) + ");</script>\n")
			} else {
				b.WriteString("<div class=\"output\">" + s + "</div>\n")
			}
		}
		b.WriteString(`<script>
setTimeout(function () {
  var G = window.__convexnnECharts || {};
  console.log('SMOKE ' + JSON.stringify({
    charts: document.querySelectorAll('.convexnn-chart').length,
    drawn: document.querySelectorAll('.convexnn-chart[data-convexnn-drawn]').length,
    canvases: document.querySelectorAll('.convexnn-chart canvas').length,
    errors: document.querySelectorAll('.convexnn-chart-error').length,
    fallbacks: document.querySelectorAll('img.convexnn-static').length,
    windowECharts: typeof window.echarts,
    windowGL: typeof window['echarts-gl'],
    amd: !!G.amd,
    keys: Object.keys(G),
    requirejs: typeof window.requirejs
  }));
  if (!window.echarts) { return; }
  var boxes = document.querySelectorAll('.convexnn-chart-canvas');
  var probes = [[0, 0, 120], [1, 0, 100], [1, 1, 3], [3, 0, 40]];
  probes.forEach(function (pr, n) {
    setTimeout(function () {
      var chart = echarts.getInstanceByDom(boxes[pr[0]]);
      chart.dispatchAction({type: 'showTip', seriesIndex: pr[1], dataIndex: pr[2]});
    }, 500 * n);
    setTimeout(function () {
      var tips = boxes[pr[0]].parentNode.querySelectorAll('div');
      var text = '';
      tips.forEach(function (d) { if (d.style.zIndex === '9999999' || /pointer-events: none/.test(d.getAttribute('style') || '')) { text += d.innerText; } });
      console.log('TIP ' + pr.join(',') + ': ' + text.replace(/\n/g, ' | '));
    }, 500 * n + 300);
  });
}, 4000);
</script>
`)
		b.WriteString("</body></html>\n")
		if err := os.WriteFile(filepath.Join(out, p.name), []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// writeLivePage writes live.html: an output updated many times with
// OmitAssets snippets, inserted the way JupyterLab does (innerHTML, then
// the scripts re-created in place), and another output detached from the
// page and attached again.
func writeLivePage(t *testing.T, out string, a Assets) {
	t.Helper()
	first, err := Line(LineOptions{Title: "live", LogY: true}, Series{Name: "loss", X: []float64{0}, Y: []float64{1}})
	if err != nil {
		t.Fatal(err)
	}
	firstHTML, err := first.HTML(a, HTMLOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var frames []string
	var x, y []float64
	for i := 0; i < 30; i++ {
		x = append(x, float64(i))
		y = append(y, math.Pow(0.8, float64(i)))
		f, err := Line(LineOptions{Title: "live", LogY: true}, Series{Name: "loss", X: x, Y: y})
		if err != nil {
			t.Fatal(err)
		}
		h, err := f.HTML(a, HTMLOptions{OmitAssets: true, NoStatic: true})
		if err != nil {
			t.Fatal(err)
		}
		frames = append(frames, h)
	}
	other, err := Scatter(ScatterOptions{Title: "detached and attached again"}, Points{Name: "p", X: []float64{1, 2, 3}, Y: []float64{3, 1, 2}})
	if err != nil {
		t.Fatal(err)
	}
	otherHTML, err := other.HTML(a, HTMLOptions{})
	if err != nil {
		t.Fatal(err)
	}
	js, err := json.Marshal(map[string]interface{}{"first": firstHTML, "frames": frames, "other": otherHTML})
	if err != nil {
		t.Fatal(err)
	}
	page := `<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>live</title></head><body>
<div id="live" class="output"></div><div id="otherwrap"><div id="other" class="output"></div></div>
<script>
var data = ` + string(js) + `;
function labInsert(container, html) {
  container.innerHTML = html;
  container.querySelectorAll('script').forEach(function (old) {
    var n = document.createElement('script');
    n.text = old.text;
    old.parentNode.replaceChild(n, old);
  });
}
labInsert(document.getElementById('live'), data.first);
labInsert(document.getElementById('other'), data.other);
var k = 0;
var timer = setInterval(function () {
  if (k >= data.frames.length) { clearInterval(timer); return; }
  labInsert(document.getElementById('live'), data.frames[k++]);
}, 100);
var other = document.getElementById('other');
setTimeout(function () { other.parentNode.removeChild(other); }, 4000);
setTimeout(function () {
  var G = window.__convexnnECharts;
  var c = other.querySelector('.convexnn-chart');
  console.log('DETACHED live=' + G.live.length + ' otherDetached=' + c.hasAttribute('data-convexnn-detached') + ' canvases=' + c.querySelectorAll('canvas').length);
  document.getElementById('otherwrap').appendChild(other);
}, 5000);
setTimeout(function () {
  var G = window.__convexnnECharts;
  console.log('LIVE ' + JSON.stringify({
    live: G.live.length,
    charts: document.querySelectorAll('.convexnn-chart').length,
    canvases: document.querySelectorAll('.convexnn-chart canvas').length,
    otherDrawn: other.querySelector('.convexnn-chart[data-convexnn-drawn]:not([data-convexnn-detached])') !== null,
    otherCanvas: other.querySelectorAll('canvas').length,
    points: echarts.getInstanceByDom(document.querySelector('#live .convexnn-chart-canvas')).getOption().series[0].data.length
  }));
}, 6500);
</script>
</body></html>
`
	if err := os.WriteFile(filepath.Join(out, "live.html"), []byte(page), 0o644); err != nil {
		t.Fatal(err)
	}
}

func smokeFigures(t *testing.T) []func(Assets, HTMLOptions) (string, error) {
	t.Helper()
	n := 200
	x := make([]float64, n)
	y1 := make([]float64, n)
	y2 := make([]float64, n)
	for i := range x {
		x[i] = float64(i)
		y1[i] = math.Pow(0.93, float64(i)) + 1e-9
		y2[i] = 1 / float64(i+1)
	}
	line, err := Line(LineOptions{Title: "Convergence </script><!-- \u2028", XLabel: "iteration", YLabel: "f - f*", LogY: true},
		Series{Name: "gradient descent", X: x, Y: y1}, Series{Name: "subgradient <b>", X: x, Y: y2})
	if err != nil {
		t.Fatal(err)
	}
	g := Grid{}
	for i := 0; i <= 60; i++ {
		g.X = append(g.X, -3+6*float64(i)/60)
	}
	for i := 0; i <= 40; i++ {
		g.Y = append(g.Y, -2+4*float64(i)/40)
	}
	for _, yy := range g.Y {
		row := make([]float64, len(g.X))
		for j, xx := range g.X {
			row[j] = math.Tanh(xx*xx/2 + yy - 1)
		}
		g.Z = append(g.Z, row)
	}
	neg := Points{Name: "y = -1"}
	pos := Points{Name: "y = +1"}
	for i := 0; i < 40; i++ {
		a := float64(i) * 2.399
		r := 0.3 + 1.6*float64(i%10)/10
		px, py := r*math.Cos(a)*1.4, r*math.Sin(a)
		if px*px/2+py-1 < 0 {
			neg.X, neg.Y = append(neg.X, px), append(neg.Y, py)
		} else {
			pos.X, pos.Y = append(pos.X, px), append(pos.Y, py)
		}
	}
	heat, err := Heatmap(HeatmapOptions{Title: "Decision function", XLabel: "x1", YLabel: "x2", Diverging: true}, g, neg, pos)
	if err != nil {
		t.Fatal(err)
	}
	cls := Grid{X: g.X, Y: g.Y}
	for _, row := range g.Z {
		r := make([]float64, len(row))
		for j, v := range row {
			r[j] = math.Copysign(1, v)
		}
		cls.Z = append(cls.Z, r)
	}
	regions, err := Heatmap(HeatmapOptions{Title: "Decision regions", XLabel: "x1", YLabel: "x2"}, cls, neg, pos)
	if err != nil {
		t.Fatal(err)
	}
	sg := Grid{}
	for i := 0; i <= 30; i++ {
		sg.X = append(sg.X, -2+4*float64(i)/30)
		sg.Y = append(sg.Y, -2+4*float64(i)/30)
	}
	for _, yy := range sg.Y {
		row := make([]float64, len(sg.X))
		for j, xx := range sg.X {
			row[j] = xx*xx + 0.5*yy*yy + 0.3*xx*yy
		}
		sg.Z = append(sg.Z, row)
	}
	surf, err := Surface(SurfaceOptions{Title: "Loss surface", XLabel: "w1", YLabel: "w2", ZLabel: "loss"}, sg)
	if err != nil {
		t.Fatal(err)
	}
	sc3 := charts.NewScatter3D()
	sc3.SetGlobalOptions(charts.WithTitleOpts(opts.Title{Title: "go-echarts Scatter3D via ChartHTML"}),
		charts.WithInitializationOpts(opts.Initialization{Width: "600px", Height: "360px"}))
	var d []opts.Chart3DData
	for i := 0; i < 50; i++ {
		d = append(d, opts.Chart3DData{Value: []interface{}{math.Cos(float64(i) / 5), math.Sin(float64(i) / 5), float64(i) / 10}})
	}
	sc3.AddSeries("helix", d)
	return []func(Assets, HTMLOptions) (string, error){
		line.HTML, heat.HTML, regions.HTML, surf.HTML,
		func(a Assets, o HTMLOptions) (string, error) { return ChartHTML(sc3, a, o) },
	}
}
