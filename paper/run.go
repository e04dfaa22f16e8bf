package paper

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"time"

	"github.com/convexnn/convexnn/cvx"
	"github.com/convexnn/convexnn/data"
	"github.com/convexnn/convexnn/internal/atomicfile"
)

// Reproduce runs the experiments at size, each with runs seeds (1 … runs),
// writing <outDir>/<name>/result.json (rewritten after every finished
// method run, marked partial until the experiment ends, so an interruption
// keeps what finished) and report.html, and printing progress to stdout.
func Reproduce(ctx context.Context, exps []*Experiment, size Size, runs int, outDir string, stdout io.Writer) error {
	if _, err := ParseSize(string(size)); err != nil {
		return err
	}
	if runs < 1 {
		return fmt.Errorf("paper: %d runs: need at least one", runs)
	}
	for _, e := range exps {
		run := e.runTable
		if e.run != nil {
			run = e.run
		}
		if err := run(ctx, size, runs, outDir, stdout); err != nil {
			return fmt.Errorf("%s: %w", e.Name, err)
		}
	}
	return nil
}

// Sets are the data of a table experiment: training, validation and (when
// the training set is a subsample) held-out sets, and how they were made.
type Sets struct {
	Train, Validation *data.Set
	// Holdout is data.Split.Holdout: training records of the source left
	// out of a subsampled training set (nil when there are none).
	Holdout *data.Set
	Notes   string
}

// Load reads the data of s (data.Paper, labels −1/+1), subsamples its
// training set to s.Train images (seed 1), and returns them with s for
// that data: BCE's β, ρ and γ_a are the paper's divided by n (its BCE loss
// is a sum, ours a mean).
func Load(ctx context.Context, s Settings) (*Sets, Settings, error) {
	sp, err := data.Paper(ctx, s.Dataset, data.DefaultSource(), data.PlusMinus)
	if err != nil {
		return nil, s, err
	}
	tr := sp.Train
	if s.Train > 0 && s.Train < len(tr.Y) {
		if tr, err = tr.Subsample(s.Train, 1); err != nil {
			return nil, s, err
		}
	}
	if n, _ := tr.Dims(); s.Loss == cvx.BCE {
		s.Beta, s.Rho, s.Gamma = s.Beta/float64(n), s.Rho/float64(n), s.Gamma/float64(n)
	}
	return &Sets{Train: tr, Validation: sp.Test, Holdout: sp.Holdout, Notes: sp.Notes}, s, nil
}

// runTable runs a table experiment and writes its result.json (after every
// method run, marked partial until the end) and report.html; the cvx runs
// keep their state in a temporary directory beside them, removed at the
// end.
func (e *Experiment) runTable(ctx context.Context, size Size, runs int, outDir string, stdout io.Writer) error {
	start := time.Now()
	dir := filepath.Join(outDir, e.Name)
	state, done, err := openOutDir(dir)
	if err != nil {
		return err
	}
	defer done()

	fmt.Fprintf(stdout, "== %s (size %s): %s\n", e.Name, size, e.Title)
	t, err := StartTable(ctx, e, size, runs, state, filepath.Join(dir, "result.json"))
	if err != nil {
		return err
	}
	n, d := t.Sets.Train.Dims()
	held := ""
	if t.Sets.Holdout != nil {
		held = fmt.Sprintf(", %d held-out training images", len(t.Sets.Holdout.Y))
	}
	fmt.Fprintf(stdout, "   data %s: %d training images, d = %d, %d validation images%s (loaded in %.1f s)\n", t.Settings.Dataset, n, d, len(t.Sets.Validation.Y), held, time.Since(start).Seconds())
	if err := t.Train(ctx, stdout); err != nil {
		return err
	}
	res := t.Result()
	res.WallSeconds = time.Since(start).Seconds()
	res.PrintTables(stdout)
	page, err := res.ReportHTML()
	if err != nil {
		return err
	}
	return writeReport(dir, res, page, res.WallSeconds, stdout)
}

