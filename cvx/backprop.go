package cvx

import (
	"errors"
	"fmt"
	"math"
	"strings"

	"github.com/convexnn/convexnn/plots"
	"github.com/convexnn/convexnn/solvers"
	"github.com/convexnn/convexnn/solvers/backprop"
	"gonum.org/v1/gonum/mat"
)

// Optimizer names the optimizer of Backprop (backprop.Optimizer).
type Optimizer = backprop.Optimizer

// The optimizers.
const (
	Adam Optimizer = backprop.Adam // the default
	SGD  Optimizer = backprop.SGD
)

// Backprop trains the non-convex two-layer ReLU network of
// eq. (nonconvex_general),
//
//	min_{u,α}  ℓ(Σ_j (X u_j)_+ α_j, y) + (β/2) Σ_j (‖u_j‖² + α_j²),
//
// by minibatch gradient descent (Adam or SGD, backprop.Trainer): the
// paper's baselines GD-std, and, with an Adversary, GD-FGSM and GD-PGD,
// which replace each minibatch by its FGSM or PGD perturbation in the ball
// ‖δ_k‖ ≤ Eps before the gradient step (Madry et al.'s approximation of the
// robust problem eq. (robust_general)). One iteration of a Run is one epoch.
// The problem's loss, β and Bias are used; its neurons and patterns are not.
type Backprop struct {
	// Width is the number m ≥ 1 of hidden neurons.
	Width int
	// LearningRate is the step size; 0 means 1e-3 for Adam, 1e-2 for SGD.
	LearningRate float64
	// BatchSize is the minibatch size; 0 means full batches.
	BatchSize int
	// Optimizer is Adam (the default) or SGD.
	Optimizer Optimizer
	// Adversary is NoAdversary (GD-std), FGSM (GD-FGSM) or PGD (GD-PGD, the
	// paper's 40 steps of size ε/30 for the box).
	Adversary Adversary
	// Eps is the adversary's radius ε > 0 and Norm its ball, LInf (or "",
	// the paper's box ‖δ‖_∞ ≤ ε) or L2; both only with an Adversary.
	Eps  float64
	Norm Norm
	// Seed seeds the initialization and the minibatch shuffles.
	Seed uint64
}

// Name returns the method's name in the paper: GD-std, GD-FGSM or GD-PGD.
func (b Backprop) Name() string {
	if b.Adversary == NoAdversary {
		return "GD-std"
	}
	return "GD-" + strings.ToUpper(string(b.Adversary))
}

func (b Backprop) optimizer() Optimizer {
	if b.Optimizer == "" {
		return Adam
	}
	return b.Optimizer
}

func (b Backprop) norm() Norm {
	if b.Norm == "" && b.Adversary != NoAdversary {
		return LInf
	}
	return b.Norm
}

// method names Backprop with every field, so a run is not resumed with
// other ones (the state's Adam moments belong to one optimizer and rate).
func (b Backprop) method() string {
	m := fmt.Sprintf("backprop width=%d lr=%g batch=%d optimizer=%s seed=%d", b.Width, b.LearningRate, b.BatchSize, b.optimizer(), b.Seed)
	if b.Adversary != "" || b.Eps != 0 || b.Norm != "" {
		m += fmt.Sprintf(" adversary=%s eps=%g norm=%s", b.Adversary, b.Eps, b.norm())
	}
	return m
}

