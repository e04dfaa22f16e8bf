package admm

import (
	"context"
	"github.com/convexnn/convexnn/internal/testenv"
	"math"
	"testing"

	"github.com/convexnn/convexnn/solvers"
)

// hingeProgram is programBias with labels ±1 from a planted
// two-neuron ReLU rule, some flipped, and the hinge loss.
func hingeProgram(n, d, np int, beta float64, seed uint64, bias bool) *solvers.Program {
	p := programBias(n, d, np, beta, seed, bias)
	p.Loss = solvers.HingeLoss
	for k := range p.Y {
		f := p.Y[k] - 0.3
		if k%7 == 3 {
			f = -f
		}
		if f >= 0 {
			p.Y[k] = 1
		} else {
			p.Y[k] = -1
		}
	}
	return p
}

func TestADMMHingeMatchesInteriorPoint(t *testing.T) {
	for _, c := range []struct {
		n, d, np int
		beta     float64
		bias     bool
		seed     uint64
		maxViol  float64
	}{
		{30, 2, 4, 1e-2, false, 1, 1e-6},
		{45, 3, 6, 5e-3, true, 2, 1e-6},
		// Known open problem: this degenerate instance reaches the
		// iteration limit with the objective within 1e-6 of the optimum
		// but the residuals (and the violation) stalled near 1e-5: ADMM's
		// sublinear rate on this piecewise-linear loss.
		{60, 4, 8, 2e-3, true, 3, 2e-5},
	} {
		if testenv.Race && c.n == 60 { // 200000 iterations; run in make test's pass without -race
			continue
		}
		p := hingeProgram(c.n, c.d, c.np, c.beta, c.seed, c.bias)
		ref := solveIPMOK(t, p)
		a, steps, err := solveSplit(context.Background(), p,
			Options{AbsTol: 1e-10, RelTol: 1e-9, MaxIter: 200000}, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		wt := a.Weights()
		obj, err := p.Objective(wt)
		if err != nil {
			t.Fatal(err)
		}
		viol, err := p.Violation(wt)
		if err != nil {
			t.Fatal(err)
		}
		last := steps[len(steps)-1]
		rel := (obj - ref.Objective) / math.Abs(ref.Objective)
		t.Logf("n=%d d=%d P=%d bias=%v: %d iterations, ADMM %.10g, IPM %.10g, rel gap %.2e, violation %.1e, step objective %.10g",
			c.n, c.d, c.np, c.bias, len(steps), obj, ref.Objective, rel, viol, last.ConvexObjective)
		if !(math.Abs(rel) <= 1e-5) {
			t.Errorf("relative gap %v > 1e-5", rel)
		}
		if !(viol <= c.maxViol) {
			t.Errorf("violation %v > %v", viol, c.maxViol)
		}
		if math.Abs(last.ConvexObjective-obj) > 1e-9*math.Abs(obj) {
			t.Errorf("reported objective %v, Program.Objective %v", last.ConvexObjective, obj)
		}
	}
}

func TestADMMHingeRejectsBadInput(t *testing.T) {
	if _, _, err := solveSplit(context.Background(), nil, Options{MaxIter: 10}, nil, nil); err == nil {
		t.Error("nil program accepted")
	}
	h := hingeProgram(20, 2, 3, 1e-2, 5, false)
	if _, _, err := solveSplit(context.Background(), h, Options{Rho: -1, MaxIter: 10}, nil, nil); err == nil {
		t.Error("negative ρ accepted")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, _, err := solveSplit(ctx, h, Options{MaxIter: 10}, nil, nil); err == nil {
		t.Error("canceled context not reported")
	}
}

func TestADMMSplitProxIsStationary(t *testing.T) {
	for _, loss := range []solvers.Loss{solvers.BCELoss, solvers.LogisticLoss, solvers.SquaredLoss, solvers.HingeLoss} {
		p := program(7, 2, 2, 1e-2, 3)
		p.Loss = loss
		for k := range p.Y {
			switch loss {
			case solvers.BCELoss:
				p.Y[k] = float64(k % 2)
			case solvers.LogisticLoss, solvers.HingeLoss:
				p.Y[k] = float64(2*(k%2) - 1)
			}
		}
		for _, rho := range []float64{1e-4, 0.1, 30} {
			h := &splitWork{p: p, n: 7, rho: rho}
			for k := range p.Y {
				for _, c := range []float64{-50, -1.3, -0.2, 0, 0.4, 1, 2.5, 80} {
					q := h.prox(k, c)
					// Check optimality of the prox independently: q minimizes
					// ℓ_k(q) + (ρ/2)(q − c)² — compare with neighbours.
					f := func(z float64) float64 {
						yk := []float64{p.Y[k]}
						v := loss.Value([]float64{z}, yk)
						if loss != solvers.SquaredLoss {
							v /= 7 // the per-sample term of a mean over n = 7
						}
						return v + rho/2*(z-c)*(z-c)
					}
					f0 := f(q)
					for _, dz := range []float64{1e-6, -1e-6, 1e-3, -1e-3} {
						if f(q+dz) < f0-1e-13*math.Max(1, math.Abs(f0)) {
							t.Fatalf("%v ρ=%v y=%v c=%v: prox %v is not the minimizer (f(q)=%v, f(q%+g)=%v)", loss, rho, p.Y[k], c, q, f0, dz, f(q+dz))
						}
					}
				}
			}
		}
	}
}

func TestADMMSplitSquaredMatchesClosedForm(t *testing.T) {
	p := programBias(40, 3, 5, 1e-2, 11, true)
	ref := solveIPMOK(t, p)
	a, steps, err := solveSplit(context.Background(), p, Options{AbsTol: 1e-10, RelTol: 1e-10, MaxIter: 100000}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	obj, _ := p.Objective(a.Weights())
	rel := math.Abs(obj-ref.Objective) / ref.Objective
	t.Logf("squared loss, loss split: %d iterations, rel gap %.2e", len(steps), rel)
	if rel > 1e-7 {
		t.Errorf("loss-split ADMM %v, interior point %v: relative gap %v", obj, ref.Objective, rel)
	}
}

func TestADMMSplitResumeIsExact(t *testing.T) {
	p := hingeProgram(30, 2, 4, 1e-2, 1, false)
	o := Options{}
	full, err := NewSplit(p, o, nil)
	if err != nil {
		t.Fatal(err)
	}
	part, err := NewSplit(p, o, nil)
	if err != nil {
		t.Fatal(err)
	}
	// Past ρ adaptations (every 10 iterations), then a resume mid-way.
	for i := 0; i < 137; i++ {
		full.Step()
		part.Step()
	}
	st := savedState(t, part).(*SplitState)
	res, err := NewSplit(p, o, st)
	if err != nil {
		t.Fatal(err)
	}
	var a, b Step
	for i := 0; i < 200; i++ {
		a = full.Step()
		b = res.Step()
	}
	a.Seconds, b.Seconds = 0, 0
	if a != b {
		t.Fatalf("resumed step differs:\n%+v\n%+v", a, b)
	}
	for q := range full.State.V {
		if full.State.V[q] != res.State.V[q] {
			t.Fatalf("V[%d]: %v vs %v", q, full.State.V[q], res.State.V[q])
		}
	}
	bad := *st
	bad.Q = bad.Q[:3]
	if _, err := NewSplit(p, o, &bad); err == nil {
		t.Error("truncated state accepted")
	}
	bad = *st
	bad.Rho = 0
	if _, err := NewSplit(p, o, &bad); err == nil {
		t.Error("ρ = 0 accepted")
	}
}
