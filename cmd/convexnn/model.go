package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/convexnn/convexnn/solvers"
	"github.com/convexnn/convexnn/solvers/backprop"
	"github.com/convexnn/convexnn/solvers/batchnorm"
	"github.com/convexnn/convexnn/solvers/cnn"
	"github.com/convexnn/convexnn/solvers/general"
	"github.com/convexnn/convexnn/solvers/ipm"
	"github.com/convexnn/convexnn/solvers/twohidden"
	"gonum.org/v1/gonum/mat"
)

// The models of problem.json's "model" field.
const (
	modelReLU      = "relu"       // eq. (convex_general)
	modelBatchNorm = "batchnorm"  // eq. (BNregularizedtrainingconvex): X is the raw data
	modelCNNAvg    = "cnn-avg"    // two-layer CNN, average pooling (solvers/cnn)
	modelCNNMax    = "cnn-max"    // two-layer CNN, max pooling
	modelTwoHidden = "two-hidden" // parallel two-hidden-layer sub-networks (solvers/twohidden)
)

// generalModel is a model whose program is an instance of eq. (ct_general):
// its program, and what a point of it means (the network and its
// non-convex objective in the result).
type generalModel interface {
	Program() (*general.Program, error)
	result(res *resultJSON, w, wp []float64) error
}

// modelInput is a parsed problem of any model: the two-layer program (relu,
// and batchnorm on the BN features U′, whose basis and raw data are kept)
// or a CNN problem.
type modelInput struct {
	model string
	prog  *solvers.Program
	pert  solvers.Perturbation
	basis *batchnorm.Basis
	raw   *mat.Dense   // batchnorm: the raw data
	gen   generalModel // cnn-avg, cnn-max, two-hidden
	eps   float64      // cnn-avg: the robust program's ℓ∞ radius (0: standard)
	// generate: a CNN's pattern generation (nil: none), with the patterns'
	// seed for its pricing.
	generate *cnn.GenerateOptions
}

// generateJSON is a problem's "generate": rounds of pattern generation of
// per_round patterns each.
type generateJSON struct {
	Rounds   int `json:"rounds"`
	PerRound int `json:"per_round"`
}

// generatedJSON is one round of pattern generation in a result: its
// patterns and objective, and the pricing's best filter in multiples of β
// (0 for the last round, which is not priced).
type generatedJSON struct {
	Round     int     `json:"round"`
	Patterns  int     `json:"patterns"`
	Objective float64 `json:"objective"`
	Violation float64 `json:"violation"`
}

