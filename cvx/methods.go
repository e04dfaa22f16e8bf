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
	solver, err := solvers.NewFISTA(&solvers.Lasso{H: h, Y: p.y, Beta: p.beta}, st)
	if err != nil {
		return nil, err
	}
	tol := f.Tol
	if tol == 0 {
		tol = 1e-8
	}
	return &fistaEngine{f: solver, u: u, bias: p.bias, tol: tol}, nil
}

type fistaEngine struct {
	f    *solvers.FISTA
	u    *mat.Dense
	bias bool
	tol  float64
}

func (e *fistaEngine) step() Point {
	st := e.f.Step()
	return Point{Iter: st.Iter, Objective: st.Objective, Gap: st.Gap, ProxGrad: st.ProxGrad, Nonzeros: st.Nonzeros}
}
func (e *fistaEngine) iter() int           { return e.f.State.Iter }
func (e *fistaEngine) objective() float64  { return e.f.State.Obj }
func (e *fistaEngine) state() (any, error) { return e.f.State, nil }
func (e *fistaEngine) network() (*Network, error) {
	return solvers.SCPNetwork(e.u, e.f.State.Alpha, e.bias, 0)
}
func (e *fistaEngine) converged(p Point) bool { return p.Gap <= e.tol*math.Max(1, p.Objective) }

// ---- ADMM on the convex program of activation patterns (eq. convex_general) ----

// ADMM solves the convex program of activation patterns by the paper's
// Algorithm "ADMM" (solvers.ADMM): closed-form u-update for the squared loss.
type ADMM struct {
	Rho   float64 // penalty ρ > 0; 0 means the solver's default
	Gamma float64 // dual step γ_a > 0; 0 means γ_a = ρ (dual step γ_a/ρ = 1)
	// Tol stops Iterate when the primal and dual residuals are below it
	// (absolute and relative); 0 means the solver's default.
	Tol float64
}

// method names ADMM with the parameters its state depends on (the scaled
// duals depend on ρ), so a run is not resumed with other ones.
func (a ADMM) method() string { return fmt.Sprintf("admm rho=%g gamma=%g", a.Rho, a.Gamma) }

func (a ADMM) open(p *Problem, saved json.RawMessage) (engine, error) {
	if a.Rho < 0 || a.Gamma < 0 || a.Tol < 0 {
		return nil, fmt.Errorf("cvx: ADMM{Rho: %v, Gamma: %v, Tol: %v}: parameters must be positive (or 0 for the default)", a.Rho, a.Gamma, a.Tol)
	}
	prog, err := p.Convex()
	if err != nil {
		return nil, err
	}
	var st *solvers.ADMMState
	if saved != nil {
		st = new(solvers.ADMMState)
		if err := json.Unmarshal(saved, st); err != nil {
			return nil, fmt.Errorf("solver state is corrupt (%v)", err)
		}
	}
	o := solvers.ADMMOptions{Rho: a.Rho, Gamma: a.Gamma}
	if a.Tol > 0 {
		o.AbsTol, o.RelTol = a.Tol, a.Tol
	}
	solver, err := solvers.NewADMM(prog, o, st)
	if err != nil {
		return nil, err
	}
	return &admmEngine{a: solver, prog: prog}, nil
}

type admmEngine struct {
	a    *solvers.ADMM
	prog *solvers.Program
	last solvers.ADMMStep
}

func (e *admmEngine) step() Point {
	st := e.a.Step()
	e.last = st
	return Point{Iter: st.Iter, Objective: st.ConvexObjective, Nonconvex: st.NonconvexObjective, Gap: st.Gap,
		PrimalResidual: st.PrimalResidual, DualResidual: st.DualResidual, Violation: st.Violation}
}
func (e *admmEngine) iter() int { return e.a.State.Iter }
func (e *admmEngine) objective() float64 {
	if v, err := e.prog.Objective(e.a.Weights()); err == nil {
		return v
	}
	return math.NaN()
}
func (e *admmEngine) state() (any, error) { return e.a.State, nil }
func (e *admmEngine) network() (*Network, error) {
	wt := e.a.Weights()
	return e.prog.Recover(wt, recoverTol(wt))
}
func (e *admmEngine) converged(Point) bool { return e.a.Converged(e.last) }

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
