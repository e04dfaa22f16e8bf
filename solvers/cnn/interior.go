package cnn

import (
	"context"
	"errors"

	"github.com/convexnn/convexnn/solvers"
	"github.com/convexnn/convexnn/solvers/general"
	"github.com/convexnn/convexnn/solvers/ipm"
)

// SolveInteriorPoint solves the standard (not robust) program of p, squared
// or hinge loss, by an interior-point method to the relative tolerance tol
// (0: 1e-9), and certifies the result (general.CertifyDual).
//
// With average pooling the program is the two-layer program on the stacked
// patches (row k·n + m: patch k of image m) with predictions averaged over
// each image's K patches, which ipm.SolvePooled solves with the two-layer
// method's structured KKT solver: an iteration is linear in the nK rows,
// so 2000 images of 14×14 with 36 patches each and tens of patterns take
// seconds, where the dense cone program of general.SolveInteriorPoint
// would hold 2P·nK × 2Pf entries. Max pooling, whose winner constraints do
// not have that form, goes to general.SolveInteriorPoint. When ctx ends
// the solve, its best iterate so far is returned, certified, with ctx's
// error.
func (p *Problem) SolveInteriorPoint(ctx context.Context, tol float64) (*general.IPMResult, error) {
	if p.Pool == AvgPool {
		sol, err := p.solvePooled(ctx, tol, nil)
		if sol == nil {
			return nil, err
		}
		if cerr := sol.certify(); cerr != nil {
			return nil, cerr
		}
		return sol.res, err // ctx's error with the best iterate so far, certified
	}
	gp, err := p.Program()
	if err != nil {
		return nil, err
	}
	if tol == 0 {
		tol = 1e-9
	}
	return general.SolveInteriorPoint(ctx, gp, tol)
}

// pooledSolution is a solve of the average-pooling program by
// ipm.SolvePooledFrom: the result (certified by certify), the loss dual θ
// at it (the method's own for the hinge loss, the loss's derivative for
// the squared loss), the rows its working sets ended with, and the
// multipliers the certificate starts from.
type pooledSolution struct {
	res           *general.IPMResult
	theta         []float64
	rows          [][]int
	gp            *general.Program
	mu            []float64 // the method's loss dual (hinge), nil for the squared loss
	alpha, alphap []float64
}

// solvePooled is SolveInteriorPoint for average pooling without the
// certificate, with the rows' working sets starting from rows
// (ipm.SolvePooledFrom; rows of the stacked patches). It returns ctx's
// error with the iterate so far when ctx ends the solve, and nil without
// an iterate.
func (p *Problem) solvePooled(ctx context.Context, tol float64, rows [][]int) (*pooledSolution, error) {
	gp, err := p.Program()
	if err != nil {
		return nil, err
	}
	if tol == 0 {
		tol = 1e-9
	}
	if p.Loss != solvers.SquaredLoss && p.Loss != solvers.HingeLoss {
		return nil, errors.New("cnn: the interior-point method solves the squared and hinge losses (cone programs), not " + p.Loss.String() + ": use ADMM")
	}
	n, _ := p.X.Dims()
	nk := len(p.Patches)
	d := make(solvers.Patterns, len(p.Signs))
	for i, signs := range p.Signs {
		d[i] = make(solvers.Pattern, n*nk)
		for k := range p.Patches {
			copy(d[i][k*n:(k+1)*n], signs[k])
		}
	}
	// Up to 400 iterations per solve of the rows' working set: the steps
	// on these programs are short (55–80 iterations per solve on 2000
	// digits at 14×14 with 16 patterns).
	res, stop := ipm.SolvePooledFrom(ctx, p.stackedPatches(), nk, d, p.Y, p.Loss, p.Beta, rows, ipm.Options{Tol: tol, MaxIter: 400})
	if res == nil {
		return nil, stop
	}
	out := &general.IPMResult{Status: res.Status, Iterations: res.Iterations}
	np, f := res.Weights.V.Dims()
	out.W, out.Wp = make([]float64, np*f), make([]float64, np*f)
	for i := 0; i < np; i++ {
		copy(out.W[i*f:(i+1)*f], res.Weights.V.RawRowView(i))
		copy(out.Wp[i*f:(i+1)*f], res.Weights.W.RawRowView(i))
	}
	if out.Objective, err = gp.Objective(out.W, out.Wp); err != nil {
		return nil, err
	}
	sol := &pooledSolution{res: out, rows: res.Rows, gp: gp}
	if res.Dual != nil {
		a := res.Dual.Alpha.RawMatrix()
		sol.alpha, sol.alphap = a.Data[:np*a.Cols], a.Data[np*a.Cols:2*np*a.Cols]
		sol.mu = res.Dual.Mu
	} else {
		_, _, m := gp.Dims()
		sol.alpha, sol.alphap = make([]float64, m), make([]float64, m)
	}
	if sol.mu != nil {
		sol.theta = append([]float64(nil), sol.mu...)
		p.Loss.ClipDual(sol.theta, p.Y)
	} else {
		sol.theta = lossDual(gp, p.Loss, out.W, out.Wp)
	}
	return sol, stop
}

// certify sets the result's Bound (general.CertifyDual from the method's
// multipliers).
func (s *pooledSolution) certify() error {
	b, err := general.CertifyDual(s.gp, s.res.W, s.res.Wp, s.mu, s.alpha, s.alphap)
	if err != nil {
		return err
	}
	s.res.Bound = b
	return nil
}

// InteriorPointFits reports whether SolveInteriorPoint takes p: with
// average pooling every squared or hinge program (its cost is linear in
// the patches), with max pooling those general.InteriorPointFits takes.
func (p *Problem) InteriorPointFits() bool {
	if p.Loss != solvers.SquaredLoss && p.Loss != solvers.HingeLoss {
		return false
	}
	if p.Pool == AvgPool {
		return true
	}
	gp, err := p.Program()
	return err == nil && general.InteriorPointFits(gp)
}
