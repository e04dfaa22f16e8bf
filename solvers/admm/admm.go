// Package admm solves the convex training programs of the paper (eq.
// convex_general and its sampled and robust versions, solvers.Program) by the
// alternating direction method of multipliers, Algorithm "ADMM" (eq. 3.3a–c in
// scaled form). Four variants differ in how they treat the loss, that is in
// their u-update:
//
//   - ClosedForm (VariantClosedForm): the squared loss, with the u-update in
//     closed form, eq. (uupdate), from a linear system factored once (or
//     solved by conjugate gradients); the paper's ADMM, optionally
//     over-relaxed (Options.Relax).
//   - Split (VariantSplit): any loss, split out of the u-update with its
//     per-sample prox (the hinge loss needs it: it has no gradient).
//   - RBCD (VariantRBCD): a smooth loss (squared, BCE, logistic), the
//     u-update eq. (ADMM1) solved inexactly by randomized block coordinate
//     descent, Algorithm RBCD (the paper's label alg:BCD, Algorithm 3.2).
//   - Robust (VariantRobust): the robust programs of section "Convex
//     Adversarial Training" for every loss and the ℓ_∞, ℓ₂ and ℓ₁ sets.
//
// Every variant is a Solver: Step performs one iteration and reports it
// (Step), Converged applies the stopping test of Boyd et al. (§3.3.1), and
// Checkpoint returns the whole iteration state, from which New (or the
// variant's constructor) continues bit for bit. Solve runs any of them.
// ChooseVariant is the rule that picks the variant for a loss.
//
// State ownership is the same for all: a constructor copies the state it is
// given, and the solver's exported State field is its live state, updated in
// place by every Step. Read or serialize it between steps; never modify it
// (to continue from another state, build a new solver with that state). The
// Program must not change while a solver uses it. Solvers are not safe for
// concurrent use. Resuming is exact within one build (pure-Go or OpenBLAS).
package admm

import (
	"context"
	"fmt"
	"math"

	"github.com/convexnn/convexnn/solvers"
)

// Variant names an ADMM variant (its u-update). The values are the names
// the command line and saved runs use.
type Variant string

// The variants.
const (
	VariantClosedForm Variant = "closed-form" // ClosedForm: squared loss, eq. (uupdate)
	VariantSplit      Variant = "split"       // Split: any loss, split out with its prox
	VariantRBCD       Variant = "rbcd"        // RBCD: smooth losses, Algorithm RBCD
	VariantRobust     Variant = "robust"      // Robust: the robust programs, every loss
)

// ParseVariant returns the variant named s.
func ParseVariant(s string) (Variant, error) {
	switch v := Variant(s); v {
	case VariantClosedForm, VariantSplit, VariantRBCD, VariantRobust:
		return v, nil
	}
	return "", fmt.Errorf("admm: unknown variant %q (want closed-form, split, rbcd or robust)", s)
}

// ChooseVariant is the default variant for a loss: Robust for a robust
// program (ε > 0), otherwise ClosedForm for the squared loss, Split for the
// hinge loss and RBCD for BCE and logistic (RBCD reaches a lower BCE loss
// than the split in fewer iterations: the split's single ρ balances the
// mean loss poorly; docs/performance.md).
func ChooseVariant(loss solvers.Loss, robust bool) Variant {
	switch {
	case robust:
		return VariantRobust
	case loss == solvers.SquaredLoss:
		return VariantClosedForm
	case loss == solvers.HingeLoss:
		return VariantSplit
	}
	return VariantRBCD
}

// Route selects how ClosedForm and Split solve their u-update system.
type Route string

// The routes.
const (
	// RouteAuto chooses the route of least set-up plus Options.MaxIter
	// iterations, by a model of their flops.
	RouteAuto Route = ""
	// RouteWoodbury and RouteDirect factor the system once (exact solves):
	// through the Woodbury identity with an n×n matrix, or directly.
	RouteWoodbury Route = "woodbury"
	RouteDirect   Route = "direct"
	// RouteCG factors nothing: conjugate gradients preconditioned with
	// blkdiag(I + XᵀX), warm-started from the current iterate and stopped
	// at the relative residual 10⁻²/(k+1)² of iteration k (summable, so the
	// inexact ADMM converges like the exact one). Best for tens of
	// iterations on large data.
	RouteCG Route = "cg"
)

