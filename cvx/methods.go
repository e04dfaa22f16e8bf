package cvx

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"

	"github.com/convexnn/convexnn/solvers"
	"gonum.org/v1/gonum/mat"
)

// ---- FISTA on the sampled convex program of neurons (eq. SCP2) ----

func (f FISTA) open(p *Problem, saved json.RawMessage) (engine, error) {
	if f.Tol < 0 {
		return nil, fmt.Errorf("cvx: FISTA{Tol: %v}: tolerance must be ≥ 0", f.Tol)
	}
	if !p.sampled {
		return nil, errors.New("cvx: FISTA solves the sampled convex program: call SampleNeurons(N, seed) on the problem")
	}
	if err := p.refuseRobust("FISTA"); err != nil {
		return nil, err
	}
	a := p.design()
	_, d := a.Dims()
	u, err := solvers.SampleSphere(d, p.neurons, p.seed)
	if err != nil {
		return nil, err
	}
	h, err := solvers.ReLUFeatures(a, u)
	if err != nil {
		return nil, err
	}
	var st *solvers.FISTAState
	if saved != nil {
		st = new(solvers.FISTAState)
		if err := json.Unmarshal(saved, st); err != nil {
			return nil, fmt.Errorf("solver state is corrupt (%v)", err)
		}
	}
	tol := f.Tol
	if tol == 0 {
		tol = 1e-8
	}
	e := &fistaEngine{u: u, bias: p.bias, tol: tol}
	switch p.loss {
	case Squared:
		solver, err := solvers.NewFISTA(&solvers.Lasso{H: h, Y: p.y, Beta: p.beta}, st)
		if err != nil {
			return nil, err
		}
		e.stepper, e.st = solver, &solver.State
	case BCE:
		solver, err := solvers.NewFISTABCE(&solvers.BCELasso{H: solvers.NewDenseFeatures(h), Y: p.targets(), Beta: p.beta}, st)
		if err != nil {
			return nil, err
		}
		e.stepper, e.st = solver, &solver.State
	default:
		return nil, fmt.Errorf("cvx: FISTA solves the sampled convex program with the squared or BCE loss, not %s (use ADMM on sampled patterns)", p.loss)
	}
	return e, nil
}

type fistaEngine struct {
	stepper interface{ Step() solvers.FISTAStep }
	st      *solvers.FISTAState
	u       *mat.Dense
	bias    bool
	tol     float64
}

func (e *fistaEngine) step() Point {
	st := e.stepper.Step()
	return Point{Iter: st.Iter, Objective: st.Objective, Gap: st.Gap, ProxGrad: st.ProxGrad, Nonzeros: st.Nonzeros}
}
func (e *fistaEngine) iter() int           { return e.st.Iter }
func (e *fistaEngine) objective() float64  { return e.st.Obj }
func (e *fistaEngine) state() (any, error) { return e.st, nil }
func (e *fistaEngine) network() (*Network, error) {
	return solvers.SCPNetwork(e.u, e.st.Alpha, e.bias, 0)
}
func (e *fistaEngine) converged(p Point) bool { return p.Gap <= e.tol*math.Max(1, p.Objective) }

// ---- ADMM on the convex program of activation patterns (eq. convex_general) ----

