package cvx

import (
	"context"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"gonum.org/v1/gonum/mat"
)

// A TwoHidden problem: the certified optimum by the interior-point method,
// its recovered sub-networks with the convex objective, and an ADMM run
// whose certificate encloses it.
func TestTwoHiddenProblem(t *testing.T) {
	t.Setenv("CONVEXNN_STATE_DIR", t.TempDir())
	rng := rand.New(rand.NewPCG(7, 8))
	n := 20
	x := mat.NewDense(n, 2, nil)
	y := make([]float64, n)
	for k := 0; k < n; k++ {
		a, b := rng.NormFloat64(), rng.NormFloat64()
		x.SetRow(k, []float64{a, b})
		y[k] = math.Copysign(1, a*b)
	}
	prob := func() *Problem { return Classify(x, y).Hinge().Beta(1e-2).Bias().TwoHidden(2).SamplePatterns(6, 1) }
	sol, err := Solve(prob(), IPM{})
	if err != nil {
		t.Fatal(err)
	}
	if sol.TwoHidden == nil || sol.Gap > 1e-6 || math.Abs(sol.Nonconvex-sol.Objective) > 1e-6*math.Max(1, sol.Objective) {
		t.Fatalf("network %v, certified gap %.1e, network objective %v against %v", sol.TwoHidden, sol.Gap, sol.Nonconvex, sol.Objective)
	}
	run := Start("two-hidden", prob(), ADMM{CertifyEvery: 20})
	run.Quiet = true
	if err := run.Iterate(60); err != nil {
		t.Fatal(err)
	}
	last := run.History()[len(run.History())-1]
	if !last.Certified || last.Lower > sol.Upper+1e-9 || last.Upper < sol.Lower-1e-9 {
		t.Errorf("ADMM's certificate %+v against the optimum in [%v, %v]", last, sol.Lower, sol.Upper)
	}
	if net, err := run.TwoHidden(); err != nil || net.Width() == 0 {
		t.Errorf("run's network: %v, %v", net, err)
	}
	if _, err := run.CNN(); err == nil || !strings.Contains(err.Error(), "not a CNN") {
		t.Errorf("run.CNN() of a TwoHidden run: %v", err)
	}
	for _, c := range []struct {
		p    *Problem
		want string
	}{
		{Classify(x, y).TwoHidden(0), "at least one first-layer neuron"},
		{Classify(x, y).TwoHidden(2), "needs patterns"},
		{Classify(x, y).Robust(0.1, LInf).TwoHidden(2).SamplePatterns(2, 1), "robust"},
	} {
		if _, _, err := c.p.TwoHiddenProgram(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("error %v, want one naming %q", err, c.want)
		}
	}
}

// Back-prop of the appendix architectures through cvx: its networks are
// measured by the same objective, never below the certified optimum.
func TestBackpropArchitecture(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	n := 16
	x := mat.NewDense(n, 2, nil)
	y := make([]float64, n)
	for k := 0; k < n; k++ {
		a, b := rng.NormFloat64(), rng.NormFloat64()
		x.SetRow(k, []float64{a, b})
		y[k] = math.Copysign(1, a*b)
	}
	// With every pattern the BN program is exact: no back-prop network
	// beats its certified lower bound.
	bn := Classify(x, y).Hinge().Beta(1e-2).BatchNorm().ExactPatterns()
	sol, err := Solve(bn, IPM{})
	if err != nil {
		t.Fatal(err)
	}
	for seed := uint64(1); seed <= 3; seed++ {
		net, obj, err := BackpropArchitecture(context.Background(), bn, 6, 300, 0, seed)
		if err != nil {
			t.Fatal(err)
		}
		if net.Width() != 6 || sol.Lower > obj+1e-9 {
			t.Errorf("BN seed %d: width %d, back-prop objective %v below the certified lower bound %v", seed, net.Width(), obj, sol.Lower)
		}
	}
	net, obj, err := BackpropArchitecture(context.Background(), Classify(x, y).Hinge().Beta(1e-2).Bias().TwoHidden(2).SamplePatterns(8, 1), 4, 300, 0, 1)
	if err != nil {
		t.Fatal(err)
	}
	if th, ok := net.(*TwoHiddenNetwork); !ok || th.Width() != 4 || !th.Bias || !(obj > 0) {
		t.Errorf("two-hidden back-prop: %T width %d, objective %v", net, net.Width(), obj)
	}
	if _, _, err := BackpropArchitecture(context.Background(), Classify(x, y), 3, 10, 0, 1); err == nil || !strings.Contains(err.Error(), "cvx.Backprop") {
		t.Errorf("two-layer problem: %v", err)
	}
}
