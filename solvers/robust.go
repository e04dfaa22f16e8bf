package solvers

// Convex adversarial training, section "Convex Adversarial Training" of the
// paper: the perturbation set, the sampling of the patterns D_h of
// Algorithm "practical convex adversarial training" (alg. adv_train), the
// closed-form worst-case perturbations of Theorems inner_max, CEadv and
// robust_SOCP, the robust convex objective and constraints, and a per-point
// certificate for a trained network.
//
// Notation. X is n×d with rows x_k; when the program (or network) has biases
// its last column is the constant input 1. The adversary moves only the f raw
// features (f = d − 1 with a bias, f = d without): δ_k ∈ R^f with
// ‖δ_k‖_p ≤ ε, and the bias input stays 1. For a vector u ∈ R^d, u^f is its
// first f entries; ‖·‖_* is the dual norm of ‖·‖_p (‖·‖₁ for p = ∞, ‖·‖₂ for
// p = 2, ‖·‖_∞ for p = 1), so that max_{‖δ‖_p ≤ ε} δᵀu^f = ε‖u^f‖_*.
// For weights (v_i, w_i) of a program with patterns D_i = diag(d_i1 … d_in),
//
//	g_k = Σ_i d_ik (v_i − w_i) ∈ R^d,   ŷ_k = x_kᵀ g_k = Σ_i d_ik x_kᵀ (v_i − w_i),
//
// and with the patterns held fixed the surrogate output at x_k + δ_k is
// ŷ_k + δ_kᵀ g_k^f, affine in δ_k: the inner maximum over the ball is in
// closed form for every loss that is monotone or convex in ŷ_k.

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"

	"gonum.org/v1/gonum/floats"
	"gonum.org/v1/gonum/mat"
)

// robustSignStream seeds the perturbation draws of SampleRobustPatterns
// (the directions a_h use SamplePatterns' stream patSampleStream).
const robustSignStream = 0x9e3779b97f4a7c15

// Perturbation is the adversary's set: every data point x_k may move by δ_k
// with ‖δ_k‖_p ≤ Eps, independently of the others. Norm is LInf (the paper's
// box {‖δ_k‖_∞ ≤ ε}, the default, also written ""), L2 or L1 (the ℓ_p sets of
// section "ℓ_p Norm-Bounded Perturbation Set"). With a bias the constant
// input 1 is not perturbed.
type Perturbation struct {
	Eps  float64
	Norm Norm
}

// Norm names the ℓ_p norm of a perturbation set. Its values are the strings
// "inf", "2" and "1" (as in JSON and saved states); "" means LInf.
type Norm string

// The perturbation norms.
const (
	LInf Norm = "inf" // ‖δ‖_∞ ≤ ε, the paper's box; dual norm ‖·‖₁
	L2   Norm = "2"   // ‖δ‖₂ ≤ ε; dual norm ‖·‖₂
	L1   Norm = "1"   // ‖δ‖₁ ≤ ε; dual norm ‖·‖_∞
)

// ParseNorm returns the norm named s ("inf" or "", "2", "1").
func ParseNorm(s string) (Norm, error) {
	n := Norm(s).Canonical()
	if !n.valid() {
		return "", fmt.Errorf("solvers: unknown perturbation norm %q (want \"inf\", \"2\" or \"1\")", s)
	}
	return n, nil
}

// Canonical returns LInf for "" and n otherwise.
func (n Norm) Canonical() Norm {
	if n == "" {
		return LInf
	}
	return n
}

func (n Norm) valid() bool { return n == LInf || n == L2 || n == L1 }

func (pt Perturbation) norm() (Norm, bool) {
	n := pt.Norm.Canonical()
	return n, n.valid()
}

// Validate reports a radius that is negative, NaN or infinite, or an unknown
// norm.
func (pt Perturbation) Validate() error {
	if math.IsNaN(pt.Eps) || math.IsInf(pt.Eps, 0) || pt.Eps < 0 {
		return fmt.Errorf("solvers: perturbation radius ε = %v, need 0 ≤ ε < ∞", pt.Eps)
	}
	if _, ok := pt.norm(); !ok {
		return fmt.Errorf("solvers: unknown perturbation norm %q (want \"inf\", \"2\" or \"1\")", pt.Norm)
	}
	return nil
}

