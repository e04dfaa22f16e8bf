package scp

import (
	"context"
	"math"
	"strings"
	"testing"

	"github.com/convexnn/convexnn/solvers"
	"github.com/convexnn/convexnn/solvers/ipm"
)

// TestActiveSetReachesTheOptimum: on random Lassos (strongly correlated
// ReLU features) the feature-sign search, from zero and from warm starts,
// reaches the interior-point optimum with a certified gap of 10⁻⁹, and its
// gap is a valid certificate: F(α) − gap ≤ F* ≤ F(α).
func TestActiveSetReachesTheOptimum(t *testing.T) {
	for seed := uint64(1); seed <= 16; seed++ {
		p, _ := randomLasso(t, 30+5*int(seed), 3, 10+15*int(seed), seed)
		if seed%2 == 0 {
			p.Beta = 0.002
		}
		opt, err := SolveInteriorPoint(context.Background(), p.H, p.Y, solvers.SquaredLoss, p.Beta, ipm.Options{})
		if err != nil {
			t.Fatal(err)
		}
		lo := opt.Objective - opt.Gap
		_, m := p.H.Dims()
		half := make([]float64, m)
		for j := range half {
			half[j] = opt.Alpha[j] * 0.5
		}
		for _, start := range [][]float64{nil, opt.Alpha, half} {
			res, err := SolveActiveSet(p, start, 0)
			if err != nil {
				t.Fatal(err)
			}
			if res.Gap < 0 || res.Objective-res.Gap > opt.Objective+1e-12*math.Abs(opt.Objective) || res.Objective < lo-1e-12*math.Abs(lo) {
				t.Fatalf("seed %d: F = %.14g, gap %.3g; the interior point's F = %.14g, gap %.3g", seed, res.Objective, res.Gap, opt.Objective, opt.Gap)
			}
			if res.Gap > 1e-9*math.Max(1, res.Objective) {
				t.Errorf("seed %d (m = %d): gap %.3g after %d steps", seed, m, res.Gap, res.Steps)
			}
		}
	}
	p, _ := randomLasso(t, 20, 3, 10, 1)
	if _, err := SolveActiveSet(p, make([]float64, 3), 0); err == nil || !strings.Contains(err.Error(), "3 weights") {
		t.Errorf("a start of the wrong length: %v", err)
	}
}
