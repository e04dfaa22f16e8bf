package paper

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/convexnn/convexnn/cvx"
	"github.com/convexnn/convexnn/data"
	"github.com/convexnn/convexnn/plots"
	"github.com/convexnn/convexnn/solvers/admm"
	"github.com/convexnn/convexnn/solvers/ipm"
)

// The experiment of the paper's fig. ADMMCom (section "Squared Loss (Closed
// Form u Updates) -- Complexity"): ADMM with the closed-form u-update against
// the interior-point method ("CVX") on MNIST 2 vs 8 downsampled to d = 100,
// in two sweeps, the number of training points n at P_s = 8 and the number of
// sampled patterns P_s at n = 1000.
func init() {
	experiments = append(experiments, &Experiment{
		Name:      "fig-admm-complexity",
		Title:     "Fig. ADMMCom: ADMM (6 iterations) against CVX on MNIST 2 vs 8 (d = 100), squared loss: time and accuracy against n (P_s = 8) and against P_s (n = 1000)",
		PaperHead: []string{"Claim", "The paper"},
		Paper:     complexityClaims,
		run:       runComplexity,
	})
}

// complexityClaims are the paper's qualitative claims about fig. ADMMCom, in
// the order of complexityMeasured.
var complexityClaims = [][]string{
	{"ADMM CPU time against n (P_s = 8)", "grows linearly in n (log-log slope 1)"},
	{"CVX CPU time against n", "grows much faster than ADMM's"},
	{"ADMM CPU time against P_s (n = 1000)", "grows quadratically in P_s (log-log slope 2): per-iteration complexity O(nP_s + d²P_s²)"},
	{"CVX CPU time against P_s", "grows much faster than ADMM's"},
	{"validation accuracy against n", "ADMM above CVX for every n except n = 100"},
	{"validation accuracy against P_s", "ADMM above CVX for every P_s (all CVX runs poor at P_s = 20)"},
}

// complexitySettings are the grids and the solver settings of the sweeps.
type complexitySettings struct {
	Dataset  string  `json:"dataset"`
	Loss     string  `json:"loss"`
	Beta     float64 `json:"beta"`
	Rho      float64 `json:"rho"`
	Gamma    float64 `json:"gamma"`
	ADMMIter int     `json:"admm_iterations"`
	// SweepN is the grid of n, at P_s = PsOfSweepN; SweepPs the grid of
	// P_s, at n = NOfSweepPs.
	SweepN     []int `json:"sweep_n"`
	PsOfSweepN int   `json:"sweep_n_P_s"`
	SweepPs    []int `json:"sweep_P_s"`
	NOfSweepPs int   `json:"sweep_P_s_n"`
	Runs       int   `json:"runs"`
	// IPMTol is the interior-point method's relative accuracy; IPMBudget
	// the wall time after which a solve is stopped and its best iterate
	// used (the point is then marked capped).
	IPMTol    float64 `json:"ipm_tolerance"`
	IPMBudget float64 `json:"ipm_budget_seconds"`
	// FitFloor is the shortest time that enters a slope fit.
	FitFloor float64 `json:"fit_floor_seconds"`
	Notes    string  `json:"notes"`
}

// complexitySetup returns the settings at a size: the paper's grids with
// runs runs when runs > 1 and five (the paper's) otherwise, or a small grid
// that finishes in seconds with runs runs.
func complexitySetup(size Size, runs int) complexitySettings {
	s := complexitySettings{
		Dataset: "mnist-2-8-d100", Loss: "squared", Beta: 1e-3, Rho: 0.1, Gamma: 0.1, ADMMIter: 6,
		SweepN: []int{100, 200, 500, 1000, 2000, 5000, 11809}, PsOfSweepN: 8,
		SweepPs: []int{4, 8, 12, 16, 20, 30, 40, 50}, NOfSweepPs: 1000,
		Runs: runs, IPMTol: 1e-8, IPMBudget: 600, FitFloor: 0.01,
		Notes: "run r (seed r) subsamples the training set with seed r and samples the patterns with seed r, so ADMM and the IPM solve the same program; " +
			"β and ρ = γ_a as reproduce's squared-loss tables (the paper's fig. ADMMCom does not state them); " +
			"the IPM is ipm.Solve (what cvx.Solve calls) under a context with the time budget",
	}
	if size != SizePaper {
		s.SweepN, s.SweepPs, s.NOfSweepPs, s.IPMBudget = []int{100, 200, 400}, []int{4, 8}, 200, 60
		return s
	}
	if runs <= 1 {
		s.Runs = 5
	}
	return s
}

