package cvx

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/convexnn/convexnn/solvers"
	"github.com/convexnn/convexnn/solvers/ipm"
)

// Convex adversarial training, section "Convex Adversarial Training" of the
// paper: a Problem with Robust(eps, norm) is the robust convex program
// eq. (rob_gen_cvx_s) on its activation patterns,
//
//	min_{v,w} max_{‖δ_k‖ ≤ ε} ℓ(Σ_i D_i (X + Δ)(v_i − w_i), y) + β Σ_i (‖v_i‖₂ + ‖w_i‖₂)
//	s.t. (2D_i − I) X v_i ≥ ε‖v_i^f‖_*,  (2D_i − I) X w_i ≥ ε‖w_i^f‖_*   (eq. robust_constraint),
//
// with ‖·‖_* the dual norm of the perturbation's norm and v^f the weights of
// the raw features (the bias input 1 is not perturbed). For the hinge loss
// this is eq. (hinge_adv_D) (eq. hinge_adv_D_lp for the ℓ₂ and ℓ₁ balls),
// for the squared loss eq. (SOCP3). Its patterns come from SamplePatterns,
// ExactPatterns or, as in Algorithm "practical convex adversarial training"
// (alg. adv_train), RobustPatterns.

// Norm names the ℓ_p norm of a perturbation set (solvers.Norm).
type Norm = solvers.Norm

// The perturbation norms.
const (
	LInf Norm = solvers.LInf // ‖δ‖_∞ ≤ ε, the paper's box
	L2   Norm = solvers.L2   // ‖δ‖₂ ≤ ε
	L1   Norm = solvers.L1   // ‖δ‖₁ ≤ ε
)

// Robust makes the problem the robust (adversarial) training problem for
// perturbations ‖δ_k‖ ≤ eps of every data point in the norm given: LInf (the
// paper's box ‖δ_k‖_∞ ≤ ε), L2 or L1. eps = 0 is the standard problem. A
// negative, NaN or infinite eps or an unknown norm is an error.
func (p *Problem) Robust(eps float64, norm Norm) *Problem {
	nm := norm.Canonical()
	if p.err == nil {
		if math.IsNaN(eps) || math.IsInf(eps, 0) || eps < 0 {
			p.err = fmt.Errorf("cvx: Robust(%v): the perturbation radius ε must be ≥ 0 and finite", eps)
		} else if err := (solvers.Perturbation{Eps: eps, Norm: nm}).Validate(); err != nil {
			p.err = fmt.Errorf("cvx: Robust(%v, %q): unknown norm; use cvx.LInf, cvx.L2 or cvx.L1", eps, norm)
		}
	}
	p.eps, p.norm = eps, nm
	return p
}

// AdvTrain are the sampling parameters of step 1 of Algorithm "practical
// convex adversarial training" (alg. adv_train), for RobustPatterns.
type AdvTrain struct {
	// Directions is P_a, the number of random directions a_h ~ N(0, I).
	Directions int
	// PerDirection is S, the patterns drawn per direction: the clean one
	// and S − 1 perturbed ones.
	PerDirection int
	// Patterns is P_s, the number of distinct patterns wanted; it needs
	// Directions · PerDirection ≥ Patterns.
	Patterns int
	// Seed seeds the directions and the perturbations.
	Seed uint64
}

// RobustPatterns selects the convex program with the activation patterns of
// step 1 of Algorithm "practical convex adversarial training"
// (alg. adv_train): a.Directions random directions a_h ~ N(0, I), and for
// each the clean pattern D_h1 = diag(1[X a_h ≥ 0]) and a.PerDirection − 1
// perturbed ones D_hj = diag(1[(X + Δ_hj) a_h ≥ 0]), Δ_hj with every row a
// random extreme point of the problem's perturbation ball (a vertex ε sgn(R)
// of the box for LInf), keeping distinct patterns until a.Patterns of them
// are found (solvers.SampleRobustPatterns; with a bias, on X with its bias
// column, which is not perturbed). With ε = 0 it gives SamplePatterns'
// patterns for the same seed.
func (p *Problem) RobustPatterns(a AdvTrain) *Problem {
	P, S, target := a.Directions, a.PerDirection, a.Patterns
	if p.err == nil {
		switch {
		case P < 1 || S < 1 || target < 1:
			p.err = fmt.Errorf("cvx: RobustPatterns(%+v): Directions (P_a), PerDirection (S) and Patterns (P_s) must be ≥ 1", a)
		case P <= math.MaxInt/S && P*S < target:
			p.err = fmt.Errorf("cvx: RobustPatterns(%+v): P·S = %d draws (P = Directions, S = PerDirection) cannot give %d patterns; Algorithm adv_train needs P·S ≥ Patterns", a, P*S, target)
		}
	}
	p.exact = false
	p.patterns, p.patternSeed = target, a.Seed
	p.robustP, p.robustS = P, S
	return p
}

