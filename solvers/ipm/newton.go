package ipm

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/convexnn/convexnn/solvers"
	"github.com/convexnn/convexnn/solvers/certify"
	"gonum.org/v1/gonum/floats"
	"gonum.org/v1/gonum/mat"
)

// Newton is the proximal Newton method for the convex program with a smooth
// loss (BCE, logistic; squared too, in one step), eq. (convex_general):
//
//	minimize   ℓ(Fu) + β Σ_j ‖u_j‖₂   subject to S_{i(j)} X u_j ≥ 0,
//
// with F = [D_1X … D_PX −D_1X … −D_PX]. Step t replaces ℓ by its
// second-order model at ŷ_t = Fu_t,
//
//	ℓ(ŷ_t) + gᵀ(ŷ − ŷ_t) + ½(ŷ − ŷ_t)ᵀdiag(h)(ŷ − ŷ_t),
//	g = ∇ℓ(ŷ_t), h = diag ∇²ℓ(ŷ_t) (solvers.Loss.Curvature),
//
// solves that cone QP, which has the squared loss's structure with rows
// weighted by √h, with the interior-point method of Solve to the tolerance
// State.Tol, and moves to u_t + s(u⁺ − u_t), the largest s in {1, ½, ¼, …}
// with the Armijo decrease f(u_t + sΔ) ≤ f(u_t) + s/4·δ,
// δ = gᵀFΔ + β Σ_j (‖u⁺_j‖ − ‖u_{t,j}‖) < 0. Every point is feasible (the
// constraints are those of the model). Near the optimum s = 1 and the
// convergence is quadratic, so a handful of interior-point solves reach
// the certified gap; the tolerance of the next one follows the gap (a
// hundredth of it, at most 10⁻³, at least Tol).
//
// Each step is certified (solvers/certify) at the new point with the model
// solve's cone multipliers and μ = ∇ℓ(ŷ); the method stops at the certified
// relative gap Gap. The state (the step count, the point and the next
// tolerance) is exported: a method rebuilt from it takes the same steps.
type Newton struct {
	Program *solvers.Program
	Gap     float64
	// Options of the interior-point solves; Tol is the tightest tolerance
	// they use (0: min(1e-9, Gap/100)).
	Options Options
	State   NewtonState
}

// NewtonState is the iteration state of Newton.
type NewtonState struct {
	Iter int
	// V and W hold the point's groups v_i, w_i row after row (P×d each).
	V, W []float64
	Tol  float64 // the interior-point tolerance of the next step
}

func (st *NewtonState) weights(d, np int) solvers.Weights {
	return solvers.Weights{V: mat.NewDense(np, d, append([]float64(nil), st.V...)), W: mat.NewDense(np, d, append([]float64(nil), st.W...))}
}

func (st *NewtonState) setWeights(wt solvers.Weights) {
	st.V, st.W = denseData(wt.V), denseData(wt.W)
}

func denseData(m *mat.Dense) []float64 {
	r, c := m.Dims()
	out := make([]float64, 0, r*c)
	for i := 0; i < r; i++ {
		out = append(out, m.RawRowView(i)...)
	}
	return out
}

// NewtonStep is what one step reports.
type NewtonStep struct {
	Iter            int
	Bound           certify.Bound // the certificate of the new point
	Weights         solvers.Weights
	Objective       float64 // at Weights
	StepLength      float64 // s
	InnerIterations int     // of the interior-point solve
	InnerTol        float64
	Seconds         float64
	Finished        bool // the certified gap is at most the target
}

