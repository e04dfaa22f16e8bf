package cvx

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/convexnn/convexnn/plots"
	"github.com/convexnn/convexnn/solvers"
	"github.com/convexnn/convexnn/solvers/backprop"
	"github.com/convexnn/convexnn/solvers/cnn"
	"github.com/convexnn/convexnn/solvers/general"
	"gonum.org/v1/gonum/mat"
)

// ImageShape is the channels, height and width of the images in X's rows
// (CHW order, as data.Set.Shape).
type ImageShape = cnn.Shape

// CNN is a two-layer convolutional network f(x) = Σ_j α_j pool_k (x_kᵀu_j)_+.
type CNN = cnn.Network

// convSpec is a problem's CNN architecture.
type convSpec struct {
	shape cnn.Shape
	conv  cnn.Conv
	pool  cnn.Pooling
	// generate: rounds of pattern generation of perRound patterns each
	// (GeneratePatterns; zero rounds: none).
	rounds, perRound int
	// winnerBound: max pooling's robust program by the winner bound
	// (WinnerBound), with boundWidth filters trained on it for patterns
	// (BoundPatterns; 0: none).
	winnerBound bool
	boundWidth  int
	boundSeed   uint64
	// backpropWidth filters of a back-prop CNN give their patterns
	// (BackpropPatterns; 0: none).
	backpropWidth int
	backpropSeed  uint64
}

// Conv makes the problem a two-layer CNN with global average pooling
// (MaxPool for max pooling): filter×filter filters over all channels of the
// images (shape) in X's rows, moved by stride (Padding adds zeros around
// the images). Its convex program (solvers/cnn, an instance of eq.
// ct_general) has one group per pattern of a random filter
// (SamplePatterns(P, seed)); ADMM runs the general ADMM, Solve the
// interior-point method (structured for average pooling, cnn.Problem.
// SolveInteriorPoint; dense for max pooling, small programs). Bias gives every filter a bias
// (cnn.Conv.Bias); Robust(ε, cvx.LInf) trains it adversarially, with
// either pooling and every loss (Solve: cnn.Problem.SolveRobust, certified;
// ADMM: its ADMM splitting cnn.RobustADMM, options Rho, Relax, Gap and
// CertifyEvery, certified every CertifyEvery iterations);
// BatchNorm and exact patterns are not available with it.
func (p *Problem) Conv(shape ImageShape, filter, stride int) *Problem {
	p.conv = &convSpec{shape: shape, conv: cnn.Conv{Size: filter, Stride: stride}, pool: cnn.AvgPool}
	if p.err != nil {
		return p
	}
	// The geometry as far as Padding, which may follow, cannot change it:
	// checked with the largest padding allowed; ConvProgram checks the
	// padding given.
	loose := p.conv.conv
	loose.Pad = max(filter-1, 0)
	if p.err = loose.Validate(shape); p.err != nil {
		return p
	}
	if _, d := p.x.Dims(); d != shape.C*shape.H*shape.W {
		p.err = fmt.Errorf("cvx: Conv: X's rows have %d entries, images of shape %d×%d×%d have %d", d, shape.C, shape.H, shape.W, shape.C*shape.H*shape.W)
	}
	return p
}

// Padding pads the images of a Conv problem with pad zeros on every side.
func (p *Problem) Padding(pad int) *Problem {
	if p.conv == nil {
		if p.err == nil {
			p.err = errors.New("cvx: Padding: call Conv first")
		}
		return p
	}
	p.conv.conv.Pad = pad
	if p.err == nil {
		p.err = p.conv.conv.Validate(p.conv.shape)
	}
	return p
}

