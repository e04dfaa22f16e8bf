package cvx

import (
	"bytes"
	"encoding/gob"
	"errors"
	"fmt"
	"math"
	"sync"

	"github.com/convexnn/convexnn/solvers"
	"github.com/convexnn/convexnn/solvers/admm"
	"github.com/convexnn/convexnn/solvers/certify"
	"github.com/convexnn/convexnn/solvers/scp"
	"gonum.org/v1/gonum/mat"
)

// ---- FISTA on the sampled convex program of neurons (eq. SCP2) ----

func (f FISTA) open(p *Problem, saved []byte) (engine, error) {
	if f.Tol < 0 {
		return nil, fmt.Errorf("cvx: FISTA{Tol: %v}: tolerance must be ≥ 0", f.Tol)
	}
	if !p.sampled {
		return nil, errors.New("cvx: FISTA solves the sampled convex program: call SampleNeurons(N, seed) on the problem")
	}
	if p.conv != nil || p.twoHidden > 0 {
		return nil, errors.New("cvx: FISTA solves the sampled program of two-layer fully connected networks, not a CNN (Conv) or TwoHidden one: use cvx.ADMM{} or cvx.Solve")
	}
	if err := p.refuseRobust("FISTA"); err != nil {
		return nil, err
	}
	if err := p.refuseGated("FISTA"); err != nil {
		return nil, err
	}
	a := p.design()
	_, d := a.Dims()
	u, err := scp.SampleSphere(d, p.neurons, p.seed)
	if err != nil {
		return nil, err
	}
	h, err := scp.ReLUFeatures(a, u)
	if err != nil {
		return nil, err
	}
	st, err := savedState[scp.FISTAState](saved)
	if err != nil {
		return nil, err
	}
	tol := f.Tol
	if tol == 0 {
		tol = 1e-8
	}
	e := &fistaEngine{u: u, bias: p.bias, tol: tol}
	switch p.loss {
	case Squared:
		solver, err := scp.NewFISTA(&scp.Lasso{H: h, Y: p.y, Beta: p.beta}, st)
		if err != nil {
			return nil, err
		}
		e.stepper, e.st = solver, &solver.State
	case BCE:
		solver, err := scp.NewFISTABCE(&scp.BCELasso{H: scp.NewDenseFeatures(h), Y: p.targets(), Beta: p.beta}, st)
		if err != nil {
			return nil, err
		}
		e.stepper, e.st = solver, &solver.State
	default:
		return nil, fmt.Errorf("cvx: FISTA solves the sampled convex program with the squared or BCE loss, not %s (use ADMM on sampled patterns)", p.loss)
	}
	return e, nil
}

type fistaEngine struct {
	stepper interface{ Step() scp.FISTAStep }
	st      *scp.FISTAState
	u       *mat.Dense
	bias    bool
	tol     float64
}

func (e *fistaEngine) step() Point {
	st := e.stepper.Step()
	pt := Point{Iter: st.Iter, Objective: st.Objective, Gap: st.Gap, ProxGrad: st.ProxGrad, Nonzeros: st.Nonzeros}
	// The duality gap of eq. (SCP2) is a certificate: F(α) − gap ≤ F* ≤ F(α).
	if !math.IsNaN(st.Gap) && !math.IsInf(st.Gap, 0) {
		pt.setBound(st.Objective-st.Gap, st.Objective, certify.RelativeGap(st.Objective-st.Gap, st.Objective))
	}
	return pt
}
func (e *fistaEngine) iter() int           { return e.st.Iter }
func (e *fistaEngine) objective() float64  { return e.st.Obj }
func (e *fistaEngine) state() (any, error) { return e.st, nil }
func (e *fistaEngine) network() (*Network, error) {
	return scp.Network(e.u, e.st.Alpha, e.bias)
}
func (e *fistaEngine) converged(p Point) bool { return p.Gap <= e.tol*math.Max(1, p.Objective) }

// ---- ADMM on the convex program of activation patterns (eq. convex_general) ----

