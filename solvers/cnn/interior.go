package cnn

import (
	"context"
	"errors"

	"github.com/convexnn/convexnn/solvers"
	"github.com/convexnn/convexnn/solvers/general"
	"github.com/convexnn/convexnn/solvers/ipm"
	"gonum.org/v1/gonum/mat"
)

// SolveInteriorPoint solves the standard (not robust) program of p, squared
// or hinge loss, by an interior-point method to the relative tolerance tol
// (0: 1e-9), and certifies the result (general.CertifyDual).
//
// With average pooling the program is the two-layer program on the stacked
// patches (row k·n + m: patch k of image m) with predictions averaged over
// each image's K patches, which ipm.SolvePooled solves with the two-layer
// method's structured KKT solver; with max pooling each pattern has its
// own rows, G_i's, and ipm.SolveRows solves it the same way. Each
// pattern's rows are a working set, so an iteration is linear in the rows
// a pattern needs, not in its nK: 2000 images of 14×14 with 36 patches
// each and tens of patterns take seconds, where the dense cone program of
// general.SolveInteriorPoint would hold 2P·nK × 2Pf entries. When ctx
// ends the solve, its best iterate so far is returned, certified, with
// ctx's error.
func (p *Problem) SolveInteriorPoint(ctx context.Context, tol float64) (*general.IPMResult, error) {
	if p.Loss == solvers.SquaredLoss || p.Loss == solvers.HingeLoss {
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

// solvePooled is SolveInteriorPoint without the certificate, with pattern
// i's working set of rows starting as starts[i] says (ipm.RowStart; rows
// of the stacked patches for average pooling, of G_i for max pooling). It returns ctx's
// error with the iterate so far when ctx ends the solve, and nil without
// an iterate.
func (p *Problem) solvePooled(ctx context.Context, tol float64, starts []ipm.RowStart) (*pooledSolution, error) {
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
	// Up to 400 iterations per solve of the rows' working set: the steps
	// on these programs are short (55–80 iterations per solve on 2000
	// digits at 14×14 with 16 patterns).
	o := ipm.Options{Tol: tol, MaxIter: 400}
	var res *ipm.Result
	var stop error
	if p.Pool == AvgPool {
		n, _ := p.X.Dims()
		nk := len(p.Patches)
		d := make(solvers.Patterns, len(p.Signs))
		for i, signs := range p.Signs {
			d[i] = make(solvers.Pattern, n*nk)
			for k := range p.Patches {
				copy(d[i][k*n:(k+1)*n], signs[k])
			}
		}
		res, stop = ipm.SolvePooledFrom(ctx, p.stackedPatches(), nk, d, p.Y, p.Loss, p.Beta, starts, o)
	} else {
		// Max pooling: pattern i's rows are G_i's (the signed winning
		// patch, the winner less every other patch), F_v's block i the
		// signed winning patches.
		g := make([]*mat.Dense, len(gp.Groups))
		for i, gr := range gp.Groups {
			g[i] = gr.G.(general.Matrix).M
		}
		res, stop = ipm.SolveRows(ctx, g, p.maxFvT(gp), p.Y, p.Loss, p.Beta, starts, o)
	}
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

// maxFvT returns F_vᵀ (fP×n) of a max-pooling program gp (its F blocks).
func (p *Problem) maxFvT(gp *general.Program) *mat.Dense {
	n, _ := p.X.Dims()
	f := p.Filter()
	blocks := gp.F.(general.Blocks)
	fvt := mat.NewDense(f*len(blocks), n, nil)
	for i, b := range blocks {
		fvt.Slice(i*f, (i+1)*f, 0, n).(*mat.Dense).Copy(b.T())
	}
	return fvt
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

// InteriorPointFits reports whether SolveInteriorPoint takes p: every
// squared or hinge program (its cost is linear in the rows the patterns
// need, with either pooling).
func (p *Problem) InteriorPointFits() bool {
	return p.Loss == solvers.SquaredLoss || p.Loss == solvers.HingeLoss
}