// GeneratePatterns makes a Conv problem's patterns grow by column
// generation (cnn.Problem.SolveGenerating): after the
// interior-point solve on the sampled patterns, rounds times, the filters
// that most violate the dual's constraint |Σ_n θ_n pool_k (x_nkᵀu)_+| ≤
// β‖u‖ (found by ascent from random starts and the program's filters)
// give up to perRound new patterns (filters at least 0.2 rad apart), the
// patterns whose filters are zero drop out, and the program is solved
// again. The sampled patterns' optimum is that of random filters;
// generated ones approach the architecture's own training problem (on
// 2000 MNIST digits at 14×14, 8 sampled patterns and 4 rounds of up to 16,
// seed 1, in 10–16 s: average pooling objective 0.824 → 0.149, validation
// 96.1 %; max pooling 0.730 → 0.101, validation 94.4 %). The
// certificate is the last program's.
// Solve and Optimum run it (the interior-point method); ADMM does not.
func (p *Problem) GeneratePatterns(rounds, perRound int) *Problem {
	switch {
	case p.err != nil:
	case p.conv == nil:
		p.err = errors.New("cvx: GeneratePatterns: call Conv first (pattern generation is for CNNs)")
	case rounds < 1 || perRound < 1:
		p.err = fmt.Errorf("cvx: GeneratePatterns(%d, %d): need ≥ 1 round of ≥ 1 pattern", rounds, perRound)
	default:
		p.conv.rounds, p.conv.perRound = rounds, perRound
	}
	return p
}

// WinnerBound solves a robust max-pooling Conv problem by the winner
// bound (cnn.WinnerBound) instead of the appendix's program: no pattern
// must keep its winning patch on the ε-ball; the worst-case loss is bounded
// above instead, by each pattern's winner on the favourable side of the
// margin and by the largest response over the ball on the other. Every
// point is feasible, the optimum is certified, and each image's term
// bounds the recovered network's loss under any attack in the ball. The
// appendix's program keeps a group only where its winner leads on every
// image by the margin ε, which natural images rarely allow: on 600
// CIFAR-10 bird/ship images at ε = 10/255 its optimum over 4 sampled
// patterns predicts one class. Hinge, BCE and logistic losses; Solve (the
// interior-point method).
func (p *Problem) WinnerBound() *Problem {
	switch {
	case p.err != nil:
	case p.conv == nil:
		p.err = errors.New("cvx: WinnerBound: call Conv first (it is max pooling's robust program)")
	default:
		p.conv.winnerBound = true
	}
	return p
}

// BoundPatterns gives a WinnerBound problem the patterns of width filters
// trained by back-prop on the bound itself (backprop.BoundPatterns: full-batch
// Adam, 1000 steps, learning rate 0.02, the best of 3 Gaussian starts drawn
// with seed), beside any sampled ones (SamplePatterns, then optional). The certified
// optimum over them is at most the bound the trained filters reached:
// random patterns only give the program random winners. It implies
// WinnerBound.
func (p *Problem) BoundPatterns(width int, seed uint64) *Problem {
	p.WinnerBound()
	switch {
	case p.err != nil:
	case width < 1:
		p.err = fmt.Errorf("cvx: BoundPatterns(%d, %d): need ≥ 1 filter", width, seed)
	default:
		p.conv.boundWidth, p.conv.boundSeed = width, seed
	}
	return p
}

// BackpropPatterns gives a standard Conv problem the patterns of a CNN of
// width filters trained by back-prop on the same images, labels, loss and β
// (backprop.CNNPatterns: full-batch Adam, 1000 steps, learning rate 0.02,
// Gaussian start drawn with seed), beside any sampled ones (SamplePatterns,
// then optional). That network is a point of the program, so the certified
// optimum over its patterns is at most its objective: the convex solve
// starts where back-prop ended, and GeneratePatterns continues from there.
// Random filters' patterns give max pooling winners that no trained filter
// has (on 2000 MNIST digits their optimum stays 2–2.5× back-prop's after
// rounds of generation). For robust max pooling use BoundPatterns.
func (p *Problem) BackpropPatterns(width int, seed uint64) *Problem {
	switch {
	case p.err != nil:
	case p.conv == nil:
		p.err = errors.New("cvx: BackpropPatterns: call Conv first (it trains a CNN)")
	case width < 1:
		p.err = fmt.Errorf("cvx: BackpropPatterns(%d, %d): need ≥ 1 filter", width, seed)
	default:
		p.conv.backpropWidth, p.conv.backpropSeed = width, seed
	}
	return p
}

// generating reports whether the problem generates patterns.
func (p *Problem) generating() bool { return p.conv != nil && p.conv.rounds > 0 }

// AvgPool selects global average pooling for a Conv problem (the default).
func (p *Problem) AvgPool() *Problem { return p.pooling(cnn.AvgPool) }

