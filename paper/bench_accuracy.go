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
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/convexnn/convexnn/data"
	"github.com/convexnn/convexnn/solvers"
	"github.com/convexnn/convexnn/solvers/admm"
	"github.com/convexnn/convexnn/solvers/certify"
	"github.com/convexnn/convexnn/solvers/cnn"
	"github.com/convexnn/convexnn/solvers/ipm"
	"github.com/convexnn/convexnn/solvers/scp"
	"gonum.org/v1/gonum/mat"
)

// AccuracyConfig are the settings of `convexnn bench accuracy`.
type AccuracyConfig struct {
	// Families names the instances (AccuracyFamilies); empty means every
	// family that is not paper scale.
	Families []string `json:"families"`
	// Size is SizePaper (the sizes) or SizeSmall (tiny instances
	// of the same families, seconds in all).
	Size Size `json:"size"`
	// Targets are the certified relative gaps to time, loosest first.
	Targets []float64 `json:"targets"`
	// Seconds caps each of our solvers on each instance; PeerSeconds caps
	// each CVXOPT run.
	Seconds     float64 `json:"seconds"`
	PeerSeconds float64 `json:"peer_seconds"`
	// Iterations, when positive, also caps the iterative solvers' steps
	// (ADMM, the CNN's ADMM splitting, FISTA) per instance: tests set it so
	// that their outcome does not hang on the machine's load; the
	// benchmark leaves it 0 (the time cap only).
	Iterations int `json:"iterations,omitempty"`
	// Solvers restricts the solvers run (AccuracySolvers); empty means all.
	Solvers []string    `json:"solvers"`
	Python  string      `json:"python"`
	Script  string      `json:"script"`
	Source  data.Source `json:"-"`
}

// DefaultAccuracyConfig returns the defaults: the targets 1e-4 and 1e-6,
// 120 s per solver and instance, 600 s per CVXOPT run.
func DefaultAccuracyConfig() AccuracyConfig {
	return AccuracyConfig{Size: SizePaper, Targets: []float64{1e-4, 1e-6}, Seconds: 120, PeerSeconds: 600,
		Python: DebianPython, Source: data.DefaultSource()}
}

// The solvers of the accuracy benchmark.
const (
	AccIPM        = "ipm"
	AccWorkingSet = "working-set"
	AccNewton     = "newton"
	AccFISTA      = "fista"
	AccADMM       = "admm"
	AccCVXOPT     = "cvxopt"
)

// AccuracySolvers lists the solvers `bench accuracy` runs.
func AccuracySolvers() []string {
	return []string{AccIPM, AccWorkingSet, AccNewton, AccADMM, AccFISTA, AccCVXOPT}
}

// accFamily is one instance of the accuracy benchmark.
type accFamily struct {
	name  string
	paper bool // paper scale: run only when named
	build func(ctx context.Context, size Size, src data.Source) (*accInstance, error)
}

type accInstance struct {
	about string
	prog  *solvers.Program
	pert  solvers.Perturbation
	scp   *accSCP // a sampled convex program, eq. (SCP2), instead of prog
	cnn   *accCNN // a robust CNN program, instead of prog
}

// accCNN is the robust program of a two-layer CNN at radius eps (ℓ∞).
type accCNN struct {
	p   *cnn.Problem
	eps float64
}

// accSCP is eq. (SCP2): minimize ℓ(Hα) + β‖α‖₁ on sampled ReLU features.
type accSCP struct {
	h    *mat.Dense
	y    []float64
	loss solvers.Loss
	beta float64
}

// AccuracyFamilies lists the instance families of `bench accuracy`; paper
// reports which are paper scale (run only when named).
func AccuracyFamilies() (names []string, paper []bool) {
	for _, f := range accFamilies() {
		names, paper = append(names, f.name), append(paper, f.paper)
	}
	return names, paper
}

// accFamilies returns the families: small planted programs (every loss,
// standard and robust ℓ∞/ℓ2), mid-size MNIST programs (squared, hinge, BCE;
// robust hinge and squared, ε = 0.02), fig. 2D-toy, and the paper-scale
// Table 2 and Table 5 programs, and Table 5's set for the appendix's
// robust CNN.
func accFamilies() []accFamily {
	var fs []accFamily
	losses := []solvers.Loss{solvers.SquaredLoss, solvers.HingeLoss, solvers.BCELoss, solvers.LogisticLoss}
	for _, l := range losses {
		fs = append(fs, accFamily{name: "small-" + l.String(), build: accSmall(l, solvers.Perturbation{})})
	}
	for _, nm := range []solvers.Norm{solvers.LInf, solvers.L2} {
		for _, l := range losses {
			fs = append(fs, accFamily{name: fmt.Sprintf("small-robust-%s-%s", l, nm), build: accSmall(l, solvers.Perturbation{Eps: 0.05, Norm: nm})})
		}
	}
	for _, m := range []struct {
		loss solvers.Loss
		beta float64
		eps  float64
	}{{solvers.SquaredLoss, 1e-3, 0}, {solvers.HingeLoss, 1e-4, 0}, {solvers.BCELoss, 1e-3, 0}, {solvers.HingeLoss, 1e-4, 0.02}, {solvers.SquaredLoss, 1e-3, 0.02}} {
		name := "mid-" + m.loss.String()
		if m.eps > 0 {
			name = "mid-robust-" + m.loss.String() + "-inf"
		}
		fs = append(fs, accFamily{name: name, build: accMid(m.loss, m.beta, m.eps)})
	}
	fs = append(fs, accFamily{name: "scp-fmnist-ds", build: accSCPFashion},
		accFamily{name: "toy-robust-hinge", build: accToy},
		accFamily{name: "table2-squared", paper: true, build: accTable2},
		accFamily{name: "table5-robust-hinge", paper: true, build: accTable5},
		accFamily{name: "table5-cnn-robust-hinge", paper: true, build: accTable5CNN})
	return fs
}

// accSmall: cvxbPlanted's data (n = 200, d = 10, P = 60; small size 40, 4,
// 8), β = 10⁻³, labels ±1 (0/1 for BCE).
func accSmall(loss solvers.Loss, pert solvers.Perturbation) func(context.Context, Size, data.Source) (*accInstance, error) {
	return func(_ context.Context, size Size, _ data.Source) (*accInstance, error) {
		n, d, ps := 200, 10, 60
		if size == SizeSmall {
			n, d, ps = 40, 4, 8
		}
		x, yReg, yCls := cvxbPlanted(n, d, 1)
		y := yCls
		switch loss {
		case solvers.SquaredLoss:
			y = yReg
		case solvers.BCELoss:
			y = make([]float64, n)
			for k, v := range yCls {
				y[k] = (v + 1) / 2
			}
		}
		pats, err := solvers.SamplePatterns(x, ps, 1, 0)
		if err != nil {
			return nil, err
		}
		about := fmt.Sprintf("planted network (bench cvxopt's data, seed 1), n = %d, d = %d, P = %d, β = 1e-3", n, d, len(pats))
		if pert.Eps > 0 {
			about += ", " + pert.String()
		}
		return &accInstance{about: about, prog: &solvers.Program{X: x, Y: y, Loss: loss, Beta: 1e-3, D: pats}, pert: pert}, nil
	}
}