// NewNewton validates the program and the options and starts from st, or
// from warm (a point of any earlier run, made feasible first: each group
// that violates its cone constraint is set to zero), or from zero.
func NewNewton(p *solvers.Program, gap float64, o Options, st *NewtonState, warm *solvers.Weights) (*Newton, error) {
	if err := checkProgram(p); err != nil {
		return nil, err
	}
	if !p.Loss.Smooth() {
		return nil, fmt.Errorf("ipm: the proximal Newton method needs a smooth loss (squared, BCE, logistic), not the %v loss: use Solve", p.Loss)
	}
	if !(gap > 0 && gap < 1) {
		return nil, fmt.Errorf("ipm: Newton: certified gap %v, need 0 < gap < 1", gap)
	}
	if o.Tol == 0 {
		o.Tol = math.Min(1e-9, gap/100)
	}
	o, err := o.resolve()
	if err != nil {
		return nil, err
	}
	need, what := MemoryEstimate(p)
	if err := o.fits(need, what, "use ADMM (admm.New), which needs O(nP + dP) memory, or fewer patterns"); err != nil {
		return nil, err
	}
	nt := &Newton{Program: p, Gap: gap, Options: o}
	switch {
	case st != nil:
		if st.Iter < 0 || !(st.Tol > 0) {
			return nil, fmt.Errorf("ipm: Newton state: step %d, tolerance %v", st.Iter, st.Tol)
		}
		_, d, np := p.Dims()
		if len(st.V) != np*d || len(st.W) != np*d {
			return nil, fmt.Errorf("ipm: Newton state: %d and %d weights, want P·d = %d each", len(st.V), len(st.W), np*d)
		}
		wt := st.weights(d, np)
		if err := checkWeightsOf(p, wt); err != nil {
			return nil, fmt.Errorf("ipm: Newton state: %w", err)
		}
		nt.State = NewtonState{Iter: st.Iter, Tol: st.Tol}
		nt.State.setWeights(wt)
	case warm != nil:
		if err := checkWeightsOf(p, *warm); err != nil {
			return nil, fmt.Errorf("ipm: Newton warm start: %w", err)
		}
		nt.State = NewtonState{Tol: 1e-1}
		nt.State.setWeights(feasibleGroups(p, *warm))
	default:
		nt.State = NewtonState{Tol: 1e-1}
		nt.State.setWeights(p.NewWeights())
	}
	nt.State.Tol = math.Max(nt.State.Tol, o.Tol)
	return nt, nil
}

func checkWeightsOf(p *solvers.Program, wt solvers.Weights) error {
	_, d, np := p.Dims()
	if wt.V == nil || wt.W == nil {
		return errors.New("no weights")
	}
	for _, m := range []*mat.Dense{wt.V, wt.W} {
		if r, c := m.Dims(); r != np || c != d {
			return fmt.Errorf("weights are %d×%d, want P×d = %d×%d", r, c, np, d)
		}
		for k := 0; k < np; k++ {
			for _, v := range m.RawRowView(k) {
				if math.IsNaN(v) || math.IsInf(v, 0) {
					return errors.New("weights hold NaN or ±Inf")
				}
			}
		}
	}
	return nil
}

func cloneWeights(wt solvers.Weights) solvers.Weights {
	return solvers.Weights{V: mat.DenseCopyOf(wt.V), W: mat.DenseCopyOf(wt.W)}
}

// feasibleGroups returns wt with every group that violates its cone
// constraint S_i X u ≥ 0 set to zero.
func feasibleGroups(p *solvers.Program, wt solvers.Weights) solvers.Weights {
	out := cloneWeights(wt)
	n, _, np := p.Dims()
	for _, g := range []*mat.Dense{out.V, out.W} {
		var z mat.Dense
		z.Mul(p.X, g.T()) // n×P
		for i := 0; i < np; i++ {
			for k := 0; k < n; k++ {
				v := z.At(k, i)
				if (p.D[i][k] && v < 0) || (!p.D[i][k] && v > 0) {
					for l := range g.RawRowView(i) {
						g.RawRowView(i)[l] = 0
					}
					break
				}
			}
		}
	}
	return out
}

