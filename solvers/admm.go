package solvers

import (
	"context"
	"errors"
	"fmt"
	"math"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/gonum/mat"
)

// ADMMOptions are the parameters of the ADMM algorithm.
type ADMMOptions struct {
	// Rho is the penalty ρ > 0 of the augmented Lagrangian; 0 means 0.1,
	// the value of most of the paper's experiments (table ADMMhyp). It is
	// fixed at construction: the factorization depends on it.
	Rho float64
	// Gamma is the dual step γ_a > 0 of eq. (3.3c); 0 means γ_a = ρ, the
	// paper's usual choice, for which the scaled duals take the standard
	// unit step γ_a/ρ = 1. NewADMM rejects γ_a/ρ ≥ (1+√5)/2, where ADMM
	// with a relaxed dual step is not guaranteed to converge (Glowinski).
	Gamma float64
	// MaxIter bounds SolveADMM; 0 means 1000. Step ignores it.
	MaxIter int
	// AbsTol and RelTol are the stopping tolerances of Boyd et al.
	// (Distributed Optimization … ADMM, §3.3.1); 0 means 1e-6 and 1e-5.
	// They are read at every Step, so they may be changed between steps.
	AbsTol, RelTol float64
	// Relax is the over-relaxation α ∈ (0, 2) of Eckstein and Bertsekas
	// (Boyd et al. §3.4.3), for the closed-form ADMM only: the v-, s- and
	// dual updates of eq. (vupdate), (supdate) and (3.3c) take
	//
	//	û = α u^{k+1} + (1 − α) v^k  and  ĝ = α G u^{k+1} + (1 − α) s^k
	//
	// in place of u^{k+1} and G u^{k+1}. 0 means 1, the paper's ADMM; α
	// between 1.5 and 1.8 often converges faster (docs/performance.md). It
	// needs the unit scaled dual step γ_a = ρ. The residuals and stopping
	// test are those of the unrelaxed iterate u^{k+1}.
	Relax float64
	// Route selects how the u-update system is solved: "woodbury" or
	// "direct" (a Cholesky factor formed once, exact solves), "cg" (no
	// factor: conjugate gradients preconditioned with blkdiag(I + XᵀX),
	// warm-started from the current iterate and stopped at the relative
	// residual 10⁻²/(k+1)² of iteration k, summable, so the inexact ADMM
	// converges like the exact one), or "" to choose by the flop model of
	// admmCosts and admmCGCost over MaxIter iterations.
	Route string
}

// ADMMState is the complete iteration state of the ADMM algorithm in the
// scaled form: the iteration count k and u^k, v^k, s^k, λ^k, ν^k, laid out as
// in the paper,
//
//	U, V, Lambda (2dP):  (u_1 … u_P, z_1 … z_P), (v_1 … v_P, w_1 … w_P), (λ_11 … λ_2P),
//	S, Nu (2nP):         (s_1 … s_P, t_1 … t_P), (ν_11 … ν_2P),
//
// each block contiguous (d or n entries). The fields are exported so the
// state serializes (JSON, gob); a solver resumed from a saved state takes
// exactly, bitwise, the steps of an uninterrupted run.
type ADMMState struct {
	Iter                int
	U, V, S, Lambda, Nu []float64
}

