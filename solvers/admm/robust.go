package admm

import (
	"errors"
	"math"
	"slices"

	"github.com/convexnn/convexnn/solvers"
	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/gonum/mat"
)

// Robust is the first-order solver of the robust convex training
// programs of section "Convex Adversarial Training" for every loss: the
// hinge loss (eq. hinge_adv_D, eq. hinge_adv_D_lp), BCE (eq. convex_ce_adver),
// the squared loss (eq. SOCP3) and the logistic loss, for the ℓ_∞, ℓ₂ and ℓ₁
// perturbation sets (dual norms ‖·‖₁, ‖·‖₂, ‖·‖_∞). Notation as in
// solvers/robust.go: u_j (j = 1 … 2P) are the groups v_1 … v_P, w_1 … w_P
// with pattern i(j) and sign σ_j = ±1, S_i = 2D_i − I, f the perturbed
// features, N(·) = ‖(·)^f‖_* the dual norm of the raw-feature entries, and
// A the n×2P matrix
// A_kj = σ_j d_{i(j)k}, so that g_k = Σ_i d_ik (v_i − w_i) is row k of A U
// (U the 2P×d matrix of rows u_jᵀ). The program
//
//	minimize Σ_k ℓ_k(g_k) + β Σ_j ‖u_j‖₂  subject to  S_{i(j)} X u_j ≥ ε N(u_j) 1   (eq. robust_constraint)
//
// with the per-point worst-case terms of solvers.RobustPointLosses, written
// ℓ_k(g) = w h(φ_k(g)) (w = 1/n, or 1 for the squared loss),
//
//	hinge     h = (·)_+,   φ_k(g) = 1 − y_k x_kᵀg + ε N(g)
//	logistic  h = softplus, φ_k(g) = −y_k x_kᵀg + ε N(g)
//	BCE       h = softplus, φ_k(g) = a_k x_kᵀg + 2ε N(g),   a_k = 2(1 − 2y_k)
//	squared   h = ½(·)²,    φ_k(g) = |x_kᵀg − y_k| + ε N(g),
//
// is split into separable pieces with copies of u:
//
//	minimize β‖v‖_{2,1} + Σ_j I_K(s_j, r_j) + Σ_k ℓ_k(z_k)
//	subject to u = v,  u = r,  γ_G S_{i(j)} X u_j = s_j,  γ_Z A U = Z,
//
// K = {(s, r) ∈ Rⁿ × R^d : s_k ≥ γ_G ε N(r) for all k} the robust cone and
// γ_G, γ_Z constraint scalings. All constraints share one penalty ρ (scaled
// duals λ, κ, ν, μ), so the u-update
//
//	(2I + γ_G² (I ⊗ XᵀX) + γ_Z² (AᵀA ⊗ I)) u = v − λ + r − κ + γ_G Gᵀ(s − ν) + γ_Z Aᵀ(Z − M)
//
// does not depend on ρ. It is the Sylvester equation 2U + γ_Z² C U + γ_G² U H = B
// (C = AᵀA, 2P×2P; H = XᵀX, d×d), solved exactly from the eigendecompositions
// C = W Γ Wᵀ and H = Q Λ Qᵀ computed once: U = W [(Wᵀ B Q) ⊘ (2 + γ_Z² Γ_a + γ_G² Λ_b)] Qᵀ,
// O(P²d + Pd²) per iteration. Every other piece has a cheap exact prox:
//
//   - v: the group soft-threshold (eq. vupdate);
//   - (s_j, r_j): the projection onto K. With s_k = max(s⁰_k, t) and
//     r = prox_{Λ γ_G ε N}(r⁰), t = γ_G ε N(r), its optimality conditions
//     reduce to the scalar equation Λ = Σ_k (t(Λ) − s⁰_k)_+ whose right side
//     is nonincreasing in Λ ≥ 0: one monotone root per group;
//   - z_k: the prox of ℓ_k. Its solution is z = prox_{τ φ_k}(c) for the
//     τ = θ/ρ' with θ ∈ w ∂h(φ_k(z)), and φ_k(prox_{τ φ_k}(c)) is
//     nonincreasing in τ: one monotone root in θ (for the squared loss a
//     second, in the subgradient σ of |·| of the residual, inside it). The
//     prox of τ(a + bᵀg + ε' N(g)) is the prox of τε'N at c − τb: soft
//     threshold (ℓ₁), group shrink (ℓ₂) or c minus its projection onto the
//     ℓ₁ ball (ℓ_∞).
//
// The roots are found by safeguarded false position to machine precision.
// ρ is adapted by residual balancing as in Split (the scaled duals
// rescaled), with over-relaxation α = 1.6.
//
// Convergence. On degenerate instances (small β, where the optimal weights
// are large, and many robust constraints active) the tail is slow: the
// objective can stay well above the interior-point optimum after many
// thousands of iterations (measured cases: docs/performance.md). The
// iterate meets the robust constraints only to the primal residual, so a
// per-point certificate (solvers.CertifiedPoints), which needs them
// exactly, may fail at points whose margin is within that. The stopping
// test is Boyd et al.'s (§3.3.1, o.AbsTol, o.RelTol, defaults 1e-6, 1e-5).
//
// Per-iteration cost: products of the 2P×d weights with X (three: X u, X v
// for the reported objectives, and the 4P×n stack Gᵀ(s, ν)) and with A (four:
// A U, A V, Aᵀ Z, Aᵀ M), 14ndP flops each pair, the Sylvester solve and
// O(n(d + P)) prox work. Memory: Z and M are n×d.
//
// In the reported steps, ConvexObjective is solvers.RobustObjective at v,
// Violation is solvers.RobustViolation at v, NonconvexObjective the clean
// objective l^{u,α} of the network recovered from v and Gap its distance to
// the clean l^{v,w} (Program.Objective) at v. With ε = 0 the program is the
// standard one (the per-point copies z_k then cost more than Split's
// scalar q_k). Weights returns the v iterate.
//
// The solver is not safe for concurrent use. A solver rebuilt from a saved
// State takes bitwise the same steps as an uninterrupted run.
type Robust struct {
	Program      *solvers.Program
	Perturbation solvers.Perturbation
	Options      Options
	State        RobustState

	r            *robustWork
	setupSeconds float64
}

