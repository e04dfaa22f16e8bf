package paper

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"text/tabwriter"
	"time"

	"github.com/convexnn/convexnn/internal/repo"
	"github.com/convexnn/convexnn/solvers"
	"github.com/convexnn/convexnn/solvers/admm"
	"github.com/convexnn/convexnn/solvers/ipm"
	"gonum.org/v1/gonum/mat"
)

// CVXOPTConfig are the settings of `convexnn bench cvxopt`
// (DefaultCVXOPTConfig gives the defaults).
type CVXOPTConfig struct {
	N      int      `json:"n"`
	D      int      `json:"d"`
	Ps     int      `json:"P_s"`
	Beta   float64  `json:"beta"`
	Seed   uint64   `json:"seed"`
	Losses []string `json:"losses"`
	Runs   int      `json:"runs"`
	// Target is the relative objective gap |l − p*|/|p*| to reach; ViolTol
	// the largest constraint violation allowed at that point, relative to
	// the scale max_{j,k} |x_kᵀu*_j| of the reference optimum u*.
	Target  float64 `json:"target_rel_gap"`
	ViolTol float64 `json:"violation_tol"`
	// Rho is ADMM's (starting) penalty ρ; ADMMMaxIter caps an ADMM run.
	Rho         float64 `json:"admm_rho"`
	ADMMMaxIter int     `json:"admm_max_iter"`
	// Relax is the over-relaxation α of the extra ADMM row (squared loss;
	// 1: no extra row).
	Relax  float64 `json:"admm_relax"`
	Python string  `json:"python"`
	Script string  `json:"script"`
}

// DefaultCVXOPTConfig returns the benchmark's defaults: n = 500, d = 20,
// P_s = 40 at SizePaper (n = 60, d = 5, P_s = 6 otherwise), β = 1e-3, seed 1,
// the squared loss, 3 runs, target 1e-4 at violation 1e-6, ρ = CVXOPTRho, an
// extra over-relaxed row α = CVXOPTRelax, 100000 ADMM iterations at most.
func DefaultCVXOPTConfig(size Size) CVXOPTConfig {
	c := CVXOPTConfig{N: 500, D: 20, Ps: 40, Beta: 1e-3, Seed: 1, Losses: []string{"squared"}, Runs: 3, Target: 1e-4, ViolTol: 1e-6,
		Rho: CVXOPTRho, ADMMMaxIter: 100000, Relax: CVXOPTRelax, Python: DebianPython}
	if size != SizePaper {
		c.N, c.D, c.Ps = 60, 5, 6
	}
	return c
}

// cvxbSolverRow is one solver's line of the table: medians over the runs.
type cvxbSolverRow struct {
	Solver     string `json:"solver"`
	Reached    bool   `json:"reached"`
	Iterations int    `json:"iterations"`
	// Seconds is the median wall time to the target; Times are the runs.
	Seconds float64   `json:"seconds"`
	Times   []float64 `json:"times"`
	// RelGap and RelViolation are those of the point that reached the
	// target (or, when none did, of the last point).
	RelGap       float64 `json:"rel_gap"`
	RelViolation float64 `json:"rel_violation"`
	// CVXOPTRatio is the median CVXOPT time over this solver's.
	CVXOPTRatio float64 `json:"cvxopt_over_this,omitempty"`
	// FeasibleRelGap is the relative gap of the exactly feasible copy of
	// the point (violating groups projected onto their cones; not timed).
	FeasibleRelGap *float64 `json:"feasible_copy_rel_gap,omitempty"`
	// BuildSeconds (CVXOPT) is the median time of the problem construction
	// in Python included in Seconds.
	BuildSeconds float64 `json:"build_seconds,omitempty"`
	// GapOnly (ADMM) is where the iterate's objective came within the
	// target, its violation not considered: for context, not a result.
	GapOnly *cvxbGapOnly `json:"gap_only,omitempty"`
	Method  string       `json:"method"`
}

// cvxbGapOnly is where an ADMM run's objective came within the target,
// whatever its constraint violation (the run of the median time). The
// objective of an infeasible iterate can cross p* and leave again: First is
// the first iterate within the target, Stays the first from which every
// later iterate of the run is (nil when the run's last iterate is not).
type cvxbGapOnly struct {
	First cvxbGapPoint  `json:"first"`
	Stays *cvxbGapPoint `json:"stays,omitempty"`
}

// cvxbGapPoint is one ADMM iterate.
type cvxbGapPoint struct {
	Iterations   int     `json:"iterations"`
	Seconds      float64 `json:"seconds"`
	RelGap       float64 `json:"rel_gap"`
	RelViolation float64 `json:"rel_violation"`
}

