package paper

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/convexnn/convexnn/cvx"
	"github.com/convexnn/convexnn/data"
)

// DebianPython is Debian's interpreter, the one with python3-cvxopt and
// python3-torch (the python3 on PATH may be another).
const DebianPython = "/usr/bin/python3"

// TorchThreads is the default number of intra-op threads PyTorch is given.
const TorchThreads = 2

// TorchDefaultLRs is the learning-rate grid of the PyTorch peer.
const TorchDefaultLRs = "1e-4,3e-4,1e-3,3e-3,1e-2"

// TorchOptions are the settings of the PyTorch peer.
type TorchOptions struct {
	Python  string    `json:"python"`
	Script  string    `json:"script"`
	LRs     []float64 `json:"learning_rates"`
	Epochs  int       `json:"epochs_cap"` // 0: the experiment's back-prop epochs
	Seconds float64   `json:"seconds_cap"`
	DType   string    `json:"dtype"`
	Threads int       `json:"threads"`
	Evals   int       `json:"evaluations_per_epoch"`
	// OMPWaitPolicy is OMP_WAIT_POLICY of the PyTorch process: PASSIVE
	// unless the environment sets it (see BenchTorch).
	OMPWaitPolicy string `json:"omp_wait_policy"`
}

// torchRun is one learning rate of the PyTorch peer, as
// bench/torch_backprop.py writes it. Times are seconds of training (model
// creation and the steps; evaluations excluded).
type torchRun struct {
	LR                float64  `json:"lr"`
	Reached           bool     `json:"reached"`
	SecondsToTarget   *float64 `json:"seconds_to_target"`
	EpochsToTarget    *float64 `json:"epochs_to_target"`
	BestCorrect       int      `json:"best_correct"`
	BestAccuracy      *float64 `json:"best_accuracy"`
	SecondsToBest     *float64 `json:"seconds_to_best"`
	EpochsToBest      *float64 `json:"epochs_to_best"`
	FinalAccuracy     *float64 `json:"final_accuracy"`
	FinalTrainingLoss *float64 `json:"final_training_loss"`
	FinalObjective    *float64 `json:"final_objective"`
	// Stopped says why the run ended: "epochs" (the epoch budget),
	// "seconds" (the time budget) or "diverged" (a non-finite loss; then
	// Diverged is true).
	Stopped      string       `json:"stopped"`
	Diverged     bool         `json:"diverged"`
	Epochs       int          `json:"epochs"`
	Steps        int          `json:"steps"`
	TrainSeconds float64      `json:"train_seconds"`
	Curve        [][3]float64 `json:"curve"` // (seconds, validation accuracy, epochs)
}

// torchOutput is bench/torch_backprop.py's result.json.
type torchOutput struct {
	TorchVersion   string     `json:"torch_version"`
	Threads        int        `json:"threads"`
	DType          string     `json:"dtype"`
	Runs           []torchRun `json:"runs"`
	ProcessSeconds float64    `json:"process_seconds"`
}

// admmTarget is our ADMM's side of one experiment: its final validation
// accuracy A and the time it first reached A.
type admmTarget struct {
	Name               string       `json:"name"`
	Accuracy           float64      `json:"validation_accuracy"`
	Correct            int          `json:"validation_correct"`
	SecondsToTarget    float64      `json:"seconds_to_target"`
	IterationsToTarget int          `json:"iterations_to_target"`
	WallSeconds        float64      `json:"wall_seconds"`
	SetupSeconds       float64      `json:"setup_seconds"`
	Iterations         int          `json:"iterations"`
	TrainingLoss       float64      `json:"training_loss"`
	Objective          float64      `json:"objective"`
	Curve              []CurvePoint `json:"curve"`
}

// torchSide is the PyTorch peer's side of one experiment.
type torchSide struct {
	Reached bool `json:"reached"`
	// BestLR is the learning rate with the shortest time to A, or, when
	// none reached A, the one with the highest validation accuracy.
	BestLR          float64  `json:"best_lr"`
	SecondsToTarget *float64 `json:"seconds_to_target"`
	BestAccuracy    float64  `json:"best_accuracy"`
	SecondsToBest   float64  `json:"seconds_to_best"`
	FinalAccuracy   float64  `json:"final_accuracy"`
	// TuningSeconds is the training time of the whole grid, and
	// ProcessSeconds the wall time of the Python process (interpreter
	// start, import torch and data loading included).
	TuningSeconds  float64 `json:"tuning_seconds"`
	ProcessSeconds float64 `json:"process_seconds"`
	// Threads is torch.get_num_threads() in the script.
	Threads int        `json:"threads"`
	Runs    []torchRun `json:"runs"`
}