// RobustState is the iteration state of Robust: the iteration count, the
// current ρ and u, v, λ, r, κ (2P×d), s, ν (2P×n), Z, M (n×d), row-major.
type RobustState struct {
	Iter                   int
	Rho                    float64
	U, V, Lambda, R, Kappa []float64
	S, Nu                  []float64
	Z, M                   []float64
}

// NewRobust validates p, pert and o, computes the eigendecompositions
// of the u-update and starts from zero or from st. ρ starts at o.Rho; 0
// means 0.1 for the squared loss (a sum over points) and 0.03 for the mean
// losses (hinge, BCE, logistic), which converged faster on the robust
// CIFAR-10 program of Table 5 and on most, not all, test instances
// (docs/performance.md).
func NewRobust(p *solvers.Program, pert solvers.Perturbation, o Options, st *RobustState) (*Robust, error) {
	if err := pert.Validate(); err != nil {
		return nil, err
	}
	o, err := prologue(p, VariantRobust, o, st)
	if err != nil {
		return nil, err
	}
	t0 := now()
	r, err := newRobustWork(p, pert, o.Rho)
	if err != nil {
		return nil, err
	}
	if st != nil {
		r.load(st)
	}
	a := &Robust{Program: p, Perturbation: pert, Options: o, r: r, setupSeconds: now() - t0}
	a.sync()
	return a, nil
}

func (st *RobustState) check(n, d, np int) error {
	return checkState(VariantRobust, st.Iter, &st.Rho, n, d, np, st.vectors(n, d, np))
}

// vectors are the state's vectors and their lengths for the program.
func (st *RobustState) vectors(n, d, np int) []stateVector {
	pd, pn := 2*np*d, 2*np*n
	return []stateVector{
		{"U", st.U, pd}, {"V", st.V, pd}, {"Lambda", st.Lambda, pd}, {"R", st.R, pd}, {"Kappa", st.Kappa, pd},
		{"S", st.S, pn}, {"Nu", st.Nu, pn}, {"Z", st.Z, n * d}, {"M", st.M, n * d}}
}

// sync exposes the solver's vectors in State (shared, not copied).
func (a *Robust) sync() { a.State = a.r.state() }

// state returns the working vectors as a RobustState (shared, not copied).
func (r *robustWork) state() RobustState {
	return RobustState{Iter: r.iter, Rho: r.rho, U: r.u, V: r.v, Lambda: r.lam, R: r.r, Kappa: r.kap,
		S: r.s, Nu: r.nu, Z: r.z, M: r.mm}
}

// Step performs one iteration (and, at its scheduled iterations, the
// residual-balancing update of ρ for the next one).
func (a *Robust) Step() Step {
	s := balancedStep(a.r, a.Options)
	a.sync()
	return s
}

