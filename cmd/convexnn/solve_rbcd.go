package main

import (
	"context"

	"github.com/convexnn/convexnn/solvers"
)

// solveRBCD runs ADMM with the u-update by Algorithm RBCD.
func solveRBCD(ctx context.Context, p *solvers.Program, o solvers.ADMMOptions) (solvers.Weights, string, int, bool, error) {
	a, hist, err := solvers.SolveADMMRBCD(ctx, p, solvers.RBCDOptions{ADMMOptions: o}, nil, nil)
	if err != nil {
		return solvers.Weights{}, "rbcd", 0, false, err
	}
	return a.Weights(), "rbcd", len(hist), len(hist) > 0 && a.Converged(hist[len(hist)-1]), nil
}
