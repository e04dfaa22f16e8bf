package ipm

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/convexnn/convexnn/solvers"
	"github.com/convexnn/convexnn/solvers/certify"
	"gonum.org/v1/gonum/mat"
)

// SolveRobust solves the robust convex training program of section
// "Convex Adversarial Training" for the hinge and the squared loss as a
// dense cone QP with SolveConeQP: the ground truth for small instances.
// Notation as in solvers/robust.go: u_j (j = 1 … 2P) are the groups
// v_1 … v_P, w_1 … w_P with pattern i(j) and sign σ_j = ±1 in the prediction,
// S_i = 2D_i − I, f the number of perturbed features (d − 1 with a bias,
// whose entry the adversary does not touch), u^f the first f entries,
// g_k = Σ_i d_ik (v_i − w_i), ŷ_k = x_kᵀ g_k, and ‖·‖_* the dual norm of
// pert (‖·‖₁ for solvers.LInf, ‖·‖₂ for solvers.L2, ‖·‖_∞ for solvers.L1).
//
// The hinge loss is eq. (hinge_adv_D) (eq. hinge_adv_D_lp for the ℓ_p
// sets), the cone LP
//
//	minimize   (1/n) Σ_k ξ_k + β Σ_j t_j
//	subject to S_{i(j)} X u_j ≥ ε ρ_j 1,   ρ_j ≥ ‖u_j^f‖_*,   (t_j, u_j) ∈ Q^{d+1},
//	           ξ_k ≥ 0,   ξ_k ≥ 1 − y_k ŷ_k + ε r_k,   r_k ≥ ‖g_k^f‖_*,
//
// whose first line is the robust constraints of Corollary ROB_CONSTRAINT,
// eq. (robust_constraint). The squared loss is eq. (SOCP3)
// (sl_minimax_convex), the cone QP
//
//	minimize   ½ Σ_k z_k² + β Σ_j t_j
//	subject to the same group constraints,
//	           z_k ≥ ŷ_k − y_k + ε r_k,   z_k ≥ y_k − ŷ_k + ε r_k,   r_k ≥ ‖g_k^f‖_*,
//
// so that at the optimum z_k = |ŷ_k − y_k| + ε‖g_k^f‖_* (the paper's
// rotated cone a ≥ ½‖z‖² is the quadratic objective here). The dual-norm
// epigraphs ρ ≥ ‖e‖_* of an f-vector e are, for solvers.LInf, auxiliaries
// −a ≤ e ≤ a with ρ = 1ᵀa; for solvers.L2, the cone (ρ, e) ∈ Q^{f+1}; for
// solvers.L1, a scalar ρ with −ρ ≤ e_l ≤ ρ. With ε = 0 (or no perturbed
// feature) the epigraphs are left out and the program is Solve's.
//
// The returned Objective is solvers.RobustObjective(p, Weights, pert), and
// Weights has Solve's layout. When the solver reports Optimal its primal
// objective must agree with that value to max(10⁻⁶, 100·Tol) relative;
// otherwise SolveRobust returns an error, since the cone program and
// solvers/robust.go would then disagree about the robust objective.
//
// The BCE and logistic losses, (1/n) Σ_k softplus(c_k ŷ_k) (c_k:
// solvers.Loss.MarginScale), have the robust terms softplus(a_k),
// a_k = c_k ŷ_k + ε|c_k| r_k the worst case of c_k(x_k + δ)ᵀg_k, which are
// not a cone program: the method minimizes the convex quadratic model q_k of
// (1/n) softplus over v_k ≥ a_k and v_k ≥ m*_k (the model's vertex, so that
// it is increasing in a_k, like softplus), and rebuilds the model at the
// iterate's margins as it proceeds (as Newton does for the standard
// program) until the model's gradient matches the loss's to Tol. The
// program has 2Pd + 2P + n variables plus the epigraph auxiliaries and about
// 2Pn + 2n cone rows, and every iteration factors a dense normal matrix, so
// this is meant for small n and P.
func SolveRobust(ctx context.Context, p *solvers.Program, pert solvers.Perturbation, o Options) (*Result, error) {
	start := time.Now()
	if err := checkProgram(p); err != nil {
		return nil, err
	}
	if err := pert.Validate(); err != nil {
		return nil, err
	}
	o, err := o.resolve()
	if err != nil {
		return nil, err
	}
	need, what := RobustMemoryEstimate(p, pert)
	if err := o.fits(need, what, "use the robust ADMM (admm.VariantRobust, -solver admm), which needs O(n(d + P) + dP) memory"); err != nil {
		return nil, err
	}
	rb := newRobustCone(p, pert)
	qp := rb.coneQP()
	var sol *ConeQPResult
	if rb.smooth() {
		sol, err = rb.solveSmooth(ctx, qp, o)
	} else {
		sol, err = SolveConeQP(ctx, qp, o)
	}
	if sol == nil {
		return nil, err
	}
	res := &Result{Status: sol.Status, Gap: sol.Gap, Iterations: sol.Iterations}
	if len(sol.Z) >= len(rb.lin) {
		res.Dual = rb.dual(sol.Z)
	}
	robustObjective := func(w solvers.Weights) (float64, error) { return solvers.RobustObjective(p, w, pert) }
	err = res.finish(p, "robust program", sol.X, robustObjective, err)
	// Without an error finish has computed RobustObjective, which must agree
	// with the optimal cone program's objective.
	tol := math.Max(1e-6, 100*o.Tol)
	if err == nil && sol.Status == Optimal && math.Abs(sol.PrimalObjective-res.Objective) > tol*math.Max(1, math.Abs(res.Objective)) {
		err = fmt.Errorf("ipm: robust cone program objective %.12g but RobustObjective %.12g at its solution (%v): the formulation and robust.go disagree",
			sol.PrimalObjective, res.Objective, pert)
	}
	res.Seconds = time.Since(start).Seconds()
	return res, err
}