// MaxPool selects global max pooling for a Conv problem.
func (p *Problem) MaxPool() *Problem { return p.pooling(cnn.MaxPool) }

func (p *Problem) pooling(pool cnn.Pooling) *Problem {
	if p.conv == nil {
		if p.err == nil {
			p.err = fmt.Errorf("cvx: %v: call Conv first", pool)
		}
		return p
	}
	p.conv.pool = pool
	return p
}

// ConvProgram builds a Conv problem's CNN program with its sampled patterns.
func (p *Problem) ConvProgram() (*cnn.Problem, *general.Program, error) {
	if err := p.Err(); err != nil {
		return nil, nil, err
	}
	if err := p.refuseGated("the CNN and two-hidden-layer programs"); err != nil {
		return nil, nil, err
	}
	if p.conv == nil {
		return nil, nil, errors.New("cvx: the problem is not a CNN (Conv)")
	}
	if err := p.conv.conv.Validate(p.conv.shape); err != nil { // with the padding given
		return nil, nil, err
	}
	switch {
	case p.bn:
		return nil, nil, errors.New("cvx: Conv: batch normalization is for fully connected networks")
	case p.robust() && p.Perturbation().Norm != solvers.LInf:
		return nil, nil, errors.New("cvx: Conv: robust (adversarial) CNN training is available for the ℓ∞ ball (cvx.Solve)")
	case p.exact:
		return nil, nil, errors.New("cvx: Conv: exact patterns are not available for CNNs; use SamplePatterns(P, seed)")
	case p.patterns < 1 && p.conv.boundWidth == 0 && p.conv.backpropWidth == 0:
		return nil, nil, errors.New("cvx: Conv: the CNN program needs patterns: call SamplePatterns(P, seed) or BackpropPatterns(width, seed)")
	case p.conv.winnerBound && (p.conv.pool != cnn.MaxPool || !p.robust()):
		return nil, nil, errors.New("cvx: WinnerBound: it is the robust program of max pooling: call MaxPool and Robust(ε, cvx.LInf)")
	case p.conv.backpropWidth > 0 && p.robust():
		return nil, nil, errors.New("cvx: BackpropPatterns: it is for standard (not robust) CNNs; robust max pooling takes BoundPatterns")
	case p.generating() && p.robust():
		return nil, nil, errors.New("cvx: GeneratePatterns: pattern generation is for standard (not robust) CNNs: it prices with the loss dual of their interior-point method")
	}
	loss, err := solvers.ParseLoss(string(p.loss))
	if err != nil {
		return nil, nil, err
	}
	conv := p.conv.conv
	conv.Bias = p.bias
	cp, err := cnn.New(p.x, p.conv.shape, conv, p.conv.pool, p.targets(), loss, p.beta)
	if err != nil {
		return nil, nil, err
	}
	if p.conv.winnerBound {
		cp.MaxRobust = cnn.WinnerBound
	}
	if p.patterns > 0 {
		got, err := cp.SamplePatterns(p.patterns, p.patternSeed)
		if err != nil {
			return nil, nil, err
		}
		if got < p.patterns {
			note(fmt.Sprintf("cvx: note: %d distinct filter patterns of the %d asked; using those", got, p.patterns))
		}
	}
	if w := p.conv.boundWidth; w > 0 {
		added, bound, err := backprop.BoundPatterns(context.Background(), cp, p.Perturbation().Eps, w, backprop.PatternStarts, backprop.PatternSteps, backprop.PatternRate, p.conv.boundSeed)
		if err != nil {
			return nil, nil, fmt.Errorf("cvx: BoundPatterns: %w", err)
		}
		note(fmt.Sprintf("cvx: %d filters trained on the winner bound to %.6g (best of 3 starts): %d new patterns", w, bound, added))
	}
	if w := p.conv.backpropWidth; w > 0 {
		added, obj, err := backprop.CNNPatterns(context.Background(), cp, w, backprop.PatternSteps, backprop.PatternRate, p.conv.backpropSeed)
		if err != nil {
			return nil, nil, fmt.Errorf("cvx: BackpropPatterns: %w", err)
		}
		note(fmt.Sprintf("cvx: a CNN of %d filters trained by back-prop to objective %.6g: %d new patterns", w, obj, added))
	}
	gp, err := cp.Program()
	return cp, gp, err
}

