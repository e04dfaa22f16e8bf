package admm

import (
	"math"
	"slices"

	"github.com/convexnn/convexnn/solvers"
	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/gonum/mat"
)

// ClosedFormState is the complete iteration state of the ADMM algorithm in the
// scaled form: the iteration count k and u^k, v^k, s^k, λ^k, ν^k, laid out as
// in the paper,
//
//	U, V, Lambda (2dP):  (u_1 … u_P, z_1 … z_P), (v_1 … v_P, w_1 … w_P), (λ_11 … λ_2P),
//	S, Nu (2nP):         (s_1 … s_P, t_1 … t_P), (ν_11 … ν_2P),
//
// each block contiguous (d or n entries). The fields are exported so the
// state serializes (JSON, gob); a solver resumed from a saved state takes
// exactly, bitwise, the steps of an uninterrupted run.
type ClosedFormState struct {
	Iter                int
	U, V, S, Lambda, Nu []float64
	// Gram, when set, is the u-update system's Gram matrix, kept so that a
	// resumed solver skips computing it (see Gram).
	Gram *Gram
}

// ClosedForm is the paper's Algorithm "ADMM" (eq. 3.3a–c, scaled dual form) for
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
// system): GᵀG = blkdiag(XᵀX, …) and F = [Φ −Φ] reduce A exactly to P
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
// RouteAuto the route of least set-up + MaxIter × iteration cost is taken.
// Measured set-up and iteration times of both routes are in
// docs/performance.md.
//
// The solver is not safe for concurrent use; the Program must not change
// after NewClosedForm, nor State between steps (to start from another state, call
// NewClosedForm with it). Resuming is exact within one build (pure Go or
// OpenBLAS); with gonum's BLAS it does not depend on the number of threads.
type ClosedForm struct {
	Program *solvers.Program
	Options Options
	State   ClosedFormState

	n, d, np     int
	rho, theta   float64 // ρ and the scaled dual step γ_a/ρ
	alpha        float64 // over-relaxation α (1: none)
	sys          *system
	setupSeconds float64

	x     blas64.General
	sg    []float64 // P×n: 2D_i[k] − 1
	fty   []float64 // 2P×d: (1/ρ)Fᵀy
	b     []float64 // 2P×d: right-hand side, then u
	xu    []float64 // 2P×n: X u_j, then G u; then X v_j
	stk   []float64 // 4P×n: rows G_j-weighted s_j, then ν_j
	gsn   []float64 // 4P×d: Gᵀs (rows 0…2P−1), Gᵀν (rows 2P…4P−1) at the current state
	gsNew []float64 // 4P×d: the same at the new state
	gw    []float64 // split-k workspace of that product
	vOld  []float64 // 2P×d
	uHat  []float64 // 2P×d: α u + (1 − α) v^k when α ≠ 1 (else u itself)
	vNorm []float64 // 2P
	yc    []float64 // n: Σ_i D_i X (v_i − w_i)
	yn    []float64 // n: Σ_i (X v_i)_+ − (X w_i)_+

	prof iterProfile
}

// iterProfile accumulates the wall time of the two heavy parts of Step,
// for benchmarks: the u-solve and the products with X (G u, Gᵀ[s; ν], X v).
type iterProfile struct {
	solveSec, prodSec float64
}

// NewClosedForm validates p, factors the u-update system once and starts at zero,
// or continues from the saved state st.
func NewClosedForm(p *solvers.Program, o Options, st *ClosedFormState) (*ClosedForm, error) {
	o, err := prologue(p, VariantClosedForm, o, st)
	if err != nil {
		return nil, err
	}
	n, d, np := p.Dims()
	t0 := now()
	x := p.X.RawMatrix()
	var known *Gram
	if st != nil {
		known = st.Gram
	}
	sys, err := newSystem(x, p.D, o.Rho, o.Route, o.MaxIter, known, o.DataDigest)
	if err != nil {
		return nil, err
	}
	o.Route = sys.route
	a := &ClosedForm{Program: p, Options: o, n: n, d: d, np: np, rho: o.Rho, theta: o.Gamma / o.Rho, alpha: o.Relax, sys: sys, x: x}
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
	a.gw = make([]float64, splitSize(4*np, d, n))
	gemm(blas.NoTrans, blas.NoTrans, 1/o.Rho, blas64.General{Rows: np, Cols: n, Stride: n, Data: a.xu}, x,
		blas64.General{Rows: np, Cols: d, Stride: d, Data: a.fty[:np*d]}, make([]float64, splitSize(np, d, n)))
	for q := 0; q < np*d; q++ {
		a.fty[np*d+q] = -a.fty[q]
	}
	if st != nil {
		a.State = ClosedFormState{Iter: st.Iter, U: slices.Clone(st.U), V: slices.Clone(st.V), S: slices.Clone(st.S), Lambda: slices.Clone(st.Lambda), Nu: slices.Clone(st.Nu)}
	} else {
		a.State = ClosedFormState{U: make([]float64, 2*np*d), V: make([]float64, 2*np*d), S: make([]float64, 2*np*n),
			Lambda: make([]float64, 2*np*d), Nu: make([]float64, 2*np*n)}
	}
	// Gᵀs and Gᵀν of the starting state, by the same product Step uses, so
	// that a resumed run repeats an uninterrupted one bit for bit.
	a.stackG(a.State.S, a.State.Nu)
	a.gtStack(a.gsn)
	a.setupSeconds = now() - t0
	return a, nil
}

