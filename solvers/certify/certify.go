// Package certify encloses the optimum p* of a convex training program
// (solvers.Program: eq. convex_general, the sampled eq. prac_clean, and the
// robust eq. rob_gen_cvx with the constraints of eq. robust_constraint) from
// both sides, from any point a solver reaches: Lower ≤ p* ≤ Upper, valid
// whatever the point, so that a solver's stall and the optimum can be told
// apart.
//
// Notation as in solvers/robust.go: the 2P groups u_j are v_1 … v_P, w_1 … w_P
// with pattern i(j) and sign σ_j = +1, −1; S_i = 2D_i − I; f is the number of
// perturbed features and N(u) = ‖u^f‖_* the dual norm of the perturbation's
// ℓ_p norm on them (ε = 0 for the standard program); K_j is the cone
// {u : S_{i(j)} X u ≥ ε N(u) 1} and B^f the unit ℓ_p ball on the f features.
//
// Upper bound. The point is made feasible (restore): a group outside K_j is
// changed by the least-norm step that lifts its negative and nearly active
// margins (the 10⁻¹² violations an interior-point solution leaves), or
// failing that moved along an interior direction e_i of the pattern's cone by the least
// step that makes every margin nonnegative (margins are superadditive,
// m(u + τe) ≥ m(u) + τ m(e)), and set to zero when no such direction is known
// or the step is longer than the group. Upper is the objective (the robust
// objective, solvers.RobustObjective, for ε > 0) at that point, or at zero
// if lower.
//
// Lower bound (weak duality). For a point μ of the domain of the conjugate
// ℓ* of the loss, perturbation slopes W (n×d, zero on the unperturbed bias
// column, rows ‖w_k‖_p ≤ ελ_k with λ_k = |μ_k|, or for the squared loss any
// λ_k ≥ |μ_k| charged in ℓ*: see Hint.Lambda; W = 0 for ε = 0), and
// multipliers α_j ∈ Rⁿ, α_j ≥ 0,
//
//	L(μ, W, α) = −ℓ*(μ) + R min(0, β − max_j s_j),
//	s_j = dist(c_j − XᵀS_{i(j)}α_j, ε(1ᵀα_j) B^f),  c_j = σ_j (XᵀD_{i(j)}μ + WᵀD_{i(j)}1),
//
// with R = Upper/β, is at most p*: each robust term is a maximum of affine
// functions of g_k with slopes μ_k x_k + w_k (W = diag(μ)Δ for a perturbation
// Δ in the ε-ball: the loss on X + Δ), at least μᵀŷ + Σ_k w_kᵀg_k − ℓ*(μ)
// (Fenchel–Young); on K_j the
// multiplier term −α_jᵀ(S X u_j − εN(u_j)1) is ≤ 0, and what remains of group
// j is at least (β − s_j)‖u_j‖₂ (the ball absorbs the dual norm); at an
// optimum β Σ_j ‖u_j‖₂ ≤ p* ≤ Upper because the losses are nonnegative. Since
// the domains contain 0, (tμ, tα) is admissible for t ∈ [0, 1], and Lower is
// the maximum of L over t. At an optimal primal-dual pair (μ* = ∇ℓ(ŷ*) for a
// smooth loss, α* the cone multipliers) s_j ≤ β for every j and L = p*: the
// bound closes as the point and the multipliers converge.
//
// μ, W and α come from a solver's dual (Hint) or, by default, from the
// point: μ the gradient of the loss on X + Δ at the worst case Δ
// (solvers.WorstCase; a subgradient for the hinge loss), clipped to dom ℓ*,
// W = diag(μ)Δ, α from the previous call or zero. α and W are then
// improved by projected-gradient steps on ½ s_j². Every product that enters
// s_j or −ℓ*(μ) is charged its floating-point error bound γ_n |A||B|
// (γ_n = n·u/(1 − n·u)), so the bound also holds for the computed numbers.
// Where that charge matters against a group's excess over β, the standard
// program's s_j are summed again with compensation (compensatedS), whose
// error bound is about u·s_j.
package certify

import (
	"errors"
	"fmt"
	"math"

	"github.com/convexnn/convexnn/solvers"
	"gonum.org/v1/gonum/floats"
	"gonum.org/v1/gonum/mat"
)