// thisHost describes the machine.
func thisHost() Host {
	return Host{GOOS: runtime.GOOS, GOARCH: runtime.GOARCH, CPUs: runtime.NumCPU(), GoVersion: runtime.Version()}
}

// heldOut is the size of the held-out set (0: none).
func heldOut(sets *Sets) int {
	if sets.Holdout == nil {
		return 0
	}
	return len(sets.Holdout.Y)
}

// openOutDir prepares an experiment's output directory dir: it creates it,
// removes the report of an earlier run (which would not match the partial
// result.json an interruption leaves; the new one comes at the end) and
// makes a temporary directory in it for the cvx runs' state, which done
// removes.
func openOutDir(dir string) (state cvx.RunDir, done func(), err error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", nil, err
	}
	if err := os.Remove(filepath.Join(dir, "report.html")); err != nil && !os.IsNotExist(err) {
		return "", nil, err
	}
	tmp, err := os.MkdirTemp(dir, "state-")
	if err != nil {
		return "", nil, err
	}
	return cvx.RunDir(tmp), func() { os.RemoveAll(tmp) }, nil
}

// writeJSON writes v, indented, to path.
func writeJSON(path string, v any) error {
	raw, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	// An interruption never leaves a truncated result.json.
	return atomicfile.WriteBytes(path, 0o644, append(raw, '\n'))
}

// writeReport writes res as dir/result.json and page as dir/report.html.
func writeReport(dir string, res any, page string, seconds float64, stdout io.Writer) error {
	if err := writeJSON(filepath.Join(dir, "result.json"), res); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "report.html"), []byte(page), 0o644); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "   wrote %s and %s (%.1f s)\n", filepath.Join(dir, "result.json"), filepath.Join(dir, "report.html"), seconds)
	return nil
}

// Method is one row of a table experiment.
type Method struct {
	Name string
	// Iters is the number of iterations (epochs for back-propagation).
	Iters int
	// Build returns the problem on the training set and the method for a
	// seed.
	Build func(tr *data.Set, seed int) (*cvx.Problem, cvx.Method)
	// Objective is the row's objective at the end of its run (Table 5: the
	// adversarial objective of GD-FGSM and GD-PGD, the convex program's of
	// the convex methods).
	Objective func(run *cvx.Run) float64
	// Optimum asks for the row's convex program solved to a certified
	// optimum as well (Trial.Optimum; cvx.Optimum to a relative gap of
	// 1e-6), after the run.
	Optimum bool
	// Backprop marks the back-propagation baselines.
	Backprop bool
	// ValidateEvery > 1 measures the validation accuracy only every so
	// many iterations (and at the end): SCP networks of tens of thousands
	// of neurons cost more to evaluate than an iteration.
	ValidateEvery int
}

// lastPoint returns a field of the last point of a run's history (NaN for
// an empty history).
func lastPoint(f func(cvx.Point) float64) func(*cvx.Run) float64 {
	return func(run *cvx.Run) float64 {
		h := run.History()
		if len(h) == 0 {
			return math.NaN()
		}
		return f(h[len(h)-1])
	}
}

// Problem is the convex training problem of s on the training set: its
// loss, β and a bias, without patterns or neurons (each method adds its
// own).
func (s Settings) Problem(tr *data.Set) *cvx.Problem {
	p := cvx.Classify(tr.X, tr.Y).Beta(s.Beta).Bias()
	switch s.Loss {
	case cvx.BCE:
		p = p.BCE()
	case cvx.Hinge:
		p = p.Hinge()
	}
	return p
}

