package gated

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/convexnn/convexnn/solvers"
	"gonum.org/v1/gonum/mat"
)

// The kernel method reaches the optimum of random programs, one or three
// outputs with joint groups or two with per-class groups, β from
// interpolation (10⁻⁴) to nearly all gates off, n below
// and above P·d·c, and its bracket always holds the optimum that Newton's
// method on the groups certifies independently.
func TestSolveKernel(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 3))
	worst := 0
	for trial := 0; trial < 60; trial++ {
		n := 20 + rng.IntN(60)
		d := 2 + rng.IntN(5)
		np := 1 + rng.IntN(8)
		c, groups := 1, Joint
		switch trial % 4 {
		case 2:
			c = 3
		case 3:
			c, groups = 2, PerClass
		}
		beta := math.Pow(10, -4+4.5*rng.Float64())
		p := randomProblem(t, uint64(100+trial), n, d, np, c, Squared, groups, beta)
		ref, err := SolveNewton(context.Background(), p, Options{Tol: 1e-10, MaxIter: 2000})
		if err != nil {
			t.Fatal(err)
		}
		res, err := SolveKernel(context.Background(), p, Options{Tol: 1e-9})
		if err != nil {
			t.Fatalf("trial %d: %v", trial, err)
		}
		worst = max(worst, res.Iterations)
		// Both brackets hold the optimum: they intersect.
		slack := 1e-12 * math.Max(1, math.Abs(ref.Objective))
		if res.Cert.Lower > ref.Cert.Upper+slack || ref.Cert.Lower > res.Cert.Upper+slack {
			t.Errorf("trial %d (n %d, d %d, P %d, c %d, β %.2g): kernel [%.12g, %.12g], Newton [%.12g, %.12g]", trial, n, d, np, c, beta, res.Cert.Lower, res.Cert.Upper, ref.Cert.Lower, ref.Cert.Upper)
		}
		if res.Cert.Gap > 1e-7 {
			t.Errorf("trial %d (n %d, d %d, P %d, c %d, β %.2g): certified only %.1e after %d steps", trial, n, d, np, c, beta, res.Cert.Gap, res.Iterations)
		}
		// The certificate is that of the weights returned.
		cert, err := p.Certify(res.W)
		if err != nil {
			t.Fatal(err)
		}
		if math.Abs(cert.Upper-res.Objective) > 1e-9*math.Max(1, res.Objective) {
			t.Errorf("trial %d: objective %.12g, of the weights %.12g", trial, res.Objective, cert.Upper)
		}
	}
	t.Logf("at most %d Newton steps on the kernel weights", worst)
}

// Gates leaving and entering: on 80 random programs with 8–24 gates and β
// from β_max down to β_max/300 (most gates off or switching), the kernel
// method certifies 10⁻⁸ within 20 steps of its own, each step projected
// Newton's when the log and split steps do not lower F (boxStep). Before
// that step, 14 of these programs took more than 20 steps (the worst 156):
// the multiplicative fallback cannot move a gate off zero, and the solve
// ended in Newton's method on the groups, one group per step.
func TestSolveKernelGatesSwitching(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 9))
	for trial := 0; trial < 80; trial++ {
		n := 60 + rng.IntN(200)
		d := 3 + rng.IntN(8)
		np := 8 + rng.IntN(17)
		p := randomProblem(t, uint64(500+trial), n, d, np, 1, Squared, Joint, 1)
		bmax, err := p.BetaMax()
		if err != nil {
			t.Fatal(err)
		}
		p.Beta = bmax * math.Pow(10, -2.5*rng.Float64())
		res, err := SolveKernel(context.Background(), p, Options{Tol: 1e-8})
		if err != nil {
			t.Fatal(err)
		}
		if res.Cert.Gap > 1e-8 || res.Iterations > 20 {
			t.Errorf("trial %d (n %d, d %d, P %d, β = %.3g·β_max): certified %.1e after %d steps", trial, n, d, np, p.Beta/bmax, res.Cert.Gap, res.Iterations)
		}
	}
}