// ADMMStep is what one ADMM iteration reports, evaluated at the new iterate
// (u^{k+1}, v^{k+1}, s^{k+1}, λ^{k+1}, ν^{k+1}).
type ADMMStep struct {
	Iter int
	// ConvexObjective is l^{v,w} = ½‖Σ_i D_i X(v_i − w_i) − y‖² + β Σ_i (‖v_i‖ + ‖w_i‖)
	// at v^{k+1} (Program.Objective).
	ConvexObjective float64
	// NonconvexObjective is l^{u,α} = ½‖Σ_j (X u_j)_+ α_j − y‖² + (β/2) Σ_j (‖u_j‖² + α_j²)
	// of the network recovered from v^{k+1} by eq. (recover_weights) with
	// tolerance 0 (Program.Recover(·, 0)): the v-update's group
	// soft-threshold sets inactive groups exactly to zero, and a zero group
	// contributes nothing to either objective, so no threshold is needed.
	// With u_j = v_i/√‖v_i‖, α_j = ±√‖v_i‖ it equals
	// ½‖Σ_i (X v_i)_+ − (X w_i)_+ − y‖² + β Σ_i (‖v_i‖ + ‖w_i‖).
	NonconvexObjective float64
	// Gap is |l^{u,α} − l^{v,w}|; it is zero when v is feasible.
	Gap float64
	// PrimalResidual is ‖(u − v, Gu − s)‖₂; DualResidual is
	// ρ‖(v^{k+1} − v^k) + Gᵀ(s^{k+1} − s^k)‖₂ (Boyd et al. §3.3).
	PrimalResidual, DualResidual float64
	// PrimalTol and DualTol are the thresholds of the stopping test at this
	// step: √(2dP+2nP) AbsTol + RelTol max(‖(u, Gu)‖, ‖(v, s)‖) and
	// √(2dP) AbsTol + RelTol ρ‖λ + Gᵀν‖.
	PrimalTol, DualTol float64
	// Violation is max_{i,k} of the cone-constraint violations at v^{k+1}
	// (Program.Violation).
	Violation float64
	// Seconds is the wall time of this step.
	Seconds float64
}

// ADMM is the paper's Algorithm "ADMM" (eq. 3.3a–c, scaled dual form) for
// the convex program of eq. (convex_general) with the squared loss
// ℓ(ŷ, y) = ½‖ŷ − y‖², written as eq. (4):
//
//	minimize ℓ(F u, y) + β‖v‖_{2,1} + I_{≥0}(s)  subject to  u = v,  G u = s,
//
// with F = [F_1 … F_P  −F_1 … −F_P], F_i = D_i X, and
// G = blkdiag(G_1 … G_P, G_1 … G_P), G_i = (2D_i − I) X. One iteration is
//
//	u^{k+1} = (I + (1/ρ)FᵀF + GᵀG)⁻¹ ((1/ρ)Fᵀy + v^k − λ^k + Gᵀ(s^k − ν^k))   eq. (uupdate)
//	v_i^{k+1} = (1 − β/(ρ‖u_i^{k+1} + λ_i^k‖))_+ (u_i^{k+1} + λ_i^k)             eq. (vupdate), per group
//	s^{k+1} = (G u^{k+1} + ν^k)_+                                               eq. (supdate)
//	λ^{k+1} = λ^k + (γ_a/ρ)(u^{k+1} − v^{k+1}),  ν^{k+1} = ν^k + (γ_a/ρ)(G u^{k+1} − s^{k+1})   eq. (3.3c)
//
// starting, like the paper, from all variables zero.
//
// The u-update matrix A = I + (1/ρ)FᵀF + GᵀG is factored once (see
// admmSystem): GᵀG = blkdiag(XᵀX, …) and F = [Φ −Φ] reduce A exactly to P
// d×d systems with M = I + XᵀX and one dP×dP system B_P + (2/ρ)ΦᵀΦ, which is
// solved either through the Woodbury identity with the n×n matrix
// S = (ρ/2)I + K∘C (K = X M⁻¹ Xᵀ, C = Σ_i d_i d_iᵀ) or by a direct
// Cholesky factorization. Costs (flops, leading terms):
//
//	                  set-up                          per iteration
//	woodbury          2nd² + n²d + n³/3               20ndP + 2n² + 6Pd²
//	direct            2d² Σ_k c_k(c_k+1)/2 + (dP)³/3   16ndP + 2(dP)² + 2Pd²
//
// (c_k = number of patterns active at x_k, ≤ P), against the paper's
// O(nP + d²P²) per iteration for a dense 2dP×2dP Cholesky factor, whose
// set-up is (2dP)³/3 and which leaves out the O(ndP) products with F and G
// that every iteration needs (16ndP here: G u, Gᵀ[s; ν] and X v for the
// reported objective). All products with X are matrix-matrix products on
// the 2P (or 4P) vectors stacked as rows. The factor takes 8n² bytes
// (woodbury; the lower half is touched) or 8(dP)² bytes (direct). With
// Route "" the route of least set-up + MaxIter × iteration cost is taken.
// Measured on 2 cores (pure-Go gonum BLAS / OpenBLAS), MNIST 2 vs 8 size
// n = 11809, d = 784, P = 24 (woodbury): set-up 55 s / 7.6 s, an iteration
// 0.51 s / 0.15 s, 0.9 GB of memory; n = 11809, d = 100, P = 8 (direct):
// set-up 0.33 s / 0.09 s, an iteration 16 ms / 9 ms.
//
// The solver is not safe for concurrent use; the Program must not change
// after NewADMM, nor State between steps (to start from another state, call
// NewADMM with it). Resuming is exact within one build (pure Go or
// OpenBLAS); with gonum's BLAS it does not depend on the number of threads.
type ADMM struct {
	Program *Program
	Options ADMMOptions
	State   ADMMState

	n, d, np     int
	rho, theta   float64 // ρ and the scaled dual step γ_a/ρ
	alpha        float64 // over-relaxation α (1: none)
	sys          *admmSystem
	setupSeconds float64

	x     blas64.General
	sg    []float64 // P×n: 2D_i[k] − 1
	fty   []float64 // 2P×d: (1/ρ)Fᵀy
	b     []float64 // 2P×d: right-hand side, then u
	xu    []float64 // 2P×n: X u_j, then G u; then X v_j
	stk   []float64 // 4P×n: rows G_j-weighted s_j, then ν_j
	gsn   []float64 // 4P×d: Gᵀs (rows 0…2P−1), Gᵀν (rows 2P…4P−1) at the current state
	gsNew []float64 // 4P×d: the same at the new state
	gt    []float64 // d×4P: Gᵀ[s; ν] as the product gives it
	gw    []float64 // split-k workspace of that product
	vOld  []float64 // 2P×d
	uHat  []float64 // 2P×d: α u + (1 − α) v^k when α ≠ 1 (else u itself)
	vNorm []float64 // 2P
	yc    []float64 // n: Σ_i D_i X (v_i − w_i)
	yn    []float64 // n: Σ_i (X v_i)_+ − (X w_i)_+

	prof admmIterProfile
}