// ParseRoute returns the route named s ("" is RouteAuto).
func ParseRoute(s string) (Route, error) {
	switch r := Route(s); r {
	case RouteAuto, RouteWoodbury, RouteDirect, RouteCG:
		return r, nil
	}
	return "", fmt.Errorf("admm: unknown route %q (want woodbury, direct, cg or empty)", s)
}

// Options are the parameters of every ADMM variant. A zero field means its
// default; a field a variant does not use must be zero.
type Options struct {
	// Rho is the penalty ρ > 0 of the augmented Lagrangian. 0 means 0.1
	// (the value of most of the paper's experiments, table ADMMhyp), except:
	// RBCD with BCE or logistic takes 10β (the paper's ρ = 0.01 at
	// β = 10⁻³ for ADMM-RBCD with BCE, the ratio kept: with our mean loss
	// and β = 10⁻³/n it is 0.01/n), and Robust with a mean loss (hinge,
	// BCE, logistic) takes 0.03, which converges faster than 0.1 there
	// (docs/performance.md). ClosedForm and RBCD keep ρ fixed (the
	// factorization depends on it); Split and Robust start from it and
	// adapt it by residual balancing.
	Rho float64
	// Gamma is the dual step γ_a > 0 of eq. (3.3c); 0 means γ_a = ρ, the
	// paper's usual choice, for which the scaled duals take the unit step
	// γ_a/ρ = 1. ClosedForm and RBCD reject γ_a/ρ ≥ (1+√5)/2, where ADMM
	// with a relaxed dual step is not guaranteed to converge (Glowinski);
	// Split and Robust need γ_a = ρ (their ρ adapts).
	Gamma float64
	// MaxIter is the number of iterations a run is expected to take, the
	// horizon over which RouteAuto weighs set-up against iteration cost
	// (ClosedForm, Split); 0 means 1000. Solve takes its own limit, and Step
	// ignores it.
	MaxIter int
	// AbsTol and RelTol are the stopping tolerances of Boyd et al.
	// (Distributed Optimization … ADMM, §3.3.1), finite and ≥ 0; 0 means
	// 1e-6 and 1e-5. They are read at every Step, so they may be changed
	// between steps.
	AbsTol, RelTol float64
	// Relax is the over-relaxation α ∈ (0, 2) of Eckstein and Bertsekas
	// (Boyd et al. §3.4.3) for ClosedForm: the v-, s- and dual updates of
	// eq. (vupdate), (supdate) and (3.3c) take
	//
	//	û = α u^{k+1} + (1 − α) v^k  and  ĝ = α G u^{k+1} + (1 − α) s^k
	//
	// in place of u^{k+1} and G u^{k+1}. 0 or 1 means none, the paper's ADMM;
	// α between 1.5 and 1.8 often converges faster (docs/performance.md).
	// It needs the unit scaled dual step γ_a = ρ. The residuals and stopping
	// test are those of the unrelaxed iterate u^{k+1}. Split and Robust
	// always over-relax with their own α = 1.6 (FixedRelax; Relax must be 0
	// or that value) and RBCD never does (Relax must be 0 or 1).
	Relax float64
	// Route selects how ClosedForm and Split solve their u-update system;
	// RBCD and Robust have no such system (Route must be RouteAuto).
	Route Route
	// DataDigest identifies the program's data X for the set-up's Gram
	// matrix kept in a saved state (Gram): a caller that already holds a
	// digest of X (a run's fingerprint) gives it, so that resuming does not
	// hash X again; 0 means a digest of X computed here when needed.
	DataDigest uint64
	// Blocks, InnerMax, Phi0 and Seed are RBCD's (see RBCD); 0 means the
	// default, and the other variants need them 0.
	//
	// Blocks is the number of distinct patterns i (block pairs (u_i, z_i))
	// updated together in one RBCD step, drawn uniformly without
	// replacement; 0 means 1, at most P. Updating several blocks makes the
	// two products with X of a step matrix-matrix products over the
	// blocks, which stream X once instead of once per block.
	Blocks int
	// InnerMax caps the RBCD steps of one u-update; 0 means 20⌈P/Blocks⌉
	// (twenty sweeps over the P patterns).
	InnerMax int
	// Phi0 is the inner accuracy φ_0 of the first ADMM iteration; iteration
	// k stops its u-update when ‖∇_u L‖ max(τ, ‖u‖) ≤ φ_k = φ_0/(k+1)²
	// (τ = 1). 0 means 10⁻²‖Fᵀ∇ℓ(0, y)‖, the norm of the loss gradient at
	// u = 0, which depends on the program only.
	Phi0 float64
	// Seed seeds the block selection: iteration k draws its blocks from a
	// PCG generator seeded with (Seed, k).
	Seed uint64
}

