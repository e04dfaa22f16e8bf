package admm

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/convexnn/convexnn/solvers"
	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/gonum/lapack/lapack64"
)

// RBCDState is the complete iteration state of ADMM-RBCD: the ADMM state
// (layout as in ClosedFormState) and the line search's curvature estimates, one
// per pattern. A solver rebuilt from a saved state takes, bit for bit, the
// steps of an uninterrupted run (within one BLAS build).
type RBCDState struct {
	ClosedFormState
	// Lipschitz[i] is the current estimate L_i of the curvature of the loss
	// along block pair i, in the metric of M = I + XᵀX (see RBCD).
	Lipschitz []float64
}

// rbcdTau is τ of the inner stopping test ‖∇_u L‖ ≤ φ_k / max(τ, ‖u‖).
const rbcdTau = 1

// rbcdFloor: the u-update also stops when ‖∇_u L‖ is below rbcdFloor times
// the dual tolerance of the stopping test at the iteration's start.
const rbcdFloor = 0.1

// RBCD is the paper's ADMM (Algorithm "ADMM", eq. 3.3a–c, scaled form)
// for a smooth convex loss ℓ (squared, BCE, logistic), with the u-update of
// eq. (ADMM1)
//
//	u^{k+1} ≈ argmin_u L(u) = ℓ(F u, y) + (ρ/2)‖u − v^k + λ^k‖² + (ρ/2)‖G u − s^k + ν^k‖²
//
// solved inexactly by randomized block coordinate descent (Algorithm RBCD),
// and the v-, s- and dual updates of ADMM (eq. vupdate, supdate, 3.3c). F, G
// and the layout of u = (u_1 … u_P, z_1 … z_P) are those of ClosedForm;
// blocks are the pairs (u_i, z_i), which share F_i = D_i X. With ŷ = F u and
// ỹ = ∇ℓ(ŷ), the gradient of block j (pattern i, sign σ_j = +1 for u_i, −1
// for z_i) is, since G_iᵀG_i = XᵀX,
//
//	∇_j L = σ_j Xᵀ D_i ỹ + ρ (M u_j − b_j),  M = I + XᵀX,  b_j = v_j − λ_j + s̃_j,
//
// with s̃_j = G_iᵀ(s_j − ν_j) (the paper's s̃_i, t̃_i), fixed during a
// u-update. As the paper prescribes, ŷ is kept up to date incrementally,
// XᵀX is formed once, s̃ once per ADMM iteration, the u-update is warm
// started from u^k, the steps are chosen by backtracking, and the u-update
// stops when
//
//	‖∇_u L‖₂ ≤ φ_k / max(τ, ‖u‖₂),  φ_k = φ_0/(k+1)²
//
// or after InnerMax steps; the φ_k are summable, so the inexact ADMM still
// converges (Eckstein and Yao 2017, Proposition 6, cited by the paper). The
// full gradient costs O(ndP), so the test is made once every ⌈P/Blocks⌉
// steps (about P block updates).
//
// What is chosen here rather than prescribed: the block step is taken in
// the metric of M instead of the Euclidean one of the paper's step 7. The
// quadratic part of L has Hessian ρM on each block, whose condition number
// 1 + λ_max(XᵀX) is about 10⁶ on image data, so Euclidean gradient steps
// would stall; in the metric of M the whole of L has condition number at
// most 1 + 2P·L_ℓ/ρ (L_ℓ the curvature bound of ℓ: 1 for the squared loss,
// 1/n for BCE, 1/(4n) for logistic). That bound is 1 + 200P with
// ρ = 0.01/n for BCE (the default 10β at β = 10⁻³/n): small ρ, which makes
// the most progress per ADMM iteration on MNIST, leaves the u-updates rough
// within InnerMax, as in the paper's experiments. One step on the set S of
// Blocks patterns is
//
//	u_j⁺ = u_j − M⁻¹∇_j L / (ρ + L_i)    for j = i and j = P + i, i ∈ S,
//
// the minimizer of the model in which ℓ is majorized by its linearization
// plus Σ_i (L_i/2)(δ_{u_i}ᵀMδ_{u_i} + δ_{z_i}ᵀMδ_{z_i}) and the quadratic part
// is exact. The step is accepted when the model holds at it, a test on the
// loss alone:
//
//	ℓ(ŷ + Δŷ) − ℓ(ŷ) − ⟨ỹ, Δŷ⟩ ≤ Σ_{i∈S} (L_i/2)(δ_{u_i}ᵀMδ_{u_i} + δ_{z_i}ᵀMδ_{z_i}),
//
// the left side computed per sample as a Bregman divergence (without the
// cancellation of a difference of losses); otherwise the L_i are doubled.
// After a step accepted at once its L_i are halved (not below 10⁻³ρ). The
// test holds for L_i ≥ 2|S|L_ℓ, so the search ends. M u_j is kept up to
// date alongside u (M δ_j = −∇_j/(ρ + L_i)) and M⁻¹∇_j is formed as
// σ_j M⁻¹XᵀD_iỹ + ρ(u_j − M⁻¹b_j) with M⁻¹b computed once per ADMM
// iteration, so the pair (u_i, z_i) needs one solve with the Cholesky
// factor of M; the full-gradient test recomputes M u exactly.
//
// Two more choices: the u-update also stops when ‖∇_u L‖ is below a tenth
// of the dual tolerance of the stopping test (DualTol at the iteration's
// start), below which more inner accuracy cannot change when the test
// passes; and Converged requires InnerResidual ≤ DualTol besides the
// residual test of ADMM, since with an inexact u-update the stationarity
// residual of eq. (4) is the dual residual plus the inner gradient.
//
// Costs in flops of one RBCD step on B = Blocks patterns (|D_i| the active
// rows of pattern i):
//
//	                          B = 1 (rows of D_i only)    B > 1 (matrix products over the B rows)
//	XᵀD_iỹ                    2|D_i|d                     2nd each (zero rows of D_iỹ skipped)
//	M⁻¹XᵀD_iỹ                 2d²                         2d² each (two triangular solves)
//	X(p_{u_i} − p_{z_i})      2|D_i|d                     2nd each
//	ŷ, ỹ = ∇ℓ(ŷ) updates      O(|D_i|)                    O(Bn)
//	line search trial         O(|D_i|)                    O(Bn)
//
// against the paper's table: O(nd) for F_iᵀỹ and for the ŷ update, O(d²)
// for XᵀX u_i and XᵀX z_i (here one solve with M serves the pair, and M u
// is updated in O(d)). For B = 1 the products run over the rows of D_i,
// about half of X, as vector operations; for B > 1 X is streamed once for
// all B blocks, so the step runs at matrix-product speed. The full-gradient
// test costs 2ndP + 4Pd² (one product for XᵀD_iỹ of every i, one for M u).
// Per ADMM iteration, outside the u-update: X u (giving G u and the exact
// ŷ of the next warm start), Gᵀ[s; ν] and X v for the reported objectives,
// 16ndP flops as in ClosedForm, and M⁻¹b, 4Pd². Set-up: XᵀX (2nd²) and the
// Cholesky factor of M (d³/3).
//
// Measured times per iteration and per step (BenchmarkADMMRBCD, MNIST) are
// in docs/performance.md.
//
// The solver is not safe for concurrent use; the Program must not change
// after NewRBCD, nor State between steps.
type RBCD struct {
	Program *solvers.Program
	Options Options
	State   RBCDState

	n, d, np   int
	nb         int // blocks per RBCD step
	innerMax   int
	rho, theta float64
	phi0       float64
	lossCurv   float64 // L_ℓ
	lMin       float64 // floor of the L_i
	lCap       float64 // 2·nb·L_ℓ: the test holds for L_i ≥ lCap
	x          blas64.General
	mm         blas64.General    // M = I + XᵀX (d×d)
	lm         blas64.Triangular // Cholesky factor of M
	dm, sg     []float64         // P×n: D_i[k] ∈ {0, 1} and 2D_i[k] − 1
	act        []int32           // the rows k with D_i[k] = 1, pattern after pattern
	actOff     []int             // P+1: pattern i's rows are act[actOff[i]:actOff[i+1]]
	cm         []float64         // n: margin scales c_k (BCE, logistic)

	// u-update
	yhat, ytil, sig, dy []float64 // n: ŷ, ∇ℓ(ŷ), σ(c_k ŷ_k), trial Δŷ
	ytilOK              bool      // ytil and sig are those of yhat
	mu                  []float64 // 2P×d: M u_j
	bv, rv              []float64 // 2P×d: b_j and M⁻¹ b_j
	tall, gall          []float64 // P×n: D_i ỹ; P×d: Xᵀ D_i ỹ
	tb, eb              []float64 // B×n: D_i ỹ, X(p_{u_i} − p_{z_i})
	gb, hb, pd          []float64 // B×d: XᵀD_iỹ, its M⁻¹, p_{u_i} − p_{z_i}
	grad, pv            []float64 // 2B×d: ∇_j and p_j = M⁻¹∇_j
	qv                  []float64 // 2B: ⟨∇_j, p_j⟩ = p_jᵀ M p_j
	perm                []int     // P
	pcg                 *rand.PCG
	rng                 *rand.Rand

	// outer ADMM
	xu        []float64 // 2P×n
	stk       []float64 // 4P×n
	gsn, gsNw []float64 // 4P×d: Gᵀs, Gᵀν (current, new)
	vOld      []float64 // 2P×d
	vNorm     []float64 // 2P
	yc, yn    []float64 // n

	setupSeconds float64
}

