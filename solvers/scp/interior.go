package scp

import (
	"context"
	"fmt"
	"time"

	"github.com/convexnn/convexnn/solvers"
	"github.com/convexnn/convexnn/solvers/ipm"
	"gonum.org/v1/gonum/mat"
)

// InteriorPointResult is the outcome of SolveInteriorPoint.
type InteriorPointResult struct {
	Alpha      []float64
	Objective  float64 // F(α)
	Gap        float64 // the duality gap at α: F(α) − Gap ≤ F* ≤ F(α)
	Status     string  // the interior-point method's
	Iterations int
	Seconds    float64
}

// SolveInteriorPoint solves eq. (SCP2), minimize ℓ(Hα, y) + β‖α‖₁, for the
// squared loss (Lasso) or BCE (BCELasso) with the n×N features h, by the
// interior-point method of ipm.SolveL1 (one N×N Cholesky factorization per
// iteration, tens of iterations whatever the conditioning of H), and
// certifies α by the duality gap of the program's dual-feasible point
// (Lasso.DualityGap, BCELasso.DualityGap). o.Tol (0: 1e-9) is the method's
// tolerance; a program whose N×N matrices exceed o.MaxMemory is refused
// before anything large is allocated.
func SolveInteriorPoint(ctx context.Context, h *mat.Dense, y []float64, loss solvers.Loss, beta float64, o ipm.Options) (*InteriorPointResult, error) {
	start := time.Now()
	var gapOf func([]float64) float64
	var objOf func([]float64) float64
	switch loss {
	case solvers.SquaredLoss:
		p := &Lasso{H: h, Y: y, Beta: beta}
		if err := p.Validate(); err != nil {
			return nil, err
		}
		gapOf, objOf = p.DualityGap, p.Objective
	case solvers.BCELoss:
		p := &BCELasso{H: NewDenseFeatures(h), Y: y, Beta: beta}
		if err := p.Validate(); err != nil {
			return nil, err
		}
		gapOf, objOf = p.DualityGap, p.Objective
	default:
		return nil, fmt.Errorf("scp: the interior-point method solves the squared and bce losses, not %v", loss)
	}
	if o.Tol == 0 {
		o.Tol = 1e-9
	}
	r, err := ipm.SolveL1(ctx, h, y, loss, beta, o)
	if r == nil {
		return nil, err
	}
	res := &InteriorPointResult{Alpha: r.Alpha, Objective: objOf(r.Alpha), Gap: gapOf(r.Alpha), Status: r.Status.String(), Iterations: r.Iterations}
	res.Seconds = time.Since(start).Seconds()
	return res, err
}