// Rho returns the current penalty ρ.
func (a *Robust) Rho() float64 { return a.r.rho }

// Weights returns a copy of the v iterate.
func (a *Robust) Weights() solvers.Weights { return weightsOf(a.r.v, a.r.np, a.r.d) }

// Converged reports whether the step passed the residual stopping test.
func (a *Robust) Converged(s Step) bool { return s.residualsConverged() }

// Network returns the network recovered from the v iterate
// (solvers.Program.Recover).
func (a *Robust) Network() (*solvers.Network, error) { return a.Program.Recover(a.Weights()) }

// Variant returns VariantRobust.
func (a *Robust) Variant() Variant { return VariantRobust }

// Iter returns the number of finished iterations.
func (a *Robust) Iter() int { return a.r.iter }

// SetupSeconds returns the wall time NewRobust spent on the
// eigendecompositions of the u-update.
func (a *Robust) SetupSeconds() float64 { return a.setupSeconds }

// Checkpoint returns &a.State.
func (a *Robust) Checkpoint() State { return &a.State }

// robustWork is the working state of Robust.
type robustWork struct {
	p         *solvers.Program
	kind      solvers.Norm
	eps       float64
	n, d, f   int
	np, m     int // P and 2P
	gG, gZ    float64
	rho, rho0 float64
	iter      int

	x, xt  blas64.General // X (n×d), Xᵀ (d×n)
	a, at  blas64.General // A (n×2P), Aᵀ (2P×n)
	wEig   blas64.General // W (2P×2P)
	qEig   blas64.General // Q (d×d)
	inv    []float64      // 2P×d: 1/(2 + γ_Z² Γ_a + γ_G² Λ_b)
	dm, sg []float64      // P×n: d_ik and 2d_ik − 1

	u, v, lam, r, kap []float64 // 2P×d
	s, nu             []float64 // 2P×n
	z, mm             []float64 // n×d
	gs, gn            []float64 // 2P×d: Gᵀs, Gᵀν (scaled by γ_G)
	az, am            []float64 // 2P×d: Aᵀz, Aᵀμ (scaled by γ_Z)
	gsN, azN          []float64 // 2P×d: the new Gᵀs, Aᵀz
	stk               []float64 // 4P×n: rows S s_j and S ν_j
	stkOut            []float64 // 4P×d
	b, t1, t2         []float64 // 2P×d and 2P×2P scratch
	xu                []float64 // 2P×n
	zu                []float64 // n×d
	vOld, rOld        []float64 // 2P×d
	vNorm             []float64 // 2P
	yc, yn            []float64 // n
	wk, wk2, sortBuf  []float64 // d scratch
	hat               []float64 // d scratch
}

