package paper

import (
	"math"
	"strings"
	"testing"

	"github.com/convexnn/convexnn/cvx"
	"github.com/convexnn/convexnn/data"
	"github.com/convexnn/convexnn/internal/testenv"
)

// TestConvergenceTraceApproachesTheOptimum: fig. conv1's ADMM runs approach
// the certified interior-point optimum, and the run is the same problem
// each time (seeded).
func TestConvergenceTraceApproachesTheOptimum(t *testing.T) {
	dir := cvx.RunDir(t.TempDir())
	h, sol, err := ConvergenceTrace(dir, 1, 2000, 0.01)
	if err != nil {
		t.Fatal(err)
	}
	if len(h) != 2000 || !(sol.Gap < 1e-5) {
		t.Fatalf("%d iterations, optimum certified to %v", len(h), sol.Gap)
	}
	first, last := h[0].Objective, h[len(h)-1].Objective
	if rel := math.Abs(last-sol.Objective) / sol.Objective; rel > 0.1 || math.Abs(first-sol.Objective) < math.Abs(last-sol.Objective) {
		t.Errorf("ADMM from %v to %v, optimum %v (relative gap %.2g)", first, last, sol.Objective, rel)
	}
	again, err := cvx.Solve(ConvergenceProblem(1), cvx.IPM{})
	if err != nil || again.Objective != sol.Objective {
		t.Errorf("run 1's problem changed: %v, %v", again.Objective, err)
	}
}

// TestTrainCurveRecordsEveryIteration: the curves have one point per
// iteration, times increase, the last values are the history's.
func TestTrainCurveRecordsEveryIteration(t *testing.T) {
	x, y, err := data.Disk2D(80, 2)
	if err != nil {
		t.Fatal(err)
	}
	va := &data.Set{X: x, Y: y}
	c, err := TrainCurve(cvx.RunDir(t.TempDir()), "c", "ADMM", cvx.Classify(x, y).Bias().SamplePatterns(12, 1), cvx.ADMM{}, va, 6)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Loss.X) != 6 || len(c.Accuracy.Y) != 6 || c.Name != "ADMM" {
		t.Fatalf("curves %+v", c)
	}
	for k := 1; k < 6; k++ {
		if c.Loss.X[k] < c.Loss.X[k-1] {
			t.Errorf("time goes back at %d", k)
		}
	}
	if c.LastAccuracy*100 != c.Accuracy.Y[5] || c.LastLoss != c.Loss.Y[5] || c.Seconds != c.Loss.X[5] || c.LastAccuracy < 0.5 {
		t.Errorf("last values %+v", c)
	}
	if _, err := TrainCurve(cvx.RunDir(t.TempDir()), "c", "ADMM", cvx.Classify(x, y).Bias().SamplePatterns(12, 1), cvx.ADMM{}, nil, 6); err == nil || !strings.Contains(err.Error(), "validation") {
		t.Errorf("no validation set: %v", err)
	}
}

// TestSCPExpRunsEveryPoint: fig. SCPexp at a tiny size gives one point per
// N and β, accuracies of a classifier, and its two panels.
func TestSCPExpRunsEveryPoint(t *testing.T) {
	t.Setenv(data.EnvDataDir, testenv.SharedData(t))
	e := SCPExp{Trials: 2, Ns: []int{5, 40}, Betas: []float64{1e-2}, FISTAIters: 200, ADMMIters: 5}
	var out strings.Builder
	res, err := e.Run(cvx.RunDir(t.TempDir()), &out)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Acc) != 1 || len(res.Acc[0].Y) != 2 || len(res.Cost[0].Y) != 2 || res.Acc[0].X[1] != math.Log10(40) {
		t.Fatalf("series %+v", res.Acc)
	}
	for _, a := range []float64{res.RefAcc, res.BPAcc, res.Acc[0].Y[0] / 100, res.Acc[0].Y[1] / 100} {
		if !(a > 0.55 && a <= 1) {
			t.Errorf("test accuracy %v", a)
		}
	}
	if !strings.Contains(out.String(), "N =    40") {
		t.Errorf("printed %q", out.String())
	}
	if _, _, err := res.Figures(); err != nil {
		t.Error(err)
	}
}