// accMid: 2000 MNIST 2-vs-8 training images (seed 1) resized to 7×7 plus a
// bias column (d = 50), P = 48 (small size: 300 images, 4×4, P = 12).
func accMid(loss solvers.Loss, beta, eps float64) func(context.Context, Size, data.Source) (*accInstance, error) {
	return func(ctx context.Context, size Size, src data.Source) (*accInstance, error) {
		n, side, ps := 2000, 7, 48
		if size == SizeSmall {
			n, side, ps = 300, 4, 12
		}
		lab := data.PlusMinus
		if loss == solvers.BCELoss {
			lab = data.ZeroOne
		}
		sp, err := data.Paper(ctx, "mnist-2-8", src, lab)
		if err != nil {
			return nil, err
		}
		tr, err := sp.Train.Subsample(n, 1)
		if err != nil {
			return nil, err
		}
		if tr, err = tr.Resize(side, side); err != nil {
			return nil, err
		}
		if tr, err = tr.AddBias(); err != nil {
			return nil, err
		}
		var pert solvers.Perturbation
		var pats solvers.Patterns
		if eps > 0 {
			pert = solvers.Perturbation{Eps: eps, Norm: solvers.LInf}
			pats, err = solvers.SampleRobustPatterns(tr.X, true, 10*ps, 1, pert, ps, 1, 0)
		} else {
			pats, err = solvers.SamplePatterns(tr.X, ps, 1, 0)
		}
		if err != nil {
			return nil, err
		}
		_, d := tr.Dims()
		about := fmt.Sprintf("MNIST 2 vs 8, %d training images resized to %d×%d plus a bias (d = %d), P = %d, β = %g", n, side, side, d, len(pats), beta)
		if eps > 0 {
			about += ", " + pert.String() + " on pixels in [0, 1] (patterns by alg. adv_train, P_a = 10 P, S = 1)"
		}
		return &accInstance{about: about, prog: &solvers.Program{X: tr.X, Y: tr.Y, Loss: loss, Beta: beta, D: pats, Bias: true}, pert: pert}, nil
	}
}

// accSCPFashion: eq. (SCP2) with the squared loss on 2000 Fashion-MNIST
// pullover/bag training images downsampled with stride 2 (d = 196, seed 1),
// N = 3000 neurons uniform on the sphere (seed 1), β = 0.1 (small size:
// 300 images, N = 400).
func accSCPFashion(ctx context.Context, size Size, src data.Source) (*accInstance, error) {
	n, nf := 2000, 3000
	if size == SizeSmall {
		n, nf = 300, 400
	}
	sp, err := data.Paper(ctx, "fashion-pullover-bag-ds", src, data.PlusMinus)
	if err != nil {
		return nil, err
	}
	tr, err := sp.Train.Subsample(n, 1)
	if err != nil {
		return nil, err
	}
	_, d := tr.Dims()
	u, err := scp.SampleSphere(d, nf, 1)
	if err != nil {
		return nil, err
	}
	h, err := scp.ReLUFeatures(tr.X, u)
	if err != nil {
		return nil, err
	}
	return &accInstance{about: fmt.Sprintf("eq. (SCP2), squared loss: Fashion-MNIST pullover vs bag, %d images at stride 2 (d = %d), N = %d sampled neurons, β = 0.1", n, d, nf),
		scp: &accSCP{h: h, y: tr.Y, loss: solvers.SquaredLoss, beta: 0.1}}, nil
}

// accToy: fig. 2D-toy, the 34 points of data.Toy2D(1) with a bias, robust
// hinge, ε = 0.08 (ℓ∞), β = 1e-4, 32 patterns by alg. adv_train.
func accToy(_ context.Context, size Size, _ data.Source) (*accInstance, error) {
	x, y := data.Toy2D(1)
	set := &data.Set{X: x, Y: y}
	set, err := set.AddBias()
	if err != nil {
		return nil, err
	}
	pert := solvers.Perturbation{Eps: 0.08, Norm: solvers.LInf}
	ps := 32
	if size == SizeSmall {
		ps = 8
	}
	pats, err := solvers.SampleRobustPatterns(set.X, true, ps, 8, pert, ps, 1, 0)
	if err != nil {
		return nil, err
	}
	return &accInstance{about: fmt.Sprintf("fig. 2D-toy: data.Toy2D(1), 34 points plus a bias, %s, β = 1e-4, P = %d (alg. adv_train, S = 8)", pert, len(pats)),
		prog: &solvers.Program{X: set.X, Y: set.Y, Loss: solvers.HingeLoss, Beta: 1e-4, D: pats, Bias: true}, pert: pert}, nil
}

// accTable2: Table 2's program: MNIST 2 vs 8 (n = 11809, d = 784), squared
// loss, β = 1e-3, P_s = 24 (small size: 400 images, stride 2, P = 6).
func accTable2(ctx context.Context, size Size, src data.Source) (*accInstance, error) {
	sp, err := data.Paper(ctx, "mnist-2-8", src, data.PlusMinus)
	if err != nil {
		return nil, err
	}
	tr, ps := sp.Train, 24
	if size == SizeSmall {
		if tr, err = tr.Subsample(400, 1); err != nil {
			return nil, err
		}
		if tr, err = tr.Stride(2); err != nil {
			return nil, err
		}
		ps = 6
	}
	pats, err := solvers.SamplePatterns(tr.X, ps, 1, 0)
	if err != nil {
		return nil, err
	}
	n, d := tr.Dims()
	return &accInstance{about: fmt.Sprintf("Table 2: MNIST 2 vs 8, n = %d, d = %d, squared loss, β = 1e-3, P = %d", n, d, len(pats)),
		prog: &solvers.Program{X: tr.X, Y: tr.Y, Loss: solvers.SquaredLoss, Beta: 1e-3, D: pats}}, nil
}

