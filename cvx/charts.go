package cvx

import (
	"fmt"
	"math"
	"reflect"

	"github.com/convexnn/convexnn/plots"
	"gonum.org/v1/gonum/mat"
)

func classPoints(x *mat.Dense, y []float64) ([]plots.Points, error) {
	if err := validateData(x, y, true); err != nil {
		return nil, err
	}
	if _, d := x.Dims(); d != 2 {
		return nil, fmt.Errorf("cvx: charts of data need 2 features, X has %d", d)
	}
	neg := plots.Points{Name: "y = −1"}
	pos := plots.Points{Name: "y = +1"}
	for k, v := range y {
		g := &neg
		if v > 0 {
			g = &pos
		}
		g.X = append(g.X, x.At(k, 0))
		g.Y = append(g.Y, x.At(k, 1))
	}
	return []plots.Points{neg, pos}, nil
}

// Chart holds the options of the 2-D displayers (Scatter, DecisionRegions):
// its methods draw with them, the package functions of the same names with
// the zero Chart.
//
//	cvx.Chart{Title: "Standard convex training"}.DecisionRegions(net, X, y)
type Chart struct {
	// Title replaces the chart's default title.
	Title string
}

// title returns c.Title, or def when it is empty.
func (c Chart) title(def string) string {
	if c.Title == "" {
		return def
	}
	return c.Title
}

// ScatterFigure draws 2-D labelled data, titled "Training data" unless
// c.Title says otherwise.
func (c Chart) ScatterFigure(x *mat.Dense, y []float64) (*plots.Figure, error) {
	g, err := classPoints(x, y)
	if err != nil {
		return nil, err
	}
	return plots.Scatter(plots.ScatterOptions{Title: c.title("Training data"), XLabel: "x₁", YLabel: "x₂"}, g...)
}

// Scatter displays 2-D labelled data (labels −1/+1) in the notebook.
func (c Chart) Scatter(x *mat.Dense, y []float64) error {
	return showFigure(c.ScatterFigure(x, y))
}

// ScatterFigure is Chart{}.ScatterFigure.
func ScatterFigure(x *mat.Dense, y []float64) (*plots.Figure, error) {
	return Chart{}.ScatterFigure(x, y)
}

// Scatter displays 2-D labelled data (labels −1/+1) in the notebook
// (Chart{}.Scatter).
func Scatter(x *mat.Dense, y []float64) error { return Chart{}.Scatter(x, y) }

func showFigure(f *plots.Figure, err error) error {
	if err != nil {
		report(err)
		return err
	}
	return Show(f)
}

// convergenceFigure draws the run's objective, its gap (FISTA's duality gap,
// ADMM's |l^{u,α} − l^{v,w}|) and the certified relative gap on a log scale.
func (r *Run) convergenceFigure() (*plots.Figure, error) {
	if _, ok := r.meth.(Backprop); ok {
		return TrainingFigure(r)
	}
	obj := plots.Series{Name: "objective F(α)"}
	gap := plots.Series{Name: "duality gap"}
	for _, p := range thin(r.history, 1500) {
		obj.X = append(obj.X, float64(p.Iter))
		obj.Y = append(obj.Y, p.Objective)
		if p.Gap > 0 {
			gap.X = append(gap.X, float64(p.Iter))
			gap.Y = append(gap.Y, p.Gap)
		}
	}
	if _, ok := r.meth.(ADMM); ok {
		gap.Name = "|l^{u,α} − l^{v,w}|"
	}
	cert := plots.Series{Name: "certified gap (upper − lower)/|upper|"}
	for _, p := range thin(r.history, 1500) {
		if p.Certified && p.CertifiedGap > 0 {
			cert.X = append(cert.X, float64(p.Iter))
			cert.Y = append(cert.Y, p.CertifiedGap)
		}
	}
	series := []plots.Series{obj}
	for _, s := range []plots.Series{gap, cert} {
		if len(s.X) > 0 {
			series = append(series, s)
		}
	}
	return plots.Line(plots.LineOptions{Title: fmt.Sprintf("Convergence of run %q", r.Name), XLabel: "iteration", YLabel: "value", LogY: true}, series...)
}

// thin keeps at most about max points of a history for drawing: every k-th
// point and always the last, so the chart stays light however long the run.
func thin(h []Point, max int) []Point {
	if len(h) <= max {
		return h
	}
	k := (len(h) + max - 1) / max
	out := make([]Point, 0, max+1)
	for i := 0; i < len(h); i += k {
		out = append(out, h[i])
	}
	if out[len(out)-1].Iter != h[len(h)-1].Iter {
		out = append(out, h[len(h)-1])
	}
	return out
}

