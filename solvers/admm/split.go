package admm

import (
	"math"

	"github.com/convexnn/convexnn/solvers"
	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"
)

// Split is ADMM with the loss split out, for every loss of Program:
// the hinge loss (which has no gradient, so ADMM-RBCD does not apply), the
// smooth BCE and logistic losses, and the squared loss. The program
//
//	minimize ℓ(F u, y) + β Σ_j ‖u_j‖ subject to G u ≥ 0
//
// (F, G and the layout of u are those of ClosedForm) is written as
//
//	minimize ℓ(q, y) + β‖v‖_{2,1} + I_{≥0}(s)  subject to  u = v,  G u = s,  F u = q,
//
// with one penalty ρ for all three constraints and scaled duals λ, ν, μ.
// One iteration is
//
//	u⁺ = (I + FᵀF + GᵀG)⁻¹ (v − λ + Gᵀ(s − ν) + Fᵀ(q − μ))
//	v_j⁺ = (1 − β/(ρ‖u_j⁺ + λ_j‖))_+ (u_j⁺ + λ_j)          group soft-threshold, eq. (vupdate)
//	s⁺ = (G u⁺ + ν)_+                                     projection, eq. (supdate)
//	q_k⁺ = prox_{ℓ_k/ρ}(c_k),  c_k = (F u⁺ + μ)_k        loss prox, per sample
//	λ⁺ = λ + u⁺ − v⁺,  ν⁺ = ν + G u⁺ − s⁺,  μ⁺ = μ + F u⁺ − q⁺,
//
// over-relaxed by α = FixedRelax = 1.6: the v-, s- and q-updates and the
// duals take αu⁺ + (1 − α)v, αGu⁺ + (1 − α)s and αFu⁺ + (1 − α)q in place
// of u⁺, Gu⁺ and Fu⁺.
//
// The loss prox is closed form for the hinge loss (with z = y_k c_k and
// t = 1/(nρ): y_k z if z ≥ 1, y_k (z + t) if z ≤ 1 − t, y_k otherwise) and
// the squared loss ((y_k + ρ c_k)/(1 + ρ)); for BCE and logistic, whose terms
// are (1/n) log(1 + e^{a_k q}) (Loss.MarginScale), it is the root of the
// strictly increasing (a_k/n) σ(a_k q) + ρ(q − c_k), which lies between c_k and
// c_k − a_k/(nρ); it is found by Newton's method safeguarded by bisection on
// that bracket, to machine precision.
//
// Because the three constraints share ρ, the u-update matrix
// I + FᵀF + GᵀG does not depend on ρ: it is the squared-loss system of
// ClosedForm with ρ = 1, factored once by system (route woodbury or direct,
// as o.Route, chosen by the same flop model). ρ is therefore adapted for free
// by residual balancing (Boyd et al. §3.4.1: doubled when the primal
// residual exceeds 10× the dual one, halved in the opposite case, the
// scaled duals rescaled), which the classification losses need: their
// optimal ρ is far from the squared loss's. Adaptation is checked every 10
// iterations up to iteration 2000 and then at ever sparser iterations
// (every 100 up to 20000, every 1000 after), so ρ keeps adjusting on hard
// instances while the changes become rare enough for ADMM's fixed-ρ
// convergence to take over. o.Rho is the starting ρ (0 means 0.1); o.Gamma
// must be 0 or equal to o.Rho (unit dual step).
//
// Per-iteration cost: that of the squared-loss ADMM iteration (the u-solve,
// G u from one product X u, the right-hand side Gᵀ(·) + Fᵀ(·) of the next
// step from one product of a 4P×n stack with X, X v for the reported
// objective: 16ndP flops plus the route's solve cost, see ClosedForm) plus
// O(nP) elementwise work to form F u and fold Fᵀ(q − μ) into the stack, and
// O(n) for the q-update (a few Newton steps per sample for BCE and logistic):
// the loss split costs no extra product with X.
//
// The stopping test is that of Boyd et al. (§3.3.1, tolerances o.AbsTol,
// o.RelTol, defaults 1e-6 and 1e-5). Weights returns the v iterate: its
// groups are exactly zero where the soft-threshold zeroed them; the cone
// constraints hold to the primal residual. In the reported steps,
// ConvexObjective and NonconvexObjective are Program.Objective and
// Program.NonconvexObjective of the recovered network, and DualResidual
// is ρ‖Δv + Gᵀ Δs + Fᵀ Δq‖.
//
// The solver is not safe for concurrent use. A solver rebuilt from a saved
// State takes bitwise the same steps as an uninterrupted run.
type Split struct {
	Program *solvers.Program
	Options Options
	State   SplitState

	h            *splitWork
	setupSeconds float64
}