// smooth reports whether the loss is BCE or logistic, whose robust terms
// (1/n) softplus(a_k) enter the cone QP through a model (setSmoothModel).
func (rb *robustCone) smooth() bool {
	return rb.p.Loss == solvers.BCELoss || rb.p.Loss == solvers.LogisticLoss
}

// setSmoothModel sets, in qp, the second-order model q_k of
// (1/n) softplus at a0_k for every sample: Q's diagonal and c on v_k, and
// the vertex m*_k = a0_k − q_k'(a0_k)/q_k” as the right-hand side of the
// row v_k ≥ m*_k; it returns the model's constant and leaves its gradient
// and curvature at a0 in g and h.
func (rb *robustCone) setSmoothModel(qp *ConeQP, a0, g, h []float64) float64 {
	off := 2*rb.np*rb.d + 2*rb.np
	inv := 1 / float64(rb.n)
	var hmax, offset float64
	for k, v := range a0 {
		s := solvers.Logistic(v)
		g[k], h[k] = s*inv, s*(1-s)*inv
		hmax = math.Max(hmax, h[k])
	}
	for k, v := range a0 {
		h[k] = math.Max(h[k], 1e-12*hmax)
		qp.Q.SetSym(off+k, off+k, h[k])
		qp.C[off+k] = g[k] - h[k]*v
		// The row v_k − m*_k ≥ 0 is −v_k + s = −m*_k in Gx + s = h.
		qp.H[rb.lossRow[k]+1] = -(v - g[k]/h[k])
		offset += solvers.Softplus(v)*inv - g[k]*v + 0.5*h[k]*v*v
	}
	return offset
}

// marginValues sets a_k, the worst-case margins at the point x/τ of the
// robust cone QP, from the loss rows v_k − a_k.
func (rb *robustCone) marginValues(a, x []float64, tau float64) {
	off := 2*rb.np*rb.d + 2*rb.np
	for k, r := range rb.lossRow {
		e := rb.lin[r]
		val := e.c
		for t, i := range e.idx {
			val += e.val[t] * x[i] / tau
		}
		a[k] = x[off+k]/tau - val
	}
}

