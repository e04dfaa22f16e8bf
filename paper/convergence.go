package paper

import (
	"fmt"
	"math/rand/v2"

	"github.com/convexnn/convexnn/cvx"
	"gonum.org/v1/gonum/mat"
)

// ConvergenceProblem is run r's problem of figs. conv1 and conv2 (section
// "Convergence of ADMM", notebook 01): X (6×5) and y with standard normal
// entries drawn from seed r, the squared loss, β = 5·10⁻⁴, no bias, and 8
// sampled activation patterns (seed r).
func ConvergenceProblem(r int) *cvx.Problem {
	rng := rand.New(rand.NewPCG(uint64(r), 2026))
	x := mat.NewDense(6, 5, nil)
	y := make([]float64, 6)
	for i := 0; i < 6; i++ {
		for j := 0; j < 5; j++ {
			x.Set(i, j, rng.NormFloat64())
		}
		y[i] = rng.NormFloat64()
	}
	return cvx.Regress(x, y).Beta(5e-4).SamplePatterns(8, uint64(r))
}

// ConvergenceTrace runs ADMM (ρ = 0.4, dual step γ_a = gamma, no early
// stop) for k iterations on run r's problem, kept in dir as "conv-r", and
// returns its history with the problem's optimum l*_IPM from the
// interior-point method (certified).
func ConvergenceTrace(dir cvx.RunDir, r, k int, gamma float64) ([]cvx.Point, *cvx.Solution, error) {
	sol, err := cvx.Solve(ConvergenceProblem(r), cvx.IPM{})
	if err != nil {
		return nil, nil, err
	}
	run := dir.Start(fmt.Sprintf("conv-%d", r), ConvergenceProblem(r), cvx.ADMM{Rho: 0.4, Gamma: gamma, Tol: 1e-300})
	run.Quiet = true
	if err := run.Iterate(k); err != nil {
		return nil, nil, err
	}
	return run.History(), sol, nil
}
