package cnn

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/convexnn/convexnn/solvers"
	"github.com/convexnn/convexnn/solvers/general"
	"github.com/convexnn/convexnn/solvers/ipm"
	"gonum.org/v1/gonum/mat"
)

// RobustADMMOptions configure SolveRobustADMM.
type RobustADMMOptions struct {
	// Gap is the certified relative gap at which it stops (1e-6 when 0).
	Gap float64
	// MaxIter caps the ADMM steps of this call (20 000 when 0);
	// CertifyEvery is the number of steps between certificates (100 when
	// 0).
	MaxIter, CertifyEvery int
	// ADMM configures the splitting (general.ConeOptions).
	ADMM general.ConeOptions
	// Start continues from a saved state (RobustResult.State) of the same
	// problem and radius.
	Start *general.ConeState
	// Progress, when set, receives every certificate.
	Progress func(RobustIterate)
}

// RobustIterate is one certificate of SolveRobustADMM: the best feasible
// point's robust objective (Upper) and the best lower bound so far.
type RobustIterate struct {
	Iter              int
	Lower, Upper, Gap float64
	PrimalViolation   float64 // the largest robust-constraint violation of the raw iterate
	Elapsed           time.Duration
}

// RobustADMM is the ADMM splitting of SolveRobust's program (the
// appendix's robust CNN formulations, average or max pooling, every
// loss) by general.ConeADMM: the loss terms (the hinge and squared losses'
// epigraph rows; BCE and logistic as loss rows with the softplus prox),
// the regularization terms (the groups' second-order cones) and the linear
// inequality constraints (the robust sign and winner rows with their ℓ₁
// epigraphs) are the split blocks, and one factorization of the x-system
// serves every step. Certify makes the iterate feasible, group by group
// (the group's filter projected on its robust cone by a small
// interior-point solve, then robustForm.restore), for the upper bound, and
// turns the multipliers into the lower bound (robustForm.bound, valid for
// any multipliers). It keeps the best feasible point and bound seen.
type RobustADMM struct {
	fm    *robustForm
	admm  *general.ConeADMM
	proj  [2][]*groupProjection
	best  RobustResult
	start time.Time
}

// NewRobustADMM prepares the ADMM splitting of p's robust program at
// radius eps; st, when not nil, is a saved state (RobustADMM.State) of the
// same problem and radius to continue from.
func (p *Problem) NewRobustADMM(eps float64, o general.ConeOptions, st *general.ConeState) (*RobustADMM, error) {
	switch {
	case !(eps > 0) || math.IsInf(eps, 0):
		return nil, fmt.Errorf("cnn: robust training needs a radius 0 < ε < ∞, got %v", eps)
	case len(p.Signs) == 0:
		return nil, errors.New("cnn: no patterns (SamplePatterns)")
	case p.MaxRobust == WinnerBound && p.checkMaxRobust() == nil:
		return nil, errors.New("cnn: the winner bound is solved by the interior-point method (SolveRobust), not yet by the ADMM splitting")
	}
	if err := p.checkMaxRobust(); err != nil {
		return nil, err
	}
	smooth := p.Loss == solvers.BCELoss || p.Loss == solvers.LogisticLoss
	extra := 0
	if smooth {
		extra = len(p.Y)
	}
	fm, err := newRobustForm(p, eps, extra, true)
	if err != nil {
		return nil, err
	}
	prog := &general.ConeProgram{C: fm.c, G: fm.g, H: fm.h, K: fm.cone}
	n := fm.n
	switch {
	case p.Loss == solvers.SquaredLoss: // ½ Σ ζ_m²
		prog.Q = mat.NewSymDense(fm.nx, nil)
		for m := 0; m < n; m++ {
			prog.Q.SetSym(fm.oz+m, fm.oz+m, 1)
		}
	case smooth: // (1/n) softplus(ζ_m) on the slack of ζ_m + s = 0
		base := fm.cone.Dim()
		for m := 0; m < n; m++ {
			fm.g.Set(base+m, fm.oz+m, -1)
		}
		prog.LossRows = n
		inv := 1 / float64(n)
		prog.Prox = func(_ int, v, rho float64) float64 { return general.SoftplusProx(v, 1, inv, rho) }
	}
	a, err := general.NewConeADMM(prog, o, st)
	if err != nil {
		return nil, fmt.Errorf("cnn: %w", err)
	}
	r := &RobustADMM{fm: fm, admm: a, proj: fm.groupProjections(), start: time.Now()}
	// The splitting keeps G's rows compressed: the dense G goes.
	fm.g, prog.G = nil, nil
	r.best = RobustResult{Upper: math.Inf(1), Lower: math.Inf(-1), CertifiedGap: math.Inf(1), Status: ipm.IterationLimit}
	return r, nil
}

