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

// Conjugate gradients with the factor of M at other kernel weights
// (solveAt) give the direct solve's Λ to the certificate's accuracy when
// every weight is within reuseKappa of the factor's, and refuse (for a
// factorization) when a weight moves further, enters or leaves: on 200
// random programs, with zero and warm starts, one to three outputs.
func TestSolveAt(t *testing.T) {
	rng := rand.New(rand.NewPCG(8, 13))
	solved := 0
	for trial := 0; trial < 200; trial++ {
		n, d, np, c := 20+rng.IntN(100), 2+rng.IntN(8), 2+rng.IntN(10), 1+2*rng.IntN(2)
		beta := math.Pow(10, -3+3*rng.Float64())
		p := randomProblem(t, uint64(900+trial), n, d, np, c, Squared, Joint, beta)
		ks := newKernelSystem(p, newGateOps(p.X, p.Gates, c))
		ref, s := make([]float64, np), make([]float64, np)
		scale := math.Pow(10, 4*rng.Float64()) // up to near interpolation
		spread := 0.5                          // ratios within reuseKappa^±½: κ ≤ reuseKappa
		if trial%4 == 0 {
			spread = 1 // κ up to reuseKappa²: some refused
		}
		for i := range ref {
			if i > 0 && rng.IntN(4) == 0 {
				continue // a gate off in both
			}
			ref[i] = scale * math.Pow(10, 2*rng.Float64()-1)
			s[i] = ref[i] * math.Pow(reuseKappa, spread*(2*rng.Float64()-1))
		}
		kappa := kappaBound(s, ref)
		if err := ks.factor(ref); err != nil {
			t.Fatal(err)
		}
		lam, res := mat.NewDense(n, c, nil), mat.NewDense(n, c, nil)
		if trial%2 == 1 {
			lam.Copy(p.Targets) // a start far from Λ
		}
		ok := ks.solveAt(lam, res, p.Targets, s, beta)
		if kappa > reuseKappa {
			if ok {
				t.Fatalf("trial %d: κ bound %.3g > %v, yet solved by conjugate gradients", trial, kappa, reuseKappa)
			}
			continue
		}
		if !ok {
			t.Errorf("trial %d (n %d, d %d, P %d, c %d, scale %.2g): κ bound %.3g, conjugate gradients did not converge", trial, n, d, np, c, scale, kappa)
			continue
		}
		solved++
		// The direct solve at s, a reference refined from it (three
		// steps of iterative refinement), and every active gate's a_i
		// from the three: conjugate gradients are within 10⁻⁹β of the
		// reference or no further from it than the direct solve.
		direct := mat.DenseCopyOf(p.Targets)
		if err := ks.factor(s); err != nil {
			t.Fatal(err)
		}
		ks.solve(direct)
		want, r, m := mat.DenseCopyOf(direct), mat.NewDense(n, c, nil), mat.NewDense(n, c, nil)
		for range 3 {
			ks.applyM(m, want, mat.NewDense(d, np*c, nil), s)
			r.Sub(p.Targets, m)
			ks.solve(r)
			want.Add(want, r)
		}
		zg, zd, zw := mat.NewDense(d, np*c, nil), mat.NewDense(d, np*c, nil), mat.NewDense(d, np*c, nil)
		ks.ops.backward(zg, lam)
		ks.ops.backward(zd, direct)
		ks.ops.backward(zw, want)
		for i := range s {
			if s[i] == 0 {
				continue
			}
			block := func(z *mat.Dense) float64 { return mat.Norm(z.Slice(0, d, i*c, (i+1)*c), 2) }
			ag, ad, aw := block(zg), block(zd), block(zw)
			if e := math.Abs(ag - aw); e > 1e-9*beta && e > 2*math.Abs(ad-aw) {
				t.Errorf("trial %d gate %d (t %.3g): a_i %.15g by conjugate gradients, %.15g by the factor, %.15g refined", trial, i, s[i], ag, ad, aw)
			}
		}
	}
	if solved < 150 {
		t.Errorf("only %d of 200 programs within the bound: the test checks too little", solved)
	}
	// Gates entering or leaving, or a weight beyond the bound: refused.
	p := randomProblem(t, 77, 40, 4, 3, 1, Squared, Joint, 0.1)
	ks := newKernelSystem(p, newGateOps(p.X, p.Gates, 1))
	if err := ks.factor([]float64{1, 2, 0}); err != nil {
		t.Fatal(err)
	}
	lam := mat.NewDense(40, 1, nil)
	for _, s := range [][]float64{{1, 2, 1e-9}, {1, 0, 0}, {1, 2 * reuseKappa * 1.01, 0}} {
		if ks.solveAt(lam, nil, p.Targets, s, 0.1) {
			t.Errorf("weights %v from the factor at [1 2 0]: solved by conjugate gradients", s)
		}
	}
}

