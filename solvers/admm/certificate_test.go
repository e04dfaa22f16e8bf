package admm

import (
	"fmt"
	"github.com/convexnn/convexnn/internal/testenv"
	"math"
	"testing"

	"github.com/convexnn/convexnn/solvers"
	"github.com/convexnn/convexnn/solvers/certify"
	"github.com/convexnn/convexnn/solvers/internal/testprog"
)

// TestCertificateAlongADMM checks the certified bounds along ADMM runs of
// every variant, with the solver's hint and without: Lower ≤ p* ≤ Upper at
// every checked iteration against the interior-point optimum, and the gap
// with the hint closing (smaller at the end than after 10 iterations).
func TestCertificateAlongADMM(t *testing.T) {
	cases := []struct {
		c    testprog.Instance
		v    Variant
		pert solvers.Perturbation
	}{
		{testprog.Instance{N: 40, D: 4, P: 8, Loss: solvers.SquaredLoss, Bias: true, Beta: 0.01, Seed: 1}, VariantClosedForm, solvers.Perturbation{}},
		{testprog.Instance{N: 40, D: 4, P: 8, Loss: solvers.SquaredLoss, Bias: true, Beta: 0.01, Seed: 2}, VariantRBCD, solvers.Perturbation{}},
		{testprog.Instance{N: 40, D: 4, P: 8, Loss: solvers.HingeLoss, Bias: true, Beta: 0.01, Seed: 3}, VariantSplit, solvers.Perturbation{}},
		{testprog.Instance{N: 30, D: 3, P: 6, Loss: solvers.HingeLoss, Bias: true, Beta: 0.01, Seed: 4}, VariantRobust, solvers.Perturbation{Eps: 0.05}},
		{testprog.Instance{N: 30, D: 3, P: 6, Loss: solvers.SquaredLoss, Bias: true, Beta: 0.05, Seed: 5}, VariantRobust, solvers.Perturbation{Eps: 0.05, Norm: solvers.L2}},
	}
	iters := 2000
	if testing.Short() || testenv.Race { // the full count runs in make test's pass without -race
		iters = 300
	}
	for _, tc := range cases {
		t.Run(fmt.Sprintf("%s/%v", tc.v, tc.c), func(t *testing.T) {
			p := testprog.Random(t, tc.c)
			var opt float64
			if tc.pert.Eps > 0 {
				opt = solveRobustIPMOK(t, p, tc.pert).Objective
				var err error
				if opt, err = solvers.RobustObjective(p, solveRobustIPMOK(t, p, tc.pert).Weights, tc.pert); err != nil {
					t.Fatal(err)
				}
			} else {
				opt = solveIPMOK(t, p).Objective
			}
			s, err := New(p, tc.pert, tc.v, Options{MaxIter: iters}, nil)
			if err != nil {
				t.Fatal(err)
			}
			withHint, _ := certify.New(p, tc.pert)
			without, _ := certify.New(p, tc.pert)
			tol := 1e-7 * math.Max(1, math.Abs(opt))
			var first, last float64
			for it := 1; it <= iters; it++ {
				s.Step()
				if it != 10 && it%200 != 0 && it != iters {
					continue
				}
				wt := s.Weights()
				for _, c := range []struct {
					name string
					cert *certify.Certifier
					hint *certify.Hint
				}{{"hint", withHint, Hint(s)}, {"no hint", without, nil}} {
					b, err := c.cert.Bound(wt, c.hint)
					if err != nil {
						t.Fatal(err)
					}
					if b.Lower > opt+tol || b.Upper < opt-tol {
						t.Fatalf("iteration %d (%s): bounds [%.12g, %.12g] miss the optimum %.12g", it, c.name, b.Lower, b.Upper, opt)
					}
					if c.name == "hint" {
						if it == 10 {
							first = b.Gap
						}
						last = b.Gap
					}
					if it == iters {
						t.Logf("after %d iterations (%s): objective %.10g, bounds [%.10g, %.10g], certified gap %.3g, optimum %.10g", it, c.name, b.Objective, b.Lower, b.Upper, b.Gap, opt)
					}
				}
			}
			if !(last < first) {
				t.Errorf("the certified gap did not close: %.3g after 10 iterations, %.3g after %d", first, last, iters)
			}
		})
	}
}