// cvxbLossResult is the benchmark of one loss.
type cvxbLossResult struct {
	Loss string `json:"loss"`
	// PStar is our interior-point optimum at tolerance RefTol; PStarCVXOPT
	// CVXOPT's (objective recomputed from its v, w), at CVXOPTRefTol.
	PStar           float64         `json:"p_star"`
	RefTol          float64         `json:"p_star_ipm_tolerance"`
	RefIterations   int             `json:"p_star_ipm_iterations"`
	PStarCVXOPT     float64         `json:"p_star_cvxopt"`
	CVXOPTRefTol    float64         `json:"p_star_cvxopt_tolerance"`
	CVXOPTRefStatus string          `json:"p_star_cvxopt_status"`
	PStarRelDiff    float64         `json:"p_star_rel_diff"`
	ViolScale       float64         `json:"violation_scale"`
	Solvers         []cvxbSolverRow `json:"solvers"`
	CVXOPTOverIPM   float64         `json:"cvxopt_over_ipm"`
	CVXOPTOverADMM  float64         `json:"cvxopt_over_admm"`
	// CVXOPTOverRelaxed is the ratio for the over-relaxed ADMM (squared
	// loss, -relax α ≠ 1; 0 when not run).
	CVXOPTOverRelaxed float64 `json:"cvxopt_over_admm_relaxed,omitempty"`
	// CVXOPTTrajectory are the iterates of CVXOPT's reference solve
	// (iteration, seconds, objective, relative gap and violation);
	// CVXOPTSweep its runs from scratch before the repeats, as the script
	// reports them.
	CVXOPTTrajectory json.RawMessage `json:"cvxopt_trajectory"`
	CVXOPTSweep      json.RawMessage `json:"cvxopt_runs_tested"`
}

// cvxbResult is <out>/cvxopt/result.json.
type cvxbResult struct {
	Config       CVXOPTConfig     `json:"config"`
	Data         string           `json:"data"`
	Patterns     int              `json:"patterns"`
	Losses       []cvxbLossResult `json:"losses"`
	GOMAXPROCS   int              `json:"gomaxprocs"`
	BLAS         string           `json:"blas"`
	CVXOPT       string           `json:"cvxopt_version"`
	Notes        []string         `json:"notes"`
	TotalSeconds float64          `json:"total_seconds"`
}

// cvxbPStarAgree is the largest relative difference allowed between our
// interior-point optimum and CVXOPT's.
const cvxbPStarAgree = 1e-6