func (pt Perturbation) String() string {
	return fmt.Sprintf("ℓ_%s ball of radius %g", pt.Norm.Canonical(), pt.Eps)
}

// DualNorm returns ‖v‖_*, the dual norm of the perturbation's norm:
// ‖v‖₁ for LInf, ‖v‖₂ for L2 and ‖v‖_∞ for L1, so that
// max_{‖δ‖_p ≤ ε} δᵀv = ε‖v‖_*. It returns NaN for an unknown norm (see
// Validate).
func (pt Perturbation) DualNorm(v []float64) float64 {
	kind, ok := pt.norm()
	if !ok {
		return math.NaN()
	}
	return kind.Dual(v)
}

// Dual returns ‖v‖_*, the dual norm of n (n must be canonical and valid):
// ‖v‖₁ for LInf, ‖v‖₂ for L2 and ‖v‖_∞ for L1.
func (n Norm) Dual(v []float64) float64 {
	switch n {
	case LInf:
		var s float64
		for _, x := range v {
			s += math.Abs(x)
		}
		return s
	case L2:
		return floats.Norm(v, 2)
	}
	var m float64
	for _, x := range v {
		m = math.Max(m, math.Abs(x))
	}
	return m
}

// Maximizer sets dst to a maximizer of δᵀg over the unit ball of the norm n
// (so that dstᵀg = ‖g‖_*, a subgradient of the dual norm at g); see
// robustMaximizer.
func (n Norm) Maximizer(dst, g []float64) { robustMaximizer(n.Canonical(), dst, g) }

// robustMaximizer sets dst to a maximizer of δᵀg over the unit ball
// ‖δ‖_p ≤ 1, so that dstᵀg = ‖g‖_*: sgn(g) for p = ∞ (with sgn 0 = 0, those
// coordinates do not change the value), g/‖g‖₂ for p = 2, and sgn(g_j)e_j
// at the first j of largest |g_j| for p = 1. g = 0 gives dst = 0.
func robustMaximizer(kind Norm, dst, g []float64) {
	clear(dst)
	switch kind {
	case LInf:
		for i, v := range g {
			switch {
			case v > 0:
				dst[i] = 1
			case v < 0:
				dst[i] = -1
			}
		}
	case L2:
		if nrm := floats.Norm(g, 2); nrm > 0 {
			floats.ScaleTo(dst, 1/nrm, g)
		}
	case L1:
		best, bi := 0.0, -1
		for i, v := range g {
			if a := math.Abs(v); a > best {
				best, bi = a, i
			}
		}
		if bi >= 0 {
			dst[bi] = math.Copysign(1, g[bi])
		}
	}
}

// PerturbedFeatures returns f, the number of columns of a d-column X that the
// adversary moves: d − 1 with a bias (the constant input is not perturbed), d
// without.
func PerturbedFeatures(d int, bias bool) int {
	if bias {
		return d - 1
	}
	return d
}

// CheckRobust validates the program, the weights (shape, NaN) and the
// perturbation.
func (p *Program) CheckRobust(wt Weights, pert Perturbation) error {
	if p == nil {
		return errors.New("solvers: program is nil")
	}
	if err := p.Validate(); err != nil {
		return err
	}
	if err := p.checkWeights(wt); err != nil {
		return err
	}
	if err := CheckFinite("solvers: V", wt.V); err != nil {
		return err
	}
	if err := CheckFinite("solvers: W", wt.W); err != nil {
		return err
	}
	return pert.Validate()
}

