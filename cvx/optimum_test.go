package cvx

import (
	"context"
	"math"
	"strings"
	"testing"

	"github.com/convexnn/convexnn/data"
	"github.com/convexnn/convexnn/solvers/ipm"
)

// TestOptimumReachesTheCertifiedGap checks cvx.Optimum on its four paths:
// the interior-point method for a squared-loss problem and the proximal
// Newton method for BCE and the interior-point method for robust BCE (all
// certified to 1e-6), ADMM (the path of programs too large for those) on
// robust BCE, certified to 5e-2 within the iteration cap, its bounds
// enclosing the interior point's, the working set over patterns on robust
// hinge (1e-6, enclosing the interior point's optimum); and its refusals.
func TestOptimumReachesTheCertifiedGap(t *testing.T) {
	x, y, _ := data.Disk2D(40, 4)
	sq, err := Optimum(Classify(x, y).Beta(0.05).Bias().SamplePatterns(6, 3), 1e-6, 0)
	if err != nil || sq.Status != "gap reached" || sq.Gap > 1e-6 || sq.Lower > sq.Objective {
		t.Fatalf("squared: %v, status %s, objective %.10g, certified [%.10g, %.10g]", err, sq.Status, sq.Objective, sq.Lower, sq.Upper)
	}
	bce, err := Optimum(Classify(x, y).BCE().Beta(0.01).Bias().SamplePatterns(6, 3), 1e-6, 0)
	if err != nil || bce.Status != "gap reached" || bce.Gap > 1e-6 || bce.Lower > bce.Upper || bce.Iterations > 30 {
		t.Fatalf("BCE: %v, status %s after %d Newton steps, certified [%.10g, %.10g] gap %.3g", err, bce.Status, bce.Iterations, bce.Lower, bce.Upper, bce.Gap)
	}
	t.Logf("BCE by proximal Newton: certified gap %.3g after %d steps", bce.Gap, bce.Iterations)
	robProb := Classify(x, y).BCE().Beta(0.01).Bias().SamplePatterns(6, 3).Robust(0.02, LInf)
	rob, err := Optimum(robProb, 1e-6, 0)
	if err != nil || rob.Status != "gap reached" || rob.Gap > 1e-6 || rob.Lower > rob.Upper {
		t.Fatalf("robust BCE: %v, status %s after %d iterations, certified [%.10g, %.10g] gap %.3g", err, rob.Status, rob.Iterations, rob.Lower, rob.Upper, rob.Gap)
	}
	t.Logf("robust BCE by the interior-point method: certified gap %.3g after %d iterations", rob.Gap, rob.Iterations)
	// ADMM, the path of programs too large for the interior-point method.
	prog, err := robProb.Convex()
	if err != nil {
		t.Fatal(err)
	}
	admmSol, err := optimum(context.Background(), prog, robProb.Perturbation(), 5e-2, 20000, ipm.NoMethod)
	if err != nil || admmSol.Status != "gap reached" || admmSol.Gap > 5e-2 || admmSol.Lower > admmSol.Upper || admmSol.Iterations%25 != 0 || admmSol.Lower > rob.Upper || admmSol.Upper < rob.Lower {
		t.Fatalf("robust BCE by ADMM: %v, status %s after %d iterations, certified [%.10g, %.10g] gap %.3g (interior point [%.10g, %.10g])", err, admmSol.Status, admmSol.Iterations, admmSol.Lower, admmSol.Upper, admmSol.Gap, rob.Lower, rob.Upper)
	}
	t.Logf("robust BCE by ADMM: certified gap %.3g after %d iterations", admmSol.Gap, admmSol.Iterations)
	// The working set over patterns, the path of large robust programs
	// with the ℓ∞ set: the same optimum as the interior-point method.
	hingeProb := Classify(x, y).Beta(1e-3).Bias().SamplePatterns(12, 3).Robust(0.05, LInf)
	hingeProg, err := hingeProb.Convex()
	if err != nil {
		t.Fatal(err)
	}
	full, err := optimum(context.Background(), hingeProg, hingeProb.Perturbation(), 1e-8, 0, ipm.InteriorPoint)
	if err != nil {
		t.Fatal(err)
	}
	ws, err := optimum(context.Background(), hingeProg, hingeProb.Perturbation(), 1e-6, 0, ipm.PatternWorkingSet)
	if err != nil || ws.Status != "gap reached" || ws.Gap > 1e-6 || ws.Lower > full.Upper || ws.Upper < full.Lower || ws.Network == nil {
		t.Fatalf("robust hinge by the working set: %v, status %s after %d rounds, certified [%.10g, %.10g] gap %.3g (interior point [%.10g, %.10g])", err, ws.Status, ws.Iterations, ws.Lower, ws.Upper, ws.Gap, full.Lower, full.Upper)
	}
	t.Logf("robust hinge by the working set: certified gap %.3g after %d rounds", ws.Gap, ws.Iterations)
	for _, g := range []float64{0, 1, math.NaN()} {
		if _, err := Optimum(Classify(x, y).Bias().SamplePatterns(6, 3), g, 0); err == nil || !strings.Contains(err.Error(), "certified gap") {
			t.Errorf("gap %v: %v", g, err)
		}
	}
}