// accTable5: Table 5's robust program: 600 CIFAR-10 bird/ship images at
// 7×7×3 plus a bias (d = 148), robust hinge, ε = 10/255 (ℓ∞), β = 1e-4,
// P_s = 36 patterns by alg. adv_train (S = 1) (small size: 100 images,
// P = 6).
func accTable5(ctx context.Context, size Size, src data.Source) (*accInstance, error) {
	sp, err := data.Paper(ctx, "cifar-bird-ship-600", src, data.PlusMinus)
	if err != nil {
		return nil, err
	}
	tr, ps := sp.Train, 36
	if size == SizeSmall {
		if tr, err = tr.Subsample(100, 1); err != nil {
			return nil, err
		}
		ps = 6
	}
	if tr, err = tr.AddBias(); err != nil {
		return nil, err
	}
	pert := solvers.Perturbation{Eps: 10.0 / 255, Norm: solvers.LInf}
	pats, err := solvers.SampleRobustPatterns(tr.X, true, 10*ps, 1, pert, ps, 1, 0)
	if err != nil {
		return nil, err
	}
	n, d := tr.Dims()
	return &accInstance{about: fmt.Sprintf("Table 5: CIFAR-10 bird vs ship, n = %d, d = %d (with the bias), robust hinge, %s, β = 1e-4, P = %d (alg. adv_train, P_a = 10 P_s, S = 1)", n, d, pert, len(pats)),
		prog: &solvers.Program{X: tr.X, Y: tr.Y, Loss: solvers.HingeLoss, Beta: 1e-4, D: pats, Bias: true}, pert: pert}, nil
}

// accTable5CNN: the appendix's robust CNN on Table 5's set: 600 CIFAR-10
// bird/ship images at 7×7×3, 3×3 filters with biases, stride 2, average
// pooling, robust hinge, ε = 10/255 (ℓ∞), β = 1e-3, 4 sampled patterns
// (small size: 12 images).
func accTable5CNN(ctx context.Context, size Size, src data.Source) (*accInstance, error) {
	sp, err := data.Paper(ctx, "cifar-bird-ship-600", src, data.PlusMinus)
	if err != nil {
		return nil, err
	}
	tr := sp.Train
	if size == SizeSmall {
		if tr, err = tr.Subsample(12, 1); err != nil {
			return nil, err
		}
	}
	p, err := cnn.New(tr.X, cnn.Shape{C: 3, H: 7, W: 7}, cnn.Conv{Size: 3, Stride: 2, Bias: true}, cnn.AvgPool, tr.Y, solvers.HingeLoss, 1e-3)
	if err != nil {
		return nil, err
	}
	if _, err := p.SamplePatterns(4, 1); err != nil {
		return nil, err
	}
	n, _ := tr.Dims()
	eps := 10.0 / 255
	return &accInstance{about: fmt.Sprintf("robust CNN on Table 5's set: n = %d CIFAR-10 bird vs ship images at 7×7×3, 3×3 filters with biases, stride 2, average pooling, robust hinge, ε = %.4g (ℓ∞), β = 1e-3, 4 patterns", n, eps),
		cnn: &accCNN{p: p, eps: eps}}, nil
}

// cnnInstance runs a robust CNN instance: ipm is cnn.Problem.SolveRobust,
// one run per target at tolerance target/100; admm is its ADMM splitting
// (cnn.Problem.SolveRobustADMM), one run certified every 100 steps. CVXOPT
// does not run on CNN programs.
func (cfg AccuracyConfig) cnnInstance(ctx context.Context, name string, in *accInstance, stdout io.Writer) (AccInstanceResult, error) {
	q := in.cnn
	n, _ := q.p.X.Dims()
	r := AccInstanceResult{Name: name, About: in.about, Dims: [3]int{n, q.p.Filter(), len(q.p.Signs)}, Lower: accNum(math.Inf(-1)), Upper: accNum(math.Inf(1))}
	fmt.Fprintf(stdout, "%s: %s\n", name, in.about)
	if cfg.runs(AccIPM) {
		row := AccSolver{Solver: AccIPM, Method: "cnn.Problem.SolveRobust (dense cone program), Tol = target/100", Lower: accNum(math.NaN()), Upper: accNum(math.NaN()), Gap: accNum(math.NaN())}
		t0 := time.Now()
		for _, target := range cfg.Targets {
			tc, cancel := context.WithTimeout(ctx, time.Duration(cfg.Seconds*float64(time.Second)))
			start := time.Now()
			res, err := q.p.SolveRobust(tc, q.eps, target/100)
			cancel()
			if err != nil {
				if ctx.Err() != nil {
					return r, ctx.Err()
				}
				row.Note = err.Error()
				break
			}
			row.record(target, res.Iterations, res.Lower, res.Upper, res.CertifiedGap, start)
		}
		row.Seconds = time.Since(t0).Seconds()
		r.add(stdout, row)
	}
	if cfg.runs(AccADMM) {
		row := AccSolver{Solver: AccADMM, Method: "cnn.Problem.SolveRobustADMM (general.ConeADMM), certified every 100 steps", Targets: accTargets(cfg.Targets), Lower: accNum(math.NaN()), Upper: accNum(math.NaN()), Gap: accNum(math.NaN())}
		t0 := time.Now()
		tc, cancel := context.WithTimeout(ctx, time.Duration(cfg.Seconds*float64(time.Second)))
		res, err := q.p.SolveRobustADMM(tc, q.eps, cnn.RobustADMMOptions{Gap: slices.Min(cfg.Targets), MaxIter: cfg.maxIter(), Progress: func(it cnn.RobustIterate) {
			accReach(row.Targets, it.Gap, it.Iter, t0)
		}})
		cancel()
		if res == nil {
			if ctx.Err() != nil {
				return r, ctx.Err()
			}
			return r, err
		}
		switch {
		case ctx.Err() != nil:
		case err != nil:
			row.Note = fmt.Sprintf("stopped at the time cap after %d steps", res.Iterations)
		case res.CertifiedGap > slices.Min(cfg.Targets):
			row.Note = fmt.Sprintf("stopped at the step cap after %d steps", res.Iterations)
		}
		row.Lower, row.Upper, row.Gap = accNum(res.Lower), accNum(res.Upper), accNum(res.CertifiedGap)
		row.Seconds = time.Since(t0).Seconds()
		r.add(stdout, row)
	}
	if lo, up := float64(r.Lower), float64(r.Upper); lo > up+1e-9*math.Max(1, math.Abs(up)) {
		return r, fmt.Errorf("%w: lower bound %.12g above upper bound %.12g", errAccCertificates, r.Lower, r.Upper)
	}
	return r, ctx.Err()
}

// accNum is a float64 written to JSON as null when it is not finite (no
// bound, no gap).
type accNum float64

func (v accNum) MarshalJSON() ([]byte, error) {
	if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
		return []byte("null"), nil
	}
	return json.Marshal(float64(v))
}