// robustG returns G (n×d) with rows g_kᵀ = Σ_i d_ik (v_i − w_i)ᵀ, that is
// G = [d_ik]_{k,i} (V − W), multiplied in blocks of rows so that the 0/1
// matrix [d_ik] never takes more than about 2^20 entries.
func (p *Program) robustG(wt Weights) *mat.Dense {
	n, d, np := p.Dims()
	diff := mat.NewDense(np, d, nil)
	diff.Sub(wt.V, wt.W)
	g := mat.NewDense(n, d, nil)
	rows := max(1, min(n, (1<<20)/np))
	dm := mat.NewDense(rows, np, nil)
	for k0 := 0; k0 < n; k0 += rows {
		b := min(rows, n-k0)
		blk := dm.Slice(0, b, 0, np).(*mat.Dense)
		for k := 0; k < b; k++ {
			r := blk.RawRowView(k)
			for i, di := range p.D {
				r[i] = 0
				if di[k0+k] {
					r[i] = 1
				}
			}
		}
		g.Slice(k0, k0+b, 0, d).(*mat.Dense).Mul(blk, diff)
	}
	return g
}

// robustTerms returns the worst-case loss term of every point (see
// RobustPointLosses), after checking the inputs.
func (p *Program) robustTerms(wt Weights, pert Perturbation) ([]float64, error) {
	if err := p.CheckRobust(wt, pert); err != nil {
		return nil, err
	}
	// ŷ exactly as Program.Predict computes it, so that ε = 0 reproduces
	// Program.Objective bit for bit.
	yhat, err := p.Predict(wt)
	if err != nil {
		return nil, err
	}
	n, d, _ := p.Dims()
	f := PerturbedFeatures(d, p.Bias)
	kind, _ := pert.norm()
	g := p.robustG(wt)
	terms := make([]float64, n)
	for k := range terms {
		rad := pert.Eps * kind.Dual(g.RawRowView(k)[:f])
		y := p.Y[k]
		switch p.Loss {
		case HingeLoss:
			terms[k] = math.Max(0, 1-y*yhat[k]+rad)
		case SquaredLoss:
			a := math.Abs(yhat[k]-y) + rad
			terms[k] = a * a / 2
		case BCELoss:
			terms[k] = Softplus(p.Loss.MarginScale(y)*yhat[k] + 2*rad)
		case LogisticLoss:
			terms[k] = Softplus(p.Loss.MarginScale(y)*yhat[k] + rad)
		}
	}
	return terms, nil
}

// RobustPointLosses returns, for every training point k, the worst-case loss
// term ℓ_k = max_{‖δ_k‖_p ≤ ε} of the point's loss at the surrogate output
// Σ_i d_ik (x_k + δ_k)ᵀ(v_i − w_i) = ŷ_k + δ_kᵀ g_k^f (patterns held fixed;
// notation in the file comment, r_k = ε‖g_k^f‖_*):
//
//	hinge    ℓ_k = (1 − y_k ŷ_k + r_k)_+                 Theorem inner_max, eq. (hinge_adv_D), (hinge_adv_D_lp)
//	BCE      ℓ_k = log(1 + exp(2(1 − 2y_k) ŷ_k + 2 r_k))   Theorem CEadv, eq. (convex_ce_adver): f∘g_k
//	squared  ℓ_k = ½ (|ŷ_k − y_k| + r_k)²                  Theorem robust_SOCP, eq. (SOCP3): ½ z_k²
//	logistic ℓ_k = log(1 + exp(−y_k ŷ_k + r_k))            same argument as hinge (not in the paper)
//
// The program's loss is (1/n) Σ_k ℓ_k for hinge, BCE and logistic and
// Σ_k ℓ_k for squared, as in Loss.Value.
//
// BCE: the paper's statement of Theorem CEadv writes
// g_k = (2y_k − 1) Σ_i d_ik x_kᵀ(v_i − w_i) + ε‖·‖₁; its proof (lines
// ce_adv_prf1/prf2) gives the sign implemented here,
// f(u) = log(e^{2u} + 1) at u = (1 − 2y_k) ŷ_k + ε‖g_k^f‖_*, which at ε = 0 is
// the BCE loss −2ŷ_k y_k + log(e^{2ŷ_k} + 1). The paper states the BCE and
// squared cases for p = ∞; the same dual-norm step gives the ℓ_p versions.
//
// Squared: eq. (SOCP3) constrains z_k ≥ |ŷ_k − y_k| + ε‖g_k‖₁ and
// ‖(z, 2a − ¼)‖₂ ≤ 2a + ¼, that is a ≥ ½ Σ_k z_k²: the worst case of
// ½‖ŷ − y‖² is ½ Σ_k (|ŷ_k − y_k| + r_k)², separately in each point because
// each δ_k enters only the k-th residual.
func RobustPointLosses(p *Program, wt Weights, pert Perturbation) ([]float64, error) {
	return p.robustTerms(wt, pert)
}