// complexityTrial is one run (seed) at one point of a sweep.
type complexityTrial struct {
	Seed int `json:"seed"`
	// Patterns is the number of distinct patterns sampled.
	Patterns int `json:"patterns"`
	// Route is how ADMM solves its u-update system: "direct" (Cholesky
	// of the dP×dP system) or "woodbury" (through an n×n matrix), the route
	// of least flops that admm.NewClosedForm picks (see admm.ClosedForm).
	Route admm.Route `json:"admm_route"`
	// ADMM: set-up (cvx.Start: pattern sampling, the u-update system's
	// factorization) and the iterations (the run's history), and their sum.
	ADMMSeconds      float64 `json:"admm_seconds"`
	ADMMCPUSeconds   float64 `json:"admm_cpu_seconds"`
	SetupSeconds     float64 `json:"admm_setup_seconds"`
	IterationSeconds float64 `json:"admm_iteration_seconds"`
	ADMMIterations   int     `json:"admm_iterations"`
	ADMMAccuracy     float64 `json:"admm_validation_accuracy"`
	ADMMObjective    float64 `json:"admm_objective"`
	// IPM: pattern sampling and the solve.
	IPMSeconds    float64 `json:"ipm_seconds"`
	IPMCPUSeconds float64 `json:"ipm_cpu_seconds"`
	IPMIterations int     `json:"ipm_iterations"`
	IPMStatus     string  `json:"ipm_status"`
	IPMGap        float64 `json:"ipm_gap"`
	IPMCapped     bool    `json:"ipm_capped,omitempty"`
	IPMAccuracy   float64 `json:"ipm_validation_accuracy"`
	IPMObjective  float64 `json:"ipm_objective"`
}

// complexityPoint is one point of a sweep: means and standard deviations
// over the runs.
type complexityPoint struct {
	N    int `json:"n"`
	Ps   int `json:"P_s"`
	Runs int `json:"runs"`
	// Patterns is the number of distinct patterns found (at most P_s), the
	// smallest over the runs.
	Patterns int `json:"patterns"`
	// Routes are the u-update routes ADMM took ("direct", "woodbury"),
	// one per run.
	Routes              []admm.Route `json:"admm_routes"`
	ADMMSeconds         float64      `json:"admm_seconds"`
	ADMMSecondsSD       float64      `json:"admm_seconds_std"`
	ADMMCPUSeconds      float64      `json:"admm_cpu_seconds"`
	SetupSeconds        float64      `json:"admm_setup_seconds"`
	SetupSecondsSD      float64      `json:"admm_setup_seconds_std"`
	IterationSeconds    float64      `json:"admm_iteration_seconds"`
	IterationSecondsSD  float64      `json:"admm_iteration_seconds_std"`
	PerIterationSeconds float64      `json:"admm_seconds_per_iteration"`
	ADMMAccuracy        float64      `json:"admm_validation_accuracy"`
	ADMMAccuracySD      float64      `json:"admm_validation_accuracy_std"`
	ADMMObjective       float64      `json:"admm_objective"`
	IPMSeconds          float64      `json:"ipm_seconds"`
	IPMSecondsSD        float64      `json:"ipm_seconds_std"`
	IPMCPUSeconds       float64      `json:"ipm_cpu_seconds"`
	IPMIterations       float64      `json:"ipm_iterations"`
	IPMCapped           int          `json:"ipm_capped_runs"`
	IPMAccuracy         float64      `json:"ipm_validation_accuracy"`
	IPMAccuracySD       float64      `json:"ipm_validation_accuracy_std"`
	IPMObjective        float64      `json:"ipm_objective"`
	PeakRSSBytes        int64        `json:"peak_rss_bytes"`

	Trials []complexityTrial `json:"runs_detail"`
}

// complexityFit is a least-squares slope of log(time) against log(x).
type complexityFit struct {
	Quantity string `json:"quantity"`
	// Slope is null when fewer than two distinct x enter the fit.
	Slope *float64 `json:"slope"`
	// Points is the number of points fitted, over X from XMin to XMax.
	Points int     `json:"points"`
	XMin   float64 `json:"x_min"`
	XMax   float64 `json:"x_max"`
	Paper  string  `json:"paper"`
	Note   string  `json:"note,omitempty"`
}

// complexitySweep is one of the two sweeps.
type complexitySweep struct {
	Variable string            `json:"variable"` // "n" or "P_s"
	Fixed    string            `json:"fixed"`
	Points   []complexityPoint `json:"points"`
	Fits     []complexityFit   `json:"fits"`
}

// complexityResult is the experiment's result.json.
type complexityResult struct {
	Experiment  string             `json:"experiment"`
	Title       string             `json:"title"`
	Size        string             `json:"size"`
	Settings    complexitySettings `json:"settings"`
	TrainImages int                `json:"train_images_available"`
	ValImages   int                `json:"validation_images"`
	Dim         int                `json:"d"`
	DataNotes   string             `json:"data_notes"`
	Sweeps      []complexitySweep  `json:"sweeps"`
	// Partial is true while the sweeps run (the points finished so far).
	Partial      bool              `json:"partial,omitempty"`
	Paper        Reported          `json:"paper"`
	Measured     []string          `json:"measured_claims"`
	Started      time.Time         `json:"started"`
	WallSeconds  float64           `json:"wall_seconds"`
	PeakRSSBytes int64             `json:"peak_rss_bytes"`
	Host         Host              `json:"host"`
	Definitions  map[string]string `json:"definitions"`
}