// setModel checks the model's fields and prepares it: for batchnorm,
// in.prog holds the program's data U′ (patterns follow as for relu); for
// the CNNs and two-hidden, in.gen the problem with its patterns sampled.
func (in *modelInput) setModel(pj *problemJSON, x *mat.Dense, loss solvers.Loss, patterns bool) error {
	in.model = pj.Model
	if in.model == "" {
		in.model = modelReLU
	}
	if err := pj.refuseOtherModelsFields(in.model); err != nil {
		return err
	}
	switch in.model {
	case modelReLU:
		return nil
	case modelBatchNorm:
		switch {
		case pj.Bias:
			return badInput("problem: \"model\": \"batchnorm\" takes the raw X: batch normalization brings each neuron's shift, so \"bias\" must be false")
		case pj.Eps > 0:
			return badInput("problem: \"model\": \"batchnorm\" has no robust (adversarial) program: a perturbation of x is not a ball in the whitened features (\"eps\" must be 0)")
		case pj.RobustSampling != nil:
			return badInput("problem: \"model\": \"batchnorm\" does not take \"robust_sampling\"")
		}
		b, err := batchnorm.NewBasis(x)
		if err != nil {
			return badInput("problem: field \"X\": %v", err)
		}
		u, err := b.Features(x)
		if err != nil {
			return badInput("problem: field \"X\": %v", err)
		}
		in.basis, in.raw = b, x
		in.prog = &solvers.Program{X: u}
		return nil
	case modelCNNAvg, modelCNNMax, modelTwoHidden:
	default:
		return badInput("problem: field \"model\" = %q: want \"relu\" (default), \"batchnorm\", \"cnn-avg\", \"cnn-max\" or \"two-hidden\"", pj.Model)
	}
	switch {
	case !patterns:
		return badInput("problem: \"model\": %q is solved by -solver admm, ipm or auto, not -solver scp", in.model)
	case pj.RobustSampling != nil:
		return badInput("problem: \"model\": %q does not take \"robust_sampling\"", in.model)
	case pj.Eps > 0 && ((in.model != modelCNNAvg && in.model != modelCNNMax) || (pj.Norm != "" && pj.Norm != "inf")):
		return badInput("problem: \"model\": %q: robust (adversarial) training is available for \"cnn-avg\" and \"cnn-max\" with \"norm\": \"inf\" only (\"eps\" must be 0 here)", in.model)
	case pj.D != nil:
		return badInput("problem: \"model\": %q: give \"P\" and \"seed\" (its patterns are sampled from random networks), not \"D\"", in.model)
	case pj.P < 1 || pj.Seed == nil:
		return badInput("problem: \"model\": %q needs field \"P\" ≥ 1 (patterns of random networks) and \"seed\"", in.model)
	}
	var got int
	var err error
	if in.model == modelTwoHidden {
		if pj.M1 < 1 {
			return badInput("problem: \"model\": \"two-hidden\" needs field \"m1\" ≥ 1, the first-layer neurons per sub-network")
		}
		tp, err := twohidden.New(x, pj.Y, pj.M1, loss, *pj.Beta)
		if err != nil {
			return badInput("problem: %v", err)
		}
		tp.Bias = pj.Bias
		if got, err = tp.SamplePatterns(pj.P, *pj.Seed); err != nil {
			return badInput("problem: %v", err)
		}
		in.gen = twoHiddenModel{tp}
	} else if got, err = in.setCNN(pj, x, loss); err != nil {
		return err
	}
	if got < pj.P {
		warnf("convexnn: warning: %d distinct patterns sampled of the %d asked; solving with those (and any trained ones)", got, pj.P)
	}
	if g := pj.Generate; g != nil {
		switch {
		case in.eps > 0:
			return badInput("problem: \"generate\": pattern generation is for standard CNNs (\"eps\" must be 0): it prices with the loss dual of their interior-point method")
		case g.Rounds < 1 || g.PerRound < 1:
			return badInput("problem: \"generate\": {\"rounds\": %d, \"per_round\": %d}: need ≥ 1 round of ≥ 1 pattern", g.Rounds, g.PerRound)
		}
		in.generate = &cnn.GenerateOptions{Rounds: g.Rounds, PerRound: g.PerRound, Price: cnn.PriceOptions{Seed: *pj.Seed}}
	}
	return nil
}

