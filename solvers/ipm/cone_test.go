package ipm

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"gonum.org/v1/gonum/floats"
	"gonum.org/v1/gonum/mat"
)

// randInterior returns a random point in the interior of k.
func coneRandInterior(rng *rand.Rand, k Cone) []float64 {
	x := make([]float64, k.Dim())
	for i := 0; i < k.Orthant; i++ {
		x[i] = math.Exp(2 * rng.NormFloat64())
	}
	off := k.Orthant
	for _, q := range k.SOC {
		var s float64
		for i := off + 1; i < off+q; i++ {
			x[i] = rng.NormFloat64()
			s += x[i] * x[i]
		}
		x[off] = math.Sqrt(s) + math.Exp(2*rng.NormFloat64())
		off += q
	}
	return x
}

func TestConeNTScaling(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	k := Cone{Orthant: 3, SOC: []int{4, 1, 6, 2}}
	m := k.Dim()
	for trial := 0; trial < 50; trial++ {
		s, z := coneRandInterior(rng, k), coneRandInterior(rng, k)
		w := newNTScaling(k)
		if err := w.compute(s, z); err != nil {
			t.Fatal(err)
		}
		wz := append([]float64(nil), z...)
		w.scale(wz)
		wis := append([]float64(nil), s...)
		w.unscale(wis)
		for i := 0; i < m; i++ {
			tol := 1e-12 * (1 + math.Abs(w.lambda[i]) + floats.Norm(s, 2) + floats.Norm(z, 2))
			if math.Abs(wz[i]-w.lambda[i]) > tol || math.Abs(wis[i]-w.lambda[i]) > tol {
				t.Fatalf("trial %d: Wz = %v, W⁻¹s = %v, λ = %v", trial, wz, wis, w.lambda)
			}
		}
		// W W⁻¹ = I and W⁻² = (W⁻¹)².
		x := make([]float64, m)
		for i := range x {
			x[i] = rng.NormFloat64()
		}
		y := append([]float64(nil), x...)
		w.unscale(y)
		w.scale(y)
		y2 := append([]float64(nil), x...)
		w.unscale(y2)
		w.unscale(y2)
		y3 := append([]float64(nil), x...)
		w.unscale2(y3)
		for i := range x {
			if math.Abs(y[i]-x[i]) > 1e-9*(1+math.Abs(x[i])) || math.Abs(y2[i]-y3[i]) > 1e-9*(1+math.Abs(y2[i])) {
				t.Fatalf("trial %d: W W⁻¹x = %v for x = %v; W⁻¹W⁻¹x = %v, W⁻²x = %v", trial, y, x, y2, y3)
			}
		}
		// λ⋄(λ∘x) = x.
		p := make([]float64, m)
		k.prod(p, w.lambda, x)
		k.div(p, w.lambda, p)
		for i := range x {
			if math.Abs(p[i]-x[i]) > 1e-8*(1+math.Abs(x[i])) {
				t.Fatalf("trial %d: λ⋄(λ∘x) = %v, x = %v", trial, p, x)
			}
		}
		// The step to the boundary lands on it.
		a := k.maxStep(s, x)
		if math.IsInf(a, 1) {
			continue
		}
		b := make([]float64, m)
		floats.AddScaledTo(b, s, a, x)
		if v := k.violation(b); math.Abs(v) > 1e-9*(1+floats.Norm(b, 2)) {
			t.Fatalf("trial %d: s + α_max·dx is %v off the boundary", trial, v)
		}
		floats.AddScaledTo(b, s, 0.999*a, x)
		if v := k.violation(b); v >= 0 {
			t.Fatalf("trial %d: s + 0.999α_max·dx is outside the cone (%v)", trial, v)
		}
	}
}