// torchExperiment is one experiment of the benchmark.
type torchExperiment struct {
	Experiment  string     `json:"experiment"`
	Title       string     `json:"title"`
	Settings    Settings   `json:"settings"`
	TrainImages int        `json:"train_images_used"`
	ValImages   int        `json:"validation_images"`
	Dim         int        `json:"d"`
	Bias        bool       `json:"bias"`
	Epochs      int        `json:"torch_epochs_cap"`
	DataNotes   string     `json:"data_notes"`
	ADMM        admmTarget `json:"admm"`
	Torch       torchSide  `json:"torch"`
	// Ratio is the PyTorch time to A over the ADMM time to A (> 1: the
	// ADMM is faster); absent when no learning rate reached A.
	Ratio *float64 `json:"ratio,omitempty"`
}

// torchBenchResult is <out>/torch/result.json.
type torchBenchResult struct {
	Benchmark    string            `json:"benchmark"`
	Size         string            `json:"size"`
	Started      time.Time         `json:"started"`
	WallSeconds  float64           `json:"wall_seconds"`
	Host         Host              `json:"host"`
	TorchVersion string            `json:"torch_version"`
	Options      TorchOptions      `json:"options"`
	Experiments  []torchExperiment `json:"experiments"`
	Definitions  map[string]string `json:"definitions"`
}

var torchDefinitions = map[string]string{
	"A":                       "the final validation accuracy of our ADMM, run as convexnn reproduce runs it (seed 1)",
	"admm.seconds_to_target":  "wall time from the start of cvx.Start (set-up: pattern sampling, factorizations) to the end of the first ADMM iteration whose validation accuracy is ≥ A; the validation evaluations excluded (reproduce's wall_seconds clock)",
	"torch":                   "PyTorch back-propagation (bench/torch_backprop.py): the network f(x) = Σ_j (xᵀu_j + b_j)_+ α_j of width 2P_s on ½Σ(f(x_k) − y_k)² + (β/2)(‖U‖² + ‖b‖² + ‖α‖²), the hidden biases b as cvx's Bias column; Adam, minibatches of 100 with the unbiased (n/|B|) scaling of cvx.Backprop, He initialization, seed 1 for every learning rate",
	"torch.seconds_to_target": "training time (model creation and steps; evaluations excluded) to the first evaluation with validation accuracy ≥ A; the accuracy is evaluated evaluations_per_epoch times per epoch",
	"torch.best_lr":           "the learning rate of the grid with the shortest time to A; when none reached A, the one with the highest validation accuracy (then seconds_to_best is its time to that accuracy)",
	"torch.tuning_seconds":    "the training time of every learning rate of the grid (each trained to the epoch or time cap): the cost of the tuning, not counted in seconds_to_target",
	"omp_wait_policy":         "OMP_WAIT_POLICY of the PyTorch process, PASSIVE unless set in the environment: with the default spinning OpenMP waits, 2 threads on a machine shared with other processes trained 10–20 times slower than 1 thread",
	"ratio":                   "PyTorch time to A / ADMM time to A: > 1 means the ADMM reached A sooner",
}