// At β ≥ β_max the zero weights are optimal: the kernel method certifies
// them at t = 0 without a step (and without forming XXᵀ); just below
// β_max it takes steps and some gate enters.
func TestSolveKernelZeroPoint(t *testing.T) {
	for seed := uint64(0); seed < 20; seed++ {
		p := randomProblem(t, 300+seed, 50, 4, 6, 1+2*int(seed%2), Squared, Joint, 1)
		bmax, err := p.BetaMax()
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range []float64{1.0001, 0.9} {
			p.Beta = f * bmax
			res, err := SolveKernel(context.Background(), p, Options{Tol: 1e-9})
			if err != nil {
				t.Fatal(err)
			}
			zero := true
			for _, w := range res.W {
				zero = zero && mat.Norm(w, 2) == 0
			}
			if res.Cert.Gap > 1e-9 {
				t.Errorf("seed %d, β = %v·β_max: certified only %.1e", seed, f, res.Cert.Gap)
			}
			if f > 1 && (!zero || res.Iterations != 0) {
				t.Errorf("seed %d, β above β_max: %d steps, zero weights %v", seed, res.Iterations, zero)
			}
			if f < 1 && zero {
				t.Errorf("seed %d, β = 0.9·β_max: zero weights returned", seed)
			}
		}
	}
}

// A regularization path through one KernelPath: every point certified and
// its bracket intersecting that of a solve from the same start without the
// carried state, with fewer factorizations of M_t over the twelve paths
// (the first step from the last point's weights is taken with its factor);
// a start other than the weights the last solve returned, or another
// program, does not use the state.
func TestKernelPath(t *testing.T) {
	withCarry, without := 0, 0
	for seed := uint64(0); seed < 12; seed++ {
		p := randomProblem(t, 700+seed, 60+int(seed)*10, 4, 8, 1+2*int(seed%2), Squared, Joint, 1)
		bmax, err := p.BetaMax()
		if err != nil {
			t.Fatal(err)
		}
		carry := &KernelPath{}
		var start Weights
		for k := 0; k < 10; k++ {
			p.Beta = bmax * math.Pow(1e-2, float64(k+1)/10)
			fresh := &KernelPath{} // the same start, no state: its own count
			ref, err := SolveKernel(context.Background(), p, Options{Tol: 1e-9, Start: start, Path: fresh})
			if err != nil {
				t.Fatal(err)
			}
			res, err := SolveKernel(context.Background(), p, Options{Tol: 1e-9, Start: start, Path: carry})
			if err != nil {
				t.Fatal(err)
			}
			if fresh.ks != nil {
				without += fresh.ks.factorizations
			}
			slack := 1e-12 * math.Max(1, math.Abs(ref.Objective))
			if res.Cert.Gap > 1e-9 || res.Cert.Lower > ref.Cert.Upper+slack || ref.Cert.Lower > res.Cert.Upper+slack {
				t.Errorf("seed %d, point %d: carried [%.12g, %.12g] (gap %.1e), fresh [%.12g, %.12g]", seed, k, res.Cert.Lower, res.Cert.Upper, res.Cert.Gap, ref.Cert.Lower, ref.Cert.Upper)
			}
			start = res.W
		}
		if carry.ks != nil {
			withCarry += carry.ks.factorizations
		}
		// Another start, or another program: the state is not used.
		if carry.resume(p, nil) != nil || carry.resume(p, Weights{mat.NewDense(4, p.Targets.RawMatrix().Cols, nil)}) != nil {
			t.Errorf("seed %d: state offered for another start", seed)
		}
		q := *p
		q.Targets = mat.DenseCopyOf(p.Targets)
		if carry.resume(&q, start) != nil {
			t.Errorf("seed %d: state offered for other targets", seed)
		}
		if carry.resume(p, start) == nil {
			t.Errorf("seed %d: state refused for its own program and start", seed)
		}
	}
	t.Logf("%d factorizations along the paths with the state carried, %d without", withCarry, without)
	if withCarry >= without {
		t.Errorf("%d factorizations along the paths with the state carried, %d without", withCarry, without)
	}
}

