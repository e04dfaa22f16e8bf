package ipm

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/convexnn/convexnn/solvers"
	"gonum.org/v1/gonum/mat"
)

// SolveRobust solves the robust convex training program of section
// "Convex Adversarial Training", for every loss, by the interior-point
// method of SolveConeQP with a structured KKT solver (robustNet): the
// ground truth for the robust programs.
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
// program) until the model's gradient matches the loss's to Tol.
//
// The program has 2Pd + 2P + n variables plus the epigraph auxiliaries
// ((2P + n)·f for the ℓ∞ set) and about 2P(n + 2f) + n(2 + 2f) cone rows, but
// nothing of that size is factored: every auxiliary is eliminated in closed
// form block by block (per group, per sample; for the ℓ∞ set through the
// sum of its f auxiliaries), the samples couple the patterns through one
// product over pattern pairs, and what remains is a dense dP×dP Cholesky
// factorization per iteration (see robustNet). Memory is about
// 2(dP)² + n·d² + P²(n + d²)/2 floats (RobustMemoryEstimate).
func SolveRobust(ctx context.Context, p *solvers.Program, pert solvers.Perturbation, o Options) (*Result, error) {
	start := time.Now()
	if err := checkProgram(p); err != nil {
		return nil, err
	}
	if err := pert.Validate(); err != nil {
		return nil, err
	}
	if o.MaxIter == 0 {
		o.MaxIter = 400
	}
	o, err := o.resolve()
	if err != nil {
		return nil, err
	}
	need, what := RobustMemoryEstimate(p, pert)
	if err := o.fits(need, what, "use the robust ADMM (admm.VariantRobust, -solver admm), which needs O(n(d + P) + dP) memory"); err != nil {
		return nil, err
	}
	rn := newRobustNet(p, pert)
	prob := rn.coneProblem()
	if rn.smooth {
		prob = rn.smoothProblem()
	}
	robustObjective := func(w solvers.Weights) (float64, error) { return solvers.RobustObjective(p, w, pert) }
	build := func(sol *coneSolution, err error) (*Result, error) {
		res := &Result{Status: sol.status, Gap: sol.relgap, Iterations: sol.iters}
		if len(sol.z) == rn.k.Dim() {
			res.Dual = rn.dual(sol.z)
		}
		err = res.finish(p, "robust program", sol.x, robustObjective, err)
		// Without an error finish has computed RobustObjective, which must
		// agree with the optimal cone program's objective.
		tol := math.Max(1e-6, 100*o.Tol)
		if err == nil && sol.status == Optimal && math.Abs(sol.pcost-res.Objective) > tol*math.Max(1, math.Abs(res.Objective)) {
			err = fmt.Errorf("ipm: robust cone program objective %.12g but RobustObjective %.12g at its solution (%v): the formulation and robust.go disagree",
				sol.pcost, res.Objective, pert)
		}
		return res, err
	}
	res, err := solveChecked(ctx, prob, o, p, pert, build)
	if res != nil {
		res.Seconds = time.Since(start).Seconds()
	}
	return res, err
}

// setSmoothModel sets the second-order model q_k of (1/n) softplus at a0_k
// for every sample: Q's diagonal and c on v_k, and the vertex
// m*_k = a0_k − q_k'(a0_k)/q_k” as the right-hand side of the row
// v_k ≥ m*_k; it returns the model's constant and leaves its gradient and
// curvature at a0 in g and h.
func (rn *robustNet) setSmoothModel(a0, g, h []float64) float64 {
	inv := 1 / float64(rn.n)
	var hmax, offset float64
	for k, v := range a0 {
		s := solvers.Logistic(v)
		g[k], h[k] = s*inv, s*(1-s)*inv
		hmax = math.Max(hmax, h[k])
	}
	for k, v := range a0 {
		h[k] = math.Max(h[k], 1e-12*hmax)
		rn.qdiag[k] = h[k]
		rn.c[rn.slack(k)] = g[k] - h[k]*v
		// The row v_k − m*_k ≥ 0 is −v_k + s = −m*_k in Gx + s = h.
		rn.h[rn.lossRow(k)+1] = -(v - g[k]/h[k])
		offset += solvers.Softplus(v)*inv - g[k]*v + 0.5*h[k]*v*v
	}
	return offset
}

// marginValues sets a_k = c_k ŷ_k + ε|c_k| r_k, the worst-case margins at
// the point x/τ, from the loss rows v_k − a_k.
func (rn *robustNet) marginValues(a, x []float64, tau float64) {
	rn.values(x)
	for k := range a {
		a[k] = (x[rn.slack(k)] - rn.val[rn.lossRow(k)]) / tau
	}
}

// smoothProblem returns the robust program of a BCE or logistic loss as
// the cone QP with the model of setSmoothModel, rebuilt at the iterate's
// margins as the interior-point method proceeds (as Newton does for the
// standard program), until the model's gradient matches the loss's,
// |σ(a_k) − n·q_k'(a_k)| ≤ tol, the method's current tolerance. The model
// waits for an iterate whose residuals are at most 10⁻²: the margins of the
// first, far from feasible, iterates are meaningless, and a model built
// there (curvature e^{−|a|}) sends the method towards an infeasibility
// certificate.
func (rn *robustNet) smoothProblem() *coneProblem {
	n := rn.n
	a0, a, g, h := make([]float64, n), make([]float64, n), make([]float64, n), make([]float64, n)
	rn.offset = rn.setSmoothModel(a0, g, h)
	prob := rn.coneProblem()
	prob.relinearizeResidual = 1e-2
	prob.relinearize = func(x []float64, tau float64) (bool, error) {
		rn.marginValues(a, x, tau)
		var worst float64
		for k, v := range a {
			e := solvers.Logistic(v) - float64(n)*(g[k]+h[k]*(v-a0[k]))
			worst = math.Max(worst, math.Abs(e))
		}
		if worst <= prob.tol {
			return false, nil
		}
		copy(a0, a)
		prob.offset = rn.setSmoothModel(a0, g, h)
		return true, nil
	}
	return prob
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

// robustCone is the robust program with every row written out as an
// affine expression (robustLin): the dense form used for small QPs such as
// RestoreRobust's projections, and in the tests the reference for
// robustNet. Variables: u_j at
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