// BenchCVXOPT is `convexnn bench cvxopt`: Debian's python3-cvxopt against our
// interior-point method (ipm.Solve) and our ADMM (admm.ClosedForm for the
// squared loss, admm.Split for the hinge loss) on one instance of the convex
// training program (eq. convex_general)
//
//	minimize   ℓ(Σ_i D_i X (v_i − w_i), y) + β Σ_i (‖v_i‖ + ‖w_i‖)
//	subject to (2D_i − I) X v_i ≥ 0,  (2D_i − I) X w_i ≥ 0,  i = 1 … P_s,
//
// measuring the time to a relative objective gap: p* is our interior-point
// optimum at a tight tolerance, which must agree with CVXOPT's to a relative
// 10⁻⁶ (else the benchmark fails); a point (v, w) reaches the target when
// |l^{v,w} − p*| ≤ target·|p*| and its largest violation
// max_{i,k} (−(2D_i − I)X u)_k is at most viol·max_{j,k}|x_kᵀu*_j|.
//
//   - ADMM (ρ = -rho, default CVXOPTRho): the iterate v^k of every step is
//     tested (its objective and violation are part of each step's report);
//     the time runs from the start of the set-up (the factorization of the
//     u-update system) to the end of the first step that passes. A run that
//     does not pass in -admm-max-iter steps is reported as not reached. For
//     the squared loss a second ADMM row runs the same ADMM over-relaxed
//     (admm.Options.Relax = -relax, default CVXOPTRelax; 1 omits it).
//   - Our interior-point method and CVXOPT, which report no iterates: the
//     method is run with an iteration limit k and the returned point tested;
//     the time is that of the run with the smallest passing k (for ours by a
//     sweep k = 1, 2, …; for CVXOPT, whose runs cost seconds per iteration,
//     from the iterates of its reference solve, which are the points the
//     runs with maxiters = k return, copied through a wrapper of its default
//     KKT solver and confirmed by the first timed run; see
//     bench/cvxopt_convex.py). CVXOPT's time is measured inside the Python
//     script and includes the problem construction, not the start-up of
//     Python or the parsing of the instance.
//
// Each time is the median of -runs runs. The table and <out>/cvxopt/result.json
// give iterations, median seconds, the gap and violation reached, the gap
// of the point's exactly feasible copy (every violating group projected onto
// its cone, not timed) and the ratios CVXOPT time / ours. The instance is
// cvxbPlanted's (-size paper: n = 500, d = 20, P_s = 40; small: 60, 5, 6),
// β = 10⁻³ by default, with the squared loss; -loss squared,hinge adds the
// hinge loss, which at the paper size is far slower for CVXOPT: its conelp
// (default QR-based KKT solver) computes a dense QR of the 42680×2180 scaled
// constraint matrix at each iteration (times: docs/performance.md).
//
// cfg must be valid (convexnn bench checks its flags); it prints the table
// and writes <outDir>/cvxopt/result.json.
func BenchCVXOPT(ctx context.Context, cfg CVXOPTConfig, outDir string, stdout io.Writer) error {
	start := time.Now()
	var err error
	if cfg.Script, err = benchScript("cvxopt", cfg.Script, "cvxopt_convex.py"); err != nil {
		return err
	}
	version, err := cvxbCheckPython(ctx, cfg.Python)
	if err != nil {
		return err
	}
	dir := filepath.Join(outDir, "cvxopt")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}

	res := cvxbResult{Config: cfg, GOMAXPROCS: runtime.GOMAXPROCS(0), BLAS: solvers.BLAS(), CVXOPT: version}
	res.Data = fmt.Sprintf("planted two-layer ReLU network (seed %d): X ∈ R^{%d×%d} with i.i.d. N(0, 1) entries, no bias column; "+
		"teacher f(x) = Σ_{j=1}^{%d} (−1)^{j+1} (x·u_j)_+ with unit u_j uniform on the sphere; squared loss: y = f(x) + %g·N(0, 1); "+
		"hinge loss: y = sign(f(x) − median f) with %g %% of the labels flipped", cfg.Seed, cfg.N, cfg.D, cvxbTeacher, cvxbNoise, 100*cvxbFlip)
	res.Notes = []string{
		"p* is our interior-point optimum at a tight tolerance; CVXOPT's optimum must agree to a relative 1e-6",
		fmt.Sprintf("a point reaches the target when |l^{v,w} − p*| ≤ %g·|p*| and its largest constraint violation max(−(2D_i − I)X u_j)_+ ≤ %g·max_{j,k}|x_kᵀu*_j|", cfg.Target, cfg.ViolTol),
		"ADMM: the iterate v^k itself is tested at every step (objective and violation come with each step's report); time from the start of the set-up (factorization) to the end of the first passing step",
		"interior-point methods: run with an iteration limit k, the returned point is tested; time of the run with the smallest passing k",
		"CVXOPT time measured in the script with time.perf_counter(): problem construction (numpy to cvxopt matrices) plus solve; Python start-up, imports and JSON parsing excluded",
		"feasible_copy_rel_gap: the point with every violating group replaced by its projection onto the group's cone (ipm.RestoreRobust with ε = 0), not timed",
		fmt.Sprintf("ADMM: ρ = %g (squared: admm.ClosedForm; hinge: admm.Split, adaptive ρ from %g), the best of a coarse grid on the default instance; the solvers' default ρ = 0.1 is far slower here", cfg.Rho, cfg.Rho),
		fmt.Sprintf("squared loss: the row \"admm α=%g (ours)\" is the same ADMM over-relaxed (Eckstein and Bertsekas; admm.Options.Relax), not the paper's algorithm; -relax 1 omits it", cfg.Relax),
		"gap_only (ADMM): where the objective alone came within the target, at whatever violation (first: the first such iterate; stays: the first from which every later iterate of the run is within it, since an infeasible iterate's objective can cross p* and leave again); for context, not a result",
		"CVXOPT uses its default KKT solvers, which form the scaled constraint matrix densely at every iteration: coneqp (squared) its Gram matrix (syrk), conelp (hinge) its QR factorization",
		"CVXOPT's k*: the iterates of its reference solve (copied through a wrapper of its default KKT solver) are the points runs with maxiters = k return; the first passing one is k*, confirmed by the first timed run (an ordinary run); k* − 1 is the failing iterate of the same trajectory",
	}
	x, yReg, yCls := cvxbPlanted(cfg.N, cfg.D, cfg.Seed)
	pats, err := solvers.SamplePatterns(x, cfg.Ps, cfg.Seed, 0)
	if err != nil {
		var few *solvers.FewPatternsError
		if !errors.As(err, &few) {
			return fmt.Errorf("bench cvxopt: patterns: %w", err)
		}
		res.Notes = append(res.Notes, err.Error())
	}
	res.Patterns = len(pats)
	fmt.Fprintf(stdout, "bench cvxopt: n = %d, d = %d, P_s = %d, β = %g; %s\n", cfg.N, cfg.D, len(pats), cfg.Beta, res.Data)
	fmt.Fprintf(stdout, "target: relative gap ≤ %g at relative violation ≤ %g; medians of %d runs; GOMAXPROCS %d, BLAS %s, cvxopt %s\n",
		cfg.Target, cfg.ViolTol, cfg.Runs, res.GOMAXPROCS, res.BLAS, version)

	var failure error
	for _, loss := range cfg.Losses {
		p := &solvers.Program{X: x, Y: yReg, Loss: solvers.SquaredLoss, Beta: cfg.Beta, D: pats}
		if loss == "hinge" {
			p.Y, p.Loss = yCls, solvers.HingeLoss
		}
		lr, err := cvxbLoss(ctx, p, cfg, stdout)
		if lr != nil {
			res.Losses = append(res.Losses, *lr)
		}
		if err != nil {
			failure = fmt.Errorf("bench cvxopt: %s loss: %w", loss, err)
			break
		}
	}
	if len(res.Losses) > 0 {
		cvxbPrintTable(stdout, res.Losses)
	}
	res.TotalSeconds = time.Since(start).Seconds()
	path := filepath.Join(dir, "result.json")
	if err := writeJSON(path, res); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "wrote %s (%.0f s)\n", path, res.TotalSeconds)
	return failure
}