// generalModel is a problem whose program is an instance of eq.
// (ct_general) (Conv, TwoHidden): its program and what its points mean.
type generalModel interface {
	program() (*general.Program, error)
	// nonconvex returns the objective of the network of the point (w, w′).
	nonconvex(w, wp []float64) (float64, error)
	// fill sets the solution's network of the point.
	fill(s *Solution, w, wp []float64) error
	describe() string
}

// cnnModel is a Conv problem's program.
type cnnModel struct {
	cp *cnn.Problem
	gp *general.Program
}

func (m cnnModel) program() (*general.Program, error) { return m.gp, nil }
func (m cnnModel) nonconvex(w, wp []float64) (float64, error) {
	net, err := m.cp.Recover(w, wp)
	if err != nil {
		return 0, err
	}
	return net.Objective(m.cp.X, m.cp.Y, m.cp.Loss, m.cp.Beta)
}
func (m cnnModel) fill(s *Solution, w, wp []float64) (err error) {
	s.CNN, err = m.cp.Recover(w, wp)
	return err
}
func (m cnnModel) describe() string {
	net := &cnn.Network{Shape: m.cp.Shape, Conv: m.cp.Conv, Pool: m.cp.Pool, U: mat.NewDense(m.cp.Filter(), len(m.cp.Signs), nil)}
	return net.String() + " (patterns)"
}

// model returns the problem's general model (Conv or TwoHidden), nil when
// it has none.
func (p *Problem) model() (generalModel, error) {
	switch {
	case p.conv != nil:
		cp, gp, err := p.ConvProgram()
		if err != nil {
			return nil, err
		}
		return cnnModel{cp, gp}, nil
	case p.twoHidden > 0:
		tp, gp, err := p.TwoHiddenProgram()
		if err != nil {
			return nil, err
		}
		return twoHiddenModel{tp, gp}, nil
	}
	return nil, nil
}

// solveGeneral solves a Conv or TwoHidden problem by an interior-point
// method, certified: a CNN by cnn.Problem.SolveInteriorPoint (structured
// for average pooling), two-hidden-layer sub-networks by the dense
// general.SolveInteriorPoint; a robust Conv problem by
// cnn.Problem.SolveRobust.
func solveGeneral(ctx context.Context, p *Problem, m IPM) (*Solution, error) {
	t0 := time.Now()
	gm, err := p.model()
	if err != nil {
		return nil, err
	}
	if cm, ok := gm.(cnnModel); ok && p.robust() {
		res, err := cm.cp.SolveRobust(ctx, p.Perturbation().Eps, m.Tol)
		if res == nil {
			return nil, err
		}
		s, serr := robustCNNSolution(p, cm, res, res.Status.String(), "interior-point method", t0)
		if serr != nil {
			return nil, serr
		}
		return s, stoppedBy(err, "interior-point method", res.Iterations)
	}
	gp, _ := gm.program()
	tol := m.Tol
	if tol == 0 {
		tol = 1e-9
	}
	var res *general.IPMResult
	var rounds []GeneratedRound
	if cm, ok := gm.(cnnModel); ok && p.generating() {
		res, err = cm.cp.SolveGenerating(ctx, cnn.GenerateOptions{Rounds: p.conv.rounds, PerRound: p.conv.perRound, Tol: tol,
			Price: cnn.PriceOptions{Seed: p.patternSeed}, Round: func(r cnn.GenerateRound) {
				rounds = append(rounds, GeneratedRound{Round: r.Round, Patterns: r.Patterns, Objective: r.Objective, Violation: r.Violation})
				msg := fmt.Sprintf("cvx: pattern generation, round %d: %d patterns, objective %.8g", r.Round, r.Patterns, r.Objective)
				if r.Violation > 0 {
					msg += fmt.Sprintf(", best filter found at %.3g·β of the dual's constraint", r.Violation)
				}
				note(msg)
			}})
		if res != nil { // the program on the patterns it ends with
			var perr error
			if gp, perr = cm.cp.Program(); perr != nil {
				return nil, perr
			}
			gm = cnnModel{cm.cp, gp}
		}
	} else if ok {
		res, err = cm.cp.SolveInteriorPoint(ctx, tol)
	} else {
		res, err = general.SolveInteriorPoint(ctx, gp, tol)
	}
	if res == nil {
		return nil, err
	}
	w, wp := res.W, res.Wp
	if err != nil && res.Bound.W != nil {
		w, wp = res.Bound.W, res.Bound.Wp // stopped early: the certificate's feasible point, not the iterate
	}
	s, serr := generalSolution(gm, gp, w, wp, res.Bound, res.Status.String(), res.Iterations, "interior-point method", t0)
	if serr != nil {
		return nil, serr
	}
	s.Generated = rounds
	return s, stoppedBy(err, "interior-point method", res.Iterations)
}

