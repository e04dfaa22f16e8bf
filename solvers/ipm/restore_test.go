package ipm

import (
	"context"
	"github.com/convexnn/convexnn/internal/testenv"
	"math"
	"testing"

	"github.com/convexnn/convexnn/solvers"
	"github.com/convexnn/convexnn/solvers/admm"
	"github.com/convexnn/convexnn/solvers/internal/testprog"
	"gonum.org/v1/gonum/mat"
)

// TestRestoreRobustFeasibility: an early robust-ADMM iterate violates the
// robust constraints; after RestoreRobust none is violated,
// every training point is certified, groups that were feasible are kept
// bitwise and the robust objective moves by little.
func TestRestoreRobustFeasibility(t *testing.T) {
	instances := testprog.RobustInstances[:3]
	if testenv.Race { // all of them run in make test's pass without -race
		instances = instances[:1]
	}
	for _, c := range instances {
		for _, nm := range []solvers.Norm{solvers.LInf, solvers.L2, solvers.L1} {
			p := testprog.RandomSampled(t, c)
			pert := solvers.Perturbation{Eps: 0.05, Norm: nm}
			a, _, err := admmRobust(t, p, pert, 150)
			if err != nil {
				t.Fatal(err)
			}
			wt := a.Weights()
			before, err := solvers.RobustViolation(p, wt, pert)
			if err != nil {
				t.Fatal(err)
			}
			if before <= 0 {
				t.Fatalf("%v %v: the ADMM iterate is already feasible; the test needs a violated one", c, pert)
			}
			fixed, changed, err := RestoreRobust(context.Background(), p, wt, pert)
			if err != nil {
				t.Fatalf("%v %v: %v", c, pert, err)
			}
			after, err := solvers.RobustViolation(p, fixed, pert)
			if err != nil {
				t.Fatal(err)
			}
			o0, _ := solvers.RobustObjective(p, wt, pert)
			o1, _ := solvers.RobustObjective(p, fixed, pert)
			t.Logf("%v %v: violation %.2e → %g, %d groups changed, robust objective %.6g → %.6g", c, pert, before, after, changed, o0, o1)
			if after != 0 || changed == 0 {
				t.Fatalf("%v %v: violation %v after restoring %d groups", c, pert, after, changed)
			}
			// A feasible point cannot beat the optimum; from a converged
			// iterate the restored point is close to it.
			opt := solveRobustIPMOK(t, p, pert).Objective
			if o1 < opt-1e-9*math.Max(1, opt) {
				t.Fatalf("%v %v: restored robust objective %.10g below the optimum %.10g", c, pert, o1, opt)
			}
			late, _, err := admmRobust(t, p, pert, 5000)
			if err != nil {
				t.Fatal(err)
			}
			lf, _, err := RestoreRobust(context.Background(), p, late.Weights(), pert)
			if err != nil {
				t.Fatal(err)
			}
			ol, _ := solvers.RobustObjective(p, lf, pert)
			if v, _ := solvers.RobustViolation(p, lf, pert); v != 0 || ol < opt-1e-9*math.Max(1, opt) || ol > opt+1e-3*math.Max(1, opt) {
				t.Fatalf("%v %v: restored 5000-iteration point: violation %v, robust objective %.10g, optimum %.10g", c, pert, v, ol, opt)
			}
			t.Logf("  after 5000 iterations: restored robust objective %.8g, optimum %.8g", ol, opt)
			// Feasible groups are untouched.
			kind := pert.Norm.Canonical()
			n, d, np := p.Dims()
			f := solvers.PerturbedFeatures(d, p.Bias)
			xu := make([]float64, n)
			for j := 0; j < 2*np; j++ {
				src, dst := wt.V, fixed.V
				if j >= np {
					src, dst = wt.W, fixed.W
				}
				u := src.RawRowView(j % np)
				if robustGroupViolation(p, j%np, u, pert.Eps, kind, f, xu) <= 0 && !mat.Equal(src.RowView(j%np), dst.RowView(j%np)) {
					t.Fatalf("%v %v: feasible group %d changed", c, pert, j)
				}
			}
			// Every training point is certified.
			net, err := p.Recover(fixed)
			if err != nil {
				t.Fatal(err)
			}
			raw := p.X.Slice(0, n, 0, f).(*mat.Dense)
			cert, margin, err := solvers.CertifiedPoints(net, raw, pert)
			if err != nil {
				t.Fatal(err)
			}
			for k, ok := range cert {
				if !ok {
					t.Fatalf("%v %v: point %d not certified after restoration (margin %v)", c, pert, k, margin[k])
				}
			}
		}
	}
}

// admmRobust runs the robust ADMM for iters iterations.
func admmRobust(t *testing.T, p *solvers.Program, pert solvers.Perturbation, iters int) (*admm.Robust, []admm.Step, error) {
	t.Helper()
	a, err := admm.NewRobust(p, pert, admm.Options{}, nil)
	if err != nil {
		return nil, nil, err
	}
	hist, err := admm.Solve(context.Background(), a, iters, nil)
	return a, hist, err
}
