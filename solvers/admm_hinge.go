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

// SolveADMMHinge solves the convex program with the hinge loss,
//
//	minimize (1/n) Σ_k max(0, 1 − y_k (F u)_k) + β Σ_j ‖u_j‖ subject to G u ≥ 0,
//
// by ADMM with the loss split out (F, G and the layout of u are those of
// ADMM). The program is written as
//
//	minimize h(q) + β‖v‖_{2,1} + I_{≥0}(s)  subject to  u = v,  G u = s,  F u = q,
//
// h(q) = (1/n) Σ_k max(0, 1 − y_k q_k), with one penalty ρ for all three
// constraints and scaled duals λ, ν, μ. One iteration is
//
//	u⁺ = (I + FᵀF + GᵀG)⁻¹ (v − λ + Gᵀ(s − ν) + Fᵀ(q − μ))
//	v_j⁺ = (1 − β/(ρ‖u_j⁺ + λ_j‖))_+ (u_j⁺ + λ_j)          group soft-threshold
//	s⁺ = (G u⁺ + ν)_+                                     projection
//	q_k⁺ = prox of (1/(nρ)) max(0, 1 − y_k ·) at c_k = (F u⁺ + μ)_k:
//	       with z = y_k c_k, t = 1/(nρ): y_k z if z ≥ 1, y_k (z + t) if z ≤ 1 − t,
//	       y_k otherwise
//	λ⁺ = λ + u⁺ − v⁺,  ν⁺ = ν + G u⁺ − s⁺,  μ⁺ = μ + F u⁺ − q⁺.
//
// Because the three constraints share ρ, the u-update matrix
// I + FᵀF + GᵀG does not depend on ρ: it is the squared-loss system of ADMM
// with ρ = 1, factored once by admmSystem (route woodbury or direct, as
// o.Route, chosen by the same flop model). ρ is therefore adapted for free
// by residual balancing (Boyd et al. §3.4.1: doubled when the primal
// residual exceeds 10× the dual one, halved in the opposite case, the
// scaled duals rescaled), which the hinge loss needs: its optimal ρ is far
// from the squared loss's. o.Rho is the starting ρ (0 means 0.1); o.Gamma
// must be 0 or equal to o.Rho (unit dual step).
//
// Per-iteration cost: that of the squared-loss ADMM iteration (the u-solve,
// G u from one product X u, the right-hand side Gᵀ(·) + Fᵀ(·) of the next
// step from one product of a 4P×n stack with X, X v for the reported
// objective: 16ndP flops plus the route's solve cost, see ADMM) plus O(nP)
// elementwise work to form F u and fold Fᵀ(q − μ) into the stack, and O(n)
// for the q-update: the loss split costs no extra product with X.
//
// It stops when the residual test of Boyd et al. (§3.3.1, tolerances
// o.AbsTol, o.RelTol, defaults 1e-6 and 1e-5) passes, after maxIter steps
// (0 means o.MaxIter, 0 means 1000), when onStep returns false, or when ctx
// is done (then the weights and steps so far are returned with ctx's error).
// The returned weights are the v iterate: its groups are exactly zero where
// the soft-threshold zeroed them; the cone constraints hold to the primal
// residual. In the reported steps, ConvexObjective and NonconvexObjective
// are the hinge objectives (Program.Objective and
// Program.NonconvexObjective of the recovered network), and DualResidual
// is ρ‖Δv + Gᵀ Δs + Fᵀ Δq‖.
func SolveADMMHinge(ctx context.Context, p *Program, o ADMMOptions, maxIter int, onStep func(ADMMStep) bool) (Weights, []ADMMStep, error) {
	if p == nil {
		return Weights{}, nil, errors.New("solvers: ADMM hinge: no program")
	}
	if err := p.Validate(); err != nil {
		return Weights{}, nil, err
	}
	if p.Loss != HingeLoss {
		return Weights{}, nil, fmt.Errorf("solvers: SolveADMMHinge solves the hinge loss only, the program has the %v loss (use ADMM)", p.Loss)
	}
	if o.Rho == 0 {
		o.Rho = 0.1
	}
	if !(o.Rho > 0) || math.IsInf(o.Rho, 0) {
		return Weights{}, nil, fmt.Errorf("solvers: ADMM hinge penalty ρ = %v, need 0 < ρ < ∞", o.Rho)
	}
	if o.Gamma != 0 && o.Gamma != o.Rho {
		return Weights{}, nil, fmt.Errorf("solvers: ADMM hinge uses the unit scaled dual step (γ_a = ρ), got γ_a = %v, ρ = %v", o.Gamma, o.Rho)
	}
	if o.MaxIter < 0 || maxIter < 0 {
		return Weights{}, nil, fmt.Errorf("solvers: ADMM hinge iteration limit %d / MaxIter %d < 0", maxIter, o.MaxIter)
	}
	if maxIter == 0 {
		maxIter = o.MaxIter
	}
	if maxIter == 0 {
		maxIter = 1000
	}
	if o.AbsTol < 0 || o.RelTol < 0 || math.IsNaN(o.AbsTol) || math.IsNaN(o.RelTol) {
		return Weights{}, nil, fmt.Errorf("solvers: ADMM hinge tolerances AbsTol = %v, RelTol = %v, need ≥ 0", o.AbsTol, o.RelTol)
	}
	if o.AbsTol == 0 {
		o.AbsTol = 1e-6
	}
	if o.RelTol == 0 {
		o.RelTol = 1e-5
	}
	n, d, np := p.Dims()
	x := p.X.RawMatrix()
	sys, err := newADMMSystem(x, p.D, 1, o.Route, maxIter)
	if err != nil {
		return Weights{}, nil, err
	}
	h := &admmHinge{p: p, sys: sys, x: x, n: n, d: d, np: np, rho: o.Rho, rho0: o.Rho}
	h.init()

	var hist []ADMMStep
	for len(hist) < maxIter {
		if err := ctx.Err(); err != nil {
			return h.weights(), hist, err
		}
		s := h.step(o.AbsTol, o.RelTol)
		hist = append(hist, s)
		if onStep != nil && !onStep(s) {
			break
		}
		if s.PrimalResidual <= s.PrimalTol && s.DualResidual <= s.DualTol {
			break
		}
		h.adapt(s)
	}
	return h.weights(), hist, nil
}