// stoppedBy is the error returned with a solution: nil, or, when ctx ended
// the method, one naming it and wrapping ctx's (the contract of
// SolveContext).
func stoppedBy(err error, method string, iters int) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("cvx: %s stopped after %d iterations: %w", method, iters, err)
}

// generalSolution is the Solution of a Conv or TwoHidden problem at
// (w, w′), with its certificate b.
func generalSolution(gm generalModel, gp *general.Program, w, wp []float64, b general.Bound, status string, iters int, method string, t0 time.Time) (*Solution, error) {
	s := &Solution{Status: status, Iterations: iters, Perturbation: solvers.Perturbation{Norm: "inf"}, Lower: b.Lower, Upper: b.Upper, Gap: b.Gap}
	w, wp, err := b.Best(gp, w, wp) // not an inaccurate point worse than the certificate's
	if err != nil {
		return nil, err
	}
	if s.Objective, err = gp.Objective(w, wp); err != nil {
		return nil, err
	}
	s.Clean = s.Objective
	if s.Violation, err = gp.Violation(w, wp); err != nil {
		return nil, err
	}
	if err := gm.fill(s, w, wp); err != nil {
		return nil, err
	}
	if s.Nonconvex, err = gm.nonconvex(w, wp); err != nil {
		return nil, err
	}
	s.Seconds = time.Since(t0).Seconds()
	note(fmt.Sprintf("cvx: %s, %s: objective %.8g, certified gap %.2g, %d iterations, %.2f s", gm.describe(), method, s.Objective, s.Gap, s.Iterations, s.Seconds))
	return s, nil
}

// robustCNNSolution is the Solution of a robust Conv problem (ℓ∞; either
// pooling, every loss) from res (cnn.Problem.SolveRobust or its ADMM
// splitting). Objective is the robust objective and Clean the standard one
// at the solution; Violation is that of the robust constraints; Lower,
// Upper and Gap are its certificate.
func robustCNNSolution(p *Problem, cm cnnModel, res *cnn.RobustResult, status, method string, t0 time.Time) (*Solution, error) {
	eps := p.Perturbation().Eps
	s := &Solution{Status: status, Objective: res.Objective, Iterations: res.Iterations, Perturbation: p.Perturbation(),
		Lower: res.Lower, Upper: res.Upper, Gap: res.CertifiedGap}
	var err error
	if s.Violation, err = cm.cp.RobustViolation(eps, res.W, res.Wp); err != nil {
		return nil, err
	}
	if s.Clean, err = cm.gp.Objective(res.W, res.Wp); err != nil {
		return nil, err
	}
	if err := cm.fill(s, res.W, res.Wp); err != nil {
		return nil, err
	}
	if s.Nonconvex, err = cm.nonconvex(res.W, res.Wp); err != nil {
		return nil, err
	}
	if cm.cp.MaxRobust == cnn.WinnerBound { // no pattern holds at the point: the standard objective is the network's
		s.Clean = s.Nonconvex
	}
	s.Seconds = time.Since(t0).Seconds()
	note(fmt.Sprintf("cvx: %s, robust (ε = %g, ℓ∞), %s: robust objective %.8g (standard %.8g), certified gap %.2g, %.2f s", cm.describe(), eps, method, s.Objective, s.Clean, s.Gap, s.Seconds))
	return s, nil
}