// cvxbCheckPython checks that python imports cvxopt and numpy and returns
// cvxopt's version.
func cvxbCheckPython(ctx context.Context, python string) (string, error) {
	out, err := exec.CommandContext(ctx, python, "-c", "import numpy, cvxopt; print(cvxopt.__version__)").CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("bench cvxopt: %s cannot import cvxopt and numpy (apt-get install python3-cvxopt python3-numpy): %v: %s",
			python, err, bytes.TrimSpace(out))
	}
	return string(bytes.TrimSpace(out)), nil
}

// CVXOPTRho is the benchmark's ADMM penalty: the best of a coarse grid
// {3e-4, 1e-3, 3e-3, 1e-2, 0.1, 0.3, 1, 3, 10} on the default instance, for
// both losses (for the hinge loss, the starting ρ of the adaptive
// loss-split ADMM); the iteration counts of the grid are in
// docs/performance.md. The solvers' default ρ = 0.1, the paper's, is far
// slower here.
const CVXOPTRho = 1e-3

// CVXOPTRelax is the default over-relaxation of the extra ADMM row: the best
// of 1.6, 1.8 and 1.9 on the default instance (docs/performance.md).
const CVXOPTRelax = 1.8

const (
	cvxbTeacher = 8    // neurons of the planted network
	cvxbNoise   = 0.1  // noise of the regression labels
	cvxbFlip    = 0.05 // fraction of flipped classification labels
)

// cvxbPlanted returns the benchmark's data: X (n×d) with i.i.d. N(0, 1)
// entries and the labels of a planted two-layer ReLU network
// f(x) = Σ_{j=1}^{m} (−1)^{j+1} (x·u_j)_+, m = cvxbTeacher, with unit u_j
// drawn uniformly on the sphere: for regression y_k = f(x_k) + 0.1 ε_k,
// ε_k ~ N(0, 1); for classification y_k = sign(f(x_k) − median f), with a
// fraction cvxbFlip of the labels flipped.
func cvxbPlanted(n, d int, seed uint64) (x *mat.Dense, yReg, yCls []float64) {
	rng := rand.New(rand.NewPCG(seed, 0x5eed_c0de_cafe))
	x = mat.NewDense(n, d, nil)
	raw := x.RawMatrix().Data
	for q := range raw {
		raw[q] = rng.NormFloat64()
	}
	u := make([][]float64, cvxbTeacher)
	for j := range u {
		u[j] = make([]float64, d)
		var s float64
		for l := range u[j] {
			u[j][l] = rng.NormFloat64()
			s += u[j][l] * u[j][l]
		}
		for l := range u[j] {
			u[j][l] /= math.Sqrt(s)
		}
	}
	f := make([]float64, n)
	for k := 0; k < n; k++ {
		row := x.RawRowView(k)
		for j, uj := range u {
			var z float64
			for l, v := range uj {
				z += row[l] * v
			}
			if z > 0 {
				if j%2 == 0 {
					f[k] += z
				} else {
					f[k] -= z
				}
			}
		}
	}
	yReg = make([]float64, n)
	for k := range f {
		yReg[k] = f[k] + cvxbNoise*rng.NormFloat64()
	}
	sorted := append([]float64(nil), f...)
	sort.Float64s(sorted)
	med := sorted[n/2]
	yCls = make([]float64, n)
	for k := range f {
		yCls[k] = 1
		if f[k] < med {
			yCls[k] = -1
		}
		if rng.Float64() < cvxbFlip {
			yCls[k] = -yCls[k]
		}
	}
	return x, yReg, yCls
}

// cvxbJudge tests points against the target.
type cvxbJudge struct {
	p       *solvers.Program
	pstar   float64
	target  float64
	scale   float64 // max_{j,k} |x_kᵀu*_j|
	violTol float64
}

func (j cvxbJudge) relGap(obj float64) float64 { return math.Abs(obj-j.pstar) / math.Abs(j.pstar) }

func (j cvxbJudge) relViol(v float64) float64 {
	if j.scale == 0 {
		return v
	}
	return v / j.scale
}

func (j cvxbJudge) pass(obj, viol float64) bool {
	return j.relGap(obj) <= j.target && j.relViol(viol) <= j.violTol
}

// weights tests the point wt and returns its relative gap and violation.
func (j cvxbJudge) weights(wt solvers.Weights) (gap, viol float64, ok bool, err error) {
	obj, err := j.p.Objective(wt)
	if err != nil {
		return 0, 0, false, err
	}
	v, err := j.p.Violation(wt)
	if err != nil {
		return 0, 0, false, err
	}
	return j.relGap(obj), j.relViol(v), j.pass(obj, v), nil
}