// The Hessian taken with a factor at other weights (κ ≤ reuseKappa) is
// corrected to first order in M_t − M_r: on 100 random programs its error
// against the Hessian with the factor at t is at most 4(κ − 1)² of H, and
// at most half that of the uncorrected VᵀM_r⁻¹V.
func TestHessianWithOtherFactor(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 31))
	worst := 0.0
	for trial := 0; trial < 100; trial++ {
		n, d, np, c := 20+rng.IntN(80), 2+rng.IntN(6), 2+rng.IntN(10), 1+2*rng.IntN(2)
		p := randomProblem(t, uint64(1300+trial), n, d, np, c, Squared, Joint, 0.01)
		ks := newKernelSystem(p, newGateOps(p.X, p.Gates, c))
		ref, s := make([]float64, np), make([]float64, np)
		scale := math.Pow(10, 3*rng.Float64()-1)
		for i := range ref {
			ref[i] = scale * math.Pow(10, rng.Float64()-0.5)
			s[i] = ref[i] * math.Pow(reuseKappa, rng.Float64()-0.5)
		}
		kappa := kappaBound(s, ref)
		z := mat.NewDense(d, np*c, nil)
		for i := range z.RawMatrix().Data {
			z.RawMatrix().Data[i] = rng.NormFloat64()
		}
		if err := ks.factor(ref); err != nil {
			t.Fatal(err)
		}
		corr := make([]float64, np*np)
		ks.hessian(corr, z, s)
		stale := make([]float64, np*np) // VᵀM_r⁻¹V from what hessian left
		for i := 0; i < np; i++ {
			for j := 0; j < np; j++ {
				stale[i*np+j] = mat.Dot(mat.NewVecDense(n*c, mat.DenseCopyOf(ks.v.Slice(0, n, i*c, (i+1)*c)).RawMatrix().Data),
					mat.NewVecDense(n*c, mat.DenseCopyOf(ks.u.Slice(0, n, j*c, (j+1)*c)).RawMatrix().Data))
			}
		}
		if err := ks.factor(s); err != nil {
			t.Fatal(err)
		}
		exact := make([]float64, np*np)
		ks.hessian(exact, z, s)
		var ec, es, eh float64
		for k := range exact {
			ec += (corr[k] - exact[k]) * (corr[k] - exact[k])
			es += (stale[k] - exact[k]) * (stale[k] - exact[k])
			eh += exact[k] * exact[k]
		}
		ec, es, eh = math.Sqrt(ec), math.Sqrt(es), math.Sqrt(eh)
		worst = math.Max(worst, ec/eh/((kappa-1)*(kappa-1)))
		if ec > 4*(kappa-1)*(kappa-1)*eh || ec > 0.5*es+1e-12*eh {
			t.Errorf("trial %d (κ %.3f): corrected Hessian off by %.2e of H, uncorrected by %.2e", trial, kappa, ec/eh, es/eh)
		}
	}
	t.Logf("largest error of the corrected Hessian: %.2f (κ − 1)² of H", worst)
}