// admmIterProfile accumulates the wall time of the two heavy parts of Step,
// for benchmarks: the u-solve and the products with X (G u, Gᵀ[s; ν], X v).
type admmIterProfile struct {
	solveSec, prodSec float64
}

// NewADMM validates p, factors the u-update system once and starts at zero,
// or continues from the saved state st.
func NewADMM(p *Program, o ADMMOptions, st *ADMMState) (*ADMM, error) {
	if p == nil {
		return nil, errors.New("solvers: ADMM: no program")
	}
	if err := p.Validate(); err != nil {
		return nil, err
	}
	if p.Loss != SquaredLoss {
		return nil, fmt.Errorf("solvers: ADMM solves the squared loss only (closed-form u-update, eq. uupdate); the %v loss needs the ADMM-RBCD u-update (Algorithm RBCD), which is not implemented yet: use the interior-point method for it", p.Loss)
	}
	if o.Rho == 0 {
		o.Rho = 0.1
	}
	if !(o.Rho > 0) || math.IsInf(o.Rho, 0) {
		return nil, fmt.Errorf("solvers: ADMM penalty ρ = %v, need 0 < ρ < ∞", o.Rho)
	}
	if o.Gamma == 0 {
		o.Gamma = o.Rho
	}
	if !(o.Gamma > 0) || math.IsInf(o.Gamma, 0) {
		return nil, fmt.Errorf("solvers: ADMM dual step γ_a = %v, need γ_a > 0", o.Gamma)
	}
	if th := o.Gamma / o.Rho; th >= (1+math.Sqrt(5))/2 {
		return nil, fmt.Errorf("solvers: ADMM dual step γ_a/ρ = %v/%v = %.4g ≥ (1+√5)/2: ADMM need not converge; use γ_a ≤ ρ", o.Gamma, o.Rho, th)
	}
	if o.Relax == 0 {
		o.Relax = 1
	}
	if !(o.Relax > 0 && o.Relax < 2) {
		return nil, fmt.Errorf("solvers: ADMM over-relaxation α = %v, need 0 < α < 2", o.Relax)
	}
	if o.Relax != 1 && o.Gamma != o.Rho {
		return nil, fmt.Errorf("solvers: ADMM over-relaxation α = %v needs the unit dual step γ_a = ρ, got γ_a = %v, ρ = %v", o.Relax, o.Gamma, o.Rho)
	}
	if o.MaxIter < 0 {
		return nil, fmt.Errorf("solvers: ADMM MaxIter = %d < 0", o.MaxIter)
	}
	if o.MaxIter == 0 {
		o.MaxIter = 1000
	}
	if o.AbsTol < 0 || o.RelTol < 0 || math.IsNaN(o.AbsTol) || math.IsNaN(o.RelTol) {
		return nil, fmt.Errorf("solvers: ADMM tolerances AbsTol = %v, RelTol = %v, need ≥ 0", o.AbsTol, o.RelTol)
	}
	if o.AbsTol == 0 {
		o.AbsTol = 1e-6
	}
	if o.RelTol == 0 {
		o.RelTol = 1e-5
	}
	n, d, np := p.Dims()
	if st != nil {
		if err := st.check(n, d, np); err != nil {
			return nil, err
		}
	}
	t0 := admmNow()
	x := p.X.RawMatrix()
	sys, err := newADMMSystem(x, p.D, o.Rho, o.Route, o.MaxIter)
	if err != nil {
		return nil, err
	}
	o.Route = sys.route
	a := &ADMM{Program: p, Options: o, n: n, d: d, np: np, rho: o.Rho, theta: o.Gamma / o.Rho, alpha: o.Relax, sys: sys, x: x}
	a.sg = make([]float64, np*n)
	for q, v := range sys.dm {
		a.sg[q] = 2*v - 1
	}
	a.b = make([]float64, 2*np*d)
	a.xu = make([]float64, 2*np*n)
	a.stk = make([]float64, 4*np*n)
	a.gsn = make([]float64, 4*np*d)
	a.gsNew = make([]float64, 4*np*d)
	a.vOld = make([]float64, 2*np*d)
	if a.alpha != 1 {
		a.uHat = make([]float64, 2*np*d)
	}
	a.vNorm = make([]float64, 2*np)
	a.yc = make([]float64, n)
	a.yn = make([]float64, n)
	// (1/ρ)Fᵀy: rows (1/ρ)(D_i y)ᵀX for the u_i, and their negatives for the z_i.
	for i := 0; i < np; i++ {
		row, msk := a.xu[i*n:(i+1)*n], sys.dm[i*n:(i+1)*n]
		for k, yk := range p.Y {
			row[k] = yk * msk[k]
		}
	}
	a.fty = make([]float64, 2*np*d)
	a.gt = make([]float64, 4*np*d)
	a.gw = make([]float64, admmSplitSize(d, 4*np, n))
	admmGemmNT(1/o.Rho, sys.xt, blas64.General{Rows: np, Cols: n, Stride: n, Data: a.xu},
		blas64.General{Rows: d, Cols: np, Stride: np, Data: a.gt}, make([]float64, admmSplitSize(d, np, n)))
	admmTranspose(a.fty, a.gt[:np*d], d, np)
	for q := 0; q < np*d; q++ {
		a.fty[np*d+q] = -a.fty[q]
	}
	if st != nil {
		a.State = ADMMState{Iter: st.Iter, U: admmClone(st.U), V: admmClone(st.V), S: admmClone(st.S), Lambda: admmClone(st.Lambda), Nu: admmClone(st.Nu)}
	} else {
		a.State = ADMMState{U: make([]float64, 2*np*d), V: make([]float64, 2*np*d), S: make([]float64, 2*np*n),
			Lambda: make([]float64, 2*np*d), Nu: make([]float64, 2*np*n)}
	}
	// Gᵀs and Gᵀν of the starting state, by the same product Step uses, so
	// that a resumed run repeats an uninterrupted one bit for bit.
	a.stackG(a.State.S, a.State.Nu)
	a.gtStack(a.gsn)
	a.setupSeconds = admmNow() - t0
	return a, nil
}

