package paper

import (
	"errors"
	"fmt"
	"math"

	"github.com/convexnn/convexnn/cvx"
	"github.com/convexnn/convexnn/data"
	"github.com/convexnn/convexnn/plots"
)

// LandscapeSettings are fig. landscapes' settings (appendix "loss
// landscapes", notebook 07): robust hinge training on the 2-D toy data with
// radius Eps and regularization Beta, Patterns sampled activation patterns
// (Algorithm adv_train, seed Seed), and Steps grid points per axis for the
// landscapes.
type LandscapeSettings struct {
	Eps, Beta float64
	Patterns  int
	Seed      uint64
	Steps     int
}

// LandscapeSettingsFor returns the paper's settings (P_s = 360) at SizePaper
// and P_s = 60 otherwise; ε = 0.08, β = 1e-9, a 41×41 grid.
func LandscapeSettingsFor(size Size) LandscapeSettings {
	s := LandscapeSettings{Eps: 0.08, Beta: 1e-9, Patterns: 60, Seed: 1, Steps: 41}
	if size == SizePaper {
		s.Patterns = 360
	}
	return s
}

// Landscape is a robust network trained for fig. landscapes and the training
// point x_k around which its losses are drawn.
type Landscape struct {
	Settings LandscapeSettings
	Solution *cvx.Solution
	X        [][]float64 // the toy points, without the bias input
	Y        []float64
	K        int     // the chosen point
	Margin   float64 // its pattern margin m_k ≥ 0 (certified at Eps)
	// Note says how the solve ended when the interior-point method stalled
	// short of its tolerance and its feasible best iterate is used; empty
	// otherwise.
	Note string
}

// TrainLandscape solves the robust hinge program by the interior-point
// method and picks the training point: among the points certified at ε (no
// neuron changes its activation in the ε-box, pattern margin
// m_k = min_j |(x_k,1)ᵀu_j| − ε‖u_j^f‖₁ ≥ 0) whose hinge is active
// (y_k f(x_k) < 1), the one with the smallest margin, the tightest
// certificate; failing that, the first certified point.
//
// At β = 1e-9 the interior-point method may stall just short of its
// tolerance ("inaccurate"); its best iterate is used when the robust
// constraints hold to 1e-8, since the exactness the figure shows rests on
// them, not on optimality.
func TrainLandscape(s LandscapeSettings) (*Landscape, error) {
	if s.Eps <= 0 || s.Patterns <= 0 || s.Steps < 2 {
		return nil, fmt.Errorf("paper: landscape settings %+v: want ε > 0, Patterns > 0 and Steps ≥ 2", s)
	}
	xm, y := data.Toy2D(1)
	prob := cvx.Classify(xm, y).Hinge().Beta(s.Beta).Bias().Robust(s.Eps, cvx.LInf).
		RobustPatterns(cvx.AdvTrain{Directions: s.Patterns, PerDirection: 8, Patterns: s.Patterns, Seed: s.Seed})
	l := &Landscape{Settings: s, Y: y}
	sol, err := cvx.Solve(prob, cvx.IPM{})
	if err != nil && sol != nil && sol.Status == "inaccurate" && sol.Violation <= 1e-8 {
		l.Note = fmt.Sprintf("%v; using its best iterate (robust-constraint violation %.1e)", err, sol.Violation)
		err = nil
	}
	if err != nil {
		return nil, err
	}
	l.Solution = sol
	cert, margins, err := cvx.Certified(sol.Network, xm, s.Eps, cvx.LInf)
	if err != nil {
		return nil, err
	}
	f, err := sol.Network.Predict(xm)
	if err != nil {
		return nil, err
	}
	k := -1
	for i, ok := range cert {
		if ok && y[i]*f[i] < 1 && (k < 0 || margins[i] < margins[k]) {
			k = i
		}
	}
	for i, ok := range cert {
		if k < 0 && ok {
			k = i
		}
	}
	if k < 0 {
		return nil, fmt.Errorf("paper: no training point is certified at ε = %g", s.Eps)
	}
	n, _ := xm.Dims()
	l.X = make([][]float64, n)
	for i := range l.X {
		l.X[i] = []float64{xm.At(i, 0), xm.At(i, 1)}
	}
	l.K, l.Margin = k, margins[k]
	return l, nil
}

