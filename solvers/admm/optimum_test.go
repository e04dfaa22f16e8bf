package admm

import (
	"context"
	"fmt"
	"io"
	"math"
	"testing"

	"github.com/convexnn/convexnn/solvers"
	"github.com/convexnn/convexnn/solvers/internal/testprog"
	"github.com/convexnn/convexnn/solvers/ipm"
)

// The interior-point optima the ADMM variants are checked against.

func solveIPMOK(t *testing.T, p *solvers.Program) *ipm.Result {
	t.Helper()
	return testprog.Optimal(t, "ipm.Solve", func(log io.Writer) (*ipm.Result, error) {
		return ipm.Solve(context.Background(), p, ipm.Options{Verbose: log})
	}, func(res *ipm.Result) error {
		return testprog.CheckIPM(res.Status == ipm.Optimal, res.Status, res.Iterations, res.Gap, 1e-8)
	})
}

func solveRobustIPMOK(t *testing.T, p *solvers.Program, pert solvers.Perturbation) *ipm.Result {
	t.Helper()
	return testprog.Optimal(t, fmt.Sprintf("ipm.SolveRobust (%v)", pert), func(log io.Writer) (*ipm.Result, error) {
		return ipm.SolveRobust(context.Background(), p, pert, ipm.Options{Verbose: log})
	}, func(res *ipm.Result) error {
		return testprog.CheckIPM(res.Status == ipm.Optimal, res.Status, res.Iterations, 0, math.Inf(1))
	})
}