// RobustObjective returns the robust convex objective
//
//	L_rob(v, w) = Σ_k ℓ_k  (or (1/n) Σ_k ℓ_k)  +  β Σ_i (‖v_i‖₂ + ‖w_i‖₂)
//
// with the worst-case terms ℓ_k of RobustPointLosses: the objective of
// eq. (hinge_adv_D) / (hinge_adv_D_lp) for the hinge loss,
//
//	(1/n) Σ_k (1 − y_k Σ_i d_ik x_kᵀ(v_i − w_i) + ε‖Σ_i d_ik (v_i − w_i)^f‖_*)_+ + β Σ_i (‖v_i‖₂ + ‖w_i‖₂),
//
// of eq. (convex_ce_adver) for BCE and of eq. (SOCP3) (a = ½ Σ_k z_k² at the
// optimum) for the squared loss. It is the value of the min-max problem
// eq. (rob_gen_cvx) (eq. rob_gen_cvx_s for sampled patterns) at fixed (v, w):
// the maximum over the perturbation set of the loss at
// Σ_i D_i (X + Δ)(v_i − w_i). The regularizer covers the whole v_i, bias
// entry included, as in Program.Objective. With ε = 0 it equals
// Program.Objective exactly, and it is nondecreasing in ε.
//
// The robust constraints are not part of the value; see RobustViolation.
func RobustObjective(p *Program, wt Weights, pert Perturbation) (float64, error) {
	terms, err := p.robustTerms(wt, pert)
	if err != nil {
		return 0, err
	}
	var s float64
	for _, t := range terms {
		s += t
	}
	if p.Loss != SquaredLoss {
		s /= float64(len(terms))
	}
	return s + p.Beta*groupNorms(wt), nil
}

// RobustViolation returns the largest violation of the robust constraints of
// Corollary ROB_CONSTRAINT, eq. (robust_constraint) (and their ℓ_p form in
// eq. hinge_adv_D_lp),
//
//	(2D_i − I) X v_i ≥ ε‖v_i^f‖_*,   (2D_i − I) X w_i ≥ ε‖w_i^f‖_*,   i = 1 … P,
//
// that is max over i, k of (ε‖v_i^f‖_* − (2d_ik − 1) x_kᵀv_i)_+ and the same
// for w_i. They are min_{‖δ_k‖_p ≤ ε} (2d_ik − 1)(x_k + δ_k)ᵀ v_i ≥ 0 of
// eq. (rob_gen_cvx_2). With a bias the bias entry of v_i is left out of the
// norm, because the bias input 1 is not perturbed. With ε = 0 it equals
// Program.Violation exactly.
func RobustViolation(p *Program, wt Weights, pert Perturbation) (float64, error) {
	if err := p.CheckRobust(wt, pert); err != nil {
		return 0, err
	}
	_, d, np := p.Dims()
	f := PerturbedFeatures(d, p.Bias)
	kind, _ := pert.norm()
	radV := make([]float64, np)
	radW := make([]float64, np)
	for i := 0; i < np; i++ {
		radV[i] = pert.Eps * kind.Dual(wt.V.RawRowView(i)[:f])
		radW[i] = pert.Eps * kind.Dual(wt.W.RawRowView(i)[:f])
	}
	return p.violation(wt, radV, radW), nil
}