// FixedRelax is the over-relaxation α that Split and Robust always use,
// with residual balancing of ρ (Boyd et al. §3.4.3; Eckstein and
// Bertsekas): their v-, s- (and q-, r-, Z-) updates and duals take
// αu + (1 − α)v, αGu + (1 − α)s, … in place of u, Gu, …; ClosedForm's α is
// Options.Relax.
const FixedRelax = 1.6

// resolve validates o for variant v on program p and fills in the defaults.
// It is the one validator of every variant.
func (o Options) resolve(v Variant, p *solvers.Program) (Options, error) {
	name := v.title()
	finite := func(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }
	if o.Rho == 0 {
		o.Rho = 0.1
		switch {
		case v == VariantRBCD && p.Loss != solvers.SquaredLoss:
			o.Rho = 10 * p.Beta
		case v == VariantRobust && p.Loss != solvers.SquaredLoss:
			o.Rho = 0.03
		}
	}
	if !(o.Rho > 0) || !finite(o.Rho) {
		return o, fmt.Errorf("admm: %s penalty ρ = %v, need 0 < ρ < ∞ (Options.Rho)", name, o.Rho)
	}
	if o.Gamma == 0 {
		o.Gamma = o.Rho
	}
	switch v {
	case VariantClosedForm, VariantRBCD:
		if !(o.Gamma > 0) || !finite(o.Gamma) {
			return o, fmt.Errorf("admm: %s dual step γ_a = %v, need 0 < γ_a < ∞ (Options.Gamma)", name, o.Gamma)
		}
		if th := o.Gamma / o.Rho; th >= (1+math.Sqrt(5))/2 {
			return o, fmt.Errorf("admm: %s dual step γ_a/ρ = %v/%v = %.4g ≥ (1+√5)/2: ADMM need not converge; use γ_a ≤ ρ (Options.Gamma, Options.Rho)", name, o.Gamma, o.Rho, th)
		}
	default:
		if o.Gamma != o.Rho {
			return o, fmt.Errorf("admm: %s uses the unit scaled dual step (γ_a = ρ, its ρ adapts), got γ_a = %v, ρ = %v (Options.Gamma, Options.Rho)", name, o.Gamma, o.Rho)
		}
	}
	switch {
	case v == VariantClosedForm:
		if o.Relax == 0 {
			o.Relax = 1
		}
		if !(o.Relax > 0 && o.Relax < 2) {
			return o, fmt.Errorf("admm: %s over-relaxation α = %v, need 0 < α < 2 (Options.Relax)", name, o.Relax)
		}
		if o.Relax != 1 && o.Gamma != o.Rho {
			return o, fmt.Errorf("admm: %s over-relaxation α = %v needs the unit dual step γ_a = ρ, got γ_a = %v, ρ = %v (Options.Relax)", name, o.Relax, o.Gamma, o.Rho)
		}
	case v == VariantRBCD:
		if o.Relax != 0 && o.Relax != 1 {
			return o, fmt.Errorf("admm: %s has no over-relaxation (Relax = %v): Relax is for the closed-form u-update (squared loss)", name, o.Relax)
		}
		o.Relax = 0
	case o.Relax != 0 && o.Relax != FixedRelax:
		return o, fmt.Errorf("admm: %s always over-relaxes with its own α = %g (and adapts ρ); Relax = %v is for the closed-form u-update (squared loss)", name, FixedRelax, o.Relax)
	}
	if o.MaxIter < 0 {
		return o, fmt.Errorf("admm: %s MaxIter = %d < 0", name, o.MaxIter)
	}
	if o.MaxIter == 0 {
		o.MaxIter = 1000
	}
	if !(o.AbsTol >= 0) || !finite(o.AbsTol) || !(o.RelTol >= 0) || !finite(o.RelTol) {
		return o, fmt.Errorf("admm: %s tolerances AbsTol = %v, RelTol = %v, need 0 ≤ AbsTol, RelTol < ∞", name, o.AbsTol, o.RelTol)
	}
	if o.AbsTol == 0 {
		o.AbsTol = 1e-6
	}
	if o.RelTol == 0 {
		o.RelTol = 1e-5
	}
	if _, err := ParseRoute(string(o.Route)); err != nil {
		return o, err
	}
	if o.Route != RouteAuto && (v == VariantRBCD || v == VariantRobust) {
		return o, fmt.Errorf("admm: %s Route = %q: it solves no factored u-update system (RBCD iterates, Robust uses eigenbases); leave Route empty", name, o.Route)
	}
	_, _, np := p.Dims()
	if v != VariantRBCD {
		if o.Blocks != 0 || o.InnerMax != 0 || o.Phi0 != 0 || o.Seed != 0 {
			return o, fmt.Errorf("admm: Blocks, InnerMax, Phi0 and Seed are options of the RBCD u-update, not of %s", name)
		}
		return o, nil
	}
	if o.Blocks < 0 || o.Blocks > np {
		return o, fmt.Errorf("admm: %s Blocks = %d, need 0 ≤ Blocks ≤ P = %d", name, o.Blocks, np)
	}
	if o.Blocks == 0 {
		o.Blocks = 1
	}
	if o.InnerMax < 0 {
		return o, fmt.Errorf("admm: %s InnerMax = %d < 0", name, o.InnerMax)
	}
	if o.InnerMax == 0 {
		o.InnerMax = 20 * ((np + o.Blocks - 1) / o.Blocks)
	}
	if !(o.Phi0 >= 0) || !finite(o.Phi0) {
		return o, fmt.Errorf("admm: %s inner accuracy Phi0 = %v, need 0 ≤ φ_0 < ∞", name, o.Phi0)
	}
	return o, nil
}

