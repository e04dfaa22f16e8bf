package plots

import (
	"fmt"
	"math"
	"strconv"

	"github.com/go-echarts/go-echarts/v2/charts"
	"github.com/go-echarts/go-echarts/v2/opts"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
)

// MatrixOptions configures Matrix.
type MatrixOptions struct {
	Title, XLabel, YLabel string
	// Width and Height are the chart size in CSS pixels; zero means the
	// default 720x400.
	Width, Height int
}

// Matrix draws a table of values over named rows and columns as colored,
// labelled cells (a sequential palette over the values' range), as for a
// confusion matrix: rows[i] names row i, drawn from the top, cols[j]
// column j.
func Matrix(o MatrixOptions, rows, cols []string, v [][]float64) (*Figure, error) {
	const fn = "Matrix"
	w, h, err := size(fn, o.Width, o.Height)
	if err != nil {
		return nil, err
	}
	if len(rows) == 0 || len(cols) == 0 || len(v) != len(rows) {
		return nil, fmt.Errorf("plots: %s: %d rows of values for %d row and %d column names", fn, len(v), len(rows), len(cols))
	}
	zmin, zmax := math.Inf(1), math.Inf(-1)
	integral := true
	for i, r := range v {
		if len(r) != len(cols) {
			return nil, fmt.Errorf("plots: %s: row %d has %d values for %d columns", fn, i, len(r), len(cols))
		}
		for j, z := range r {
			if math.IsNaN(z) || math.IsInf(z, 0) {
				return nil, fmt.Errorf("plots: %s: value (%d, %d) is %v", fn, i, j, z)
			}
			zmin, zmax = math.Min(zmin, z), math.Max(zmax, z)
			integral = integral && z == math.Trunc(z)
		}
	}
	if zmin == zmax {
		zmin, zmax = zmin-1, zmax+1
	}
	format := func(z float64) string {
		if integral {
			return strconv.FormatFloat(z, 'f', 0, 64)
		}
		return label(z)
	}
	xs, ys := make([]string, len(cols)), make([]string, len(rows))
	for j, c := range cols {
		xs[j] = text(c)
	}
	// echarts draws category 0 at the bottom: list the rows reversed so
	// that row 0 is on top, as in a table.
	for i, r := range rows {
		ys[len(rows)-1-i] = text(r)
	}
	c := charts.NewHeatMap()
	c.SetGlobalOptions(frameOpts(w, h, o.Title, false, false)...)
	c.SetGlobalOptions(
		charts.WithGridOpts(opts.Grid{Left: "24", Right: "110", Top: gridTop(o.Title, false), Bottom: "40", ContainLabel: opts.Bool(true)}),
		charts.WithTooltipOpts(opts.Tooltip{Show: opts.Bool(true), Trigger: "item"}),
		charts.WithXAxisOpts(opts.XAxis{Type: "category", Name: text(o.XLabel), NameLocation: "middle", NameGap: 28, Data: xs,
			SplitArea: &opts.SplitArea{Show: opts.Bool(true)}}),
		charts.WithYAxisOpts(opts.YAxis{Type: "category", Name: text(o.YLabel), Data: ys,
			SplitArea: &opts.SplitArea{Show: opts.Bool(true)}}),
		charts.WithVisualMapOpts(opts.VisualMap{Calculable: opts.Bool(true), Min: float32(zmin), Max: float32(zmax),
			Right: "10", Top: "middle", InRange: &opts.VisualMapInRange{Color: sequentialStops}}),
	)
	var data []opts.HeatMapData
	for i, r := range v {
		for j, z := range r {
			data = append(data, opts.HeatMapData{Value: [3]interface{}{j, len(rows) - 1 - i, z}, Name: format(z)})
		}
	}
	c.AddSeries(text(o.Title), data, charts.WithLabelOpts(opts.Label{Show: opts.Bool(true), Color: "#ffffff", BackgroundColor: "rgba(0,0,0,0.45)", Padding: "2"}))

	// Static twin: the same cells with their values.
	sp := newStaticPlot(o.Title, o.XLabel, o.YLabel)
	hm := plotter.NewHeatMap(matrixGrid{v}, ramp{stops: sequentialStops, n: 256})
	hm.Min, hm.Max = zmin, zmax
	sp.Add(hm)
	var pts plotter.XYs
	var labels []string
	for i, r := range v {
		for j, z := range r {
			pts = append(pts, plotter.XY{X: float64(j), Y: float64(len(rows) - 1 - i)})
			labels = append(labels, format(z))
		}
	}
	lb, err := plotter.NewLabels(plotter.XYLabels{XYs: pts, Labels: labels})
	if err != nil {
		return nil, fmt.Errorf("plots: %s: %v", fn, err)
	}
	for i := range lb.TextStyle {
		lb.TextStyle[i].Font = sans(9, false)
		lb.TextStyle[i].XAlign, lb.TextStyle[i].YAlign = -0.5, -0.5
		// Light text on the palette's dark end, dark text on its light end.
		z := v[i/len(cols)][i%len(cols)]
		lb.TextStyle[i].Color = hexColor("#ffffff")
		if (z-zmin)/(zmax-zmin) > 0.6 {
			lb.TextStyle[i].Color = hexColor("#222222")
		}
	}
	sp.Add(lb)
	sp.NominalX(cols...)
	rev := make([]string, len(rows))
	for i, r := range rows {
		rev[len(rows)-1-i] = r
	}
	sp.NominalY(rev...)
	sp.X.Padding, sp.Y.Padding = vg.Points(0), vg.Points(0)
	return newFigure(kind2D, o.Title, w, h, c, sp)
}

// matrixGrid is v as a heat map's grid: cell (j, i) at x = j, y = i counted
// from the bottom.
type matrixGrid struct{ v [][]float64 }

func (g matrixGrid) Dims() (c, r int) { return len(g.v[0]), len(g.v) }
func (g matrixGrid) Z(c, r int) float64 {
	return g.v[len(g.v)-1-r][c]
}
func (g matrixGrid) X(c int) float64 { return float64(c) }
func (g matrixGrid) Y(r int) float64 { return float64(r) }