// options checks the fields and translates them for the problem's loss and β.
func (b Backprop) options(p *Problem) (backprop.Options, error) {
	var o backprop.Options
	if b.Width < 1 {
		return o, fmt.Errorf("cvx: Backprop{Width: %d}: need at least one hidden neuron", b.Width)
	}
	if !(b.LearningRate >= 0) || math.IsInf(b.LearningRate, 0) {
		return o, fmt.Errorf("cvx: Backprop{LearningRate: %v}: the rate must be positive and finite (0 for the default)", b.LearningRate)
	}
	if b.BatchSize < 0 {
		return o, fmt.Errorf("cvx: Backprop{BatchSize: %d}: must be ≥ 0 (0 for full batches)", b.BatchSize)
	}
	switch b.Optimizer {
	case "", Adam, SGD:
	default:
		return o, fmt.Errorf("cvx: Backprop{Optimizer: %q}: use cvx.Adam or cvx.SGD", b.Optimizer)
	}
	switch b.Adversary {
	case NoAdversary:
		if b.Eps != 0 || b.Norm != "" {
			return o, fmt.Errorf("cvx: Backprop{Eps: %v, Norm: %q}: Eps and Norm are options of an Adversary (cvx.FGSM or cvx.PGD)", b.Eps, b.Norm)
		}
	case FGSM, PGD:
		if !(b.Eps > 0) || math.IsInf(b.Eps, 0) {
			return o, fmt.Errorf("cvx: Backprop{Adversary: %q, Eps: %v}: the adversary needs a radius 0 < ε < ∞", b.Adversary, b.Eps)
		}
		switch b.Norm.Canonical() {
		case LInf, L2:
		default:
			return o, fmt.Errorf("cvx: Backprop{Norm: %q}: use cvx.LInf or cvx.L2", b.Norm)
		}
	default:
		return o, fmt.Errorf("cvx: Backprop{Adversary: %q}: use cvx.NoAdversary (GD-std), cvx.FGSM or cvx.PGD", b.Adversary)
	}
	loss, err := solvers.ParseLoss(string(p.loss))
	if err != nil {
		return o, err
	}
	return backprop.Options{
		Width: b.Width, Beta: p.beta, Loss: loss, Optimizer: b.Optimizer, LearningRate: b.LearningRate,
		BatchSize: b.BatchSize, Seed: b.Seed, Adversary: b.Adversary, Bias: p.bias,
		Attack: backprop.AttackOptions{Eps: b.Eps, Norm: b.Norm},
	}, nil
}

func (b Backprop) open(p *Problem, saved []byte) (engine, error) {
	if p.conv != nil || p.bn || p.twoHidden > 0 {
		return nil, errors.New("cvx: Backprop trains the fully connected two-layer network; back-propagation of the CNN, batch-normalized and two-hidden-layer architectures is not available yet")
	}
	if p.robust() {
		return nil, fmt.Errorf("cvx: Backprop trains on the problem's data; the adversary is its own option: drop Robust(%g) from the problem and use Backprop{Adversary: cvx.PGD, Eps: %g}", p.eps, p.eps)
	}
	o, err := b.options(p)
	if err != nil {
		return nil, err
	}
	st, err := savedState[backprop.State](saved)
	if err != nil {
		return nil, err
	}
	x, _ := p.Data()
	y := p.targets()
	bp, err := backprop.New(x, y, o, st)
	if err != nil {
		return nil, err
	}
	return &backpropEngine{bp: bp, x: x, y: y, opts: o, name: b.Name()}, nil
}

// backpropEngine runs backprop.Trainer one epoch per iteration.
type backpropEngine struct {
	bp       *backprop.Trainer
	x        *mat.Dense
	y        []float64
	opts     backprop.Options
	name     string
	last     Point // the last point with a finite objective, if haveLast
	haveLast bool
	prev     backprop.State
	diverged bool
}

// step runs one epoch. When the objective stops being finite (the learning
// rate is too large), the epoch is undone, so the saved state and history
// stay finite: the point returned repeats the last finite one (the initial
// weights' objective when the first epoch diverged), a note says why, and
// converged stops Iterate.
func (e *backpropEngine) step() Point {
	st := &e.bp.State
	e.prev = backprop.State{Epoch: st.Epoch, AdamStep: st.AdamStep, U: clone(st.U), Alpha: clone(st.Alpha), M: clone(st.M), V: clone(st.V)}
	s := e.bp.Step()
	e.diverged = !finite(s.Objective) || !finite(s.RobustObjective)
	if e.diverged {
		note(fmt.Sprintf("cvx: %s: the objective is %v after epoch %d: training diverged, so the epoch is undone; lower the LearningRate (now %g)", e.name, s.Objective, s.Epoch, e.bp.Options.LearningRate))
		bp, err := backprop.New(e.x, e.y, e.opts, &e.prev)
		if err != nil { // cannot happen: the state was valid a step ago
			report(fmt.Errorf("cvx: %s: restoring the state before the diverging epoch: %w", e.name, err))
		} else {
			e.bp = bp
		}
		if !e.haveLast || e.last.Iter != e.bp.State.Epoch {
			e.last, e.haveLast = Point{Iter: e.bp.State.Epoch, Objective: e.objective()}, true
		}
		return e.last
	}
	e.last = Point{Iter: s.Epoch, Objective: s.Objective, RobustObjective: s.RobustObjective,
		Accuracy: s.Accuracy, RobustAccuracy: s.RobustAccuracy, Nonzeros: e.active()}
	e.haveLast = true
	return e.last
}

