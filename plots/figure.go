// Copyright ©2026 The convexnn Authors. All rights reserved.

package plots

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/go-echarts/go-echarts/v2/charts"
	"github.com/go-echarts/go-echarts/v2/opts"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"
)

// Default chart size in CSS pixels.
const (
	defaultWidth  = 720
	defaultHeight = 400
)

// staticDPI is the resolution of the static PNG: one PNG pixel per CSS
// pixel of the chart.
const staticDPI = 96

// Figure is one chart: an interactive go-echarts chart plus, where the
// chart type allows, a static twin drawn with gonum/plot.
//
// A Figure is immutable once built and safe for concurrent use.
type Figure struct {
	kind          string // kind2D or kind3D
	title         string
	width, height int    // CSS pixels
	option        string // echarts option, rendered once by go-echarts

	mu     sync.Mutex // guards static, whose Draw is not concurrency safe, and png
	static *plot.Plot // nil when the chart type has no static twin
	png    []byte     // static twin as PNG, once drawn
}

// Series is a line: the points (X[i], Y[i]) joined in order.
type Series struct {
	Name string
	X, Y []float64
}

// Points is a group of scatter points (X[i], Y[i]).
type Points struct {
	Name string
	X, Y []float64
}

// Grid is z on a regular grid: Z[i][j] is the value at (X[j], Y[i]).
// X and Y must be strictly increasing.
type Grid struct {
	X, Y []float64
	Z    [][]float64
}

// HTML returns the notebook snippet for f: a
// <div class="convexnn-chart" data-chart-kind="2d"|"3d"> with a unique id
// and the chart's size, holding the static PNG
// (<img src="data:image/png;base64,...">) as a fallback for viewers that
// run no JavaScript, then a <script> that loads the assets as a says,
// removes the fallback and draws the chart.
func (f *Figure) HTML(a Assets, o HTMLOptions) (string, error) {
	if f == nil {
		return "", errors.New("plots: HTML of a nil Figure")
	}
	s := snippet{
		kind:   f.kind,
		option: f.option,
		width:  strconv.Itoa(f.width) + "px",
		height: strconv.Itoa(f.height) + "px",
		alt:    f.title,
	}
	if s.alt == "" {
		s.alt = "chart"
	}
	if !o.NoStatic && f.static != nil {
		png, err := f.PNG()
		if err != nil {
			return "", err
		}
		s.png = png
	}
	return renderSnippet(s, a, o)
}

// PNG returns the static twin of f as a PNG image with one pixel per CSS
// pixel of the interactive chart, in at most 64 colors (see palettedPNG). It is an error if the chart type has no
// static twin.
func (f *Figure) PNG() ([]byte, error) {
	if f != nil {
		f.mu.Lock()
		b := f.png
		f.mu.Unlock()
		if b != nil {
			return bytes.Clone(b), nil
		}
	}
	c, err := f.drawStatic(func(w, h vg.Length) vg.CanvasWriterTo {
		return vgimg.PngCanvas{Canvas: vgimg.NewWith(vgimg.UseWH(w, h), vgimg.UseDPI(staticDPI))}
	})
	if err != nil {
		return nil, err
	}
	b, err := palettedPNG(c.(vgimg.PngCanvas).Image())
	if err != nil {
		return nil, fmt.Errorf("plots: encoding PNG: %v", err)
	}
	f.mu.Lock()
	f.png = b
	f.mu.Unlock()
	return bytes.Clone(b), nil
}

// SVG returns the static twin of f as an SVG image. It is an error if the
// chart type has no static twin.
func (f *Figure) SVG() ([]byte, error) {
	c, err := f.drawStatic(func(w, h vg.Length) vg.CanvasWriterTo {
		return vgsvg.New(w, h)
	})
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	if _, err := c.WriteTo(&buf); err != nil {
		return nil, fmt.Errorf("plots: encoding SVG: %v", err)
	}
	return buf.Bytes(), nil
}

// drawStatic draws the static twin on a canvas made by newCanvas.
func (f *Figure) drawStatic(newCanvas func(w, h vg.Length) vg.CanvasWriterTo) (c vg.CanvasWriterTo, err error) {
	if f == nil {
		return nil, errors.New("plots: nil Figure")
	}
	if f.static == nil {
		return nil, errors.New("plots: this chart type has no static image")
	}
	w := vg.Length(f.width) * vg.Inch / staticDPI
	h := vg.Length(f.height) * vg.Inch / staticDPI
	c = newCanvas(w, h)
	f.mu.Lock()
	defer f.mu.Unlock()
	defer func() {
		if r := recover(); r != nil {
			c, err = nil, fmt.Errorf("plots: drawing the static image: %v", r)
		}
	}()
	f.static.Draw(draw.New(c))
	return c, nil
}

// newFigure renders chart's option and assembles a Figure.
func newFigure(kind, title string, width, height int, chart chartRenderer, static *plot.Plot) (*Figure, error) {
	sn, err := renderChart(chart)
	if err != nil {
		return nil, fmt.Errorf("plots: %v", err)
	}
	return &Figure{
		kind:   kind,
		title:  title,
		width:  width,
		height: height,
		option: sn.Option,
		static: static,
	}, nil
}