// NewRBCD validates p and o, forms XᵀX and the Cholesky factor of
// M = I + XᵀX, and starts from zero (with L_i = 2L_ℓ), or continues from
// the saved state st. The solver's Options hold o with its defaults filled
// in (the default φ_0 depends on the program only, so a resumed solver
// computes the same).
func NewRBCD(p *solvers.Program, o Options, st *RBCDState) (*RBCD, error) {
	o, err := prologue(p, VariantRBCD, o, st)
	if err != nil {
		return nil, err
	}
	n, d, np := p.Dims()
	t0 := now()
	a := &RBCD{Program: p, Options: o, n: n, d: d, np: np, nb: o.Blocks, innerMax: o.InnerMax,
		rho: o.Rho, theta: o.Gamma / o.Rho, x: p.X.RawMatrix()}
	switch p.Loss {
	case solvers.SquaredLoss:
		a.lossCurv = 1
	case solvers.BCELoss:
		a.lossCurv = 1 / float64(n)
	case solvers.LogisticLoss:
		a.lossCurv = 1 / (4 * float64(n))
	}
	a.lCap = 2 * float64(a.nb) * a.lossCurv
	a.lMin = 1e-3 * a.rho
	if err := a.setup(); err != nil {
		return nil, err
	}
	if st != nil {
		a.State = RBCDState{ClosedFormState: ClosedFormState{Iter: st.Iter, U: slices.Clone(st.U), V: slices.Clone(st.V), S: slices.Clone(st.S),
			Lambda: slices.Clone(st.Lambda), Nu: slices.Clone(st.Nu)}, Lipschitz: slices.Clone(st.Lipschitz)}
	} else {
		a.State = RBCDState{ClosedFormState: ClosedFormState{U: make([]float64, 2*np*d), V: make([]float64, 2*np*d), S: make([]float64, 2*np*n),
			Lambda: make([]float64, 2*np*d), Nu: make([]float64, 2*np*n)}, Lipschitz: make([]float64, np)}
		for i := range a.State.Lipschitz {
			a.State.Lipschitz[i] = 2 * a.lossCurv
		}
	}
	// Quantities derived from the state, by the same products Step uses, so
	// that a resumed run repeats an uninterrupted one bit for bit.
	a.stackG()
	a.gtStack(a.gsn)
	for q := range a.State.V {
		a.vNorm[q/d] += a.State.V[q] * a.State.V[q]
	}
	for j, v := range a.vNorm {
		a.vNorm[j] = math.Sqrt(v)
	}
	a.xRows(a.State.U)
	a.predict()
	if a.Options.Phi0 == 0 {
		a.Options.Phi0 = 1e-2 * a.gradAtZero()
	}
	a.phi0 = a.Options.Phi0
	a.setupSeconds = now() - t0
	return a, nil
}

