package ipm

import (
	"context"
	"fmt"
	"testing"

	"github.com/convexnn/convexnn/solvers"
	"github.com/convexnn/convexnn/solvers/certify"
	"github.com/convexnn/convexnn/solvers/internal/testprog"
)

// TestDualsCertifyTheSolution checks that the interior-point method's
// multipliers (Result.Dual) certify its own solutions, standard and robust
// (ℓ_∞, ℓ₂, ℓ₁), for the hinge and the squared loss: Lower ≤ Objective and
// a certified relative gap of at most 1e-6.
func TestDualsCertifyTheSolution(t *testing.T) {
	norms := []solvers.Norm{solvers.LInf, solvers.L2, solvers.L1}
	for q, c := range testprog.RobustInstances {
		for _, eps := range []float64{0, 0.05} {
			pert := solvers.Perturbation{Eps: eps, Norm: norms[q%3]}
			t.Run(fmt.Sprintf("%v/%v", c, pert), func(t *testing.T) {
				p := testprog.Random(t, c)
				var res *Result
				var err error
				if eps == 0 {
					res, err = Solve(context.Background(), p, Options{})
				} else {
					res, err = SolveRobust(context.Background(), p, pert, Options{})
				}
				if err != nil || res.Status != Optimal || res.Dual == nil {
					t.Fatalf("status %v, dual %v: %v", res.Status, res.Dual != nil, err)
				}
				cert, err := certify.New(p, pert)
				if err != nil {
					t.Fatal(err)
				}
				b, err := cert.Bound(res.Weights, res.Dual)
				if err != nil {
					t.Fatal(err)
				}
				if b.Lower > res.Objective || b.Gap > 1e-6 {
					t.Fatalf("objective %.12g, certified [%.12g, %.12g], gap %.3g", res.Objective, b.Lower, b.Upper, b.Gap)
				}
				t.Logf("objective %.12g, certified gap %.2g", res.Objective, b.Gap)
			})
		}
	}
}