// solveSmooth solves the robust program of a BCE or logistic loss by the
// cone QP with the model of setSmoothModel, rebuilt at the iterate's
// margins as the interior-point method proceeds (as Newton does for the
// standard program), until the model's gradient matches the loss's,
// |σ(a_k) − n·q_k'(a_k)| ≤ Tol.
func (rb *robustCone) solveSmooth(ctx context.Context, qp *ConeQP, o Options) (*ConeQPResult, error) {
	start := time.Now()
	n := rb.n
	a0, a, g, h := make([]float64, n), make([]float64, n), make([]float64, n), make([]float64, n)
	offset := rb.setSmoothModel(qp, a0, g, h)
	if err := qp.validate(); err != nil {
		return nil, err
	}
	prob := &coneProblem{c: qp.C, h: qp.H, b: []float64{}, k: qp.K, ops: newDenseQP(qp), offset: offset}
	prob.relinearize = func(x []float64, tau float64) (bool, error) {
		rb.marginValues(a, x, tau)
		var worst float64
		for k, v := range a {
			e := solvers.Logistic(v) - float64(n)*(g[k]+h[k]*(v-a0[k]))
			worst = math.Max(worst, math.Abs(e))
		}
		if worst <= o.Tol {
			return false, nil
		}
		copy(a0, a)
		prob.offset = rb.setSmoothModel(qp, a0, g, h)
		return true, nil
	}
	sol, err := solveCone(ctx, prob, o)
	return sol.result(start), err
}

// robustLin is an affine expression Σ val_i x[idx_i] + c.
type robustLin struct {
	idx []int
	val []float64
	c   float64
}

func (e robustLin) add(a float64, f robustLin) robustLin {
	out := robustLin{c: e.c + a*f.c}
	out.idx = append(append(out.idx, e.idx...), f.idx...)
	out.val = append(out.val, e.val...)
	for _, v := range f.val {
		out.val = append(out.val, a*v)
	}
	return out
}

func robustVar(i int) robustLin { return robustLin{idx: []int{i}, val: []float64{1}} }

// robustCone builds the cone QP of SolveRobust. Variables: u_j at
// [j·d, (j+1)·d), t_j at 2Pd + j, ξ_k (hinge) or z_k (squared) at
// 2Pd + 2P + k, then the epigraph auxiliaries as they are allocated.
type robustCone struct {
	p           *solvers.Program
	pert        solvers.Perturbation
	kind        solvers.Norm
	n, d, np, f int
	nx          int
	lin         []robustLin   // orthant rows: expression ≥ 0
	soc         [][]robustLin // second-order cones: (e₀, e₁ …) ∈ Q
	// groupRow[j] is the first of group j's n robust-constraint rows,
	// lossRow[k] the first loss row of sample k (hinge: the margin row;
	// squared: z_k + (ŷ_k − y_k) − ε r_k ≥ 0, then z_k − (ŷ_k − y_k) − ε r_k ≥ 0).
	groupRow, lossRow []int
	// epi[k] locates sample k's dual-norm epigraph r_k ≥ ‖g_k^f‖_*: its
	// first orthant row (ℓ_∞ and ℓ₁ sets: pairs ρ − e_l, ρ + e_l), or for
	// the ℓ₂ set the index of its second-order cone in soc.
	epi []int
}

