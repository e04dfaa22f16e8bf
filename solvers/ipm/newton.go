package ipm

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/convexnn/convexnn/solvers"
	"github.com/convexnn/convexnn/solvers/certify"
	"gonum.org/v1/gonum/floats"
	"gonum.org/v1/gonum/mat"
)

// Newton is the proximal Newton method for the convex program with a smooth
// loss (BCE, logistic; squared too), eq. (convex_general):
//
//	minimize   ℓ(Fu) + β Σ_j ‖u_j‖₂   subject to S_{i(j)} X u_j ≥ 0,
//
// with F = [D_1X … D_PX −D_1X … −D_PX]. A step replaces ℓ by its
// second-order model at ŷ₀ = Fu_t,
//
//	ℓ(ŷ₀) + gᵀ(ŷ − ŷ₀) + ½(ŷ − ŷ₀)ᵀdiag(h)(ŷ − ŷ₀),
//	g = ∇ℓ(ŷ₀), h = diag ∇²ℓ(ŷ₀) (solvers.Loss.Curvature),
//
// a cone QP with the squared loss's structure, rows weighted by √h, and
// solves it with the interior-point method of Solve to Options.Tol. The
// model follows that solve: at every iteration whose point's loss gradient
// the model misses (by more than Gap/10 against β, measured in the group
// dual constraints), the model is rebuilt there (in place: c, the offset
// and the weighted coupling rows; the method goes on from its iterate with
// the new residuals), as CVXOPT's cp re-evaluates a nonlinear objective at
// every iterate, so that the solve ends at a point optimal for the model
// of that point: the program's optimum. One or two solves of 20–50
// iterations are the rule, where Newton steps each solved from scratch on
// a fixed model took 8–11 steps and 80–230 iterations on the same programs,
// and rebuilding only when the gap had fallen tenfold took ~90 iterations
// per solve (where the loss saturates, each rebuild moves the model's
// vertex by about 1 and costs the method its centrality).
//
// The step then moves to u⁺ when f(u⁺) < f(u_t) (the model was rebuilt
// along the solve, so a plain decrease is the test; the Armijo test of a
// model fixed at u_t halved steps that landed at the optimum), else to
// u_t + s(u⁺ − u_t), the largest s in {½, ¼, …} with the Armijo decrease
// f(u_t + sΔ) ≤ f(u_t) + s/4·δ,
// δ = gᵀFΔ + β Σ_j (‖u⁺_j‖ − ‖u_{t,j}‖) < 0 (convexity gives
// f(u⁺) − f(u_t) ≥ δ, so any decrease has δ < 0); every point is feasible,
// the constraints being the model's. A step without decrease is an error.
//
// Each step is certified (solvers/certify) at the new point with the model
// solve's cone multipliers and μ = ∇ℓ(ŷ); the method stops at the certified
// relative gap Gap. The state (the step count and the point) is exported: a
// method rebuilt from it takes the same steps.
type Newton struct {
	Program *solvers.Program
	Gap     float64
	// Options of the interior-point solves; Tol is their tolerance (0:
	// min(1e-9, Gap/100): the method's relative gap is absolute for
	// objectives below 1, and BCE and logistic objectives are).
	Options Options
	State   NewtonState
}

