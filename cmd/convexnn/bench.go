package main

import (
	"context"
	"io"
	"strings"
)

// benchCommand is `convexnn bench <cvxopt|torch|all> [flags]`: side-by-side
// measurements against independent peers run in the same invocation, printed
// as ratios. Not part of `make test` (paper-scale runs, minutes each).
//
//	cvxopt  Debian's python3-cvxopt against our interior-point method and our
//	        ADMM on one mid-size convex program (n = 500, d = 20, P_s = 40):
//	        time to a 1e-4 relative objective (bench_cvxopt.go).
//	torch   PyTorch back-propagation (Debian's python3-torch, CPU) against our
//	        ADMM on the Table 2 and Table 3 settings: time to the validation
//	        accuracy our ADMM reaches (bench_torch.go).
func benchCommand(ctx context.Context, args []string, stdout io.Writer) error {
	if len(args) == 0 {
		return badInput("bench: name a benchmark: cvxopt, torch or all\n%s", benchUsage)
	}
	switch args[0] {
	case "cvxopt":
		return benchCVXOPT(ctx, args[1:], stdout)
	case "torch":
		return benchTorch(ctx, args[1:], stdout)
	case "all":
		if len(args) > 1 {
			return badInput("bench all runs both benchmarks with their defaults and takes no flags (got %s): run bench cvxopt and bench torch one by one to set flags\n%s", strings.Join(args[1:], " "), benchUsage)
		}
		if err := benchCVXOPT(ctx, nil, stdout); err != nil {
			return err
		}
		return benchTorch(ctx, nil, stdout)
	}
	return badInput("bench: unknown benchmark %q; known: %s\n%s", args[0], strings.Join([]string{"cvxopt", "torch", "all"}, ", "), benchUsage)
}

const benchUsage = `usage: convexnn bench cvxopt [-out out/bench] [-runs N]
       convexnn bench torch [-out out/bench] [-size paper|small] [-lrs list] [experiment ...]
       convexnn bench all`
