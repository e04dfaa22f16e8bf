package scp

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/convexnn/convexnn/solvers/internal/testprog"
	"gonum.org/v1/gonum/mat"
)

// What the tests of this package share: random data and running a FISTA
// solver to a stopping rule.

// gaussianData returns n points with entries drawn from rng as N(0, 1) and
// their labels y_k = label(x_k), label being called after row k is drawn.
func gaussianData(n, d int, rng *rand.Rand, label func(row []float64) float64) (*mat.Dense, []float64) {
	x := mat.NewDense(n, d, nil)
	y := make([]float64, n)
	for k := range y {
		row := x.RawRowView(k)
		for j := range row {
			row[j] = rng.NormFloat64()
		}
		y[k] = label(row)
	}
	return x, y
}

// sampledFeatures returns N neurons U drawn by SampleSphere(d, N, seed), d
// the columns of x, and their features H = (XU)_+.
func sampledFeatures(t *testing.T, x *mat.Dense, N int, seed uint64) (u, h *mat.Dense) {
	t.Helper()
	_, d := x.Dims()
	u, err := SampleSphere(d, N, seed)
	if err != nil {
		t.Fatal(err)
	}
	h, err = ReLUFeatures(x, u)
	if err != nil {
		t.Fatal(err)
	}
	return u, h
}

// twoD returns n points in the plane with a bias column (d = 3) and
// nonlinear ±1 labels.
func twoD(n int, seed uint64) (*mat.Dense, []float64) {
	return testprog.Square2D(n, rand.New(rand.NewPCG(seed, 3)), func(a, b float64) float64 { return math.Copysign(1, a*a+b*b-0.5) })
}

// stepper is a FISTA solver: FISTA, FISTABCE or FISTAFeatures.
type stepper interface{ Step() FISTAStep }

// runUntil steps s until done accepts the step's report, at most maxIter
// times, and returns the last report.
func runUntil(s stepper, maxIter int, done func(FISTAStep) bool) FISTAStep {
	var st FISTAStep
	for i := 0; i < maxIter; i++ {
		if st = s.Step(); done(st) {
			break
		}
	}
	return st
}

// gapAtMost accepts a duality gap ≤ tol.
func gapAtMost(tol float64) func(FISTAStep) bool {
	return func(st FISTAStep) bool { return st.Gap <= tol }
}

// relGapAtMost accepts a duality gap ≤ tol·max(1, F).
func relGapAtMost(tol float64) func(FISTAStep) bool {
	return func(st FISTAStep) bool { return st.Gap <= tol*math.Max(1, st.Objective) }
}