// AccTarget is the time one solver took to a certified relative gap.
type AccTarget struct {
	Target float64 `json:"target"`
	// Seconds is nil when the target was not reached.
	Seconds    *float64 `json:"seconds"`
	Iterations int      `json:"iterations,omitempty"`
	Gap        accNum   `json:"certified_gap"` // at the point returned for this target (null: none)
	// AtLeast, for CVXOPT stopped at its time cap, is the time it had
	// spent on the target without reaching it (its runs', the capped one
	// counted at the cap): a lower bound of its time to the target.
	AtLeast float64 `json:"seconds_at_least,omitempty"`
}

// AccSolver is one solver's row on one instance.
type AccSolver struct {
	Solver  string      `json:"solver"`
	Method  string      `json:"method"`
	Targets []AccTarget `json:"targets"`
	// Lower and Upper are the bounds of its last certificate (NaN: none).
	Lower accNum `json:"lower_bound"`
	Upper accNum `json:"upper_bound"`
	// Gap is its last certified gap; for CVXOPT, (its point's upper bound
	// − the best lower bound of our solvers)/|upper|.
	Gap     accNum  `json:"certified_gap"`
	Seconds float64 `json:"seconds"`
	Note    string  `json:"note,omitempty"`
}

// AccInstanceResult is one instance of the benchmark.
type AccInstanceResult struct {
	Name    string      `json:"name"`
	About   string      `json:"about"`
	Dims    [3]int      `json:"n_d_P"`
	Lower   accNum      `json:"best_lower_bound"`
	Upper   accNum      `json:"best_upper_bound"`
	Solvers []AccSolver `json:"solvers"`
}

type accResult struct {
	Config     AccuracyConfig      `json:"config"`
	GOMAXPROCS int                 `json:"gomaxprocs"`
	BLAS       string              `json:"blas"`
	CVXOPT     string              `json:"cvxopt_version,omitempty"`
	Notes      []string            `json:"notes"`
	Instances  []AccInstanceResult `json:"instances"`
	Seconds    float64             `json:"total_seconds"`
}

// errAccCertificates is returned when two solvers' certificates on one
// instance contradict each other (a lower bound above an upper bound).
var errAccCertificates = errors.New("certificates disagree")

// BenchAccuracy is `convexnn bench accuracy`: for each instance family and
// each solver, the time to a certified relative gap (upper − lower)/|upper|
// ≤ each target (solvers/certify: a lower bound from a dual-feasible point,
// an upper bound from the point made feasible), or where it stalls within
// cfg.Seconds:
//
//   - ipm: ipm.Solve (squared and hinge) or ipm.SolveRobust (every loss), one run per
//     target with Tol = min(1e-8, target/10), certified with its
//     multipliers; a program over the memory limit is refused and noted;
//   - working-set: ipm.WorkingSet to the target (squared and hinge);
//   - newton: ipm.Newton, the proximal Newton method (BCE and logistic);
//   - on the sampled convex program eq. (SCP2) (family scp-…): ipm, the
//     interior-point method scp.SolveInteriorPoint, one run per target with
//     Tol = target/1000, and fista, FISTA with its duality gap every
//     iteration, both certified by that duality gap;
//   - admm: the default variant (admm.ChooseVariant), residual tolerance
//     off, certified every 25 iterations (admm.SolveToGap), the targets in
//     turn on one run;
//   - cvxopt: Debian's python3-cvxopt (bench/cvxopt_convex.py, mode
//     "tolerance": conelp for the hinge loss, coneqp for the squared loss,
//     cp for BCE and logistic; the robust programs with epigraph variables
//     for the dual norms, its default KKT solvers), a run per target at
//     abstol = reltol = feastol = target/10 and, where its point misses the
//     target, one at target/1000, each capped at cfg.PeerSeconds; its point
//     is certified by its upper bound against the best lower bound of our
//     solvers on the instance.
//
// Every lower bound of every solver must lie below every upper bound on the
// same instance (else the benchmark fails: a wrong certificate). It prints
// a table and writes <outDir>/accuracy/result.json.
func BenchAccuracy(ctx context.Context, cfg AccuracyConfig, outDir string, stdout io.Writer) error {
	start := time.Now()
	if err := CheckAccuracyConfig(cfg); err != nil {
		return err
	}
	fams, err := cfg.families()
	if err != nil {
		return err
	}
	res := accResult{Config: cfg, GOMAXPROCS: runtime.GOMAXPROCS(0), BLAS: solvers.BLAS()}
	if cfg.runs(AccCVXOPT) {
		if cfg.Script, err = benchScript("accuracy", cfg.Script, "cvxopt_convex.py"); err != nil {
			return err
		}
		if res.CVXOPT, err = cvxbCheckPython(ctx, cfg.Python); err != nil {
			return err
		}
		res.Config.Script = cfg.Script
	}
	res.Notes = []string{
		"certified gap: (upper − lower)/|upper| from solvers/certify (lower: a dual-feasible point from the solver's multipliers, refined by 20 projected-gradient steps; upper: the objective of the point made feasible)",
		"ipm: one run per target with Tol = min(1e-8, target/10); time includes the certificate",
		"admm: one run, certified every 25 iterations; the time of the first certificate at or below each target",
		"cvxopt: time measured in its script (problem construction and solve), one run at tolerance target/10 and, where its point misses the target, one at target/1000; its point's gap is against the best lower bound of our solvers",
		"table5-cnn-robust-hinge (the appendix's robust CNN): ipm is cnn.Problem.SolveRobust, one run per target at Tol = target/100; admm its ADMM splitting, one run certified every 100 steps; CVXOPT does not run on it",
		fmt.Sprintf("each of our solvers is capped at %g s per instance, each CVXOPT run at %g s", cfg.Seconds, cfg.PeerSeconds),
	}
	dir := filepath.Join(outDir, "accuracy")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "bench accuracy: %d instance families, targets %v, %g s per solver; GOMAXPROCS %d, BLAS %s\n",
		len(fams), cfg.Targets, cfg.Seconds, res.GOMAXPROCS, res.BLAS)
	var failure error
	for _, f := range fams {
		if err := ctx.Err(); err != nil {
			failure = err
			break
		}
		in, err := f.build(ctx, cfg.Size, cfg.Source)
		if err != nil {
			failure = fmt.Errorf("bench accuracy: %s: %w", f.name, err)
			break
		}
		r, err := cfg.instance(ctx, f.name, in, stdout)
		res.Instances = append(res.Instances, r)
		if err != nil {
			failure = fmt.Errorf("bench accuracy: %s: %w", f.name, err)
			break
		}
	}
	accPrintTable(stdout, res.Instances, cfg.Targets)
	res.Seconds = time.Since(start).Seconds()
	path := filepath.Join(dir, "result.json")
	if err := writeJSON(path, res); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "wrote %s (%.0f s)\n", path, res.Seconds)
	return failure
}