// The projected Newton step solves its box-constrained model exactly: its
// KKT conditions hold (y ≥ −t; the model's gradient g + Hy, with its
// ridge, vanishes where the bound is not active and is ≥ 0 where it is),
// on random models with gates at zero, gates leaving and singular
// Hessians.
func TestBoxStep(t *testing.T) {
	rng := rand.New(rand.NewPCG(8, 8))
	for trial := 0; trial < 500; trial++ {
		np := 1 + rng.IntN(12)
		k := 1 + rng.IntN(np+2) // rank of H: singular when k < np
		v := make([]float64, np*k)
		for i := range v {
			v[i] = rng.NormFloat64()
		}
		h := make([]float64, np*np)
		for i := 0; i < np; i++ {
			for j := 0; j < np; j++ {
				for l := 0; l < k; l++ {
					h[i*np+j] += v[i*k+l] * v[j*k+l]
				}
			}
		}
		g, tt, y := make([]float64, np), make([]float64, np), make([]float64, np)
		for i := range g {
			g[i] = rng.NormFloat64()
			if rng.IntN(3) > 0 {
				tt[i] = math.Exp(2 * rng.NormFloat64())
			}
		}
		slope := boxStep(y, g, h, tt)
		dot, scale := 0.0, 0.0
		for i := range g {
			dot += g[i] * y[i]
			scale = math.Max(scale, math.Abs(g[i]))
		}
		if math.Abs(dot-slope) > 1e-12*(1+math.Abs(dot)) {
			t.Fatalf("trial %d: slope %g, gᵀy %g", trial, slope, dot)
		}
		for i := range g {
			gr := g[i]
			for j := range g {
				gr += h[i*np+j] * y[j]
			}
			// The model's ridge (boxRidge on the scaled diagonal).
			if d := h[i*np+i]; d > 0 {
				gr += boxRidge * d * y[i]
			} else {
				gr += boxRidge * y[i]
			}
			tol := 1e-7 * (scale + math.Sqrt(h[i*np+i])*math.Abs(y[i]))
			switch {
			case tt[i]+y[i] < -1e-12*(1+tt[i]):
				t.Fatalf("trial %d: gate %d: t + y = %g < 0", trial, i, tt[i]+y[i])
			case tt[i]+y[i] <= 1e-12*(1+tt[i]):
				if gr < -tol {
					t.Errorf("trial %d: gate %d on its bound with model gradient %g < 0", trial, i, gr)
				}
			case math.Abs(gr) > tol:
				t.Errorf("trial %d: free gate %d with model gradient %g", trial, i, gr)
			}
		}
		if slope > 0 {
			t.Errorf("trial %d: slope %g > 0", trial, slope)
		}
	}
}

// Warm starts, the method's limits, and the choice between methods.
func TestSolveKernelStartAndLimits(t *testing.T) {
	p := randomProblem(t, 7, 50, 4, 6, 1, Squared, Joint, 0.01)
	cold, err := SolveKernel(context.Background(), p, Options{})
	if err != nil {
		t.Fatal(err)
	}
	q := *p
	q.Beta = 0.012
	warm, err := SolveKernel(context.Background(), &q, Options{Start: cold.W})
	if err != nil {
		t.Fatal(err)
	}
	again, err := SolveKernel(context.Background(), &q, Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("β 0.012: %d steps warm, %d cold", warm.Iterations, again.Iterations)
	if warm.Iterations >= again.Iterations || warm.Cert.Gap > 1e-6 {
		t.Errorf("warm start: %d steps (gap %.1e), cold %d", warm.Iterations, warm.Cert.Gap, again.Iterations)
	}
	for _, c := range []struct {
		p    *Problem
		opt  Options
		want string
	}{
		{randomProblem(t, 1, 20, 3, 2, 3, Softmax, Joint, 0.01), Options{}, "squared loss"},
		{p, Options{Tol: -1}, "Tol"},
		{p, Options{Start: Weights{mat.NewDense(2, 1, nil)}}, "warm start"},
		{tall(KernelMaxRows + 1), Options{}, "at most"},
	} {
		if _, err := SolveKernel(context.Background(), c.p, c.opt); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("error %v, want one containing %q", err, c.want)
		}
	}
	if _, err := SolveWith(context.Background(), p, Kernel, Options{Rank: 2}); err == nil || !strings.Contains(err.Error(), "Rank") {
		t.Errorf("kernel with Rank: %v", err)
	}
	for _, c := range []struct {
		p    *Problem
		opt  Options
		want Method
	}{
		{p, Options{}, Kernel},
		{p, Options{Rank: 2}, ProxGradient},
		{randomProblem(t, 1, 20, 3, 2, 3, Softmax, Joint, 0.01), Options{}, ProxGradient},
		{randomProblem(t, 1, 20, 3, 2, 3, Squared, PerClass, 0.01), Options{}, Kernel},
		{tall(KernelMaxRows + 1), Options{}, Newton},
	} {
		if got := c.p.Choose(c.opt); got != c.want {
			t.Errorf("Choose: %v, want %v", got, c.want)
		}
	}
	auto, err := SolveWith(context.Background(), p, Auto, Options{})
	if err != nil || math.Abs(auto.Objective-cold.Objective) > 1e-9*cold.Objective {
		t.Errorf("SolveWith Auto: %v, %v against %v", err, auto, cold.Objective)
	}
}

// tall is a program of n rows, one feature and one gate.
func tall(n int) *Problem {
	x, tg := mat.NewDense(n, 1, nil), mat.NewDense(n, 1, nil)
	g := make([]bool, n)
	for k := 0; k < n; k++ {
		x.Set(k, 0, float64(k%7)-3)
		tg.Set(k, 0, float64(k%2))
		g[k] = k%7 >= 3
	}
	return &Problem{X: x, Gates: solvers.Patterns{g}, Targets: tg, Loss: Squared, Groups: Joint, Beta: 0.1}
}

