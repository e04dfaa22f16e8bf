package scp

import (
	"context"
	"math"
	"strings"
	"testing"

	"gonum.org/v1/gonum/mat"
)

// solveLassoTo runs FISTA until the duality gap is ≤ tol·max(1, F).
func solveLassoTo(t *testing.T, p *Lasso, tol float64) []float64 {
	t.Helper()
	f, err := NewFISTA(p, nil)
	if err != nil {
		t.Fatal(err)
	}
	done := relGapAtMost(tol)
	if st := runUntil(f, 500000, done); !done(st) {
		t.Fatalf("FISTA did not reach gap %g (gap %g)", tol, p.DualityGap(f.State.Alpha))
	}
	return append([]float64(nil), f.State.Alpha...)
}

func TestSCPDualFeasibleAndViolatorLowersOptimum(t *testing.T) {
	x, y := twoD(30, 1)
	u, _ := SampleSphere(3, 6, 11)
	h, _ := ReLUFeatures(x, u)
	beta := 0.05
	p := &Lasso{H: h, Y: y, Beta: beta}
	alpha := solveLassoTo(t, p, 1e-12)
	v := Dual(p, alpha)

	// Feasibility of v for the sampled constraints.
	_, m := h.Dims()
	for j := 0; j < m; j++ {
		var s float64
		for k := range v {
			s += v[k] * h.At(k, j)
		}
		if math.Abs(s) > beta*(1+1e-4) {
			t.Fatalf("neuron %d: |vᵀh| = %g > β = %g", j, math.Abs(s), beta)
		}
	}
	if c, err := Violations(x, u, v, beta, 1e-4); err != nil || c != 0 {
		t.Fatalf("sampled neurons violate: %d, %v", c, err)
	}
	// Strong duality: F(α*) = D(v*) = ½‖y‖² − ½‖y − v*‖².
	var yy, dd float64
	for k := range y {
		yy += y[k] * y[k]
		dd += (y[k] - v[k]) * (y[k] - v[k])
	}
	if f, dv := p.Objective(alpha), 0.5*yy-0.5*dd; math.Abs(f-dv) > 1e-8 {
		t.Fatalf("primal %g, dual %g", f, dv)
	}

	// A violating fresh neuron strictly lowers the optimum.
	u1, _ := SampleSphere(3, 400, 12)
	h1, _ := ReLUFeatures(x, u1)
	viol := scpViolators(h1, v, beta, 1e-4)
	if c, _ := Violations(x, u1, v, beta, 1e-4); c != len(viol) || c == 0 {
		t.Fatalf("violators %d vs %d (need > 0)", c, len(viol))
	}
	j := viol[0]
	grown := mat.NewDense(3, m+1, nil)
	grown.Slice(0, 3, 0, m).(*mat.Dense).Copy(u)
	for i := 0; i < 3; i++ {
		grown.Set(i, m, u1.At(i, j))
	}
	h2, _ := ReLUFeatures(x, grown)
	p2 := &Lasso{H: h2, Y: y, Beta: beta}
	alpha2 := solveLassoTo(t, p2, 1e-12)
	f1, f2 := p.Objective(alpha), p2.Objective(alpha2)
	if !(f2 < f1-1e-9) {
		t.Fatalf("adding violator did not lower optimum: %g → %g", f1, f2)
	}
	// A non-violating neuron leaves the optimum unchanged (α padded with 0
	// stays optimal): check the KKT residual via the gap.
	nonViol := -1
	for jj := 0; jj < 400 && nonViol < 0; jj++ {
		isV := false
		for _, k := range viol {
			isV = isV || k == jj
		}
		if !isV {
			nonViol = jj
		}
	}
	if nonViol >= 0 {
		for i := 0; i < 3; i++ {
			grown.Set(i, m, u1.At(i, nonViol))
		}
		h3, _ := ReLUFeatures(x, grown)
		p3 := &Lasso{H: h3, Y: y, Beta: beta}
		pad := append(append([]float64(nil), alpha...), 0)
		if g := p3.DualityGap(pad); g > 1e-6 {
			t.Fatalf("non-violating neuron changed optimality: gap %g", g)
		}
	}
}