func admmClone(x []float64) []float64 { return append([]float64(nil), x...) }

func (st *ADMMState) check(n, d, np int) error {
	if st.Iter < 0 {
		return fmt.Errorf("solvers: saved ADMM state has iteration %d < 0", st.Iter)
	}
	for _, f := range []struct {
		name string
		v    []float64
		want int
	}{{"U", st.U, 2 * d * np}, {"V", st.V, 2 * d * np}, {"Lambda", st.Lambda, 2 * d * np}, {"S", st.S, 2 * n * np}, {"Nu", st.Nu, 2 * n * np}} {
		if len(f.v) != f.want {
			return fmt.Errorf("solvers: saved ADMM state has %d entries in %s, the program (n=%d, d=%d, P=%d) needs %d", len(f.v), f.name, n, d, np, f.want)
		}
		for q, v := range f.v {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return fmt.Errorf("solvers: saved ADMM state has %s[%d] = %v", f.name, q, v)
			}
		}
	}
	return nil
}

// stackG fills a.stk with the rows (2D_j − I) s_j and (2D_j − I) ν_j.
func (a *ADMM) stackG(s, nu []float64) { admmStackG(a.stk, a.sg, s, nu, a.n, a.np) }

// admmSUpdate performs eq. (supdate) and the ν step of eq. (3.3c) from
// gu = G u, over-relaxed by α (ADMMOptions.Relax; 1: none): with
// ĝ = α gu + (1 − α) s, s = (ĝ + ν)_+, ν += θ(ĝ − s); it returns ‖gu − s‖²,
// ‖gu‖² and ‖s‖² for the stopping test.
func admmSUpdate(gu, s, nu []float64, theta, alpha float64) (rs, ngu, ns float64) {
	s, nu = s[:len(gu)], nu[:len(gu)]
	for q, g := range gu {
		gh := g
		if alpha != 1 {
			gh = alpha*g + (1-alpha)*s[q]
		}
		sq := gh + nu[q]
		if sq < 0 {
			sq = 0
		}
		r := g - sq
		nu[q] += theta * (gh - sq)
		s[q] = sq
		rs += r * r
		ngu += g * g
		ns += sq * sq
	}
	return rs, ngu, ns
}