func (st *RBCDState) check(n, d, np int) error {
	if err := checkState(VariantRBCD, st.Iter, nil, n, d, np, st.ClosedFormState.vectors(n, d, np)); err != nil {
		return err
	}
	if len(st.Lipschitz) != np {
		return fmt.Errorf("admm: saved ADMM-RBCD state has %d Lipschitz estimates, the program has P = %d patterns", len(st.Lipschitz), np)
	}
	for i, l := range st.Lipschitz {
		if !(l > 0) || math.IsInf(l, 0) {
			return fmt.Errorf("admm: saved ADMM-RBCD state has Lipschitz[%d] = %v, need 0 < L < ∞", i, l)
		}
	}
	return nil
}

// setup forms M = I + XᵀX, its Cholesky factor, the pattern masks and the
// work space.
func (a *RBCD) setup() error {
	n, d, np, nb := a.n, a.d, a.np, a.nb
	p := a.Program
	a.mm = blas64.General{Rows: d, Cols: d, Stride: d, Data: make([]float64, d*d)}
	blas64.Gemm(blas.Trans, blas.NoTrans, 1, a.x, a.x, 0, a.mm)
	for j := 0; j < d; j++ {
		a.mm.Data[j*d+j]++
	}
	l, ok := lapack64.Potrf(blas64.Symmetric{Uplo: blas.Lower, N: d, Stride: d, Data: slices.Clone(a.mm.Data)})
	if !ok {
		return errors.New("admm: ADMM-RBCD: I + XᵀX is not numerically positive definite (X has huge entries?)")
	}
	a.lm = l
	a.dm = make([]float64, np*n)
	a.sg = make([]float64, np*n)
	a.actOff = make([]int, np+1)
	for i, pat := range p.D {
		for k, on := range pat {
			a.sg[i*n+k] = -1
			if on {
				a.dm[i*n+k], a.sg[i*n+k] = 1, 1
				a.act = append(a.act, int32(k))
			}
		}
		a.actOff[i+1] = len(a.act)
	}
	if p.Loss != solvers.SquaredLoss {
		a.cm = make([]float64, n)
		for k, y := range p.Y {
			a.cm[k] = p.Loss.MarginScale(y)
		}
	}
	f := func(k int) []float64 { return make([]float64, k) }
	a.yhat, a.ytil, a.sig, a.dy = f(n), f(n), f(n), f(n)
	a.mu, a.bv, a.rv = f(2*np*d), f(2*np*d), f(2*np*d)
	a.tall, a.gall = f(np*n), f(np*d)
	a.tb, a.eb = f(nb*n), f(nb*n)
	a.gb, a.hb, a.pd = f(nb*d), f(nb*d), f(nb*d)
	a.grad, a.pv, a.qv = f(2*nb*d), f(2*nb*d), f(2*nb)
	a.perm = make([]int, np)
	a.pcg = rand.NewPCG(0, 0)
	a.rng = rand.New(a.pcg)
	a.xu, a.stk = f(2*np*n), f(4*np*n)
	a.gsn, a.gsNw = f(4*np*d), f(4*np*d)
	a.vOld, a.vNorm = f(2*np*d), f(2*np)
	a.yc, a.yn = f(n), f(n)
	return nil
}

