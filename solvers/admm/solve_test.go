package admm

import (
	"context"

	"github.com/convexnn/convexnn/solvers"
)

// The tests run each variant the way a caller does: its constructor, then
// Solve with the options' MaxIter.

func solveClosedForm(ctx context.Context, p *solvers.Program, o Options, st *ClosedFormState, onStep func(Step) bool) (*ClosedForm, []Step, error) {
	a, err := NewClosedForm(p, o, st)
	if err != nil {
		return nil, nil, err
	}
	hist, err := Solve(ctx, a, a.Options.MaxIter, onStep)
	return a, hist, err
}

func solveSplit(ctx context.Context, p *solvers.Program, o Options, st *SplitState, onStep func(Step) bool) (*Split, []Step, error) {
	a, err := NewSplit(p, o, st)
	if err != nil {
		return nil, nil, err
	}
	hist, err := Solve(ctx, a, a.Options.MaxIter, onStep)
	return a, hist, err
}

func solveRBCD(ctx context.Context, p *solvers.Program, o Options, st *RBCDState, onStep func(Step) bool) (*RBCD, []Step, error) {
	a, err := NewRBCD(p, o, st)
	if err != nil {
		return nil, nil, err
	}
	hist, err := Solve(ctx, a, a.Options.MaxIter, onStep)
	return a, hist, err
}

func solveRobust(ctx context.Context, p *solvers.Program, pert solvers.Perturbation, o Options, st *RobustState, onStep func(Step) bool) (*Robust, []Step, error) {
	a, err := NewRobust(p, pert, o, st)
	if err != nil {
		return nil, nil, err
	}
	hist, err := Solve(ctx, a, a.Options.MaxIter, onStep)
	return a, hist, err
}