// Methods are the rows of the experiment: SCP alone (Neurons > 0); Table
// 5's GD-std, GD-FGSM, GD-PGD and the two convex trainings (Adversarial);
// otherwise back-propagation and ADMM (with the extra rows of MorePs).
func (s Settings) Methods() []Method {
	nonconvex := lastPoint(func(p cvx.Point) float64 { return p.Nonconvex })
	lastObjective := lastPoint(func(p cvx.Point) float64 { return p.Objective })
	if s.Neurons > 0 {
		name := fmt.Sprintf("SCP (FISTA), N = %d", s.Neurons)
		return []Method{{Name: name, Iters: s.FISTAIter, ValidateEvery: 25, Objective: lastObjective,
			Build: func(tr *data.Set, seed int) (*cvx.Problem, cvx.Method) {
				return s.Problem(tr).SampleNeurons(s.Neurons, uint64(seed)), cvx.FISTA{Tol: 1e-300}
			}}}
	}
	if !s.Adversarial() {
		admmName := "ADMM"
		if s.Inner == cvx.RBCD {
			admmName = "ADMM-RBCD"
		}
		if strings.HasSuffix(s.Dataset, "-ds") {
			admmName += " (DS)"
		}
		bpName := "Back-prop"
		if strings.HasSuffix(s.Dataset, "-ds") {
			bpName += " (DS)"
		}
		admm := func(name string, ps int) Method {
			return Method{Name: name, Iters: s.ADMMIter, Objective: nonconvex,
				Build: func(tr *data.Set, seed int) (*cvx.Problem, cvx.Method) {
					// Tol 1e-300: all of the paper's iterations, never a stop on the residuals.
					m := cvx.ADMM{Rho: s.Rho, Gamma: s.Gamma, Tol: 1e-300, Inner: s.Inner, Route: s.Route}
					if s.Inner == cvx.RBCD {
						// Blocks = P_s (all patterns per step) carries over
						// to the rows with more patterns.
						m.Seed, m.Blocks, m.InnerMax = uint64(seed), min(s.Blocks, ps), s.InnerMax
						if s.Blocks == s.Ps {
							m.Blocks = ps
						}
					}
					return s.Problem(tr).SamplePatterns(ps, uint64(seed)), m
				}}
		}
		specs := []Method{
			{Name: bpName, Iters: s.BPEpochs, Backprop: true, Objective: lastObjective,
				Build: func(tr *data.Set, seed int) (*cvx.Problem, cvx.Method) {
					return s.Problem(tr), cvx.Backprop{Width: 2 * s.Ps, LearningRate: s.BPRate, BatchSize: s.BPBatch, Seed: uint64(seed)}
				}},
			admm(admmName, s.Ps),
		}
		for _, ps := range s.MorePs {
			specs = append(specs, admm(fmt.Sprintf("%s, P_s = %d", admmName, ps), ps))
		}
		return specs
	}
	robustObj := lastPoint(func(p cvx.Point) float64 { return p.RobustObjective })
	objective := func(run *cvx.Run) float64 { return run.Objective() }
	var specs []Method
	for _, adv := range []cvx.Adversary{cvx.NoAdversary, cvx.FGSM, cvx.PGD} {
		name := "GD-std"
		obj := objective
		if adv != cvx.NoAdversary {
			name, obj = "GD-"+strings.ToUpper(string(adv)), robustObj
		}
		specs = append(specs, Method{Name: name, Iters: s.BPEpochs, Backprop: true, Objective: obj,
			Build: func(tr *data.Set, seed int) (*cvx.Problem, cvx.Method) {
				m := cvx.Backprop{Width: 2 * s.Ps, LearningRate: s.BPRate, Seed: uint64(seed)}
				if adv != cvx.NoAdversary {
					m.Adversary, m.Eps = adv, s.Eps
				}
				return s.Problem(tr), m
			}})
	}
	specs = append(specs,
		Method{Name: "practical convex training (alg. train)", Iters: s.ADMMIter, Objective: objective, Optimum: true,
			Build: func(tr *data.Set, seed int) (*cvx.Problem, cvx.Method) {
				return s.Problem(tr).SamplePatterns(s.Ps, uint64(seed)), cvx.ADMM{}
			}},
		Method{Name: "convex adversarial training (alg. adv_train)", Iters: s.RobustADMM, Objective: objective, Optimum: true,
			Build: func(tr *data.Set, seed int) (*cvx.Problem, cvx.Method) {
				adv := cvx.AdvTrain{Directions: 10 * s.Ps, PerDirection: s.RobustS, Patterns: s.Ps, Seed: uint64(seed)}
				return s.Problem(tr).Robust(s.Eps, cvx.LInf).RobustPatterns(adv), cvx.ADMM{}
			}})
	return specs
}