// gradAtZero returns ‖Fᵀ∇ℓ(0, y)‖₂ (the P rows Xᵀ D_i ∇ℓ(0) each count
// twice, for u_i and z_i).
func (a *RBCD) gradAtZero() float64 {
	zero := make([]float64, a.n)
	g := make([]float64, a.n)
	a.Program.Loss.Grad(g, zero, a.Program.Y)
	copy(a.ytil, g)
	a.ytilOK = false
	a.loadAll()
	var s float64
	for _, v := range a.gall {
		s += v * v
	}
	return math.Sqrt(2 * s)
}

// predict sets ŷ = Σ_i D_i (X u_i − X z_i) from a.xu = rows X u_j.
func (a *RBCD) predict() {
	n, np := a.n, a.np
	yh := a.yhat
	for k := range yh {
		yh[k] = 0
	}
	for i := 0; i < np; i++ {
		xu, xz, msk := a.xu[i*n:(i+1)*n], a.xu[(np+i)*n:(np+i+1)*n], a.dm[i*n:(i+1)*n]
		for k := range yh {
			yh[k] += msk[k] * (xu[k] - xz[k])
		}
	}
	a.ytilOK = false
}

// xRows sets a.xu (2P×n) to the rows (X w_j)ᵀ of w (2P×d), as w Xᵀ.
func (a *RBCD) xRows(w []float64) {
	blas64.Gemm(blas.NoTrans, blas.Trans, 1, blas64.General{Rows: 2 * a.np, Cols: a.d, Stride: a.d, Data: w}, a.x,
		0, blas64.General{Rows: 2 * a.np, Cols: a.n, Stride: a.n, Data: a.xu})
}

// stackG fills a.stk with the rows (2D_j − I) s_j and (2D_j − I) ν_j.
func (a *RBCD) stackG() { stackG(a.stk, a.sg, a.State.S, a.State.Nu, a.n, a.np) }