// feasibleGap returns the relative gap of the exactly feasible copy of wt.
func (j cvxbJudge) feasibleGap(ctx context.Context, wt solvers.Weights) (*float64, error) {
	fw, _, err := ipm.RestoreRobust(ctx, j.p, wt, solvers.Perturbation{})
	if err != nil {
		return nil, err
	}
	obj, err := j.p.Objective(fw)
	if err != nil {
		return nil, err
	}
	g := j.relGap(obj)
	return &g, nil
}

// cvxbLoss benchmarks the three solvers on p and prints progress.
func cvxbLoss(ctx context.Context, p *solvers.Program, cfg CVXOPTConfig, stdout io.Writer) (*cvxbLossResult, error) {
	loss := p.Loss.String()
	lr := &cvxbLossResult{Loss: loss}

	// The reference optimum p*: our interior-point method at the tightest
	// tolerance it reaches.
	var ref *ipm.Result
	for _, tol := range []float64{1e-10, 1e-9, 1e-8} {
		r, err := ipm.Solve(ctx, p, ipm.Options{Tol: tol, MaxIter: 200})
		if err != nil {
			return nil, fmt.Errorf("reference interior-point solve: %w", err)
		}
		if r.Status == ipm.Optimal {
			ref, lr.RefTol = r, tol
			break
		}
	}
	if ref == nil {
		return nil, errors.New("reference interior-point solve: not optimal at tolerance 1e-8")
	}
	lr.PStar, lr.RefIterations = ref.Objective, ref.Iterations
	lr.ViolScale = cvxbMaxAbsOutput(p.X, ref.Weights)
	judge := cvxbJudge{p: p, pstar: ref.Objective, target: cfg.Target, scale: lr.ViolScale, violTol: cfg.ViolTol}
	if !(math.Abs(lr.PStar) > 0) {
		return nil, fmt.Errorf("reference optimum p* = %v: a relative gap needs p* ≠ 0", lr.PStar)
	}
	fmt.Fprintf(stdout, "%s loss: p* = %.10g (our IPM, tolerance %g, %d iterations, %.2f s)\n", loss, lr.PStar, lr.RefTol, ref.Iterations, ref.Seconds)

	// CVXOPT: reference optimum, search and timed runs in one process.
	cv, err := cvxbRunCVXOPT(ctx, p, cfg, judge)
	if err != nil {
		return nil, err
	}
	lr.PStarCVXOPT, lr.CVXOPTRefTol, lr.CVXOPTRefStatus = cv.Reference.Objective, cv.Reference.Tolerance, cv.Reference.Status
	lr.PStarRelDiff = math.Abs(lr.PStarCVXOPT-lr.PStar) / math.Abs(lr.PStar)
	lr.CVXOPTSweep, lr.CVXOPTTrajectory = cv.Sweep, cv.Trajectory
	fmt.Fprintf(stdout, "%s loss: p* = %.10g (CVXOPT, %s at tolerance %g, %d iterations, %.1f s); relative difference %.1e\n",
		loss, lr.PStarCVXOPT, cv.Reference.Status, cv.Reference.Tolerance, cv.Reference.Iterations, cv.Reference.SolveSeconds, lr.PStarRelDiff)
	if !(lr.PStarRelDiff <= cvxbPStarAgree) {
		return lr, fmt.Errorf("our interior-point optimum %.12g and CVXOPT's %.12g differ by a relative %.2e > %g: no trustworthy p*",
			lr.PStar, lr.PStarCVXOPT, lr.PStarRelDiff, cvxbPStarAgree)
	}
	cvRow := cvxbSolverRow{Solver: "cvxopt", Method: cvxbCVXOPTMethod(p.Loss)}
	if cv.K > 0 && cv.Hit != nil {
		cvRow.Reached, cvRow.Iterations = true, cv.Hit.Iterations
		cvRow.RelGap, cvRow.RelViolation = cv.Hit.RelGap, cv.Hit.RelViolation
		cvRow.Seconds, cvRow.BuildSeconds = cv.MedianSeconds, cv.MedianBuildSeconds
		for _, r := range cv.Runs {
			cvRow.Times = append(cvRow.Times, r.Total)
		}
		if hw := cv.HitWeights; hw != nil {
			wt, err := cvxbWeights(hw.V, hw.W, p)
			if err != nil {
				return lr, fmt.Errorf("cvxopt's point: %w", err)
			}
			if cvRow.FeasibleRelGap, err = judge.feasibleGap(ctx, wt); err != nil {
				return lr, err
			}
		}
	}
	fmt.Fprintf(stdout, "%s loss: cvxopt reaches the target with maxiters = %d: %.3g s (construction %.3g s)\n", loss, cv.K, cvRow.Seconds, cvRow.BuildSeconds)

	ipmRow, err := cvxbIPM(ctx, judge, cfg.Runs)
	if err != nil {
		return lr, err
	}
	fmt.Fprintf(stdout, "%s loss: our IPM reaches the target in %d iterations: %.3g s\n", loss, ipmRow.Iterations, ipmRow.Seconds)
	rows := []*cvxbSolverRow{&cvRow, &ipmRow}
	relaxes := []float64{1}
	if p.Loss == solvers.SquaredLoss && cfg.Relax != 1 {
		relaxes = append(relaxes, cfg.Relax)
	}
	for _, alpha := range relaxes {
		row, err := cvxbADMM(ctx, judge, cfg, alpha)
		if err != nil {
			return lr, err
		}
		fmt.Fprintf(stdout, "%s loss: %s reaches the target in %d iterations: %.3g s", loss, row.Solver, row.Iterations, row.Seconds)
		if !row.Reached {
			fmt.Fprintf(stdout, " (not reached within %d iterations)", row.Iterations)
		}
		if g := row.GapOnly; g != nil {
			fmt.Fprintf(stdout, " (objective alone: first within the target at iteration %d, %.3g s, relative violation %.1e", g.First.Iterations, g.First.Seconds, g.First.RelViolation)
			if g.Stays != nil {
				fmt.Fprintf(stdout, "; within it from iteration %d on, %.3g s", g.Stays.Iterations, g.Stays.Seconds)
			}
			fmt.Fprint(stdout, ")")
		}
		fmt.Fprintln(stdout)
		rows = append(rows, &row)
	}

	if cvRow.Reached {
		for _, r := range rows {
			if r.Reached && r.Seconds > 0 {
				r.CVXOPTRatio = cvRow.Seconds / r.Seconds
			}
		}
		lr.CVXOPTOverIPM, lr.CVXOPTOverADMM = ipmRow.CVXOPTRatio, rows[2].CVXOPTRatio
		if len(rows) > 3 {
			lr.CVXOPTOverRelaxed = rows[3].CVXOPTRatio
		}
	}
	for _, r := range rows {
		lr.Solvers = append(lr.Solvers, *r)
	}
	return lr, nil
}