// title names the variant in messages.
func (v Variant) title() string {
	switch v {
	case VariantClosedForm:
		return "ADMM (closed-form u-update)"
	case VariantSplit:
		return "ADMM (loss split)"
	case VariantRBCD:
		return "ADMM-RBCD"
	case VariantRobust:
		return "robust ADMM"
	}
	return string(v)
}

// Step is what one ADMM iteration reports, evaluated at the new iterate.
type Step struct {
	Iter int
	// ConvexObjective is the objective of the program as posed at v^{k+1}:
	// l^{v,w} = ℓ(Σ_i D_i X(v_i − w_i), y) + β Σ_i (‖v_i‖ + ‖w_i‖)
	// (Program.Objective), or for Robust the robust objective
	// (solvers.RobustObjective).
	ConvexObjective float64
	// NonconvexObjective is l^{u,α} = ℓ(Σ_j (X u_j)_+ α_j, y) + (β/2) Σ_j (‖u_j‖² + α_j²)
	// of the network recovered from every nonzero group of v^{k+1} by eq.
	// (recover_weights), on the clean data. The v-update's group
	// soft-threshold sets inactive groups exactly to zero, and a zero group
	// contributes nothing to either objective; Solver.Network applies
	// solvers.Program.Recover's rule, which also drops groups below
	// solvers.RecoveryTol of the largest (its l^{u,α} differs from this by
	// about that relative amount). With u_j = v_i/√‖v_i‖, α_j = ±√‖v_i‖ it equals
	// ℓ(Σ_i (X v_i)_+ − (X w_i)_+, y) + β Σ_i (‖v_i‖ + ‖w_i‖).
	NonconvexObjective float64
	// Gap is |l^{u,α} − l^{v,w}| (for Robust against the clean l^{v,w}); it
	// is zero when v is feasible.
	Gap float64
	// PrimalResidual and DualResidual are the residuals of Boyd et al.
	// (§3.3): for ClosedForm ‖(u − v, Gu − s)‖₂ and
	// ρ‖(v^{k+1} − v^k) + Gᵀ(s^{k+1} − s^k)‖₂; the other variants add the
	// terms of their further splittings.
	PrimalResidual, DualResidual float64
	// PrimalTol and DualTol are the thresholds of the stopping test at this
	// step (for ClosedForm √(2dP+2nP) AbsTol + RelTol max(‖(u, Gu)‖, ‖(v, s)‖)
	// and √(2dP) AbsTol + RelTol ρ‖λ + Gᵀν‖).
	PrimalTol, DualTol float64
	// Violation is the largest violation of the program's cone constraints
	// at v^{k+1} (Program.Violation; solvers.RobustViolation for Robust).
	Violation float64
	// InnerSteps and InnerResidual are RBCD's (0 for the other variants):
	// the number of RBCD steps of this iteration's u-update and
	// ‖∇_u L(u^{k+1}, v^k, s^k, λ^k, ν^k)‖₂, the gradient of the u-subproblem
	// (eq. ADMM1) at its inexact solution.
	InnerSteps    int
	InnerResidual float64
	// Seconds is the wall time of this step.
	Seconds float64
}