// SplitState is the iteration state of Split: the iteration count, the
// current (adapted) ρ and u, v, λ (2dP), s, ν (2nP), q, μ (n), laid out as in
// ClosedFormState.
type SplitState struct {
	Iter                int
	Rho                 float64
	U, V, S, Lambda, Nu []float64
	Q, Mu               []float64
	// Gram, when set, is the u-update system's Gram matrix, kept so that a
	// resumed solver skips computing it (see Gram).
	Gram *Gram
}

// NewSplit validates p and o, factors the u-update system and starts
// from zero (ρ = o.Rho), or from st.
func NewSplit(p *solvers.Program, o Options, st *SplitState) (*Split, error) {
	o, err := prologue(p, VariantSplit, o, st)
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
	sys, err := newSystem(x, p.D, 1, o.Route, o.MaxIter, known, o.DataDigest)
	if err != nil {
		return nil, err
	}
	h := &splitWork{p: p, sys: sys, x: x, n: n, d: d, np: np, rho: o.Rho, rho0: o.Rho}
	h.init()
	if st != nil {
		h.load(st)
	}
	a := &Split{Program: p, Options: o, h: h, setupSeconds: now() - t0}
	a.sync()
	return a, nil
}

func (st *SplitState) check(n, d, np int) error {
	return checkState(VariantSplit, st.Iter, &st.Rho, n, d, np, st.vectors(n, d, np))
}

// vectors are the state's vectors and their lengths for the program.
func (st *SplitState) vectors(n, d, np int) []stateVector {
	return []stateVector{
		{"U", st.U, 2 * np * d}, {"V", st.V, 2 * np * d}, {"Lambda", st.Lambda, 2 * np * d},
		{"S", st.S, 2 * np * n}, {"Nu", st.Nu, 2 * np * n}, {"Q", st.Q, n}, {"Mu", st.Mu, n}}
}

// sync exposes the solver's vectors in State (shared, not copied).
func (a *Split) sync() { a.State = a.h.state() }

// state returns the working vectors as a SplitState (shared, not copied).
func (h *splitWork) state() SplitState {
	return SplitState{Iter: h.iter, Rho: h.rho, U: h.u, V: h.v, S: h.s, Lambda: h.lam, Nu: h.nu, Q: h.q, Mu: h.mu}
}

// Step performs one iteration (and, at its scheduled iterations, the
// residual-balancing update of ρ for the next one).
func (a *Split) Step() Step {
	s := balancedStep(a.h, a.Options)
	a.sync()
	return s
}

// Rho returns the current penalty ρ.
func (a *Split) Rho() float64 { return a.h.rho }

// Weights returns a copy of the v iterate.
func (a *Split) Weights() solvers.Weights { return a.h.weights() }

// Converged reports whether the step passed the residual stopping test.
func (a *Split) Converged(s Step) bool { return s.residualsConverged() }

// Network returns the network recovered from the v iterate
// (solvers.Program.Recover).
func (a *Split) Network() (*solvers.Network, error) { return a.Program.Recover(a.Weights()) }

// Variant returns VariantSplit.
func (a *Split) Variant() Variant { return VariantSplit }

// Iter returns the number of finished iterations.
func (a *Split) Iter() int { return a.h.iter }

// SetupSeconds returns the wall time NewSplit spent factoring the u-update
// system.
func (a *Split) SetupSeconds() float64 { return a.setupSeconds }

// Route returns the route that solves the u-update system (never RouteAuto).
func (a *Split) Route() Route { return a.h.sys.route }

// Checkpoint returns &a.State, with the set-up's Gram matrix.
func (a *Split) Checkpoint() State {
	a.State.Gram = a.h.sys.gramState()
	return &a.State
}