var complexityDefinitions = map[string]string{
	"admm_seconds":               "ADMM wall time: admm_setup_seconds + admm_iteration_seconds; data loading, the network's recovery, its evaluation and the run's state file excluded",
	"admm_setup_seconds":         "wall time of cvx.Start: pattern sampling, the program's validation, the u-update system's set-up and factorization",
	"admm_iteration_seconds":     "the ADMM iterations alone (the cvx run history's seconds)",
	"admm_seconds_per_iteration": "admm_iteration_seconds / admm_iterations",
	"admm_cpu_seconds":           "CPU time (user + system, getrusage, all threads of the process) over the same span as admm_seconds: less sensitive than the wall time to other processes on the machine, but it adds up the BLAS threads",
	"ipm_cpu_seconds":            "CPU time over the same span as ipm_seconds, as admm_cpu_seconds",
	"ipm_seconds":                "interior-point (\"CVX\") wall time: pattern sampling and ipm.Solve to the relative accuracy ipm_tolerance; weight recovery and evaluation excluded",
	"ipm_capped_runs":            "runs whose IPM solve was stopped at ipm_budget_seconds; their time is a lower bound, their accuracy that of the best iterate, and a point with a capped run is left out of the IPM slope fit",
	"validation_accuracy":        "fraction of the validation set (all 2s and 8s of the MNIST test set) classified correctly by the recovered network (f(x) ≥ 0 predicts +1)",
	"objective":                  "l^{u,α} of eq. (nonconvex_general) of the recovered network on the training subsample (squared loss ½‖ŷ − y‖² plus β/2 times the squared weights)",
	"slope":                      "least-squares slope b of log t = a + b log x over the sweep's points (means over the runs) with t ≥ fit_floor_seconds; a time growing like x^b has slope b",
	"peak_rss_bytes":             "max RSS of the process (getrusage) after the point: a peak over the process so far",
	"patterns":                   "distinct activation patterns sampled (fewer than P_s when the draws run out: the program then has that many); the smallest over the runs",
	"admm_route":                 "how ADMM solves its u-update system (admm.ClosedForm): \"direct\", a Cholesky factor of a dP×dP matrix, set-up (dP)³/3 and 16ndP + 2(dP)² flops per iteration, or \"woodbury\", an n×n matrix, set-up n³/3 + n²d + 2nd² and 20ndP + 2n² per iteration; admm.NewClosedForm takes the one of fewer flops over 1000 iterations, so the set-up's growth changes where the route changes",
}

// complexityJob is a sweep in progress: the settings, the data and the
// points measured so far.
type complexityJob struct {
	dir    cvx.RunDir // where the ADMM runs keep their state
	s      complexitySettings
	train  *data.Set
	val    *data.Set
	stdout io.Writer
	// done caches points by (n, P_s): the point n = 1000, P_s = 8 is in
	// both sweeps.
	done map[[2]int]complexityPoint
}

// runComplexity is the experiment's run hook: reproduce -size size -runs runs.
func runComplexity(ctx context.Context, size Size, runs int, outDir string, stdout io.Writer) error {
	return runComplexitySettings(ctx, size, complexitySetup(size, runs), outDir, stdout)
}