func newRobustWork(p *solvers.Program, pert solvers.Perturbation, rho float64) (*robustWork, error) {
	n, d, np := p.Dims()
	kind := pert.Norm.Canonical()
	f := solvers.PerturbedFeatures(d, p.Bias)
	r := &robustWork{p: p, kind: kind, eps: pert.Eps, n: n, d: d, f: f, np: np, m: 2 * np, rho: rho, rho0: rho}
	m := r.m
	xr := p.X.RawMatrix()
	r.x = blas64.General{Rows: n, Cols: d, Stride: d, Data: make([]float64, n*d)}
	for k := 0; k < n; k++ {
		copy(r.x.Data[k*d:(k+1)*d], xr.Data[k*xr.Stride:k*xr.Stride+d])
	}
	r.xt = blas64.General{Rows: d, Cols: n, Stride: n, Data: make([]float64, d*n)}
	transpose(r.xt.Data, r.x.Data, n, d)
	r.dm = make([]float64, np*n)
	r.sg = make([]float64, np*n)
	r.a = blas64.General{Rows: n, Cols: m, Stride: m, Data: make([]float64, n*m)}
	r.at = blas64.General{Rows: m, Cols: n, Stride: n, Data: make([]float64, m*n)}
	for i, pat := range p.D {
		for k, on := range pat {
			r.sg[i*n+k] = -1
			if on {
				r.dm[i*n+k] = 1
				r.sg[i*n+k] = 1
				r.a.Data[k*m+i] = 1
				r.a.Data[k*m+np+i] = -1
				r.at.Data[i*n+k] = 1
				r.at.Data[(np+i)*n+k] = -1
			}
		}
	}
	// H = XᵀX and C = AᵀA, and their eigendecompositions.
	h := gram(r.xt, r.x)
	c := gram(r.at, r.a)
	var eh, ec mat.EigenSym
	if !eh.Factorize(h, true) {
		return nil, errors.New("admm: robust ADMM: eigendecomposition of XᵀX failed")
	}
	if !ec.Factorize(c, true) {
		return nil, errors.New("admm: robust ADMM: eigendecomposition of AᵀA failed")
	}
	lh, lc := eh.Values(nil), ec.Values(nil)
	var qd, wd mat.Dense
	eh.VectorsTo(&qd)
	ec.VectorsTo(&wd)
	r.qEig = blas64.General{Rows: d, Cols: d, Stride: d, Data: make([]float64, d*d)}
	for i := 0; i < d; i++ {
		copy(r.qEig.Data[i*d:(i+1)*d], qd.RawRowView(i))
	}
	r.wEig = blas64.General{Rows: m, Cols: m, Stride: m, Data: make([]float64, m*m)}
	for i := 0; i < m; i++ {
		copy(r.wEig.Data[i*m:(i+1)*m], wd.RawRowView(i))
	}
	// Constraint scalings: γ_G = 1/√λ_max(XᵀX/n)… chosen so that the rows of
	// γ_G G and γ_Z Z have about unit norm on average.
	r.gG = robustScale(lh, n)
	r.gZ = robustScale(lc, n)
	r.inv = make([]float64, m*d)
	for a := 0; a < m; a++ {
		for b := 0; b < d; b++ {
			r.inv[a*d+b] = 1 / (2 + r.gZ*r.gZ*math.Max(lc[a], 0) + r.gG*r.gG*math.Max(lh[b], 0))
		}
	}
	md, mn := m*d, m*n
	for _, s := range []*[]float64{&r.u, &r.v, &r.lam, &r.r, &r.kap, &r.gs, &r.gn, &r.az, &r.am, &r.gsN, &r.azN, &r.b, &r.t2, &r.vOld, &r.rOld} {
		*s = make([]float64, md)
	}
	r.t1 = make([]float64, max(md, m*m))
	r.s = make([]float64, mn)
	r.nu = make([]float64, mn)
	r.xu = make([]float64, mn)
	r.stk = make([]float64, 2*mn)
	r.stkOut = make([]float64, 2*md)
	r.z = make([]float64, n*d)
	r.mm = make([]float64, n*d)
	r.zu = make([]float64, n*d)
	r.vNorm = make([]float64, m)
	r.yc = make([]float64, n)
	r.yn = make([]float64, n)
	r.wk = make([]float64, d)
	r.wk2 = make([]float64, d)
	r.hat = make([]float64, d)
	r.sortBuf = make([]float64, d)
	return r, nil
}

// gram returns the symmetric product bt·b (bt = bᵀ stored row-major).
func gram(bt, b blas64.General) *mat.SymDense {
	k := bt.Rows
	g := blas64.General{Rows: k, Cols: k, Stride: k, Data: make([]float64, k*k)}
	blas64.Gemm(blas.NoTrans, blas.NoTrans, 1, bt, b, 0, g)
	return mat.NewSymDense(k, g.Data)
}

// robustScale returns 1/√(trace/n') for the eigenvalues of a Gram matrix
// of n rows: the scaling that makes the average squared row norm of the
// scaled operator 1 (1 when the trace is 0).
func robustScale(eig []float64, n int) float64 {
	var t float64
	for _, l := range eig {
		t += math.Max(l, 0)
	}
	if t <= 0 {
		return 1
	}
	return 1 / math.Sqrt(t/float64(n))
}

// load copies a saved state in and recomputes the products derived from it.
func (r *robustWork) load(st *RobustState) {
	cur := r.state()
	loadVectors(cur.vectors(r.n, r.d, r.np), st.vectors(r.n, r.d, r.np))
	r.iter, r.rho = st.Iter, st.Rho
	r.products(r.gs, r.az)
}

