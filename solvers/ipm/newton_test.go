package ipm

import (
	"context"
	"math"
	"strings"
	"testing"

	"github.com/convexnn/convexnn/solvers"
	"github.com/convexnn/convexnn/solvers/internal/testprog"
)

// smoothInstances are small random programs with the BCE and logistic
// losses (labels 0/1 and ±1 from a teacher network's signs).
func smoothInstances(t *testing.T) []*solvers.Program {
	t.Helper()
	var ps []*solvers.Program
	for k, c := range []testprog.Instance{
		{N: 30, D: 3, P: 6, Bias: true, Beta: 0.01, Seed: 31},
		{N: 40, D: 4, P: 8, Beta: 0.001, Seed: 32},
		{N: 25, D: 3, P: 5, Bias: true, Beta: 0.05, Seed: 33},
		{N: 60, D: 5, P: 12, Beta: 0.003, Seed: 34},
	} {
		c.Loss = solvers.SquaredLoss
		p := testprog.Random(t, c)
		loss := solvers.BCELoss
		if k%2 == 1 {
			loss = solvers.LogisticLoss
		}
		for i, y := range p.Y {
			switch {
			case loss == solvers.BCELoss && y > 0:
				p.Y[i] = 1
			case loss == solvers.BCELoss:
				p.Y[i] = 0
			default:
				p.Y[i] = math.Copysign(1, y)
			}
		}
		p.Loss = loss
		ps = append(ps, p)
	}
	return ps
}

// TestNewtonReachesTheOptimum checks that the proximal Newton method
// reaches a certified gap of 1e-6 on small BCE and logistic programs, that
// its bounds enclose cvxopt's optimum, and that its objective is within
// 1e-6 of it.
func TestNewtonReachesTheOptimum(t *testing.T) {
	testprog.RequireCVXOPT(t)
	ps := smoothInstances(t)
	perts := make([]solvers.Perturbation, len(ps))
	ref := testprog.CVXOPTRobustBatch(t, ps, perts)
	for k, p := range ps {
		nt, err := NewNewton(p, 1e-6, Options{}, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		last, err := nt.Solve(context.Background(), 0, nil)
		if err != nil {
			t.Fatalf("#%d %v: %v", k, p.Loss, err)
		}
		opt := ref[k].Objective
		b := last.Bound
		t.Logf("#%d %v: %d steps, gap %.2e, objective %.10g, cvxopt %.10g", k, p.Loss, last.Iter, b.Gap, last.Objective, opt)
		if !(b.Gap <= 1e-6) {
			t.Errorf("#%d: certified gap %g", k, b.Gap)
		}
		if slack := 1e-7 * math.Max(1, math.Abs(opt)); b.Lower > opt+slack || b.Upper < opt-slack {
			t.Errorf("#%d: bounds [%.12g, %.12g] miss cvxopt's optimum %.12g", k, b.Lower, b.Upper, opt)
		}
		if math.Abs(last.Objective-opt) > 2e-6*math.Max(1, math.Abs(opt)) {
			t.Errorf("#%d: objective %.12g, cvxopt %.12g", k, last.Objective, opt)
		}
	}
}

// TestNewtonResumesExactly checks that a method rebuilt from a saved state
// takes the same steps as one that never stopped (each step cut short by
// an interior-point iteration limit, so that there are several).
func TestNewtonResumesExactly(t *testing.T) {
	p := smoothInstances(t)[1]
	o := Options{MaxIter: 25}
	a, err := NewNewton(p, 1e-9, o, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := a.Step(ctx); err != nil {
		t.Fatal(err)
	}
	saved := testprog.Saved(t, a.State)
	b, err := NewNewton(p, 1e-9, o, &saved, nil)
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		sa, errA := a.Step(ctx)
		sb, errB := b.Step(ctx)
		if (errA == nil) != (errB == nil) {
			t.Fatalf("errors differ: %v, %v", errA, errB)
		}
		if sa.Iter != sb.Iter || sa.Objective != sb.Objective || sa.Bound.Lower != sb.Bound.Lower || sa.Bound.Upper != sb.Bound.Upper {
			t.Fatalf("resumed step differs: %+v against %+v", sb.Bound, sa.Bound)
		}
		t.Logf("step %d: objective %.10g, certified gap %.3g", sa.Iter, sa.Objective, sa.Bound.Gap)
		if errA != nil {
			break
		}
	}
}

// TestNewtonBadInput checks the errors of bad settings.
func TestNewtonBadInput(t *testing.T) {
	p := smoothInstances(t)[0]
	hinge := *p
	hinge.Loss = solvers.HingeLoss
	hinge.Y = make([]float64, len(p.Y))
	for k, y := range p.Y {
		hinge.Y[k] = 2*y - 1
	}
	bad := p.NewWeights()
	bad.V.Set(0, 0, math.NaN())
	for _, c := range []struct {
		p    *solvers.Program
		gap  float64
		st   *NewtonState
		warm *solvers.Weights
		want string
	}{
		{p, 0, nil, nil, "need 0 < gap < 1"},
		{p, math.NaN(), nil, nil, "need 0 < gap < 1"},
		{&hinge, 1e-6, nil, nil, "smooth loss"},
		{p, 1e-6, &NewtonState{Iter: 1}, nil, "want P·d"},
		{p, 1e-6, nil, &bad, "NaN"},
	} {
		_, err := NewNewton(c.p, c.gap, Options{}, c.st, c.warm)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("gap %v: error %v, want %q", c.gap, err, c.want)
		}
	}
}