// gtStack sets dst (4P×d) to the rows G_jᵀ s_j, then G_jᵀ ν_j: a.stk X.
func (a *RBCD) gtStack(dst []float64) {
	blas64.Gemm(blas.NoTrans, blas.NoTrans, 1, blas64.General{Rows: 4 * a.np, Cols: a.n, Stride: a.n, Data: a.stk}, a.x,
		0, blas64.General{Rows: 4 * a.np, Cols: a.d, Stride: a.d, Data: dst})
}

// xrow returns row k of X as a vector.
func (a *RBCD) xrow(k int) blas64.Vector {
	return blas64.Vector{N: a.d, Inc: 1, Data: a.x.Data[k*a.x.Stride : k*a.x.Stride+a.d]}
}

// solveM overwrites the m rows w (m×d) by w M⁻¹ = w L⁻ᵀ L⁻¹.
func (a *RBCD) solveM(w []float64, m int) {
	g := blas64.General{Rows: m, Cols: a.d, Stride: a.d, Data: w}
	blas64.Trsm(blas.Right, blas.Trans, 1, a.lm, g)
	blas64.Trsm(blas.Right, blas.NoTrans, 1, a.lm, g)
}

// lossGrad sets ỹ = ∇ℓ(ŷ) and, for BCE and logistic, σ_k = σ(c_k ŷ_k).
func (a *RBCD) lossGrad() {
	if a.ytilOK {
		return
	}
	for k := range a.yhat {
		a.lossGrad1(k)
	}
	a.ytilOK = true
}

// lossGrad1 sets ỹ_k and σ_k from ŷ_k.
func (a *RBCD) lossGrad1(k int) {
	if a.cm == nil {
		a.ytil[k] = a.yhat[k] - a.Program.Y[k]
		return
	}
	c := a.cm[k]
	s := solvers.Logistic(c * a.yhat[k])
	a.sig[k] = s
	a.ytil[k] = c * s / float64(a.n)
}

// bregman returns ℓ(ŷ + Δ) − ℓ(ŷ) − ⟨∇ℓ(ŷ), Δ⟩ for Δ = a.dy, summed per
// sample over rows (all rows when rows is nil; Δ is zero off rows):
// Δ_k²/2 for the squared loss; for BCE and logistic, with t = c_k Δ_k and
// σ_k = σ(c_k ŷ_k), (1/n)(log(1 + σ_k(eᵗ − 1)) − σ_k t) (by its Taylor series
// for |t| < 10⁻³), accurate relative to its own size, not to ℓ's as a
// difference of loss values would be.
func (a *RBCD) bregman(rows []int32) float64 {
	var s float64
	if rows == nil {
		for k, v := range a.dy {
			if v != 0 {
				s += a.bregman1(k, v)
			}
		}
	} else {
		for _, k := range rows {
			s += a.bregman1(int(k), a.dy[k])
		}
	}
	if a.cm == nil {
		return s
	}
	return s / float64(a.n)
}

// bregman1 is the term of sample k in bregman (without the factor 1/n).
func (a *RBCD) bregman1(k int, v float64) float64 {
	if a.cm == nil {
		return v * v / 2
	}
	t, sk := a.cm[k]*v, a.sig[k]
	if math.Abs(t) < 1e-3 {
		// Cumulants of a Bernoulli(σ_k): κ₂t²/2 + κ₃t³/6 + κ₄t⁴/24, with a
		// relative error below 10⁻¹¹.
		k2 := sk * (1 - sk)
		return k2 * t * t * (0.5 + t*((1-2*sk)/6+t*(1-6*k2)/24))
	}
	if t < 500 {
		if w := sk * math.Expm1(t); w > -0.5 {
			return math.Log1p(w) - sk*t
		}
	}
	// Far from the current margin (1 + w near 0 or overflowing): the
	// plain difference, accurate there.
	b := a.cm[k] * a.yhat[k]
	return solvers.Softplus(b+t) - solvers.Softplus(b) - sk*t
}

// loadAll sets a.tall to the rows D_i ỹ and a.gall to Xᵀ D_i ỹ (P×d).
func (a *RBCD) loadAll() {
	n := a.n
	for i := 0; i < a.np; i++ {
		row, msk := a.tall[i*n:(i+1)*n], a.dm[i*n:(i+1)*n]
		for k, v := range a.ytil {
			row[k] = v * msk[k]
		}
	}
	blas64.Gemm(blas.NoTrans, blas.NoTrans, 1, blas64.General{Rows: a.np, Cols: n, Stride: n, Data: a.tall}, a.x,
		0, blas64.General{Rows: a.np, Cols: a.d, Stride: a.d, Data: a.gall})
}