// products sets gs, gn (Gᵀs, Gᵀν, each times γ_G) and az, r.am (Aᵀz, Aᵀμ,
// times γ_Z) from the current s, ν, Z, M.
func (r *robustWork) products(gs, az []float64) {
	n, m, d := r.n, r.m, r.d
	half := m * n
	for j := 0; j < m; j++ {
		sgj := r.sg[(j%r.np)*n : (j%r.np+1)*n]
		sj, nj := r.s[j*n:(j+1)*n], r.nu[j*n:(j+1)*n]
		ds, dn := r.stk[j*n:(j+1)*n], r.stk[half+j*n:half+(j+1)*n]
		for k, g := range sgj {
			ds[k] = g * sj[k]
			dn[k] = g * nj[k]
		}
	}
	blas64.Gemm(blas.NoTrans, blas.NoTrans, r.gG,
		blas64.General{Rows: 2 * m, Cols: n, Stride: n, Data: r.stk}, r.x,
		0, blas64.General{Rows: 2 * m, Cols: d, Stride: d, Data: r.stkOut})
	copy(gs, r.stkOut[:m*d])
	copy(r.gn, r.stkOut[m*d:])
	nd := blas64.General{Rows: n, Cols: d, Stride: d}
	out := blas64.General{Rows: m, Cols: d, Stride: d}
	nd.Data, out.Data = r.z, az
	blas64.Gemm(blas.NoTrans, blas.NoTrans, r.gZ, r.at, nd, 0, out)
	nd.Data, out.Data = r.mm, r.am
	blas64.Gemm(blas.NoTrans, blas.NoTrans, r.gZ, r.at, nd, 0, out)
}

// solveU overwrites b (2P×d) with the solution U of the Sylvester equation
// 2U + γ_Z² C U + γ_G² U H = B.
func (r *robustWork) solveU(b []float64) {
	m, d := r.m, r.d
	md := blas64.General{Rows: m, Cols: d, Stride: d}
	t1 := blas64.General{Rows: m, Cols: d, Stride: d, Data: r.t1[:m*d]}
	t2 := blas64.General{Rows: m, Cols: d, Stride: d, Data: r.t2}
	md.Data = b
	blas64.Gemm(blas.Trans, blas.NoTrans, 1, r.wEig, md, 0, t1)
	blas64.Gemm(blas.NoTrans, blas.NoTrans, 1, t1, r.qEig, 0, t2)
	for q, v := range r.inv {
		t2.Data[q] *= v
	}
	blas64.Gemm(blas.NoTrans, blas.Trans, 1, t2, r.qEig, 0, t1)
	blas64.Gemm(blas.NoTrans, blas.NoTrans, 1, r.wEig, t1, 0, md)
}