// BenchTorch is `convexnn bench torch`: for each squared-loss experiment of
// Tables 2 and 3 (exps, from TorchExperiments) it runs our ADMM as
// Reproduce does, takes its final validation accuracy A and the time it
// first reached A, then trains the same network by PyTorch
// back-propagation (Adam, the grid of learning rates opts.LRs) on the same
// data and reports the best rate's time to A and the ratio of the two
// times; it writes <outDir>/torch/result.json.
func BenchTorch(ctx context.Context, exps []*Experiment, size Size, opts TorchOptions, outDir string, stdout io.Writer) error {
	var err error
	if opts.Script, err = benchScript("torch", opts.Script, "torch_backprop.py"); err != nil {
		return err
	}
	if opts.Python == "" {
		opts.Python = DebianPython
	}
	if opts.Evals == 0 {
		opts.Evals = 10
	}
	// PyTorch's OpenMP threads spin while they wait by default; on a
	// machine shared with other processes that made the training 10–20
	// times slower than one thread. Passive waiting (unless the caller
	// chose a policy) gives the peer its best time.
	if opts.OMPWaitPolicy == "" {
		wait, ok := os.LookupEnv("OMP_WAIT_POLICY")
		if !ok {
			wait = "PASSIVE"
		}
		opts.OMPWaitPolicy = wait
	}
	version, err := torchVersion(ctx, opts.Python)
	if err != nil {
		return err
	}
	start := time.Now()
	dir := filepath.Join(outDir, "torch")
	state, done, err := openOutDir(dir)
	if err != nil {
		return err
	}
	defer done()

	res := torchBenchResult{Benchmark: "torch", Size: string(size), Started: start.UTC(), TorchVersion: version, Options: opts,
		Host: thisHost(), Definitions: torchDefinitions}
	fmt.Fprintf(stdout, "== bench torch (size %s): PyTorch %s (%s, %s, %d threads, OMP_WAIT_POLICY=%s) against our ADMM; learning rates %s\n",
		size, version, opts.Python, opts.DType, opts.Threads, opts.OMPWaitPolicy, FormatLRs(opts.LRs))
	for _, e := range exps {
		r, err := benchTorchExperiment(ctx, state, e, size, opts, stdout)
		if err != nil {
			return fmt.Errorf("bench torch: %s: %w", e.Name, err)
		}
		res.Experiments = append(res.Experiments, r)
		printTorchExperiment(stdout, &r)
	}
	res.WallSeconds = time.Since(start).Seconds()
	printTorchSummary(stdout, &res)
	path := filepath.Join(dir, "result.json")
	if err := writeJSON(path, &res); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "   wrote %s (%.1f s)\n", path, res.WallSeconds)
	return nil
}

// torchExperimentNames are the squared-loss experiments of Tables 2 and 3,
// the ones the benchmark runs.
var torchExperimentNames = []string{"table2-mnist", "table3-fmnist", "table3-fmnist-ds", "table3-cifar-ds"}

// TorchExperiments returns the named experiments, or all of
// torchExperimentNames when none is named.
func TorchExperiments(names []string) ([]*Experiment, error) {
	var known []*Experiment
	for _, n := range torchExperimentNames {
		e, err := Lookup(n)
		if err != nil || e.Setup == nil {
			return nil, fmt.Errorf("bench torch: no squared-loss table experiment %s in reproduce's experiments", n)
		}
		if s := e.Setup(SizePaper); s.Loss != cvx.Squared || s.Adversarial() {
			return nil, fmt.Errorf("bench torch: %s is not a squared-loss table experiment", n)
		}
		known = append(known, e)
	}
	if len(names) == 0 {
		return known, nil
	}
	var todo []*Experiment
	for _, n := range names {
		i := slices.IndexFunc(known, func(e *Experiment) bool { return e.Name == n })
		if i < 0 {
			return nil, fmt.Errorf("bench torch: experiment %q: the benchmark runs the squared-loss ones: %s", n, strings.Join(torchExperimentNames, ", "))
		}
		todo = append(todo, known[i])
	}
	return todo, nil
}

// ParseLRs parses a comma-separated list of positive, finite learning rates.
func ParseLRs(s string) ([]float64, error) {
	var lrs []float64
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		v, err := strconv.ParseFloat(f, 64)
		if err != nil {
			return nil, fmt.Errorf("%q is not a number", f)
		}
		if !(v > 0) || math.IsInf(v, 0) {
			return nil, fmt.Errorf("%v: learning rates must be positive and finite", v)
		}
		lrs = append(lrs, v)
	}
	return lrs, nil
}

// FormatLRs writes learning rates as ParseLRs reads them.
func FormatLRs(lrs []float64) string {
	s := make([]string, len(lrs))
	for k, v := range lrs {
		s[k] = strconv.FormatFloat(v, 'g', -1, 64)
	}
	return strings.Join(s, ", ")
}

// torchVersion checks that python imports torch and numpy and returns
// torch's version.
func torchVersion(ctx context.Context, python string) (string, error) {
	out, err := exec.CommandContext(ctx, python, "-c", "import numpy, torch; print(torch.__version__)").CombinedOutput()
	if err != nil {
		if msg := bytes.TrimSpace(out); len(msg) > 0 {
			err = fmt.Errorf("%v: %s", err, lastLines(msg, 5))
		}
		return "", fmt.Errorf("bench torch: %s cannot import torch and numpy (apt-get install python3-torch python3-numpy): %w", python, err)
	}
	return strings.TrimSpace(string(out)), nil
}