func (cfg AccuracyConfig) families() ([]accFamily, error) {
	all := accFamilies()
	if len(cfg.Families) == 0 {
		var fs []accFamily
		for _, f := range all {
			if !f.paper {
				fs = append(fs, f)
			}
		}
		return fs, nil
	}
	var fs []accFamily
	for _, name := range cfg.Families {
		i := slices.IndexFunc(all, func(f accFamily) bool { return f.name == name })
		if i < 0 {
			names, _ := AccuracyFamilies()
			return nil, fmt.Errorf("bench accuracy: unknown instance family %q; known: %s", name, strings.Join(names, ", "))
		}
		fs = append(fs, all[i])
	}
	return fs, nil
}

// CheckAccuracyConfig reports what is wrong with cfg: an unknown family or
// solver, a target gap outside (0, 1) or targets not loosest first, a time
// cap that is not positive and finite, a size other than paper or small.
func CheckAccuracyConfig(cfg AccuracyConfig) error {
	if _, err := cfg.families(); err != nil {
		return err
	}
	if len(cfg.Targets) == 0 {
		return errors.New("bench accuracy: no target gap")
	}
	for i, t := range cfg.Targets {
		if !(t > 0 && t < 1) {
			return fmt.Errorf("bench accuracy: target gap %v: need 0 < gap < 1", t)
		}
		if i > 0 && t >= cfg.Targets[i-1] {
			return fmt.Errorf("bench accuracy: targets %v: list them loosest first", cfg.Targets)
		}
	}
	if !(cfg.Seconds > 0) || !(cfg.PeerSeconds > 0) || math.IsInf(cfg.Seconds, 0) || math.IsInf(cfg.PeerSeconds, 0) {
		return fmt.Errorf("bench accuracy: time caps %g s, %g s: need positive and finite", cfg.Seconds, cfg.PeerSeconds)
	}
	if cfg.Iterations < 0 {
		return fmt.Errorf("bench accuracy: step cap %d: need ≥ 0 (0: none)", cfg.Iterations)
	}
	for _, s := range cfg.Solvers {
		if !slices.Contains(AccuracySolvers(), s) {
			return fmt.Errorf("bench accuracy: unknown solver %q; known: %s", s, strings.Join(AccuracySolvers(), ", "))
		}
	}
	if cfg.Size != SizePaper && cfg.Size != SizeSmall {
		return fmt.Errorf("bench accuracy: size %q: want paper or small", cfg.Size)
	}
	return nil
}

func (cfg AccuracyConfig) runs(solver string) bool {
	return len(cfg.Solvers) == 0 || slices.Contains(cfg.Solvers, solver)
}

// instance runs every solver on one instance.
func (cfg AccuracyConfig) instance(ctx context.Context, name string, in *accInstance, stdout io.Writer) (AccInstanceResult, error) {
	if in.scp != nil {
		return cfg.scpInstance(ctx, name, in, stdout)
	}
	if in.cnn != nil {
		return cfg.cnnInstance(ctx, name, in, stdout)
	}
	p, pert := in.prog, in.pert
	n, d, np := p.Dims()
	r := AccInstanceResult{Name: name, About: in.about, Dims: [3]int{n, d, np}, Lower: accNum(math.Inf(-1)), Upper: accNum(math.Inf(1))}
	fmt.Fprintf(stdout, "%s: %s\n", name, in.about)
	cone := p.Loss == solvers.SquaredLoss || p.Loss == solvers.HingeLoss
	type run struct {
		name string
		ok   bool
		f    func(context.Context, *solvers.Program, solvers.Perturbation) (AccSolver, error)
	}
	for _, s := range []run{
		{AccIPM, cone || pert.Eps > 0, cfg.accIPM},
		{AccWorkingSet, cone, cfg.accWorkingSet},
		{AccNewton, !cone && pert.Eps == 0, cfg.accNewton},
		{AccADMM, true, cfg.accADMM},
	} {
		if !s.ok || !cfg.runs(s.name) {
			continue
		}
		row, err := s.f(ctx, p, pert)
		if err != nil {
			return r, fmt.Errorf("%s: %w", s.name, err)
		}
		r.add(stdout, row)
		if ctx.Err() != nil {
			return r, ctx.Err()
		}
	}
	if lo, up := float64(r.Lower), float64(r.Upper); lo > up+1e-9*math.Max(1, math.Abs(up)) {
		return r, fmt.Errorf("%w: lower bound %.12g above upper bound %.12g", errAccCertificates, r.Lower, r.Upper)
	}
	if cfg.runs(AccCVXOPT) {
		row, err := cfg.accCVXOPT(ctx, p, pert, float64(r.Lower))
		if err != nil {
			return r, fmt.Errorf("cvxopt: %w", err)
		}
		fmt.Fprintf(stdout, "  %-12s %s\n", AccCVXOPT, accLine(row))
		r.Solvers = append(r.Solvers, row)
		if up, lo := float64(row.Upper), float64(r.Lower); up < lo-1e-9*math.Max(1, math.Abs(lo)) {
			return r, fmt.Errorf("%w: CVXOPT's feasible point has objective %.12g below our lower bound %.12g", errAccCertificates, row.Upper, r.Lower)
		}
	}
	return r, nil
}

// record adds a run for target, started at start, that ended with the
// certificate [lower, upper] and gap after iters iterations: its time
// when the gap reaches the target; the row's bounds become the run's.
func (row *AccSolver) record(target float64, iters int, lower, upper, gap float64, start time.Time) {
	t := AccTarget{Target: target, Iterations: iters, Gap: accNum(gap)}
	if gap <= target {
		t.Seconds = secondsPtr(start)
	}
	row.Targets = append(row.Targets, t)
	row.Lower, row.Upper, row.Gap = accNum(lower), accNum(upper), accNum(gap)
}

// add prints a solver's row of the instance and adds it, keeping the best
// bounds of all rows.
func (r *AccInstanceResult) add(stdout io.Writer, row AccSolver) {
	fmt.Fprintf(stdout, "  %-12s %s\n", row.Solver, accLine(row))
	r.Solvers = append(r.Solvers, row)
	if !math.IsNaN(float64(row.Lower)) {
		r.Lower = accNum(math.Max(float64(r.Lower), float64(row.Lower)))
		r.Upper = accNum(math.Min(float64(r.Upper), float64(row.Upper)))
	}
}