// residuals returns the step of iteration iter with the residuals and the
// thresholds of the stopping test of Boyd et al. (§3.3.1) for the splitting
// u = v, Gu = s (ClosedForm, RBCD), from the squared norms ru = ‖u − v‖²,
// rs = ‖Gu − s‖², rd = ‖Δv + GᵀΔs‖², uu = ‖u‖², ngu = ‖Gu‖², vv = ‖v‖²,
// ns = ‖s‖² and nlam = ‖λ + Gᵀν‖² over pd2 = 2dP and pn2 = 2nP entries.
func residuals(iter int, rho float64, o *Options, pd2, pn2 int, ru, rs, rd, uu, ngu, vv, ns, nlam float64) Step {
	return Step{
		Iter:           iter,
		PrimalResidual: math.Sqrt(ru + rs),
		DualResidual:   rho * math.Sqrt(rd),
		PrimalTol:      math.Sqrt(float64(pd2+pn2))*o.AbsTol + o.RelTol*math.Sqrt(math.Max(uu+ngu, vv+ns)),
		DualTol:        math.Sqrt(float64(pd2))*o.AbsTol + o.RelTol*rho*math.Sqrt(nlam),
	}
}

// residualsConverged is the residual test of Boyd et al. (§3.3.1).
func (s Step) residualsConverged() bool {
	return s.Iter > 0 && s.PrimalResidual <= s.PrimalTol && s.DualResidual <= s.DualTol
}

// Solver is an ADMM variant at work on one program. *ClosedForm, *Split,
// *RBCD and *Robust implement it.
type Solver interface {
	// Variant names the variant.
	Variant() Variant
	// Step performs one iteration and reports it.
	Step() Step
	// Converged reports whether a step passed the stopping test.
	Converged(Step) bool
	// Iter returns the number of finished iterations.
	Iter() int
	// Rho returns the current penalty ρ.
	Rho() float64
	// Weights returns copies of the current (v_i, w_i) (the v iterate).
	Weights() solvers.Weights
	// Network returns the network recovered from Weights
	// (solvers.Program.Recover).
	Network() (*solvers.Network, error)
	// SetupSeconds returns the wall time the constructor spent (validation
	// excluded), mostly factoring the u-update system.
	SetupSeconds() float64
	// Checkpoint returns the live iteration state (see the package
	// comment): the value to save; New with it continues bit for bit.
	Checkpoint() State
}

// State is the iteration state of a variant: *ClosedFormState, *SplitState,
// *RBCDState or *RobustState. NewState gives an empty one to decode a saved
// state into.
type State interface {
	variant() Variant
	// check reports a state that does not fit a program of n points, d
	// features and P patterns, or is not finite.
	check(n, d, np int) error
}

func (*ClosedFormState) variant() Variant { return VariantClosedForm }
func (*SplitState) variant() Variant      { return VariantSplit }
func (*RBCDState) variant() Variant       { return VariantRBCD }
func (*RobustState) variant() Variant     { return VariantRobust }

// NewState returns an empty state of variant v, to decode a saved one into.
func NewState(v Variant) (State, error) {
	switch v {
	case VariantClosedForm:
		return new(ClosedFormState), nil
	case VariantSplit:
		return new(SplitState), nil
	case VariantRBCD:
		return new(RBCDState), nil
	case VariantRobust:
		return new(RobustState), nil
	}
	_, err := ParseVariant(string(v))
	return nil, err
}

// New builds the solver of variant v for p (and, for VariantRobust, the
// perturbation set pert; the other variants need pert.Eps = 0), starting
// from zero or, when st is not nil, from st (a state of the same variant).
func New(p *solvers.Program, pert solvers.Perturbation, v Variant, o Options, st State) (Solver, error) {
	if st != nil && st.variant() != v {
		return nil, fmt.Errorf("admm: a %s state cannot start the %s variant", st.variant(), v)
	}
	if v != VariantRobust && pert.Eps != 0 {
		return nil, fmt.Errorf("admm: the robust program (%v) is solved by the robust variant, not %s", pert, v)
	}
	switch v {
	case VariantClosedForm:
		s, _ := st.(*ClosedFormState)
		return nilSolver(NewClosedForm(p, o, s))
	case VariantSplit:
		s, _ := st.(*SplitState)
		return nilSolver(NewSplit(p, o, s))
	case VariantRBCD:
		s, _ := st.(*RBCDState)
		return nilSolver(NewRBCD(p, o, s))
	case VariantRobust:
		s, _ := st.(*RobustState)
		return nilSolver(NewRobust(p, pert, o, s))
	}
	_, err := ParseVariant(string(v))
	return nil, err
}