// size validates a chart size, filling in the defaults.
func size(fn string, w, h int) (int, int, error) {
	if w < 0 || h < 0 {
		return 0, 0, fmt.Errorf("plots: %s: negative size %dx%d", fn, w, h)
	}
	if w == 0 {
		w = defaultWidth
	}
	if h == 0 {
		h = defaultHeight
	}
	const minSize, maxSize = 100, 10000
	if w < minSize || h < minSize || w > maxSize || h > maxSize {
		return 0, 0, fmt.Errorf("plots: %s: size %dx%d px is out of range [%d, %d]", fn, w, h, minSize, maxSize)
	}
	return w, h, nil
}

// checkXY validates one series or point group: equal lengths and finite
// values, and positive Y when positiveY is set.
func checkXY(fn, what string, index int, name string, x, y []float64, positiveY bool) error {
	label := fmt.Sprintf("%s %d", what, index)
	if name != "" {
		label = fmt.Sprintf("%s %d (%q)", what, index, name)
	}
	if len(x) != len(y) {
		return fmt.Errorf("plots: %s: %s has %d X values but %d Y values", fn, label, len(x), len(y))
	}
	for i, v := range x {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return fmt.Errorf("plots: %s: %s has X[%d] = %v; values must be finite", fn, label, i, v)
		}
	}
	for i, v := range y {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return fmt.Errorf("plots: %s: %s has Y[%d] = %v; values must be finite", fn, label, i, v)
		}
		if positiveY && v <= 0 {
			return fmt.Errorf("plots: %s: LogY needs positive values, but %s has Y[%d] = %v", fn, label, i, v)
		}
	}
	return nil
}

// checkGroups validates the series or point groups of a chart with checkXY,
// calling each what and its index, and reports whether any is named.
func checkGroups[G Series | Points](fn, what string, g []G, positiveY bool) (named bool, err error) {
	for i := range g {
		p := Points(g[i])
		if err := checkXY(fn, what, i, p.Name, p.X, p.Y, positiveY); err != nil {
			return false, err
		}
		named = named || p.Name != ""
	}
	return named, nil
}

// checkGrid validates g and reports its value range.
func checkGrid(fn string, g Grid, minSide int) (zmin, zmax float64, err error) {
	if len(g.X) < minSide || len(g.Y) < minSide {
		if len(g.X) == 0 || len(g.Y) == 0 {
			return 0, 0, fmt.Errorf("plots: %s: empty grid (%d X values, %d Y values)", fn, len(g.X), len(g.Y))
		}
		return 0, 0, fmt.Errorf("plots: %s: grid of %dx%d is too small; it needs at least %d values along X and Y", fn, len(g.X), len(g.Y), minSide)
	}
	for _, ax := range []struct {
		name string
		v    []float64
	}{{"X", g.X}, {"Y", g.Y}} {
		for i, v := range ax.v {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return 0, 0, fmt.Errorf("plots: %s: grid %s[%d] = %v; values must be finite", fn, ax.name, i, v)
			}
			if i > 0 && !(v > ax.v[i-1]) {
				return 0, 0, fmt.Errorf("plots: %s: grid %s must be strictly increasing, but %s[%d] = %v follows %s[%d] = %v", fn, ax.name, ax.name, i, v, ax.name, i-1, ax.v[i-1])
			}
		}
	}
	if len(g.Z) != len(g.Y) {
		return 0, 0, fmt.Errorf("plots: %s: grid Z has %d rows but Y has %d values", fn, len(g.Z), len(g.Y))
	}
	zmin, zmax = math.Inf(1), math.Inf(-1)
	for i, row := range g.Z {
		if len(row) != len(g.X) {
			return 0, 0, fmt.Errorf("plots: %s: ragged grid: row Z[%d] has %d values but X has %d", fn, i, len(row), len(g.X))
		}
		for j, v := range row {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return 0, 0, fmt.Errorf("plots: %s: grid Z[%d][%d] = %v; values must be finite", fn, i, j, v)
			}
			zmin = math.Min(zmin, v)
			zmax = math.Max(zmax, v)
		}
	}
	return zmin, zmax, nil
}

// edges returns the cell boundaries of grid coordinates c: midpoints
// between neighbours, extended by half a step at both ends.
func edges(c []float64) []float64 {
	e := make([]float64, len(c)+1)
	if len(c) == 1 {
		e[0], e[1] = c[0]-0.5, c[0]+0.5
		return e
	}
	for i := 1; i < len(c); i++ {
		e[i] = (c[i-1] + c[i]) / 2
	}
	e[0] = c[0] - (c[1]-c[0])/2
	e[len(c)] = c[len(c)-1] + (c[len(c)-1]-c[len(c)-2])/2
	return e
}