// ADMM solves the convex program of activation patterns by the paper's
// Algorithm "ADMM" (package solvers/admm). The u-update depends on the loss
// (Inner): the closed form eq. (uupdate) for the squared loss (ClosedForm);
// the loss split out of the u-update with its per-sample prox for any loss
// (Split, ρ adapted by residual balancing); for the smooth losses, the
// paper's randomized block coordinate descent (RBCD, Algorithm RBCD); and
// for a robust problem, the robust ADMM (RobustInner).
type ADMM struct {
	Rho   float64 // penalty ρ > 0; 0 means the variant's default (admm.Options.Rho)
	Gamma float64 // dual step γ_a > 0; 0 means γ_a = ρ (dual step γ_a/ρ = 1)
	// Tol stops Iterate when the primal and dual residuals are below it
	// (absolute and relative); 0 means the solver's default.
	Tol float64
	// Inner selects the u-update; AutoInner (the zero value) takes
	// admm.ChooseVariant's: RobustInner for a robust problem, ClosedForm for
	// the squared loss, Split for the hinge loss, RBCD for BCE and logistic.
	Inner Inner
	// Blocks is the number of blocks per RBCD step, InnerMax the cap on RBCD
	// steps per ADMM iteration (0: the solver's defaults, 1 and 20 sweeps).
	Blocks, InnerMax int
	// Seed seeds RBCD's block selection.
	Seed uint64
	// Relax is the over-relaxation α ∈ (0, 2) of the closed-form u-update
	// (admm.Options.Relax): 0 or 1 means none, the paper's ADMM; 1.5–1.8
	// often converges faster (docs/performance.md). It needs γ_a = ρ
	// (Gamma 0 or Rho). Split and the robust ADMM over-relax with their own
	// fixed α = 1.6. On CNN and two-hidden-layer problems it is the general
	// ADMM's over-relaxation (general.Options.Relax), every loss; on a
	// robust CNN that of its ADMM splitting (general.ConeOptions.Relax, 0
	// meaning 1.6).
	Relax float64
	// Route selects how ClosedForm and Split solve their linear system
	// (admm.Route): Woodbury or Direct factor it once (exact solves; the
	// set-up dominates short runs on large data), CG factors nothing and
	// solves by warm-started preconditioned conjugate gradients (best for
	// tens of iterations on large data); AutoRoute chooses by a flop model
	// for a 1000-iteration run.
	Route Route
	// Gap stops Iterate once the certified relative gap
	// (upper − lower)/|upper| of the program's optimum (solvers/certify) is
	// at most Gap; 0 means no such stop. It must be in [0, 1).
	Gap float64
	// CertifyEvery certifies the iterate (Point.Lower, Point.Upper,
	// Point.CertifiedGap) every CertifyEvery iterations and after the last
	// iteration of each Iterate call; 0 means 25, a negative value never
	// (then Gap must be 0). A certificate costs about as much as tens of
	// iterations: on Table 2 (MNIST 2 vs 8, n = 11 809, d = 785, P = 24)
	// the first of a process about 7 s, against 0.4 s per iteration.
	CertifyEvery int
}

// certifyRefine is the certifier's refinement budget per certificate
// along a run (certify.Certifier.Refine).
const certifyRefine = 10

// certifyEvery resolves ADMM.CertifyEvery.
func (a ADMM) certifyEvery() int {
	if a.CertifyEvery == 0 {
		return 25
	}
	return a.CertifyEvery
}

// Inner names the u-update of ADMM (admm.Variant).
type Inner = admm.Variant

// The u-updates.
const (
	AutoInner   Inner = ""                     // chosen by the loss (admm.ChooseVariant)
	ClosedForm  Inner = admm.VariantClosedForm // squared loss, closed form eq. (uupdate)
	Split       Inner = admm.VariantSplit      // any loss, split out with its prox
	RBCD        Inner = admm.VariantRBCD       // smooth losses, Algorithm RBCD
	RobustInner Inner = admm.VariantRobust     // robust problems, every loss
)

// Route names how ClosedForm and Split solve their linear system (admm.Route).
type Route = admm.Route

// The routes.
const (
	AutoRoute Route = admm.RouteAuto
	Woodbury  Route = admm.RouteWoodbury
	Direct    Route = admm.RouteDirect
	CG        Route = admm.RouteCG
)

// relaxed reports whether a asks for over-relaxation (Relax other than 0
// and 1, which both mean none).
func (a ADMM) relaxed() bool { return a.Relax != 0 && a.Relax != 1 }

// method names ADMM with the parameters its state depends on (the scaled
// duals depend on ρ), so a run is not resumed with other ones.
func (a ADMM) method() string {
	m := fmt.Sprintf("admm rho=%g gamma=%g", a.Rho, a.Gamma)
	if a.Inner != AutoInner {
		m += " inner=" + string(a.Inner)
	}
	if a.relaxed() {
		m += fmt.Sprintf(" relax=%g", a.Relax)
	}
	if a.Inner == RBCD {
		m += fmt.Sprintf(" blocks=%d inner-max=%d seed=%d", a.Blocks, a.InnerMax, a.Seed)
	}
	return m
}