// NewtonState is the iteration state of Newton.
type NewtonState struct {
	Iter int
	// V and W hold the point's groups v_i, w_i row after row (P×d each).
	V, W []float64
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
		if st.Iter < 0 {
			return nil, fmt.Errorf("ipm: Newton state: step %d", st.Iter)
		}
		_, d, np := p.Dims()
		if len(st.V) != np*d || len(st.W) != np*d {
			return nil, fmt.Errorf("ipm: Newton state: %d and %d weights, want P·d = %d each", len(st.V), len(st.W), np*d)
		}
		wt := st.weights(d, np)
		if err := checkWeightsOf(p, wt); err != nil {
			return nil, fmt.Errorf("ipm: Newton state: %w", err)
		}
		nt.State = NewtonState{Iter: st.Iter}
		nt.State.setWeights(wt)
	case warm != nil:
		if err := checkWeightsOf(p, *warm); err != nil {
			return nil, fmt.Errorf("ipm: Newton warm start: %w", err)
		}
		nt.State.setWeights(feasibleGroups(p, *warm))
	default:
		nt.State.setWeights(p.NewWeights())
	}
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
	nt.linearize(yhat, g, h, r)
	nc := newNetConeModel(p, h, r, nt.model(yhat, g, h, r))
	o := nt.Options
	need, _ := MemoryEstimate(p)
	nc.planFactor(need, o)
	cp := nc.problem()
	// The model follows the iterate: rebuilt at ŷ = F(x/τ) at every
	// iteration where it misses the loss's gradient, so that the solve ends
	// at a point that is optimal for the model built there: the program's
	// optimum.
	at := append([]float64(nil), yhat...)
	gm, hm, rm := slices.Clone(g), slices.Clone(h), slices.Clone(r) // the model's
	uk, e, fe := make([]float64, nc.nu), make([]float64, n), make([]float64, nc.nu)
	cp.relinearize = func(x []float64, tau float64) (bool, error) {
		floats.ScaleTo(uk, 1/tau, x[:nc.nu])
		nc.xu(uk)
		nc.fuFromZt()
		// The model's gradient error at the iterate, e = ∇ℓ(ŷ) − ∇model(ŷ),
		// measured where optimality looks at it: ‖(Fᵀe)_j‖ against β.
		p.Loss.Grad(e, nc.fu, p.Y)
		for k := range e {
			e[k] -= gm[k] + hm[k]*(nc.fu[k]-at[k])
		}
		nc.fuT(fe, e, 1, 0)
		var worst float64
		for j := 0; j < nc.ng; j++ {
			worst = math.Max(worst, floats.Norm(fe[j*d:(j+1)*d], 2))
		}
		// A certified gap of about worst/β follows (the dual constraints
		// are off by worst); a tenth of the target is enough.
		if worst <= math.Max(o.Tol, nt.Gap/10)*p.Beta {
			return false, nil
		}
		copy(at, nc.fu)
		nt.linearize(at, gm, hm, rm)
		nc.setModel(hm, rm, nt.model(at, gm, hm, rm))
		cp.offset = nc.offset
		return true, nil
	}
	sol, err := solveCone(ctx, cp, o)
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
		// tolerance; keep it (an error below unless it is certified).
		next, f, s = u, f0, 0
	} else if f, err = p.Objective(plus); err != nil {
		return NewtonStep{}, err
	} else if f >= f0 {
		// The solve rebuilt the model along its way, so a plain decrease
		// accepts u⁺ (at a far start the Armijo test, made for a model
		// fixed at u_t, would halve a step that lands at the optimum);
		// otherwise back off from it.
		trial := cloneWeights(u)
		for s = 0.5; s > 1e-10; s /= 2 {
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
	cert, err := NewCertifier(p, solvers.Perturbation{})
	if err != nil {
		return NewtonStep{}, err
	}
	cert.Refine = 20
	// The model's multipliers belong to u⁺; at another point they are still
	// a valid hint (the certifier projects whatever it is given).
	hint := nc.dual(sol.z)
	b, err := cert.Bound(next, hint)
	if err != nil {
		return NewtonStep{}, err
	}
	nt.State.Iter++
	nt.State.setWeights(next)
	step := NewtonStep{Iter: nt.State.Iter, Bound: b, Weights: next, Objective: f, StepLength: s,
		InnerIterations: sol.iters, InnerTol: o.Tol, Finished: b.Gap <= nt.Gap}
	step.Seconds = time.Since(start).Seconds()
	if s == 0 && !step.Finished {
		return step, fmt.Errorf("ipm: Newton: no decrease at the interior-point tolerance %g; certified gap %.3g", o.Tol, b.Gap)
	}
	return step, nil
}

// linearize sets the gradient g, the curvature h and r = g − diag(h)ŷ of
// the loss's second-order model at ŷ.
func (nt *Newton) linearize(yhat, g, h, r []float64) {
	p := nt.Program
	p.Loss.Grad(g, yhat, p.Y)
	p.Loss.Curvature(h, yhat, p.Y)
	// A floor keeps the model strictly convex in ŷ where the loss saturates.
	hmax := floats.Max(h)
	for k := range h {
		h[k] = math.Max(h[k], 1e-12*hmax)
		r[k] = g[k] - h[k]*yhat[k]
	}
}

// model returns the constant of the model at ŷ: ℓ(ŷ) − gᵀŷ + ½ŷᵀdiag(h)ŷ.
func (nt *Newton) model(yhat, g, h, _ []float64) float64 {
	p := nt.Program
	return p.Loss.Value(yhat, p.Y) - floats.Dot(g, yhat) + 0.5*weightedSquare(h, yhat)
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