func newRobustCone(p *solvers.Program, pert solvers.Perturbation) *robustCone {
	n, d, np := p.Dims()
	kind := pert.Norm.Canonical()
	rb := &robustCone{p: p, pert: pert, kind: kind, n: n, d: d, np: np, f: solvers.PerturbedFeatures(d, p.Bias)}
	ng := 2 * np
	nu := ng * d
	rb.nx = nu + ng + n
	robust := pert.Eps > 0 && rb.f > 0

	// Groups: robust pattern constraints and norm epigraphs.
	for j := 0; j < ng; j++ {
		i := j % np
		var rho robustLin
		if robust {
			e := make([]robustLin, rb.f)
			for l := range e {
				e[l] = robustVar(j*d + l)
			}
			rho = rb.dualNormBound(e)
		}
		rb.groupRow = append(rb.groupRow, len(rb.lin))
		for k := 0; k < n; k++ {
			s := -1.0
			if p.D[i][k] {
				s = 1
			}
			row := robustLin{}
			for l, x := range p.X.RawRowView(k)[:d] {
				if x != 0 {
					row.idx = append(row.idx, j*d+l)
					row.val = append(row.val, s*x)
				}
			}
			if robust {
				row = row.add(-pert.Eps, rho)
			}
			rb.lin = append(rb.lin, row)
		}
		cone := []robustLin{robustVar(nu + j)}
		for l := 0; l < d; l++ {
			cone = append(cone, robustVar(j*d+l))
		}
		rb.soc = append(rb.soc, cone)
	}

	// Samples: the worst-case loss terms.
	for k := 0; k < n; k++ {
		xk := p.X.RawRowView(k)[:d]
		// g_k entry l and ŷ_k − y_k as expressions.
		gk := make([]robustLin, d)
		for i := 0; i < np; i++ {
			if !p.D[i][k] {
				continue
			}
			for l := 0; l < d; l++ {
				gk[l].idx = append(gk[l].idx, i*d+l, (np+i)*d+l)
				gk[l].val = append(gk[l].val, 1, -1)
			}
		}
		var yhat robustLin
		for l := 0; l < d; l++ {
			yhat = yhat.add(xk[l], gk[l])
		}
		var rk robustLin
		if robust {
			if rb.kind == solvers.L2 {
				rb.epi = append(rb.epi, len(rb.soc))
			} else {
				rb.epi = append(rb.epi, len(rb.lin))
			}
			rk = rb.dualNormBound(gk[:rb.f])
		}
		slack := robustVar(nu + ng + k)
		switch p.Loss {
		case solvers.BCELoss, solvers.LogisticLoss:
			// v_k − a_k ≥ 0 with a_k = c_k ŷ_k + ε|c_k| r_k, the worst case
			// of c_k(x_k + δ)ᵀg_k, and v_k ≥ m*_k (the vertex of the model
			// of softplus, set by setSmoothModel): the model, a convex
			// quadratic q(v_k), is then increasing in a_k, as softplus is;
			// without the second row it would reward raising a_k towards
			// its vertex through the free auxiliaries r_k.
			ck := p.Loss.MarginScale(p.Y[k])
			rb.lossRow = append(rb.lossRow, len(rb.lin))
			row := slack.add(-ck, yhat)
			if robust {
				row = row.add(-pert.Eps*math.Abs(ck), rk)
			}
			rb.lin = append(rb.lin, row, slack)
		case solvers.HingeLoss:
			// ξ_k ≥ 0 and ξ_k − 1 + y_k ŷ_k − ε r_k ≥ 0.
			rb.lin = append(rb.lin, slack)
			rb.lossRow = append(rb.lossRow, len(rb.lin))
			row := slack.add(p.Y[k], yhat)
			row.c = -1
			if robust {
				row = row.add(-pert.Eps, rk)
			}
			rb.lin = append(rb.lin, row)
		default:
			// z_k ∓ (ŷ_k − y_k) − ε r_k ≥ 0.
			res := yhat
			res.c = -p.Y[k]
			rb.lossRow = append(rb.lossRow, len(rb.lin))
			for _, sg := range []float64{-1, 1} {
				row := slack.add(sg, res)
				if robust {
					row = row.add(-pert.Eps, rk)
				}
				rb.lin = append(rb.lin, row)
			}
		}
	}
	return rb
}