// Bound is a certified enclosure Lower ≤ p* ≤ Upper of a program's optimum,
// from one point.
type Bound struct {
	Lower float64
	Upper float64
	// Gap is the certified relative gap (Upper − Lower)/|Upper| (Upper − Lower
	// when Upper is 0).
	Gap float64
	// Objective and Violation are the objective (robust for ε > 0) and the
	// largest constraint violation at the point as given.
	Objective, Violation float64
	// Groups holds, for every group j (v_1 … v_P, w_1 … w_P), s_j: the
	// size of its dual constraint at the multipliers found (rounding
	// included). s_j ≤ β for all j makes the bound −ℓ*(μ); a group with
	// s_j > β is one whose neuron the point lacks or misweights: a working
	// set method adds its pattern.
	Groups []float64
	// Restored is the number of groups changed to make the point feasible;
	// Feasible is that feasible point, whose objective Upper bounds
	// (up to the rounding slack of its evaluation).
	Restored int
	Feasible solvers.Weights
}

// Best returns the better of the point wt the bound was computed at and
// the bound's feasible point by the objective: wt, unless the feasible
// point is lower (the zero network, when an inaccurate solve left a worse
// point than zero).
func (b Bound) Best(wt solvers.Weights) solvers.Weights {
	if b.Feasible.V != nil && b.Objective > b.Upper {
		return b.Feasible
	}
	return wt
}

// Hint is dual information a solver has about its point; every field is
// optional (nil: derived from the point). Nothing in it can make a bound
// invalid: μ is clipped to dom ℓ*, the slopes are projected onto their
// balls, λ is raised to |μ| and α projected onto α ≥ 0.
type Hint struct {
	// Mu is a dual point of the loss (n entries), for instance ∇ℓ(ŷ) or ρ
	// times the scaled dual of a loss split.
	Mu []float64
	// Slopes (n×d, the bias column ignored; robust programs only) are the
	// perturbation slopes w_k of the loss's minorant (see the package
	// comment); nil means w_k = μ_k δ_k with δ_k the worst case at the
	// point (solvers.WorstCase).
	Slopes *mat.Dense
	// Lambda (n entries, the squared loss of a robust program only) is the
	// size λ_k ≥ |μ_k| of point k's worst-case term: the robust squared term
	// ½(|r_k| + εN(g_k))² is the maximum over λ ≥ 0, |t| ≤ 1 and
	// ‖z‖_p ≤ 1 of λ(t r_k + ε zᵀg_k) − ½λ², so its affine minorants have
	// slopes μ_k x_k + w_k with ‖w_k‖_p ≤ ελ_k and constants −μ_k y_k − ½λ_k²
	// (μ_k = λt); at a zero residual λ_k exceeds |μ_k|. nil means λ = |μ|.
	Lambda []float64
	// Alpha (2P×n, row j for group j) holds the multipliers of the cone
	// constraints S_{i(j)} X u_j ≥ εN(u_j)1.
	Alpha *mat.Dense
}

// Certifier bounds the optimum of one program. It keeps the multipliers of
// its last call (a warm start for the next) and the interior directions it
// found, so it is meant to be called along a solver's iterations. It is not
// safe for concurrent use; the program must not change while it is used.
type Certifier struct {
	// Refine caps the projected-gradient steps on the multipliers per
	// Bound; 0 means 2000, negative none.
	Refine int
	// Enough, when positive, stops the refinement once every group's
	// s_j ≤ β(1 + Enough): the bound is then within about Enough
	// (relative) of what an exact refinement would give, and still valid.
	// An excess e costs about e of relative gap: a solver that wants a
	// certified gap T can set it to T/2.
	Enough float64
	// Exact, when set, solves for every group whose s_j exceeds
	// β(1 + Enough) at the starting multipliers the projection program
	// of its exact α_j (projectionQP), before the projected-gradient
	// steps, on programs up to a size (exactBudget). The steps converge
	// slowly where many multipliers of nearly dependent rows are needed
	// (groups the point leaves at zero); the exact ones make s_j the
	// distance of c_j from its dual cone. ipm.NewCertifier sets it.
	Exact QPSolver

	p      *solvers.Program
	pert   solvers.Perturbation
	eps    float64
	kind   solvers.Norm
	n, d   int
	np, f  int
	sgn    *mat.Dense // n×P: S_i[k] = ±1
	dm     *mat.Dense // n×P: D_i[k] ∈ {0, 1}
	absX   *mat.Dense // |X|
	xnorm  []float64  // ‖x_k‖₂
	lip    float64    // Lipschitz bound of the multiplier steps
	alpha  *mat.Dense // n×2P warm start, column j = α_j
	groups []float64  // s_j of the last call, rounding included

	dirs    [][]float64 // per pattern: an interior direction of its cone, or nil
	dirDone []bool
}

