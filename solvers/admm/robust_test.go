package admm

import (
	"context"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/convexnn/convexnn/internal/testenv"
	"github.com/convexnn/convexnn/solvers"
	"github.com/convexnn/convexnn/solvers/internal/testprog"
)

// robustADMMSolve runs Robust from zero with tight tolerances and at
// most maxIter iterations, and checks that the reported objective is
// RobustObjective at the returned weights.
func robustADMMSolve(t *testing.T, p *solvers.Program, pert solvers.Perturbation, maxIter int) (*Robust, Step) {
	t.Helper()
	a, hist, err := solveRobust(context.Background(), p, pert, Options{AbsTol: 1e-10, RelTol: 1e-10, MaxIter: maxIter}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	last := hist[len(hist)-1]
	obj, err := solvers.RobustObjective(p, a.Weights(), pert)
	if err != nil {
		t.Fatal(err)
	}
	viol, err := solvers.RobustViolation(p, a.Weights(), pert)
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(obj-last.ConvexObjective) > 1e-12*math.Max(1, obj) || math.Abs(viol-last.Violation) > 1e-12*math.Max(1, viol) {
		t.Fatalf("step reports robust objective %.15g and violation %.3g; RobustObjective %.15g, RobustViolation %.3g", last.ConvexObjective, last.Violation, obj, viol)
	}
	return a, last
}

// TestADMMRobustMatchesIPM: on the random instances of the robust
// interior-point tests (hinge and squared loss, with and without bias), for
// the ℓ_∞, ℓ₂ and ℓ₁ sets and ε ∈ {0.01, 0.05}, the robust ADMM reaches the
// interior-point optimum to 1e-5 relative, its iterate satisfying the
// robust constraints to 1e-4.
func TestADMMRobustMatchesIPM(t *testing.T) {
	testenv.SkipUnderRace(t, "100 000 robust ADMM iterations per set (28 s under -race); TestADMMRobustAgainstCVXOPT, TestADMMRobustEpsZero and TestADMMRobustResumesExactly run robust ADMM's goroutines under it")
	for _, c := range testprog.RobustInstances {
		t.Run(c.String(), func(t *testing.T) {
			t.Parallel()
			p := testprog.RandomSampled(t, c)
			for _, nm := range []solvers.Norm{solvers.LInf, solvers.L2, solvers.L1} {
				for _, eps := range []float64{0.01, 0.05} {
					pert := solvers.Perturbation{Eps: eps, Norm: nm}
					ipm := solveRobustIPMOK(t, p, pert)
					start := time.Now()
					_, last := robustADMMSolve(t, p, pert, 100000)
					rel := (last.ConvexObjective - ipm.Objective) / math.Max(1, math.Abs(ipm.Objective))
					t.Logf("%v: ADMM %.10f after %d iterations (%.2fs), IPM %.10f: relative %+.1e, violation %.1e",
						pert, last.ConvexObjective, last.Iter, time.Since(start).Seconds(), ipm.Objective, rel, last.Violation)
					if math.Abs(rel) > 1e-5 || last.Violation > 1e-4 {
						t.Errorf("%v: ADMM robust objective %.10g (violation %.1e), IPM %.10g", pert, last.ConvexObjective, last.Violation, ipm.Objective)
					}
				}
			}
		})
	}
}

// robustSmoothInstances are the BCE (labels 0/1) and logistic (±1)
// versions of hinge instances.
func robustSmoothInstances(t *testing.T) map[string]*solvers.Program {
	out := map[string]*solvers.Program{}
	for _, c := range testprog.RobustInstances[:2] {
		for _, l := range []solvers.Loss{solvers.BCELoss, solvers.LogisticLoss} {
			p := testprog.RandomSampled(t, c)
			q := *p
			q.Loss = l
			q.Y = append([]float64(nil), p.Y...)
			if l == solvers.BCELoss {
				for k, y := range q.Y {
					q.Y[k] = (y + 1) / 2
				}
			}
			out[fmt.Sprintf("%v-%v", l, c)] = &q
		}
	}
	return out
}

// TestADMMRobustAgainstCVXOPT: BCE (eq. convex_ce_adver) and logistic, which
// the interior-point method does not solve, and a hinge and a squared
// instance, against CVXOPT's independent formulation (vertex enumeration;
// cp, its smooth convex solver, for BCE and logistic): 1e-5 relative.
func TestADMMRobustAgainstCVXOPT(t *testing.T) {
	testprog.RequireCVXOPT(t)
	progs := robustSmoothInstances(t)
	progs["hinge"] = testprog.RandomSampled(t, testprog.RobustInstances[0])
	progs["squared"] = testprog.RandomSampled(t, testprog.RobustInstances[3])
	if testenv.Race { // all of them run in make test's pass without -race
		for name := range progs {
			if !strings.HasPrefix(name, "bce-hinge n=24") {
				delete(progs, name)
			}
		}
	}
	if len(progs) == 0 {
		t.Fatal("no instance")
	}
	for name, p := range progs {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			for _, pert := range []solvers.Perturbation{{Eps: 0.01}, {Eps: 0.05}, {Eps: 0.05, Norm: "2"}} {
				ref := testprog.CVXOPTRobust(t, p, pert)
				_, last := robustADMMSolve(t, p, pert, 100000)
				rel := (last.ConvexObjective - ref.Objective) / math.Max(1, math.Abs(ref.Objective))
				t.Logf("%v: ADMM %.10f after %d iterations, cvxopt %.10f (%s, violation %.1e): relative %+.1e, violation %.1e",
					pert, last.ConvexObjective, last.Iter, ref.Objective, ref.Status, ref.Violation, rel, last.Violation)
				if math.Abs(rel) > 1e-5 || last.Violation > 1e-4 {
					t.Errorf("%v: ADMM robust objective %.10g (violation %.1e), cvxopt %.10g", pert, last.ConvexObjective, last.Violation, ref.Objective)
				}
			}
		})
	}
}