// fullGradient recomputes M u exactly and returns ‖∇_u L‖₂ and ‖u‖₂; it
// leaves Xᵀ D_i ỹ of the current ŷ in a.gall.
func (a *RBCD) fullGradient() (gnorm, unorm float64) {
	d, np := a.d, a.np
	st := &a.State
	a.lossGrad()
	a.loadAll()
	blas64.Gemm(blas.NoTrans, blas.NoTrans, 1, blas64.General{Rows: 2 * np, Cols: d, Stride: d, Data: st.U}, a.mm,
		0, blas64.General{Rows: 2 * np, Cols: d, Stride: d, Data: a.mu})
	var g2, u2 float64
	for j := 0; j < 2*np; j++ {
		i := j % np
		sgn := 1.0
		if j >= np {
			sgn = -1
		}
		g, mu, b, u := a.gall[i*d:(i+1)*d], a.mu[j*d:(j+1)*d], a.bv[j*d:(j+1)*d], st.U[j*d:(j+1)*d]
		for q := range g {
			r := sgn*g[q] + a.rho*(mu[q]-b[q])
			g2 += r * r
			u2 += u[q] * u[q]
		}
	}
	return math.Sqrt(g2), math.Sqrt(u2)
}

// uUpdate solves eq. (ADMM1) inexactly by RBCD from the current u (warm
// start) and returns the number of steps and ‖∇_u L‖ at exit.
func (a *RBCD) uUpdate() (steps int, res float64) {
	d, np := a.d, a.np
	st := &a.State
	pd2 := 2 * np * d
	gs, gn := a.gsn[:pd2], a.gsn[pd2:]
	for q := range a.bv {
		a.bv[q] = st.V[q] - st.Lambda[q] + gs[q] - gn[q]
	}
	copy(a.rv, a.bv)
	a.solveM(a.rv, 2*np)
	k := float64(st.Iter + 1)
	phi := a.phi0 / (k * k)
	// Below a tenth of the dual tolerance of the stopping test, inner
	// accuracy cannot change when the test passes.
	var nl float64
	for q := 0; q < pd2; q++ {
		y := st.Lambda[q] + gn[q]
		nl += y * y
	}
	o := &a.Options
	floor := rbcdFloor * (math.Sqrt(float64(pd2))*o.AbsTol + o.RelTol*a.rho*math.Sqrt(nl))
	a.pcg.Seed(a.Options.Seed, uint64(st.Iter))
	for i := range a.perm {
		a.perm[i] = i
	}
	every := (np + a.nb - 1) / a.nb
	for {
		fresh := false
		if steps%every == 0 || steps >= a.innerMax {
			g, u := a.fullGradient()
			res = g
			if g*math.Max(rbcdTau, u) <= phi || g <= floor || steps >= a.innerMax {
				return steps, res
			}
			fresh = true
		}
		a.blockStep(fresh)
		steps++
	}
}