// runComplexitySettings runs both sweeps with the settings s and writes
// result.json and report.html into outDir/fig-admm-complexity.
func runComplexitySettings(ctx context.Context, size Size, s complexitySettings, outDir string, stdout io.Writer) error {
	const name = "fig-admm-complexity"
	start := time.Now()
	var title string
	if e, err := Lookup(name); err == nil {
		title = e.Title
	}
	if s.Runs < 1 || s.ADMMIter < 1 || len(s.SweepN) == 0 || len(s.SweepPs) == 0 {
		return fmt.Errorf("settings %+v: need runs, iterations and both grids", s)
	}
	dir := filepath.Join(outDir, name)
	state, done, err := openOutDir(dir)
	if err != nil {
		return err
	}
	defer done()

	fmt.Fprintf(stdout, "== %s (size %s, %d run(s) per point): %s\n", name, size, s.Runs, title)
	sp, err := data.Paper(ctx, s.Dataset, data.DefaultSource(), data.PlusMinus)
	if err != nil {
		return err
	}
	n, d := sp.Train.Dims()
	for _, m := range append(append([]int(nil), s.SweepN...), s.NOfSweepPs) {
		if m < 1 || m > n {
			return fmt.Errorf("n = %d: the training set %s has %d images", m, s.Dataset, n)
		}
	}
	fmt.Fprintf(stdout, "   data %s: %d training images, d = %d, %d validation images (loaded in %.1f s); IPM budget %.0f s per solve\n",
		s.Dataset, n, d, len(sp.Test.Y), time.Since(start).Seconds(), s.IPMBudget)
	res := &complexityResult{Experiment: name, Title: title, Size: string(size), Settings: s, TrainImages: n, ValImages: len(sp.Test.Y), Dim: d,
		DataNotes: sp.Notes, Paper: Reported{Head: []string{"Claim", "The paper"}, Rows: complexityClaims}, Started: start.UTC(),
		Host: thisHost(), Definitions: complexityDefinitions}
	job := &complexityJob{dir: state, s: s, train: sp.Train, val: sp.Test, stdout: stdout, done: make(map[[2]int]complexityPoint)}

	// One untimed solve of the smallest point first, so that the first
	// timed point does not pay for the BLAS threads' start and the first
	// page faults.
	if _, err := job.trial(ctx, min(s.SweepN[0], s.NOfSweepPs), min(s.PsOfSweepN, s.SweepPs[0]), 1); err != nil {
		return fmt.Errorf("warm-up: %w", err)
	}

	sweepN := complexitySweep{Variable: "n", Fixed: fmt.Sprintf("P_s = %d", s.PsOfSweepN)}
	sweepP := complexitySweep{Variable: "P_s", Fixed: fmt.Sprintf("n = %d", s.NOfSweepPs)}
	// After every point result.json holds the points finished so far
	// (partial): an interrupted sweep leaves them there.
	savePartial := func() error {
		p := *res
		p.Partial, p.Sweeps, p.WallSeconds = true, []complexitySweep{sweepN, sweepP}, time.Since(start).Seconds()
		return writeJSON(filepath.Join(dir, "result.json"), &p)
	}
	for _, m := range s.SweepN {
		p, err := job.point(ctx, m, s.PsOfSweepN)
		if err != nil {
			return err
		}
		sweepN.Points = append(sweepN.Points, p)
		if err := savePartial(); err != nil {
			return err
		}
	}
	for _, ps := range s.SweepPs {
		p, err := job.point(ctx, s.NOfSweepPs, ps)
		if err != nil {
			return err
		}
		sweepP.Points = append(sweepP.Points, p)
		if err := savePartial(); err != nil {
			return err
		}
	}
	sweepN.Fits = complexityFits(sweepN, s.FitFloor)
	sweepP.Fits = complexityFits(sweepP, s.FitFloor)
	res.Sweeps = []complexitySweep{sweepN, sweepP}
	res.Measured = complexityMeasured(res)
	res.WallSeconds = time.Since(start).Seconds()
	res.PeakRSSBytes = maxRSS()

	printComplexity(stdout, res)
	page, err := complexityHTML(res)
	if err != nil {
		return err
	}
	return writeReport(dir, res, page, res.WallSeconds, stdout)
}

// point runs every seed at (n, P_s), or returns the point already run.
func (j *complexityJob) point(ctx context.Context, n, ps int) (complexityPoint, error) {
	if p, ok := j.done[[2]int{n, ps}]; ok {
		fmt.Fprintf(j.stdout, "-- n = %d, P_s = %d: measured above\n", n, ps)
		return p, nil
	}
	fmt.Fprintf(j.stdout, "-- n = %d, P_s = %d: %d run(s)\n", n, ps, j.s.Runs)
	p := complexityPoint{N: n, Ps: ps, Runs: j.s.Runs}
	for r := 1; r <= j.s.Runs; r++ {
		t, err := j.trial(ctx, n, ps, r)
		if err != nil {
			return p, fmt.Errorf("n = %d, P_s = %d, run %d: %w", n, ps, r, err)
		}
		capped := ""
		if t.IPMCapped {
			capped = fmt.Sprintf(", stopped at the %.0f s budget", j.s.IPMBudget)
		}
		fmt.Fprintf(j.stdout, "   run %d: ADMM %.3f s (set-up %.3f s, %d iterations %.3f s) %.2f%%; IPM %.3f s (%d iterations, %s%s) %.2f%%\n",
			r, t.ADMMSeconds, t.SetupSeconds, t.ADMMIterations, t.IterationSeconds, 100*t.ADMMAccuracy,
			t.IPMSeconds, t.IPMIterations, t.IPMStatus, capped, 100*t.IPMAccuracy)
		p.Trials = append(p.Trials, t)
	}
	summarizePoint(&p)
	p.PeakRSSBytes = maxRSS()
	j.done[[2]int{n, ps}] = p
	return p, nil
}