// TestConeCentralityCorrection: v + c has its eigenvalues clipped to
// [lo, hi] (downwards by at most hi), with v's eigenvectors.
func TestConeCentralityCorrection(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	k := Cone{Orthant: 4, SOC: []int{3, 1, 5, 2}}
	const lo, hi = 0.5, 2.0
	clip := func(l float64) float64 { return math.Max(lo, math.Min(math.Max(hi, l-hi), l)) }
	for trial := 0; trial < 100; trial++ {
		v := make([]float64, k.Dim())
		for i := range v {
			v[i] = 3 * rng.NormFloat64()
		}
		if trial == 0 {
			clear(v[k.Orthant+1 : k.Orthant+3]) // v₁ = 0 in the first second-order cone
		}
		c := append([]float64(nil), v...)
		k.centralityCorrection(c, lo, hi)
		for i := 0; i < k.Orthant; i++ {
			if got, want := v[i]+c[i], clip(v[i]); math.Abs(got-want) > 1e-12 {
				t.Fatalf("trial %d: orthant %v + %v = %v, want %v", trial, v[i], c[i], got, want)
			}
		}
		off := k.Orthant
		for _, q := range k.SOC {
			u, d := v[off:off+q], c[off:off+q]
			off += q
			_, nu := jnorm2(u)
			w := make([]float64, q)
			floats.AddTo(w, u, d)
			_, nw := jnorm2(w)
			l1, l2 := w[0]+nw, w[0]-nw
			if l1 < l2 {
				l1, l2 = l2, l1
			}
			if math.Abs(l1-clip(u[0]+nu)) > 1e-12 || math.Abs(l2-clip(u[0]-nu)) > 1e-12 {
				t.Fatalf("trial %d: eigenvalues %v, %v of v + c, want %v, %v", trial, l1, l2, clip(u[0]+nu), clip(u[0]-nu))
			}
			// Same eigenvectors: (v + c)₁ is a multiple of v₁.
			if nu > 0 && q > 1 && math.Abs(math.Abs(floats.Dot(w[1:], u[1:]))-nw*nu) > 1e-12*(1+nw*nu) {
				t.Fatalf("trial %d: (v + c)₁ = %v is not parallel to v₁ = %v", trial, w[1:], u[1:])
			}
		}
	}
}