// variant checks a's fields against the problem and returns the u-update.
func (a ADMM) variant(p *Problem) (Inner, error) {
	if a.Rho < 0 || a.Gamma < 0 || a.Tol < 0 || a.Blocks < 0 || a.InnerMax < 0 || math.IsNaN(a.Rho) || math.IsNaN(a.Gamma) || math.IsNaN(a.Tol) {
		return "", fmt.Errorf("cvx: ADMM{Rho: %v, Gamma: %v, Tol: %v, Blocks: %d}: parameters must be positive (or 0 for the default)", a.Rho, a.Gamma, a.Tol, a.Blocks)
	}
	if a.Relax != 0 && !(a.Relax > 0 && a.Relax < 2) {
		return "", fmt.Errorf("cvx: ADMM{Relax: %v}: the over-relaxation α must be in (0, 2) (or 0 for none)", a.Relax)
	}
	if !(a.Gap >= 0 && a.Gap < 1) {
		return "", fmt.Errorf("cvx: ADMM{Gap: %v}: the certified relative gap must be in (0, 1) (or 0 for no such stop)", a.Gap)
	}
	if a.Gap > 0 && a.CertifyEvery < 0 {
		return "", fmt.Errorf("cvx: ADMM{Gap: %v, CertifyEvery: %d}: stopping at a certified gap needs certificates (CertifyEvery ≥ 0)", a.Gap, a.CertifyEvery)
	}
	if _, err := admm.ParseRoute(string(a.Route)); err != nil {
		return "", fmt.Errorf("cvx: ADMM{Route: %q}: use cvx.Woodbury, cvx.Direct, cvx.CG or cvx.AutoRoute", a.Route)
	}
	loss, err := solvers.ParseLoss(string(p.loss))
	if err != nil {
		return "", err
	}
	inner := a.Inner
	if inner == AutoInner {
		inner = admm.ChooseVariant(loss, p.robust())
	} else if _, err := admm.ParseVariant(string(inner)); err != nil {
		return "", fmt.Errorf("cvx: ADMM{Inner: %q}: use cvx.ClosedForm, cvx.Split, cvx.RBCD, cvx.RobustInner or cvx.AutoInner", a.Inner)
	}
	switch {
	case p.robust() && inner != RobustInner:
		return "", fmt.Errorf("cvx: ADMM{Inner: %q}: a robust problem (Robust(%g)) is solved by the robust ADMM, Inner cvx.RobustInner or cvx.AutoInner", a.Inner, p.eps)
	case !p.robust() && inner == RobustInner:
		return "", errors.New("cvx: ADMM{Inner: cvx.RobustInner} is for robust problems (Problem.Robust(ε, norm))")
	case inner == ClosedForm && p.loss != Squared:
		return "", fmt.Errorf("cvx: ADMM{Inner: cvx.ClosedForm} is for the squared loss; the %s loss needs cvx.Split or cvx.RBCD", p.loss)
	case inner == RBCD && p.loss == Hinge:
		return "", errors.New("cvx: ADMM{Inner: cvx.RBCD} needs a smooth loss; the hinge loss has no gradient: use cvx.Split")
	case inner != ClosedForm && a.relaxed():
		return "", fmt.Errorf("cvx: ADMM{Relax: %v} is for the closed-form u-update (the squared loss); the %s u-update %s", a.Relax, inner, map[bool]string{true: "has no over-relaxation", false: "over-relaxes with its own fixed α = 1.6"}[inner == RBCD])
	case inner != RBCD && (a.Blocks != 0 || a.InnerMax != 0 || a.Seed != 0):
		return "", fmt.Errorf("cvx: ADMM Blocks, InnerMax and Seed are options of Inner cvx.RBCD, not of %s", inner)
	case a.Route != AutoRoute && inner == RBCD:
		return "", fmt.Errorf("cvx: ADMM{Route: %q} is for the closed-form and split u-updates; RBCD solves no linear system", a.Route)
	case a.Route != AutoRoute && inner == RobustInner:
		return "", fmt.Errorf("cvx: ADMM{Route: %q} is for the closed-form and split u-updates; the robust ADMM solves its u-update in eigenbases", a.Route)
	}
	return inner, nil
}

// options are the solver options of a for the u-update inner.
func (a ADMM) options(inner Inner) admm.Options {
	o := admm.Options{Rho: a.Rho, Gamma: a.Gamma}
	if a.Tol > 0 {
		o.AbsTol, o.RelTol = a.Tol, a.Tol
	}
	switch inner {
	case ClosedForm:
		o.Relax, o.Route = a.Relax, a.Route
	case Split:
		o.Route = a.Route
	case RBCD:
		o.Blocks, o.InnerMax, o.Seed = a.Blocks, a.InnerMax, a.Seed
	}
	return o
}