func accLine(s AccSolver) string {
	var b strings.Builder
	for _, t := range s.Targets {
		if t.Seconds != nil {
			fmt.Fprintf(&b, "%g: %.3g s; ", t.Target, *t.Seconds)
		} else {
			fmt.Fprintf(&b, "%g: not reached; ", t.Target)
		}
	}
	fmt.Fprintf(&b, "certified gap %.3g after %.3g s", s.Gap, s.Seconds)
	if s.Note != "" {
		b.WriteString(" (" + s.Note + ")")
	}
	return b.String()
}

// accCertifier is the certifier of the benchmark's runs.
func accCertifier(p *solvers.Program, pert solvers.Perturbation) (*certify.Certifier, error) {
	c, err := certify.New(p, pert)
	if err != nil {
		return nil, err
	}
	c.Refine = 20
	return c, nil
}

func secondsPtr(t time.Time) *float64 {
	s := time.Since(t).Seconds()
	return &s
}

// accIPM: one interior-point run per target.
func (cfg AccuracyConfig) accIPM(ctx context.Context, p *solvers.Program, pert solvers.Perturbation) (AccSolver, error) {
	row := AccSolver{Solver: AccIPM, Method: "ipm.Solve", Lower: accNum(math.NaN()), Upper: accNum(math.NaN()), Gap: accNum(math.NaN())}
	if pert.Eps > 0 {
		row.Method = "ipm.SolveRobust"
	}
	t0 := time.Now()
	for _, target := range cfg.Targets {
		tc, cancel := context.WithTimeout(ctx, time.Duration(cfg.Seconds*float64(time.Second)))
		start := time.Now()
		// The tolerance tightens in place while the certificate misses
		// the target (ipm.SolveToGap, ipm.Options.Gap), as in cvx.Optimum.
		cert, err := accCertifier(p, pert)
		if err != nil {
			cancel()
			return row, err
		}
		res, b, err := ipm.SolveToGap(tc, p, pert, target, ipm.Options{}, cert)
		cancel()
		var me *ipm.MemoryError
		if errors.As(err, &me) {
			row.Note = me.Error()
			break
		}
		if res == nil {
			if ctx.Err() != nil {
				return row, ctx.Err()
			}
			row.Note = fmt.Sprint(err)
			break
		}
		row.record(target, res.Iterations, b.Lower, b.Upper, b.Gap, start)
		if err != nil {
			row.Note = fmt.Sprintf("%v after %d iterations: %v", res.Status, res.Iterations, err)
			break
		}
	}
	row.Seconds = time.Since(t0).Seconds()
	return row, ctx.Err()
}

// accNewton: ipm.Newton (BCE and logistic) to the tightest target, the
// time of the first step at or below each.
func (cfg AccuracyConfig) accNewton(ctx context.Context, p *solvers.Program, _ solvers.Perturbation) (AccSolver, error) {
	row := AccSolver{Solver: AccNewton, Method: "ipm.Newton (proximal Newton, interior-point model solves)", Lower: accNum(math.NaN()), Upper: accNum(math.NaN()), Gap: accNum(math.NaN())}
	t0 := time.Now()
	nt, err := ipm.NewNewton(p, cfg.Targets[len(cfg.Targets)-1], ipm.Options{}, nil, nil)
	var me *ipm.MemoryError
	if errors.As(err, &me) {
		row.Note = me.Error()
		return row, nil
	}
	if err != nil {
		return row, err
	}
	tc, cancel := context.WithTimeout(ctx, time.Duration(cfg.Seconds*float64(time.Second)))
	defer cancel()
	row.Targets = accTargets(cfg.Targets)
	inner := 0
	last, err := nt.Solve(tc, 0, func(st ipm.NewtonStep) {
		inner += st.InnerIterations
		accReach(row.Targets, st.Bound.Gap, st.Iter, t0)
	})
	if last.Iter > 0 {
		row.Lower, row.Upper, row.Gap = accNum(last.Bound.Lower), accNum(last.Bound.Upper), accNum(last.Bound.Gap)
		row.Note = fmt.Sprintf("%d steps, %d interior-point iterations", last.Iter, inner)
	}
	row.Seconds = time.Since(t0).Seconds()
	if err != nil {
		if ctx.Err() != nil {
			return row, ctx.Err()
		}
		row.Note = strings.TrimPrefix(row.Note+"; ", "; ") + err.Error()
	}
	return row, nil
}

// accWorkingSet: ipm.WorkingSet to the tightest target, the time of the
// first round at or below each.
func (cfg AccuracyConfig) accWorkingSet(ctx context.Context, p *solvers.Program, pert solvers.Perturbation) (AccSolver, error) {
	row := AccSolver{Solver: AccWorkingSet, Method: "ipm.WorkingSet", Lower: accNum(math.NaN()), Upper: accNum(math.NaN()), Gap: accNum(math.NaN())}
	tight := cfg.Targets[len(cfg.Targets)-1]
	t0 := time.Now()
	ws, err := ipm.NewWorkingSet(p, pert, tight, 0, ipm.Options{}, nil, nil)
	if err != nil {
		return row, err
	}
	tc, cancel := context.WithTimeout(ctx, time.Duration(cfg.Seconds*float64(time.Second)))
	defer cancel()
	row.Targets = accTargets(cfg.Targets)
	last, err := ws.Solve(tc, 0, func(st ipm.WorkingSetStep) {
		accReach(row.Targets, st.Bound.Gap, st.Round, t0)
	})
	if last.Weights.V != nil {
		row.Lower, row.Upper, row.Gap = accNum(last.Bound.Lower), accNum(last.Bound.Upper), accNum(last.Bound.Gap)
		row.Note = fmt.Sprintf("%d rounds, %d of %d patterns", last.Round, last.Size, len(p.D))
	}
	row.Seconds = time.Since(t0).Seconds()
	if err != nil {
		if ctx.Err() != nil {
			return row, ctx.Err()
		}
		var me *ipm.MemoryError
		if !errors.Is(err, context.DeadlineExceeded) && !errors.As(err, &me) {
			return row, err
		}
		row.Note = strings.TrimPrefix(row.Note+"; ", "; ") + err.Error()
	}
	return row, nil
}

func accTargets(targets []float64) []AccTarget {
	ts := make([]AccTarget, len(targets))
	for i, t := range targets {
		ts[i] = AccTarget{Target: t, Gap: accNum(math.NaN())}
	}
	return ts
}