// lastLines returns the last k lines of b.
func lastLines(b []byte, k int) string {
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > k {
		lines = lines[len(lines)-k:]
	}
	return strings.Join(lines, "\n")
}

// benchTorchExperiment runs one experiment: our ADMM, then the PyTorch grid
// on the same data.
func benchTorchExperiment(ctx context.Context, dir cvx.RunDir, e *Experiment, size Size, opts TorchOptions, stdout io.Writer) (torchExperiment, error) {
	t0 := time.Now()
	r := torchExperiment{Experiment: e.Name, Title: e.Title}
	fmt.Fprintf(stdout, "== %s (size %s): %s\n", e.Name, size, e.Title)
	sets, s, err := Load(ctx, e.Setup(size))
	if err != nil {
		return r, err
	}
	r.Settings = s
	tr, va := sets.Train, sets.Validation
	n, d := tr.Dims()
	r.TrainImages, r.ValImages, r.Dim, r.DataNotes = n, len(va.Y), d, sets.Notes
	fmt.Fprintf(stdout, "   data %s: %d training images, d = %d, %d validation images (loaded in %.1f s)\n", s.Dataset, n, d, len(va.Y), time.Since(t0).Seconds())

	// Our ADMM, exactly as reproduce runs it (seed 1).
	var spec *Method
	for _, m := range s.Methods() {
		if !m.Backprop {
			spec = &m
			break
		}
	}
	if spec == nil {
		return r, errors.New("no ADMM method in the experiment")
	}
	// Settings.Problem is cvx.Classify(X, y).Beta(s.Beta).Bias(): the problem
	// appends a column of ones to X, so every hidden neuron has a bias,
	// regularized with its weights. The PyTorch network gets the same.
	if s.Loss != cvx.Squared {
		return r, fmt.Errorf("the benchmark needs the squared loss, the experiment has %s", s.Loss)
	}
	r.Bias = true
	t, err := RunMethod(ctx, dir, *spec, s, &Sets{Train: tr, Validation: va}, 1, stdout)
	if err != nil {
		return r, fmt.Errorf("%s: %w", spec.Name, err)
	}
	r.ADMM = admmTargetOf(spec.Name, t, len(va.Y))
	fmt.Fprintf(stdout, "   %s: A = %.2f%% (%d of %d), first reached at iteration %d, %.2f s (set-up %.2f s)\n",
		spec.Name, 100*r.ADMM.Accuracy, r.ADMM.Correct, len(va.Y), r.ADMM.IterationsToTarget, r.ADMM.SecondsToTarget, r.ADMM.SetupSeconds)

	// The PyTorch grid on the same data.
	r.Epochs = opts.Epochs
	if r.Epochs == 0 {
		r.Epochs = s.BPEpochs
	}
	tmp, err := os.MkdirTemp("", "convexnn-torch-")
	if err != nil {
		return r, err
	}
	defer os.RemoveAll(tmp)
	header := map[string]any{
		"n": n, "d": d, "n_val": len(va.Y), "bias": r.Bias, "width": 2 * s.Ps, "beta": s.Beta, "batch": bpBatch,
		"lrs": opts.LRs, "epochs": r.Epochs, "seconds": opts.Seconds, "evals_per_epoch": opts.Evals,
		"target_correct": r.ADMM.Correct, "seed": 1, "threads": opts.Threads, "dtype": opts.DType,
		"x_train": "x_train.f64", "y_train": "y_train.f64", "x_val": "x_val.f64", "y_val": "y_val.f64",
	}
	if err := exportSet(tmp, tr, "x_train.f64", "y_train.f64"); err != nil {
		return r, err
	}
	if err := exportSet(tmp, va, "x_val.f64", "y_val.f64"); err != nil {
		return r, err
	}
	raw, err := json.MarshalIndent(header, "", "  ")
	if err != nil {
		return r, err
	}
	if err := os.WriteFile(filepath.Join(tmp, "header.json"), raw, 0o644); err != nil {
		return r, err
	}
	fmt.Fprintf(stdout, "-- PyTorch back-prop, width %d, Adam, batch %d, learning rates %s, up to %d epochs or %g s each\n",
		2*s.Ps, bpBatch, FormatLRs(opts.LRs), r.Epochs, opts.Seconds)
	// One writer for both streams: exec then writes from one goroutine.
	var stderr bytes.Buffer
	both := io.MultiWriter(stdout, &stderr)
	cmd := exec.CommandContext(ctx, opts.Python, opts.Script, tmp)
	cmd.Stdout, cmd.Stderr = both, both
	cmd.Env = append(os.Environ(), "OMP_WAIT_POLICY="+opts.OMPWaitPolicy)
	p0 := time.Now()
	if err := cmd.Run(); err != nil {
		if ctx.Err() != nil {
			return r, ctx.Err()
		}
		return r, fmt.Errorf("%s %s: %v\n%s", opts.Python, opts.Script, err, lastLines(stderr.Bytes(), 20))
	}
	process := time.Since(p0).Seconds()
	raw, err = os.ReadFile(filepath.Join(tmp, "result.json"))
	if err != nil {
		return r, err
	}
	var to torchOutput
	if err := json.Unmarshal(raw, &to); err != nil {
		return r, fmt.Errorf("the PyTorch script's result.json: %w", err)
	}
	if len(to.Runs) != len(opts.LRs) {
		return r, fmt.Errorf("the PyTorch script reports %d learning rates, want %d", len(to.Runs), len(opts.LRs))
	}
	r.Torch = torchSideOf(to.Runs)
	r.Torch.ProcessSeconds, r.Torch.Threads = process, to.Threads
	if to.Threads != opts.Threads {
		fmt.Fprintf(stdout, "   warning: PyTorch ran %d threads, not the %d asked for\n", to.Threads, opts.Threads)
	}
	if r.Torch.Reached {
		ratio := *r.Torch.SecondsToTarget / r.ADMM.SecondsToTarget
		r.Ratio = &ratio
	}
	return r, nil
}