// Convergence displays the run's objective and duality gap against the
// iteration count, over all cells.
func Convergence(r *Run) error {
	if r.err != nil {
		report(r.err)
		return r.err
	}
	return showFigure(r.convergenceFigure())
}

// Predictor is a trained network as the decision-region and surface charts
// see it: a two-layer network (Network), a batch-normalized one
// (batchnorm.Network), a CNN on 2-pixel images, …
type Predictor interface {
	Predict(x *mat.Dense) ([]float64, error)
	Width() int
}

// gridFor evaluates the network on a regular res×res grid covering the data
// (plus a 10% margin).
func gridFor(net Predictor, x *mat.Dense, res int) (plots.Grid, error) {
	if net == nil || (reflect.ValueOf(net).Kind() == reflect.Pointer && reflect.ValueOf(net).IsNil()) {
		return plots.Grid{}, fmt.Errorf("cvx: nil network")
	}
	n, d := x.Dims()
	if d != 2 || n == 0 {
		return plots.Grid{}, fmt.Errorf("cvx: decision regions need 2-D data, X is %d×%d", n, d)
	}
	lo := [2]float64{math.Inf(1), math.Inf(1)}
	hi := [2]float64{math.Inf(-1), math.Inf(-1)}
	for k := 0; k < n; k++ {
		for j := 0; j < 2; j++ {
			lo[j] = math.Min(lo[j], x.At(k, j))
			hi[j] = math.Max(hi[j], x.At(k, j))
		}
	}
	var axes [2][]float64
	for j := 0; j < 2; j++ {
		m := 0.1 * (hi[j] - lo[j])
		if m == 0 {
			m = 1
		}
		a, b := lo[j]-m, hi[j]+m
		axes[j] = make([]float64, res)
		for i := range axes[j] {
			axes[j][i] = a + (b-a)*float64(i)/float64(res-1)
		}
	}
	pts := mat.NewDense(res*res, 2, nil)
	for i, yv := range axes[1] {
		for j, xv := range axes[0] {
			pts.Set(i*res+j, 0, xv)
			pts.Set(i*res+j, 1, yv)
		}
	}
	f, err := net.Predict(pts)
	if err != nil {
		return plots.Grid{}, err
	}
	g := plots.Grid{X: axes[0], Y: axes[1], Z: make([][]float64, res)}
	for i := range axes[1] {
		g.Z[i] = f[i*res : (i+1)*res]
	}
	return g, nil
}

func (c Chart) DecisionRegionsFigure(net Predictor, x *mat.Dense, y []float64) (*plots.Figure, error) {
	pts, err := classPoints(x, y)
	if err != nil {
		return nil, err
	}
	g, err := gridFor(net, x, 60)
	if err != nil {
		return nil, err
	}
	title := fmt.Sprintf("%s (network output, %d active neurons)", c.title("Decision regions"), net.Width())
	return plots.Heatmap(plots.HeatmapOptions{Title: title, XLabel: "x₁", YLabel: "x₂", Diverging: true}, g, pts...)
}

// DecisionRegions displays the network's output f(x) over the plane, its sign
// giving the predicted class, with the labelled points on top.
func (c Chart) DecisionRegions(net Predictor, x *mat.Dense, y []float64) error {
	return showFigure(c.DecisionRegionsFigure(net, x, y))
}

// DecisionRegionsFigure is Chart{}.DecisionRegionsFigure.
func DecisionRegionsFigure(net Predictor, x *mat.Dense, y []float64) (*plots.Figure, error) {
	return Chart{}.DecisionRegionsFigure(net, x, y)
}

// DecisionRegions displays the network's output f(x) over the plane, its sign
// giving the predicted class, with the labelled points on top
// (Chart{}.DecisionRegions).
func DecisionRegions(net Predictor, x *mat.Dense, y []float64) error {
	return Chart{}.DecisionRegions(net, x, y)
}

// SurfaceFigure draws f(x) over the plane as a 3-D surface.
func SurfaceFigure(net Predictor, x *mat.Dense) (*plots.Figure, error) {
	g, err := gridFor(net, x, 40)
	if err != nil {
		return nil, err
	}
	return plots.Surface(plots.SurfaceOptions{Title: "Network output f(x)", XLabel: "x₁", YLabel: "x₂", ZLabel: "f(x)"}, g)
}

// Surface displays the network output f(x) over the plane as an interactive
// 3-D surface (echarts-gl).
func Surface(net Predictor, x *mat.Dense) error {
	return showFigure(SurfaceFigure(net, x))
}