// A gated program with two gates on four points, solved through its
// multiple-kernel form and certified.
func ExampleSolveKernel() {
	x := mat.NewDense(4, 2, []float64{
		-2, 1,
		-1, 1,
		1, 1,
		2, 1,
	})
	gates := solvers.Patterns{{true, true, false, false}, {false, false, true, true}}
	targets := mat.NewDense(4, 1, []float64{1, 0.5, 0.5, 1})
	p := &Problem{X: x, Gates: gates, Targets: targets, Loss: Squared, Groups: Joint, Beta: 0.1}
	res, err := SolveKernel(context.Background(), p, Options{Tol: 1e-9})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("objective %.6f, certified: %v\n", res.Objective, res.Cert.Gap <= 1e-9)
	// Output: objective 0.089874, certified: true
}

// dupProblem is randomProblem with about a third of its rows copies of
// earlier ones with the opposite target: K is singular and the program
// cannot come near interpolation, so the kernel weights run off.
func dupProblem(t testing.TB, seed uint64, n, d, np int) *Problem {
	p := randomProblem(t, seed, n, d, np, 1, Squared, Joint, 1)
	rng := rand.New(rand.NewPCG(seed, 77))
	for k := 1; k < n; k++ {
		if rng.IntN(3) == 0 {
			src := rng.IntN(k)
			copy(p.X.RawRowView(k), p.X.RawRowView(src))
			for i := range p.Gates {
				p.Gates[i][k] = p.Gates[i][src]
			}
			p.Targets.Set(k, 0, -p.Targets.At(src, 0))
		}
	}
	return p
}

// Programs found by a review: a step that makes M_t indefinite in working
// precision (contradicting duplicate rows at β = 10⁻⁶β_max: the solve
// used to fail with the factorization's error and no result), a warm start
// whose block is 10⁻²⁵⁰ (the Newton system's diagonal underflowed to 0 and
// its ridge never grew: the solve hung), and the per-class solve, whose
// progress reports used to carry one class's bracket, not the program's.
func TestSolveKernelHardPrograms(t *testing.T) {
	for _, c := range []struct {
		seed     uint64
		n, d, np int
	}{{154, 40, 3, 8}, {285, 25, 2, 12}} {
		p := dupProblem(t, c.seed, c.n, c.d, c.np)
		bmax, err := p.BetaMax()
		if err != nil {
			t.Fatal(err)
		}
		p.Beta = 1e-6 * bmax
		res, err := SolveKernel(context.Background(), p, Options{Tol: 1e-9})
		if err != nil || res == nil {
			t.Fatalf("seed %d: %v", c.seed, err)
		}
		ref, err := SolveNewton(context.Background(), p, Options{Tol: 1e-10, MaxIter: 3000})
		if err != nil {
			t.Fatal(err)
		}
		if slack := 1e-9 * math.Max(1, ref.Objective); res.Cert.Lower > ref.Cert.Upper+slack || ref.Cert.Lower > res.Cert.Upper+slack {
			t.Errorf("seed %d: kernel [%.12g, %.12g], Newton [%.12g, %.12g]", c.seed, res.Cert.Lower, res.Cert.Upper, ref.Cert.Lower, ref.Cert.Upper)
		}
	}

	p := randomProblem(t, 7, 50, 4, 2, 1, Squared, Joint, 1)
	var a [2]float64
	for i := range a {
		q := *p
		q.Gates = p.Gates[i : i+1]
		a[i], _ = q.BetaMax()
	}
	hi, lo := 0, 1
	if a[1] > a[0] {
		hi, lo = 1, 0
	}
	p.Beta = (a[lo] + a[hi]) / 2
	start := Weights{mat.NewDense(4, 1, nil), mat.NewDense(4, 1, nil)}
	start[hi].Set(0, 0, 1e-250)
	if res, err := SolveKernel(context.Background(), p, Options{Start: start}); err != nil || res.Cert.Gap > 1e-6 {
		t.Errorf("warm start of 10⁻²⁵⁰: %v, %+v", err, res)
	}
	var ch mat.Cholesky
	if factorRidged(&ch, mat.NewSymDense(3, nil)) {
		t.Error("factorRidged of the zero matrix succeeded")
	}
	if !factorRidged(&ch, mat.NewSymDense(2, []float64{1e-320, 0, 0, 0})) {
		t.Error("factorRidged of diag(10⁻³²⁰, 0) failed")
	}

	pc := randomProblem(t, 3, 40, 4, 5, 3, Squared, PerClass, 0.1)
	var hist []Iterate
	res, err := SolveKernel(context.Background(), pc, Options{Tol: 1e-9, Progress: func(it Iterate) { hist = append(hist, it) }})
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range [][]Iterate{hist, res.History} {
		for _, it := range h {
			if it.Cert.Upper < res.Cert.Lower-1e-9 || it.Cert.Lower > res.Cert.Upper+1e-9 || it.Objective < it.Cert.Upper-1e-9*it.Cert.Upper {
				t.Errorf("per class, step %d: bracket [%.10g, %.10g], objective %.10g, against the program's optimum in [%.10g, %.10g]", it.Iter, it.Cert.Lower, it.Cert.Upper, it.Objective, res.Cert.Lower, res.Cert.Upper)
			}
		}
	}
}
