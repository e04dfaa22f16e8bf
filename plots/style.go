// Copyright ©2026 The convexnn Authors. All rights reserved.

package plots

import (
	"fmt"
	"image/color"
	"strconv"

	stdfont "golang.org/x/image/font"

	"github.com/go-echarts/go-echarts/v2/charts"
	"github.com/go-echarts/go-echarts/v2/opts"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// seriesColors is echarts' default palette, used for lines and scatter
// groups in both the interactive and the static chart.
var seriesColors = []string{
	"#5470c6", "#91cc75", "#fac858", "#ee6666", "#73c0de",
	"#3ba272", "#fc8452", "#9a60b4", "#ea7ccc",
}

// overlayColors and overlaySymbols style the scatter groups drawn on top
// of a heatmap: dark, saturated and outlined in white, so they stand out
// from the pale cells. The first two match the negative and positive ends
// of the diverging palette.
var (
	overlayColors  = []string{"#08306b", "#7f0000", "#1b7837", "#6a1b9a", "#e65100"}
	overlaySymbols = []string{"circle", "triangle", "rect", "diamond", "pin"}
)

// Color stops of the heatmap and surface palettes.
var (
	divergingStops  = []string{"#5b8ac6", "#a9c8e6", "#f7f7f7", "#f2b9a6", "#d6604d"}
	sequentialStops = []string{"#440154", "#3b528b", "#21918c", "#5ec962", "#fde725"}
	twoColors       = [2]string{"#9ec2e6", "#f0a78f"}
)

// JavaScript functions used in options. go-echarts embeds them in JSON
// strings, so they use single quotes only and no comments.
const (
	// valueFormatterJS formats tooltip values compactly.
	valueFormatterJS = `function (v) {
	function f(x) {
		if (typeof x !== 'number' || !isFinite(x)) { return String(x); }
		var a = Math.abs(x);
		if (a !== 0 && (a < 1e-3 || a >= 1e6)) { return x.toExponential(3); }
		return String(+x.toPrecision(6));
	}
	return Array.isArray(v) ? v.map(f).join(', ') : f(v);
}`

	// pointTooltipJS formats the tooltip of an [x, y] scatter point.
	pointTooltipJS = `(function () {
	var f = ` + valueFormatterJS + `;
	function esc(s) { return String(s).split('&').join('&amp;').split('<').join('&lt;').split('>').join('&gt;'); }
	return function (p) {
		var v = p.value || [];
		return p.marker + esc(p.seriesName) + '<br>' + f(v[0]) + ', ' + f(v[1]);
	};
})()`

	// axisPointerLabelJS formats the axis value heading an axis tooltip.
	axisPointerLabelJS = `function (p) { return (` + valueFormatterJS + `)(p.value); }`

	// logLabelJS labels a log axis with powers of ten as 1e-5.
	logLabelJS = `function (v) {
	var a = Math.abs(v);
	if (a !== 0 && (a < 1e-3 || a >= 1e5)) {
		var e = Math.round(Math.log(a) / Math.LN10);
		if (Math.abs(a / Math.pow(10, e) - 1) < 1e-9) { return (v < 0 ? '-' : '') + '1e' + e; }
		return v.toExponential(1);
	}
	return String(+v.toPrecision(6));
}`
)

// hexColor parses "#rrggbb".
func hexColor(s string) color.RGBA {
	var r, g, b uint8
	if _, err := fmt.Sscanf(s, "#%02x%02x%02x", &r, &g, &b); err != nil {
		panic("plots: bad color " + s)
	}
	return color.RGBA{R: r, G: g, B: b, A: 255}
}

// ramp is a palette.Palette interpolating linearly between color stops.
type ramp struct {
	stops []string
	n     int
}

// Colors implements palette.Palette.
func (r ramp) Colors() []color.Color {
	n := r.n
	if n < 2 {
		n = 2
	}
	cs := make([]color.Color, n)
	for i := range cs {
		t := float64(i) / float64(n-1) * float64(len(r.stops)-1)
		k := int(t)
		if k >= len(r.stops)-1 {
			k = len(r.stops) - 2
		}
		f := t - float64(k)
		a, b := hexColor(r.stops[k]), hexColor(r.stops[k+1])
		mix := func(x, y uint8) uint8 { return uint8(float64(x) + f*(float64(y)-float64(x)) + 0.5) }
		cs[i] = color.RGBA{R: mix(a.R, b.R), G: mix(a.G, b.G), B: mix(a.B, b.B), A: 255}
	}
	return cs
}

// sans returns Liberation Sans at the given size, close to the sans-serif
// text of the interactive charts.
func sans(size vg.Length, bold bool) font.Font {
	f := font.Font{Typeface: "Liberation", Variant: "Sans", Size: size}
	if bold {
		f.Weight = stdfont.WeightBold
	}
	return f
}

// newStaticPlot returns a gonum plot with the title and axis labels set.
func newStaticPlot(title, xlabel, ylabel string) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	p.Title.TextStyle.Font = sans(13, true)
	p.Title.Padding = vg.Points(6)
	p.X.Label.Text = xlabel
	p.Y.Label.Text = ylabel
	for _, a := range []*plot.Axis{&p.X, &p.Y} {
		a.Label.TextStyle.Font = sans(11, false)
		a.Tick.Label.Font = sans(9, false)
	}
	p.Legend.TextStyle.Font = sans(10, false)
	p.Legend.Top = true
	return p
}