// New returns a certifier for p and the perturbation set pert (ε = 0 for the
// standard program).
func New(p *solvers.Program, pert solvers.Perturbation) (*Certifier, error) {
	if p == nil {
		return nil, errors.New("certify: program is nil")
	}
	if err := p.Validate(); err != nil {
		return nil, err
	}
	if err := pert.Validate(); err != nil {
		return nil, err
	}
	n, d, np := p.Dims()
	c := &Certifier{p: p, pert: pert, eps: pert.Eps, kind: pert.Norm.Canonical(), n: n, d: d, np: np,
		f: solvers.PerturbedFeatures(d, p.Bias)}
	if c.f == 0 {
		c.eps = 0
	}
	c.sgn = mat.NewDense(n, np, nil)
	c.dm = mat.NewDense(n, np, nil)
	for i, di := range p.D {
		for k, on := range di {
			if on {
				c.sgn.Set(k, i, 1)
				c.dm.Set(k, i, 1)
			} else {
				c.sgn.Set(k, i, -1)
			}
		}
	}
	// |X| (X itself when no entry is negative, as for images) and the row
	// norms, in one pass over the rows.
	c.xnorm = make([]float64, n)
	negative := false
	for k := range c.xnorm {
		row := p.X.RawRowView(k)[:d]
		c.xnorm[k] = floats.Norm(row, 2)
		negative = negative || floats.Min(row) < 0
	}
	c.absX = p.X
	if negative {
		c.absX = mat.NewDense(n, d, nil)
		for k := 0; k < n; k++ {
			abs, row := c.absX.RawRowView(k), p.X.RawRowView(k)
			for j := range abs {
				abs[j] = math.Abs(row[j])
			}
		}
	}
	// ∇(½ s_j²) is Lipschitz in α_j with a constant at most
	// ‖X‖₂² + ε² n f: the map α ↦ (c − XᵀSα, ε1ᵀα) has norm² ≤ ‖X‖₂² + ε²n,
	// ½dist²(r, ρB) has curvature 1 in r and at most f in ρ. (The step only
	// affects how fast the bound closes, never its validity.)
	c.lip = 1.05*spectralNorm2(p.X) + c.eps*c.eps*float64(n*max(c.f, 1))
	c.dirs = make([][]float64, np)
	c.dirDone = make([]bool, np)
	return c, nil
}

// Bound returns the certified bounds at the point wt, using the solver's
// dual information h (nil: none).
func (c *Certifier) Bound(wt solvers.Weights, h *Hint) (Bound, error) {
	if err := c.p.CheckRobust(wt, c.pert); err != nil {
		return Bound{}, err
	}
	if err := c.checkHint(h); err != nil {
		return Bound{}, err
	}
	var b Bound
	var err error
	if b.Objective, err = c.objective(wt); err != nil {
		return Bound{}, err
	}
	feas, restored, violation := c.restore(wt, false)
	b.Violation = violation
	upper := b.Objective
	if restored > 0 {
		if upper, err = c.objective(feas); err != nil {
			return Bound{}, err
		}
	}
	// Zero weights are feasible, with the loss at ŷ = 0 (robust or not: the
	// perturbation moves nothing there).
	if u0 := c.p.Loss.Value(make([]float64, c.n), c.p.Y); u0 < upper {
		upper, feas = u0, c.p.NewWeights()
	}
	// Rounding of the objective's evaluation: a sum of n terms.
	upper *= 1 + gamma(c.n+c.d+2*c.np)
	b.Upper, b.Restored, b.Feasible = upper, restored, feas

	// The point's own dual (the loss's gradient, the worst case) fills in
	// what the hint leaves out.
	mu, delta, err := c.pointDual(feas)
	if err != nil {
		return Bound{}, err
	}
	var alpha, slopes *mat.Dense
	var lam []float64
	if h != nil {
		alpha, lam, slopes = h.Alpha, h.Lambda, h.Slopes
		if h.Mu != nil {
			mu = append(mu[:0], h.Mu...)
		}
	}
	b.Lower = c.lower(mu, lam, delta, slopes, alpha, upper)
	b.Gap = RelativeGap(b.Lower, b.Upper)
	b.Groups = append([]float64(nil), c.groups...)
	return b, nil
}