// optimumGeneral is Optimum for a Conv or TwoHidden problem: the
// interior-point method (solveGeneral, tolerance gap/100) when it takes
// the program (a robust CNN: cnn.Problem.RobustInteriorPointFits; a
// standard one: the squared or hinge loss and
// cnn.Problem.InteriorPointFits or general.InteriorPointFits), otherwise
// the ADMM splitting (robust: cnn.Problem.SolveRobustADMM; standard: the
// general ADMM on equilibrated constraints) certified every 100 steps
// until the gap, at most maxIter steps.
func optimumGeneral(ctx context.Context, p *Problem, gap float64, maxIter int) (*Solution, error) {
	gm, err := p.model()
	if err != nil {
		return nil, err
	}
	gp, _ := gm.program()
	cm, isCNN := gm.(cnnModel)
	robust := isCNN && p.robust()
	var fits bool
	switch {
	case robust:
		fits = cm.cp.RobustInteriorPointFits(p.Perturbation().Eps)
	case gp.Loss != solvers.SquaredLoss && gp.Loss != solvers.HingeLoss:
	case isCNN:
		fits = cm.cp.InteriorPointFits()
	default:
		fits = general.InteriorPointFits(gp)
	}
	return optimumGeneralBy(ctx, p, gm, gap, maxIter, fits)
}

// optimumGeneralBy is optimumGeneral by the interior-point method (ipm)
// or the ADMM splitting.
func optimumGeneralBy(ctx context.Context, p *Problem, gm generalModel, gap float64, maxIter int, ipm bool) (*Solution, error) {
	t0 := time.Now()
	gp, _ := gm.program()
	cm, isCNN := gm.(cnnModel)
	robust := isCNN && p.robust()
	if ipm {
		s, err := solveGeneral(ctx, p, IPM{Tol: gap / 100})
		if s != nil {
			s.Status = gapStatus(s.Gap, gap)
		}
		return s, err
	}
	if robust {
		res, err := cm.cp.SolveRobustADMM(ctx, p.Perturbation().Eps, cnn.RobustADMMOptions{Gap: gap, MaxIter: maxIter})
		if res == nil {
			return nil, err
		}
		s, serr := robustCNNSolution(p, cm, res, gapStatus(res.CertifiedGap, gap), "ADMM splitting", t0)
		if serr != nil {
			return nil, serr
		}
		return s, err
	}
	a, err := general.New(gp, general.Options{Equilibrate: true}, nil)
	if err != nil {
		return nil, err
	}
	last, err := a.Solve(ctx, maxIter, gap, 100, nil)
	b := last.Bound
	if b == nil {
		bb, berr := a.Bound()
		if berr != nil {
			return nil, berr
		}
		b = &bb
	}
	// The certificate's point, made feasible (its objective is Upper).
	s, serr := generalSolution(gm, gp, b.W, b.Wp, *b, gapStatus(b.Gap, gap), a.State.Iter, "general ADMM", t0)
	if serr != nil {
		return nil, serr
	}
	return s, err
}

// generalEngine runs the general ADMM (eq. ct_eq_general) on a Conv or
// TwoHidden problem, on equilibrated constraints.
type generalEngine struct {
	model generalModel
	gp    *general.Program
	a     *general.ADMM
	last  general.Record
	every int
	gap   float64
}

func (a ADMM) openGeneral(p *Problem, saved []byte) (engine, error) {
	if a.Inner != AutoInner || a.Gamma != 0 || a.Blocks != 0 || a.InnerMax != 0 || a.Route != AutoRoute {
		return nil, errors.New("cvx: ADMM on a CNN or two-hidden-layer problem runs the general ADMM of eq. (ct_eq_general) on equilibrated constraints (general.Options.Equilibrate): its options are Rho, Relax, Tol, Gap and CertifyEvery")
	}
	if a.Rho < 0 || a.Tol < 0 || math.IsNaN(a.Rho) || math.IsNaN(a.Tol) || !(a.Gap >= 0 && a.Gap < 1) {
		return nil, fmt.Errorf("cvx: ADMM{Rho: %v, Tol: %v, Gap: %v}: need ρ, Tol ≥ 0 and 0 ≤ Gap < 1", a.Rho, a.Tol, a.Gap)
	}
	if p.generating() {
		return nil, errors.New("cvx: GeneratePatterns: pattern generation runs with the interior-point method (cvx.Solve with cvx.IPM, or cvx.Optimum), not ADMM")
	}
	gm, err := p.model()
	if err != nil {
		return nil, err
	}
	if cm, ok := gm.(cnnModel); ok && p.robust() {
		return a.openRobustCNN(p, cm, saved)
	}
	gp, _ := gm.program()
	var st *general.State
	if saved != nil {
		st = new(general.State)
		if err := decodeState(saved, st); err != nil {
			return nil, err
		}
	}
	solver, err := general.New(gp, general.Options{Rho: a.Rho, AbsTol: a.Tol, RelTol: a.Tol, Equilibrate: true, Relax: a.Relax}, st)
	if err != nil {
		return nil, err
	}
	return &generalEngine{model: gm, gp: gp, a: solver, every: a.certifyEvery(), gap: a.Gap}, nil
}

