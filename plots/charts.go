// Copyright ©2026 The convexnn Authors. All rights reserved.

package plots

import (
	"fmt"
	"html"
	"math"
	"strconv"
	"strings"
	"unicode/utf16"

	"github.com/go-echarts/go-echarts/v2/charts"
	"github.com/go-echarts/go-echarts/v2/opts"
	"github.com/go-echarts/go-echarts/v2/types"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// LineOptions configures Line.
type LineOptions struct {
	Title, XLabel, YLabel string

	// LogY draws the y axis on a log scale, as for convergence
	// charts. All Y values must then be positive.
	LogY bool

	// Width and Height are the chart size in CSS pixels;
	// zero means the default 720x400.
	Width, Height int
}

// Line draws each series as a line on value axes.
//
// Series without a name are called "series N"; the legend is shown when
// at least one series is named. A series may be empty.
func Line(o LineOptions, s ...Series) (*Figure, error) {
	const fn = "Line"
	w, h, err := size(fn, o.Width, o.Height)
	if err != nil {
		return nil, err
	}
	if len(s) == 0 {
		return nil, fmt.Errorf("plots: %s: no series", fn)
	}
	named, err := checkGroups(fn, "series", s, o.LogY)
	if err != nil {
		return nil, err
	}

	yAxis := opts.YAxis{Type: "value", Name: text(o.YLabel), Scale: opts.Bool(true), AxisLine: offZero()}
	if o.LogY {
		yAxis.Type = "log"
		yAxis.AxisLabel = &opts.AxisLabel{Formatter: opts.FuncOpts(logLabelJS)}
	}
	c := charts.NewLine()
	c.SetGlobalOptions(frameOpts(w, h, o.Title, named, true)...)
	c.SetGlobalOptions(
		charts.WithTooltipOpts(tooltipOpts("axis")),
		charts.WithXAxisOpts(opts.XAxis{Type: "value", Name: text(o.XLabel), NameLocation: "middle", NameGap: 28, Scale: opts.Bool(true), AxisLine: offZero(),
			AxisPointer: &opts.AxisPointer{Label: &opts.Label{Formatter: string(opts.FuncOpts(axisPointerLabelJS))}}}),
		charts.WithYAxisOpts(yAxis),
	)
	p := &patch{}
	for i, se := range s {
		name := se.Name
		if name == "" {
			name = "series " + strconv.Itoa(i+1)
		}
		col := seriesColors[i%len(seriesColors)]
		data := pairs(thinLine(se.X, se.Y, w/2))
		c.AddSeries(text(name), nil, charts.WithSeriesOpts(func(ss *charts.SingleSeries) {
			ss.Data = data
			ss.ShowSymbol = opts.Bool(len(data) <= 60)
			ss.Symbol = "circle"
			ss.Color = col
			ss.LineStyle = &opts.LineStyle{Width: 2, Color: col}
			ss.ItemStyle = &opts.ItemStyle{Color: col}
		}))
		extra := map[string]interface{}{"emphasis": map[string]interface{}{"focus": "series"}}
		if len(data) > 2000 {
			extra["sampling"] = "lttb"
		}
		p.series = append(p.series, extra)
	}
	c.Accept(p)

	// Static twin.
	sp := newStaticPlot(o.Title, o.XLabel, o.YLabel)
	for i, se := range s {
		if len(se.X) == 0 {
			continue
		}
		l, err := plotter.NewLine(xys(se.X, se.Y))
		if err != nil {
			return nil, fmt.Errorf("plots: %s: series %d: %v", fn, i, err)
		}
		l.LineStyle.Width = vg.Points(1.5)
		l.LineStyle.Color = hexColor(seriesColors[i%len(seriesColors)])
		sp.Add(l)
		if se.Name != "" {
			sp.Legend.Add(se.Name, l)
		}
	}
	sp.Add(plotter.NewGrid())
	fixRange(&sp.X, false)
	if o.LogY {
		sp.Y.Scale = plot.LogScale{}
		sp.Y.Tick.Marker = logTicks{}
	}
	fixRange(&sp.Y, o.LogY)
	return newFigure(kind2D, o.Title, w, h, c, sp)
}

// thinLine returns the points of a line as the interactive chart carries
// them: a line of more than 2·buckets points is cut into buckets runs of
// consecutive points, each kept as its lowest and highest point in their
// order, so that the drawn line keeps its extremes at the chart's resolution
// (buckets is half the chart's width in pixels) while the notebook carries
// about a thousand points per series instead of, say, 20 000 iterations. The
// first and last points are always kept; the static twin draws every point.
func thinLine(x, y []float64, buckets int) ([]float64, []float64) {
	n := len(x)
	if buckets < 1 || n <= 2*buckets {
		return x, y
	}
	tx := make([]float64, 0, 2*buckets+2)
	ty := make([]float64, 0, 2*buckets+2)
	keep := func(i int) {
		if k := len(tx); k > 0 && tx[k-1] == x[i] && ty[k-1] == y[i] {
			return
		}
		tx, ty = append(tx, x[i]), append(ty, y[i])
	}
	keep(0)
	for b := 0; b < buckets; b++ {
		lo, hi := b*n/buckets, (b+1)*n/buckets
		imin, imax := lo, lo
		for i := lo; i < hi; i++ { // finite values: checkGroups refuses others
			if y[i] < y[imin] {
				imin = i
			}
			if y[i] > y[imax] {
				imax = i
			}
		}
		keep(min(imin, imax))
		keep(max(imin, imax))
	}
	keep(n - 1)
	return tx, ty
}

// ScatterOptions configures Scatter.
type ScatterOptions struct {
	Title, XLabel, YLabel string

	// Width and Height are the chart size in CSS pixels;
	// zero means the default 720x400.
	Width, Height int
}

// Scatter draws each group of points as scatter marks on value axes.
//
// Groups without a name are called "group N"; the legend is shown when at
// least one group is named. A group may be empty.
func Scatter(o ScatterOptions, g ...Points) (*Figure, error) {
	const fn = "Scatter"
	w, h, err := size(fn, o.Width, o.Height)
	if err != nil {
		return nil, err
	}
	if len(g) == 0 {
		return nil, fmt.Errorf("plots: %s: no point groups", fn)
	}
	named, err := checkGroups(fn, "group", g, false)
	if err != nil {
		return nil, err
	}
	c := charts.NewScatter()
	c.SetGlobalOptions(frameOpts(w, h, o.Title, named, true)...)
	c.SetGlobalOptions(
		charts.WithTooltipOpts(opts.Tooltip{Show: opts.Bool(true), Trigger: "item", Formatter: opts.FuncOpts(pointTooltipJS)}),
		charts.WithXAxisOpts(opts.XAxis{Type: "value", Name: text(o.XLabel), NameLocation: "middle", NameGap: 28, Scale: opts.Bool(true), AxisLine: offZero()}),
		charts.WithYAxisOpts(opts.YAxis{Type: "value", Name: text(o.YLabel), Scale: opts.Bool(true), AxisLine: offZero()}),
	)
	// Keep points on the edge of the data fully inside the plot area.
	gap := map[string]interface{}{"boundaryGap": []string{"4%", "4%"}}
	c.Accept(&patch{xAxis: gap, yAxis: gap})
	for i, pg := range g {
		col := seriesColors[i%len(seriesColors)]
		data := pairs(pg.X, pg.Y)
		c.AddSeries(text(groupName(pg.Name, i)), nil, charts.WithSeriesOpts(func(ss *charts.SingleSeries) {
			ss.Data = data
			ss.SymbolSize = 8
			ss.ItemStyle = &opts.ItemStyle{Color: col, Opacity: opts.Float(0.85)}
		}))
	}

	sp := newStaticPlot(o.Title, o.XLabel, o.YLabel)
	sp.Add(plotter.NewGrid())
	for i, pg := range g {
		if len(pg.X) == 0 {
			continue
		}
		sc, err := plotter.NewScatter(xys(pg.X, pg.Y))
		if err != nil {
			return nil, fmt.Errorf("plots: %s: group %d: %v", fn, i, err)
		}
		sc.GlyphStyle = draw.GlyphStyle{Color: hexColor(seriesColors[i%len(seriesColors)]), Radius: vg.Points(3), Shape: draw.CircleGlyph{}}
		sp.Add(sc)
		if pg.Name != "" {
			sp.Legend.Add(pg.Name, sc)
		}
	}
	fixRange(&sp.X, false)
	fixRange(&sp.Y, false)
	return newFigure(kind2D, o.Title, w, h, c, sp)
}

// HeatmapOptions configures Heatmap.
type HeatmapOptions struct {
	Title, XLabel, YLabel string

	// Diverging colors the cells blue below zero, white at zero and red
	// above, on a range symmetric around zero, as for decision
	// functions. Otherwise a sequential (viridis) palette spans the
	// range of the values.
	Diverging bool

	// Width and Height are the chart size in CSS pixels;
	// zero means the default 720x400.
	Width, Height int
}

// Heatmap draws a grid as colored cells on value axes, with scatter groups
// on top, as for decision regions with training points. A grid holding
// only two distinct values (such as predicted classes -1 and +1) is drawn
// in two pale colors, blue for the lower value and red for the higher;
// otherwise colors follow a continuous scale. The first overlay group is
// drawn as dark blue circles and the second as dark red triangles, to
// match.
func Heatmap(o HeatmapOptions, g Grid, overlay ...Points) (*Figure, error) {
	const fn = "Heatmap"
	w, h, err := size(fn, o.Width, o.Height)
	if err != nil {
		return nil, err
	}
	zmin, zmax, err := checkGrid(fn, g, 1)
	if err != nil {
		return nil, err
	}
	named, err := checkGroups(fn, "overlay group", overlay, false)
	if err != nil {
		return nil, err
	}
	xe, ye := edges(g.X), edges(g.Y)
	// Let points outside the grid show too.
	xlo, xhi, ylo, yhi := xe[0], xe[len(xe)-1], ye[0], ye[len(ye)-1]
	for _, pg := range overlay {
		for i := range pg.X {
			xlo, xhi = math.Min(xlo, pg.X[i]), math.Max(xhi, pg.X[i])
			ylo, yhi = math.Min(ylo, pg.Y[i]), math.Max(yhi, pg.Y[i])
		}
	}

	two, lo, hi := twoValues(g.Z)
	vm, pal, pmin, pmax := heatVisualMap(o.Diverging, zmin, zmax, two, lo, hi)

	// The legend lists the overlay groups, not the cells.
	legend := legendOpts(named, o.Title)
	var legendNames []string
	for i, pg := range overlay {
		legendNames = append(legendNames, text(groupName(pg.Name, i)))
	}
	legend.Data = legendNames
	c := charts.NewCustom()
	c.SetGlobalOptions(
		charts.WithInitializationOpts(initOpts(w, h)),
		charts.WithTitleOpts(titleOpts(o.Title)),
		charts.WithTooltipOpts(tooltipOpts("item")),
		charts.WithLegendOpts(legend),
		charts.WithToolboxOpts(toolboxOpts(false)),
		charts.WithGridOpts(opts.Grid{Left: "24", Right: "110", Top: gridTop(o.Title, named), Bottom: "40", ContainLabel: opts.Bool(true)}),
		charts.WithXAxisOpts(opts.XAxis{Type: "value", Name: text(o.XLabel), NameLocation: "middle", NameGap: 28,
			Min: round(xlo), Max: round(xhi), SplitLine: &opts.SplitLine{Show: opts.Bool(false)}, AxisLine: offZero()}),
		charts.WithYAxisOpts(opts.YAxis{Type: "value", Name: text(o.YLabel),
			Min: round(ylo), Max: round(yhi), SplitLine: &opts.SplitLine{Show: opts.Bool(false)}, AxisLine: offZero()}),
	)
	// Each cell is just its value; renderItem and the tooltip find the
	// cell's coordinates from its index, which keeps big grids small.
	cells := make([]float64, 0, len(g.X)*len(g.Y))
	for _, row := range g.Z {
		for _, z := range row {
			cells = append(cells, roundIn(z, zmin, zmax))
		}
	}
	c.AddSeries("value", nil, charts.WithSeriesOpts(func(ss *charts.SingleSeries) {
		ss.Data = cells
		ss.RenderItem = opts.FuncOpts(renderCellJS(xe, ye))
	}))
	// The axes end at the grid's edges, which are rarely round numbers: label
	// only the round ticks in between.
	inner := map[string]interface{}{"axisLabel": map[string]interface{}{"showMinLabel": false, "showMaxLabel": false}}
	p := &patch{
		// A heatmap is redrawn rather than animated (an explorer redraws it
		// live): its thousands of cells fading in only delay the picture.
		top:   map[string]interface{}{"visualMap": vm, "animation": false},
		xAxis: inner,
		yAxis: inner,
		series: []map[string]interface{}{{
			// Draw every cell in one frame: progressive rendering leaves a
			// partly drawn map in exports and screenshots.
			"progressive": 0,
			"clip":        true,
			"z":           1,
			"tooltip":     map[string]interface{}{"formatter": opts.FuncOpts(cellTooltipJS(g.X, g.Y, axisName(o.XLabel, "x"), axisName(o.YLabel, "y")))},
		}},
	}
	for i, pg := range overlay {
		col := overlayColors[i%len(overlayColors)]
		sym := overlaySymbols[i%len(overlaySymbols)]
		data := pairs(pg.X, pg.Y)
		s := charts.SingleSeries{
			Name:       text(groupName(pg.Name, i)),
			Type:       types.ChartScatter,
			Data:       data,
			Symbol:     sym,
			SymbolSize: 9,
			ItemStyle:  &opts.ItemStyle{Color: col, BorderColor: "#ffffff", BorderWidth: 1.5},
		}
		c.MultiSeries = append(c.MultiSeries, s)
		p.series = append(p.series, map[string]interface{}{
			"z":       3,
			"tooltip": map[string]interface{}{"formatter": opts.FuncOpts(pointTooltipJS)},
		})
	}
	c.Accept(p)

	// Static twin.
	sp := newStaticPlot(o.Title, o.XLabel, o.YLabel)
	hm := plotter.NewHeatMap(gridXYZ{g}, pal)
	hm.Min, hm.Max = pmin, pmax
	hm.Rasterized = uniform(g.X) && uniform(g.Y)
	sp.Add(hm)
	for i, pg := range overlay {
		if len(pg.X) == 0 {
			continue
		}
		sym := overlaySymbols[i%len(overlaySymbols)]
		col := hexColor(overlayColors[i%len(overlayColors)])
		ps, err := outlinedScatter(xys(pg.X, pg.Y), sym, col, vg.Points(3))
		if err != nil {
			return nil, fmt.Errorf("plots: %s: overlay group %d: %v", fn, i, err)
		}
		sp.Add(ps...)
		if pg.Name != "" {
			sp.Legend.Add(pg.Name, ps[1].(plot.Thumbnailer))
		}
	}
	sp.X.Min, sp.X.Max, sp.Y.Min, sp.Y.Max = xlo, xhi, ylo, yhi
	return newFigure(kind2D, o.Title, w, h, c, sp)
}

// SurfaceOptions configures Surface.
type SurfaceOptions struct {
	Title, XLabel, YLabel, ZLabel string

	// Width and Height are the chart size in CSS pixels;
	// zero means the default 720x400.
	Width, Height int
}

// Surface draws a grid as a 3-D surface with echarts-gl, colored by value.
// The grid needs at least 2 values along X and Y. Its static twin is a
// heatmap of the same grid.
func Surface(o SurfaceOptions, g Grid) (*Figure, error) {
	const fn = "Surface"
	w, h, err := size(fn, o.Width, o.Height)
	if err != nil {
		return nil, err
	}
	zmin, zmax, err := checkGrid(fn, g, 2)
	if err != nil {
		return nil, err
	}
	vmin, vmax := zmin, zmax
	if vmin == vmax {
		vmin, vmax = vmin-1, vmax+1
	}
	c := charts.NewSurface3D()
	c.SetGlobalOptions(
		charts.WithInitializationOpts(initOpts(w, h)),
		charts.WithTitleOpts(titleOpts(o.Title)),
		charts.WithTooltipOpts(tooltipOpts("item")),
		charts.WithToolboxOpts(toolboxOpts(false)),
		charts.WithLegendOpts(opts.Legend{Show: opts.Bool(false)}),
		charts.WithXAxis3DOpts(opts.XAxis3D{Type: "value", Name: text(axisName(o.XLabel, "x"))}),
		charts.WithYAxis3DOpts(opts.YAxis3D{Type: "value", Name: text(axisName(o.YLabel, "y"))}),
		charts.WithZAxis3DOpts(opts.ZAxis3D{Type: "value", Name: text(axisName(o.ZLabel, "z"))}),
	)
	// echarts-gl reads a surface row by row: x varies fastest.
	data := make([][3]float64, 0, len(g.X)*len(g.Y))
	for i, row := range g.Z {
		for j, z := range row {
			data = append(data, [3]float64{round5(g.X[j]), round5(g.Y[i]), round5(z)})
		}
	}
	c.AddSeries("surface", nil, charts.WithSeriesOpts(func(ss *charts.SingleSeries) {
		ss.Data = data
		ss.Shading = "color"
	}))
	// go-echarts v2.6.7 gives Surface3D series the scatter3D type.
	for i := range c.MultiSeries {
		c.MultiSeries[i].Type = types.ChartSurface3D
	}
	wire := len(g.X) <= 60 && len(g.Y) <= 60
	c.Accept(&patch{
		top: map[string]interface{}{
			"visualMap": visualMap{
				Type: "continuous", SeriesIndex: 0, Dimension: 2,
				Min: round(vmin), Max: round(vmax), Calculable: true,
				Right: "10", Top: "middle", ItemHeight: 160,
				InRange: &inRange{Color: sequentialStops},
			},
			"grid3D": map[string]interface{}{
				"boxWidth": 100, "boxDepth": 100, "boxHeight": 70,
				"viewControl": map[string]interface{}{"projection": "perspective", "alpha": 25, "beta": 40, "distance": 220},
				"axisPointer": map[string]interface{}{"show": false},
				"axisLabel":   map[string]interface{}{"textStyle": map[string]interface{}{"fontFamily": "sans-serif", "fontSize": 11, "color": "#555"}},
			},
		},
		series: []map[string]interface{}{{
			"wireframe": map[string]interface{}{"show": wire, "lineStyle": map[string]interface{}{"color": "rgba(0,0,0,0.25)", "width": 1}},
		}},
	})

	sp := newStaticPlot(o.Title, o.XLabel, o.YLabel)
	hm := plotter.NewHeatMap(gridXYZ{g}, ramp{stops: sequentialStops, n: 256})
	hm.Min, hm.Max = vmin, vmax
	hm.Rasterized = uniform(g.X) && uniform(g.Y)
	sp.Add(hm)
	return newFigure(kind3D, o.Title, w, h, c, sp)
}

// visualMap is an echarts visualMap; go-echarts' lacks seriesIndex and
// float64 bounds.
type visualMap struct {
	Type        string   `json:"type"`
	SeriesIndex int      `json:"seriesIndex"`
	Dimension   int      `json:"dimension"`
	Min         float64  `json:"min"`
	Max         float64  `json:"max"`
	Calculable  bool     `json:"calculable,omitempty"`
	Pieces      []piece  `json:"pieces,omitempty"`
	InRange     *inRange `json:"inRange,omitempty"`
	Right       string   `json:"right,omitempty"`
	Top         string   `json:"top,omitempty"`
	ItemHeight  int      `json:"itemHeight,omitempty"`
}

type piece struct {
	Value float64 `json:"value"`
	Label string  `json:"label"`
	Color string  `json:"color"`
}

type inRange struct {
	Color []string `json:"color"`
}

// heatVisualMap chooses the heatmap colors: the echarts visualMap and the
// matching gonum palette with its value range.
func heatVisualMap(diverging bool, zmin, zmax float64, two bool, lo, hi float64) (visualMap, ramp, float64, float64) {
	if two {
		vm := visualMap{
			Type: "piecewise", SeriesIndex: 0, Dimension: 0, Min: round(lo), Max: round(hi),
			Right: "10", Top: "middle",
			Pieces: []piece{
				{Value: round5(lo), Label: label(lo), Color: twoColors[0]},
				{Value: round5(hi), Label: label(hi), Color: twoColors[1]},
			},
		}
		if lo == hi {
			vm.Pieces = vm.Pieces[:1]
		}
		pmin, pmax := lo, hi
		if pmin == pmax {
			pmin, pmax = pmin-1, pmax+1
		}
		return vm, ramp{stops: twoColors[:], n: 2}, pmin, pmax
	}
	stops := sequentialStops
	vmin, vmax := zmin, zmax
	if diverging {
		stops = divergingStops
		m := math.Max(math.Abs(zmin), math.Abs(zmax))
		if m == 0 {
			m = 1
		}
		vmin, vmax = -m, m
	}
	if vmin == vmax {
		vmin, vmax = vmin-1, vmax+1
	}
	vm := visualMap{
		Type: "continuous", SeriesIndex: 0, Dimension: 0,
		Min: round(vmin), Max: round(vmax), Calculable: true,
		Right: "10", Top: "middle", ItemHeight: 160,
		InRange: &inRange{Color: stops},
	}
	return vm, ramp{stops: stops, n: 256}, vmin, vmax
}

// twoValues reports whether z holds at most two distinct values, and which.
func twoValues(z [][]float64) (ok bool, lo, hi float64) {
	lo, hi = z[0][0], z[0][0]
	for _, row := range z {
		for _, v := range row {
			switch {
			case v == lo || v == hi:
			case lo == hi:
				lo, hi = math.Min(lo, v), math.Max(hi, v)
			default:
				return false, 0, 0
			}
		}
	}
	return true, lo, hi
}

// label formats a value for a legend.
func label(v float64) string {
	s := strconv.FormatFloat(v, 'g', 6, 64)
	if v > 0 {
		s = "+" + s
	}
	return s
}

// renderCellJS returns an echarts custom-series renderItem function that
// draws data item k = i*len(X)+j as the cell [xe[j], xe[j+1]] x
// [ye[i], ye[i+1]].
func renderCellJS(xe, ye []float64) string {
	var b strings.Builder
	b.WriteString("(function () { var xe = ")
	writeNumbers(&b, xe)
	b.WriteString("; var ye = ")
	writeNumbers(&b, ye)
	fmt.Fprintf(&b, "; var nx = %d;", len(xe)-1)
	b.WriteString(` return function (params, api) {
	var k = params.dataIndex, j = k % nx, i = (k - j) / nx;
	var a = api.coord([xe[j], ye[i]]), b = api.coord([xe[j + 1], ye[i + 1]]);
	return { type: 'rect', shape: { x: Math.min(a[0], b[0]), y: Math.min(a[1], b[1]),
		width: Math.abs(b[0] - a[0]) + 0.6, height: Math.abs(b[1] - a[1]) + 0.6 },
		style: { fill: api.visual('color') } };
}; })()`)
	return b.String()
}

// cellTooltipJS returns an echarts tooltip formatter for the cells of a
// heatmap drawn by renderCellJS.
func cellTooltipJS(x, y []float64, xlabel, ylabel string) string {
	var b strings.Builder
	b.WriteString("(function () { var xs = ")
	writeNumbers(&b, x)
	b.WriteString("; var ys = ")
	writeNumbers(&b, y)
	fmt.Fprintf(&b, "; var nx = %d; var lx = %s; var ly = %s;", len(x), jsString(html.EscapeString(xlabel)), jsString(html.EscapeString(ylabel)))
	b.WriteString(` var f = ` + valueFormatterJS + `;
	return function (p) {
	var k = p.dataIndex, j = k % nx, i = (k - j) / nx;
	return lx + ' = ' + f(xs[j]) + '<br>' + ly + ' = ' + f(ys[i]) + '<br>' + p.marker + f(p.value);
}; })()`)
	return b.String()
}

// jsString returns a JavaScript expression for the string s that uses no
// quotes or backslashes, so that it survives go-echarts' embedding of
// functions in JSON strings.
func jsString(s string) string {
	if s == "" {
		return "''"
	}
	var b strings.Builder
	b.WriteString("String.fromCharCode(")
	i := 0
	for _, r := range s {
		for _, u := range utf16.Encode([]rune{r}) {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(strconv.Itoa(int(u)))
			i++
		}
	}
	b.WriteByte(')')
	return b.String()
}

func writeNumbers(b *strings.Builder, v []float64) {
	b.WriteByte('[')
	for i, x := range v {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.FormatFloat(round(x), 'g', -1, 64))
	}
	b.WriteByte(']')
}