// Multipliers returns a copy of the cone multipliers of the last Bound
// (2P×n, row j for group j, as Hint.Alpha), or nil before the first.
func (c *Certifier) Multipliers() *mat.Dense {
	if c.alpha == nil {
		return nil
	}
	return mat.DenseCopyOf(c.alpha.T())
}

// RelativeGap is the certified relative gap (upper − lower)/|upper|, or
// upper − lower when upper is 0; it is never negative for a valid pair.
func RelativeGap(lower, upper float64) float64 {
	g := upper - lower
	if upper != 0 {
		g /= math.Abs(upper)
	}
	return g
}

func (c *Certifier) checkHint(h *Hint) error {
	if h == nil {
		return nil
	}
	if h.Mu != nil && len(h.Mu) != c.n {
		return fmt.Errorf("certify: hint μ has %d entries for %d data points", len(h.Mu), c.n)
	}
	for k, v := range h.Mu {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return fmt.Errorf("certify: hint μ[%d] = %v", k, v)
		}
	}
	if h.Lambda != nil && len(h.Lambda) != c.n {
		return fmt.Errorf("certify: hint λ has %d entries for %d data points", len(h.Lambda), c.n)
	}
	for k, v := range h.Lambda {
		if !(v >= 0) || math.IsInf(v, 0) {
			return fmt.Errorf("certify: hint λ[%d] = %v, need 0 ≤ λ < ∞", k, v)
		}
	}
	if h.Slopes != nil {
		if r, cc := h.Slopes.Dims(); r != c.n || cc != c.d {
			return fmt.Errorf("certify: hint slopes are %d×%d, want n×d = %d×%d", r, cc, c.n, c.d)
		}
		if err := solvers.CheckFinite("certify: hint slopes", h.Slopes); err != nil {
			return err
		}
	}
	if h.Alpha != nil {
		if r, cc := h.Alpha.Dims(); r != 2*c.np || cc != c.n {
			return fmt.Errorf("certify: hint α is %d×%d, want 2P×n = %d×%d", r, cc, 2*c.np, c.n)
		}
	}
	return nil
}

// objective is the program's objective at wt: robust for ε > 0.
func (c *Certifier) objective(wt solvers.Weights) (float64, error) {
	if c.eps > 0 {
		return solvers.RobustObjective(c.p, wt, c.pert)
	}
	return c.p.Objective(wt)
}

// gamma is the rounding bound γ_m = m·u/(1 − m·u) of a sum of m products,
// with a factor 2 for the products inside the terms.
func gamma(m int) float64 {
	const u = 0x1p-53
	mu := float64(2*m+4) * u
	return mu / (1 - mu)
}

// spectralNorm2 estimates ‖X‖₂² by power iteration on XᵀX.
func spectralNorm2(x *mat.Dense) float64 {
	_, d := x.Dims()
	v := mat.NewVecDense(d, nil)
	for j := 0; j < d; j++ {
		v.SetVec(j, 1+float64(j%7)/7)
	}
	var xv, w mat.VecDense
	var est float64
	for it := 0; it < 50; it++ {
		nv := mat.Norm(v, 2)
		if nv == 0 {
			return 0
		}
		v.ScaleVec(1/nv, v)
		xv.MulVec(x, v)
		w.MulVec(x.T(), &xv)
		next := mat.Dot(v, &w)
		v.CopyVec(&w)
		if it > 5 && math.Abs(next-est) <= 1e-6*next {
			est = next
			break
		}
		est = next
	}
	return est
}
