package paper

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/convexnn/convexnn/internal/testenv"
	"github.com/convexnn/convexnn/solvers"
	"gonum.org/v1/gonum/mat"
)

// requireBenchCVXOPT skips the test when Debian's python3-cvxopt is missing,
// or fails it when CONVEXNN_REQUIRE_E2E=1.
func requireBenchCVXOPT(t *testing.T) {
	t.Helper()
	if _, err := cvxbCheckPython(context.Background(), DebianPython); err != nil {
		testenv.Missing(t, "the CVXOPT benchmark needs Debian's python3-cvxopt: %v", err)
	}
}

// requireTorch skips, or fails under CONVEXNN_REQUIRE_E2E=1, when Debian's
// python3 cannot import torch.
func requireTorch(t *testing.T) {
	t.Helper()
	if _, err := torchVersion(context.Background(), DebianPython); err != nil {
		testenv.Missing(t, "the PyTorch benchmark needs Debian's python3-torch: %v", err)
	}
}

// TestBenchCVXOPTSmall runs `convexnn bench cvxopt` end to end on a tiny
// instance (n = 60, d = 5, P_s = 6, one run) and checks the table and
// result.json: p* agrees, every solver reaches the target (gap ≤ 1e-4,
// violation ≤ 1e-6) in positive time, and the ratios are those of the
// times.
func TestBenchCVXOPTSmall(t *testing.T) {
	testenv.SkipUnderRace(t, heapSamplerRaced)
	requireBenchCVXOPT(t)
	out := t.TempDir()
	var stdout bytes.Buffer
	// The ADMM needs about 9000 (squared) and 18000 (hinge) iterations.
	cfg := DefaultCVXOPTConfig(SizeSmall)
	cfg.Losses, cfg.Runs, cfg.ADMMMaxIter = []string{"squared", "hinge"}, 1, 100000
	if err := BenchCVXOPT(context.Background(), cfg, out, &stdout); err != nil {
		t.Fatalf("bench cvxopt: %v\n%s", err, stdout.String())
	}
	t.Logf("\n%s", stdout.String())
	for _, want := range []string{"loss", "solver", "iterations", "seconds (median)", "rel. gap", "cvxopt time / this",
		"cvxopt time / our IPM time", "cvxopt time / our ADMM time", "over-relaxed = "} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("output lacks %q", want)
		}
	}
	js, err := os.ReadFile(filepath.Join(out, "cvxopt", "result.json"))
	if err != nil {
		t.Fatal(err)
	}
	var res cvxbResult
	if err := json.Unmarshal(js, &res); err != nil {
		t.Fatal(err)
	}
	if res.Config.N != 60 || res.Config.D != 5 || res.Patterns != 6 || res.Config.Runs != 1 {
		t.Errorf("config %+v with %d patterns, want n = 60, d = 5, 6 patterns, 1 run", res.Config, res.Patterns)
	}
	if len(res.Losses) != 2 || res.Losses[0].Loss != "squared" || res.Losses[1].Loss != "hinge" {
		t.Fatalf("losses %+v, want squared and hinge", res.Losses)
	}
	for _, l := range res.Losses {
		if !(l.PStarRelDiff <= cvxbPStarAgree) || !(l.PStar > 0) {
			t.Errorf("%s: p* %v (ours), %v (cvxopt): relative difference %v", l.Loss, l.PStar, l.PStarCVXOPT, l.PStarRelDiff)
		}
		var traj []struct {
			K    int  `json:"k"`
			Pass bool `json:"pass"`
		}
		if err := json.Unmarshal(l.CVXOPTTrajectory, &traj); err != nil || len(traj) < 2 {
			t.Errorf("%s: CVXOPT's trajectory %s (%v)", l.Loss, l.CVXOPTTrajectory, err)
		}
		// The squared loss has a fourth row, the over-relaxed ADMM (-relax,
		// default 1.8); the hinge loss's split ADMM has no over-relaxation.
		names := []string{"cvxopt", "ipm (ours)", "admm (ours)"}
		if l.Loss == "squared" {
			names = append(names, "admm α=1.8 (ours)")
		}
		if len(l.Solvers) != len(names) {
			t.Fatalf("%s: %d solver rows, want %d", l.Loss, len(l.Solvers), len(names))
		}
		var cvxoptSec float64
		for i, s := range l.Solvers {
			if want := names[i]; s.Solver != want {
				t.Errorf("%s: row %d is %q, want %q", l.Loss, i, s.Solver, want)
			}
			if !s.Reached || !(s.RelGap <= 1e-4) || !(s.RelViolation <= 1e-6) || s.Iterations < 1 {
				t.Errorf("%s %s: reached %v in %d iterations, gap %v, violation %v", l.Loss, s.Solver, s.Reached, s.Iterations, s.RelGap, s.RelViolation)
			}
			if !(s.Seconds > 0) || len(s.Times) != 1 || s.Times[0] != s.Seconds {
				t.Errorf("%s %s: median %v s of runs %v", l.Loss, s.Solver, s.Seconds, s.Times)
			}
			if i == 0 {
				// k* is the first passing iterate of the trajectory.
				for _, it := range traj {
					if it.K >= 1 && it.Pass {
						if it.K != s.Iterations {
							t.Errorf("%s cvxopt: k* = %d, but the trajectory passes first at %d", l.Loss, s.Iterations, it.K)
						}
						break
					}
				}
				cvxoptSec = s.Seconds
				if !(s.BuildSeconds > 0 && s.BuildSeconds < s.Seconds) {
					t.Errorf("%s cvxopt: construction %v s of %v s", l.Loss, s.BuildSeconds, s.Seconds)
				}
			}
			// The exactly feasible copy: the interior-point points are
			// feasible (the copy is the point), ADMM's only nearly.
			if s.FeasibleRelGap == nil || !(*s.FeasibleRelGap >= 0) || math.IsInf(*s.FeasibleRelGap, 0) {
				t.Fatalf("%s %s: no gap of the feasible copy (%v)", l.Loss, s.Solver, s.FeasibleRelGap)
			}
			if s.RelViolation == 0 && math.Abs(*s.FeasibleRelGap-s.RelGap) > 1e-9 {
				t.Errorf("%s %s: feasible point, but its feasible copy has gap %v ≠ %v", l.Loss, s.Solver, *s.FeasibleRelGap, s.RelGap)
			}
			if r := cvxoptSec / s.Seconds; math.Abs(s.CVXOPTRatio-r) > 1e-9*r {
				t.Errorf("%s %s: ratio %v, want %v", l.Loss, s.Solver, s.CVXOPTRatio, r)
			}
		}
		// ADMM's objective-only points: the first within the target comes
		// no later than the one it stays within from, and both no later
		// than the strict pass, which is itself within the target.
		a := l.Solvers[2]
		if g := a.GapOnly; g == nil || g.Stays == nil || g.First.Iterations > g.Stays.Iterations || g.Stays.Iterations > a.Iterations ||
			g.First.RelGap > 1e-4 || g.Stays.RelGap > 1e-4 || g.Stays.Seconds > a.Times[len(a.Times)-1] {
			t.Errorf("%s admm: objective-only points %+v against the pass at %d", l.Loss, a.GapOnly, a.Iterations)
		}
		if l.CVXOPTOverIPM != l.Solvers[1].CVXOPTRatio || l.CVXOPTOverADMM != l.Solvers[2].CVXOPTRatio {
			t.Errorf("%s: ratios %v, %v do not match the rows", l.Loss, l.CVXOPTOverIPM, l.CVXOPTOverADMM)
		}
		if relaxed := len(l.Solvers) == 4; relaxed && l.CVXOPTOverRelaxed != l.Solvers[3].CVXOPTRatio || !relaxed && l.CVXOPTOverRelaxed != 0 {
			t.Errorf("%s: over-relaxed ratio %v against rows %+v", l.Loss, l.CVXOPTOverRelaxed, l.Solvers)
		}
	}
}

