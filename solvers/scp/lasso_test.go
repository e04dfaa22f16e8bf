package scp

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/convexnn/convexnn/solvers/internal/testprog"
	"gonum.org/v1/gonum/floats"
	"gonum.org/v1/gonum/mat"
)

func randomLasso(t *testing.T, n, d, m int, seed uint64) (*Lasso, *mat.Dense) {
	t.Helper()
	x, y := gaussianData(n, d, rand.New(rand.NewPCG(seed, 1)), func(row []float64) float64 { return math.Copysign(1, row[0]*row[1]+0.1) })
	u, h := sampledFeatures(t, x, m, seed)
	return &Lasso{H: h, Y: y, Beta: 0.05}, u
}

func TestSampleSphereUnitNormDeterministic(t *testing.T) {
	a, err := SampleSphere(5, 200, 7)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := SampleSphere(5, 200, 7)
	c, _ := SampleSphere(5, 200, 8)
	if !mat.Equal(a, b) {
		t.Fatal("same seed gave different neurons")
	}
	if mat.Equal(a, c) {
		t.Fatal("different seeds gave the same neurons")
	}
	var mean [5]float64
	for j := 0; j < 200; j++ {
		col := mat.Col(nil, j, a)
		if math.Abs(floats.Norm(col, 2)-1) > 1e-12 {
			t.Fatalf("column %d has norm %v", j, floats.Norm(col, 2))
		}
		for i := range mean {
			mean[i] += col[i] / 200
		}
	}
	for i, v := range mean {
		if math.Abs(v) > 0.2 { // uniform on the sphere: mean 0, sd of the mean ≈ 1/sqrt(5*200)
			t.Fatalf("coordinate %d has mean %v: not uniform on the sphere", i, v)
		}
	}
	if _, err := SampleSphere(0, 3, 1); err == nil {
		t.Fatal("d=0 accepted")
	}
}

// TestFISTAReachesKKT checks the answer by the Lasso's optimality conditions,
// which FISTA does not use: Hᵀ(y − Hα) = β sgn(α_j) where α_j ≠ 0, and
// |H_jᵀ(y − Hα)| ≤ β where α_j = 0.
func TestFISTAReachesKKT(t *testing.T) {
	p, _ := randomLasso(t, 60, 3, 40, 3)
	f, err := NewFISTA(p, nil)
	if err != nil {
		t.Fatal(err)
	}
	st := runUntil(f, 20000, func(st FISTAStep) bool { return st.Gap < 1e-7 })
	if st.Gap > 1e-7 {
		t.Fatalf("duality gap %v after %d iterations", st.Gap, st.Iter)
	}
	n, m := p.H.Dims()
	r := make([]float64, n)
	copy(r, p.Y)
	hr := mat.NewVecDense(n, r)
	hr.MulVec(p.H, mat.NewVecDense(m, f.State.Alpha))
	for k := range r {
		r[k] = p.Y[k] - r[k]
	}
	var g mat.VecDense
	g.MulVec(p.H.T(), mat.NewVecDense(n, r))
	for j, a := range f.State.Alpha {
		gj := g.AtVec(j)
		if a != 0 {
			if math.Abs(gj-p.Beta*math.Copysign(1, a)) > 1e-4 {
				t.Fatalf("stationarity fails at active j=%d: Hᵀr=%v, β sgn α=%v", j, gj, p.Beta*math.Copysign(1, a))
			}
		} else if math.Abs(gj) > p.Beta+1e-4 {
			t.Fatalf("subgradient condition fails at inactive j=%d: |Hᵀr|=%v > β=%v", j, math.Abs(gj), p.Beta)
		}
	}
}

// TestFISTAResumeIsExact checks that a solve stopped, serialized and resumed
// takes exactly the steps of the uninterrupted solve.
func TestFISTAResumeIsExact(t *testing.T) {
	p, _ := randomLasso(t, 50, 3, 30, 5)
	whole, _ := NewFISTA(p, nil)
	for i := 0; i < 80; i++ {
		whole.Step()
	}
	first, _ := NewFISTA(p, nil)
	for i := 0; i < 30; i++ {
		first.Step()
	}
	saved := testprog.Saved(t, first.State)
	second, err := NewFISTA(p, &saved)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 50; i++ {
		second.Step()
	}
	if second.State.Iter != 80 {
		t.Fatalf("resumed run ended at iteration %d, want 80", second.State.Iter)
	}
	if !floats.Equal(whole.State.Alpha, second.State.Alpha) || whole.State.Obj != second.State.Obj {
		t.Fatalf("resumed run differs: objective %v vs %v", second.State.Obj, whole.State.Obj)
	}
}

func TestFISTAObjectiveDecreasesAndStepIsAllocationFree(t *testing.T) {
	p, _ := randomLasso(t, 40, 3, 25, 9)
	f, _ := NewFISTA(p, nil)
	start := f.State.Obj
	allocs := testing.AllocsPerRun(50, func() { f.Step() })
	if allocs != 0 {
		t.Fatalf("Step allocates %v times per call", allocs)
	}
	if f.State.Obj >= start {
		t.Fatalf("objective did not decrease: %v → %v", start, f.State.Obj)
	}
}

func TestLassoValidation(t *testing.T) {
	p, _ := randomLasso(t, 10, 2, 5, 1)
	bad := *p
	bad.Beta = 0
	if _, err := NewFISTA(&bad, nil); err == nil {
		t.Fatal("β=0 accepted")
	}
	bad = *p
	bad.Y = p.Y[:5]
	if _, err := NewFISTA(&bad, nil); err == nil {
		t.Fatal("label count mismatch accepted")
	}
	bad = *p
	bad.Y = append([]float64(nil), p.Y...)
	bad.Y[3] = math.NaN()
	if _, err := NewFISTA(&bad, nil); err == nil {
		t.Fatal("NaN label accepted")
	}
	if _, err := NewFISTA(p, &FISTAState{Alpha: []float64{1}, Prev: []float64{1}, T: 1, L: 1}); err == nil {
		t.Fatal("state of the wrong size accepted")
	}
}

func TestNetworkMatchesFeatures(t *testing.T) {
	p, u := randomLasso(t, 30, 3, 12, 2)
	alpha := make([]float64, 12)
	for j := range alpha {
		alpha[j] = float64(j%3) - 1
	}
	net, err := Network(u, alpha, false)
	if err != nil {
		t.Fatal(err)
	}
	var hv mat.VecDense
	hv.MulVec(p.H, mat.NewVecDense(12, alpha))
	// Rebuild X from H is not possible; instead evaluate at random points.
	rng := rand.New(rand.NewPCG(4, 4))
	x := mat.NewDense(5, 3, nil)
	for i := 0; i < 5; i++ {
		for j := 0; j < 3; j++ {
			x.Set(i, j, rng.NormFloat64())
		}
	}
	h, _ := ReLUFeatures(x, u)
	var want mat.VecDense
	want.MulVec(h, mat.NewVecDense(12, alpha))
	got, err := net.Predict(x)
	if err != nil {
		t.Fatal(err)
	}
	for i := range got {
		if math.Abs(got[i]-want.AtVec(i)) > 1e-12 {
			t.Fatalf("network output %v, features give %v", got[i], want.AtVec(i))
		}
	}
}