// splitWork is the working state of Split: u, v, λ (2P×d), s, ν (2P×n),
// q, μ (n) and the products derived from them.
type splitWork struct {
	p         *solvers.Program
	sys       *system
	x         blas64.General
	n, d, np  int
	rho, rho0 float64
	iter      int
	u, v, lam []float64
	s, nu     []float64
	q, mu     []float64
	sg        []float64 // P×n: 2D_i[k] − 1
	b         []float64 // 2P×d right-hand side, then u
	xu        []float64 // 2P×n: X u_j, then G u_j; later X v_j
	fu        []float64 // n: F u
	stk       []float64 // 4P×n: rows of (s, q) and of (ν, μ) to be multiplied by X
	gq, gqNew []float64 // 4P×d: Gᵀs + Fᵀq (rows 0…2P−1), Gᵀν + Fᵀμ (rows 2P…4P−1)
	vOld      []float64
	uh        []float64 // d: one relaxed group
	vNorm     []float64
	yc, yn    []float64
}

// load copies a saved state in and recomputes what is derived from it: the
// group norms of v and the stack Gᵀs + Fᵀq, Gᵀν + Fᵀμ (by the same product
// the step uses, so the next step is bitwise that of an uninterrupted run).
func (h *splitWork) load(st *SplitState) {
	cur := h.state()
	loadVectors(cur.vectors(h.n, h.d, h.np), st.vectors(h.n, h.d, h.np))
	h.iter, h.rho = st.Iter, st.Rho
	d := h.d
	for j := range h.vNorm {
		var w2 float64
		for _, v := range h.v[j*d : (j+1)*d] {
			w2 += v * v
		}
		h.vNorm[j] = math.Sqrt(w2)
	}
	h.stackProduct(h.gq)
}

func (h *splitWork) init() {
	n, d, np := h.n, h.d, h.np
	h.sg = make([]float64, np*n)
	for q, v := range h.sys.dm {
		h.sg[q] = 2*v - 1
	}
	h.u = make([]float64, 2*np*d)
	h.v = make([]float64, 2*np*d)
	h.lam = make([]float64, 2*np*d)
	h.b = make([]float64, 2*np*d)
	h.vOld = make([]float64, 2*np*d)
	h.vNorm = make([]float64, 2*np)
	h.uh = make([]float64, d)
	h.s = make([]float64, 2*np*n)
	h.nu = make([]float64, 2*np*n)
	h.xu = make([]float64, 2*np*n)
	h.stk = make([]float64, 4*np*n)
	h.q = make([]float64, n)
	h.mu = make([]float64, n)
	h.fu = make([]float64, n)
	h.yc = make([]float64, n)
	h.yn = make([]float64, n)
	h.gq = make([]float64, 4*np*d)
	h.gqNew = make([]float64, 4*np*d)
}

// stackProduct sets dst (4P×d) to the rows Gᵀ_j s_j ± Fᵀ_j q and
// Gᵀ_j ν_j ± Fᵀ_j μ (sign + for the v groups, − for the w groups), with one
// product of the 4P×n stack with X.
func (h *splitWork) stackProduct(dst []float64) {
	n, np := h.n, h.np
	half := 2 * np * n
	for j := 0; j < 2*np; j++ {
		i := j % np
		sign := 1.0
		if j >= np {
			sign = -1
		}
		sg, dm := h.sg[i*n:(i+1)*n], h.sys.dm[i*n:(i+1)*n]
		sj, nj := h.s[j*n:(j+1)*n], h.nu[j*n:(j+1)*n]
		ds, dn := h.stk[j*n:(j+1)*n], h.stk[half+j*n:half+(j+1)*n]
		for k, g := range sg {
			ds[k] = g*sj[k] + sign*dm[k]*h.q[k]
			dn[k] = g*nj[k] + sign*dm[k]*h.mu[k]
		}
	}
	blas64.Gemm(blas.NoTrans, blas.NoTrans, 1,
		blas64.General{Rows: 4 * np, Cols: n, Stride: n, Data: h.stk}, h.x,
		0, blas64.General{Rows: 4 * np, Cols: h.d, Stride: h.d, Data: dst})
}

// xRows sets h.xu (2P×n) to the rows (X w_j)ᵀ of w (2P×d).
func (h *splitWork) xRows(w []float64) {
	blas64.Gemm(blas.NoTrans, blas.Trans, 1,
		blas64.General{Rows: 2 * h.np, Cols: h.d, Stride: h.d, Data: w}, h.x,
		0, blas64.General{Rows: 2 * h.np, Cols: h.n, Stride: h.n, Data: h.xu})
}