// WorstCase returns the worst-case perturbations Δ* (n×f, row k is δ_k*, the
// bias column left out) of the inner maximum of eq. (rob_gen_cvx) for the
// program's loss, in closed form, with m(g) the maximizer of δᵀg over the
// unit ball (sgn g for p = ∞, g/‖g‖₂ for p = 2, sgn(g_j) e_j at the largest
// |g_j| for p = 1, so that m(g)ᵀg = ‖g‖_*):
//
//	hinge, logistic  δ_k* = −ε y_k m(g_k^f)            Theorem inner_max: Δ* = −ε sgn(Σ_i D_i y (v_i − w_i)ᵀ)
//	BCE              δ_k* = −ε (2y_k − 1) m(g_k^f)     Theorem CEadv:     Δ* = −ε sgn((2y − 1) Σ_i D_i (v_i − w_i)ᵀ)
//	squared          δ_k* =  ε s_k m(g_k^f)            s_k = sgn(ŷ_k − y_k), +1 when ŷ_k = y_k (either sign is optimal)
//
// At δ_k* the surrogate output ŷ_k + δ_k*ᵀ g_k^f moves by ε‖g_k^f‖_* in the
// direction that increases the loss, so the loss there is the term ℓ_k of
// RobustPointLosses. For p = ∞ and g_k^f without zero entries δ_k* is a
// vertex of the box, as the paper notes; a zero entry of g_k^f gets δ = 0
// (sgn 0 = 0), which changes neither the surrogate nor its loss.
func WorstCase(p *Program, wt Weights, pert Perturbation) (*mat.Dense, error) {
	if err := p.CheckRobust(wt, pert); err != nil {
		return nil, err
	}
	n, d, _ := p.Dims()
	f := PerturbedFeatures(d, p.Bias)
	kind, _ := pert.norm()
	var yhat []float64
	if p.Loss == SquaredLoss {
		var err error
		if yhat, err = p.Predict(wt); err != nil {
			return nil, err
		}
	}
	g := p.robustG(wt)
	out := mat.NewDense(n, f, nil)
	for k := 0; k < n; k++ {
		y := p.Y[k]
		var s float64
		switch p.Loss {
		case HingeLoss, LogisticLoss:
			s = -y
		case BCELoss:
			s = -(2*y - 1)
		case SquaredLoss:
			s = 1
			if yhat[k] < y {
				s = -1
			}
		}
		row := out.RawRowView(k)
		robustMaximizer(kind, row, g.RawRowView(k)[:f])
		floats.Scale(s*pert.Eps, row)
	}
	return out, nil
}

func (p *Program) worstCaseFor(name string, want Loss, wt Weights, pert Perturbation) (*mat.Dense, error) {
	if p == nil {
		return nil, errors.New("solvers: program is nil")
	}
	if p.Loss != want {
		return nil, fmt.Errorf("solvers: %s needs a %v-loss program, this one has the %v loss (WorstCase picks by loss)", name, want, p.Loss)
	}
	return WorstCase(p, wt, pert)
}

// WorstCaseHinge returns Δ*_hinge of Theorem inner_max for a hinge-loss
// program, δ_k* = −ε y_k sgn(g_k^f) for the box (see WorstCase for the ℓ_p
// maximizer and the bias column).
func WorstCaseHinge(p *Program, wt Weights, pert Perturbation) (*mat.Dense, error) {
	return p.worstCaseFor("WorstCaseHinge", HingeLoss, wt, pert)
}

// WorstCaseBCE returns Δ*_BCE of Theorem CEadv for a BCE program,
// δ_k* = −ε (2y_k − 1) sgn(g_k^f) for the box: for y_k = 1 the adversary
// lowers ŷ_k, for y_k = 0 it raises it (see WorstCase).
func WorstCaseBCE(p *Program, wt Weights, pert Perturbation) (*mat.Dense, error) {
	return p.worstCaseFor("WorstCaseBCE", BCELoss, wt, pert)
}