// TestBenchCVXOPTViolationScale checks the scale of the violation test,
// max_{j,k} |x_kᵀu_j|, on a case where the largest row sum of X Vᵀ (the
// matrix ∞-norm) is larger than the largest entry.
func TestBenchCVXOPTViolationScale(t *testing.T) {
	x := mat.NewDense(2, 2, []float64{1, 0, 0, 1})
	wt := solvers.Weights{V: mat.NewDense(2, 2, []float64{3, -4, 1, 2}), W: mat.NewDense(2, 2, []float64{-5, 0, 0, 0})}
	// X Vᵀ = [[3, 1], [−4, 2]] (row sums 4 and 6), X Wᵀ = [[−5, 0], [0, 0]].
	if got := cvxbMaxAbsOutput(x, wt); got != 5 {
		t.Errorf("violation scale %v, want max |x_kᵀu_j| = 5", got)
	}
}

// TestBenchTorchSmall runs `convexnn bench torch -size small` on one
// experiment with a two-rate grid and checks result.json: A is the ADMM's
// final accuracy and its time to A is read off its curve; every learning
// rate trained and evaluated; the best rate and the ratio follow from them.
func TestBenchTorchSmall(t *testing.T) {
	testenv.SkipUnderRace(t, heapSamplerRaced)
	t.Setenv("CONVEXNN_DATA", testenv.SharedData(t))
	requireTorch(t)
	out := t.TempDir()
	var stdout bytes.Buffer
	const name = "table3-fmnist-ds"
	exps, err := TorchExperiments([]string{name})
	if err != nil {
		t.Fatal(err)
	}
	opts := TorchOptions{LRs: []float64{1e-3, 1e-2}, Seconds: 30, DType: "float32", Threads: TorchThreads}
	if err := BenchTorch(context.Background(), exps, SizeSmall, opts, out, &stdout); err != nil {
		t.Fatalf("bench torch: %v\n%s", err, stdout.String())
	}
	for _, s := range []string{"ratio PyTorch/ADMM", "PyTorch learning-rate grid", "torch lr 0.01", "wrote "} {
		if !strings.Contains(stdout.String(), s) {
			t.Errorf("output lacks %q:\n%s", s, stdout.String())
		}
	}
	raw, err := os.ReadFile(filepath.Join(out, "torch", "result.json"))
	if err != nil {
		t.Fatal(err)
	}
	var res torchBenchResult
	if err := json.Unmarshal(raw, &res); err != nil {
		t.Fatalf("result.json does not parse: %v", err)
	}
	if res.Benchmark != "torch" || res.Size != "small" || res.TorchVersion == "" || len(res.Experiments) != 1 ||
		res.Options.DType != "float32" || len(res.Options.LRs) != 2 || res.Options.Threads != TorchThreads || res.Options.OMPWaitPolicy == "" {
		t.Fatalf("result.json header: %+v", res)
	}
	e := res.Experiments[0]
	if e.Experiment != name || e.TrainImages != 400 || e.ValImages == 0 || e.Dim != 196 || !e.Bias || e.Epochs != 5 {
		t.Errorf("experiment header: %+v", e)
	}

	a := e.ADMM
	nval := float64(e.ValImages)
	if !(a.Accuracy > 0.5) || a.Accuracy > 1 || a.Correct != int(math.Round(a.Accuracy*nval)) {
		t.Errorf("ADMM accuracy %v (%d correct of %d)", a.Accuracy, a.Correct, e.ValImages)
	}
	if a.IterationsToTarget < 1 || a.IterationsToTarget > a.Iterations || len(a.Curve) != a.Iterations {
		t.Fatalf("ADMM reached A at iteration %d of %d (curve %d points)", a.IterationsToTarget, a.Iterations, len(a.Curve))
	}
	if p := a.Curve[a.IterationsToTarget-1]; p.Seconds != a.SecondsToTarget || int(math.Round(p.Validation*nval)) < a.Correct {
		t.Errorf("ADMM time to A %v s, curve point %+v, A = %v", a.SecondsToTarget, p, a.Accuracy)
	}
	for _, p := range a.Curve[:a.IterationsToTarget-1] {
		if int(math.Round(p.Validation*nval)) >= a.Correct {
			t.Errorf("ADMM reached A = %v before iteration %d: %+v", a.Accuracy, a.IterationsToTarget, p)
		}
	}
	if !(a.SecondsToTarget >= a.SetupSeconds) || a.SecondsToTarget > a.WallSeconds {
		t.Errorf("ADMM time to A %v s outside [set-up %v s, wall %v s]", a.SecondsToTarget, a.SetupSeconds, a.WallSeconds)
	}

	ts := e.Torch
	if ts.Threads != TorchThreads {
		t.Errorf("PyTorch ran %d threads, want %d", ts.Threads, TorchThreads)
	}
	if len(ts.Runs) != 2 {
		t.Fatalf("%d PyTorch runs, want 2", len(ts.Runs))
	}
	var tuning float64
	for k, r := range ts.Runs {
		if want := []float64{1e-3, 1e-2}[k]; r.LR != want {
			t.Errorf("run %d: lr %v, want %v", k, r.LR, want)
		}
		tuning += r.TrainSeconds
		if r.Diverged || r.Epochs != 5 || r.Stopped != "epochs" || len(r.Curve) == 0 || !(r.TrainSeconds > 0) {
			t.Errorf("lr %v: %+v", r.LR, r)
			continue
		}
		final, best := deref(r.FinalAccuracy), deref(r.BestAccuracy)
		if !(final > 0.5) || final > 1 || best < final || best != float64(r.BestCorrect)/nval {
			t.Errorf("lr %v: final accuracy %v, best %v (%d correct)", r.LR, final, best, r.BestCorrect)
		}
		if obj := deref(r.FinalObjective); !(obj > 0) || obj < deref(r.FinalTrainingLoss) {
			t.Errorf("lr %v: objective %v, training loss %v", r.LR, obj, deref(r.FinalTrainingLoss))
		}
		if r.Reached != (r.BestCorrect >= a.Correct) {
			t.Errorf("lr %v: reached %v with %d best correct, A needs %d", r.LR, r.Reached, r.BestCorrect, a.Correct)
		}
		prev := 0.0
		for _, p := range r.Curve {
			if p[0] < prev || p[0] > r.TrainSeconds {
				t.Errorf("lr %v: curve time %v after %v, training %v s", r.LR, p[0], prev, r.TrainSeconds)
			}
			prev = p[0]
			if r.Reached && p[0] < *r.SecondsToTarget && int(math.Round(p[1]*nval)) >= a.Correct {
				t.Errorf("lr %v: reached A at %v s, before the reported %v s", r.LR, p[0], *r.SecondsToTarget)
			}
		}
	}
	if math.Abs(ts.TuningSeconds-tuning) > 1e-9 || !(ts.ProcessSeconds > ts.TuningSeconds) {
		t.Errorf("tuning %v s (sum %v s), process %v s", ts.TuningSeconds, tuning, ts.ProcessSeconds)
	}
	if ts.Reached != (ts.SecondsToTarget != nil) || ts.Reached != (e.Ratio != nil) {
		t.Fatalf("reached %v, time %v, ratio %v", ts.Reached, ts.SecondsToTarget, e.Ratio)
	}
	if ts.Reached {
		if r := *ts.SecondsToTarget / a.SecondsToTarget; math.Abs(*e.Ratio-r) > 1e-12*r {
			t.Errorf("ratio %v, want %v", *e.Ratio, r)
		}
	}
}