// round returns v rounded to 7 significant digits, enough for a chart and
// much shorter in JSON than the shortest exact representation.
func round(v float64) float64 { return roundN(v, 7) }

// round5 rounds grid values, of which there are many, to 5 significant
// digits.
func round5(v float64) float64 { return roundN(v, 5) }

// roundIn returns v, one of values in [lo, hi], rounded to 1/1000 to 1/10000
// of that range (to the power of ten at or below (hi − lo)/1000), as a
// heat map's cells are written: finer than any color step and than the eye
// reads a tooltip, and a third shorter than five significant digits. A single
// value (lo = hi) keeps five significant digits.
func roundIn(v, lo, hi float64) float64 {
	if !(hi > lo) || math.IsInf(hi-lo, 0) {
		return round5(v)
	}
	e := int(math.Floor(math.Log10(hi-lo))) - 3
	if e >= 0 {
		return math.Round(v/math.Pow10(e)) * math.Pow10(e)
	}
	r, err := strconv.ParseFloat(strconv.FormatFloat(v, 'f', -e, 64), 64)
	if err != nil {
		return v
	}
	return r
}

// roundN returns v rounded to n significant digits.
func roundN(v float64, n int) float64 {
	r, err := strconv.ParseFloat(strconv.FormatFloat(v, 'g', n, 64), 64)
	if err != nil {
		return v
	}
	return r
}

// text neutralizes go-echarts' JavaScript function marker "__f__" in user
// text, which would otherwise turn a string into code. A zero-width space
// keeps the text looking the same.
func text(s string) string {
	for strings.Contains(s, "__f__") {
		s = strings.ReplaceAll(s, "__f__", "_\u200b_f__")
	}
	return s
}

// patch is a go-echarts ConfigurationVisitor that adds options go-echarts
// has no field for: top-level keys, keys merged into the first x and y
// axes, and per-series keys merged into the series objects.
type patch struct {
	charts.BaseConfigurationVisitor
	top          map[string]interface{}
	xAxis, yAxis map[string]interface{}
	series       []map[string]interface{} // by series index; nil entries are skipped
}

// Visit implements charts.ConfigurationVisitor.
func (p *patch) Visit(obj map[string]interface{}) {
	for k, v := range p.top {
		obj[k] = v
	}
}

// VisitXAxis implements charts.ConfigurationVisitor.
func (p *patch) VisitXAxis(a []opts.XAxis) interface{} { return mergeFirst(a, p.xAxis) }

// VisitYAxis implements charts.ConfigurationVisitor.
func (p *patch) VisitYAxis(a []opts.YAxis) interface{} { return mergeFirst(a, p.yAxis) }

// mergeFirst returns the axes a with extra merged into the first, or a
// itself when there is nothing to merge.
func mergeFirst[Axis any](a []Axis, extra map[string]interface{}) interface{} {
	if len(a) == 0 || len(extra) == 0 {
		return a
	}
	out := make([]interface{}, len(a))
	for i := range a {
		out[i] = a[i]
	}
	out[0] = merged{base: a[0], extra: extra}
	return out
}

// VisitSeriesOpt implements charts.ConfigurationVisitor.
func (p *patch) VisitSeriesOpt(s charts.MultiSeries) interface{} {
	out := make([]interface{}, len(s))
	for i := range s {
		var extra map[string]interface{}
		if i < len(p.series) {
			extra = p.series[i]
		}
		if len(extra) == 0 {
			out[i] = s[i]
			continue
		}
		out[i] = merged{base: s[i], extra: extra}
	}
	return out
}

// merged marshals a go-echarts option object with extra keys, which
// replace keys of the same name.
type merged struct {
	base  interface{}
	extra map[string]interface{}
}

// MarshalJSON implements json.Marshaler.
func (m merged) MarshalJSON() ([]byte, error) {
	b, err := jsonText(m.base)
	if err != nil {
		return nil, err
	}
	// Decode to ordered key/value pairs so that the base's key order,
	// and so the output, stays deterministic.
	var fields []struct {
		key string
		val json.RawMessage
	}
	dec := json.NewDecoder(strings.NewReader(b))
	dec.UseNumber()
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, fmt.Errorf("plots: option part is not an object: %s", b)
	}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil, err
		}
		k, _ := t.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, err
		}
		if _, ok := m.extra[k]; ok {
			continue
		}
		fields = append(fields, struct {
			key string
			val json.RawMessage
		}{k, v})
	}
	keys := make([]string, 0, len(m.extra))
	for k := range m.extra {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var e strings.Builder
	e.WriteByte('{')
	write := func(k, v string) {
		if e.Len() > 1 {
			e.WriteByte(',')
		}
		kb, _ := jsonText(k)
		e.WriteString(kb)
		e.WriteByte(':')
		e.WriteString(v)
	}
	for _, f := range fields {
		write(f.key, string(f.val))
	}
	for _, k := range keys {
		vb, err := jsonText(m.extra[k])
		if err != nil {
			return nil, err
		}
		write(k, vb)
	}
	e.WriteByte('}')
	return []byte(e.String()), nil
}
