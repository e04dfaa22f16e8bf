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
)

// requireTorch skips, or fails under CONVEXNN_REQUIRE_E2E=1, when Debian's
// python3 cannot import torch.
func requireTorch(t *testing.T) {
	t.Helper()
	if _, err := torchVersion(context.Background(), DebianPython); err != nil {
		if os.Getenv("CONVEXNN_REQUIRE_E2E") == "1" {
			t.Fatalf("CONVEXNN_REQUIRE_E2E=1 but PyTorch is unavailable: %v", err)
		}
		t.Skipf("skipping the PyTorch benchmark: %v", err)
	}
}

// TestBenchTorchSmall runs `convexnn bench torch -size small` on one
// experiment with a two-rate grid and checks result.json: A is the ADMM's
// final accuracy and its time to A is read off its curve; every learning
// rate trained and evaluated; the best rate and the ratio follow from them.
func TestBenchTorchSmall(t *testing.T) {
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