// setCNN prepares a CNN model and samples its patterns.
func (in *modelInput) setCNN(pj *problemJSON, x *mat.Dense, loss solvers.Loss) (int, error) {
	switch {
	case len(pj.Shape) != 3:
		return 0, badInput("problem: \"model\": %q needs field \"shape\": [channels, height, width] of the images in X's rows (CHW order)", in.model)
	case pj.Filter < 1:
		return 0, badInput("problem: \"model\": %q needs field \"filter\" ≥ 1, the filters' side", in.model)
	}
	if pj.Bias { // the filters' biases: the images without the ones column
		n, d := x.Dims()
		x = mat.DenseCopyOf(x.Slice(0, n, 0, d-1))
	}
	stride := pj.Stride
	if stride == 0 {
		stride = 1
	}
	pool := cnn.AvgPool
	if in.model == modelCNNMax {
		pool = cnn.MaxPool
	}
	cp, err := cnn.New(x, cnn.Shape{C: pj.Shape[0], H: pj.Shape[1], W: pj.Shape[2]}, cnn.Conv{Size: pj.Filter, Stride: stride, Pad: pj.Pad, Bias: pj.Bias}, pool, pj.Y, loss, *pj.Beta)
	if err != nil {
		return 0, badInput("problem: %v", err)
	}
	switch {
	case (pj.WinnerBound || pj.BoundPatterns != 0) && (in.model != modelCNNMax || !(pj.Eps > 0)):
		return 0, badInput("problem: \"winner_bound\" and \"bound_patterns\" are the robust program of \"cnn-max\" (\"eps\" > 0)")
	case pj.BoundPatterns != 0 && (!pj.WinnerBound || pj.BoundPatterns < 1):
		return 0, badInput("problem: \"bound_patterns\": %d: need ≥ 1 filters, with \"winner_bound\": true", pj.BoundPatterns)
	case pj.BackpropPatterns != 0 && (pj.BackpropPatterns < 1 || pj.Eps > 0):
		return 0, badInput("problem: \"backprop_patterns\": %d: need ≥ 1 filters, on a standard CNN (\"eps\" 0; robust \"cnn-max\" takes \"bound_patterns\")", pj.BackpropPatterns)
	case pj.WinnerBound:
		cp.MaxRobust = cnn.WinnerBound
	}
	got, err := cp.SamplePatterns(pj.P, *pj.Seed)
	if err != nil {
		return 0, badInput("problem: %v", err)
	}
	if pj.BoundPatterns > 0 {
		if _, _, err := backprop.BoundPatterns(context.Background(), cp, pj.Eps, pj.BoundPatterns, backprop.PatternStarts, backprop.PatternSteps, backprop.PatternRate, *pj.Seed); err != nil {
			return 0, badInput("problem: %v", err)
		}
	}
	if pj.BackpropPatterns > 0 {
		if _, _, err := backprop.CNNPatterns(context.Background(), cp, pj.BackpropPatterns, backprop.PatternSteps, backprop.PatternRate, *pj.Seed); err != nil {
			return 0, badInput("problem: %v", err)
		}
	}
	in.gen = cnnModel{cp}
	in.eps = pj.Eps
	return got, nil
}

// cnnModel is a CNN problem as a generalModel.
type cnnModel struct{ p *cnn.Problem }

func (m cnnModel) Program() (*general.Program, error) { return m.p.Program() }

func (m cnnModel) result(res *resultJSON, w, wp []float64) error {
	cp := m.p
	net, err := cp.Recover(w, wp)
	if err != nil {
		return err
	}
	if res.NonconvexObjective, err = net.Objective(cp.X, cp.Y, cp.Loss, cp.Beta); err != nil {
		return err
	}
	var ut mat.Dense
	ut.CloneFrom(net.U.T())
	res.Network = networkJSON{U: rows(&ut), Alpha: net.Alpha}
	res.CNN = &cnnJSON{Shape: []int{cp.Shape.C, cp.Shape.H, cp.Shape.W}, Filter: cp.Conv.Size, Stride: cp.Conv.Stride, Pad: cp.Conv.Pad, Bias: cp.Conv.Bias, Pooling: cp.Pool.String()}
	res.net = net
	return nil
}

// twoHiddenModel is a two-hidden-layer problem as a generalModel.
type twoHiddenModel struct{ p *twohidden.Problem }

func (m twoHiddenModel) Program() (*general.Program, error) { return m.p.Program() }

// subNetworkJSON is one sub-network w_3 (Σ_j w_2j (xᵀw_1j)_+)_+: "w1" holds
// the first-layer neurons w_1j as rows.
type subNetworkJSON struct {
	W1 [][]float64 `json:"w1"`
	W2 []float64   `json:"w2"`
	W3 float64     `json:"w3"`
}

