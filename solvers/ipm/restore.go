package ipm

import (
	"context"
	"fmt"
	"math"

	"github.com/convexnn/convexnn/solvers"
	"gonum.org/v1/gonum/mat"
)

// RestoreRobust returns weights that satisfy the robust
// constraints of eq. (robust_constraint) exactly, in floating point, as
// close as it can to wt: every group u_j (v_i or w_i) that violates
//
//	(2D_i − I) X u_j ≥ ε‖u_j^f‖_*
//
// is replaced by the solution of the small cone QP
//
//	minimize ½‖u − u_j‖²  subject to  (2D_i − I) X u ≥ ε ρ 1 + η 1,  ρ ≥ ‖u^f‖_*,
//
// solved by SolveConeQP (d + f variables for the ℓ_∞ set), with a margin
// η = τ‖u_j‖₂ max_k ‖x_k‖₂ that absorbs the interior-point residual; τ
// starts at 1e-8 and grows 100× (up to three times) until the returned
// group passes the exact check. Groups that already satisfy the
// constraints, and zero groups, are kept bitwise. When the pattern admits no
// neuron with a positive margin at every point (the QP is infeasible for
// every η > 0), or when no candidate passes the exact check (the
// interior-point method can stall on nearly degenerate patterns), the group
// is set to zero, which is always feasible.
//
// A first-order solver such as admm.Robust meets the robust constraints only
// to its primal residual, so the network recovered from its iterate is not
// certified (solvers.CertifiedPoints) at the points where some neuron's
// margin is within that residual; after this restoration every training
// point is certified, because a robust-feasible group has margin ≥ 0 at
// every point. The change to the robust objective is of the order of the
// violation; the caller can measure it with solvers.RobustObjective. The
// number of groups changed is returned.
func RestoreRobust(ctx context.Context, p *solvers.Program, wt solvers.Weights, pert solvers.Perturbation) (solvers.Weights, int, error) {
	if err := p.CheckRobust(wt, pert); err != nil {
		return solvers.Weights{}, 0, err
	}
	n, d, np := p.Dims()
	f := solvers.PerturbedFeatures(d, p.Bias)
	kind := pert.Norm.Canonical()
	out := solvers.Weights{V: mat.DenseCopyOf(wt.V), W: mat.DenseCopyOf(wt.W)}
	if pert.Eps == 0 || f == 0 {
		pert.Eps = 0
	}
	var xmax float64
	for k := 0; k < n; k++ {
		xmax = math.Max(xmax, mat.Norm(p.X.RowView(k), 2))
	}
	changed := 0
	xu := make([]float64, n)
	for j := 0; j < 2*np; j++ {
		i := j % np
		m := out.V
		if j >= np {
			m = out.W
		}
		u := m.RawRowView(i)
		if robustGroupViolation(p, i, u, pert.Eps, kind, f, xu) <= 0 {
			continue
		}
		if err := ctx.Err(); err != nil {
			return solvers.Weights{}, changed, err
		}
		nu := math.Sqrt(robustDot(u, u))
		var fixed []float64
		for tau := 1e-8; tau <= 1e-2 && fixed == nil; tau *= 100 {
			cand, err := robustProjectGroup(ctx, p, i, u, pert, kind, f, tau*nu*xmax)
			if err != nil {
				return solvers.Weights{}, changed, fmt.Errorf("ipm: restoring robust feasibility of group %d: %w", j, err)
			}
			if robustGroupViolation(p, i, cand, pert.Eps, kind, f, xu) <= 0 {
				fixed = cand
			}
		}
		if fixed == nil {
			// No candidate passed the exact check: the zero group does.
			fixed = make([]float64, d)
		}
		copy(u, fixed)
		changed++
	}
	return out, changed, nil
}

// robustGroupViolation returns max_k ε‖u^f‖_* − (2d_ik − 1) x_kᵀu (≤ 0 when
// the group is robust-feasible), 0 for a zero group; xu is scratch (n).
func robustGroupViolation(p *solvers.Program, i int, u []float64, eps float64, kind solvers.Norm, f int, xu []float64) float64 {
	zero := true
	for _, v := range u {
		if v != 0 {
			zero = false
			break
		}
	}
	if zero {
		return 0
	}
	rad := eps * kind.Dual(u[:f])
	worst := math.Inf(-1)
	for k, on := range p.D[i] {
		s := -1.0
		if on {
			s = 1
		}
		worst = math.Max(worst, rad-s*robustDot(p.X.RawRowView(k), u))
	}
	return worst
}

// robustDot returns aᵀb.
func robustDot(a, b []float64) float64 {
	var s float64
	for q, v := range a {
		s += v * b[q]
	}
	return s
}

// robustProjectGroup solves the projection QP of RestoreRobust
// for one group of pattern i with margin eta.
func robustProjectGroup(ctx context.Context, p *solvers.Program, i int, u0 []float64, pert solvers.Perturbation, kind solvers.Norm, f int, eta float64) ([]float64, error) {
	n, d, _ := p.Dims()
	rb := &robustCone{p: p, pert: pert, kind: kind, n: n, d: d, f: f, nx: d}
	var rho robustLin
	if pert.Eps > 0 {
		e := make([]robustLin, f)
		for l := range e {
			e[l] = robustVar(l)
		}
		rho = rb.dualNormBound(e)
	}
	for k, on := range p.D[i] {
		s := -1.0
		if on {
			s = 1
		}
		row := robustLin{c: -eta}
		for l, x := range p.X.RawRowView(k)[:d] {
			if x != 0 {
				row.idx = append(row.idx, l)
				row.val = append(row.val, s*x)
			}
		}
		if pert.Eps > 0 {
			row = row.add(-pert.Eps, rho)
		}
		rb.lin = append(rb.lin, row)
	}
	g, h, k := rb.assemble()
	q := mat.NewSymDense(rb.nx, nil)
	c := make([]float64, rb.nx)
	for l := 0; l < d; l++ {
		q.SetSym(l, l, 1)
		c[l] = -u0[l]
	}
	sol, err := SolveConeQP(ctx, &ConeQP{Q: q, C: c, G: g, H: h, K: k}, Options{})
	if sol == nil {
		return nil, err
	}
	if sol.Status == PrimalInfeasible {
		// No u has a positive margin at every point: the pattern admits no
		// strictly robust neuron, and the zero group is the feasible choice.
		return make([]float64, d), nil
	}
	if sol.X == nil {
		if err == nil {
			err = fmt.Errorf("interior point ended %v", sol.Status)
		}
		return nil, err
	}
	// An inaccurate or unfinished solve still gives a candidate: the caller
	// checks its feasibility exactly.
	return append([]float64(nil), sol.X[:d]...), nil
}