func (st *ClosedFormState) check(n, d, np int) error {
	return checkState(VariantClosedForm, st.Iter, nil, n, d, np, st.vectors(n, d, np))
}

// vectors are the state's vectors and their lengths for the program.
func (st *ClosedFormState) vectors(n, d, np int) []stateVector {
	return []stateVector{{"U", st.U, 2 * d * np}, {"V", st.V, 2 * d * np}, {"Lambda", st.Lambda, 2 * d * np}, {"S", st.S, 2 * n * np}, {"Nu", st.Nu, 2 * n * np}}
}

// stackG fills a.stk with the rows (2D_j − I) s_j and (2D_j − I) ν_j.
func (a *ClosedForm) stackG(s, nu []float64) { stackG(a.stk, a.sg, s, nu, a.n, a.np) }

// sUpdate performs eq. (supdate) and the ν step of eq. (3.3c) from
// gu = G u, over-relaxed by α (Options.Relax; 1: none): with
// ĝ = α gu + (1 − α) s, s = (ĝ + ν)_+, ν += θ(ĝ − s); it returns ‖gu − s‖²,
// ‖gu‖² and ‖s‖² for the stopping test.
func sUpdate(gu, s, nu []float64, theta, alpha float64) (rs, ngu, ns float64) {
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

// dualResidual returns ‖(v − vOld) + (Gᵀs)_new − (Gᵀs)_old‖² and
// ‖λ + (Gᵀν)_new‖², the squared norms of the dual residual (over ρ) and of
// the scaled dual term of the stopping test; gNew and gOld hold Gᵀs (rows
// 0…2P−1) then Gᵀν (the split ADMM adds its Fᵀq and Fᵀμ).
func dualResidual(v, vOld, gNew, gOld, lam []float64) (rd, nlam float64) {
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

// stackG fills stk (4P×n) with the rows (2D_j − I) s_j (rows 0…2P−1)
// and (2D_j − I) ν_j (rows 2P…4P−1), sg (P×n) holding the signs 2d_ik − 1.
func stackG(stk, sg, s, nu []float64, n, np int) {
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
// the product stk X (inner dimension n).
func (a *ClosedForm) gtStack(dst []float64) {
	gemm(blas.NoTrans, blas.NoTrans, 1, blas64.General{Rows: 4 * a.np, Cols: a.n, Stride: a.n, Data: a.stk}, a.x,
		blas64.General{Rows: 4 * a.np, Cols: a.d, Stride: a.d, Data: dst}, a.gw)
}

// xRows sets dst (2P×n) to the rows (X w_j)ᵀ for the 2P rows w_j of w (2P×d),
// as the product w Xᵀ.
func (a *ClosedForm) xRows(dst, w []float64) {
	blas64.Gemm(blas.NoTrans, blas.Trans, 1,
		blas64.General{Rows: 2 * a.np, Cols: a.d, Stride: a.d, Data: w}, a.x,
		0, blas64.General{Rows: 2 * a.np, Cols: a.n, Stride: a.n, Data: dst})
}

// SetupSeconds returns the wall time NewClosedForm spent (validation excluded),
// mostly the factorization of the u-update system.
func (a *ClosedForm) SetupSeconds() float64 { return a.setupSeconds }

// Route returns the route that solves the u-update system (never RouteAuto).
func (a *ClosedForm) Route() Route { return a.sys.route }

// Step performs one full ADMM iteration (eq. 3.3a–c) and reports it. Apart
// from what gonum's parallel matrix products allocate internally, it
// allocates nothing, the objective evaluation included.
func (a *ClosedForm) Step() Step {
	t0 := now()
	n, d, np := a.n, a.d, a.np
	st := &a.State
	pd2, pn2 := 2*np*d, 2*np*n
	gs, gn := a.gsn[:pd2], a.gsn[pd2:]

	// u-update, eq. (uupdate).
	b := a.b
	for q := range b {
		b[q] = a.fty[q] + st.V[q] - st.Lambda[q] + gs[q] - gn[q]
	}
	t1 := now()
	a.sys.solve(b, st.U, st.Iter)
	copy(st.U, b)

	// G u: rows (2D_j − I) X u_j.
	t2 := now()
	a.prof.solveSec += t2 - t1
	a.xRows(a.xu, st.U)
	a.prof.prodSec += now() - t2
	for j := 0; j < 2*np; j++ {
		mul(a.xu[j*n:(j+1)*n], a.sg[(j%np)*n:(j%np+1)*n])
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
	rs, ngu, ns := sUpdate(a.xu[:pn2], st.S, st.Nu, a.theta, a.alpha) // ‖Gu − s‖², ‖Gu‖², ‖s‖²

	// Gᵀs⁺ and Gᵀν⁺ in one product; they are the next right-hand side.
	a.stackG(st.S, st.Nu)
	t3 := now()
	a.gtStack(a.gsNew)
	a.prof.prodSec += now() - t3
	rd, nlam := dualResidual(st.V, a.vOld, a.gsNew, gs, st.Lambda)
	a.gsn, a.gsNew = a.gsNew, a.gsn
	st.Iter++

	step := residuals(st.Iter, a.rho, &a.Options, pd2, pn2, ru, rs, rd, uu, ngu, vv, ns, nlam)
	step.ConvexObjective, step.NonconvexObjective, step.Violation = a.objectives()
	step.Gap = math.Abs(step.NonconvexObjective - step.ConvexObjective)
	step.Seconds = now() - t0
	return step
}

// objectives returns l^{v,w}, l^{u,α} of the recovered network and the
// largest cone-constraint violation at the current v, from one product X v.
func (a *ClosedForm) objectives() (convex, nonconvex, viol float64) {
	t0 := now()
	a.xRows(a.xu, a.State.V)
	a.prof.prodSec += now() - t0
	return objectives(a.Program, a.xu, a.sys.dm, a.sg, a.vNorm, a.yc, a.yn, a.n, a.np)
}

// objectives returns the objectives l^{v,w} and l^{u,α} (of the network
// recovered from v) and the largest cone violation max_{j,k} −(2d_ik − 1)(X v_j)_k,
// from the rows xv (2P×n) = (X v_j)ᵀ, the masks dm and signs sg (P×n:
// d_ik and 2d_ik − 1), and the group norms ‖v_j‖ (a zero group contributes
// nothing). yc and yn (n) are scratch: Σ_i D_i X(v_i − w_i) and
// Σ_i (X v_i)_+ − (X w_i)_+.
func objectives(p *solvers.Program, xv, dm, sg, vNorm, yc, yn []float64, n, np int) (convex, nonconvex, viol float64) {
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

// mul sets t_k ← t_k m_k.
func mul(t, m []float64) {
	m = m[:len(t)]
	for k := range t {
		t[k] *= m[k]
	}
}

// Weights returns copies of the current (v_i, w_i) as P×d matrices.
func (a *ClosedForm) Weights() solvers.Weights { return weightsOf(a.State.V, a.np, a.d) }

// weights copies the stacked groups v (2P×d: v_1 … v_P, w_1 … w_P) into
// Weights.
func weightsOf(v []float64, np, d int) solvers.Weights {
	pd := np * d
	return solvers.Weights{
		V: mat.NewDense(np, d, slices.Clone(v[:pd])),
		W: mat.NewDense(np, d, slices.Clone(v[pd:2*pd])),
	}
}

// Network returns the two-layer network recovered from the current v
// (solvers.Program.Recover).
func (a *ClosedForm) Network() (*solvers.Network, error) { return a.Program.Recover(a.Weights()) }

// Converged reports whether the step passed the residual test of Boyd et
// al. (§3.3.1): PrimalResidual ≤ PrimalTol and DualResidual ≤ DualTol.
func (a *ClosedForm) Converged(s Step) bool { return s.residualsConverged() }

// Variant returns VariantClosedForm.
func (a *ClosedForm) Variant() Variant { return VariantClosedForm }

// Iter returns the number of finished iterations.
func (a *ClosedForm) Iter() int { return a.State.Iter }

// Rho returns ρ (fixed).
func (a *ClosedForm) Rho() float64 { return a.rho }

// Checkpoint returns &a.State, with the set-up's Gram matrix.
func (a *ClosedForm) Checkpoint() State {
	a.State.Gram = a.sys.gramState()
	return &a.State
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