func (e *generalEngine) step() Point {
	e.a.Step()
	r := e.a.Residuals()
	st := &e.a.State
	obj, _ := e.gp.Objective(st.W, st.Wp)
	viol, _ := e.gp.Violation(st.W, st.Wp)
	pt := Point{Iter: st.Iter, Objective: obj, PrimalResidual: r.Primal, DualResidual: r.Dual, Violation: viol}
	if nc, err := e.model.nonconvex(st.W, st.Wp); err == nil {
		pt.Nonconvex, pt.Gap = nc, math.Abs(nc-obj)
	}
	e.last = general.Record{Iter: st.Iter, Objective: obj, Violation: viol, Residuals: r}
	return pt
}

func (e *generalEngine) certify(pt *Point, last bool) error {
	if e.every < 0 || (!last && pt.Iter%e.every != 0) {
		return nil
	}
	b, err := e.a.Bound()
	if err != nil {
		return err
	}
	pt.Certified, pt.Lower, pt.Upper, pt.CertifiedGap = true, b.Lower, b.Upper, b.Gap
	return nil
}

func (e *generalEngine) reached(pt Point) bool {
	return e.gap > 0 && pt.Certified && pt.CertifiedGap <= e.gap
}
func (e *generalEngine) iter() int            { return e.a.State.Iter }
func (e *generalEngine) objective() float64   { return e.last.Objective }
func (e *generalEngine) state() (any, error)  { return e.a.Snapshot(), nil }
func (e *generalEngine) converged(Point) bool { return e.a.Residuals().Converged }
func (e *generalEngine) network() (*Network, error) {
	return nil, errors.New("cvx: the run's network is not a two-layer network: use run.CNN() or run.TwoHidden()")
}

// robustCNNEngine runs the ADMM splitting of a robust CNN's program
// (cnn.RobustADMM) across cells. A point's Objective and Violation are the
// raw iterate's robust objective and robust-constraint violation; its
// certificate's Upper is the best feasible point's robust objective.
type robustCNNEngine struct {
	model cnnModel
	r     *cnn.RobustADMM
	every int
	gap   float64
	last  float64
}

func (a ADMM) openRobustCNN(p *Problem, cm cnnModel, saved []byte) (engine, error) {
	if a.Tol != 0 {
		return nil, errors.New("cvx: the robust CNN's ADMM splitting stops at a certified gap (ADMM.Gap), not at residuals: drop Tol")
	}
	var st *general.ConeState
	if saved != nil {
		st = new(general.ConeState)
		if err := decodeState(saved, st); err != nil {
			return nil, err
		}
	}
	r, err := cm.cp.NewRobustADMM(p.Perturbation().Eps, general.ConeOptions{Rho: a.Rho, Relax: a.Relax}, st)
	if err != nil {
		return nil, err
	}
	return &robustCNNEngine{model: cm, r: r, every: a.certifyEvery(), gap: a.Gap}, nil
}

func (e *robustCNNEngine) step() Point {
	e.r.Step()
	_, _, obj, viol := e.r.Iterate()
	e.last = obj
	return Point{Iter: e.r.Iter(), Objective: obj, Violation: viol}
}

