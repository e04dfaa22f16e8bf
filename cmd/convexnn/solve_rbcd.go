package main

import (
	"context"

	"github.com/convexnn/convexnn/solvers"
)

// solveRBCD runs ADMM with the u-update by Algorithm RBCD.
func solveRBCD(ctx context.Context, p *solvers.Program, o solvers.ADMMOptions) (solvers.Weights, string, int, bool, error) {
	return solvers.Weights{}, "rbcd", 0, false, badInput("solve: -inner rbcd is not available in this build")
}