// WorstCaseSquared returns the maximizer of the squared loss behind
// Theorem robust_SOCP, δ_k* = ε sgn(ŷ_k − y_k) sgn(g_k^f) for the box: it
// pushes the residual ŷ_k − y_k away from zero by ε‖g_k^f‖_* (see WorstCase).
func WorstCaseSquared(p *Program, wt Weights, pert Perturbation) (*mat.Dense, error) {
	return p.worstCaseFor("WorstCaseSquared", SquaredLoss, wt, pert)
}

// CertifiedPoints checks, for every row x_k of x (raw features, no bias
// column, as for Network.Predict), that no hidden neuron of the network
// changes activation anywhere in the ball {x_k + δ : ‖δ‖_p ≤ ε}. The
// pattern margin is
//
//	m_k = min_j ( |x̃_kᵀ u_j| − ε‖u_j^f‖_* ),
//
// with x̃_k = [x_k; 1] and u_j^f the hidden weights without the bias entry
// when the network has biases (x̃_k = x_k, u_j^f = u_j otherwise); it is the
// smallest distance, in units of the pre-activation, between a neuron's
// pre-activation range over the ball, x̃_kᵀu_j ± ε‖u_j^f‖_*, and zero.
// certified[k] is m_k ≥ 0: every pre-activation keeps its sign (it may touch
// 0, where the ReLU is continuous), so the network is affine on the ball and
// equals Σ_i d_ik (x̃_k + δ)ᵀ(v_i − w_i) there when it was recovered by
// eq. (recover_weights) from weights with those patterns; the robust convex
// term ℓ_k of RobustPointLosses is then the network's exact worst-case loss
// at x_k. All neurons count, whatever their output weight. Weights that
// satisfy the robust constraints (RobustViolation = 0) certify every training
// point.
func CertifiedPoints(net *Network, x *mat.Dense, pert Perturbation) ([]bool, []float64, error) {
	if err := net.Validate(); err != nil {
		return nil, nil, err
	}
	if err := pert.Validate(); err != nil {
		return nil, nil, err
	}
	if err := patCheckMatrix("X", x); err != nil {
		return nil, nil, err
	}
	if err := CheckFinite("solvers: network U", net.U); err != nil {
		return nil, nil, err
	}
	n, f := x.Dims()
	if f != net.InputDim() {
		return nil, nil, fmt.Errorf("solvers: data has %d features, network expects %d", f, net.InputDim())
	}
	d, m := net.U.Dims()
	kind, _ := pert.norm()
	rad := make([]float64, m)
	col := make([]float64, d)
	for j := 0; j < m; j++ {
		mat.Col(col, j, net.U)
		rad[j] = pert.Eps * kind.Dual(col[:f])
	}
	var h mat.Dense
	h.Mul(x, net.U.Slice(0, f, 0, m))
	var b []float64
	if net.Bias {
		b = net.U.RawRowView(d - 1)[:m]
	}
	cert := make([]bool, n)
	margin := make([]float64, n)
	for k := 0; k < n; k++ {
		row := h.RawRowView(k)
		mk := math.Inf(1)
		for j, z := range row {
			if b != nil {
				z += b[j]
			}
			mk = math.Min(mk, math.Abs(z)-rad[j])
		}
		margin[k] = mk
		cert[k] = mk >= 0
	}
	return cert, margin, nil
}

