package ipm

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/convexnn/convexnn/solvers"
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
	obj := func(u, a []float64) float64 {
		var l float64
		for k := 0; k < n; k++ {
			var f float64
			for j := 0; j < m; j++ {
				var z float64
				for i := 0; i < d; i++ {
					z += x.At(k, i) * u[j*d+i]
				}
				if z > 0 {
					f += z * a[j]
				}
			}
			l += (f - y[k]) * (f - y[k]) / 2
		}
		var reg float64
		for _, v := range u {
			reg += v * v
		}
		for _, v := range a {
			reg += v * v
		}
		return l + beta/2*reg
	}
	gu := make([]float64, len(u))
	ga := make([]float64, m)
	nu := make([]float64, len(u))
	na := make([]float64, m)
	step := 0.1
	cur := obj(u, a)
	z := make([]float64, m)
	for it := 0; it < iters; it++ {
		for i := range gu {
			gu[i] = beta * u[i]
		}
		for j := range ga {
			ga[j] = beta * a[j]
		}
		for k := 0; k < n; k++ {
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
			r := f - y[k]
			for j := 0; j < m; j++ {
				if z[j] > 0 {
					ga[j] += r * z[j]
					for i := 0; i < d; i++ {
						gu[j*d+i] += r * a[j] * x.At(k, i)
					}
				}
			}
		}
		var g2 float64
		for _, v := range gu {
			g2 += v * v
		}
		for _, v := range ga {
			g2 += v * v
		}
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
	rng := rand.New(rand.NewPCG(5, 5))
	const n = 10
	x := mat.NewDense(n, 3, nil)
	y := make([]float64, n)
	for k := 0; k < n; k++ {
		a, b := 2*rng.Float64()-1, 2*rng.Float64()-1
		x.Set(k, 0, a)
		x.Set(k, 1, b)
		x.Set(k, 2, 1)
		y[k] = math.Sin(3*a) + b*b
	}
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
	net, err := p.Recover(res.Weights)
	if err != nil {
		t.Fatal(err)
	}
	nc, err := p.NonconvexObjective(net)
	if err != nil {
		t.Fatal(err)
	}
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