// ADMM solves the convex program of activation patterns by the paper's
// Algorithm "ADMM". The u-update depends on the loss (Inner): the closed form
// eq. (uupdate) for the squared loss (solvers.ADMM); for the hinge, BCE and
// logistic losses the loss split out of the u-update with its prox per
// sample (solvers.ADMMSplit, ρ adapted by residual balancing); or, for the
// smooth losses, the paper's randomized block coordinate descent
// (Algorithm RBCD, solvers.ADMMRBCD).
type ADMM struct {
	Rho   float64 // penalty ρ > 0; 0 means the solver's default
	Gamma float64 // dual step γ_a > 0; 0 means γ_a = ρ (dual step γ_a/ρ = 1)
	// Tol stops Iterate when the primal and dual residuals are below it
	// (absolute and relative); 0 means the solver's default.
	Tol float64
	// Inner selects the u-update: "closed-form", "split" or "rbcd"; ""
	// chooses the robust ADMM (solvers.ADMMRobust, also "robust") for a
	// robust problem, and otherwise closed form for the squared loss, split
	// for the hinge loss
	// and RBCD for BCE and logistic (on MNIST 2 vs 8 at d = 100, n = 2000,
	// RBCD reached a BCE loss 6× lower than the split in an eighth of the
	// iterations: the split's single ρ balances the mean loss poorly).
	Inner string
	// Blocks is the number of blocks per RBCD step, InnerMax the cap on RBCD
	// steps per ADMM iteration (0: the solver's defaults, 1 and 20 sweeps).
	Blocks, InnerMax int
	// Seed seeds RBCD's block selection.
	Seed uint64
	// Relax is the over-relaxation α ∈ (0, 2) of the closed-form ADMM
	// (solvers.ADMMOptions.Relax): 0 means 1, the paper's ADMM; 1.5–1.8
	// often converges faster. It needs γ_a = ρ (Gamma 0 or Rho).
	Relax float64
	// Route selects how the closed-form and split u-updates solve their
	// linear system (solvers.ADMMOptions.Route): "woodbury" or "direct"
	// factor it once (exact solves; the set-up dominates short runs on
	// large data: 7.6 s on MNIST 2 vs 8 at P_s = 24), "cg" factors nothing
	// and solves by warm-started preconditioned conjugate gradients to
	// tolerances that tighten as 1/k² (best for tens of iterations on large
	// data); "" chooses by a flop model for a 1000-iteration run.
	Route string
}

// relaxed reports whether a asks for over-relaxation (Relax other than 0
// and 1, which both mean none).
func (a ADMM) relaxed() bool { return a.Relax != 0 && a.Relax != 1 }

// method names ADMM with the parameters its state depends on (the scaled
// duals depend on ρ), so a run is not resumed with other ones.
func (a ADMM) method() string {
	m := fmt.Sprintf("admm rho=%g gamma=%g", a.Rho, a.Gamma)
	if a.Inner != "" {
		m += " inner=" + a.Inner
	}
	if a.relaxed() {
		m += fmt.Sprintf(" relax=%g", a.Relax)
	}
	if a.Inner == "rbcd" {
		m += fmt.Sprintf(" blocks=%d inner-max=%d seed=%d", a.Blocks, a.InnerMax, a.Seed)
	}
	return m
}