// trial trains the network on the subsample of n training images with seed
// by ADMM and by the IPM, on the same sampled patterns.
func (j *complexityJob) trial(ctx context.Context, n, ps, seed int) (complexityTrial, error) {
	t := complexityTrial{Seed: seed}
	tr := j.train
	if n < len(tr.Y) {
		var err error
		if tr, err = tr.Subsample(n, uint64(seed)); err != nil {
			return t, err
		}
	}
	problem := func() *cvx.Problem {
		return cvx.Classify(tr.X, tr.Y).Beta(j.s.Beta).Bias().SamplePatterns(ps, uint64(seed))
	}

	// ADMM.
	runtime.GC()
	t0, c0 := time.Now(), cpuSeconds()
	run := j.dir.Start(fmt.Sprintf("complexity-n%d-ps%d-seed%d", n, ps, seed), problem(), cvx.ADMM{Rho: j.s.Rho, Gamma: j.s.Gamma, Tol: 1e-300})
	if err := run.Err(); err != nil {
		return t, err
	}
	t.SetupSeconds = time.Since(t0).Seconds()
	run.Quiet = true
	if err := run.IterateContext(ctx, j.s.ADMMIter); err != nil {
		return t, err
	}
	h := run.History()
	if len(h) == 0 {
		return t, errors.New("ADMM made no iterations")
	}
	t.ADMMCPUSeconds = cpuSeconds() - c0
	t.ADMMIterations, t.IterationSeconds = len(h), h[len(h)-1].Seconds
	t.ADMMSeconds = t.SetupSeconds + t.IterationSeconds
	t.ADMMObjective = h[len(h)-1].Nonconvex
	net, err := run.Network()
	if err != nil {
		return t, err
	}
	if t.ADMMAccuracy, err = cvx.Accuracy(net, j.val.X, j.val.Y); err != nil {
		return t, err
	}
	if err := os.Remove(run.Path()); err != nil && !errors.Is(err, os.ErrNotExist) {
		return t, err
	}

	// The interior-point method, stopped after the budget.
	runtime.GC()
	t0, c0 = time.Now(), cpuSeconds()
	prog, err := problem().Convex()
	if err != nil {
		return t, err
	}
	bctx, cancel := context.WithTimeout(ctx, time.Duration(j.s.IPMBudget*float64(time.Second)))
	sol, err := ipm.Solve(bctx, prog, ipm.Options{Tol: j.s.IPMTol})
	cancel()
	t.IPMSeconds, t.IPMCPUSeconds = time.Since(t0).Seconds(), cpuSeconds()-c0
	switch {
	case err == nil:
	case ctx.Err() != nil:
		return t, ctx.Err()
	case errors.Is(err, context.DeadlineExceeded) && sol != nil:
		t.IPMCapped = true
	default:
		return t, err
	}
	t.IPMIterations, t.IPMStatus, t.IPMGap = sol.Iterations, sol.Status.String(), sol.Gap
	if t.IPMCapped {
		t.IPMStatus = "stopped by the budget"
	}
	net, err = prog.Recover(sol.Weights)
	if err != nil {
		return t, err
	}
	if t.IPMAccuracy, err = cvx.Accuracy(net, j.val.X, j.val.Y); err != nil {
		return t, err
	}
	if t.IPMObjective, err = prog.NonconvexObjective(net); err != nil {
		return t, err
	}

	// The route cvx's ADMM took: admm.NewClosedForm with the same options
	// on the same program, untimed.
	t.Patterns = len(prog.D)
	a, err := admm.NewClosedForm(prog, admm.Options{Rho: j.s.Rho, Gamma: j.s.Gamma}, nil)
	if err != nil {
		return t, err
	}
	t.Route = a.Route()
	return t, nil
}

// cpuSeconds is the process's user and system CPU time so far.
func cpuSeconds() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return math.NaN()
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
}

// summarizePoint fills the point's means and standard deviations from its
// trials.
func summarizePoint(p *complexityPoint) {
	col := func(f func(complexityTrial) float64) []float64 {
		v := make([]float64, len(p.Trials))
		for k, t := range p.Trials {
			v[k] = f(t)
		}
		return v
	}
	p.ADMMSeconds, p.ADMMSecondsSD = MeanSD(col(func(t complexityTrial) float64 { return t.ADMMSeconds }))
	p.ADMMCPUSeconds, _ = MeanSD(col(func(t complexityTrial) float64 { return t.ADMMCPUSeconds }))
	p.IPMCPUSeconds, _ = MeanSD(col(func(t complexityTrial) float64 { return t.IPMCPUSeconds }))
	p.SetupSeconds, p.SetupSecondsSD = MeanSD(col(func(t complexityTrial) float64 { return t.SetupSeconds }))
	p.IterationSeconds, p.IterationSecondsSD = MeanSD(col(func(t complexityTrial) float64 { return t.IterationSeconds }))
	iters, _ := MeanSD(col(func(t complexityTrial) float64 { return float64(t.ADMMIterations) }))
	p.PerIterationSeconds = p.IterationSeconds / iters
	p.ADMMAccuracy, p.ADMMAccuracySD = MeanSD(col(func(t complexityTrial) float64 { return t.ADMMAccuracy }))
	p.ADMMObjective, _ = MeanSD(col(func(t complexityTrial) float64 { return t.ADMMObjective }))
	p.IPMSeconds, p.IPMSecondsSD = MeanSD(col(func(t complexityTrial) float64 { return t.IPMSeconds }))
	p.IPMIterations, _ = MeanSD(col(func(t complexityTrial) float64 { return float64(t.IPMIterations) }))
	p.IPMAccuracy, p.IPMAccuracySD = MeanSD(col(func(t complexityTrial) float64 { return t.IPMAccuracy }))
	p.IPMObjective, _ = MeanSD(col(func(t complexityTrial) float64 { return t.IPMObjective }))
	p.Patterns, p.Routes = p.Ps, nil
	for _, t := range p.Trials {
		if t.IPMCapped {
			p.IPMCapped++
		}
		p.Patterns = min(p.Patterns, t.Patterns)
		p.Routes = append(p.Routes, t.Route)
	}
}