func (e *robustCNNEngine) certify(pt *Point, last bool) error {
	if e.every < 0 || (!last && pt.Iter%e.every != 0) {
		return nil
	}
	ri, err := e.r.Certify(context.Background())
	if err != nil {
		return err
	}
	pt.setBound(ri.Lower, ri.Upper, ri.Gap)
	return nil
}

func (e *robustCNNEngine) reached(pt Point) bool {
	return e.gap > 0 && pt.Certified && pt.CertifiedGap <= e.gap
}
func (e *robustCNNEngine) iter() int            { return e.r.Iter() }
func (e *robustCNNEngine) objective() float64   { return e.last }
func (e *robustCNNEngine) state() (any, error)  { return e.r.State(), nil }
func (e *robustCNNEngine) converged(Point) bool { return false }
func (e *robustCNNEngine) network() (*Network, error) {
	return nil, errors.New("cvx: the run's network is a CNN: use run.CNN()")
}

// solution returns the run's current point as a Solution's network: for
// a robust CNN, the best certified (feasible) point, or the raw iterate
// before the first certificate.
func (r *Run) generalSolution() (*Solution, error) {
	if r.err != nil {
		return nil, r.err
	}
	s := &Solution{}
	switch e := r.eng.(type) {
	case *generalEngine:
		return s, e.model.fill(s, e.a.State.W, e.a.State.Wp)
	case *robustCNNEngine:
		best := e.r.Result(0)
		w, wp := best.W, best.Wp
		if w == nil {
			w, wp, _, _ = e.r.Iterate()
		}
		return s, e.model.fill(s, w, wp)
	}
	return nil, errors.New("cvx: the run's problem is a two-layer network; use run.Network()")
}

// CNN returns the trained CNN of a run of a Conv problem.
func (r *Run) CNN() (*CNN, error) {
	s, err := r.generalSolution()
	if err != nil {
		return nil, err
	}
	if s.CNN == nil {
		return nil, errors.New("cvx: the run's problem is not a CNN (Conv)")
	}
	return s.CNN, nil
}

// FiltersFigure draws a CNN's filters side by side as one heat map (each
// filter's channels stacked vertically, a blank column between filters),
// colored on a scale symmetric around zero, each filter scaled by its output
// weight's sign so that red means "raises f".
func FiltersFigure(net *CNN) (*plots.Figure, error) {
	f, m := net.U.Dims()
	s := net.Conv.Size
	c := net.Shape.C
	bias := 0
	if net.Conv.Bias {
		bias = 1
	}
	if f != c*s*s+bias || m != len(net.Alpha) {
		return nil, fmt.Errorf("cvx: FiltersFigure: %d×%d filters for %d channels of %d×%d and %d output weights", f, m, c, s, s, len(net.Alpha))
	}
	w, h := m*(s+1)-1, c*s
	g := plots.Grid{X: make([]float64, w), Y: make([]float64, h), Z: make([][]float64, h)}
	for i := range g.X {
		g.X[i] = float64(i)
	}
	for r := range g.Y {
		g.Y[r] = float64(r)
		g.Z[r] = make([]float64, w)
	}
	for j := 0; j < m; j++ {
		sg := math.Copysign(1, net.Alpha[j])
		for ch := 0; ch < c; ch++ {
			for a := 0; a < s; a++ {
				for b := 0; b < s; b++ {
					// Image rows top to bottom: the grid's y grows upwards.
					g.Z[h-1-(ch*s+a)][j*(s+1)+b] = sg * net.U.At((ch*s+a)*s+b, j)
				}
			}
		}
	}
	if len(g.X) < 2 {
		g.X = append(g.X, 1)
		for r := range g.Z {
			g.Z[r] = append(g.Z[r], 0)
		}
	}
	if len(g.Y) < 2 {
		g.Y = append([]float64{-1}, g.Y...)
		g.Z = append([][]float64{make([]float64, len(g.X))}, g.Z...)
	}
	return plots.Heatmap(plots.HeatmapOptions{Title: fmt.Sprintf("%d learned filters (%d×%d×%d), signed by output weight", m, c, s, s), XLabel: "filter", YLabel: "channel · row", Diverging: true}, g)
}

// Filters displays FiltersFigure.
func Filters(net *CNN) error { return showFigure(FiltersFigure(net)) }