// gridXYZ adapts a Grid to plotter.GridXYZ.
type gridXYZ struct{ g Grid }

func (g gridXYZ) Dims() (c, r int)   { return len(g.g.X), len(g.g.Y) }
func (g gridXYZ) Z(c, r int) float64 { return g.g.Z[r][c] }
func (g gridXYZ) X(c int) float64    { return g.g.X[c] }
func (g gridXYZ) Y(r int) float64    { return g.g.Y[r] }

// uniform reports whether the coordinates are evenly spaced, so that a
// heatmap may be drawn as one stretched raster image.
func uniform(c []float64) bool {
	if len(c) < 3 {
		return true
	}
	step := (c[len(c)-1] - c[0]) / float64(len(c)-1)
	for i := 1; i < len(c); i++ {
		if math.Abs(c[i]-c[i-1]-step) > 1e-6*math.Abs(step) {
			return false
		}
	}
	return true
}

// fixRange makes a gonum axis range drawable when the data leave it empty
// or degenerate, and positive for a log axis.
func fixRange(a *plot.Axis, log bool) {
	empty := math.IsInf(a.Min, 0) || math.IsInf(a.Max, 0) || a.Min > a.Max
	switch {
	case empty && log:
		a.Min, a.Max = 1, 10
	case empty:
		a.Min, a.Max = 0, 1
	case a.Min == a.Max && log:
		a.Min, a.Max = a.Min/2, a.Max*2
	case a.Min == a.Max:
		d := math.Max(math.Abs(a.Min)*0.1, 0.5)
		a.Min, a.Max = a.Min-d, a.Max+d
	}
}

// groupName returns the name of point group i.
func groupName(name string, i int) string {
	if name == "" {
		return "group " + strconv.Itoa(i+1)
	}
	return name
}

// offZero keeps an axis at the edge of the plot area instead of crossing
// the other axis at zero.
func offZero() *opts.AxisLine {
	return &opts.AxisLine{Show: opts.Bool(true), OnZero: opts.Bool(false)}
}

// axisName returns name, or def when name is empty.
func axisName(name, def string) string {
	if name == "" {
		return def
	}
	return name
}

// initOpts sets a chart's size and a white background, which keeps it
// readable under dark notebook themes, like the static image.
func initOpts(w, h int) opts.Initialization {
	return opts.Initialization{Width: px(w), Height: px(h), BackgroundColor: "#ffffff"}
}

// px formats a CSS pixel length.
func px(n int) string { return strconv.Itoa(n) + "px" }