// admmTargetOf reads A, the final validation accuracy of t, and the time to
// A off t's curve: the first iteration whose validation accuracy is at
// least A (compared as counts of correct images, so exactly).
func admmTargetOf(name string, t Trial, nval int) admmTarget {
	a := admmTarget{Name: name, Accuracy: t.ValidationAccuracy, Correct: int(math.Round(t.ValidationAccuracy * float64(nval))),
		WallSeconds: t.WallSeconds, SetupSeconds: t.SetupSeconds, Iterations: t.Iterations, TrainingLoss: t.TrainingLoss,
		Objective: t.Objective, Curve: t.Curve}
	a.SecondsToTarget, a.IterationsToTarget = t.WallSeconds, t.Iterations
	for k, p := range t.Curve {
		if int(math.Round(p.Validation*float64(nval))) >= a.Correct {
			a.SecondsToTarget, a.IterationsToTarget = p.Seconds, k+1
			break
		}
	}
	return a
}

// torchSideOf picks the best learning rate: the shortest time to A among
// those that reached it, else the highest validation accuracy (ties: the
// sooner).
func torchSideOf(runs []torchRun) torchSide {
	ts := torchSide{Runs: runs}
	best := -1
	for k, r := range runs {
		ts.TuningSeconds += r.TrainSeconds
		switch {
		case best < 0:
			best = k
		case r.Reached != runs[best].Reached:
			if r.Reached {
				best = k
			}
		case r.Reached:
			if *r.SecondsToTarget < *runs[best].SecondsToTarget {
				best = k
			}
		case r.BestCorrect > runs[best].BestCorrect ||
			r.BestCorrect == runs[best].BestCorrect && deref(r.SecondsToBest) < deref(runs[best].SecondsToBest):
			best = k
		}
	}
	if best < 0 {
		return ts
	}
	b := runs[best]
	ts.Reached, ts.BestLR, ts.SecondsToTarget = b.Reached, b.LR, b.SecondsToTarget
	ts.BestAccuracy, ts.SecondsToBest, ts.FinalAccuracy = deref(b.BestAccuracy), deref(b.SecondsToBest), deref(b.FinalAccuracy)
	return ts
}

// deref returns *p, or NaN for nil.
func deref(p *float64) float64 {
	if p == nil {
		return math.NaN()
	}
	return *p
}

// exportSet writes the rows of s.X (row-major) and s.Y as little-endian
// float64 files in dir.
func exportSet(dir string, s *data.Set, xName, yName string) error {
	n, d := s.X.Dims()
	if err := writeFloat64s(filepath.Join(dir, xName), func(w func(float64) error) error {
		for i := 0; i < n; i++ {
			for _, v := range s.X.RawRowView(i)[:d] {
				if err := w(v); err != nil {
					return err
				}
			}
		}
		return nil
	}); err != nil {
		return err
	}
	return writeFloat64s(filepath.Join(dir, yName), func(w func(float64) error) error {
		for _, v := range s.Y {
			if err := w(v); err != nil {
				return err
			}
		}
		return nil
	})
}

