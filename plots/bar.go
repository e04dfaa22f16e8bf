package plots

import (
	"fmt"
	"math"

	"github.com/go-echarts/go-echarts/v2/charts"
	"github.com/go-echarts/go-echarts/v2/opts"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
)

// Bars is one group of bars, one value per category.
type Bars struct {
	Name   string
	Values []float64
}

// BarOptions configures Bar.
type BarOptions struct {
	Title, XLabel, YLabel string
	// Width and Height are the chart size in CSS pixels; zero means the
	// default 720x400.
	Width, Height int
}

// Bar draws grouped bars: for every category, one bar per group (for
// example the class balance of the training and validation splits).
func Bar(o BarOptions, categories []string, groups ...Bars) (*Figure, error) {
	const fn = "Bar"
	w, h, err := size(fn, o.Width, o.Height)
	if err != nil {
		return nil, err
	}
	if len(categories) == 0 || len(groups) == 0 {
		return nil, fmt.Errorf("plots: %s: need at least one category and one group", fn)
	}
	named := false
	for i, g := range groups {
		if len(g.Values) != len(categories) {
			return nil, fmt.Errorf("plots: %s: group %d (%q) has %d values for %d categories", fn, i, g.Name, len(g.Values), len(categories))
		}
		for k, v := range g.Values {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return nil, fmt.Errorf("plots: %s: group %d (%q) value %d is %v", fn, i, g.Name, k, v)
			}
		}
		named = named || g.Name != ""
	}
	cats := make([]string, len(categories))
	for i, c := range categories {
		cats[i] = text(c)
	}
	c := charts.NewBar()
	c.SetGlobalOptions(frameOpts(w, h, o.Title, named, false)...)
	c.SetGlobalOptions(
		charts.WithTooltipOpts(tooltipOpts("axis")),
		charts.WithXAxisOpts(opts.XAxis{Type: "category", Name: text(o.XLabel), NameLocation: "middle", NameGap: 28, Data: cats}),
		charts.WithYAxisOpts(opts.YAxis{Type: "value", Name: text(o.YLabel)}),
	)
	c.SetXAxis(cats)
	for i, g := range groups {
		name := groupName(g.Name, i)
		items := make([]opts.BarData, len(g.Values))
		for k, v := range g.Values {
			items[k] = opts.BarData{Value: v}
		}
		col := seriesColors[i%len(seriesColors)]
		c.AddSeries(text(name), items, charts.WithItemStyleOpts(opts.ItemStyle{Color: col}),
			charts.WithLabelOpts(opts.Label{Show: opts.Bool(true), Position: "top"}))
	}

	// Static twin.
	sp := newStaticPlot(o.Title, o.XLabel, o.YLabel)
	width := vg.Points(40 / float64(len(groups)))
	for i, g := range groups {
		b, err := plotter.NewBarChart(plotter.Values(g.Values), width)
		if err != nil {
			return nil, fmt.Errorf("plots: %s: group %d: %v", fn, i, err)
		}
		b.Color = hexColor(seriesColors[i%len(seriesColors)])
		b.LineStyle.Width = 0
		b.Offset = vg.Length(float64(i)-float64(len(groups)-1)/2) * width
		sp.Add(b)
		if g.Name != "" {
			sp.Legend.Add(g.Name, b)
		}
	}
	sp.NominalX(categories...)
	return newFigure(kind2D, o.Title, w, h, c, sp)
}