func (a ADMM) open(p *Problem, saved json.RawMessage) (engine, error) {
	if a.Rho < 0 || a.Gamma < 0 || a.Tol < 0 || a.Blocks < 0 || a.InnerMax < 0 || math.IsNaN(a.Rho) || math.IsNaN(a.Gamma) || math.IsNaN(a.Tol) {
		return nil, fmt.Errorf("cvx: ADMM{Rho: %v, Gamma: %v, Tol: %v, Blocks: %d}: parameters must be positive (or 0 for the default)", a.Rho, a.Gamma, a.Tol, a.Blocks)
	}
	if a.Relax != 0 && !(a.Relax > 0 && a.Relax < 2) {
		return nil, fmt.Errorf("cvx: ADMM{Relax: %v}: the over-relaxation α must be in (0, 2) (or 0 for none)", a.Relax)
	}
	inner := a.Inner
	if p.robust() {
		return a.openRobust(p, saved)
	}
	if inner == "robust" {
		return nil, errors.New("cvx: ADMM{Inner: \"robust\"} is for robust problems (Problem.Robust(ε))")
	}
	if inner == "" {
		switch p.loss {
		case Squared:
			inner = "closed-form"
		case Hinge:
			inner = "split"
		default:
			inner = "rbcd"
		}
	}
	switch inner {
	case "closed-form":
		if p.loss != Squared {
			return nil, fmt.Errorf("cvx: ADMM{Inner: \"closed-form\"} is for the squared loss; the %s loss needs \"split\" or \"rbcd\"", p.loss)
		}
	case "split":
	case "rbcd":
		if p.loss == Hinge {
			return nil, errors.New("cvx: ADMM{Inner: \"rbcd\"} needs a smooth loss; the hinge loss has no gradient: use Inner \"split\"")
		}
	default:
		return nil, fmt.Errorf("cvx: ADMM{Inner: %q}: use \"closed-form\", \"split\" or \"rbcd\"", a.Inner)
	}
	if inner != "closed-form" && a.relaxed() {
		return nil, fmt.Errorf("cvx: ADMM{Relax: %v} is for Inner \"closed-form\" (the squared loss); the %s u-update has no over-relaxation", a.Relax, inner)
	}
	if inner != "rbcd" && (a.Blocks != 0 || a.InnerMax != 0 || a.Seed != 0) {
		return nil, errors.New("cvx: ADMM Blocks, InnerMax and Seed are options of Inner \"rbcd\"")
	}
	switch a.Route {
	case "", "woodbury", "direct", "cg":
		if a.Route != "" && inner == "rbcd" {
			return nil, fmt.Errorf("cvx: ADMM{Route: %q} is for Inner \"closed-form\" and \"split\"; RBCD solves no linear system", a.Route)
		}
	default:
		return nil, fmt.Errorf("cvx: ADMM{Route: %q}: use \"woodbury\", \"direct\", \"cg\" or \"\"", a.Route)
	}
	prog, err := p.Convex()
	if err != nil {
		return nil, err
	}
	o := a.options()
	if inner != "rbcd" {
		o.Route = a.Route
	}
	if inner == "closed-form" {
		o.Relax = a.Relax
	}
	unmarshal := func(st any) error { return unmarshalState(saved, st) }
	switch inner {
	case "split":
		var st *solvers.SplitState
		if saved != nil {
			st = new(solvers.SplitState)
			if err := unmarshal(st); err != nil {
				return nil, err
			}
		}
		solver, err := solvers.NewADMMSplit(prog, o, st)
		if err != nil {
			return nil, err
		}
		return &admmEngine{stepper: solver, prog: prog, weights: solver.Weights, converge: solver.Converged,
			iterFn: func() int { return solver.State.Iter }, stateFn: func() any { return solver.State }}, nil
	case "rbcd":
		return openRBCD(a, prog, o, saved, unmarshal)
	}
	var st *solvers.ADMMState
	if saved != nil {
		st = new(solvers.ADMMState)
		if err := unmarshal(st); err != nil {
			return nil, err
		}
	}
	solver, err := solvers.NewADMM(prog, o, st)
	if err != nil {
		return nil, err
	}
	return &admmEngine{stepper: solver, prog: prog, weights: solver.Weights, converge: solver.Converged,
		iterFn: func() int { return solver.State.Iter }, stateFn: func() any { return solver.State }}, nil
}

// admmEngine runs any ADMM variant: they share the step report.
type admmEngine struct {
	stepper  interface{ Step() solvers.ADMMStep }
	prog     *solvers.Program
	weights  func() solvers.Weights
	converge func(solvers.ADMMStep) bool
	iterFn   func() int
	stateFn  func() any
	last     solvers.ADMMStep
	// pert is the perturbation set of a robust problem (nil otherwise): the
	// objective is then solvers.RobustObjective.
	pert *solvers.Perturbation
}

// options are the solver options of a: ρ, γ_a and, when Tol is set, both
// residual tolerances.
func (a ADMM) options() solvers.ADMMOptions {
	o := solvers.ADMMOptions{Rho: a.Rho, Gamma: a.Gamma}
	if a.Tol > 0 {
		o.AbsTol, o.RelTol = a.Tol, a.Tol
	}
	return o
}