// nilSolver keeps a failed constructor's nil pointer out of the interface.
func nilSolver[S Solver](s S, err error) (Solver, error) {
	if err != nil {
		return nil, err
	}
	return s, nil
}

// Solve runs s until it converges, maxIter steps in this call (0 means
// 1000), onStep (if not nil, called after every step) returns false, or ctx
// is done; it returns the steps taken, with ctx's error on cancellation. The
// solver keeps its state: Solve again, or save Checkpoint, to continue.
func Solve(ctx context.Context, s Solver, maxIter int, onStep func(Step) bool) ([]Step, error) {
	if maxIter < 0 {
		return nil, fmt.Errorf("admm: Solve: maxIter = %d < 0", maxIter)
	}
	if maxIter == 0 {
		maxIter = 1000
	}
	var hist []Step
	for len(hist) < maxIter {
		if err := ctx.Err(); err != nil {
			return hist, err
		}
		st := s.Step()
		hist = append(hist, st)
		if onStep != nil && !onStep(st) {
			break
		}
		if s.Converged(st) {
			break
		}
	}
	return hist, nil
}

// prologue is what every constructor checks first: the program and its
// loss for the variant, the options (returned with their defaults filled
// in) and the saved state st (nil for none) against the program.
func prologue[S any, PS interface {
	*S
	State
}](p *solvers.Program, v Variant, o Options, st PS) (Options, error) {
	if p == nil {
		return o, fmt.Errorf("admm: %s: no program", v.title())
	}
	if err := p.Validate(); err != nil {
		return o, err
	}
	switch {
	case v == VariantClosedForm && p.Loss != solvers.SquaredLoss:
		return o, fmt.Errorf("admm: the closed-form u-update (eq. uupdate) solves the squared loss only; the %v loss needs the split or the RBCD variant", p.Loss)
	case v == VariantRBCD && !p.Loss.Smooth():
		return o, fmt.Errorf("admm: ADMM-RBCD needs a smooth loss (squared, bce, logistic); the %v loss has no gradient: use the split variant", p.Loss)
	}
	o, err := o.resolve(v, p)
	if err != nil {
		return o, err
	}
	if st != nil {
		n, d, np := p.Dims()
		return o, st.check(n, d, np)
	}
	return o, nil
}

// stateVector is one vector of a saved state and its required length.
type stateVector struct {
	name string
	v    []float64
	want int
}

// loadVectors copies each saved vector into the working one at its index
// (the lists of two states' vectors methods).
func loadVectors(work, saved []stateVector) {
	for i := range work {
		copy(work[i].v, saved[i].v)
	}
}

// checkState checks a saved state of variant v: its iteration count, its ρ
// (rho nil for the variants whose ρ is fixed), the lengths of its vectors
// for a program of n points, d features and P patterns, and that they are
// finite; it names what is wrong.
func checkState(v Variant, iter int, rho *float64, n, d, np int, vecs []stateVector) error {
	if iter < 0 {
		return fmt.Errorf("admm: saved %s state has iteration %d < 0", v.title(), iter)
	}
	if rho != nil && (!(*rho > 0) || math.IsInf(*rho, 0)) {
		return fmt.Errorf("admm: saved %s state has ρ = %v, need 0 < ρ < ∞", v.title(), *rho)
	}
	for _, c := range vecs {
		if len(c.v) != c.want {
			return fmt.Errorf("admm: saved %s state has %d entries in %s, the program (n=%d, d=%d, P=%d) needs %d", v.title(), len(c.v), c.name, n, d, np, c.want)
		}
		for q, x := range c.v {
			if math.IsNaN(x) || math.IsInf(x, 0) {
				return fmt.Errorf("admm: saved %s state has %s[%d] = %v", v.title(), c.name, q, x)
			}
		}
	}
	return nil
}