func TestHoeffdingBound(t *testing.T) {
	b, err := HoeffdingBound(0, 1000, 0.05)
	if err != nil {
		t.Fatal(err)
	}
	if want := math.Sqrt(math.Log(20) / 2000); math.Abs(b-want) > 1e-15 {
		t.Fatalf("bound %v, want %v", b, want)
	}
	b, _ = HoeffdingBound(0.1, 50, 0.01)
	if want := 0.1 + math.Sqrt(math.Log(100)/100); math.Abs(b-want) > 1e-15 {
		t.Fatalf("bound %v, want %v", b, want)
	}
	for _, c := range []struct {
		z  float64
		n  int
		xi float64
	}{{-0.1, 10, 0.1}, {1.1, 10, 0.1}, {math.NaN(), 10, 0.1}, {0, 0, 0.1}, {0, 10, 0}, {0, 10, 1}, {0, 10, math.NaN()}} {
		if _, err := HoeffdingBound(c.z, c.n, c.xi); err == nil {
			t.Errorf("HoeffdingBound(%v, %d, %v) accepted", c.z, c.n, c.xi)
		}
	}
}

func TestSampleSizeGuidance(t *testing.T) {
	g, err := SampleSizeGuidance(10, 0.1, 0.05)
	if err != nil {
		t.Fatal(err)
	}
	want := math.Min(11/0.005-1, 40*(11-math.Log(0.1)))
	if math.Abs(g-want) > 1e-9 || math.Abs(g-532.1034037) > 1e-6 {
		t.Fatalf("guidance %v, want %v", g, want)
	}
	// First term wins for large ψξ.
	g, _ = SampleSizeGuidance(10, 0.9, 0.9)
	if want := 11/0.81 - 1; math.Abs(g-want) > 1e-12 {
		t.Fatalf("guidance %v, want %v", g, want)
	}
	for _, c := range []struct {
		n       int
		psi, xi float64
	}{{0, 0.1, 0.1}, {5, 0, 0.1}, {5, 1, 0.1}, {5, 0.1, 0}, {5, 0.1, 1}, {5, math.NaN(), 0.1}} {
		if _, err := SampleSizeGuidance(c.n, c.psi, c.xi); err == nil {
			t.Errorf("SampleSizeGuidance(%d, %v, %v) accepted", c.n, c.psi, c.xi)
		}
	}
}

func TestIterativeSCPCertifies(t *testing.T) {
	x, y := twoD(40, 2)
	o := IterativeOptions{N0: 3, N1: 200, Psi: 0.2, Xi: 0.05, MaxRounds: 10, GapTol: 1e-10, ViolationTol: 1e-4, Seed: 5}
	res, err := Iterative(context.Background(), x, y, 0.05, o)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range res.Rounds {
		t.Logf("round %d: neurons %d obj %.6g gap %.2g iters %d nnz %d viol %d Z̄ %.3f bound %.3f added %d %.3fs",
			r.Round, r.Neurons, r.Objective, r.Gap, r.Iters, r.Nonzeros, r.Violations, r.Zbar, r.Bound, r.Added, r.Seconds)
	}
	if !res.Certified || res.StopReason != "certified" {
		t.Fatalf("not certified: %s", res.StopReason)
	}
	last := res.Rounds[len(res.Rounds)-1]
	if last.Bound > o.Psi {
		t.Fatalf("final bound %g > ψ", last.Bound)
	}
	if len(res.Rounds) < 2 {
		t.Fatalf("certified in the first round; the test problem is too easy")
	}
	if !(last.Zbar < res.Rounds[0].Zbar) {
		t.Fatalf("Z̄ did not decrease: %g → %g", res.Rounds[0].Zbar, last.Zbar)
	}
	for i := 1; i < len(res.Rounds); i++ {
		a, b := res.Rounds[i-1], res.Rounds[i]
		if b.Objective > a.Objective+1e-8 {
			t.Fatalf("objective rose in round %d: %g → %g", i, a.Objective, b.Objective)
		}
		if b.Neurons != a.Neurons+a.Added || a.Added != a.Violations {
			t.Fatalf("round %d: neuron bookkeeping %d+%d≠%d (violations %d)", i, a.Neurons, a.Added, b.Neurons, a.Violations)
		}
	}
	_, m := res.U.Dims()
	if m != last.Neurons || len(res.Alpha) != m {
		t.Fatalf("result shapes: U has %d neurons, α %d, last round %d", m, len(res.Alpha), last.Neurons)
	}
	// Deterministic given the seed.
	res2, _ := Iterative(context.Background(), x, y, 0.05, o)
	if len(res2.Rounds) != len(res.Rounds) || res2.Rounds[len(res2.Rounds)-1].Objective != last.Objective {
		t.Fatal("same seed gave a different run")
	}
}

