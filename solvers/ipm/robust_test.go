package ipm

import (
	"context"
	"fmt"
	"io"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/convexnn/convexnn/solvers"
	"github.com/convexnn/convexnn/solvers/internal/testprog"
)

func solveRobustIPMOK(t *testing.T, p *solvers.Program, pert solvers.Perturbation) *Result {
	t.Helper()
	return testprog.Optimal(t, fmt.Sprintf("SolveRobust (%v)", pert), func(log io.Writer) (*Result, error) {
		return SolveRobust(context.Background(), p, pert, Options{Verbose: log})
	}, func(res *Result) error {
		return testprog.CheckIPM(res.Status == Optimal, res.Status, res.Iterations, 0, math.Inf(1))
	})
}

// TestRobustIPMAgainstCVXOPT checks SolveRobust against CVXOPT on an
// independent formulation (vertex enumeration for the ℓ_∞ and ℓ₁ balls,
// one second-order cone per robust row for ℓ₂), and that the robust optimum
// is Solve's at ε = 0 and nondecreasing in ε.
func TestRobustIPMAgainstCVXOPT(t *testing.T) {
	testprog.RequireCVXOPT(t)
	for _, c := range testprog.RobustInstances {
		t.Run(c.String(), func(t *testing.T) {
			t.Parallel()
			p := testprog.RandomSampled(t, c)
			std := solveIPMOK(t, p)
			for _, norm := range []solvers.Norm{solvers.LInf, solvers.L2, solvers.L1} {
				zero := solveRobustIPMOK(t, p, solvers.Perturbation{Eps: 0, Norm: norm})
				if diff := math.Abs(zero.Objective - std.Objective); diff > 1e-7*math.Max(1, std.Objective) {
					t.Errorf("norm %s, ε = 0: robust optimum %.12g, Solve %.12g (|Δ| = %.1e)", norm, zero.Objective, std.Objective, diff)
				}
				prev := zero.Objective
				epss := []float64{0.01, 0.05}
				if norm == "1" {
					epss = epss[1:] // ℓ₁ ball: one radius, the oracle checks the scalar bound
				}
				for _, eps := range epss {
					pert := solvers.Perturbation{Eps: eps, Norm: norm}
					res := solveRobustIPMOK(t, p, pert)
					viol, err := solvers.RobustViolation(p, res.Weights, pert)
					if err != nil {
						t.Fatal(err)
					}
					if viol > 1e-7 {
						t.Errorf("%v: robust constraint violation %.2e", pert, viol)
					}
					start := time.Now()
					ref := testprog.CVXOPTRobust(t, p, pert)
					cvxTime := time.Since(start)
					if ref.Status != "optimal" {
						t.Logf("%v: cvxopt status %q at tolerance %g", pert, ref.Status, ref.Tolerance)
					}
					diff := math.Abs(res.Objective - ref.Objective)
					t.Logf("%v: objective %.12f (cvxopt %.12f, |Δ|/max(1,|obj|) = %.1e, cvxopt violation %.1e); violation %.1e, gap %.1e; %d iterations in %.3fs (cvxopt %d at tol %g, %.2fs with start-up)",
						pert, res.Objective, ref.Objective, diff/math.Max(1, math.Abs(ref.Objective)), ref.Violation, viol, res.Gap,
						res.Iterations, res.Seconds, ref.Iterations, ref.Tolerance, cvxTime.Seconds())
					if diff > 1e-6*math.Max(1, math.Abs(ref.Objective)) {
						t.Errorf("%v: objective %.12g, cvxopt %.12g", pert, res.Objective, ref.Objective)
					}
					if res.Objective < std.Objective-1e-8*math.Max(1, std.Objective) {
						t.Errorf("%v: robust optimum %.12g below the standard optimum %.12g", pert, res.Objective, std.Objective)
					}
					if res.Objective < prev-1e-8*math.Max(1, prev) {
						t.Errorf("%v: robust optimum %.12g below the optimum %.12g at the smaller radius", pert, res.Objective, prev)
					}
					prev = res.Objective
				}
			}
		})
	}
}

func TestRobustIPMRefuses(t *testing.T) {
	p := testprog.RandomSampled(t, testprog.Instance{N: 10, D: 2, P: 2, Loss: solvers.SquaredLoss, Beta: 0.1, Seed: 3})
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		p    *solvers.Program
		pert solvers.Perturbation
		want string
	}{
		{"nil", nil, solvers.Perturbation{}, "nil program"},
		{"radius", p, solvers.Perturbation{Eps: -1}, "radius"},
		{"norm", p, solvers.Perturbation{Eps: 0.1, Norm: "3"}, "unknown perturbation norm"},
		{"loss", &solvers.Program{X: p.X, Y: make([]float64, len(p.Y)), Loss: solvers.BCELoss, Beta: 0.1, D: p.D}, solvers.Perturbation{Eps: 0.1}, "not the"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := SolveRobust(ctx, tc.p, tc.pert, Options{})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one mentioning %q", err, tc.want)
			}
		})
	}
}

// The radius where every hinge margin is saturated: a large ε forces the
// robust constraints to zero out most groups, and the solver must still
// agree with RobustObjective (no error from the built-in check).
func TestRobustIPMLargeRadius(t *testing.T) {
	for _, c := range testprog.RobustInstances[:3:3] {
		p := testprog.RandomSampled(t, c)
		for _, norm := range []solvers.Norm{solvers.LInf, solvers.L2, solvers.L1} {
			pert := solvers.Perturbation{Eps: 0.5, Norm: norm}
			res := solveRobustIPMOK(t, p, pert)
			if viol, _ := solvers.RobustViolation(p, res.Weights, pert); viol > 1e-7 {
				t.Errorf("%v %v: violation %.2e", c, pert, viol)
			}
			t.Logf("%v %v: objective %.10f in %d iterations", c, pert, res.Objective, res.Iterations)
		}
	}
}