// dual returns the certificate's hint from the multipliers z of the
// orthant rows (see certify.Hint): α_j[k] of group j's robust constraint
// S_i[k] x_kᵀu_j − ε ρ_j ≥ 0, and the loss dual μ_k = ∂ℓ/∂ŷ_k: −y_k z_k of
// the hinge margin row, a − b from the squared loss's two rows
// z_k ∓ (ŷ_k − y_k) − ε r_k ≥ 0 (multipliers a, b), with λ_k = a + b (the
// term's size, Hint.Lambda; a + b = z_k at the optimum). The perturbation is left
// to the certifier (the worst case at the point).
func (rb *robustCone) dual(z []float64) *certify.Hint {
	ng := 2 * rb.np
	a := mat.NewDense(ng, rb.n, nil)
	for j := 0; j < ng; j++ {
		copy(a.RawRowView(j), z[rb.groupRow[j]:rb.groupRow[j]+rb.n])
	}
	h := &certify.Hint{Mu: make([]float64, rb.n), Alpha: a}
	if rb.p.Loss == solvers.SquaredLoss {
		h.Lambda = make([]float64, rb.n)
	}
	for k, r := range rb.lossRow {
		switch rb.p.Loss {
		case solvers.HingeLoss:
			h.Mu[k] = -rb.p.Y[k] * z[r]
		case solvers.SquaredLoss:
			h.Mu[k], h.Lambda[k] = z[r]-z[r+1], z[r]+z[r+1]
		default:
			h.Mu[k] = rb.p.Loss.MarginScale(rb.p.Y[k]) * z[r]
		}
	}
	if len(rb.epi) == rb.n {
		// The slope of the Lagrangian in g_k^f through the epigraph rows:
		// p_l − q_l from the multipliers of ρ − e_l ≥ 0 and ρ + e_l ≥ 0, or
		// −z₁ from the cone (ρ, e) ∈ Q.
		h.Slopes = mat.NewDense(rb.n, rb.d, nil)
		socStart := len(rb.lin)
		var offs []int
		for _, c := range rb.soc {
			offs = append(offs, socStart)
			socStart += len(c)
		}
		for k, at := range rb.epi {
			row := h.Slopes.RawRowView(k)
			for l := 0; l < rb.f; l++ {
				if rb.kind == solvers.L2 {
					row[l] = -z[offs[at]+1+l]
				} else {
					row[l] = z[at+2*l] - z[at+2*l+1]
				}
			}
		}
	}
	return h
}

// dualNormBound adds the epigraph of ‖e‖_* (e affine, length f) and returns
// an affine ρ with ρ ≥ ‖e‖_* on the feasible set (equality is attainable).
func (rb *robustCone) dualNormBound(e []robustLin) robustLin {
	switch rb.kind {
	case solvers.L2:
		r := robustVar(rb.nx)
		rb.nx++
		rb.soc = append(rb.soc, append([]robustLin{r}, e...))
		return r
	case solvers.L1:
		r := robustVar(rb.nx)
		rb.nx++
		for _, el := range e {
			rb.lin = append(rb.lin, r.add(-1, el), r.add(1, el))
		}
		return r
	}
	// ℓ₁: −a ≤ e ≤ a, ρ = 1ᵀa.
	var rho robustLin
	for _, el := range e {
		a := robustVar(rb.nx)
		rb.nx++
		rb.lin = append(rb.lin, a.add(-1, el), a.add(1, el))
		rho = rho.add(1, a)
	}
	return rho
}

// assemble returns G, h and the cone of the rows: a row "e(x) ∈ cone" is
// G = −coefficients, h = constant (Gx + s = h, s in the cone); the orthant
// rows come first, then the second-order cones.
func (rb *robustCone) assemble() (*mat.Dense, []float64, Cone) {
	k := Cone{Orthant: len(rb.lin)}
	rows := append([]robustLin(nil), rb.lin...)
	for _, c := range rb.soc {
		k.SOC = append(k.SOC, len(c))
		rows = append(rows, c...)
	}
	g := mat.NewDense(len(rows), rb.nx, nil)
	h := make([]float64, len(rows))
	for r, e := range rows {
		row := g.RawRowView(r)
		for t, i := range e.idx {
			row[i] -= e.val[t]
		}
		h[r] = e.c
	}
	return g, h, k
}

// coneQP assembles the robust program (see assemble).
func (rb *robustCone) coneQP() *ConeQP {
	g, h, k := rb.assemble()
	ng := 2 * rb.np
	nu := ng * rb.d
	c := make([]float64, rb.nx)
	for j := 0; j < ng; j++ {
		c[nu+j] = rb.p.Beta
	}
	qp := &ConeQP{C: c, G: g, H: h, K: k}
	if rb.smooth() {
		qp.Q = mat.NewSymDense(rb.nx, nil) // the model's (setSmoothModel)
	} else if rb.p.Loss == solvers.HingeLoss {
		for kk := 0; kk < rb.n; kk++ {
			c[nu+ng+kk] = 1 / float64(rb.n)
		}
	} else {
		q := mat.NewSymDense(rb.nx, nil)
		for kk := 0; kk < rb.n; kk++ {
			q.SetSym(nu+ng+kk, nu+ng+kk, 1)
		}
		qp.Q = q
	}
	return qp
}