// logSlope returns the least-squares slope of log y against log x,
//
//	b = Σ_k (ξ_k − ξ̄)(η_k − η̄) / Σ_k (ξ_k − ξ̄)²,  ξ_k = log x_k, η_k = log y_k,
//
// and false when fewer than two distinct x are given.
func logSlope(x, y []float64) (float64, bool) {
	if len(x) < 2 {
		return 0, false
	}
	var mx, my float64
	for k := range x {
		mx += math.Log(x[k])
		my += math.Log(y[k])
	}
	mx /= float64(len(x))
	my /= float64(len(x))
	var sxy, sxx float64
	for k := range x {
		dx := math.Log(x[k]) - mx
		sxy += dx * (math.Log(y[k]) - my)
		sxx += dx * dx
	}
	if !(sxx > 0) {
		return 0, false
	}
	return sxy / sxx, true
}

// complexityFits fits the growth of the ADMM time, its set-up, its
// iterations (a fixed number: the growth per iteration) and the IPM time,
// wall and CPU, over the sweep's points with a mean time of at
// least floor seconds (the IPM's without capped runs). When fewer than two
// points reach the floor, all points are fitted and the fit says so.
func complexityFits(sw complexitySweep, floor float64) []complexityFit {
	byN := sw.Variable == "n"
	paper := func(n, ps string) string {
		if byN {
			return n
		}
		return ps
	}
	quantities := []struct {
		name, paper string
		t           func(complexityPoint) float64
		skip        func(complexityPoint) bool
	}{
		{"ADMM (set-up + iterations)", paper("1 (linear in n)", "2 (quadratic in P_s)"), func(p complexityPoint) float64 { return p.ADMMSeconds }, nil},
		{"ADMM set-up", "not stated", func(p complexityPoint) float64 { return p.SetupSeconds }, nil},
		{"ADMM iterations", paper("1: O(nP_s + d²P_s²) per iteration", "2: O(nP_s + d²P_s²) per iteration"), func(p complexityPoint) float64 { return p.IterationSeconds }, nil},
		{"IPM (\"CVX\")", "grows much faster than ADMM's", func(p complexityPoint) float64 { return p.IPMSeconds },
			func(p complexityPoint) bool { return p.IPMCapped > 0 }},
		{"ADMM CPU time", paper("1", "2"), func(p complexityPoint) float64 { return p.ADMMCPUSeconds }, nil},
		{"IPM CPU time", "grows much faster than ADMM's", func(p complexityPoint) float64 { return p.IPMCPUSeconds },
			func(p complexityPoint) bool { return p.IPMCapped > 0 }},
	}
	var fits []complexityFit
	for _, q := range quantities {
		f := complexityFit{Quantity: q.name, Paper: q.paper}
		var x, y, allX, allY []float64
		capped := 0
		for _, p := range sw.Points {
			if q.skip != nil && q.skip(p) {
				capped++
				continue
			}
			v := float64(p.N)
			if !byN {
				v = float64(p.Ps)
			}
			t := q.t(p)
			if !(t > 0) {
				continue
			}
			allX, allY = append(allX, v), append(allY, t)
			if t >= floor {
				x, y = append(x, v), append(y, t)
			}
		}
		var notes []string
		if len(x) < 2 {
			x, y = allX, allY
			notes = append(notes, fmt.Sprintf("fewer than two points reach %.3g s: all points fitted", floor))
		} else if len(x) < len(allX) {
			notes = append(notes, fmt.Sprintf("%d point(s) below %.3g s left out", len(allX)-len(x), floor))
		}
		if capped > 0 {
			notes = append(notes, fmt.Sprintf("%d point(s) with budget-capped runs left out", capped))
		}
		f.Note = strings.Join(notes, "; ")
		if b, ok := logSlope(x, y); ok {
			f.Slope = &b
		}
		f.Points = len(x)
		if len(x) > 0 {
			f.XMin, f.XMax = x[0], x[len(x)-1]
		}
		fits = append(fits, f)
	}
	return fits
}

// fitOf returns the sweep's fit of the quantity.
func fitOf(sw complexitySweep, quantity string) complexityFit {
	for _, f := range sw.Fits {
		if f.Quantity == quantity {
			return f
		}
	}
	return complexityFit{}
}

func slopeText(f complexityFit) string {
	if f.Slope == nil {
		return "—"
	}
	return fmt.Sprintf("%.2f", *f.Slope)
}