func mustSolveConeQP(t *testing.T, p *ConeQP, want Status) *ConeQPResult {
	t.Helper()
	res, err := SolveConeQP(context.Background(), p, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != want {
		t.Fatalf("status %v after %d iterations, want %v", res.Status, res.Iterations, want)
	}
	return res
}

func coneNear(t *testing.T, what string, got, want []float64, tol float64) {
	t.Helper()
	for i := range want {
		if math.Abs(got[i]-want[i]) > tol {
			t.Fatalf("%s = %v, want %v", what, got, want)
		}
	}
}

func TestConeQPTextbook(t *testing.T) {
	t.Run("LP", func(t *testing.T) {
		// max x₁ + x₂ s.t. x₁ + 2x₂ ≤ 3, 2x₁ + x₂ ≤ 3, x ≥ 0: x* = (1, 1).
		p := &ConeQP{
			C: []float64{-1, -1},
			G: mat.NewDense(4, 2, []float64{1, 2, 2, 1, -1, 0, 0, -1}),
			H: []float64{3, 3, 0, 0},
			K: Cone{Orthant: 4},
		}
		res := mustSolveConeQP(t, p, Optimal)
		coneNear(t, "x", res.X, []float64{1, 1}, 1e-7)
		coneNear(t, "z", res.Z, []float64{1.0 / 3, 1.0 / 3, 0, 0}, 1e-7)
		if math.Abs(res.PrimalObjective+2) > 1e-8 || math.Abs(res.DualObjective+2) > 1e-8 {
			t.Fatalf("objectives %v, %v, want −2", res.PrimalObjective, res.DualObjective)
		}
	})
	t.Run("SOCP", func(t *testing.T) {
		// min x₁ + x₂ s.t. ‖x‖ ≤ 1: x* = −(1, 1)/√2.
		p := &ConeQP{
			C: []float64{1, 1},
			G: mat.NewDense(3, 2, []float64{0, 0, 1, 0, 0, 1}),
			H: []float64{1, 0, 0},
			K: Cone{SOC: []int{3}},
		}
		res := mustSolveConeQP(t, p, Optimal)
		r := 1 / math.Sqrt2
		coneNear(t, "x", res.X, []float64{-r, -r}, 1e-7)
		if math.Abs(res.PrimalObjective+math.Sqrt2) > 1e-8 {
			t.Fatalf("objective %v, want −√2", res.PrimalObjective)
		}
	})
	t.Run("QP with equality", func(t *testing.T) {
		// Projection of a = (0.8, 0.6, −0.2) onto the simplex: (0.6, 0.4, 0).
		a := []float64{0.8, 0.6, -0.2}
		p := &ConeQP{
			Q: mat.NewSymDense(3, []float64{1, 0, 0, 0, 1, 0, 0, 0, 1}),
			C: []float64{-a[0], -a[1], -a[2]},
			G: mat.NewDense(3, 3, []float64{-1, 0, 0, 0, -1, 0, 0, 0, -1}),
			H: []float64{0, 0, 0},
			A: mat.NewDense(1, 3, []float64{1, 1, 1}),
			B: []float64{1},
			K: Cone{Orthant: 3},
		}
		res := mustSolveConeQP(t, p, Optimal)
		coneNear(t, "x", res.X, []float64{0.6, 0.4, 0}, 1e-7)
		coneNear(t, "y", res.Y, []float64{0.2}, 1e-7)
	})
	t.Run("QP in a cone", func(t *testing.T) {
		// min ½‖x − a‖² s.t. x ∈ Q³ with a = (0, 3, 4): the projection onto
		// the cone is ((0 + 5)/2)(1, 3/5, 4/5) = (2.5, 1.5, 2).
		p := &ConeQP{
			Q: mat.NewSymDense(3, []float64{1, 0, 0, 0, 1, 0, 0, 0, 1}),
			C: []float64{0, -3, -4},
			G: mat.NewDense(3, 3, []float64{-1, 0, 0, 0, -1, 0, 0, 0, -1}),
			H: []float64{0, 0, 0},
			K: Cone{SOC: []int{3}},
		}
		res := mustSolveConeQP(t, p, Optimal)
		coneNear(t, "x", res.X, []float64{2.5, 1.5, 2}, 1e-7)
	})
	t.Run("primal infeasible", func(t *testing.T) {
		// x ≥ 1 and x ≤ 0.
		p := &ConeQP{C: []float64{1}, G: mat.NewDense(2, 1, []float64{-1, 1}), H: []float64{-1, 0}, K: Cone{Orthant: 2}}
		res := mustSolveConeQP(t, p, PrimalInfeasible)
		// Certificate: z ≥ 0, Gᵀz = 0, hᵀz = −1.
		if res.Z[0] < 0 || res.Z[1] < 0 || math.Abs(res.Z[1]-res.Z[0]) > 1e-7 || math.Abs(-res.Z[0]+1) > 1e-7 {
			t.Fatalf("certificate z = %v", res.Z)
		}
	})
	t.Run("dual infeasible", func(t *testing.T) {
		// min −x₁ s.t. x ≥ 0, ‖(x₁, x₂)‖... unbounded along x₁.
		p := &ConeQP{C: []float64{-1, 0}, G: mat.NewDense(2, 2, []float64{-1, 0, 0, -1}), H: []float64{0, 0}, K: Cone{Orthant: 2}}
		res := mustSolveConeQP(t, p, DualInfeasible)
		if math.Abs(res.X[0]-1) > 1e-7 || res.X[1] < -1e-7 {
			t.Fatalf("certificate x = %v", res.X)
		}
	})
}

func TestConeQPStatusAndErrors(t *testing.T) {
	p := &ConeQP{
		C: []float64{1, 1},
		G: mat.NewDense(3, 2, []float64{0, 0, 1, 0, 0, 1}),
		H: []float64{1, 0, 0},
		K: Cone{SOC: []int{3}},
	}
	res, err := SolveConeQP(context.Background(), p, Options{MaxIter: 2})
	if err != nil || res.Status != IterationLimit {
		t.Fatalf("MaxIter 2: %v, %v", res, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	res, err = SolveConeQP(ctx, p, Options{})
	if !errors.Is(err, context.Canceled) || res == nil || res.Status == Optimal {
		t.Fatalf("canceled: %v, %v", res, err)
	}
	bad := *p
	bad.H = []float64{1, 0}
	if _, err := SolveConeQP(context.Background(), &bad, Options{}); err == nil || !strings.Contains(err.Error(), "h has 2") {
		t.Fatalf("short h: %v", err)
	}
	if _, err := SolveConeQP(context.Background(), p, Options{Tol: -1}); err == nil {
		t.Fatal("negative tolerance accepted")
	}
	if s := Status(0).String(); s == "optimal" {
		t.Fatal("zero status reads optimal")
	}
}

// SparseG solves by G's nonzeros the programs the dense normal matrix
// solves: random cone programs (LP, QP, with second-order cones and
// equality constraints, about a tenth of G nonzero) to the same point and
// multipliers.
func TestConeQPSparseGMatchesDense(t *testing.T) {
	rng := rand.New(rand.NewPCG(71, 72))
	for trial := 0; trial < 12; trial++ {
		n := 8 + rng.IntN(20)
		nrow := n + rng.IntN(2*n)
		socs := []int{}
		if trial%3 != 0 {
			socs = []int{1 + 1 + rng.IntN(4), 1 + 1 + rng.IntN(4)}
		}
		m := 2*n + nrow
		for _, q := range socs {
			m += q
		}
		g := mat.NewDense(m, n, nil)
		h := make([]float64, m)
		r := 0
		for l := 0; l < n; l++ { // −1 ≤ x ≤ 1
			g.Set(r, l, 1)
			g.Set(r+1, l, -1)
			h[r], h[r+1] = 1, 1
			r += 2
		}
		for k := 0; k < nrow; k++ { // sparse rows, x = 0 strictly inside
			for e := 0; e < 1+rng.IntN(3); e++ {
				g.Set(r, rng.IntN(n), rng.NormFloat64())
			}
			h[r] = 0.1 + rng.Float64()
			r++
		}
		for _, q := range socs { // ‖x_S‖ ≤ 1 over q − 1 random entries
			h[r] = 1
			for i := 1; i < q; i++ {
				g.Set(r+i, rng.IntN(n), -1)
			}
			r += q
		}
		c := make([]float64, n)
		for l := range c {
			c[l] = rng.NormFloat64()
		}
		p := &ConeQP{C: c, G: g, H: h, K: Cone{Orthant: 2*n + nrow, SOC: socs}}
		if trial%2 == 1 {
			p.Q = mat.NewSymDense(n, nil)
			for l := 0; l < n; l++ {
				p.Q.SetSym(l, l, rng.Float64())
			}
		}
		if trial%4 == 3 { // Σ x = 0
			p.A = mat.NewDense(1, n, nil)
			for l := 0; l < n; l++ {
				p.A.Set(0, l, 1)
			}
			p.B = []float64{0}
		}
		dense := mustSolveConeQP(t, p, Optimal)
		sp := *p
		sp.SparseG = true
		sparse := mustSolveConeQP(t, &sp, Optimal)
		coneNear(t, fmt.Sprintf("trial %d x", trial), sparse.X, dense.X, 1e-6)
		coneNear(t, fmt.Sprintf("trial %d z", trial), sparse.Z, dense.Z, 1e-6)
		if d := math.Abs(sparse.PrimalObjective - dense.PrimalObjective); d > 1e-8*math.Max(1, math.Abs(dense.PrimalObjective)) {
			t.Errorf("trial %d: objective %.12g with SparseG, %.12g dense", trial, sparse.PrimalObjective, dense.PrimalObjective)
		}
	}
}
