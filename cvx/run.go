package cvx

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/convexnn/convexnn/solvers"
	"gonum.org/v1/gonum/mat"
)

// Method is an iterative solver for a Problem: FISTA for the sampled convex
// program of neurons (SampleNeurons), ADMM for the convex program of
// activation patterns (SamplePatterns, ExactPatterns).
type Method interface {
	method() string
	open(p *Problem, saved []byte) (engine, error)
}

// engine is a method at work on one problem.
type engine interface {
	step() Point
	iter() int
	objective() float64
	state() (any, error)
	network() (*Network, error)
	converged(Point) bool
}

// FISTA solves the sampled convex program eq. (SCP2) by accelerated proximal
// gradient with backtracking and adaptive restart (scp.FISTA).
type FISTA struct {
	// Tol stops Iterate early once the duality gap is at most
	// Tol·max(1, F(α)); 0 means 1e-8.
	Tol float64
}

func (FISTA) method() string { return "scp-fista" }

// Point is one finished iteration in a run's history.
type Point struct {
	Iter int `json:"iter"`
	// Objective is the convex objective: F(α) of eq. (SCP2) for FISTA,
	// l^{v,w} of eq. (convex_general) for ADMM.
	Objective float64 `json:"objective"`
	// Gap is, for FISTA, the duality gap (an upper bound on F(α) − F(α*));
	// for ADMM, |l^{u,α} − l^{v,w}| between the recovered network's
	// objective and the convex one.
	Gap            float64 `json:"gap"`
	ProxGrad       float64 `json:"prox_grad,omitempty"`       // FISTA: prox-gradient norm
	Nonzeros       int     `json:"nonzeros,omitempty"`        // FISTA: active neurons
	Nonconvex      float64 `json:"nonconvex,omitempty"`       // ADMM: l^{u,α}
	PrimalResidual float64 `json:"primal_residual,omitempty"` // ADMM
	DualResidual   float64 `json:"dual_residual,omitempty"`   // ADMM
	Violation      float64 `json:"violation,omitempty"`       // ADMM: max constraint violation
	Validation     float64 `json:"validation,omitempty"`      // optional validation metric
	Validated      bool    `json:"validated,omitempty"`       // Validation was measured at this iteration (see Run.ValidateEvery)
	Seconds        float64 `json:"seconds"`                   // solver time since the run started, over all cells

	// Certified is set when the point carries a certificate of the
	// program's optimum p*: Lower ≤ p* ≤ Upper and CertifiedGap =
	// (Upper − Lower)/|Upper| (ADMM: solvers/certify every
	// ADMM.CertifyEvery iterations; FISTA: its duality gap at every
	// iteration, Lower = F(α) − gap).
	Certified    bool    `json:"certified,omitempty"`
	Lower        float64 `json:"lower,omitempty"`
	Upper        float64 `json:"upper,omitempty"`
	CertifiedGap float64 `json:"certified_gap,omitempty"`

	// Back-propagation (Backprop): RobustObjective is the non-convex
	// objective on the training data perturbed by the run's adversary (0
	// without one); Accuracy and RobustAccuracy are the training accuracies
	// on the clean and the perturbed data.
	RobustObjective float64 `json:"robust_objective,omitempty"`
	Accuracy        float64 `json:"accuracy,omitempty"`
	RobustAccuracy  float64 `json:"robust_accuracy,omitempty"`
}

// setBound records a certificate lower ≤ p* ≤ upper with relative gap gap.
func (p *Point) setBound(lower, upper, gap float64) {
	p.Certified, p.Lower, p.Upper, p.CertifiedGap = true, lower, upper, gap
}

// certifying is an engine that certifies its iterates: certify fills the
// point's bounds when one is due (last: the last iteration of an Iterate
// call), and reached reports a point that meets the method's target gap.
type certifying interface {
	certify(pt *Point, last bool) error
	reached(pt Point) bool
}

// ErrInterrupted is returned by Iterate when the cell was interrupted; the
// last finished iteration is saved.
var ErrInterrupted = errors.New("interrupted")

// Run is a training run that lives across notebook cells.
type Run struct {
	Name string

	prob    *Problem
	meth    Method
	path    string
	eng     engine
	history []Point
	elapsed float64
	resumed int // iteration the run was resumed at (0 for a fresh run)
	err     error

	// SaveEvery is the longest time between two saves while iterating; 0
	// means 2 s. A save also happens at the end of every Iterate call and
	// on interruption.
	SaveEvery time.Duration
	// Quiet turns the live display off.
	Quiet bool
	// Validate, when set, is called after every iteration with the current
	// network; its value is recorded in the history (Point.Validation) and
	// drawn, and Iterate stops early when it returns stop = true.
	Validate func(net *Network) (metric float64, stop bool)
	// ValidateEvery calls Validate only after every ValidateEvery-th
	// iteration and after the last one of each Iterate call (0 or 1: after
	// every iteration), for networks whose recovery and evaluation cost
	// more than an iteration (SCP with tens of thousands of neurons). The
	// other points have Validated false.
	ValidateEvery int
}