// complexityMeasured are the measured counterparts of complexityClaims.
func complexityMeasured(res *complexityResult) []string {
	var out []string
	for _, sw := range res.Sweeps {
		a := fitOf(sw, "ADMM (set-up + iterations)")
		out = append(out, fmt.Sprintf("slope %s (set-up %s, per iteration %s) over %s = %g … %g",
			slopeText(a), slopeText(fitOf(sw, "ADMM set-up")), slopeText(fitOf(sw, "ADMM iterations")), sw.Variable, a.XMin, a.XMax))
		first, last := sw.Points[0], sw.Points[len(sw.Points)-1]
		out = append(out, fmt.Sprintf("slope %s; IPM/ADMM time ratio %.3g at %s = %d, %.3g at %s = %d",
			slopeText(fitOf(sw, "IPM (\"CVX\")")), first.IPMSeconds/first.ADMMSeconds, sw.Variable, sweepX(sw, first),
			last.IPMSeconds/last.ADMMSeconds, sw.Variable, sweepX(sw, last)))
	}
	for _, sw := range res.Sweeps {
		var below []string
		for _, p := range sw.Points {
			if p.ADMMAccuracy < p.IPMAccuracy {
				below = append(below, fmt.Sprintf("%d (%.2f%% < %.2f%%)", sweepX(sw, p), 100*p.ADMMAccuracy, 100*p.IPMAccuracy))
			}
		}
		s := fmt.Sprintf("ADMM ≥ IPM at %d of %d values of %s", len(sw.Points)-len(below), len(sw.Points), sw.Variable)
		if len(below) > 0 {
			s += "; below at " + sw.Variable + " = " + strings.Join(below, ", ")
		}
		out = append(out, s)
	}
	return out
}

func sweepX(sw complexitySweep, p complexityPoint) int {
	if sw.Variable == "n" {
		return p.N
	}
	return p.Ps
}

// complexityRows are a sweep's table header and rows.
func complexityRows(sw complexitySweep) ([]string, [][]string) {
	head := []string{"n", "P_s", "route", "ADMM time (s)", "set-up (s)", "iterations (s)", "per iteration (ms)", "ADMM CPU (s)", "ADMM accuracy", "IPM time (s)", "IPM CPU (s)", "IPM iterations", "IPM accuracy", "ADMM l^{u,α}", "IPM l^{u,α}", "Peak RSS (MB)"}
	var rows [][]string
	sd := func(m, s float64, runs int, f string) string {
		if runs < 2 {
			return fmt.Sprintf(f, m)
		}
		return fmt.Sprintf(f+" (%.2g)", m, s)
	}
	for _, p := range sw.Points {
		ipm := sd(p.IPMSeconds, p.IPMSecondsSD, p.Runs, "%.4g")
		if p.IPMCapped > 0 {
			ipm += fmt.Sprintf(" [%d capped]", p.IPMCapped)
		}
		rows = append(rows, []string{
			fmt.Sprint(p.N), fmt.Sprint(p.Ps), strings.Join(complexityUniq(p.Routes), "/"),
			sd(p.ADMMSeconds, p.ADMMSecondsSD, p.Runs, "%.4g"), sd(p.SetupSeconds, p.SetupSecondsSD, p.Runs, "%.4g"),
			sd(p.IterationSeconds, p.IterationSecondsSD, p.Runs, "%.4g"), fmt.Sprintf("%.3g", 1e3*p.PerIterationSeconds), fmt.Sprintf("%.4g", p.ADMMCPUSeconds),
			sd(100*p.ADMMAccuracy, 100*p.ADMMAccuracySD, p.Runs, "%.2f %%"), ipm, fmt.Sprintf("%.4g", p.IPMCPUSeconds), fmt.Sprintf("%.3g", p.IPMIterations),
			sd(100*p.IPMAccuracy, 100*p.IPMAccuracySD, p.Runs, "%.2f %%"),
			fmt.Sprintf("%.5g", p.ADMMObjective), fmt.Sprintf("%.5g", p.IPMObjective), fmt.Sprintf("%.0f", float64(p.PeakRSSBytes)/1e6),
		})
	}
	return head, rows
}

// complexityUniq returns the distinct routes of s in their first order.
func complexityUniq(s []admm.Route) []string {
	var u []string
	for _, v := range s {
		if !slices.Contains(u, string(v)) {
			u = append(u, string(v))
		}
	}
	return u
}

// fitRows are the slopes of both sweeps.
func fitRows(res *complexityResult) ([]string, [][]string) {
	head := []string{"Sweep", "Time", "Measured slope", "Points fitted", "The paper", "Note"}
	var rows [][]string
	for _, sw := range res.Sweeps {
		for _, f := range sw.Fits {
			rows = append(rows, []string{fmt.Sprintf("%s (%s)", sw.Variable, sw.Fixed), f.Quantity, slopeText(f),
				fmt.Sprintf("%d (%s = %g … %g)", f.Points, sw.Variable, f.XMin, f.XMax), f.Paper, f.Note})
		}
	}
	return head, rows
}

func claimRows(res *complexityResult) ([]string, [][]string) {
	var rows [][]string
	for k, c := range res.Paper.Rows {
		m := ""
		if k < len(res.Measured) {
			m = res.Measured[k]
		}
		rows = append(rows, []string{c[0], c[1], m})
	}
	return []string{"Claim", "The paper", "Measured"}, rows
}