// admmDualResidual returns ‖(v − vOld) + (Gᵀs)_new − (Gᵀs)_old‖² and
// ‖λ + (Gᵀν)_new‖², the squared norms of the dual residual (over ρ) and of
// the scaled dual term of the stopping test; gNew and gOld hold Gᵀs (rows
// 0…2P−1) then Gᵀν (the split ADMM adds its Fᵀq and Fᵀμ).
func admmDualResidual(v, vOld, gNew, gOld, lam []float64) (rd, nlam float64) {
	m := len(v)
	gs, gsN, gnN := gOld[:m], gNew[:m], gNew[m:2*m]
	for q := range v {
		r := v[q] - vOld[q] + gsN[q] - gs[q]
		rd += r * r
		y := lam[q] + gnN[q]
		nlam += y * y
	}
	return rd, nlam
}

// admmStackG fills stk (4P×n) with the rows (2D_j − I) s_j (rows 0…2P−1)
// and (2D_j − I) ν_j (rows 2P…4P−1), sg (P×n) holding the signs 2d_ik − 1.
func admmStackG(stk, sg, s, nu []float64, n, np int) {
	half := 2 * np * n
	for j := 0; j < 2*np; j++ {
		sgj := sg[(j%np)*n : (j%np+1)*n]
		sj, nj := s[j*n:(j+1)*n], nu[j*n:(j+1)*n]
		ds, dn := stk[j*n:(j+1)*n], stk[half+j*n:half+(j+1)*n]
		for k, g := range sgj {
			ds[k] = g * sj[k]
			dn[k] = g * nj[k]
		}
	}
}