// Evaluate returns the accuracy of net on set and, for an adversarial
// experiment, its accuracy under the FGSM and PGD attacks of radius s.Eps
// (on the hinge loss, the strongest iterate per point).
func Evaluate(net *cvx.Network, set *data.Set, s Settings) (*Accuracies, error) {
	acc, err := cvx.Accuracy(net, set.X, set.Y)
	if err != nil {
		return nil, err
	}
	r := &Accuracies{Accuracy: acc}
	if s.Adversarial() {
		for _, a := range []struct {
			method cvx.Adversary
			dst    **float64
		}{{cvx.FGSM, &r.FGSM}, {cvx.PGD, &r.PGD}} {
			acc, err := cvx.AttackAccuracy(net, set.X, set.Y, cvx.Hinge, cvx.Attack{Method: a.method, Eps: s.Eps})
			if err != nil {
				return nil, err
			}
			*a.dst = &acc
		}
	}
	return r, nil
}

// RunMethod trains method m of the experiment s with one seed (a fresh run
// kept in dir), validating on sets.Validation as it goes, and evaluates the
// trained network on the validation set and, when there is one, the
// held-out set; it prints progress to stdout.
func RunMethod(ctx context.Context, dir cvx.RunDir, m Method, s Settings, sets *Sets, seed int, stdout io.Writer) (Trial, error) {
	tr, va, ho := sets.Train, sets.Validation, sets.Holdout
	t := Trial{Seed: seed}
	if s.Neurons > 0 {
		// The SCP feature matrix is most of the live heap (3.7 GB at
		// N = 39365); with Go's default GOGC = 100 the garbage of the
		// periodic validations may grow to as much again before a
		// collection. GOGC = 20 bounds the heap at 1.2× the live data.
		defer debug.SetGCPercent(debug.SetGCPercent(20))
	}
	heap := startHeapSampler()
	prob, meth := m.Build(tr, seed)
	unit := "ADMM iteration"
	switch {
	case m.Backprop:
		unit = "epoch"
	case s.Neurons > 0:
		unit = "FISTA iteration"
	}
	fmt.Fprintf(stdout, "-- %s (run %d, seed %d): up to %d %ss\n", m.Name, seed, seed, m.Iters, unit)
	t0 := time.Now()
	run := dir.Start(RunName(m, seed), prob, meth)
	if err := run.Err(); err != nil {
		heap.finish()
		return t, err
	}
	t.SetupSeconds = time.Since(t0).Seconds()
	fmt.Fprintf(stdout, "   set-up %.2f s\n", t.SetupSeconds)
	run.Quiet = true
	run.ValidateEvery = m.ValidateEvery
	var valTime time.Duration
	every := max(1, m.Iters/10)
	if !m.Backprop && m.Iters <= 50 {
		every = 1
	}
	if m.ValidateEvery > 1 {
		every = max(1, every/m.ValidateEvery)
	}
	k := 0
	lastPrint := time.Now()
	run.Validate = func(net *cvx.Network) (float64, bool) {
		v0 := time.Now()
		acc, err := cvx.Accuracy(net, va.X, va.Y)
		if err != nil {
			acc = math.NaN()
		}
		k++
		h := run.History()
		if it := len(h) + 1; k%every == 0 || it == m.Iters || time.Since(lastPrint) > 10*time.Second {
			obj := math.NaN()
			if len(h) > 0 {
				obj = h[len(h)-1].Objective
			}
			// The history does not hold this iteration yet: its
			// objective is printed one iteration late; the solver time is
			// the wall time so far, minus validation.
			fmt.Fprintf(stdout, "   %s %d/%d: validation accuracy %.2f%%, previous objective %.6g, %.1f s\n",
				unit, len(h)+1, m.Iters, 100*acc, obj, time.Since(t0).Seconds()-(valTime+time.Since(v0)).Seconds())
			lastPrint = time.Now()
		}
		valTime += time.Since(v0)
		return acc, false
	}
	err := run.IterateContext(ctx, m.Iters)
	t.WallSeconds = time.Since(t0).Seconds() - valTime.Seconds()
	t.PeakHeapBytes = heap.finish()
	t.PeakRSSBytes = maxRSS()
	if err != nil {
		return t, err
	}
	h := run.History()
	if len(h) == 0 {
		return t, errors.New("no iterations")
	}
	last := h[len(h)-1]
	t.Iterations, t.IterationSeconds = len(h), last.Seconds
	for it, p := range h {
		if m.ValidateEvery > 1 && !p.Validated {
			continue
		}
		if p.Validation > t.PeakValidation {
			t.PeakValidation, t.PeakIteration = p.Validation, it+1
		}
		obj := p.Objective
		if !m.Backprop && s.Loss != cvx.Hinge {
			obj = p.Nonconvex
		}
		t.Curve = append(t.Curve, CurvePoint{Seconds: t.SetupSeconds + p.Seconds, Objective: obj, Validation: p.Validation})
	}
	net, err := run.Network()
	if err != nil {
		return t, err
	}
	va0, err := Evaluate(net, va, s)
	if err != nil {
		return t, err
	}
	t.ValidationAccuracy, t.FGSMAccuracy, t.PGDAccuracy = va0.Accuracy, va0.FGSM, va0.PGD
	if ho != nil {
		if t.Holdout, err = Evaluate(net, ho, s); err != nil {
			return t, err
		}
	}
	t.Objective = m.Objective(run)
	if g := run.Gap(); !math.IsNaN(g) {
		t.CertifiedGap = &g
	}
	yhat, err := net.Predict(tr.X)
	if err != nil {
		return t, err
	}
	t.TrainingLoss = TrainingLoss(s.Loss, yhat, tr.Y)
	line := fmt.Sprintf("   %s done: %d %ss, validation accuracy %s", m.Name, t.Iterations, unit, va0)
	if t.Holdout != nil {
		line += fmt.Sprintf(", held out %s", t.Holdout)
	}
	if t.CertifiedGap != nil {
		line += fmt.Sprintf(", certified gap %.3g", *t.CertifiedGap)
	}
	if m.Optimum {
		sol, err := cvx.OptimumContext(ctx, prob, 1e-6, 0)
		if err != nil {
			return t, fmt.Errorf("the certified optimum of the row's program: %w", err)
		}
		t.Optimum = &Optimum{Objective: sol.Objective, Lower: sol.Lower, Gap: sol.Gap, Seconds: sol.Seconds, Iterations: sol.Iterations}
		line += fmt.Sprintf(", the program's certified optimum %.6g (gap %.2g, %.1f s)", sol.Objective, sol.Gap, sol.Seconds)
	}
	line += fmt.Sprintf(", training loss %.6g, objective %.6g, %.2f s (set-up %.2f s), max RSS %.0f MB, Go heap %.0f MB\n",
		t.TrainingLoss, t.Objective, t.WallSeconds, t.SetupSeconds, float64(t.PeakRSSBytes)/1e6, float64(t.PeakHeapBytes)/1e6)
	fmt.Fprint(stdout, line)
	return t, nil
}

// TrainingLoss is the loss of predictions yhat on labels y (±1) in the paper's
// units: squared ½Σ(ŷ−y)², BCE Σ(−2ŷt + log(e^{2ŷ}+1)) with t = (y+1)/2,
// hinge the mean of max(0, 1 − yŷ).
func TrainingLoss(loss cvx.Loss, yhat, y []float64) float64 {
	var s float64
	for k, f := range yhat {
		switch loss {
		case cvx.BCE:
			t := (y[k] + 1) / 2
			z := 2 * f
			sp := math.Max(z, 0) + math.Log1p(math.Exp(-math.Abs(z))) // log(e^z + 1)
			s += -z*t + sp
		case cvx.Hinge:
			s += math.Max(0, 1-y[k]*f) / float64(len(y))
		default:
			s += 0.5 * (f - y[k]) * (f - y[k])
		}
	}
	return s
}