func TestIterativeSCPCanceled(t *testing.T) {
	x, y := twoD(20, 3)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	res, err := Iterative(ctx, x, y, 0.05, IterativeOptions{N0: 3, N1: 100, Psi: 0.3, Xi: 0.1})
	if err == nil || res == nil || res.StopReason != "canceled" {
		t.Fatalf("want canceled, got %v, %+v", err, res)
	}
}

func TestIterativeSCPBadInputs(t *testing.T) {
	x, y := twoD(10, 4)
	good := IterativeOptions{N0: 3, N1: 100, Psi: 0.3, Xi: 0.1}
	nanX := mat.DenseCopyOf(x)
	nanX.Set(2, 1, math.NaN())
	nanY := append([]float64(nil), y...)
	nanY[3] = math.NaN()
	mod := func(f func(*IterativeOptions)) IterativeOptions { o := good; f(&o); return o }
	cases := []struct {
		name string
		x    *mat.Dense
		y    []float64
		beta float64
		o    IterativeOptions
		want string
	}{
		{"nil X", nil, y, 0.1, good, "X"},
		{"shape", x, y[:5], 0.1, good, "labels"},
		{"NaN X", nanX, y, 0.1, good, "NaN"},
		{"NaN y", x, nanY, 0.1, good, "NaN"},
		{"beta 0", x, y, 0, good, "β"},
		{"beta NaN", x, y, math.NaN(), good, "β"},
		{"N0", x, y, 0.1, mod(func(o *IterativeOptions) { o.N0 = 0 }), "N0"},
		{"N1", x, y, 0.1, mod(func(o *IterativeOptions) { o.N1 = 0 }), "N1"},
		{"psi 0", x, y, 0.1, mod(func(o *IterativeOptions) { o.Psi = 0 }), "ψ"},
		{"psi 1", x, y, 0.1, mod(func(o *IterativeOptions) { o.Psi = 1 }), "ψ"},
		{"xi NaN", x, y, 0.1, mod(func(o *IterativeOptions) { o.Xi = math.NaN() }), "ξ"},
		{"xi 1", x, y, 0.1, mod(func(o *IterativeOptions) { o.Xi = 1 }), "ξ"},
		{"N1 too small", x, y, 0.1, mod(func(o *IterativeOptions) { o.N1 = 5 }), "never certify"},
		{"neg rounds", x, y, 0.1, mod(func(o *IterativeOptions) { o.MaxRounds = -1 }), "negative"},
		{"neg tol", x, y, 0.1, mod(func(o *IterativeOptions) { o.GapTol = -1 }), "GapTol"},
	}
	for _, c := range cases {
		_, err := Iterative(context.Background(), c.x, c.y, c.beta, c.o)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want mention of %q", c.name, err, c.want)
		}
	}
	// Violations input checks.
	u, _ := SampleSphere(3, 4, 1)
	v := make([]float64, 10)
	if _, err := Violations(x, u, v[:3], 0.1, 0); err == nil {
		t.Error("short v accepted")
	}
	if _, err := Violations(x, u, v, -1, 0); err == nil {
		t.Error("β<0 accepted")
	}
	if _, err := Violations(x, u, v, 0.1, math.NaN()); err == nil {
		t.Error("NaN tol accepted")
	}
	if _, err := Violations(x, mat.NewDense(2, 4, nil), v, 0.1, 0); err == nil {
		t.Error("dimension mismatch accepted")
	}
	v[0] = math.Inf(1)
	if _, err := Violations(x, u, v, 0.1, 0); err == nil {
		t.Error("Inf v accepted")
	}
}