func (r *robustWork) step(absTol, relTol float64) Step {
	t0 := now()
	n, d, m := r.n, r.d, r.m
	md, mn := m*d, m*n

	// u-update.
	for q := range r.b {
		r.b[q] = r.v[q] - r.lam[q] + r.r[q] - r.kap[q] + r.gs[q] - r.gn[q] + r.az[q] - r.am[q]
	}
	r.solveU(r.b)
	copy(r.u, r.b)

	// γ_G G u (rows of xu) and γ_Z A U (zu).
	blas64.Gemm(blas.NoTrans, blas.NoTrans, 1,
		blas64.General{Rows: m, Cols: d, Stride: d, Data: r.u}, r.xt,
		0, blas64.General{Rows: m, Cols: n, Stride: n, Data: r.xu})
	for j := 0; j < m; j++ {
		sgj := r.sg[(j%r.np)*n : (j%r.np+1)*n]
		row := r.xu[j*n : (j+1)*n]
		for k, g := range sgj {
			row[k] *= r.gG * g
		}
	}
	blas64.Gemm(blas.NoTrans, blas.NoTrans, r.gZ, r.a,
		blas64.General{Rows: m, Cols: d, Stride: d, Data: r.u},
		0, blas64.General{Rows: n, Cols: d, Stride: d, Data: r.zu})

	al := FixedRelax
	copy(r.vOld, r.v)
	copy(r.rOld, r.r)

	// v-update and λ at û = αu + (1 − α)v.
	ru, uu, vv := relaxedShrink(r.u, r.lam, r.v, r.hat, r.vNorm, d, r.p.Beta/r.rho)

	// (s_j, r_j): projection onto the robust cone at the relaxed points, and
	// κ, ν.
	var rr, rs, ngu, ns, nr float64
	for j := 0; j < m; j++ {
		uj, rj, kj := r.u[j*d:(j+1)*d], r.r[j*d:(j+1)*d], r.kap[j*d:(j+1)*d]
		gj, sj, nj := r.xu[j*n:(j+1)*n], r.s[j*n:(j+1)*n], r.nu[j*n:(j+1)*n]
		rh := r.hat
		for q, u := range uj {
			rh[q] = al*u + (1-al)*rj[q]
			rj[q] = rh[q] + kj[q]
		}
		for k, g := range gj {
			gh := al*g + (1-al)*sj[k]
			nj[k] += gh // ν ← ν + ĝ, then − s below
			sj[k] = nj[k]
		}
		r.coneProject(sj, rj)
		for q := range rj {
			kj[q] += rh[q] - rj[q]
			e := uj[q] - rj[q]
			rr += e * e
			nr += rj[q] * rj[q]
		}
		for k, g := range gj {
			nj[k] -= sj[k]
			e := g - sj[k]
			rs += e * e
			ngu += g * g
			ns += sj[k] * sj[k]
		}
	}

	// Z-update: the loss prox per point at ẑ = α Zu + (1 − α) Z, and M.
	var rz, nzu, nz float64
	tp := 1 / (r.rho * r.gZ * r.gZ)
	for k := 0; k < n; k++ {
		zk, mk, uk := r.z[k*d:(k+1)*d], r.mm[k*d:(k+1)*d], r.zu[k*d:(k+1)*d]
		c := r.hat
		for q, v := range uk {
			zh := al*v + (1-al)*zk[q]
			mk[q] += zh
			c[q] = mk[q] / r.gZ
		}
		r.lossProx(k, zk, c, tp)
		for q := range zk {
			zk[q] *= r.gZ
			mk[q] -= zk[q]
			e := uk[q] - zk[q]
			rz += e * e
			nzu += uk[q] * uk[q]
			nz += zk[q] * zk[q]
		}
	}

	// New Gᵀs, Aᵀz (and Gᵀν, Aᵀμ) and the dual residual
	// ρ‖Δv + Δr + γ_G GᵀΔs + γ_Z AᵀΔz‖.
	r.products(r.gsN, r.azN)
	var rd, nl float64
	for q := 0; q < md; q++ {
		e := r.v[q] - r.vOld[q] + r.r[q] - r.rOld[q] + r.gsN[q] - r.gs[q] + r.azN[q] - r.az[q]
		rd += e * e
		y := r.lam[q] + r.kap[q] + r.gn[q] + r.am[q]
		nl += y * y
	}
	r.gs, r.gsN = r.gsN, r.gs
	r.az, r.azN = r.azN, r.az
	r.iter++

	step := Step{
		Iter:           r.iter,
		PrimalResidual: math.Sqrt(ru + rr + rs + rz),
		DualResidual:   r.rho * math.Sqrt(rd),
		PrimalTol:      math.Sqrt(float64(2*md+mn+n*d))*absTol + relTol*math.Sqrt(math.Max(2*uu+ngu+nzu, vv+nr+ns+nz)),
		DualTol:        math.Sqrt(float64(md))*absTol + relTol*r.rho*math.Sqrt(nl),
	}
	step.ConvexObjective, step.NonconvexObjective, step.Gap, step.Violation = r.objectives()
	step.Seconds = now() - t0
	return step
}

// adapt applies residual balancing to ρ (see Split).
func (r *robustWork) adapt(s Step) {
	r.rho = rebalance(r.iter, r.rho, r.rho0, s, r.lam, r.kap, r.nu, r.mm, r.gn, r.am)
}

// objectives returns the robust objective at v, the clean l^{u,α} of the
// network recovered from v, the clean recovery gap |l^{u,α} − l^{v,w}| and
// the largest violation of the robust constraints.
func (r *robustWork) objectives() (robust, nonconvex, gap, viol float64) {
	n, d, m, np := r.n, r.d, r.m, r.np
	blas64.Gemm(blas.NoTrans, blas.NoTrans, 1,
		blas64.General{Rows: m, Cols: d, Stride: d, Data: r.v}, r.xt,
		0, blas64.General{Rows: m, Cols: n, Stride: n, Data: r.xu})
	clean, nonconvex, _ := objectives(r.p, r.xu, r.dm, r.sg, r.vNorm, r.yc, r.yn, n, np)
	gap = math.Abs(nonconvex - clean)
	// Robust violation: ε N(v_j) − (2d_ik − 1)(X v_j)_k.
	for j := 0; j < m; j++ {
		rad := r.eps * r.kind.Dual(r.v[j*d:j*d+r.f])
		sgj := r.sg[(j%np)*n : (j%np+1)*n]
		for k, v := range r.xu[j*n : (j+1)*n] {
			viol = math.Max(viol, rad-sgj[k]*v)
		}
	}
	// Robust terms from g_k = (A V)_k and ŷ = yc (as objectives sums it).
	blas64.Gemm(blas.NoTrans, blas.NoTrans, 1, r.a,
		blas64.General{Rows: m, Cols: d, Stride: d, Data: r.v},
		0, blas64.General{Rows: n, Cols: d, Stride: d, Data: r.zu})
	var s float64
	for k := 0; k < n; k++ {
		rad := r.eps * r.kind.Dual(r.zu[k*d:k*d+r.f])
		s += robustTerm(r.p.Loss, r.p.Y[k], r.yc[k], rad)
	}
	if r.p.Loss != solvers.SquaredLoss {
		s /= float64(n)
	}
	var reg float64
	for _, v := range r.vNorm {
		reg += v
	}
	return s + r.p.Beta*reg, nonconvex, gap, viol
}