// writeFloat64s writes the values that each yields to path, little-endian.
func writeFloat64s(path string, each func(func(float64) error) error) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	bw := bufio.NewWriterSize(f, 1<<16)
	var b [8]byte
	err = each(func(v float64) error {
		binary.LittleEndian.PutUint64(b[:], math.Float64bits(v))
		_, err := bw.Write(b[:])
		return err
	})
	if err == nil {
		err = bw.Flush()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

func pct(v float64) string {
	if math.IsNaN(v) {
		return "—"
	}
	return fmt.Sprintf("%.2f %%", 100*v)
}

func secs(p *float64) string {
	if p == nil {
		return "—"
	}
	return fmt.Sprintf("%.3g", *p)
}

// printTorchExperiment prints the grid and the comparison of one experiment.
func printTorchExperiment(w io.Writer, r *torchExperiment) {
	head := []string{"lr", "time to A (s)", "epochs to A", "best acc.", "time to best (s)", "final acc.", "objective", "epochs", "train (s)", "stop"}
	var rows [][]string
	for _, t := range r.Torch.Runs {
		obj := "—"
		if t.FinalObjective != nil {
			obj = fmt.Sprintf("%.4g", *t.FinalObjective)
		}
		ep := "—"
		if t.EpochsToTarget != nil {
			ep = fmt.Sprintf("%.2f", *t.EpochsToTarget)
		}
		rows = append(rows, []string{strconv.FormatFloat(t.LR, 'g', -1, 64), secs(t.SecondsToTarget), ep, pct(deref(t.BestAccuracy)),
			secs(t.SecondsToBest), pct(deref(t.FinalAccuracy)), obj, fmt.Sprint(t.Epochs), fmt.Sprintf("%.3g", t.TrainSeconds), t.Stopped})
	}
	PrintText(w, fmt.Sprintf("%s — PyTorch learning-rate grid (A = %.2f %%; ADMM objective %.4g)", r.Experiment, 100*r.ADMM.Accuracy, r.ADMM.Objective), head, rows)
	head, row := torchSummaryRow(r)
	PrintText(w, r.Experiment+" — time to the ADMM's accuracy A", head[1:], [][]string{row[1:]})
	if !r.Torch.Reached {
		fmt.Fprintf(w, "   no learning rate reached A = %.2f %%: the best, lr %g, reached %.2f %% at %.3g s\n",
			100*r.ADMM.Accuracy, r.Torch.BestLR, 100*r.Torch.BestAccuracy, r.Torch.SecondsToBest)
	}
}

// torchSummaryRow is one experiment's row of the comparison.
func torchSummaryRow(r *torchExperiment) ([]string, []string) {
	head := []string{"Experiment", "ADMM acc. A", "ADMM time to A (s)", "PyTorch best lr", "PyTorch time to A (s)", "ratio PyTorch/ADMM",
		"PyTorch best acc.", "PyTorch final acc.", "tuning (s)"}
	ratio := "—"
	if r.Ratio != nil {
		ratio = fmt.Sprintf("%.3g", *r.Ratio)
	}
	toA := secs(r.Torch.SecondsToTarget)
	if !r.Torch.Reached {
		toA = fmt.Sprintf("not reached (best at %.3g)", r.Torch.SecondsToBest)
	}
	return head, []string{r.Experiment, pct(r.ADMM.Accuracy), fmt.Sprintf("%.3g", r.ADMM.SecondsToTarget),
		strconv.FormatFloat(r.Torch.BestLR, 'g', -1, 64), toA, ratio, pct(r.Torch.BestAccuracy), pct(r.Torch.FinalAccuracy),
		fmt.Sprintf("%.3g", r.Torch.TuningSeconds)}
}

// printTorchSummary prints every experiment's comparison in one table.
func printTorchSummary(w io.Writer, res *torchBenchResult) {
	var head []string
	var rows [][]string
	for k := range res.Experiments {
		h, row := torchSummaryRow(&res.Experiments[k])
		head, rows = h, append(rows, row)
	}
	if len(rows) == 0 {
		return
	}
	PrintText(w, fmt.Sprintf("bench torch — PyTorch %s (%s) against our ADMM, %s size (ratio > 1: the ADMM is faster)", res.TorchVersion, res.Options.DType, res.Size), head, rows)
}