func clone(v []float64) []float64 {
	if v == nil {
		return nil
	}
	return append([]float64(nil), v...)
}

func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

// active counts the hidden neurons with a non-zero output weight.
func (e *backpropEngine) active() int {
	var k int
	for _, a := range e.bp.State.Alpha {
		if a != 0 {
			k++
		}
	}
	return k
}

func (e *backpropEngine) iter() int { return e.bp.State.Epoch }

// objective returns l^{u,α} of eq. (nonconvex_general) on the clean data at
// the current weights.
func (e *backpropEngine) objective() float64 {
	yhat, err := e.bp.Network().Predict(e.x)
	if err != nil {
		return math.NaN()
	}
	var s float64
	for _, v := range e.bp.State.U {
		s += v * v
	}
	for _, v := range e.bp.State.Alpha {
		s += v * v
	}
	return e.bp.Options.Loss.Value(yhat, e.y) + e.bp.Options.Beta/2*s
}

func (e *backpropEngine) state() (any, error)        { return &e.bp.State, nil }
func (e *backpropEngine) network() (*Network, error) { return e.bp.Network(), nil }

// converged stops Iterate only when training diverged (a non-finite
// objective, see step); back-propagation has no optimality certificate.
func (e *backpropEngine) converged(Point) bool { return e.diverged }

// TrainingFigure draws a back-propagation run's objective on the clean
// training data and, with an adversary, on the perturbed data (log scale),
// against the epoch.
func TrainingFigure(r *Run) (*plots.Figure, error) {
	if err := backpropRun(r); err != nil {
		return nil, err
	}
	obj := plots.Series{Name: "objective l^{u,α} (clean)"}
	rob := plots.Series{Name: "objective on the attacked data"}
	for _, p := range thin(r.history, 1500) {
		if p.Objective > 0 && !math.IsInf(p.Objective, 0) {
			obj.X, obj.Y = append(obj.X, float64(p.Iter)), append(obj.Y, p.Objective)
		}
		if p.RobustObjective > 0 && !math.IsInf(p.RobustObjective, 0) {
			rob.X, rob.Y = append(rob.X, float64(p.Iter)), append(rob.Y, p.RobustObjective)
		}
	}
	series := []plots.Series{obj}
	if len(rob.X) > 0 {
		series = append(series, rob)
	}
	return plots.Line(plots.LineOptions{Title: fmt.Sprintf("Training of run %q (%s)", r.Name, r.meth.(Backprop).Name()), XLabel: "epoch", YLabel: "objective", LogY: true}, series...)
}

// AccuracyFigure draws a back-propagation run's training accuracy on the
// clean data and, with an adversary, on the perturbed data, against the
// epoch.
func AccuracyFigure(r *Run) (*plots.Figure, error) {
	if err := backpropRun(r); err != nil {
		return nil, err
	}
	clean := plots.Series{Name: "clean accuracy"}
	rob := plots.Series{Name: "accuracy on the attacked data"}
	adv := r.meth.(Backprop).Adversary != NoAdversary
	for _, p := range thin(r.history, 1500) {
		clean.X, clean.Y = append(clean.X, float64(p.Iter)), append(clean.Y, p.Accuracy)
		if adv {
			rob.X, rob.Y = append(rob.X, float64(p.Iter)), append(rob.Y, p.RobustAccuracy)
		}
	}
	series := []plots.Series{clean}
	if adv {
		series = append(series, rob)
	}
	return plots.Line(plots.LineOptions{Title: fmt.Sprintf("Training accuracy of run %q (%s)", r.Name, r.meth.(Backprop).Name()), XLabel: "epoch", YLabel: "accuracy"}, series...)
}

// TrainingCurves displays TrainingFigure and, for classification, AccuracyFigure.
func TrainingCurves(r *Run) error {
	if err := showFigure(TrainingFigure(r)); err != nil {
		return err
	}
	if r.prob.classify {
		return showFigure(AccuracyFigure(r))
	}
	return nil
}

func backpropRun(r *Run) error {
	if r == nil {
		return errors.New("cvx: nil run")
	}
	if r.err != nil {
		return r.err
	}
	if _, ok := r.meth.(Backprop); !ok {
		return fmt.Errorf("cvx: run %q uses %s, not Backprop: use Convergence(run)", r.Name, r.meth.method())
	}
	return nil
}