// Step takes one ADMM step.
func (r *RobustADMM) Step() { r.admm.Step() }

// Iter returns the steps taken (over every run continued).
func (r *RobustADMM) Iter() int { return r.admm.State.Iter }

// State returns a copy of the ADMM state, for saving.
func (r *RobustADMM) State() general.ConeState { return r.admm.Snapshot() }

// Iterate returns the raw iterate's filters (v_i and w_i stacked; not
// feasible in general), its robust objective and the largest violation of
// the robust constraints.
func (r *RobustADMM) Iterate() (w, wp []float64, objective, violation float64) {
	fm := r.fm
	f := fm.f * fm.np
	x := r.admm.State.X
	w, wp = append([]float64(nil), x[fm.ov:fm.ov+f]...), append([]float64(nil), x[fm.ow:fm.ow+f]...)
	objective, _ = fm.objective(w, wp)
	for _, u := range [][]float64{w, wp} {
		for i := 0; i < fm.np; i++ {
			violation = math.Max(violation, fm.groupViolation(i, u[i*fm.f:(i+1)*fm.f]))
		}
	}
	return w, wp, objective, violation
}

// Certify certifies the current iterate and returns the best certificate
// so far.
func (r *RobustADMM) Certify(ctx context.Context) (RobustIterate, error) {
	fm, out := r.fm, &r.best
	w, wp, _, viol := r.Iterate()
	for half, u := range [][]float64{w, wp} {
		for i := 0; i < fm.np; i++ {
			ui := u[i*fm.f : (i+1)*fm.f]
			if fm.groupViolation(i, ui) > 0 {
				if err := r.proj[half][i].project(ctx, ui); err != nil {
					return RobustIterate{}, err
				}
			}
		}
	}
	fm.restore(w, wp)
	up, loss := fm.objective(w, wp)
	if up < out.Upper {
		out.W, out.Wp, out.Upper, out.Objective, out.PointLoss = w, wp, up, up, loss
	}
	out.Lower = math.Max(out.Lower, fm.bound(r.admm.Z()))
	out.CertifiedGap = (out.Upper - out.Lower) / math.Max(1e-300, math.Abs(out.Upper))
	return RobustIterate{Iter: r.Iter(), Lower: out.Lower, Upper: out.Upper, Gap: out.CertifiedGap, PrimalViolation: viol, Elapsed: time.Since(r.start)}, nil
}

// Result returns the best certified point so far (nil W before the first
// Certify), with the state to continue from; Status is ipm.Optimal when
// its certified gap is at most gap.
func (r *RobustADMM) Result(gap float64) *RobustResult {
	out := r.best
	out.Iterations = r.Iter()
	st := r.State()
	out.State = &st
	out.Status = ipm.IterationLimit
	if out.CertifiedGap <= gap {
		out.Status = ipm.Optimal
	}
	return &out
}

// SolveRobustADMM runs RobustADMM from o.Start (or zero), certifying every
// CertifyEvery steps and after the last, until the certified gap is at
// most o.Gap, MaxIter steps, or ctx is done (the result then holds the
// best point so far, and State the steps taken, to continue from).
func (p *Problem) SolveRobustADMM(ctx context.Context, eps float64, o RobustADMMOptions) (*RobustResult, error) {
	if math.IsNaN(o.Gap) || o.Gap < 0 || o.Gap >= 1 || o.MaxIter < 0 || o.CertifyEvery < 0 {
		return nil, fmt.Errorf("cnn: SolveRobustADMM options Gap %v, MaxIter %d, CertifyEvery %d: need 0 ≤ Gap < 1 and counts ≥ 0", o.Gap, o.MaxIter, o.CertifyEvery)
	}
	if o.Gap == 0 {
		o.Gap = 1e-6
	}
	if o.MaxIter == 0 {
		o.MaxIter = 20000
	}
	if o.CertifyEvery == 0 {
		o.CertifyEvery = 100
	}
	r, err := p.NewRobustADMM(eps, o.ADMM, o.Start)
	if err != nil {
		return nil, err
	}
	var runErr error
	for it := 0; it < o.MaxIter; it++ {
		if runErr = ctx.Err(); runErr != nil {
			runErr = fmt.Errorf("cnn: robust ADMM stopped after %d steps: %w", r.Iter(), runErr)
			break
		}
		r.Step()
		if r.Iter()%o.CertifyEvery != 0 && it != o.MaxIter-1 {
			continue
		}
		ri, err := r.Certify(context.Background())
		if err != nil {
			return nil, err
		}
		if o.Progress != nil {
			o.Progress(ri)
		}
		if ri.Gap <= o.Gap {
			break
		}
	}
	if r.best.W == nil { // stopped before any certificate
		if _, err := r.Certify(context.Background()); err != nil {
			return nil, err
		}
	}
	return r.Result(o.Gap), runErr
}