// robustTerm is the worst-case loss term of one point with prediction yhat
// and radius rad = ε‖g^f‖_* (solvers.RobustPointLosses).
func robustTerm(l solvers.Loss, y, yhat, rad float64) float64 {
	switch l {
	case solvers.HingeLoss:
		return math.Max(0, 1-y*yhat+rad)
	case solvers.SquaredLoss:
		a := math.Abs(yhat-y) + rad
		return a * a / 2
	case solvers.BCELoss:
		return solvers.Softplus(l.MarginScale(y)*yhat + 2*rad)
	default:
		return solvers.Softplus(l.MarginScale(y)*yhat + rad)
	}
}

// normProx sets dst^f = prox_{τ N}(src^f) (the remaining, bias, entry is
// copied) and returns N(dst^f): soft threshold for N = ‖·‖₁, group shrink
// for ‖·‖₂, src minus its projection onto the ℓ₁ ball of radius τ for ‖·‖_∞.
func (r *robustWork) normProx(dst, src []float64, tau float64) float64 {
	f := r.f
	copy(dst[f:], src[f:])
	src, dst = src[:f], dst[:f]
	switch r.kind {
	case solvers.LInf: // N = ‖·‖₁
		var s float64
		for q, x := range src {
			a := math.Abs(x) - tau
			if a <= 0 {
				dst[q] = 0
				continue
			}
			dst[q] = math.Copysign(a, x)
			s += a
		}
		return s
	case solvers.L2: // N = ‖·‖₂
		var w2 float64
		for _, x := range src {
			w2 += x * x
		}
		nrm := math.Sqrt(w2)
		c := 0.0
		if nrm > tau {
			c = 1 - tau/nrm
		}
		for q, x := range src {
			dst[q] = c * x
		}
		return c * nrm
	}
	// N = ‖·‖_∞: prox = clip(src, ±θ), Σ_q (|src_q| − θ)_+ = τ, N = θ.
	var l1 float64
	for _, x := range src {
		l1 += math.Abs(x)
	}
	if l1 <= tau {
		for q := range dst {
			dst[q] = 0
		}
		return 0
	}
	buf := r.sortBuf[:f]
	for q, x := range src {
		buf[q] = -math.Abs(x)
	}
	slices.Sort(buf) // descending |x|
	var cum, theta float64
	for q := range buf {
		cum -= buf[q]
		th := (cum - tau) / float64(q+1)
		if q+1 == len(buf) || -buf[q+1] <= th {
			theta = th
			break
		}
	}
	for q, x := range src {
		dst[q] = math.Max(-theta, math.Min(theta, x))
	}
	return theta
}

// coneProject replaces (s, rv) by its Euclidean projection onto
// {(s, r) : s_k ≥ γ_G ε N(r) ∀k}: s_k = max(s_k, t), r = prox_{Λ γ_G ε N}(r),
// t = γ_G ε N(r), Λ the root of Λ = Σ_k (t(Λ) − s_k)_+.
func (r *robustWork) coneProject(s, rv []float64) {
	e := r.gG * r.eps
	if e == 0 {
		for k, v := range s {
			s[k] = math.Max(v, 0)
		}
		return
	}
	t0 := e * r.kind.Dual(rv[:r.f])
	var hi float64
	for _, v := range s {
		hi += math.Max(0, t0-v)
	}
	if hi == 0 {
		return // inside the cone
	}
	tmp := r.wk2
	excess := func(lam float64) float64 {
		t := e * r.normProx(tmp, rv, lam*e)
		var sum float64
		for _, v := range s {
			if t > v {
				sum += t - v
			}
		}
		return lam - sum
	}
	lam := monotoneRoot(excess, 0, hi, -hi, hi)
	t := e * r.normProx(tmp, rv, lam*e)
	copy(rv, tmp)
	for k, v := range s {
		s[k] = math.Max(v, t)
	}
}