// SampleRobustPatterns is step 1 of the paper's Algorithm "practical convex
// adversarial training" (alg. adv_train), with P = P_a, S and target = P_s:
//
//	for h = 1 … P_a:
//	    a_h ~ N(0, I_d)
//	    D_h1 = diag(1[X a_h ≥ 0])
//	    for j = 2 … S:
//	        D_hj = diag(1[(X + Δ_hj) a_h ≥ 0])
//	        discard repeated D_hj; stop when P_s distinct D_hj have been generated
//
// and returns the distinct patterns in the order first generated. For the box
// (LInf) Δ_hj = ε sgn(R_hj), R_hj an n×d Gaussian matrix: every row is
// a uniformly random vertex of the box. Since only the signs of R_hj matter,
// they are drawn directly as independent fair ±1 signs (the same
// distribution). The analogues for the other norms also put every row on a
// uniformly random extreme point of its ball, where the worst-case
// perturbations of Theorem inner_max and eq. (hinge_adv_D_lp) lie:
// L2: δ_k = ε r_k/‖r_k‖₂ with r_k ~ N(0, I_f), uniform on the sphere;
// L1: δ_k = ±ε e_i with i uniform in 1 … f and a fair sign (the
// vertices of the cross-polytope).
//
// Each draw (h, j) is one pattern examined; maxDraws caps the total, with 0
// meaning the algorithm's P_a·S. When fewer than target distinct patterns are
// found, the patterns found are returned with a *FewPatternsError (the same
// type as SamplePatterns'), whose Draws is the number of draws made.
//
// bias says that the last column of x is the bias input, all ones; it is
// then left unperturbed (the a_h still have d entries, the last one the
// hidden bias), as the adversary moves only the raw features.
//
// Deviations from the algorithm as printed, all documented choices:
//   - "break if P_s distinct D_hj matrices has been generated" ends the whole
//     sampling, not just the inner loop (the paper's footnote: "the sampling
//     was terminated when a sufficient number of D_h matrices was
//     generated"), and it is also checked after D_h1, so at most P_s patterns
//     are returned (with S = 1 the loop as printed would never break).
//   - Repeats are discarded across all h, not only within one h.
//   - The directions a_h are SamplePatterns' draws for the same seed, and the
//     perturbations come from a separate stream keyed by (seed, h, j); so
//     D_h1 is exactly SamplePatterns' h-th draw, the clean patterns found
//     are those SamplePatterns finds in P_a draws, and with ε = 0 (where
//     every D_hj = D_h1) the result equals SamplePatterns(x, target, seed,
//     P_a) (same distribution, and indeed the same patterns).
//   - With ε = 0 the draws j ≥ 2 are counted but not computed.
//
// The algorithm requires P_a·S ≥ P_s; SampleRobustPatterns refuses
// P_a·S < target. A maxDraws below target is accepted, like SamplePatterns',
// and ends in a *FewPatternsError.
func SampleRobustPatterns(x *mat.Dense, bias bool, P, S int, pert Perturbation, target int, seed uint64, maxDraws int) (Patterns, error) {
	pats, _, err := sampleRobust(x, bias, P, S, pert, target, seed, maxDraws)
	return pats, err
}

// robustDraw names the draw (h, j) of alg. adv_train, both from 1, that first
// produced a pattern; j = 1 is the clean pattern of a_h.
type robustDraw struct{ h, j int }