// cvxbWeights returns the P×d weights v, w as solvers.Weights for p.
func cvxbWeights(v, w [][]float64, p *solvers.Program) (solvers.Weights, error) {
	_, d, np := p.Dims()
	wt := p.NewWeights()
	for _, m := range []struct {
		rows [][]float64
		dst  *mat.Dense
	}{{v, wt.V}, {w, wt.W}} {
		if len(m.rows) != np {
			return wt, fmt.Errorf("%d groups, want P = %d", len(m.rows), np)
		}
		for i, r := range m.rows {
			if len(r) != d {
				return wt, fmt.Errorf("group %d has %d entries, want d = %d", i, len(r), d)
			}
			m.dst.SetRow(i, r)
		}
	}
	return wt, nil
}

// cvxbMaxAbsOutput returns max_{j,k} |x_kᵀu_j| over the groups u_j of wt
// (the largest entry of X Vᵀ and X Wᵀ; not mat.Norm(·, ∞), which is the
// largest row sum).
func cvxbMaxAbsOutput(x *mat.Dense, wt solvers.Weights) float64 {
	var m float64
	for _, g := range []*mat.Dense{wt.V, wt.W} {
		var z mat.Dense
		z.Mul(x, g.T())
		r, c := z.Dims()
		for k := 0; k < r; k++ {
			for _, v := range z.RawRowView(k)[:c] {
				m = math.Max(m, math.Abs(v))
			}
		}
	}
	return m
}

func cvxbCVXOPTMethod(l solvers.Loss) string {
	if l == solvers.HingeLoss {
		return "conelp (default KKT solver), maxiters = k; time includes the problem construction"
	}
	return "coneqp (default KKT solver), maxiters = k; time includes the problem construction"
}

// cvxbIPM times ipm.Solve to the target: the smallest iteration
// limit k whose returned point passes, by a sweep k = 1, 2, …, then runs
// timed at that k.
func cvxbIPM(ctx context.Context, j cvxbJudge, runs int) (cvxbSolverRow, error) {
	row := cvxbSolverRow{Solver: "ipm (ours)", Method: "ipm.Solve, MaxIter = k"}
	var k int
	for k = 1; k <= 200; k++ {
		r, err := ipm.Solve(ctx, j.p, ipm.Options{MaxIter: k, Tol: 1e-12})
		if err != nil && ctx.Err() != nil {
			return row, err
		}
		if r == nil {
			return row, fmt.Errorf("our IPM with MaxIter %d: %w", k, err)
		}
		gap, viol, ok, err := j.weights(r.Weights)
		if err != nil {
			return row, err
		}
		row.Iterations, row.RelGap, row.RelViolation = r.Iterations, gap, viol
		if ok {
			row.Reached = true
			break
		}
		if r.Status == ipm.Optimal || r.Status == ipm.Inaccurate {
			break // stopped before k: more iterations change nothing
		}
	}
	if !row.Reached {
		return row, nil
	}
	var wt solvers.Weights
	for i := 0; i < runs; i++ {
		t0 := time.Now()
		r, err := ipm.Solve(ctx, j.p, ipm.Options{MaxIter: k, Tol: 1e-12})
		sec := time.Since(t0).Seconds()
		if r == nil {
			return row, err
		}
		row.Times = append(row.Times, sec)
		wt = r.Weights
	}
	row.Seconds = cvxbMedian(row.Times)
	fg, err := j.feasibleGap(ctx, wt)
	if err != nil {
		return row, err
	}
	row.FeasibleRelGap = fg
	return row, nil
}