// gtStack sets dst (4P×d) to the rows of a.stk times X: G_jᵀ s_j, G_jᵀ ν_j,
// computed as Xᵀ stkᵀ (d×4P, inner dimension n) and transposed.
func (a *ADMM) gtStack(dst []float64) {
	admmGemmNT(1, a.sys.xt, blas64.General{Rows: 4 * a.np, Cols: a.n, Stride: a.n, Data: a.stk},
		blas64.General{Rows: a.d, Cols: 4 * a.np, Stride: 4 * a.np, Data: a.gt}, a.gw)
	admmTranspose(dst, a.gt, a.d, 4*a.np)
}

// xRows sets dst (2P×n) to the rows (X w_j)ᵀ for the 2P rows w_j of w (2P×d),
// as the product w Xᵀ.
func (a *ADMM) xRows(dst, w []float64) {
	blas64.Gemm(blas.NoTrans, blas.NoTrans, 1,
		blas64.General{Rows: 2 * a.np, Cols: a.d, Stride: a.d, Data: w}, a.sys.xt,
		0, blas64.General{Rows: 2 * a.np, Cols: a.n, Stride: a.n, Data: dst})
}

// SetupSeconds returns the wall time NewADMM spent (validation excluded),
// mostly the factorization of the u-update system.
func (a *ADMM) SetupSeconds() float64 { return a.setupSeconds }

// Route returns the route that solves the u-update system: "woodbury",
// "direct" or "cg".
func (a *ADMM) Route() string { return a.sys.route }