// Perturbation returns the problem's perturbation set (ε = 0 for a standard
// problem).
func (p *Problem) Perturbation() solvers.Perturbation {
	return solvers.Perturbation{Eps: p.eps, Norm: p.norm.Canonical()}
}

// robust reports whether the problem is a robust one, ε > 0.
func (p *Problem) robust() bool { return p.eps > 0 }

// refuseRobust is the refusal of the methods that do not solve robust
// programs (FISTA on the sampled neurons of eq. SCP2) for a robust problem;
// their open methods call it.
func (p *Problem) refuseRobust(method string) error {
	if p.robust() {
		return fmt.Errorf("cvx: %s: robust programs (Robust(%g, %q)) are programs of activation patterns, solved by ADMM (cvx.ADMM{}) or the interior-point method (cvx.Solve(problem, cvx.IPM{}))", method, p.eps, p.Perturbation().Norm)
	}
	return nil
}

// robustPatterns draws the patterns of RobustPatterns on the design matrix x
// (with its bias column when the problem has one).
func (p *Problem) robustPatterns() (solvers.Patterns, error) {
	return solvers.SampleRobustPatterns(p.design(), p.bias, p.robustP, p.robustS, p.Perturbation(), p.patterns, p.patternSeed, 0)
}

// solveRobust solves the robust program prog for the perturbation pert with
// ipm.SolveRobust: the hinge loss by eq. (hinge_adv_D) /
// (hinge_adv_D_lp), the squared loss by eq. (SOCP3). The Solution's
// Objective is the robust objective (solvers.RobustObjective), Violation the
// largest violation of the robust constraints eq. (robust_constraint)
// (solvers.RobustViolation), Clean the standard objective l^{v,w} at the
// same weights and Nonconvex the clean nonconvex objective l^{u,α} of the
// recovered network.
func solveRobust(ctx context.Context, prog *solvers.Program, pert solvers.Perturbation, m IPM) (*Solution, error) {
	t0 := time.Now()
	res, err := ipm.SolveRobust(ctx, prog, pert, m.options())
	if err != nil && (res == nil || ctx.Err() == nil) {
		return nil, fmt.Errorf("cvx: robust interior-point method (%v): %w", pert, err)
	}
	s := &Solution{Status: res.Status.String(), Objective: res.Objective, Iterations: res.Iterations, Weights: res.Weights, Program: prog, Perturbation: pert}
	if s.Violation, err = solvers.RobustViolation(prog, res.Weights, pert); err != nil {
		return nil, err
	}
	if s.Clean, err = prog.Objective(res.Weights); err != nil {
		return nil, err
	}
	return s.finish(ctx, t0, "robust interior-point method", fmt.Sprintf("robust objective %.8g, %v", s.Objective, pert), res)
}

// FeasibleNetwork returns the network of a run whose weights satisfy the
// robust constraints eq. (robust_constraint) exactly: for a robust ADMM run,
// the iterate (which meets them only to its residual) is passed through
// ipm.RestoreRobust, which replaces each violating neuron
// group by its nearest robust-feasible one (a small cone QP per group), so
// that every training point is certified (Certified). It also returns the
// number of groups changed and the robust objective of the restored weights.
// For any other run it is Network, with 0 groups changed and Objective.
func (r *Run) FeasibleNetwork() (net *Network, changed int, objective float64, err error) {
	if r.err != nil {
		return nil, 0, 0, r.err
	}
	e, ok := r.eng.(*admmEngine)
	if !ok || e.pert == nil {
		net, err = r.Network()
		return net, 0, r.Objective(), err
	}
	wt, changed, err := ipm.RestoreRobust(context.Background(), e.prog, e.solver.Weights(), *e.pert)
	if err != nil {
		return nil, 0, 0, fmt.Errorf("cvx: %w", err)
	}
	if objective, err = solvers.RobustObjective(e.prog, wt, *e.pert); err != nil {
		return nil, 0, 0, err
	}
	net, err = e.prog.Recover(wt)
	return net, changed, objective, err
}