// unmarshalState decodes a saved solver state into st.
func unmarshalState(saved json.RawMessage, st any) error {
	if err := json.Unmarshal(saved, st); err != nil {
		return fmt.Errorf("solver state is corrupt (%v)", err)
	}
	return nil
}

// openRobust opens the robust ADMM (solvers.ADMMRobust) for a robust
// problem: every loss, every perturbation norm.
func (a ADMM) openRobust(p *Problem, saved json.RawMessage) (engine, error) {
	if a.Inner != "" && a.Inner != "robust" {
		return nil, fmt.Errorf("cvx: ADMM{Inner: %q}: a robust problem (Robust(%g)) is solved by the robust ADMM, Inner \"robust\" or \"\"", a.Inner, p.eps)
	}
	if a.Route != "" {
		return nil, fmt.Errorf("cvx: ADMM{Route: %q} is for Inner \"closed-form\" and \"split\"; the robust ADMM solves its u-update in eigenbases", a.Route)
	}
	if a.Blocks != 0 || a.InnerMax != 0 || a.Seed != 0 {
		return nil, errors.New("cvx: ADMM Blocks, InnerMax and Seed are options of Inner \"rbcd\", not of the robust ADMM")
	}
	if a.relaxed() {
		return nil, fmt.Errorf("cvx: ADMM{Relax: %v} is for Inner \"closed-form\" (the squared loss); the robust ADMM has no over-relaxation", a.Relax)
	}
	prog, err := p.Convex()
	if err != nil {
		return nil, err
	}
	o := a.options()
	var st *solvers.RobustState
	if saved != nil {
		st = new(solvers.RobustState)
		if err := unmarshalState(saved, st); err != nil {
			return nil, err
		}
	}
	pert := p.Perturbation()
	solver, err := solvers.NewADMMRobust(prog, pert, o, st)
	if err != nil {
		return nil, err
	}
	return &admmEngine{stepper: solver, prog: prog, weights: solver.Weights, converge: solver.Converged, pert: &pert,
		iterFn: func() int { return solver.State.Iter }, stateFn: func() any { return solver.State }}, nil
}

func (e *admmEngine) step() Point {
	st := e.stepper.Step()
	e.last = st
	return Point{Iter: st.Iter, Objective: st.ConvexObjective, Nonconvex: st.NonconvexObjective, Gap: st.Gap,
		PrimalResidual: st.PrimalResidual, DualResidual: st.DualResidual, Violation: st.Violation}
}
func (e *admmEngine) iter() int { return e.iterFn() }
func (e *admmEngine) objective() float64 {
	var v float64
	var err error
	if e.pert != nil {
		v, err = solvers.RobustObjective(e.prog, e.weights(), *e.pert)
	} else {
		v, err = e.prog.Objective(e.weights())
	}
	if err != nil {
		return math.NaN()
	}
	return v
}
func (e *admmEngine) state() (any, error) { return e.stateFn(), nil }
func (e *admmEngine) network() (*Network, error) {
	wt := e.weights()
	return e.prog.Recover(wt, recoverTol(wt))
}
func (e *admmEngine) converged(Point) bool { return e.converge(e.last) }

// recoverTol is the group norm at or below which a (v_i, w_i) group counts
// as zero in weight recovery: 1e-8 of the largest group norm, about the
// interior-point method's accuracy (the dropped groups change l^{u,α} by
// about that much relative to l^{v,w}).
func recoverTol(wt solvers.Weights) float64 {
	var m float64
	r, _ := wt.V.Dims()
	for i := 0; i < r; i++ {
		m = math.Max(m, math.Max(mat.Norm(wt.V.RowView(i), 2), mat.Norm(wt.W.RowView(i), 2)))
	}
	return 1e-8 * m
}