func (m twoHiddenModel) result(res *resultJSON, w, wp []float64) error {
	tp := m.p
	net, err := tp.Recover(w, wp)
	if err != nil {
		return err
	}
	if res.NonconvexObjective, err = net.Objective(tp.Raw(), tp.Y, tp.Loss, tp.Beta); err != nil {
		return err
	}
	for _, s := range net.Subs {
		var t mat.Dense
		t.CloneFrom(s.W1.T())
		res.SubNetworks = append(res.SubNetworks, subNetworkJSON{W1: rows(&t), W2: s.W2, W3: s.W3})
	}
	if res.SubNetworks == nil {
		res.SubNetworks = []subNetworkJSON{}
	}
	res.net = net
	return nil
}

// batchNormJSON is the BN network of a "batchnorm" problem: per neuron the
// first-layer weights w_j (unit rows of "w"), the BN scale γ and shift α of
// BN(h) = γ(h − μ)/s + α/√n, the output weights a, and the training batch
// statistics μ and s it predicts with; rank is the numerical rank r of the
// centred data (U′ has r + 1 columns).
type batchNormJSON struct {
	Rank  int         `json:"rank"`
	N     int         `json:"n"`
	W     [][]float64 `json:"w"`
	Gamma []float64   `json:"gamma"`
	Alpha []float64   `json:"alpha"`
	A     []float64   `json:"a"`
	Mean  []float64   `json:"mean"`
	Scale []float64   `json:"scale"`
}

// batchNormResult adds the BN network of net (on the features U′) and its
// non-convex objective eq. (BNregularizedtraining) with full-batch BN.
func (in *modelInput) batchNormResult(res *resultJSON, net *solvers.Network) error {
	bn, err := in.basis.Network(net)
	if err != nil {
		return err
	}
	if res.NonconvexObjective, err = bn.Objective(in.raw, in.prog.Y, in.prog.Loss, in.prog.Beta); err != nil {
		return err
	}
	var wt mat.Dense
	wt.CloneFrom(bn.W.T())
	res.Model = modelBatchNorm
	res.BatchNorm = &batchNormJSON{Rank: in.basis.Rank(), N: bn.N, W: rows(&wt), Gamma: bn.Gamma, Alpha: bn.Alpha, A: bn.A, Mean: bn.Mean, Scale: bn.Scale}
	res.net = bn
	return nil
}

// labels returns the problem's labels (or targets).
func (in *modelInput) labels() []float64 {
	switch m := in.gen.(type) {
	case cnnModel:
		return m.p.Y
	case twoHiddenModel:
		return m.p.Y
	}
	return in.prog.Y
}

// cnnJSON describes a CNN result's architecture; the filters are the rows
// of the result's network "u", their output weights "alpha".
type cnnJSON struct {
	Shape   []int  `json:"shape"`
	Filter  int    `json:"filter"`
	Stride  int    `json:"stride"`
	Pad     int    `json:"pad"`
	Bias    bool   `json:"bias,omitempty"` // each filter's last entry is its bias
	Pooling string `json:"pooling"`
}