func (h *splitWork) step(absTol, relTol float64) Step {
	t0 := now()
	n, d, np := h.n, h.d, h.np
	pd2, pn2 := 2*np*d, 2*np*n
	gs, gn := h.gq[:pd2], h.gq[pd2:]

	// u-update.
	for q := range h.b {
		h.b[q] = h.v[q] - h.lam[q] + gs[q] - gn[q]
	}
	h.sys.solve(h.b, h.u, h.iter)
	copy(h.u, h.b)

	// X u_j, then F u and G u.
	h.xRows(h.u)
	fu := h.fu
	for k := range fu {
		fu[k] = 0
	}
	for j := 0; j < 2*np; j++ {
		i := j % np
		row, dm, sg := h.xu[j*n:(j+1)*n], h.sys.dm[i*n:(i+1)*n], h.sg[i*n:(i+1)*n]
		sign := 1.0
		if j >= np {
			sign = -1
		}
		for k, v := range row {
			fu[k] += sign * dm[k] * v
			row[k] = sg[k] * v
		}
	}

	// v-update and λ, at the relaxed point û = αu + (1 − α)v.
	copy(h.vOld, h.v)
	ru, uu, vv := relaxedShrink(h.u, h.lam, h.v, h.uh[:d], h.vNorm, d, h.p.Beta/h.rho)
	al := FixedRelax

	// s-update and ν, at ĝ = α G u + (1 − α) s.
	var rs, ngu, ns float64
	for q := 0; q < pn2; q++ {
		g := h.xu[q]
		gh := al*g + (1-al)*h.s[q]
		s := gh + h.nu[q]
		if s < 0 {
			s = 0
		}
		h.nu[q] += gh - s
		h.s[q] = s
		r := g - s
		rs += r * r
		ngu += g * g
		ns += s * s
	}

	// q-update: prox of the loss at f̂ = α F u + (1 − α) q, and μ.
	var rq, nfu, nq float64
	for k := range fu {
		fh := al*fu[k] + (1-al)*h.q[k]
		qk := h.prox(k, fh+h.mu[k])
		h.mu[k] += fh - qk
		h.q[k] = qk
		r := fu[k] - qk
		rq += r * r
		nfu += fu[k] * fu[k]
		nq += qk * qk
	}

	// Gᵀs + Fᵀq and Gᵀν + Fᵀμ of the new state.
	h.stackProduct(h.gqNew)
	rd, nlam := dualResidual(h.v, h.vOld, h.gqNew, gs, h.lam)
	h.gq, h.gqNew = h.gqNew, h.gq
	h.iter++

	step := Step{
		Iter:           h.iter,
		PrimalResidual: math.Sqrt(ru + rs + rq),
		DualResidual:   h.rho * math.Sqrt(rd),
		PrimalTol:      math.Sqrt(float64(pd2+pn2+n))*absTol + relTol*math.Sqrt(math.Max(uu+ngu+nfu, vv+ns+nq)),
		DualTol:        math.Sqrt(float64(pd2))*absTol + relTol*h.rho*math.Sqrt(nlam),
	}
	step.ConvexObjective, step.NonconvexObjective, step.Violation = h.objectives()
	step.Gap = math.Abs(step.NonconvexObjective - step.ConvexObjective)
	step.Seconds = now() - t0
	return step
}

// prox returns argmin_q ℓ_k(q) + (ρ/2)(q − c)², ℓ_k the loss term of
// sample k (see Split).
func (h *splitWork) prox(k int, c float64) float64 {
	y := h.p.Y[k]
	nrho := float64(h.n) * h.rho
	switch h.p.Loss {
	case solvers.HingeLoss:
		t := 1 / nrho
		z := y * c
		switch {
		case z >= 1:
		case z <= 1-t:
			z += t
		default:
			z = 1
		}
		return y * z
	case solvers.SquaredLoss:
		return (y + h.rho*c) / (1 + h.rho)
	}
	// (a/n) σ(a q) + ρ(q − c) = 0, i.e. g(q) = a σ(a q) + nρ(q − c) = 0,
	// with the root between c and c − a/(nρ).
	a := h.p.Loss.MarginScale(y)
	lo, hi := c-a/nrho, c
	if lo > hi {
		lo, hi = hi, lo
	}
	q := c - a*solvers.Logistic(a*c)/nrho // one fixed-point step from c: inside the bracket
	for it := 0; it < 100; it++ {
		sg := solvers.Logistic(a * q)
		g := a*sg + nrho*(q-c)
		if g == 0 {
			return q
		}
		if g > 0 {
			hi = q
		} else {
			lo = q
		}
		next := q - g/(a*a*sg*(1-sg)+nrho)
		if !(next > lo && next < hi) {
			next = lo + (hi-lo)/2
		}
		if next == q || hi-lo <= 4e-16*math.Max(1, math.Abs(q)) {
			return next
		}
		q = next
	}
	return q
}