// blockStep performs one RBCD step on Blocks patterns drawn without
// replacement. With fresh set, a.gall holds Xᵀ D_i ỹ of the current ŷ.
func (a *RBCD) blockStep(fresh bool) {
	n, d, np, nb := a.n, a.d, a.np, a.nb
	st := &a.State
	sel := a.perm[:nb]
	for b := range sel {
		j := b + a.rng.IntN(np-b)
		a.perm[b], a.perm[j] = a.perm[j], a.perm[b]
	}
	a.lossGrad()
	switch {
	case fresh:
		for b, i := range sel {
			copy(a.gb[b*d:(b+1)*d], a.gall[i*d:(i+1)*d])
		}
	case nb == 1:
		// One pattern: Σ_{k ∈ D_i} ỹ_k x_k over its rows only.
		g := a.gb[:d]
		for q := range g {
			g[q] = 0
		}
		for _, k := range a.act[a.actOff[sel[0]]:a.actOff[sel[0]+1]] {
			blas64.Axpy(a.ytil[k], a.xrow(int(k)), vec(g))
		}
	default:
		for b, i := range sel {
			row, msk := a.tb[b*n:(b+1)*n], a.dm[i*n:(i+1)*n]
			for k, v := range a.ytil {
				row[k] = v * msk[k]
			}
		}
		blas64.Gemm(blas.NoTrans, blas.NoTrans, 1, blas64.General{Rows: nb, Cols: n, Stride: n, Data: a.tb}, a.x,
			0, blas64.General{Rows: nb, Cols: d, Stride: d, Data: a.gb})
	}
	copy(a.hb, a.gb)
	a.solveM(a.hb, nb)
	rho := a.rho
	for b, i := range sel {
		g, h, pdb := a.gb[b*d:(b+1)*d], a.hb[b*d:(b+1)*d], a.pd[b*d:(b+1)*d]
		for side := 0; side < 2; side++ {
			j, sgn := i, 1.0
			if side == 1 {
				j, sgn = np+i, -1
			}
			mu, bj, u, r := a.mu[j*d:(j+1)*d], a.bv[j*d:(j+1)*d], st.U[j*d:(j+1)*d], a.rv[j*d:(j+1)*d]
			gr, pv := a.grad[(2*b+side)*d:(2*b+side+1)*d], a.pv[(2*b+side)*d:(2*b+side+1)*d]
			var qq float64
			for q := range gr {
				gr[q] = sgn*g[q] + rho*(mu[q]-bj[q])
				pv[q] = sgn*h[q] + rho*(u[q]-r[q])
				qq += gr[q] * pv[q]
			}
			a.qv[2*b+side] = qq
			if side == 0 {
				copy(pdb, pv)
			} else {
				for q, v := range pv {
					pdb[q] -= v
				}
			}
		}
	}
	if nb == 1 {
		// x_kᵀ(p_{u_i} − p_{z_i}) on the rows of D_i only; the others are masked.
		pd := vec(a.pd[:d])
		for _, k := range a.act[a.actOff[sel[0]]:a.actOff[sel[0]+1]] {
			a.eb[k] = blas64.Dot(a.xrow(int(k)), pd)
		}
	} else {
		blas64.Gemm(blas.NoTrans, blas.Trans, 1, blas64.General{Rows: nb, Cols: d, Stride: d, Data: a.pd}, a.x,
			0, blas64.General{Rows: nb, Cols: n, Stride: n, Data: a.eb})
	}

	// Backtracking on the curvature estimates L_i of the selected patterns.
	// With one pattern, Δŷ lives on its rows only, and only they are touched.
	var rows []int32
	if nb == 1 {
		rows = a.act[a.actOff[sel[0]]:a.actOff[sel[0]+1]]
	}
	lip := st.Lipschitz
	first := true
	dy := a.dy
	for try := 0; ; try++ {
		var rhs float64
		capped := true
		if rows == nil {
			for k := range dy {
				dy[k] = 0
			}
		}
		for b, i := range sel {
			c := 1 / (rho + lip[i])
			rhs += lip[i] / 2 * c * c * (a.qv[2*b] + a.qv[2*b+1])
			if lip[i] < a.lCap {
				capped = false
			}
			e := a.eb[b*n : (b+1)*n]
			if rows != nil {
				for _, k := range rows {
					dy[k] = -c * e[k]
				}
				continue
			}
			msk := a.dm[i*n : (i+1)*n]
			for k := range dy {
				dy[k] -= c * msk[k] * e[k]
			}
		}
		if a.bregman(rows) <= rhs || capped || try >= 60 {
			break
		}
		first = false
		for _, i := range sel {
			lip[i] *= 2
		}
	}

	// Accept: u_j −= c p_j, M u_j −= c ∇_j, ŷ += Δŷ.
	for b, i := range sel {
		c := 1 / (rho + lip[i])
		for side := 0; side < 2; side++ {
			j := i + side*np
			u, mu := st.U[j*d:(j+1)*d], a.mu[j*d:(j+1)*d]
			gr, pv := a.grad[(2*b+side)*d:(2*b+side+1)*d], a.pv[(2*b+side)*d:(2*b+side+1)*d]
			for q := range u {
				u[q] -= c * pv[q]
				mu[q] -= c * gr[q]
			}
		}
		if first {
			lip[i] = math.Max(lip[i]/2, a.lMin)
		}
	}
	if rows != nil {
		for _, k := range rows {
			a.yhat[k] += dy[k]
			a.lossGrad1(int(k))
		}
		return
	}
	for k, v := range dy {
		a.yhat[k] += v
	}
	a.ytilOK = false
}

