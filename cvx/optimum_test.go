package cvx

import (
	"math"
	"strings"
	"testing"

	"github.com/convexnn/convexnn/data"
)

// TestOptimumReachesTheCertifiedGap checks cvx.Optimum on its three paths:
// the interior-point method for a squared-loss problem and the proximal
// Newton method for BCE (both certified to 1e-6), ADMM for robust BCE
// (certified to 5e-2 within the iteration cap, the bounds enclosing the
// objective); and its refusals.
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
	rob, err := Optimum(Classify(x, y).BCE().Beta(0.01).Bias().SamplePatterns(6, 3).Robust(0.02, LInf), 5e-2, 20000)
	if err != nil || rob.Status != "gap reached" || rob.Gap > 5e-2 || rob.Lower > rob.Upper || rob.Iterations%25 != 0 {
		t.Fatalf("robust BCE: %v, status %s after %d iterations, certified [%.10g, %.10g] gap %.3g", err, rob.Status, rob.Iterations, rob.Lower, rob.Upper, rob.Gap)
	}
	t.Logf("robust BCE by ADMM: certified gap %.3g after %d iterations", rob.Gap, rob.Iterations)
	for _, g := range []float64{0, 1, math.NaN()} {
		if _, err := Optimum(Classify(x, y).Bias().SamplePatterns(6, 3), g, 0); err == nil || !strings.Contains(err.Error(), "certified gap") {
			t.Errorf("gap %v: %v", g, err)
		}
	}
}
