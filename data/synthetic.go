package data

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"gonum.org/v1/gonum/mat"
)

// Disk2D returns n points drawn uniformly from the square [-1, 1]² with labels
// y_k = +1 when x_k lies inside the disk of radius 0.65 centred at the origin
// and -1 outside: a set no linear classifier separates and a two-layer ReLU
// network does. The same seed gives the same set.
func Disk2D(n int, seed uint64) (*mat.Dense, []float64, error) {
	if n < 2 {
		return nil, nil, fmt.Errorf("data: Disk2D needs n ≥ 2 points, got %d", n)
	}
	const radius = 0.65
	rng := rand.New(rand.NewPCG(seed, 0x2d15c))
	x := mat.NewDense(n, 2, nil)
	y := make([]float64, n)
	for k := 0; k < n; k++ {
		a, b := 2*rng.Float64()-1, 2*rng.Float64()-1
		x.Set(k, 0, a)
		x.Set(k, 1, b)
		if math.Hypot(a, b) <= radius {
			y[k] = 1
		} else {
			y[k] = -1
		}
	}
	return x, y, nil
}

// Stability2D returns the random 2-D classification set of the paper's
// fig. stability: n = 40 points x_k ~ N(0, I₂) with labels ±1 drawn
// independently of the points (fair coin flips), so the classes overlap and
// fitting them needs many activation patterns. The paper says only that the
// set is random with n = 40 and d = 2; this is our choice.
func Stability2D(seed uint64) (*mat.Dense, []float64) {
	rng := rand.New(rand.NewPCG(seed, 0x57ab))
	return gaussianCoinFlips(rng, 40)
}

// Toy2D returns the 2-D set of the paper's fig. 2D-toy (adversarial training
// with ε = 0.08): n = 34 points drawn uniformly from [−1, 1]² with labels ±1
// from fair coin flips, redrawn where two points of different labels would
// lie closer than 2ε = 0.16 in the ℓ∞ norm, so the perturbation boxes of
// opposite classes do not overlap. The paper says only "34 random points";
// the spacing rule is our choice.
func Toy2D(seed uint64) (*mat.Dense, []float64) {
	rng := rand.New(rand.NewPCG(seed, 0x2d70))
	const n, gap = 34, 0.16
	x := mat.NewDense(n, 2, nil)
	y := make([]float64, n)
	for k := 0; k < n; {
		a, b := 2*rng.Float64()-1, 2*rng.Float64()-1
		lab := 1.0
		if rng.IntN(2) == 0 {
			lab = -1
		}
		ok := true
		for j := 0; j < k; j++ {
			if y[j] != lab && math.Max(math.Abs(x.At(j, 0)-a), math.Abs(x.At(j, 1)-b)) < gap {
				ok = false
				break
			}
		}
		if !ok {
			continue
		}
		x.Set(k, 0, a)
		x.Set(k, 1, b)
		y[k] = lab
		k++
	}
	return x, y
}

func gaussianCoinFlips(rng *rand.Rand, n int) (*mat.Dense, []float64) {
	x := mat.NewDense(n, 2, nil)
	y := make([]float64, n)
	for k := 0; k < n; k++ {
		x.Set(k, 0, rng.NormFloat64())
		x.Set(k, 1, rng.NormFloat64())
		y[k] = 1
		if rng.IntN(2) == 0 {
			y[k] = -1
		}
	}
	return x, y
}

// Step1D is the target function of the paper's fig. te, which the paper
// draws but does not state; ours is piecewise linear with flat regions on
// [−1, 1]:
//
//	f(x) = −0.5             for x < −0.5
//	       −0.5 + 2(x+0.5)  for −0.5 ≤ x < 0     (rising to 0.5)
//	        0.5             for 0 ≤ x < 0.5
//	        0.5 − 2(x−0.5)  for 0.5 ≤ x < 0.75  (falling to 0)
//	        0               for x ≥ 0.75
func Step1D(x float64) float64 {
	switch {
	case x < -0.5:
		return -0.5
	case x < 0:
		return -0.5 + 2*(x+0.5)
	case x < 0.5:
		return 0.5
	case x < 0.75:
		return 0.5 - 2*(x-0.5)
	default:
		return 0
	}
}

// Regression1D returns the 1-D regression set of the paper's fig. te: nTrain
// (8 in the paper) training and nTest (100) test points x drawn uniformly from
// [−1, 1] with noiseless targets y = Step1D(x). X has one column; add the
// bias column the paper uses with Set.AddBias or Problem.Bias.
func Regression1D(nTrain, nTest int, seed uint64) (train, test *Set, err error) {
	if nTrain < 1 || nTest < 1 {
		return nil, nil, fmt.Errorf("data: Regression1D(%d, %d): both sizes must be ≥ 1", nTrain, nTest)
	}
	rng := rand.New(rand.NewPCG(seed, 0x1d))
	make1 := func(n int, name string) *Set {
		x := mat.NewDense(n, 1, nil)
		y := make([]float64, n)
		for k := 0; k < n; k++ {
			v := 2*rng.Float64() - 1
			x.Set(k, 0, v)
			y[k] = Step1D(v)
		}
		return &Set{Name: name, X: x, Y: y, Features: []string{"x"}}
	}
	return make1(nTrain, "regression-1d train"), make1(nTest, "regression-1d test"), nil
}

// Grid1D returns n+1 equally spaced points from lo to hi, as an (n+1)×1
// matrix to predict on and as a slice to draw against.
func Grid1D(lo, hi float64, n int) (*mat.Dense, []float64, error) {
	if n < 1 || !(lo < hi) || math.IsInf(lo, 0) || math.IsInf(hi, 0) {
		return nil, nil, fmt.Errorf("data: Grid1D(%v, %v, %d): need lo < hi, both finite, and n ≥ 1", lo, hi, n)
	}
	xs := make([]float64, n+1)
	for i := range xs {
		xs[i] = lo + (hi-lo)*float64(i)/float64(n)
	}
	return mat.NewDense(n+1, 1, slices.Clone(xs)), xs, nil
}