// accReach records, for every target not yet reached, the gap and
// iterations so far, and the time when gap reaches it.
func accReach(ts []AccTarget, gap float64, iter int, t0 time.Time) {
	for i := range ts {
		if ts[i].Seconds != nil {
			continue
		}
		ts[i].Gap, ts[i].Iterations = accNum(gap), iter
		if gap <= ts[i].Target {
			ts[i].Seconds = secondsPtr(t0)
		}
	}
}

// maxIter is the iterative solvers' step cap: Iterations, or none.
func (cfg AccuracyConfig) maxIter() int {
	if cfg.Iterations > 0 {
		return cfg.Iterations
	}
	return 1 << 30
}

// accADMM: the default ADMM variant certified every 25 iterations, the
// targets in turn on one run.
func (cfg AccuracyConfig) accADMM(ctx context.Context, p *solvers.Program, pert solvers.Perturbation) (AccSolver, error) {
	v := admm.ChooseVariant(p.Loss, pert.Eps > 0)
	row := AccSolver{Solver: AccADMM, Method: "admm " + string(v) + ", certified every 25 iterations", Lower: accNum(math.NaN()), Upper: accNum(math.NaN()), Gap: accNum(math.NaN())}
	t0 := time.Now()
	maxIter := cfg.maxIter()
	s, err := admm.New(p, pert, v, admm.Options{MaxIter: maxIter, AbsTol: 1e-12, RelTol: 1e-12}, nil)
	if err != nil {
		return row, err
	}
	cert, err := accCertifier(p, pert)
	if err != nil {
		return row, err
	}
	tc, cancel := context.WithTimeout(ctx, time.Duration(cfg.Seconds*float64(time.Second)))
	defer cancel()
	row.Targets = accTargets(cfg.Targets)
	for i := range row.Targets {
		if s.Iter() >= maxIter {
			row.Note = fmt.Sprintf("stopped at the step cap after %d iterations", s.Iter())
			break
		}
		b, it, err := admm.SolveToGap(tc, s, cert, row.Targets[i].Target, 25, maxIter-s.Iter())
		if err != nil && tc.Err() == nil {
			return row, err
		}
		row.Lower, row.Upper, row.Gap = accNum(b.Lower), accNum(b.Upper), accNum(b.Gap)
		accReach(row.Targets[i:], b.Gap, it, t0)
		if b.Gap > row.Targets[i].Target {
			row.Note = fmt.Sprintf("stopped after %d iterations", it)
			switch {
			case tc.Err() != nil:
			case s.Iter() >= maxIter:
				row.Note += " (the step cap)"
			default:
				row.Note += " (the residuals converged)"
			}
			break
		}
	}
	row.Seconds = time.Since(t0).Seconds()
	return row, ctx.Err()
}

// scpInstance runs FISTA and the interior-point method on a sampled convex
// program; both are certified by the duality gap of the program's
// dual-feasible point (relative: gap/F(α)).
func (cfg AccuracyConfig) scpInstance(ctx context.Context, name string, in *accInstance, stdout io.Writer) (AccInstanceResult, error) {
	q := in.scp
	n, nf := q.h.Dims()
	r := AccInstanceResult{Name: name, About: in.about, Dims: [3]int{n, nf, 0}, Lower: accNum(math.Inf(-1)), Upper: accNum(math.Inf(1))}
	fmt.Fprintf(stdout, "%s: %s\n", name, in.about)
	if cfg.runs(AccIPM) {
		row := AccSolver{Solver: AccIPM, Method: "scp.SolveInteriorPoint (ipm.SolveL1), Tol = target/1000", Lower: accNum(math.NaN()), Upper: accNum(math.NaN()), Gap: accNum(math.NaN())}
		t0 := time.Now()
		for _, target := range cfg.Targets {
			tc, cancel := context.WithTimeout(ctx, time.Duration(cfg.Seconds*float64(time.Second)))
			start := time.Now()
			res, err := scp.SolveInteriorPoint(tc, q.h, q.y, q.loss, q.beta, ipm.Options{Tol: target / 1000})
			cancel()
			var me *ipm.MemoryError
			if errors.As(err, &me) {
				row.Note = me.Error()
				break
			}
			if res == nil {
				if ctx.Err() != nil {
					return r, ctx.Err()
				}
				return r, err
			}
			gap := res.Gap / math.Abs(res.Objective)
			row.record(target, res.Iterations, res.Objective-res.Gap, res.Objective, gap, start)
			row.Note = res.Status
			if err != nil {
				row.Note += ": " + err.Error()
				break
			}
		}
		row.Seconds = time.Since(t0).Seconds()
		r.add(stdout, row)
	}
	if cfg.runs(AccFISTA) {
		row := AccSolver{Solver: AccFISTA, Method: "FISTA (scp.NewFISTA / NewFISTABCE), duality gap every iteration", Lower: accNum(math.NaN()), Upper: accNum(math.NaN()), Gap: accNum(math.NaN())}
		var step func() scp.FISTAStep
		if q.loss == solvers.SquaredLoss {
			f, err := scp.NewFISTA(&scp.Lasso{H: q.h, Y: q.y, Beta: q.beta}, nil)
			if err != nil {
				return r, err
			}
			step = f.Step
		} else {
			f, err := scp.NewFISTABCE(&scp.BCELasso{H: scp.NewDenseFeatures(q.h), Y: q.y, Beta: q.beta}, nil)
			if err != nil {
				return r, err
			}
			step = f.Step
		}
		t0 := time.Now()
		row.Targets = accTargets(cfg.Targets)
		deadline := t0.Add(time.Duration(cfg.Seconds * float64(time.Second)))
		var st scp.FISTAStep
		for time.Now().Before(deadline) && ctx.Err() == nil && st.Iter < cfg.maxIter() {
			st = step()
			gap := st.Gap / math.Abs(st.Objective)
			accReach(row.Targets, gap, st.Iter, t0)
			row.Lower, row.Upper, row.Gap = accNum(st.Objective-st.Gap), accNum(st.Objective), accNum(gap)
			if gap <= cfg.Targets[len(cfg.Targets)-1] {
				break
			}
		}
		row.Seconds = time.Since(t0).Seconds()
		row.Note = fmt.Sprintf("%d iterations", st.Iter)
		r.add(stdout, row)
	}
	if lo, up := float64(r.Lower), float64(r.Upper); lo > up+1e-9*math.Max(1, math.Abs(up)) {
		return r, fmt.Errorf("%w: lower bound %.12g above upper bound %.12g", errAccCertificates, lo, up)
	}
	return r, ctx.Err()
}

// accCVXOPTOut is the output of bench/cvxopt_convex.py in mode "tolerance".
type accCVXOPTOut struct {
	Status     string      `json:"status"`
	Iterations int         `json:"iterations"`
	Seconds    float64     `json:"seconds"`
	Objective  float64     `json:"objective"`
	Violation  float64     `json:"violation"`
	V          [][]float64 `json:"v"`
	W          [][]float64 `json:"w"`
}