func (a ADMM) open(p *Problem, saved []byte) (engine, error) {
	if err := p.refuseGated("ADMM"); err != nil {
		return nil, err
	}
	if p.conv != nil || p.twoHidden > 0 {
		return a.openGeneral(p, saved)
	}
	inner, err := a.variant(p)
	if err != nil {
		return nil, err
	}
	// The saved state decodes while the program is built.
	var st admm.State
	decoded := make(chan error, 1)
	if saved != nil {
		if st, err = admm.NewState(inner); err != nil {
			return nil, err
		}
		go func() { decoded <- decodeState(saved, st) }()
	} else {
		decoded <- nil
	}
	prog, err := p.Convex()
	if derr := <-decoded; err == nil {
		err = derr
	}
	if err != nil {
		return nil, err
	}
	var pert solvers.Perturbation
	if p.robust() {
		pert = p.Perturbation()
	}
	o := a.options(inner)
	o.DataDigest = p.dataDigest()
	solver, err := admm.New(prog, pert, inner, o, st)
	if err != nil {
		return nil, err
	}
	e := &admmEngine{solver: solver, prog: prog, every: a.certifyEvery(), gap: a.Gap, certReady: make(chan struct{})}
	if p.robust() {
		e.pert = &pert
	}
	if e.every < 0 {
		close(e.certReady)
		return e, nil
	}
	// The certifier's set-up (|X|, row norms, ‖X‖₂) is not needed before
	// the first certificate: it starts with the first iteration and runs
	// beside it, so that a cell continuing a run starts iterating sooner.
	e.startCert = sync.OnceFunc(func() {
		go func() {
			defer close(e.certReady)
			e.cert, e.certErr = certify.New(prog, pert)
			if e.cert != nil {
				// Along a run the certifier keeps its multipliers
				// between calls, so a few refinement steps per
				// certificate accumulate; they keep its cost near that
				// of a few iterations.
				e.cert.Refine = certifyRefine
			}
		}()
	})
	return e, nil
}

// admmEngine runs any ADMM variant through admm.Solver.
type admmEngine struct {
	solver admm.Solver
	prog   *solvers.Program
	last   admm.Step
	// pert is the perturbation set of a robust problem (nil otherwise): the
	// objective is then solvers.RobustObjective.
	pert *solvers.Perturbation
	// cert certifies iterates every `every` iterations (never when
	// negative), once certReady is closed (certErr: it could not be set
	// up); gap > 0 is ADMM.Gap.
	cert      *certify.Certifier
	certErr   error
	certReady chan struct{}
	startCert func() // sets cert up in the background, once
	every     int
	gap       float64
}

// certify fills pt's bounds from the certificate of the current iterate
// with the solver's duals (admm.Hint), when due (every e.every iterations,
// or last: the last of an Iterate call).
func (e *admmEngine) certify(pt *Point, last bool) error {
	if e.every < 0 || (!last && pt.Iter%e.every != 0) {
		return nil
	}
	e.startCert()
	<-e.certReady
	if e.certErr != nil {
		return e.certErr
	}
	b, err := e.cert.Bound(e.solver.Weights(), admm.Hint(e.solver))
	if err != nil {
		return err
	}
	pt.setBound(b.Lower, b.Upper, b.Gap)
	return nil
}

// reached reports whether pt's certified gap meets ADMM.Gap.
func (e *admmEngine) reached(pt Point) bool {
	return e.gap > 0 && pt.Certified && pt.CertifiedGap <= e.gap
}

func (e *admmEngine) step() Point {
	if e.startCert != nil {
		e.startCert()
	}
	st := e.solver.Step()
	e.last = st
	return Point{Iter: st.Iter, Objective: st.ConvexObjective, Nonconvex: st.NonconvexObjective, Gap: st.Gap,
		PrimalResidual: st.PrimalResidual, DualResidual: st.DualResidual, Violation: st.Violation}
}
func (e *admmEngine) iter() int { return e.solver.Iter() }
func (e *admmEngine) objective() float64 {
	var v float64
	var err error
	if e.pert != nil {
		v, err = solvers.RobustObjective(e.prog, e.solver.Weights(), *e.pert)
	} else {
		v, err = e.prog.Objective(e.solver.Weights())
	}
	if err != nil {
		return math.NaN()
	}
	return v
}
func (e *admmEngine) state() (any, error)        { return e.solver.Checkpoint(), nil }
func (e *admmEngine) network() (*Network, error) { return e.solver.Network() }
func (e *admmEngine) converged(Point) bool       { return e.solver.Converged(e.last) }

// savedState decodes a solver's saved state, or returns nil for none.
func savedState[S any](saved []byte) (*S, error) {
	if saved == nil {
		return nil, nil
	}
	st := new(S)
	return st, decodeState(saved, st)
}

// decodeState decodes a solver's saved state (encodeSolver) into st.
func decodeState(saved []byte, st any) error {
	if err := gob.NewDecoder(bytes.NewReader(saved)).Decode(st); err != nil {
		return fmt.Errorf("solver state is corrupt (%v)", err)
	}
	return nil
}