// ρ is kept within a factor rhoMax of its start and adapted at the
// iterations adaptDue selects.
const rhoMax = 1e6

// adaptDue reports whether ρ is adapted after iteration k: every 10
// iterations up to 2000, every 100 up to 20000, every 1000 after.
func adaptDue(k int) bool {
	switch {
	case k <= 2000:
		return k%10 == 0
	case k <= 20000:
		return k%100 == 0
	}
	return k%1000 == 0
}

// adapt applies residual balancing to ρ; the u-update matrix does not
// depend on ρ, the scaled duals are rescaled by ρ_old/ρ_new.
func (h *splitWork) adapt(s Step) {
	h.rho = rebalance(h.iter, h.rho, h.rho0, s, h.lam, h.nu, h.mu, h.gq[2*h.np*h.d:])
}

// relaxedShrink is the v-update, eq. (vupdate), and the dual update of λ at
// the over-relaxed point û = α u + (1 − α) v, α = FixedRelax, for the groups
// of d entries of u, λ and v (hat is d of scratch). It sets the groups'
// norms in vNorm and returns ‖u − v‖², ‖u‖² and ‖v‖².
func relaxedShrink(u, lam, v, hat, vNorm []float64, d int, thr float64) (ru, uu, vv float64) {
	al := FixedRelax // a variable: 1 − α rounds as in the other relaxed updates
	for j := range vNorm {
		uj, lj, vj, hj := u[j*d:(j+1)*d], lam[j*d:(j+1)*d], v[j*d:(j+1)*d], hat[:d]
		for q, u := range uj {
			hj[q] = al*u + (1-al)*vj[q]
		}
		vNorm[j] = groupShrink(vj, hj, lj, thr)
		for q := range vj {
			e := uj[q] - vj[q]
			lj[q] += hj[q] - vj[q]
			ru += e * e
			uu += uj[q] * uj[q]
			vv += vj[q] * vj[q]
		}
	}
	return ru, uu, vv
}

// balancedWork is the working state of a variant that adapts ρ by
// residual balancing after its steps (Split, Robust).
type balancedWork interface {
	step(absTol, relTol float64) Step
	adapt(s Step)
}

// balancedStep performs one iteration of w and, unless it passed the
// stopping test, the residual-balancing update of ρ for the next one.
func balancedStep(w balancedWork, o Options) Step {
	s := w.step(o.AbsTol, o.RelTol)
	if !s.residualsConverged() {
		w.adapt(s)
	}
	return s
}

// rebalance is residual balancing (Boyd et al. §3.4.1) after iteration
// k, when adaptDue(k): ρ doubles when the primal residual exceeds 10× the
// dual one and halves in the opposite case, within a factor rhoMax of
// rho0; the scaled duals are divided by the same factor. It returns the new
// ρ.
func rebalance(k int, rho, rho0 float64, s Step, duals ...[]float64) float64 {
	const mu, tau = 10.0, 2.0
	if !adaptDue(k) {
		return rho
	}
	var f float64
	switch {
	case rho >= rhoMax*rho0 || rho <= rho0/rhoMax:
		return rho
	case s.PrimalResidual > mu*s.DualResidual:
		f = tau
	case s.DualResidual > mu*s.PrimalResidual:
		f = 1 / tau
	default:
		return rho
	}
	for _, z := range duals {
		for q := range z {
			z[q] /= f
		}
	}
	return rho * f
}

// objectives returns the objectives l^{v,w} and l^{u,α} of the
// recovered network and the largest cone violation at the current v.
func (h *splitWork) objectives() (convex, nonconvex, viol float64) {
	h.xRows(h.v)
	return objectives(h.p, h.xu, h.sys.dm, h.sg, h.vNorm, h.yc, h.yn, h.n, h.np)
}

func (h *splitWork) weights() solvers.Weights { return weightsOf(h.v, h.np, h.d) }