// Step performs one ADMM-RBCD iteration and reports it. Apart from what
// gonum's parallel matrix products allocate internally, it allocates
// nothing.
func (a *RBCD) Step() Step {
	t0 := now()
	n, d, np := a.n, a.d, a.np
	st := &a.State
	pd2, pn2 := 2*np*d, 2*np*n
	gs := a.gsn[:pd2]

	// u-update, eq. (ADMM1), by RBCD.
	inner, res := a.uUpdate()

	// X u_j: the exact ŷ = F u of the next warm start, and G u.
	a.xRows(st.U)
	a.predict()
	for j := 0; j < 2*np; j++ {
		mul(a.xu[j*n:(j+1)*n], a.sg[(j%np)*n:(j%np+1)*n])
	}

	// v-update, eq. (vupdate), and λ, eq. (3.3c).
	copy(a.vOld, st.V)
	thr := a.Program.Beta / a.rho
	var ru, uu, vv float64
	for j := 0; j < 2*np; j++ {
		uj, lj, vj := st.U[j*d:(j+1)*d], st.Lambda[j*d:(j+1)*d], st.V[j*d:(j+1)*d]
		a.vNorm[j] = groupShrink(vj, uj, lj, thr)
		for q := range vj {
			r := uj[q] - vj[q]
			lj[q] += a.theta * r
			ru += r * r
			uu += uj[q] * uj[q]
			vv += vj[q] * vj[q]
		}
	}

	// s-update, eq. (supdate), and ν, eq. (3.3c).
	rs, ngu, ns := sUpdate(a.xu[:pn2], st.S, st.Nu, a.theta, 1)

	// Gᵀs⁺, Gᵀν⁺: the next s̃ and the dual residual.
	a.stackG()
	a.gtStack(a.gsNw)
	rd, nlam := dualResidual(st.V, a.vOld, a.gsNw, gs, st.Lambda)
	a.gsn, a.gsNw = a.gsNw, a.gsn
	st.Iter++

	step := residuals(st.Iter, a.rho, &a.Options, pd2, pn2, ru, rs, rd, uu, ngu, vv, ns, nlam)
	step.InnerSteps, step.InnerResidual = inner, res
	step.ConvexObjective, step.NonconvexObjective, step.Violation = a.objectives()
	step.Gap = math.Abs(step.NonconvexObjective - step.ConvexObjective)
	step.Seconds = now() - t0
	return step
}

// objectives returns l^{v,w}, l^{u,α} of the recovered network and the
// largest cone violation at the current v, from one product X v. It
// overwrites a.xu.
func (a *RBCD) objectives() (convex, nonconvex, viol float64) {
	a.xRows(a.State.V)
	return objectives(a.Program, a.xu, a.dm, a.sg, a.vNorm, a.yc, a.yn, a.n, a.np)
}

// SetupSeconds returns the wall time NewRBCD spent after validation:
// XᵀX, its Cholesky factor and the quantities derived from the state.
func (a *RBCD) SetupSeconds() float64 { return a.setupSeconds }

// Weights returns copies of the current (v_i, w_i) as P×d matrices.
func (a *RBCD) Weights() solvers.Weights { return weightsOf(a.State.V, a.np, a.d) }

// Network returns the two-layer network recovered from the current v
// (solvers.Program.Recover).
func (a *RBCD) Network() (*solvers.Network, error) { return a.Program.Recover(a.Weights()) }

// Variant returns VariantRBCD.
func (a *RBCD) Variant() Variant { return VariantRBCD }

// Iter returns the number of finished iterations.
func (a *RBCD) Iter() int { return a.State.Iter }

// Rho returns ρ (fixed).
func (a *RBCD) Rho() float64 { return a.rho }

// Checkpoint returns &a.State.
func (a *RBCD) Checkpoint() State { return &a.State }

// Converged reports whether the step passed the residual test of Boyd et
// al. (§3.3.1), PrimalResidual ≤ PrimalTol and DualResidual ≤ DualTol, and
// the u-update was accurate to the same tolerance, InnerResidual ≤ DualTol:
// with an inexact u-update the stationarity residual of eq. (4) is the dual
// residual plus the inner gradient.
func (a *RBCD) Converged(s Step) bool {
	return s.residualsConverged() && s.InnerResidual <= s.DualTol
}