// solveGeneral solves a model whose program is an instance of eq.
// (ct_general) by the general ADMM or an interior-point method (a CNN's
// cnn.Problem.SolveInteriorPoint, structured for average pooling; else the
// dense general.SolveInteriorPoint; auto: the interior-point method for the
// squared and hinge losses when it fits, run to the gap, default 1e-6), and
// certifies it.
func solveGeneral(ctx context.Context, in *modelInput, solver string, maxIter int, rho, tol, gap float64) (resultJSON, error) {
	start := time.Now()
	if in.eps > 0 {
		return solveRobustCNN(ctx, in, solver, maxIter, rho, tol, gap, start)
	}
	gp, err := in.gen.Program()
	if err != nil {
		return resultJSON{}, err
	}
	res := resultJSON{Solver: solver, Auto: solver == "auto", BLAS: solvers.BLAS(), Model: in.model}
	cm, isCNN := in.gen.(cnnModel)
	if solver == "auto" {
		solver = "admm"
		if (isCNN && cm.p.InteriorPointFits()) || (!isCNN && general.InteriorPointFits(gp)) {
			solver = "ipm"
		}
		if gap == 0 {
			gap = 1e-6
		}
		res.Solver = solver
	}
	var w, wp []float64
	var bound general.Bound
	interrupted := false
	switch solver {
	case "ipm":
		if gp.Loss != solvers.SquaredLoss && gp.Loss != solvers.HingeLoss {
			return res, badInput("solve: -solver ipm solves the squared and hinge losses of model %q, not %v: use -solver admm", in.model, gp.Loss)
		}
		if tol == 0 {
			tol = 1e-9
			if gap > 0 {
				tol = gap / 100
			}
		}
		var r *general.IPMResult
		if isCNN && in.generate != nil {
			o := *in.generate
			o.Tol = tol
			o.Round = func(g cnn.GenerateRound) {
				res.Generated = append(res.Generated, generatedJSON{Round: g.Round, Patterns: g.Patterns, Objective: g.Objective, Violation: g.Violation})
			}
			r, err = cm.p.SolveGenerating(ctx, o)
			if r != nil { // the program on the patterns it ends with
				var perr error
				if gp, perr = cm.p.Program(); perr != nil {
					return res, perr
				}
			}
		} else if isCNN {
			r, err = cm.p.SolveInteriorPoint(ctx, tol)
		} else {
			r, err = general.SolveInteriorPoint(ctx, gp, tol)
		}
		switch {
		case r != nil && isInterrupt(err):
			interrupted = true // the best iterate so far, certified, is the result
		case err != nil:
			return res, err
		}
		w, wp, bound, res.Iterations = r.W, r.Wp, r.Bound, r.Iterations
		if interrupted && bound.W != nil {
			w, wp = bound.W, bound.Wp // the certificate's feasible point, not the iterate
		}
		res.Status = r.Status.String()
	default: // admm
		if in.generate != nil {
			return res, badInput("solve: \"generate\" runs with -solver ipm or auto (the interior-point method, squared or hinge loss), not %s", solver)
		}
		if maxIter == 0 {
			maxIter = 10000
		}
		a, err := general.New(gp, general.Options{Rho: rho, AbsTol: tol, Equilibrate: true}, nil)
		if err != nil {
			return res, badInput("solve: %v", err)
		}
		last, err := a.Solve(ctx, maxIter, gap, 100, nil)
		if isInterrupt(err) {
			interrupted, last.Bound = true, nil // the state so far, certified below
		} else if err != nil {
			return res, err
		}
		if last.Bound != nil {
			bound = *last.Bound
		} else if bound, err = a.Bound(); err != nil {
			return res, err
		}
		w, wp, res.Iterations = a.State.W, a.State.Wp, a.State.Iter
		res.Status = "iteration limit"
		if last.Residuals.Converged {
			res.Status = "optimal"
		}
	}
	if interrupted {
		res.Status = "interrupted"
	} else if gap > 0 {
		res.Status = "gap reached"
		if bound.Gap > gap {
			res.Status = "gap not reached"
		}
	}
	res.Seconds = time.Since(start).Seconds()
	res.LowerBound, res.UpperBound, res.CertifiedGap = &bound.Lower, &bound.Upper, &bound.Gap
	if w, wp, err = bound.Best(gp, w, wp); err != nil { // not an inaccurate point worse than the certificate's
		return res, err
	}
	if res.Objective, err = gp.Objective(w, wp); err != nil {
		return res, err
	}
	if res.MaxViolation, err = gp.Violation(w, wp); err != nil {
		return res, err
	}
	return res, in.gen.result(&res, w, wp)
}