// cvxbADMM times our ADMM to the target: admm.ClosedForm (closed-form
// u-update, over-relaxed by alpha ≠ 1) for the squared loss, admm.Split for
// the hinge loss.
func cvxbADMM(ctx context.Context, j cvxbJudge, cfg CVXOPTConfig, alpha float64) (cvxbSolverRow, error) {
	rho := cfg.Rho
	row := cvxbSolverRow{Solver: "admm (ours)"}
	v, o := admm.VariantClosedForm, admm.Options{Rho: rho, Relax: alpha}
	row.Method = fmt.Sprintf("admm.ClosedForm (closed-form u-update), ρ = %g; iterate v^k tested at every step; time includes the set-up", rho)
	if alpha != 1 {
		row.Solver = fmt.Sprintf("admm α=%g (ours)", alpha)
		row.Method = fmt.Sprintf("admm.ClosedForm (closed-form u-update) over-relaxed (Eckstein and Bertsekas), α = %g, ρ = %g; iterate v^k tested at every step; time includes the set-up", alpha, rho)
	}
	if j.p.Loss != solvers.SquaredLoss {
		v, o = admm.VariantSplit, admm.Options{Rho: rho}
		row.Method = fmt.Sprintf("admm.Split (loss split, adaptive ρ from %g); iterate v^k tested at every step; time includes the set-up", rho)
	}
	newSolver := func() (admm.Solver, error) { return admm.New(j.p, solvers.Perturbation{}, v, o, nil) }
	var last solvers.Weights
	var gapOnly []cvxbGapOnly
	for i := 0; i < cfg.Runs; i++ {
		t0 := time.Now()
		a, err := newSolver()
		if err != nil {
			return row, err
		}
		var s admm.Step
		var g *cvxbGapOnly
		var stays *cvxbGapPoint // candidate: the first iterate within the target since the last one outside
		reached := false
		for it := 0; it < cfg.ADMMMaxIter; it++ {
			if it%64 == 0 {
				if err := ctx.Err(); err != nil {
					return row, err
				}
			}
			s = a.Step()
			within := j.relGap(s.ConvexObjective) <= j.target
			if within && stays == nil {
				stays = &cvxbGapPoint{Iterations: s.Iter, Seconds: time.Since(t0).Seconds(),
					RelGap: j.relGap(s.ConvexObjective), RelViolation: j.relViol(s.Violation)}
				if g == nil {
					g = &cvxbGapOnly{First: *stays}
				}
			}
			if !within {
				stays = nil
			}
			if j.pass(s.ConvexObjective, s.Violation) {
				reached = true
				break
			}
		}
		sec := time.Since(t0).Seconds()
		if g == nil {
			g = &cvxbGapOnly{First: cvxbGapPoint{Iterations: s.Iter, Seconds: sec, RelGap: j.relGap(s.ConvexObjective), RelViolation: j.relViol(s.Violation)}}
		}
		g.Stays = stays
		gapOnly = append(gapOnly, *g)
		row.Iterations, row.RelGap, row.RelViolation = s.Iter, j.relGap(s.ConvexObjective), j.relViol(s.Violation)
		if !reached {
			row.Reached, row.GapOnly = false, g
			return row, nil
		}
		row.Reached = true
		row.Times = append(row.Times, sec)
		last = a.Weights()
	}
	row.Seconds = cvxbMedian(row.Times)
	for q, t := range row.Times {
		if t == row.Seconds || q == len(row.Times)-1 {
			row.GapOnly = &gapOnly[q]
			break
		}
	}
	fg, err := j.feasibleGap(ctx, last)
	if err != nil {
		return row, err
	}
	row.FeasibleRelGap = fg
	return row, nil
}

// cvxbCVXOPTOut is the output of bench/cvxopt_convex.py.
type cvxbCVXOPTOut struct {
	Reference struct {
		Status       string  `json:"status"`
		Objective    float64 `json:"objective"`
		Iterations   int     `json:"iterations"`
		Tolerance    float64 `json:"tolerance"`
		Violation    float64 `json:"violation"`
		SolveSeconds float64 `json:"solve_seconds"`
	} `json:"reference"`
	Trajectory json.RawMessage `json:"trajectory"`
	Sweep      json.RawMessage `json:"sweep"`
	K          int             `json:"k"`
	Hit        *struct {
		Iterations   int     `json:"iterations"`
		RelGap       float64 `json:"rel_gap"`
		RelViolation float64 `json:"rel_violation"`
	} `json:"hit"`
	HitWeights *struct {
		V [][]float64 `json:"v"`
		W [][]float64 `json:"w"`
	} `json:"hit_weights"`
	Runs []struct {
		Build float64 `json:"build"`
		Solve float64 `json:"solve"`
		Total float64 `json:"total"`
	} `json:"runs"`
	MedianSeconds      float64 `json:"median_seconds"`
	MedianBuildSeconds float64 `json:"median_build_seconds"`
}