// admmHinge is the state of SolveADMMHinge: u, v, λ (2P×d), s, ν (2P×n),
// q, μ (n).
type admmHinge struct {
	p         *Program
	sys       *admmSystem
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
	vNorm     []float64
	yc, yn    []float64
}

func (h *admmHinge) init() {
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
func (h *admmHinge) stackProduct(dst []float64) {
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
func (h *admmHinge) xRows(w []float64) {
	blas64.Gemm(blas.NoTrans, blas.NoTrans, 1,
		blas64.General{Rows: 2 * h.np, Cols: h.d, Stride: h.d, Data: w}, h.sys.xt,
		0, blas64.General{Rows: 2 * h.np, Cols: h.n, Stride: h.n, Data: h.xu})
}

func (h *admmHinge) step(absTol, relTol float64) ADMMStep {
	t0 := admmNow()
	n, d, np := h.n, h.d, h.np
	pd2, pn2 := 2*np*d, 2*np*n
	gs, gn := h.gq[:pd2], h.gq[pd2:]

	// u-update.
	for q := range h.b {
		h.b[q] = h.v[q] - h.lam[q] + gs[q] - gn[q]
	}
	h.sys.solve(h.b)
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

	// v-update and λ.
	copy(h.vOld, h.v)
	thr := h.p.Beta / h.rho
	var ru, uu, vv float64
	for j := 0; j < 2*np; j++ {
		uj, lj, vj := h.u[j*d:(j+1)*d], h.lam[j*d:(j+1)*d], h.v[j*d:(j+1)*d]
		h.vNorm[j] = groupShrink(vj, uj, lj, thr)
		for q := range vj {
			r := uj[q] - vj[q]
			lj[q] += r
			ru += r * r
			uu += uj[q] * uj[q]
			vv += vj[q] * vj[q]
		}
	}

	// s-update and ν.
	var rs, ngu, ns float64
	for q := 0; q < pn2; q++ {
		g := h.xu[q]
		s := g + h.nu[q]
		if s < 0 {
			s = 0
		}
		r := g - s
		h.nu[q] += r
		h.s[q] = s
		rs += r * r
		ngu += g * g
		ns += s * s
	}

	// q-update: prox of the hinge, and μ.
	t := 1 / (float64(n) * h.rho)
	var rq, nfu, nq float64
	for k, y := range h.p.Y {
		z := y * (fu[k] + h.mu[k])
		switch {
		case z >= 1:
		case z <= 1-t:
			z += t
		default:
			z = 1
		}
		qk := y * z
		r := fu[k] - qk
		h.mu[k] += r
		h.q[k] = qk
		rq += r * r
		nfu += fu[k] * fu[k]
		nq += qk * qk
	}

	// Gᵀs + Fᵀq and Gᵀν + Fᵀμ of the new state.
	h.stackProduct(h.gqNew)
	var rd, nlam float64
	gsN, gnN := h.gqNew[:pd2], h.gqNew[pd2:]
	for q := 0; q < pd2; q++ {
		r := h.v[q] - h.vOld[q] + gsN[q] - gs[q]
		rd += r * r
		y := h.lam[q] + gnN[q]
		nlam += y * y
	}
	h.gq, h.gqNew = h.gqNew, h.gq
	h.iter++

	step := ADMMStep{
		Iter:           h.iter,
		PrimalResidual: math.Sqrt(ru + rs + rq),
		DualResidual:   h.rho * math.Sqrt(rd),
		PrimalTol:      math.Sqrt(float64(pd2+pn2+n))*absTol + relTol*math.Sqrt(math.Max(uu+ngu+nfu, vv+ns+nq)),
		DualTol:        math.Sqrt(float64(pd2))*absTol + relTol*h.rho*math.Sqrt(nlam),
	}
	step.ConvexObjective, step.NonconvexObjective, step.Violation = h.objectives()
	step.Gap = math.Abs(step.NonconvexObjective - step.ConvexObjective)
	step.Seconds = admmNow() - t0
	return step
}

// ρ is adapted every admmHingeAdaptEvery steps and kept within a factor
// admmHingeRhoMax of its start.
const (
	admmHingeAdaptEvery = 10
	admmHingeRhoMax     = 1e6
	admmHingeAdaptUntil = 2000
)

// adapt applies residual balancing to ρ; the u-update matrix does not
// depend on ρ, the scaled duals are rescaled by ρ_old/ρ_new.
func (h *admmHinge) adapt(s ADMMStep) {
	const mu, tau = 10.0, 2.0
	if h.iter%admmHingeAdaptEvery != 0 || h.iter > admmHingeAdaptUntil {
		return
	}
	var f float64
	switch {
	case h.rho >= admmHingeRhoMax*h.rho0 || h.rho <= h.rho0/admmHingeRhoMax:
		return
	case s.PrimalResidual > mu*s.DualResidual:
		f = tau
	case s.DualResidual > mu*s.PrimalResidual:
		f = 1 / tau
	default:
		return
	}
	h.rho *= f
	for _, z := range [][]float64{h.lam, h.nu, h.mu, h.gq[2*h.np*h.d:]} {
		for q := range z {
			z[q] /= f
		}
	}
}

// objectives returns the hinge objectives l^{v,w} and l^{u,α} of the
// recovered network and the largest cone violation at the current v.
func (h *admmHinge) objectives() (convex, nonconvex, viol float64) {
	n, np := h.n, h.np
	h.xRows(h.v)
	yc, yn := h.yc, h.yn
	for k := range yc {
		yc[k], yn[k] = 0, 0
	}
	for j := 0; j < 2*np; j++ {
		if h.vNorm[j] == 0 {
			continue
		}
		i := j % np
		xv, msk, sg := h.xu[j*n:(j+1)*n], h.sys.dm[i*n:(i+1)*n], h.sg[i*n:(i+1)*n]
		sign := 1.0
		if j >= np {
			sign = -1
		}
		for k, v := range xv {
			yc[k] += sign * msk[k] * v
			if v > 0 {
				yn[k] += sign * v
			}
			if w := -sg[k] * v; w > viol {
				viol = w
			}
		}
	}
	var reg float64
	for _, v := range h.vNorm {
		reg += v
	}
	reg *= h.p.Beta
	return HingeLoss.Value(yc, h.p.Y) + reg, HingeLoss.Value(yn, h.p.Y) + reg, viol
}

func (h *admmHinge) weights() Weights {
	pd := h.np * h.d
	return Weights{
		V: mat.NewDense(h.np, h.d, admmClone(h.v[:pd])),
		W: mat.NewDense(h.np, h.d, admmClone(h.v[pd:])),
	}
}