// lossProx sets z = argmin_g ℓ_k(g) + ‖g − c‖²/(2τ) (see Robust).
func (r *robustWork) lossProx(k int, z, c []float64, tau float64) {
	l, y := r.p.Loss, r.p.Y[k]
	xk := r.x.Data[k*r.d : (k+1)*r.d]
	w := 1 / float64(r.n)
	switch l {
	case solvers.SquaredLoss:
		// θ = φ(z(τθ)), φ = |xᵀz − y| + ε N(z).
		phi := func(th float64) float64 { return r.squaredProx(z, c, xk, y, tau*th) }
		p0 := phi(0)
		if p0 == 0 {
			copy(z, c)
			return
		}
		th := monotoneRoot(func(th float64) float64 { return th - phi(th) }, 0, p0, -p0, p0-phi(p0))
		phi(th)
		return
	}
	// φ(z) = a + bᵀz + ε' N(z), b = β0 x.
	a, b0, e := 0.0, -y, r.eps
	switch l {
	case solvers.HingeLoss:
		a = 1
	case solvers.BCELoss:
		b0, e = l.MarginScale(y), 2*r.eps
	}
	phi := func(th float64) float64 { // φ(prox_{τθ φ}(c))
		st := tau * th
		for q, v := range c {
			r.wk[q] = v - st*b0*xk[q]
		}
		nv := r.normProx(z, r.wk, st*e)
		var bz float64
		for q, v := range z {
			bz += xk[q] * v
		}
		return a + b0*bz + e*nv
	}
	if l == solvers.HingeLoss {
		if p0 := phi(0); p0 <= 0 {
			return // z = c
		}
		if p1 := phi(w); p1 >= 0 {
			return // θ = w: z already set
		}
		th := monotoneRoot(func(th float64) float64 { return -phi(th) }, 0, w, -phi(0), -phi(w))
		phi(th)
		return
	}
	f := func(th float64) float64 { return th - w*solvers.Logistic(phi(th)) }
	th := monotoneRoot(f, 0, w, f(0), f(w))
	phi(th)
}

// squaredProx sets z = prox_{τ(|xᵀ· − y| + ε N)}(c) and returns
// |xᵀz − y| + ε N(z): z = prox_{τεN}(c − τσx) with σ ∈ ∂|xᵀz − y|, the
// residual nonincreasing in σ.
func (r *robustWork) squaredProx(z, c, xk []float64, y, tau float64) float64 {
	var nv float64
	res := func(sig float64) float64 {
		for q, v := range c {
			r.wk[q] = v - tau*sig*xk[q]
		}
		nv = r.normProx(z, r.wk, tau*r.eps)
		var e float64
		for q, v := range z {
			e += xk[q] * v
		}
		return e - y
	}
	if tau == 0 {
		copy(z, c)
		return math.Abs(res(0)) + r.eps*nv
	}
	if e := res(1); e >= 0 {
		return e + r.eps*nv
	}
	if e := res(-1); e <= 0 {
		return -e + r.eps*nv
	}
	sig := monotoneRoot(func(s float64) float64 { return -res(s) }, -1, 1, -res(-1), -res(1))
	e := res(sig)
	return math.Abs(e) + r.eps*nv
}

// monotoneRoot returns a root of the nondecreasing f on [lo, hi] with
// f(lo) = flo ≤ 0 ≤ f(hi) = fhi, by false position (Illinois) safeguarded
// by bisection, to machine precision.
func monotoneRoot(f func(float64) float64, lo, hi, flo, fhi float64) float64 {
	if flo >= 0 {
		return lo
	}
	if fhi <= 0 {
		return hi
	}
	side := 0
	for it := 0; it < 200; it++ {
		if hi-lo <= 4e-16*math.Max(math.Abs(lo), math.Abs(hi)) {
			break
		}
		x := lo - flo*(hi-lo)/(fhi-flo)
		if !(x > lo && x < hi) || it%4 == 3 {
			x = lo + (hi-lo)/2
		}
		fx := f(x)
		switch {
		case fx == 0:
			return x
		case fx < 0:
			lo, flo = x, fx
			if side == -1 {
				fhi /= 2
			}
			side = -1
		default:
			hi, fhi = x, fx
			if side == 1 {
				flo /= 2
			}
			side = 1
		}
	}
	if -flo < fhi {
		return lo
	}
	return hi
}