// logTicks marks a log axis like plot.LogTicks, with labels such as 1e-05
// instead of 9.999999999999999e-05.
type logTicks struct{}

// Ticks implements plot.Ticker.
func (logTicks) Ticks(min, max float64) []plot.Tick {
	ts := plot.LogTicks{Prec: -1}.Ticks(min, max)
	for i := range ts {
		if ts[i].Label != "" {
			ts[i].Label = strconv.FormatFloat(ts[i].Value, 'g', 3, 64)
		}
	}
	return ts
}

// xys copies x, y into plotter.XYs.
func xys(x, y []float64) plotter.XYs {
	pts := make(plotter.XYs, len(x))
	for i := range x {
		pts[i].X, pts[i].Y = x[i], y[i]
	}
	return pts
}

// pairs returns the points as echarts [x, y] data values.
func pairs(x, y []float64) [][2]float64 {
	d := make([][2]float64, len(x))
	for i := range x {
		d[i] = [2]float64{round(x[i]), round(y[i])}
	}
	return d
}

// glyph returns the gonum glyph closest to an echarts symbol name.
func glyph(symbol string) draw.GlyphDrawer {
	switch symbol {
	case "triangle":
		return draw.PyramidGlyph{}
	case "rect":
		return draw.BoxGlyph{}
	default:
		return draw.CircleGlyph{}
	}
}

// outlinedScatter returns two gonum scatters drawing filled glyphs of color
// c outlined in white, like the echarts overlay points.
func outlinedScatter(pts plotter.XYs, symbol string, c color.Color, radius vg.Length) ([]plot.Plotter, error) {
	back, err := plotter.NewScatter(pts)
	if err != nil {
		return nil, err
	}
	back.GlyphStyle = draw.GlyphStyle{Color: color.White, Radius: radius + 1.2, Shape: glyph(symbol)}
	front, err := plotter.NewScatter(pts)
	if err != nil {
		return nil, err
	}
	front.GlyphStyle = draw.GlyphStyle{Color: c, Radius: radius, Shape: glyph(symbol)}
	return []plot.Plotter{back, front}, nil
}

// Common echarts option pieces.

func titleOpts(title string) opts.Title {
	return opts.Title{Title: text(title), Left: "center", Top: "6"}
}

func toolboxOpts(zoom bool) opts.Toolbox {
	f := &opts.ToolBoxFeature{
		SaveAsImage: &opts.ToolBoxFeatureSaveAsImage{Show: opts.Bool(true), Title: "save as PNG"},
	}
	if zoom {
		f.DataZoom = &opts.ToolBoxFeatureDataZoom{Show: opts.Bool(true), Title: map[string]string{"zoom": "zoom", "back": "undo zoom"}}
		f.Restore = &opts.ToolBoxFeatureRestore{Show: opts.Bool(true), Title: "reset"}
	}
	return opts.Toolbox{Show: opts.Bool(true), Right: "12", Top: "4", Feature: f}
}

func tooltipOpts(trigger string) opts.Tooltip {
	return opts.Tooltip{Show: opts.Bool(true), Trigger: trigger, ValueFormatter: opts.FuncOpts(valueFormatterJS)}
}

// gridTop is the top margin of the plot area: room for the title and, when
// shown, the legend, which may span the whole width (a scroll legend), so
// it must end above the y-axis name drawn over the plot area.
func gridTop(title string, legend bool) string {
	top := 30
	if title != "" {
		top += 16
	}
	if legend {
		top += 36
	}
	return fmt.Sprint(top)
}

func legendOpts(show bool, title string) opts.Legend {
	top := "6"
	if title != "" {
		top = "32"
	}
	return opts.Legend{Show: opts.Bool(show), Type: "scroll", Top: top, Left: "center"}
}

// frameOpts returns the options Line, Scatter and Bar share: the chart's
// size and background, the title, the legend (shown when a series is
// named), the toolbox (with zoom buttons when zoom is set) and a plot area
// with room for them.
func frameOpts(w, h int, title string, named, zoom bool) []charts.GlobalOpts {
	return []charts.GlobalOpts{
		charts.WithInitializationOpts(initOpts(w, h)),
		charts.WithTitleOpts(titleOpts(title)),
		charts.WithLegendOpts(legendOpts(named, title)),
		charts.WithToolboxOpts(toolboxOpts(zoom)),
		charts.WithGridOpts(opts.Grid{Left: "24", Right: "40", Top: gridTop(title, named), Bottom: "40", ContainLabel: opts.Bool(true)}),
	}
}
