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
	"github.com/convexnn/convexnn/solvers/certify"
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

// TestRobustIPMSmoothLossesAgainstCVXOPT checks the robust BCE and logistic
// programs (the model rebuilt in flight) against the cvxopt oracle, whose
// formulation enumerates the vertices of the ℓ∞ and ℓ₁ balls and uses the
// cone of the ℓ₂ ball, on small random programs: objectives within 1e-6,
// robust feasibility, and a certified gap below 1e-6 with the method's
// multipliers.
func TestRobustIPMSmoothLossesAgainstCVXOPT(t *testing.T) {
	testprog.RequireCVXOPT(t)
	var ps []*solvers.Program
	var perts []solvers.Perturbation
	norms := []solvers.Norm{solvers.LInf, solvers.L2, solvers.L1}
	for k, c := range []testprog.Instance{
		{N: 24, D: 3, P: 5, Bias: true, Beta: 0.01, Seed: 41},
		{N: 20, D: 2, P: 4, Beta: 0.02, Seed: 42},
		{N: 30, D: 3, P: 6, Bias: true, Beta: 0.005, Seed: 43},
		{N: 26, D: 3, P: 4, Beta: 0.01, Seed: 44},
		{N: 22, D: 3, P: 5, Bias: true, Beta: 0.03, Seed: 45},
		{N: 28, D: 2, P: 6, Beta: 0.01, Seed: 46},
	} {
		c.Loss = solvers.SquaredLoss
		p := testprog.RandomSampled(t, c)
		p.Loss = solvers.BCELoss
		if k%2 == 1 {
			p.Loss = solvers.LogisticLoss
		}
		for i, y := range p.Y {
			switch {
			case p.Loss == solvers.LogisticLoss:
				p.Y[i] = math.Copysign(1, y)
			case y > 0:
				p.Y[i] = 1
			default:
				p.Y[i] = 0
			}
		}
		ps, perts = append(ps, p), append(perts, solvers.Perturbation{Eps: 0.05 + 0.05*float64(k%3), Norm: norms[k%3]})
	}
	refs := testprog.CVXOPTRobustBatch(t, ps, perts)
	for k, p := range ps {
		res, err := SolveRobust(context.Background(), p, perts[k], Options{})
		if err != nil || res.Status != Optimal {
			t.Fatalf("#%d %v %v: %v %v", k, p.Loss, perts[k], res.Status, err)
		}
		viol, err := solvers.RobustViolation(p, res.Weights, perts[k])
		if err != nil {
			t.Fatal(err)
		}
		cert, err := certify.New(p, perts[k])
		if err != nil {
			t.Fatal(err)
		}
		b, err := cert.Bound(res.Weights, res.Dual)
		if err != nil {
			t.Fatal(err)
		}
		ref := refs[k].Objective
		t.Logf("#%d %v %v: objective %.10g (cvxopt %.10g), violation %.1e, certified gap %.1e, %d iterations", k, p.Loss, perts[k], res.Objective, ref, viol, b.Gap, res.Iterations)
		if d := math.Abs(res.Objective - ref); d > 1e-6*math.Max(1, math.Abs(ref)) {
			t.Errorf("#%d: objective %.12g, cvxopt %.12g", k, res.Objective, ref)
		}
		if viol > 1e-7 {
			t.Errorf("#%d: robust constraint violation %.2e", k, viol)
		}
		if b.Gap > 1e-6 || b.Lower > ref+1e-9 {
			t.Errorf("#%d: certificate [%.12g, %.12g] gap %.2e against cvxopt's %.12g", k, b.Lower, b.Upper, b.Gap, ref)
		}
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
		{"labels", &solvers.Program{X: p.X, Y: p.Y, Loss: solvers.BCELoss, Beta: 0.1, D: p.D}, solvers.Perturbation{Eps: 0.1}, "labels 0 or 1"},
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
