package certify_test

import (
	"context"
	"testing"

	"github.com/convexnn/convexnn/solvers"
	"github.com/convexnn/convexnn/solvers/certify"
	"github.com/convexnn/convexnn/solvers/internal/testprog"
	"github.com/convexnn/convexnn/solvers/ipm"
)

func init() { certify.ExactSolverForTest = ipm.SolveProjection }

// BenchmarkBound measures one certificate of a mid-size hinge program
// (n = 1000, d = 20, P = 24) at a point of the interior-point method stopped
// at a relative gap of 10⁻³, with its multipliers and without them (as from
// a solver that has none): the multipliers' projected-gradient refinement is
// most of it.
func BenchmarkBound(b *testing.B) {
	p := testprog.Random(b, testprog.Instance{N: 1000, D: 20, P: 24, Loss: solvers.HingeLoss, Beta: 1e-3, Seed: 5})
	res, err := ipm.Solve(context.Background(), p, ipm.Options{Tol: 1e-3})
	if err != nil {
		b.Fatal(err)
	}
	for _, c := range []struct {
		name string
		hint *certify.Hint
	}{{"ipm-dual", res.Dual}, {"no-hint", nil}} {
		b.Run(c.name, func(b *testing.B) {
			cert, err := certify.New(p, solvers.Perturbation{})
			if err != nil {
				b.Fatal(err)
			}
			var bd certify.Bound
			for b.Loop() {
				if bd, err = cert.Bound(res.Weights, c.hint); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(bd.Gap, "gap")
		})
	}
}