func sampleRobust(x *mat.Dense, bias bool, pa, s int, pert Perturbation, target int, seed uint64, maxDraws int) (Patterns, []robustDraw, error) {
	if err := patCheckMatrix("X", x); err != nil {
		return nil, nil, err
	}
	if err := pert.Validate(); err != nil {
		return nil, nil, err
	}
	n, d := x.Dims()
	if bias {
		if d < 2 {
			return nil, nil, fmt.Errorf("solvers: X has %d column; with a bias it needs at least one feature and the bias column", d)
		}
		for k := 0; k < n; k++ {
			if v := x.At(k, d-1); v != 1 {
				return nil, nil, fmt.Errorf("solvers: bias is set but X[%d,%d] = %v is not 1", k, d-1, v)
			}
		}
	}
	switch {
	case pa < 1:
		return nil, nil, fmt.Errorf("solvers: P_a = %d random directions, need P_a ≥ 1", pa)
	case s < 1:
		return nil, nil, fmt.Errorf("solvers: S = %d samples per direction, need S ≥ 1", s)
	case target < 1:
		return nil, nil, fmt.Errorf("solvers: asked for P_s = %d activation patterns, need P_s ≥ 1", target)
	case maxDraws < 0:
		return nil, nil, fmt.Errorf("solvers: maxDraws = %d, need maxDraws ≥ 0 (0 for P_a·S)", maxDraws)
	}
	budget := math.MaxInt
	if pa <= math.MaxInt/s {
		budget = pa * s
	}
	if budget < target {
		return nil, nil, fmt.Errorf("solvers: P_a·S = %d·%d = %d draws cannot give P_s = %d patterns; the algorithm needs P_a·S ≥ P_s",
			pa, s, budget, target)
	}
	if maxDraws > 0 {
		budget = min(budget, maxDraws)
	}
	f := PerturbedFeatures(d, bias)
	kind, _ := pert.norm()
	eps := pert.Eps

	arng := rand.New(rand.NewPCG(seed, patSampleStream))
	pr := newRobustPerturber(seed, kind)
	a := make([]float64, d)
	xa := make([]float64, n)
	z := make([]float64, n)
	dk := make([]float64, f)
	set := newPatCellSet(n)
	bits := make([]uint64, set.w)
	var out Patterns
	var from []robustDraw
	keep := func(h, j int, z []float64) {
		patSignBits(bits, z)
		if set.add(bits) {
			out = append(out, patFromBits(bits, n))
			from = append(from, robustDraw{h, j})
		}
	}
	draws := 0
	for h := 1; h <= pa && draws < budget && len(out) < target; h++ {
		for i := range a {
			a[i] = arng.NormFloat64()
		}
		for k := range xa {
			xa[k] = floats.Dot(x.RawRowView(k)[:d], a)
		}
		draws++
		keep(h, 1, xa)
		for j := 2; j <= s && draws < budget && len(out) < target; j++ {
			draws++
			if eps == 0 {
				continue // X̄_hj = X: D_hj = D_h1
			}
			pr.reset(h, j)
			af := a[:f]
			for k := range z {
				pr.next(dk)
				z[k] = xa[k] + eps*floats.Dot(dk, af)
			}
			keep(h, j, z)
		}
	}
	if len(out) < target {
		return out, from, &FewPatternsError{Asked: target, Found: len(out), Draws: draws}
	}
	return out, from, nil
}

// robustPerturber draws the unit-radius perturbation rows δ_k/ε of the draw
// (h, j) of SampleRobustPatterns, row after row, from a generator keyed by
// (seed, h, j) so that any draw can be regenerated on its own.
type robustPerturber struct {
	seed uint64
	kind Norm
	src  rand.PCG
	rng  *rand.Rand
}

func newRobustPerturber(seed uint64, kind Norm) *robustPerturber {
	rp := &robustPerturber{seed: seed, kind: kind}
	rp.rng = rand.New(&rp.src)
	return rp
}

// reset starts the rows of draw (h, j).
func (rp *robustPerturber) reset(h, j int) {
	rp.src.Seed(robustMix(rp.seed^robustSignStream), robustMix(robustMix(uint64(h))^uint64(j)))
}

// next sets dst (length f) to the next row δ_k/ε: fair signs for p = ∞, a
// uniform point of the unit sphere for p = 2, ±e_i for p = 1.
func (rp *robustPerturber) next(dst []float64) {
	switch rp.kind {
	case LInf:
		var w uint64
		for i := range dst {
			if i&63 == 0 {
				w = rp.src.Uint64()
			}
			dst[i] = float64(int64(w&1)<<1 - 1)
			w >>= 1
		}
	case L2:
		for {
			var ss float64
			for i := range dst {
				v := rp.rng.NormFloat64()
				dst[i] = v
				ss += v * v
			}
			if ss > 0 {
				floats.Scale(1/math.Sqrt(ss), dst)
				return
			}
		}
	case L1:
		clear(dst)
		i := rp.rng.IntN(len(dst))
		dst[i] = float64(int64(rp.src.Uint64()&1)<<1 - 1)
	}
}

// robustMix is the SplitMix64 finalizer, a bijection of uint64.
func robustMix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ x>>30) * 0xbf58476d1ce4e5b9
	x = (x ^ x>>27) * 0x94d049bb133111eb
	return x ^ x>>31
}