// Step performs one full ADMM iteration (eq. 3.3a–c) and reports it. Apart
// from what gonum's parallel matrix products allocate internally, it
// allocates nothing, the objective evaluation included.
func (a *ADMM) Step() ADMMStep {
	t0 := admmNow()
	n, d, np := a.n, a.d, a.np
	st := &a.State
	pd2, pn2 := 2*np*d, 2*np*n
	gs, gn := a.gsn[:pd2], a.gsn[pd2:]

	// u-update, eq. (uupdate).
	b := a.b
	for q := range b {
		b[q] = a.fty[q] + st.V[q] - st.Lambda[q] + gs[q] - gn[q]
	}
	t1 := admmNow()
	a.sys.solve(b, st.U, st.Iter)
	copy(st.U, b)

	// G u: rows (2D_j − I) X u_j.
	t2 := admmNow()
	a.prof.solveSec += t2 - t1
	a.xRows(a.xu, st.U)
	a.prof.prodSec += admmNow() - t2
	for j := 0; j < 2*np; j++ {
		admmMul(a.xu[j*n:(j+1)*n], a.sg[(j%np)*n:(j%np+1)*n])
	}

	// v-update, eq. (vupdate): group soft-threshold of û + λ, where
	// û = α u + (1 − α) v^k is u itself without over-relaxation.
	copy(a.vOld, st.V)
	uh := st.U
	if a.alpha != 1 {
		uh = a.uHat
		for q, u := range st.U {
			uh[q] = a.alpha*u + (1-a.alpha)*a.vOld[q]
		}
	}
	thr := a.Program.Beta / a.rho
	var ru, uu, vv float64 // ‖u − v‖², ‖u‖², ‖v‖²
	for j := 0; j < 2*np; j++ {
		uj, hj, lj, vj := st.U[j*d:(j+1)*d], uh[j*d:(j+1)*d], st.Lambda[j*d:(j+1)*d], st.V[j*d:(j+1)*d]
		a.vNorm[j] = groupShrink(vj, hj, lj, thr)
		// Dual update for λ, eq. (3.3c).
		for q := range vj {
			r := uj[q] - vj[q]
			lj[q] += a.theta * (hj[q] - vj[q])
			ru += r * r
			uu += uj[q] * uj[q]
			vv += vj[q] * vj[q]
		}
	}

	// s-update, eq. (supdate), and the dual update for ν, eq. (3.3c).
	rs, ngu, ns := admmSUpdate(a.xu[:pn2], st.S, st.Nu, a.theta, a.alpha) // ‖Gu − s‖², ‖Gu‖², ‖s‖²

	// Gᵀs⁺ and Gᵀν⁺ in one product; they are the next right-hand side.
	a.stackG(st.S, st.Nu)
	t3 := admmNow()
	a.gtStack(a.gsNew)
	a.prof.prodSec += admmNow() - t3
	rd, nlam := admmDualResidual(st.V, a.vOld, a.gsNew, gs, st.Lambda)
	a.gsn, a.gsNew = a.gsNew, a.gsn
	st.Iter++

	o := &a.Options
	step := ADMMStep{
		Iter:           st.Iter,
		PrimalResidual: math.Sqrt(ru + rs),
		DualResidual:   a.rho * math.Sqrt(rd),
		PrimalTol:      math.Sqrt(float64(pd2+pn2))*o.AbsTol + o.RelTol*math.Sqrt(math.Max(uu+ngu, vv+ns)),
		DualTol:        math.Sqrt(float64(pd2))*o.AbsTol + o.RelTol*a.rho*math.Sqrt(nlam),
	}
	step.ConvexObjective, step.NonconvexObjective, step.Violation = a.objectives()
	step.Gap = math.Abs(step.NonconvexObjective - step.ConvexObjective)
	step.Seconds = admmNow() - t0
	return step
}

// objectives returns l^{v,w}, l^{u,α} of the recovered network and the
// largest cone-constraint violation at the current v, from one product X v.
func (a *ADMM) objectives() (convex, nonconvex, viol float64) {
	t0 := admmNow()
	a.xRows(a.xu, a.State.V)
	a.prof.prodSec += admmNow() - t0
	return admmObjectives(a.Program, a.xu, a.sys.dm, a.sg, a.vNorm, a.yc, a.yn, a.n, a.np)
}

// admmObjectives returns the objectives l^{v,w} and l^{u,α} (of the network
// recovered from v) and the largest cone violation max_{j,k} −(2d_ik − 1)(X v_j)_k,
// from the rows xv (2P×n) = (X v_j)ᵀ, the masks dm and signs sg (P×n:
// d_ik and 2d_ik − 1), and the group norms ‖v_j‖ (a zero group contributes
// nothing). yc and yn (n) are scratch: Σ_i D_i X(v_i − w_i) and
// Σ_i (X v_i)_+ − (X w_i)_+.
func admmObjectives(p *Program, xv, dm, sg, vNorm, yc, yn []float64, n, np int) (convex, nonconvex, viol float64) {
	for k := range yc {
		yc[k], yn[k] = 0, 0
	}
	for j := 0; j < 2*np; j++ {
		if vNorm[j] == 0 {
			continue // X v_j = 0 exactly: no contribution, no violation
		}
		i := j % np
		row, msk, sgn := xv[j*n:(j+1)*n], dm[i*n:(i+1)*n], sg[i*n:(i+1)*n]
		sign := 1.0
		if j >= np {
			sign = -1
		}
		for k, v := range row {
			yc[k] += sign * msk[k] * v
			if v > 0 {
				yn[k] += sign * v
			}
			if w := -sgn[k] * v; w > viol {
				viol = w
			}
		}
	}
	var reg float64
	for _, v := range vNorm {
		reg += v
	}
	reg *= p.Beta
	return p.Loss.Value(yc, p.Y) + reg, p.Loss.Value(yn, p.Y) + reg, viol
}

