package ipm

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/convexnn/convexnn/solvers"
	"github.com/convexnn/convexnn/solvers/certify"
	"gonum.org/v1/gonum/floats"
	"gonum.org/v1/gonum/mat"
)

// PooledResult is the outcome of SolvePooled: the groups v_i, w_i (P×d),
// the objective, the method's status and gap, and its multipliers (Dual:
// Alpha is 2P×nr, one row per group over the pattern rows; Mu the hinge
// loss's dual per sample).
type PooledResult struct {
	Status     Status
	Weights    solvers.Weights
	Objective  float64
	Gap        float64
	Iterations int
	Seconds    float64
	Dual       *certify.Hint
}

// SolvePooled solves the two-layer program of eq. (convex_general) whose
// predictions pool over the rows of a stacked data matrix: X (nr×d) stacks
// fold blocks of n rows (block c, row k: the c-th row of sample k), the
// patterns D_i are over its nr rows, and
//
//	min ℓ(Σ_i (1/fold) S (D_iX(v_i − w_i)), y) + β Σ_i (‖v_i‖₂ + ‖w_i‖₂)
//	s.t. (2D_i − I)Xv_i ≥ 0, (2D_i − I)Xw_i ≥ 0,
//
// where S sums the fold blocks (ŷ_k is the mean over sample k's rows).
// With the patches of images as the rows this is the two-layer CNN with
// global average pooling (Ergen & Pilanci; solvers/cnn); fold = 1 is Solve's
// program. The method and its structured KKT solver are Solve's: group j's
// constraint rows add Xᵀdiag(ω_j)X to a d×d block and the pooled
// predictions couple the groups through F (n×dP), so an iteration costs
// about 2P·2(nr + d)d² + 2·min(n, dP)(dP)² flops, linear in the number of
// constraint rows, where a dense cone program would hold 2P·nr × 2Pd
// entries. The squared and hinge losses only.
func SolvePooled(ctx context.Context, x *mat.Dense, fold int, d solvers.Patterns, y []float64, loss solvers.Loss, beta float64, o Options) (*PooledResult, error) {
	start := time.Now()
	if x == nil {
		return nil, errors.New("ipm: SolvePooled: no data matrix X")
	}
	if err := solvers.CheckFinite("ipm: SolvePooled: X", x); err != nil {
		return nil, err
	}
	nr, dim := x.Dims()
	n := len(y)
	switch {
	case n == 0:
		return nil, errors.New("ipm: SolvePooled: no labels y")
	case fold < 1 || nr != fold*n:
		return nil, fmt.Errorf("ipm: SolvePooled: X has %d rows, need fold·n = %d·%d", nr, fold, n)
	case len(d) == 0:
		return nil, errors.New("ipm: SolvePooled: no activation patterns")
	case !(beta > 0) || beta > 1e300:
		return nil, fmt.Errorf("ipm: SolvePooled: β = %v, need 0 < β < ∞", beta)
	}
	for i, di := range d {
		if len(di) != nr {
			return nil, fmt.Errorf("ipm: SolvePooled: pattern %d has %d entries, X has %d rows", i, len(di), nr)
		}
	}
	o, err := o.resolveCone(loss, "ipm: SolvePooled solves the squared and hinge losses (second-order cone programs), not the %v loss")
	if err != nil {
		return nil, err
	}
	if err := loss.CheckLabels(y); err != nil {
		return nil, fmt.Errorf("ipm: SolvePooled: %w", err)
	}
	need, what := netConeMemory(nr, n, dim, len(d))
	if err := o.fits(need, what, "use fewer patterns, or ADMM"); err != nil {
		return nil, err
	}
	// The program's fields as netCone reads them; Y has n entries, not nr.
	p := &solvers.Program{X: x, Y: y, D: d, Loss: loss, Beta: beta}
	var nc *netCone
	if loss == solvers.HingeLoss {
		nc = newNetConeModel(p, nil, nil, 0)
	} else {
		r := make([]float64, n)
		floats.ScaleTo(r, -1, y)
		nc = newNetConeModel(p, nil, r, 0.5*floats.Dot(y, y))
	}
	sol, err := solveCone(ctx, nc.problem(), o)
	if sol == nil {
		return nil, err
	}
	res := &PooledResult{Status: sol.status, Gap: sol.relgap, Iterations: sol.iters}
	np := len(d)
	res.Weights = solvers.Weights{V: mat.NewDense(np, dim, nil), W: mat.NewDense(np, dim, nil)}
	if sol.status != PrimalInfeasible && sol.status != DualInfeasible {
		for i := 0; i < np; i++ {
			copy(res.Weights.V.RawRowView(i), sol.x[i*dim:(i+1)*dim])
			copy(res.Weights.W.RawRowView(i), sol.x[(np+i)*dim:(np+i+1)*dim])
		}
	} else if err == nil {
		err = fmt.Errorf("ipm: interior point reports the pooled program %v, which it is not: numerical failure", sol.status)
	}
	// The objective at the weights, with the pooled predictions.
	u := make([]float64, nc.nu)
	copy(u, sol.x[:nc.nu])
	if res.Status == PrimalInfeasible || res.Status == DualInfeasible {
		clear(u)
	}
	nc.xu(u)
	nc.fuFromZt()
	var reg float64
	for j := 0; j < nc.ng; j++ {
		reg += floats.Norm(u[j*dim:(j+1)*dim], 2)
	}
	res.Objective = loss.Value(nc.fu, y) + beta*reg
	if len(sol.z) == nc.m {
		res.Dual = nc.dual(sol.z)
	}
	res.Seconds = time.Since(start).Seconds()
	return res, err
}