// TestTorchSideOfPicksTheBestRate checks the choice of the best learning
// rate: the soonest to A among those that reached it, else the most
// accurate (ties: the sooner).
func TestTorchSideOfPicksTheBestRate(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	reached := []torchRun{
		{LR: 1, BestCorrect: 90, BestAccuracy: f(0.9), SecondsToBest: f(1), TrainSeconds: 2},
		{LR: 2, Reached: true, SecondsToTarget: f(3), BestCorrect: 99, BestAccuracy: f(0.99), SecondsToBest: f(4), TrainSeconds: 5},
		{LR: 3, Reached: true, SecondsToTarget: f(2), BestCorrect: 98, BestAccuracy: f(0.98), SecondsToBest: f(2), FinalAccuracy: f(0.97), TrainSeconds: 6},
	}
	ts := torchSideOf(reached)
	if !ts.Reached || ts.BestLR != 3 || *ts.SecondsToTarget != 2 || ts.BestAccuracy != 0.98 || ts.FinalAccuracy != 0.97 || ts.TuningSeconds != 13 {
		t.Errorf("reached: %+v", ts)
	}
	none := []torchRun{
		{LR: 1, BestCorrect: 90, BestAccuracy: f(0.9), SecondsToBest: f(5)},
		{LR: 2, BestCorrect: 95, BestAccuracy: f(0.95), SecondsToBest: f(7)},
		{LR: 3, BestCorrect: 95, BestAccuracy: f(0.95), SecondsToBest: f(6)},
	}
	ts = torchSideOf(none)
	if ts.Reached || ts.SecondsToTarget != nil || ts.BestLR != 3 || ts.SecondsToBest != 6 {
		t.Errorf("none reached: %+v", ts)
	}
}