// cvxbRunCVXOPT runs the CVXOPT script on p.
func cvxbRunCVXOPT(ctx context.Context, p *solvers.Program, cfg CVXOPTConfig, j cvxbJudge) (*cvxbCVXOPTOut, error) {
	in := struct {
		solvers.ProgramRows
		PStar     float64 `json:"pstar"`
		Target    float64 `json:"target"`
		ViolScale float64 `json:"viol_scale"`
		ViolTol   float64 `json:"viol_tol"`
		Runs      int     `json:"runs"`
		MaxK      int     `json:"max_k"`
	}{ProgramRows: p.Rows(), PStar: j.pstar, Target: j.target, ViolScale: j.scale,
		ViolTol: j.violTol, Runs: cfg.Runs, MaxK: 200}
	var res cvxbCVXOPTOut
	if err := runPythonJSON(ctx, cfg.Python, cfg.Script, nil, in, &res); err != nil {
		return nil, err
	}
	return &res, nil
}

// runPythonJSON runs a peer's script with python (extra environment env),
// its input in as JSON on stdin, and decodes its JSON output into out.
func runPythonJSON(ctx context.Context, python, script string, env []string, in, out any) error {
	js, err := json.Marshal(in)
	if err != nil {
		return err
	}
	cmd := exec.CommandContext(ctx, python, script)
	cmd.Stdin = bytes.NewReader(js)
	if env != nil {
		cmd.Env = append(os.Environ(), env...)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	raw, err := cmd.Output()
	if err != nil {
		return fmt.Errorf("%s %s: %v: %s", python, script, err, bytes.TrimSpace(stderr.Bytes()))
	}
	if err := json.Unmarshal(raw, out); err != nil {
		return fmt.Errorf("%s output %q: %v", script, cvxbClip(raw), err)
	}
	return nil
}

func cvxbClip(b []byte) string {
	if len(b) > 200 {
		return string(b[:200]) + "…"
	}
	return string(b)
}

// cvxbMedian returns the median of v (the mean of the middle two for an
// even count).
func cvxbMedian(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	m := len(s) / 2
	if len(s)%2 == 1 {
		return s[m]
	}
	return (s[m-1] + s[m]) / 2
}

// cvxbPrintTable prints the benchmark's table.
func cvxbPrintTable(w io.Writer, losses []cvxbLossResult) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "loss\tsolver\titerations\tseconds (median)\trel. gap\trel. violation\tfeasible copy gap\tcvxopt time / this\t")
	for _, l := range losses {
		for _, s := range l.Solvers {
			it, sec, ratio := "-", "not reached", "-"
			if s.Reached {
				it, sec = fmt.Sprint(s.Iterations), fmt.Sprintf("%.4g", s.Seconds)
				if s.CVXOPTRatio > 0 {
					ratio = fmt.Sprintf("%.3g×", s.CVXOPTRatio)
				}
			} else if s.Iterations > 0 {
				it = fmt.Sprintf("%d (cap)", s.Iterations)
			}
			fg := "-"
			if s.FeasibleRelGap != nil {
				fg = fmt.Sprintf("%.2e", *s.FeasibleRelGap)
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%.2e\t%.2e\t%s\t%s\t\n", l.Loss, s.Solver, it, sec, s.RelGap, s.RelViolation, fg, ratio)
		}
	}
	tw.Flush()
	for _, l := range losses {
		relaxed := ""
		if l.CVXOPTOverRelaxed > 0 {
			relaxed = fmt.Sprintf(", over-relaxed = %s", cvxbRatio(l.CVXOPTOverRelaxed))
		}
		fmt.Fprintf(w, "%s loss: cvxopt time / our IPM time = %s, cvxopt time / our ADMM time = %s%s (goal: ADMM ≥ 100× faster: %s)\n",
			l.Loss, cvxbRatio(l.CVXOPTOverIPM), cvxbRatio(l.CVXOPTOverADMM), relaxed, cvxbGoal(math.Max(l.CVXOPTOverADMM, l.CVXOPTOverRelaxed)))
	}
}

func cvxbRatio(r float64) string {
	if r == 0 {
		return "n/a"
	}
	return fmt.Sprintf("%.3g", r)
}

func cvxbGoal(r float64) string {
	switch {
	case r == 0:
		return "not measured"
	case r >= 100:
		return "met"
	}
	return "NOT met"
}

// benchScript returns the peer's script of `convexnn bench peer`: script
// when given (the -script flag), else bench/<name> in the repository, and
// checks that it exists.
func benchScript(peer, script, name string) (string, error) {
	if script == "" {
		root, err := repo.Root()
		if err != nil {
			return "", fmt.Errorf("bench %s: finding bench/%s: %w (or pass -script)", peer, name, err)
		}
		script = filepath.Join(root, "bench", name)
	}
	if _, err := os.Stat(script); err != nil {
		return "", fmt.Errorf("bench %s: the script: %w", peer, err)
	}
	return script, nil
}