// TestADMMRobustEpsZero: with ε = 0 the robust ADMM solves the standard
// program (interior-point optimum to 1e-5), and its objective grows with ε.
func TestADMMRobustEpsZero(t *testing.T) {
	instances := testprog.RobustInstances[1:3]
	if testenv.Race {
		instances = instances[:1] // both run in make test's pass without -race
	}
	for _, c := range instances {
		p := testprog.RandomSampled(t, c)
		std := solveIPMOK(t, p)
		_, zero := robustADMMSolve(t, p, solvers.Perturbation{}, 100000)
		if rel := (zero.ConvexObjective - std.Objective) / math.Max(1, std.Objective); math.Abs(rel) > 1e-5 {
			t.Errorf("%v, ε = 0: ADMM %.10g, standard optimum %.10g", c, zero.ConvexObjective, std.Objective)
		}
		_, rob := robustADMMSolve(t, p, solvers.Perturbation{Eps: 0.1}, 20000)
		if rob.ConvexObjective < zero.ConvexObjective*(1+1e-3) {
			t.Errorf("%v: ε = 0.1 gives %.10g, ε = 0 gives %.10g", c, rob.ConvexObjective, zero.ConvexObjective)
		}
	}
}

// TestADMMRobustResumesExactly: a solver rebuilt from a saved state takes
// bitwise the steps of an uninterrupted one, across ρ adaptations.
func TestADMMRobustResumesExactly(t *testing.T) {
	progs := robustSmoothInstances(t)
	progs["squared"] = testprog.RandomSampled(t, testprog.RobustInstances[2])
	for name, p := range progs {
		pert := solvers.Perturbation{Eps: 0.05, Norm: "1"}
		whole, err := NewRobust(p, pert, Options{}, nil)
		if err != nil {
			t.Fatal(err)
		}
		part, err := NewRobust(p, pert, Options{}, nil)
		if err != nil {
			t.Fatal(err)
		}
		for k := 0; k < 137; k++ {
			whole.Step()
			part.Step()
		}
		st := part.State
		cl := func(v []float64) []float64 { return append([]float64(nil), v...) }
		saved := RobustState{Iter: st.Iter, Rho: st.Rho, U: cl(st.U), V: cl(st.V), Lambda: cl(st.Lambda), R: cl(st.R), Kappa: cl(st.Kappa),
			S: cl(st.S), Nu: cl(st.Nu), Z: cl(st.Z), M: cl(st.M)}
		resumed, err := NewRobust(p, pert, Options{}, &saved)
		if err != nil {
			t.Fatal(err)
		}
		for k := 0; k < 263; k++ {
			a, b := whole.Step(), resumed.Step()
			a.Seconds, b.Seconds = 0, 0
			if a != b {
				t.Fatalf("%s: step %d differs after resume:\n%+v\n%+v", name, a.Iter, a, b)
			}
		}
		if whole.Rho() == 0.1 && name == "squared" {
			t.Logf("%s: ρ never adapted", name)
		}
	}
}

func TestADMMRobustRejectsBadInput(t *testing.T) {
	p := testprog.RandomSampled(t, testprog.RobustInstances[1])
	n, d, np := p.Dims()
	good := func() *RobustState {
		z := func(m int) []float64 { return make([]float64, m) }
		return &RobustState{Rho: 0.1, U: z(2 * np * d), V: z(2 * np * d), Lambda: z(2 * np * d), R: z(2 * np * d), Kappa: z(2 * np * d),
			S: z(2 * np * n), Nu: z(2 * np * n), Z: z(n * d), M: z(n * d)}
	}
	short, nan := good(), good()
	short.Z = short.Z[1:]
	nan.Kappa[3] = math.NaN()
	for _, c := range []struct {
		p    *solvers.Program
		pert solvers.Perturbation
		o    Options
		st   *RobustState
		want string
	}{
		{nil, solvers.Perturbation{}, Options{}, nil, "no program"},
		{p, solvers.Perturbation{Eps: -1}, Options{}, nil, "radius"},
		{p, solvers.Perturbation{Eps: 0.1, Norm: "3"}, Options{}, nil, "norm"},
		{p, solvers.Perturbation{Eps: 0.1}, Options{Rho: -1}, nil, "ρ"},
		{p, solvers.Perturbation{Eps: 0.1}, Options{Rho: 1, Gamma: 2}, nil, "dual step"},
		{p, solvers.Perturbation{Eps: 0.1}, Options{}, short, "39 entries in Z"},
		{p, solvers.Perturbation{Eps: 0.1}, Options{}, nan, "Kappa[3] = NaN"},
	} {
		if _, err := NewRobust(c.p, c.pert, c.o, c.st); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("want an error with %q, got %v", c.want, err)
		}
	}
}