// groupProjection is the projection of one group's filter on its robust
// cone {u : the group's robust sign and winner rows hold}: the cone QP
// min ½‖x_u − u‖² over the group's rows of the robust program (sign and
// winner rows, |u| ≤ a, the overlaps' epigraphs) and the columns they
// touch.
type groupProjection struct {
	cols []int // the program's columns in the sub-QP; the filter's first
	g    *mat.Dense
	h    []float64
	f    int
}

// groupProjections builds each group's projection from G's rows before
// the loss rows, per half ([0]: v, [1]: w) and group.
func (fm *robustForm) groupProjections() [2][]*groupProjection {
	var out [2][]*groupProjection
	owner := make(map[int][2]int) // a filter column → (half, group)
	for half, off := range []int{fm.ov, fm.ow} {
		out[half] = make([]*groupProjection, fm.np)
		for i := 0; i < fm.np; i++ {
			for l := 0; l < fm.f; l++ {
				owner[off+i*fm.f+l] = [2]int{half, i}
			}
		}
	}
	rowsOf := [2][][]int{make([][]int, fm.np), make([][]int, fm.np)}
	colsOf := [2][]map[int]bool{make([]map[int]bool, fm.np), make([]map[int]bool, fm.np)}
	for r := 0; r < fm.rLoss; r++ {
		row := fm.g.RawRowView(r)
		var who [2]int
		found := false
		for j, v := range row {
			if v == 0 {
				continue
			}
			if ow, ok := owner[j]; ok {
				who, found = ow, true
				break
			}
		}
		if !found {
			continue
		}
		h, i := who[0], who[1]
		rowsOf[h][i] = append(rowsOf[h][i], r)
		if colsOf[h][i] == nil {
			colsOf[h][i] = map[int]bool{}
		}
		for j, v := range row {
			if v != 0 {
				colsOf[h][i][j] = true
			}
		}
	}
	for half, off := range []int{fm.ov, fm.ow} {
		for i := 0; i < fm.np; i++ {
			gp := &groupProjection{f: fm.f}
			for l := 0; l < fm.f; l++ {
				gp.cols = append(gp.cols, off+i*fm.f+l)
			}
			for j := 0; j < fm.nx; j++ {
				if colsOf[half][i][j] && (j < off+i*fm.f || j >= off+(i+1)*fm.f) {
					gp.cols = append(gp.cols, j)
				}
			}
			rows := rowsOf[half][i]
			gp.g = mat.NewDense(max(len(rows), 1), len(gp.cols), nil)
			gp.h = make([]float64, max(len(rows), 1))
			for a, r := range rows {
				for b, j := range gp.cols {
					gp.g.Set(a, b, fm.g.At(r, j))
				}
				gp.h[a] = fm.h[r]
			}
			out[half][i] = gp
		}
	}
	return out
}

// project replaces u by its projection on the group's robust cone.
func (gp *groupProjection) project(ctx context.Context, u []float64) error {
	nv := len(gp.cols)
	q := mat.NewSymDense(nv, nil)
	c := make([]float64, nv)
	for l := 0; l < gp.f; l++ {
		q.SetSym(l, l, 1)
		c[l] = -u[l]
	}
	rows, _ := gp.g.Dims()
	res, err := ipm.SolveConeQP(ctx, &ipm.ConeQP{Q: q, C: c, G: gp.g, H: gp.h, K: ipm.Cone{Orthant: rows}}, ipm.Options{Tol: 1e-10})
	if err != nil {
		return fmt.Errorf("cnn: projecting a filter on its robust cone: %w", err)
	}
	if res.X == nil {
		return fmt.Errorf("cnn: projecting a filter on its robust cone ended %v", res.Status)
	}
	copy(u, res.X[:gp.f])
	return nil
}
