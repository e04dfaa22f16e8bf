package cvx

import (
	"encoding/json"

	"github.com/convexnn/convexnn/solvers"
)

// openRBCD opens ADMM with the u-update by Algorithm RBCD (solvers.ADMMRBCD).
func openRBCD(a ADMM, prog *solvers.Program, o solvers.ADMMOptions, saved json.RawMessage, unmarshal func(any) error) (engine, error) {
	var st *solvers.RBCDState
	if saved != nil {
		st = new(solvers.RBCDState)
		if err := unmarshal(st); err != nil {
			return nil, err
		}
	}
	solver, err := solvers.NewADMMRBCD(prog, solvers.RBCDOptions{ADMMOptions: o, Blocks: a.Blocks, InnerMax: a.InnerMax, Seed: a.Seed}, st)
	if err != nil {
		return nil, err
	}
	rs := &rbcdStepper{a: solver}
	return &admmEngine{
		stepper: rs, prog: prog, weights: solver.Weights,
		converge: func(solvers.ADMMStep) bool { return solver.Converged(rs.last) },
		iterFn:   func() int { return solver.State.Iter }, stateFn: func() any { return solver.State },
	}, nil
}

// rbcdStepper keeps the last step: its convergence test needs the inner
// residual too.
type rbcdStepper struct {
	a    *solvers.ADMMRBCD
	last solvers.RBCDStep
}

func (r *rbcdStepper) Step() solvers.ADMMStep {
	r.last = r.a.Step()
	return r.last.ADMMStep
}