// Step takes one proximal Newton step and certifies the new point.
func (nt *Newton) Step(ctx context.Context) (NewtonStep, error) {
	start := time.Now()
	p := nt.Program
	n, d, np := p.Dims()
	u := nt.State.weights(d, np)
	yhat, err := p.Predict(u)
	if err != nil {
		return NewtonStep{}, err
	}
	f0, err := p.Objective(u)
	if err != nil {
		return NewtonStep{}, err
	}
	g, h, r := make([]float64, n), make([]float64, n), make([]float64, n)
	p.Loss.Grad(g, yhat, p.Y)
	p.Loss.Curvature(h, yhat, p.Y)
	// A floor keeps the model strictly convex in ŷ where the loss saturates.
	hmax := floats.Max(h)
	for k := range h {
		h[k] = math.Max(h[k], 1e-12*hmax)
		r[k] = g[k] - h[k]*yhat[k]
	}
	offset := p.Loss.Value(yhat, p.Y) - floats.Dot(g, yhat) + 0.5*weightedSquare(h, yhat)
	nc := newNetConeModel(p, h, r, offset)
	o := nt.Options
	o.Tol = nt.State.Tol
	sol, err := solveCone(ctx, nc.problem(), o)
	if sol == nil {
		return NewtonStep{}, fmt.Errorf("ipm: Newton step %d: %w", nt.State.Iter+1, err)
	}
	if err != nil {
		return NewtonStep{}, fmt.Errorf("ipm: Newton step %d: %w", nt.State.Iter+1, err)
	}
	if sol.status != Optimal && sol.status != Inaccurate && sol.status != IterationLimit {
		return NewtonStep{}, fmt.Errorf("ipm: Newton step %d: the model program ended %v", nt.State.Iter+1, sol.status)
	}
	plus := groupWeights(p, sol.x)
	// δ = gᵀF(u⁺ − u) + β(Σ‖u⁺_j‖ − Σ‖u_j‖).
	yplus, err := p.Predict(plus)
	if err != nil {
		return NewtonStep{}, err
	}
	delta := p.Beta * (groupNormSum(plus) - groupNormSum(u))
	for k := range g {
		delta += g[k] * (yplus[k] - yhat[k])
	}
	next, f, s := plus, 0.0, 1.0
	if delta >= 0 {
		// No decrease predicted: the point is optimal for the model to its
		// tolerance; keep it and tighten.
		next, f, s = u, f0, 0
	} else {
		trial := cloneWeights(u)
		for ; s > 1e-10; s /= 2 {
			mixWeights(trial, u, plus, s)
			if f, err = p.Objective(trial); err != nil {
				return NewtonStep{}, err
			}
			if f <= f0+s/4*delta {
				break
			}
		}
		if s <= 1e-10 {
			next, f, s = u, f0, 0
		} else {
			next = trial
		}
	}
	cert, err := certify.New(p, solvers.Perturbation{})
	if err != nil {
		return NewtonStep{}, err
	}
	cert.Refine = 20
	hint := nc.dual(sol.z)
	if s != 1 {
		hint = nil // the model's multipliers belong to u⁺
	}
	b, err := cert.Bound(next, hint)
	if err != nil {
		return NewtonStep{}, err
	}
	nt.State.Iter++
	nt.State.setWeights(next)
	nt.State.Tol = math.Max(nt.Options.Tol, math.Min(1e-1, b.Gap*b.Gap/10))
	if s == 0 {
		nt.State.Tol = math.Max(nt.Options.Tol, o.Tol/100)
	}
	step := NewtonStep{Iter: nt.State.Iter, Bound: b, Weights: next, Objective: f, StepLength: s,
		InnerIterations: sol.iters, InnerTol: o.Tol, Finished: b.Gap <= nt.Gap}
	step.Seconds = time.Since(start).Seconds()
	if s == 0 && o.Tol <= nt.Options.Tol && !step.Finished {
		return step, fmt.Errorf("ipm: Newton: no decrease at the tightest tolerance %g; certified gap %.3g", o.Tol, b.Gap)
	}
	return step, nil
}

func weightedSquare(h, v []float64) float64 {
	var s float64
	for k, x := range v {
		s += h[k] * x * x
	}
	return s
}

func groupNormSum(wt solvers.Weights) float64 {
	var s float64
	for _, g := range []*mat.Dense{wt.V, wt.W} {
		r, _ := g.Dims()
		for i := 0; i < r; i++ {
			s += floats.Norm(g.RawRowView(i), 2)
		}
	}
	return s
}

// mixWeights sets dst = (1 − s)a + s·b.
func mixWeights(dst, a, b solvers.Weights, s float64) {
	for _, m := range [][3]*mat.Dense{{dst.V, a.V, b.V}, {dst.W, a.W, b.W}} {
		r, _ := m[0].Dims()
		for i := 0; i < r; i++ {
			d, x, y := m[0].RawRowView(i), m[1].RawRowView(i), m[2].RawRowView(i)
			for l := range d {
				d[l] = (1-s)*x[l] + s*y[l]
			}
		}
	}
}

// Solve takes steps until the certified gap is reached (or maxIter steps,
// 0 meaning 50, or ctx is done), calling onStep after each, and returns
// the last step.
func (nt *Newton) Solve(ctx context.Context, maxIter int, onStep func(NewtonStep)) (NewtonStep, error) {
	if maxIter <= 0 {
		maxIter = 50
	}
	var last NewtonStep
	for it := 0; it < maxIter; it++ {
		if err := ctx.Err(); err != nil {
			return last, err
		}
		st, err := nt.Step(ctx)
		if st.Iter > 0 {
			last = st
			if onStep != nil {
				onStep(st)
			}
		}
		if err != nil {
			return last, err
		}
		if st.Finished {
			return last, nil
		}
	}
	return last, fmt.Errorf("ipm: Newton: certified gap %.3g after %d steps, target %g", last.Bound.Gap, maxIter, nt.Gap)
}
