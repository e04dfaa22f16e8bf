package ipm

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/convexnn/convexnn/solvers"
	"gonum.org/v1/gonum/floats"
	"gonum.org/v1/gonum/mat"
)

// l1Optimality returns the largest violation of the optimality conditions
// of ℓ(Hα) + β‖α‖₁ at α: g = Hᵀ∇ℓ(Hα) must satisfy g_i = −β sign α_i where
// α_i ≠ 0 and |g_i| ≤ β elsewhere; relative to β.
func l1Optimality(h *mat.Dense, y []float64, loss solvers.Loss, beta float64, alpha []float64) float64 {
	n, nf := h.Dims()
	yhat := make([]float64, n)
	mat.NewVecDense(n, yhat).MulVec(h, mat.NewVecDense(nf, alpha))
	grad := make([]float64, n)
	loss.Grad(grad, yhat, y)
	g := mat.NewVecDense(nf, nil)
	g.MulVec(h.T(), mat.NewVecDense(n, grad))
	var worst float64
	amax := floats.Norm(alpha, math.Inf(1))
	for i := 0; i < nf; i++ {
		gi := g.AtVec(i)
		if math.Abs(alpha[i]) > 1e-5*math.Max(1, amax) {
			worst = math.Max(worst, math.Abs(gi+beta*math.Copysign(1, alpha[i])))
		} else {
			worst = math.Max(worst, math.Abs(gi)-beta)
		}
	}
	return worst / beta
}

// TestSolveL1MeetsTheOptimalityConditions checks SolveL1 on random ReLU
// feature programs with the squared, BCE and logistic losses.
func TestSolveL1MeetsTheOptimalityConditions(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, c := range []struct {
		loss  solvers.Loss
		n, nf int
		beta  float64
	}{{solvers.SquaredLoss, 60, 40, 0.1}, {solvers.BCELoss, 80, 50, 1e-3}, {solvers.LogisticLoss, 50, 90, 3e-3}, {solvers.SquaredLoss, 40, 120, 0.5}} {
		h := mat.NewDense(c.n, c.nf, nil)
		for k := 0; k < c.n; k++ {
			for j := 0; j < c.nf; j++ {
				h.Set(k, j, math.Max(0, rng.NormFloat64()))
			}
		}
		y := make([]float64, c.n)
		for k := range y {
			switch c.loss {
			case solvers.SquaredLoss:
				y[k] = rng.NormFloat64()
			case solvers.BCELoss:
				y[k] = float64(rng.IntN(2))
			default:
				y[k] = float64(2*rng.IntN(2) - 1)
			}
		}
		res, err := SolveL1(context.Background(), h, y, c.loss, c.beta, Options{})
		if err != nil || res.Status != Optimal {
			t.Fatalf("%v: %v %v", c.loss, res, err)
		}
		if v := l1Optimality(h, y, c.loss, c.beta, res.Alpha); v > 1e-5 {
			t.Errorf("%v n=%d N=%d: optimality violated by %.3g β after %d iterations", c.loss, c.n, c.nf, v, res.Iterations)
		}
		t.Logf("%v n=%d N=%d: objective %.10g, %d iterations, %d nonzero", c.loss, c.n, c.nf, res.Objective, res.Iterations, countNonzero(res.Alpha))
	}
}

func countNonzero(a []float64) int {
	c := 0
	m := floats.Norm(a, math.Inf(1))
	for _, v := range a {
		if math.Abs(v) > 1e-7*m {
			c++
		}
	}
	return c
}