// admmMul sets t_k ← t_k m_k.
func admmMul(t, m []float64) {
	m = m[:len(t)]
	for k := range t {
		t[k] *= m[k]
	}
}

// Weights returns copies of the current (v_i, w_i) as P×d matrices.
func (a *ADMM) Weights() Weights { return admmWeights(a.State.V, a.np, a.d) }

// admmWeights copies the stacked groups v (2P×d: v_1 … v_P, w_1 … w_P) into
// Weights.
func admmWeights(v []float64, np, d int) Weights {
	pd := np * d
	return Weights{
		V: mat.NewDense(np, d, admmClone(v[:pd])),
		W: mat.NewDense(np, d, admmClone(v[pd:2*pd])),
	}
}

// Network returns the two-layer network recovered from the current v by
// eq. (recover_weights) with tolerance 0 (see ADMMStep.NonconvexObjective).
func (a *ADMM) Network() (*Network, error) { return a.Program.Recover(a.Weights(), 0) }

// Converged reports whether the step passed the residual test of Boyd et
// al. (§3.3.1): PrimalResidual ≤ PrimalTol and DualResidual ≤ DualTol.
func (a *ADMM) Converged(s ADMMStep) bool { return s.residualsConverged() }

// residualsConverged is the residual test of Boyd et al. (§3.3.1).
func (s ADMMStep) residualsConverged() bool {
	return s.Iter > 0 && s.PrimalResidual <= s.PrimalTol && s.DualResidual <= s.DualTol
}

// SolveADMM runs ADMM from zero, or from st, until Converged, MaxIter steps
// (counted in this call) or ctx is canceled, calling onStep (if not nil)
// after every step; onStep returning false stops early (for example on a
// validation metric). It returns the solver, whose State can be saved and
// resumed, and the steps taken. On cancellation the solver and the steps so
// far are returned with ctx's error.
func SolveADMM(ctx context.Context, p *Program, o ADMMOptions, st *ADMMState, onStep func(ADMMStep) bool) (*ADMM, []ADMMStep, error) {
	a, err := NewADMM(p, o, st)
	if err != nil {
		return nil, nil, err
	}
	hist, err := admmLoop(ctx, a.Options.MaxIter, a.Step, a.Converged, onStep)
	return a, hist, err
}

// admmLoop takes up to maxIter steps (0 means 1000), stopping after a
// converged step or one onStep (if not nil) rejects, or with ctx's error
// when ctx is done; it returns the steps taken.
func admmLoop[S any](ctx context.Context, maxIter int, step func() S, converged, onStep func(S) bool) ([]S, error) {
	if maxIter == 0 {
		maxIter = 1000
	}
	var hist []S
	for len(hist) < maxIter {
		if err := ctx.Err(); err != nil {
			return hist, err
		}
		s := step()
		hist = append(hist, s)
		if onStep != nil && !onStep(s) {
			break
		}
		if converged(s) {
			break
		}
	}
	return hist, nil
}

// groupShrink sets v = prox_{thr‖·‖₂}(u + λ) = (1 − thr/‖u + λ‖₂)_+ (u + λ),
// the group soft-threshold of the v-update (eq. vupdate), and returns ‖v‖₂.
func groupShrink(v, u, lam []float64, thr float64) float64 {
	var w2 float64
	for q := range v {
		w := u[q] + lam[q]
		v[q] = w
		w2 += w * w
	}
	nrm := math.Sqrt(w2)
	c := 0.0
	if nrm > thr {
		c = 1 - thr/nrm
	}
	for q := range v {
		v[q] *= c
	}
	return c * nrm
}

// CGIters returns the conjugate-gradient iterations of the last u-update
// (route "cg"; 0 for the factored routes).
func (a *ADMM) CGIters() int { return a.sys.cgIters }