// Start begins a fresh run under name in StateDir, discarding any saved run
// of that name. Errors are kept in the Run (see Err) and returned by its
// methods.
func Start(name string, p *Problem, m Method) *Run {
	return RunDir(StateDir()).Start(name, p, m)
}

// Resume continues the saved run called name in StateDir, or starts it when
// none is saved. A saved run made for another problem or method is refused
// with an error that says how the two differ.
func Resume(name string, p *Problem, m Method) *Run {
	return RunDir(StateDir()).Resume(name, p, m)
}

func open(dir RunDir, name string, p *Problem, m Method, resume bool) *Run {
	r := &Run{Name: name, prob: p, meth: m}
	r.err = r.init(dir, resume)
	if r.err != nil {
		report(r.err)
	}
	return r
}

func (r *Run) init(dir RunDir, resume bool) error {
	if err := r.prob.Err(); err != nil {
		return err
	}
	if r.meth == nil {
		return errors.New("cvx: no method given (for example cvx.FISTA{} or cvx.ADMM{})")
	}
	path, err := dir.statePath(r.Name, ".state")
	if err != nil {
		return err
	}
	r.prob.prefetchDesign()
	r.path = path
	var saved []byte
	if resume {
		s, err := loadState(path)
		switch {
		case errors.Is(err, errNoState):
		case err != nil:
			return err
		default:
			if s.Method != r.meth.method() || s.Fingerprint != r.prob.fingerprint(r.meth.method()) {
				return fmt.Errorf("cvx: saved run %q (%s) was made for another problem or method:\n  saved: %s, %s\n  now:   %s, %s\nuse cvx.Start to begin afresh, or another run name", r.Name, path, s.Method, s.Problem, r.meth.method(), r.prob.summary())
			}
			saved = s.Solver
			r.history, r.elapsed = s.History, s.Elapsed
		}
	} else if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("cvx: discarding the old run: %w", err)
	}
	r.eng, err = r.meth.open(r.prob, saved)
	if err != nil {
		if saved != nil {
			return fmt.Errorf("cvx: %s: %w (start afresh with cvx.Start)", path, err)
		}
		return err
	}
	r.resumed = r.eng.iter()
	return nil
}

// Err returns the error that stopped the run from being set up, if any.
func (r *Run) Err() error { return r.err }

// Iter returns the number of finished iterations, over all cells.
func (r *Run) Iter() int {
	if r.eng == nil {
		return 0
	}
	return r.eng.iter()
}

// ResumedAt returns the iteration a resumed run continued from (0 when it
// started afresh).
func (r *Run) ResumedAt() int { return r.resumed }

// History returns the finished iterations, over all cells.
func (r *Run) History() []Point { return r.history }

// Path returns the run's state file.
func (r *Run) Path() string { return r.path }

// Save writes the run's state atomically.
func (r *Run) Save() error {
	if r.err != nil {
		return r.err
	}
	st, err := r.eng.state()
	if err != nil {
		return err
	}
	raw, err := encodeSolver(st)
	if err != nil {
		return err
	}
	return saveState(r.path, &stateFile{
		Name: r.Name, Method: r.meth.method(), Fingerprint: r.prob.fingerprint(r.meth.method()),
		Problem: r.prob.summary(), Elapsed: r.elapsed, History: r.history, Solver: raw,
	})
}

// Iterate performs up to k more iterations with a live convergence chart,
// saving the state as it goes. It stops early when the method's tolerance is
// reached or Validate asks to stop. When the cell is interrupted (SIGINT, as
// Jupyter's interrupt sends, or SIGTERM), the last finished iteration is
// saved and Iterate returns an error wrapping ErrInterrupted.
func (r *Run) Iterate(k int) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return r.IterateContext(ctx, k)
}