// ConvexOutput is the convex model's output at x_k + δ with the patterns of
// x_k held fixed: Σ_i d_ik (x_k+δ, 1)ᵀ(v_i − w_i).
func (l *Landscape) ConvexOutput(dx, dy float64) float64 {
	v, w := l.Solution.Weights.V, l.Solution.Weights.W
	xk := l.X[l.K]
	z := [3]float64{xk[0] + dx, xk[1] + dy, 1} // the program's X has the bias column last
	var f float64
	for i, d := range l.Solution.Program.D {
		if !d[l.K] {
			continue
		}
		for c, zc := range z {
			f += zc * (v.At(i, c) - w.At(i, c))
		}
	}
	return f
}

// NetworkOutput is the recovered network's output f(x_k + δ),
// f(x) = Σ_j ((x,1)ᵀu_j)_+ α_j.
func (l *Landscape) NetworkOutput(dx, dy float64) float64 {
	xk := l.X[l.K]
	f, err := l.Solution.Network.Eval([]float64{xk[0] + dx, xk[1] + dy})
	if err != nil {
		// The network was trained on these two inputs: Eval cannot fail.
		panic(err)
	}
	return f
}

// ConvexLoss is ℓ_convex(δ) = (1 − y_k · ConvexOutput)_+.
func (l *Landscape) ConvexLoss(dx, dy float64) float64 {
	return math.Max(0, 1-l.Y[l.K]*l.ConvexOutput(dx, dy))
}

// NonconvexLoss is ℓ_nonconvex(δ) = (1 − y_k · NetworkOutput)_+.
func (l *Landscape) NonconvexLoss(dx, dy float64) float64 {
	return math.Max(0, 1-l.Y[l.K]*l.NetworkOutput(dx, dy))
}

// LossGap is ℓ_convex(δ) − ℓ_nonconvex(δ), zero wherever no activation flips.
func (l *Landscape) LossGap(dx, dy float64) float64 {
	return l.ConvexLoss(dx, dy) - l.NonconvexLoss(dx, dy)
}

// OutputGap is the gap of the two outputs before the hinge clips them.
func (l *Landscape) OutputGap(dx, dy float64) float64 {
	return l.ConvexOutput(dx, dy) - l.NetworkOutput(dx, dy)
}

// Box evaluates g(δ₁, δ₂) over ‖δ‖∞ ≤ r on Settings.Steps points per axis,
// Z[row δ₂][column δ₁].
func (l *Landscape) Box(r float64, g func(dx, dy float64) float64) plots.Grid {
	steps := l.Settings.Steps
	ax := make([]float64, steps)
	for i := range ax {
		ax[i] = -r + 2*r*float64(i)/float64(steps-1)
	}
	z := make([][]float64, steps)
	for i, dy := range ax {
		z[i] = make([]float64, steps)
		for j, dx := range ax {
			z[i][j] = g(dx, dy)
		}
	}
	return plots.Grid{X: ax, Y: ax, Z: z}
}

// MaxAbs returns the largest |z| of a grid.
func MaxAbs(g plots.Grid) float64 {
	var m float64
	for _, row := range g.Z {
		for _, v := range row {
			m = math.Max(m, math.Abs(v))
		}
	}
	return m
}

// LandscapeSurface is a landscape as a 3-D surface over δ.
func LandscapeSurface(title, zlabel string, g plots.Grid) (*plots.Figure, error) {
	if len(g.X) == 0 {
		return nil, errors.New("paper: empty landscape grid")
	}
	return plots.Surface(plots.SurfaceOptions{Title: title, XLabel: "δ₁", YLabel: "δ₂", ZLabel: zlabel}, g)
}