// solveRobustCNN solves the robust program of a CNN (either pooling, every
// loss): -solver ipm by cnn.Problem.SolveRobust (dense), admm by its ADMM
// splitting cnn.Problem.SolveRobustADMM (to the gap, default 1e-6, or
// maxIter steps, default 20 000), auto by the first when it takes the
// program, else the second. "objective" is the robust
// objective, "clean_objective" the standard one at the solution,
// "max_constraint_violation" that of the robust constraints, "lower_bound",
// "upper_bound" and "gap" the certificate, "duality_gap" the (last)
// interior-point solve's relative gap.
func solveRobustCNN(ctx context.Context, in *modelInput, solver string, maxIter int, rho, tol, gap float64, start time.Time) (resultJSON, error) {
	res := resultJSON{Solver: "ipm", Auto: solver == "auto", BLAS: solvers.BLAS(), Model: in.model, Eps: in.eps, Norm: "inf"}
	cp := in.gen.(cnnModel).p
	var r *cnn.RobustResult
	var err error
	if solver == "auto" && !cp.RobustInteriorPointFits(in.eps) {
		solver = "admm"
	}
	interrupted := false
	if solver == "admm" {
		res.Solver = "admm"
		r, err = cp.SolveRobustADMM(ctx, in.eps, cnn.RobustADMMOptions{Gap: gap, MaxIter: maxIter, ADMM: general.ConeOptions{Rho: rho}})
		switch {
		case r != nil && isInterrupt(err):
			interrupted = true // the best certified point so far is the result
		case err != nil:
			return res, badInput("solve: %v", err)
		}
	} else if r, err = cp.SolveRobust(ctx, in.eps, tol); err != nil {
		if r == nil || !isInterrupt(err) {
			return res, err
		}
		interrupted = true // the point so far, made feasible and certified, is the result
	}
	res.Status, res.Iterations, res.Gap = r.Status.String(), r.Iterations, r.Gap
	switch {
	case interrupted:
		res.Status = "interrupted"
	case solver == "admm" && r.Status != ipm.Optimal, solver != "admm" && gap > 0 && r.CertifiedGap > gap:
		res.Status = "gap not reached"
	case solver == "admm", gap > 0:
		res.Status = "gap reached"
	}
	res.Objective = r.Objective
	res.LowerBound, res.UpperBound, res.CertifiedGap = &r.Lower, &r.Upper, &r.CertifiedGap
	if res.MaxViolation, err = cp.RobustViolation(in.eps, r.W, r.Wp); err != nil {
		return res, err
	}
	gp, err := cp.Program()
	if err != nil {
		return res, err
	}
	clean, err := gp.Objective(r.W, r.Wp)
	if err != nil {
		return res, err
	}
	if cp.MaxRobust == cnn.WinnerBound { // no pattern holds at the point: the network's own objective
		net, err := cp.Recover(r.W, r.Wp)
		if err != nil {
			return res, err
		}
		if clean, err = net.Objective(cp.X, cp.Y, cp.Loss, cp.Beta); err != nil {
			return res, err
		}
	}
	res.CleanObjective = &clean
	res.Seconds = time.Since(start).Seconds()
	return res, in.gen.result(&res, r.W, r.Wp)
}

func warnf(format string, a ...any) { fmt.Fprintf(os.Stderr, format+"\n", a...) }

// refuseOtherModelsFields reports fields of another model than model: the
// CNNs' geometry, two-hidden's width.
func (pj *problemJSON) refuseOtherModelsFields(model string) error {
	cnnFields := pj.Shape != nil || pj.Filter != 0 || pj.Stride != 0 || pj.Pad != 0
	if cnnFields && model != modelCNNAvg && model != modelCNNMax {
		return badInput("problem: fields \"shape\", \"filter\", \"stride\" and \"pad\" belong to the models \"cnn-avg\" and \"cnn-max\"")
	}
	if pj.M1 != 0 && model != modelTwoHidden {
		return badInput("problem: field \"m1\" belongs to the model \"two-hidden\"")
	}
	if (pj.Generate != nil || pj.BackpropPatterns != 0) && model != modelCNNAvg && model != modelCNNMax {
		return badInput("problem: fields \"generate\" and \"backprop_patterns\" belong to the models \"cnn-avg\" and \"cnn-max\"")
	}
	if (pj.WinnerBound || pj.BoundPatterns != 0) && model != modelCNNMax {
		return badInput("problem: fields \"winner_bound\" and \"bound_patterns\" belong to the model \"cnn-max\" (robust, \"eps\" > 0)")
	}
	return nil
}