// accCVXOPT: CVXOPT's runs per target, its points certified against lower:
// at abstol = reltol = feastol = target/10, and where that point's
// certified gap misses the target (its constraint violation of order the
// tolerance costs the restored point more than the target), once more at
// target/1000; the time is that of the run that reached the target. Its
// violating groups are projected onto their cones first
// (ipm.RestoreRobust, not timed).
func (cfg AccuracyConfig) accCVXOPT(ctx context.Context, p *solvers.Program, pert solvers.Perturbation, lower float64) (AccSolver, error) {
	method := map[solvers.Loss]string{solvers.HingeLoss: "conelp", solvers.SquaredLoss: "coneqp"}[p.Loss]
	if method == "" {
		method = "cp"
	}
	row := AccSolver{Solver: AccCVXOPT, Method: "cvxopt " + method + ", abstol = reltol = feastol = target/10 (target/1000 where that misses)",
		Lower: accNum(math.NaN()), Upper: accNum(math.NaN()), Gap: accNum(math.NaN())}
	cert, err := accCertifier(p, pert)
	if err != nil {
		return row, err
	}
	cert.Refine = -1 // only the upper bound is used
	for _, target := range cfg.Targets {
		t := AccTarget{Target: target, Gap: accNum(math.NaN())}
		spent := 0.0 // on this target
		for _, tol := range []float64{target / 10, target / 1000} {
			out, err := cfg.cvxoptRun(ctx, p, pert, tol)
			if err != nil {
				return row, err
			}
			if out == nil {
				row.Note = fmt.Sprintf("stopped at the %g s cap (tolerance %g)", cfg.PeerSeconds, tol)
				t.AtLeast = spent + cfg.PeerSeconds
				break
			}
			spent += out.Seconds
			row.Seconds += out.Seconds
			row.Note = out.Status
			if out.V == nil {
				break
			}
			wt, err := cvxbWeights(out.V, out.W, p)
			if err != nil {
				return row, err
			}
			// Every group that violates its cone replaced by its projection
			// (not timed): a fairer upper bound than the certifier's own
			// repair for a point feasible to the tolerance only.
			if wt, _, err = ipm.RestoreRobust(ctx, p, wt, pert); err != nil {
				return row, err
			}
			b, err := cert.Bound(wt, nil)
			if err != nil {
				return row, err
			}
			gap := certify.RelativeGap(lower, b.Upper)
			t.Iterations, t.Gap = out.Iterations, accNum(gap)
			row.Upper, row.Gap = accNum(b.Upper), accNum(gap)
			if gap <= target {
				sec := out.Seconds
				t.Seconds = &sec
				break
			}
		}
		row.Targets = append(row.Targets, t)
		if t.Seconds == nil {
			break
		}
	}
	return row, nil
}

// cvxoptRun runs bench/cvxopt_convex.py in mode "tolerance"; nil when the
// run reached cfg.PeerSeconds.
func (cfg AccuracyConfig) cvxoptRun(ctx context.Context, p *solvers.Program, pert solvers.Perturbation, tol float64) (*accCVXOPTOut, error) {
	in := struct {
		solvers.ProgramRows
		Mode string       `json:"mode"`
		Tol  float64      `json:"tol"`
		Eps  float64      `json:"eps"`
		Norm solvers.Norm `json:"norm"`
		Bias bool         `json:"bias"`
	}{p.Rows(), "tolerance", tol, pert.Eps, pert.Norm.Canonical(), p.Bias}
	tc, cancel := context.WithTimeout(ctx, time.Duration(cfg.PeerSeconds*float64(time.Second)))
	defer cancel()
	var out accCVXOPTOut
	err := runPythonJSON(tc, cfg.Python, cfg.Script, []string{"OPENBLAS_NUM_THREADS=" + fmt.Sprint(runtime.GOMAXPROCS(0))}, in, &out)
	switch {
	case ctx.Err() != nil:
		return nil, ctx.Err()
	case tc.Err() != nil:
		return nil, nil
	case err != nil:
		return nil, err
	}
	return &out, nil
}

// accPrintTable prints the time to each target per instance and solver,
// with CVXOPT's time over ours at each target.
func accPrintTable(w io.Writer, rs []AccInstanceResult, targets []float64) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprint(tw, "instance\tsolver\t")
	for _, t := range targets {
		fmt.Fprintf(tw, "s to %g\tcvxopt/this\t", t)
	}
	fmt.Fprintln(tw, "final gap\tseconds\t")
	for _, r := range rs {
		peer := map[float64]*float64{}
		peerAtLeast := map[float64]float64{} // CVXOPT stopped at its cap
		peerFailed := false                  // CVXOPT stopped with an error
		for _, s := range r.Solvers {
			if s.Solver == AccCVXOPT {
				peerFailed = strings.HasPrefix(s.Note, "error")
				for _, t := range s.Targets {
					peer[t.Target], peerAtLeast[t.Target] = t.Seconds, t.AtLeast
				}
			}
		}
		for _, s := range r.Solvers {
			fmt.Fprintf(tw, "%s\t%s\t", r.Name, s.Solver)
			for _, target := range targets {
				sec, ratio := "—", "—"
				for _, t := range s.Targets {
					if t.Target != target {
						continue
					}
					if t.Seconds != nil {
						sec = fmt.Sprintf("%.3g", *t.Seconds)
						if c := peer[target]; c != nil && s.Solver != AccCVXOPT {
							ratio = fmt.Sprintf("%.3g×", *c / *t.Seconds)
						} else if c := peerAtLeast[target]; c > 0 && s.Solver != AccCVXOPT {
							ratio = fmt.Sprintf("> %.3g×", c / *t.Seconds)
						} else if peerFailed && s.Solver != AccCVXOPT {
							ratio = "cvxopt fails"
						}
					} else if s.Solver == AccCVXOPT && peerFailed {
						sec = "error"
					} else if !math.IsNaN(float64(t.Gap)) {
						sec = fmt.Sprintf("(%.2g)", t.Gap)
					}
				}
				fmt.Fprintf(tw, "%s\t%s\t", sec, ratio)
			}
			fmt.Fprintf(tw, "%.3g\t%.3g\t\n", float64(s.Gap), s.Seconds)
		}
	}
	tw.Flush()
	fmt.Fprintln(w, "(g): not reached; g is the certified gap at the end of the run for that target; > r×: CVXOPT stopped at its time cap, r is the time it had spent over ours; cvxopt fails: CVXOPT stopped with an error (its line above says which)")
}
