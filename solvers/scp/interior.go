package scp

import (
	"context"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/convexnn/convexnn/solvers"
	"github.com/convexnn/convexnn/solvers/ipm"
	"gonum.org/v1/gonum/floats"
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
	if loss == solvers.SquaredLoss {
		// The support is not sharp in an interior point: try it at several
		// levels and keep the polished point with the smallest gap.
		for _, level := range []float64{1e-3, 1e-4, 1e-5, 1e-6} {
			if a := polishLasso(h, y, beta, r.Alpha, level); a != nil {
				if g := gapOf(a); g < res.Gap {
					res.Alpha, res.Objective, res.Gap = a, objOf(a), g
				}
			}
		}
	}
	res.Seconds = time.Since(start).Seconds()
	return res, err
}

// polishLasso returns the exact Lasso solution on the support and signs of
// alpha, the interior point's: with S the entries above level times the
// largest and s their signs, a_S solves H_SᵀH_S a = H_Sᵀy − βs (by the QR
// factorization of H_S, not the normal matrix, whose condition number is
// squared), a zero elsewhere; entries whose sign flips leave S and the
// system is solved again (three times at most); nil when H_S is rank
// deficient or wider than tall, or signs still flip. The interior-point method forms HᵀH and stalls
// near a relative gap of 10⁻⁶ on ill-conditioned features; this polish,
// kept only when its duality gap is smaller, reaches the optimum to
// rounding when the support is right.
func polishLasso(h *mat.Dense, y []float64, beta float64, alpha []float64, level float64) []float64 {
	amax := floats.Norm(alpha, math.Inf(1))
	var supp []int
	for i, v := range alpha {
		if math.Abs(v) > level*amax {
			supp = append(supp, i)
		}
	}
	for range 3 {
		a, flipped := polishOn(h, y, beta, alpha, supp)
		if a == nil || len(flipped) == 0 {
			return a
		}
		supp = slices.DeleteFunc(supp, func(i int) bool { return slices.Contains(flipped, i) })
	}
	return nil
}

// polishOn solves the Lasso restricted to supp with alpha's signs; it
// returns the solution, or the entries whose signs flipped (nil, nil when
// the system cannot be solved).
func polishOn(h *mat.Dense, y []float64, beta float64, alpha []float64, supp []int) ([]float64, []int) {
	n, nf := h.Dims()
	m := len(supp)
	if m == 0 || m > n {
		return nil, nil
	}
	hs := mat.NewDense(n, m, nil)
	sign := make([]float64, m)
	for c, i := range supp {
		for k := 0; k < n; k++ {
			hs.Set(k, c, h.At(k, i))
		}
		sign[c] = math.Copysign(1, alpha[i])
	}
	var qr mat.QR
	qr.Factorize(hs)
	var a0 mat.Dense // least squares: min ‖H_S a − y‖
	if err := qr.SolveTo(&a0, false, mat.NewDense(n, 1, append([]float64(nil), y...))); err != nil {
		return nil, nil
	}
	// a = a0 − (RᵀR)⁻¹βs: solve Rᵀw = βs, then R c = w.
	var r mat.Dense
	qr.RTo(&r)
	rm := mat.NewDense(m, m, nil)
	for i := 0; i < m; i++ {
		for j := i; j < m; j++ {
			rm.Set(i, j, r.At(i, j))
		}
	}
	var w, c mat.Dense
	if err := w.Solve(rm.T(), mat.NewDense(m, 1, floats.ScaleTo(make([]float64, m), beta, sign))); err != nil {
		return nil, nil
	}
	if err := c.Solve(rm, &w); err != nil {
		return nil, nil
	}
	out := make([]float64, nf)
	var flipped []int
	for k, i := range supp {
		v := a0.At(k, 0) - c.At(k, 0)
		if math.IsNaN(v) {
			return nil, nil
		}
		if math.Copysign(1, v) != sign[k] {
			flipped = append(flipped, i)
		}
		out[i] = v
	}
	if len(flipped) > 0 {
		return nil, flipped
	}
	return out, nil
}