// IterateContext is Iterate with cancellation through ctx.
func (r *Run) IterateContext(ctx context.Context, k int) error {
	if r.err != nil {
		return r.err
	}
	if k < 0 {
		return fmt.Errorf("cvx: Iterate(%d): the count must be ≥ 0", k)
	}
	every := r.SaveEvery
	if every <= 0 {
		every = 2 * time.Second
	}
	var live *Progress
	if !r.Quiet {
		live = NewProgress(fmt.Sprintf("run %q", r.Name))
	}
	from := r.Iter()
	lastSave := time.Now()
	var stopErr error
	why := ""
	for i := 0; i < k; i++ {
		if ctx.Err() != nil {
			stopErr = fmt.Errorf("cvx: run %q %w after iteration %d; state saved to %s", r.Name, ErrInterrupted, r.Iter(), r.path)
			break
		}
		t0 := time.Now()
		pt := r.eng.step()
		r.elapsed += time.Since(t0).Seconds()
		pt.Seconds = r.elapsed
		stopEarly := false
		// The step is done: a failure to validate or certify it records
		// and saves it (without that measurement) before returning.
		keep := func(err error) error {
			r.history = append(r.history, pt)
			if serr := r.Save(); serr != nil {
				return errors.Join(err, serr)
			}
			return err
		}
		if r.Validate != nil && (r.ValidateEvery <= 1 || pt.Iter%r.ValidateEvery == 0 || i == k-1) {
			net, err := r.eng.network()
			if err != nil {
				return keep(err)
			}
			pt.Validation, stopEarly = r.Validate(net)
			pt.Validated = true
		}
		cert, certifies := r.eng.(certifying)
		if certifies {
			if err := cert.certify(&pt, i == k-1 || r.eng.converged(pt)); err != nil {
				return keep(err)
			}
		}
		r.history = append(r.history, pt)
		if time.Since(lastSave) > every {
			if err := r.Save(); err != nil {
				return err
			}
			lastSave = time.Now()
		}
		if live != nil {
			live.Update(r.statusLine(), r.convergenceFigure)
		}
		if r.eng.converged(pt) {
			why = " — converged"
			break
		}
		if certifies && cert.reached(pt) {
			why = fmt.Sprintf(" — certified gap %.3g reached", pt.CertifiedGap)
			break
		}
		if stopEarly {
			why = " — stopped early on the validation metric"
			break
		}
	}
	if err := r.Save(); err != nil {
		return err
	}
	if live != nil {
		live.Done(fmt.Sprintf("%s%s (iterations %d→%d this cell)", r.statusLine(), why, from, r.Iter()), r.convergenceFigure)
	}
	return stopErr
}

func (r *Run) statusLine() string {
	if len(r.history) == 0 {
		return fmt.Sprintf("run %q: no iterations yet", r.Name)
	}
	p := r.history[len(r.history)-1]
	switch m := r.meth.(type) {
	case ADMM:
		cert := ""
		if g := r.Gap(); !math.IsNaN(g) {
			cert = fmt.Sprintf(", certified gap %.3g", g)
		}
		return fmt.Sprintf("run %q: iteration %d, objective %.6g%s, |l^{u,α} − l^{v,w}| %.3g, residuals %.2g/%.2g, %.2f s", r.Name, p.Iter, p.Objective, cert, p.Gap, p.PrimalResidual, p.DualResidual, p.Seconds)
	case Backprop:
		line := fmt.Sprintf("run %q (%s): epoch %d, objective %.6g, training accuracy %.2f%%", r.Name, m.Name(), p.Iter, p.Objective, 100*p.Accuracy)
		if m.Adversary != "" {
			line += fmt.Sprintf(", robust objective %.6g, accuracy under %s %.2f%%", p.RobustObjective, m.Adversary, 100*p.RobustAccuracy)
		}
		return line + fmt.Sprintf(", %.2f s", p.Seconds)
	}
	return fmt.Sprintf("run %q: iteration %d, objective %.6g, duality gap %.3g, %d active neurons, %.2f s", r.Name, p.Iter, p.Objective, p.Gap, p.Nonzeros, p.Seconds)
}

// Gap returns the certified relative gap (upper − lower)/|upper| of the
// program's optimum at the run's last certified iterate (Point.Certified),
// or NaN when no iterate is certified yet.
func (r *Run) Gap() float64 {
	for i := len(r.history) - 1; i >= 0; i-- {
		if r.history[i].Certified {
			return r.history[i].CertifiedGap
		}
	}
	return math.NaN()
}

// Objective returns the convex objective at the current iterate.
func (r *Run) Objective() float64 {
	if r.eng == nil {
		return math.NaN()
	}
	return r.eng.objective()
}

// Network returns the trained two-layer network.
func (r *Run) Network() (*Network, error) {
	if r.err != nil {
		return nil, r.err
	}
	return r.eng.network()
}

// Network is a two-layer ReLU network f(x) = Σ_j (xᵀu_j)_+ α_j.
type Network = solvers.Network

// Problem returns the run's problem.
func (r *Run) Problem() *Problem { return r.prob }

// Neurons returns the number of sampled neurons N (0 when none are sampled).
func (p *Problem) Neurons() int { return p.neurons }

// Accuracy returns the fraction of rows of X the network classifies as y
// (labels −1/+1; f(x) ≥ 0 predicts +1).
func Accuracy(net *Network, x *mat.Dense, y []float64) (float64, error) {
	return score(net, x, y, true, solvers.Accuracy)
}

// MSE returns the network's mean squared error (1/n) Σ (f(x_k) − y_k)² on
// the rows of X.
func MSE(net *Network, x *mat.Dense, y []float64) (float64, error) {
	return score(net, x, y, false, solvers.MSE)
}

// score validates the data (labels: y must be class labels), predicts
// and scores the predictions against y.
func score(net *Network, x *mat.Dense, y []float64, labels bool, of func(pred, y []float64) (float64, error)) (float64, error) {
	if err := validateData(x, y, labels); err != nil {
		return 0, err
	}
	pred, err := net.Predict(x)
	if err != nil {
		return 0, err
	}
	return of(pred, y)
}