func printComplexity(w io.Writer, res *complexityResult) {
	for _, sw := range res.Sweeps {
		head, rows := complexityRows(sw)
		PrintText(w, fmt.Sprintf("sweep over %s (%s), %s size, %d run(s) per point", sw.Variable, sw.Fixed, res.Size, res.Settings.Runs), head, rows)
	}
	head, rows := fitRows(res)
	PrintText(w, fmt.Sprintf("log-log slopes (least squares over the points with time ≥ %.3g s)", res.Settings.FitFloor), head, rows)
	head, rows = claimRows(res)
	PrintText(w, "the paper's claims", head, rows)
}

// complexityHTML is report.html: the claims, both sweeps' tables, the
// slopes and the four charts of fig. ADMMCom, standalone.
func complexityHTML(res *complexityResult) (string, error) {
	var tables strings.Builder
	head, rows := claimRows(res)
	tables.WriteString(HTMLTable("The paper's claims and the measurement", head, rows))
	head, rows = fitRows(res)
	tables.WriteString(HTMLTable(fmt.Sprintf("Log-log slopes (least squares over the points with time ≥ %.3g s)", res.Settings.FitFloor), head, rows))
	for _, sw := range res.Sweeps {
		head, rows := complexityRows(sw)
		tables.WriteString(HTMLTable(fmt.Sprintf("Sweep over %s (%s): means (standard deviations) over the runs", sw.Variable, sw.Fixed), head, rows))
	}
	figs, err := complexityFigures(res)
	if err != nil {
		return "", err
	}
	return reportPage{name: res.Experiment, title: res.Title,
		summary: fmt.Sprintf("convexnn reproduce %s, size %s, %d run(s) per point, %s; training subsamples of the %d training images (d = %d), %d validation images; total %.1f s on %d CPUs (%s/%s, %s).",
			res.Experiment, res.Size, res.Settings.Runs, res.Started.Format(time.RFC3339), res.TrainImages, res.Dim, res.ValImages,
			res.WallSeconds, res.Host.CPUs, res.Host.GOOS, res.Host.GOARCH, res.Host.GoVersion),
		tables: tables.String(), definitions: res.Definitions, settings: res.Settings, dataNotes: res.DataNotes,
		chartsCaption: "Charts (means over the runs)", figs: figs}.html()
}

// complexityFigures are the four charts of fig. ADMMCom: for each sweep the
// validation accuracy and the times (log-log: the x axis is log₁₀ x, as
// plots draws no log x axis), with the paper's growth drawn through ADMM's
// first point.
func complexityFigures(res *complexityResult) ([]*plots.Figure, error) {
	var figs []*plots.Figure
	for _, sw := range res.Sweeps {
		byN := sw.Variable == "n"
		x := func(p complexityPoint) float64 {
			if byN {
				return math.Log10(float64(p.N))
			}
			return float64(p.Ps)
		}
		xLabel := "log₁₀ n"
		if !byN {
			xLabel = "P_s"
		}
		admm, ipm := plots.Series{Name: "ADMM"}, plots.Series{Name: "IPM (\"CVX\")"}
		for _, p := range sw.Points {
			admm.X, admm.Y = append(admm.X, x(p)), append(admm.Y, 100*p.ADMMAccuracy)
			ipm.X, ipm.Y = append(ipm.X, x(p)), append(ipm.Y, 100*p.IPMAccuracy)
		}
		f, err := plots.Line(plots.LineOptions{Title: fmt.Sprintf("Validation accuracy against %s (%s)", sw.Variable, sw.Fixed), XLabel: xLabel, YLabel: "accuracy (%)"}, admm, ipm)
		if err != nil {
			return nil, err
		}
		figs = append(figs, f)

		lx := func(p complexityPoint) float64 {
			if byN {
				return math.Log10(float64(p.N))
			}
			return math.Log10(float64(p.Ps))
		}
		series := []plots.Series{{Name: "ADMM"}, {Name: "ADMM set-up"}, {Name: "ADMM iterations"}, {Name: "IPM (\"CVX\")"}}
		for _, p := range sw.Points {
			for k, t := range []float64{p.ADMMSeconds, p.SetupSeconds, p.IterationSeconds, p.IPMSeconds} {
				if t > 0 {
					series[k].X, series[k].Y = append(series[k].X, lx(p)), append(series[k].Y, t)
				}
			}
		}
		// The paper's growth, t ∝ x^g, through ADMM's first point.
		g, gName := 1.0, "paper: t ~ n"
		if !byN {
			g, gName = 2, "paper: t ~ P_s^2"
		}
		if a := series[0]; len(a.X) > 1 {
			x0, x1 := a.X[0], a.X[len(a.X)-1]
			series = append(series, plots.Series{Name: gName, X: []float64{x0, x1}, Y: []float64{a.Y[0], a.Y[0] * math.Pow(10, g*(x1-x0))}})
		}
		f, err = plots.Line(plots.LineOptions{Title: fmt.Sprintf("Wall time against %s (%s), log-log", sw.Variable, sw.Fixed), XLabel: "log₁₀ " + sw.Variable, YLabel: "seconds", LogY: true}, series...)
		if err != nil {
			return nil, err
		}
		figs = append(figs, f)
	}
	return figs, nil
}
