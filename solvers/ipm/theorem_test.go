package ipm

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/convexnn/convexnn/solvers"
	"github.com/convexnn/convexnn/solvers/internal/testprog"
	"gonum.org/v1/gonum/mat"
)

// gdNonconvex minimizes l^{u,α} = ½‖Σ_j (X u_j)_+ α_j − y‖² +
// (β/2) Σ_j (‖u_j‖² + α_j²) by full-batch gradient descent with a
// backtracking step from a random start of width m, and returns the
// objective reached.
func gdNonconvex(x *mat.Dense, y []float64, beta float64, m int, seed uint64, iters int) float64 {
	n, d := x.Dims()
	rng := rand.New(rand.NewPCG(seed, 77))
	u := make([]float64, d*m) // u_j = u[j*d:(j+1)*d]
	a := make([]float64, m)
	for i := range u {
		u[i] = rng.NormFloat64() * 0.5
	}
	for j := range a {
		a[j] = rng.NormFloat64() * 0.5
	}
	z := make([]float64, m)
	// output returns the network's output Σ_j (x_kᵀu_j)_+ a_j and leaves
	// z_j = x_kᵀu_j in z.
	output := func(k int, u, a []float64) float64 {
		var f float64
		for j := 0; j < m; j++ {
			var s float64
			for i := 0; i < d; i++ {
				s += x.At(k, i) * u[j*d+i]
			}
			z[j] = s
			if s > 0 {
				f += s * a[j]
			}
		}
		return f
	}
	// sumSquares returns Σ v_i² over the entries of all of vs.
	sumSquares := func(vs ...[]float64) float64 {
		var s float64
		for _, v := range vs {
			for _, e := range v {
				s += e * e
			}
		}
		return s
	}
	obj := func(u, a []float64) float64 {
		var l float64
		for k := 0; k < n; k++ {
			f := output(k, u, a)
			l += (f - y[k]) * (f - y[k]) / 2
		}
		return l + beta/2*sumSquares(u, a)
	}
	gu := make([]float64, len(u))
	ga := make([]float64, m)
	nu := make([]float64, len(u))
	na := make([]float64, m)
	step := 0.1
	cur := obj(u, a)
	for it := 0; it < iters; it++ {
		for i := range gu {
			gu[i] = beta * u[i]
		}
		for j := range ga {
			ga[j] = beta * a[j]
		}
		for k := 0; k < n; k++ {
			r := output(k, u, a) - y[k]
			for j := 0; j < m; j++ {
				if z[j] > 0 {
					ga[j] += r * z[j]
					for i := 0; i < d; i++ {
						gu[j*d+i] += r * a[j] * x.At(k, i)
					}
				}
			}
		}
		g2 := sumSquares(gu, ga)
		if g2 < 1e-20 {
			break
		}
		for {
			for i := range u {
				nu[i] = u[i] - step*gu[i]
			}
			for j := range a {
				na[j] = a[j] - step*ga[j]
			}
			if next := obj(nu, na); next <= cur-0.5*step*g2 || step < 1e-12 {
				cur = next
				copy(u, nu)
				copy(a, na)
				step *= 1.5
				break
			}
			step /= 2
		}
	}
	return cur
}

// TestConvexOptimumIsTheGlobalOptimum checks Theorem (Pilanci and Ergen) on
// a small instance: with every activation pattern (exact enumeration, 2-D
// points with a bias column), the convex optimum is at most the best
// non-convex objective gradient descent finds from many random starts, and
// the network recovered from the convex solution attains the convex optimum.
func TestConvexOptimumIsTheGlobalOptimum(t *testing.T) {
	const n = 10
	x, y := testprog.Square2D(n, rand.New(rand.NewPCG(5, 5)), func(a, b float64) float64 { return math.Sin(3*a) + b*b })
	d, err := solvers.ExactPatterns(x, 0)
	if err != nil {
		t.Fatal(err)
	}
	const beta = 1e-2
	p := &solvers.Program{X: x, Y: y, Loss: solvers.SquaredLoss, Beta: beta, D: d, Bias: true}
	res, err := Solve(context.Background(), p, Options{})
	if err != nil || res.Status != Optimal {
		t.Fatalf("interior point: %v (%v)", err, res)
	}
	net, nc := testprog.Recovered(t, p, res.Weights)
	if math.Abs(nc-res.Objective) > 1e-6*math.Max(1, res.Objective) {
		t.Fatalf("recovered network l^{u,α} = %.10f, convex optimum %.10f", nc, res.Objective)
	}
	best := math.Inf(1)
	for s := uint64(0); s < 20; s++ {
		best = math.Min(best, gdNonconvex(x, y, beta, 2*n, s, 4000))
	}
	if res.Objective > best+1e-6 {
		t.Fatalf("convex optimum %.10f exceeds a non-convex objective %.10f found by gradient descent", res.Objective, best)
	}
	t.Logf("P = %d patterns, convex optimum %.8f, recovered network (%d neurons) %.8f, best of 20 GD runs %.8f", len(d), res.Objective, net.Width(), nc, best)
}
