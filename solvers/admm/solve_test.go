package admm

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/convexnn/convexnn/solvers"
)

// The tests run each variant the way a caller does: its constructor, then
// Solve with the options' MaxIter.

var (
	solveClosedForm = solveWith(NewClosedForm)
	solveSplit      = solveWith(NewSplit)
	solveRBCD       = solveWith(NewRBCD)
)

// solveWith turns a variant's constructor into a function that builds the
// solver and runs Solve with its options' MaxIter.
func solveWith[S Solver, St any](newSolver func(*solvers.Program, Options, St) (S, error)) func(context.Context, *solvers.Program, Options, St, func(Step) bool) (S, []Step, error) {
	return func(ctx context.Context, p *solvers.Program, o Options, st St, onStep func(Step) bool) (S, []Step, error) {
		a, err := newSolver(p, o, st)
		if err != nil {
			var none S
			return none, nil, err
		}
		o, _ = o.resolve(a.Variant(), p) // the options the constructor kept
		hist, err := Solve(ctx, a, o.MaxIter, onStep)
		return a, hist, err
	}
}

func solveRobust(ctx context.Context, p *solvers.Program, pert solvers.Perturbation, o Options, st *RobustState, onStep func(Step) bool) (*Robust, []Step, error) {
	newRobust := func(p *solvers.Program, o Options, st *RobustState) (*Robust, error) {
		return NewRobust(p, pert, o, st)
	}
	return solveWith(newRobust)(ctx, p, o, st, onStep)
}

// savedState round-trips a solver's state through JSON, as a saved run
// does, into a fresh value of its variant's state type.
func savedState(t *testing.T, s Solver) State {
	t.Helper()
	raw, err := json.Marshal(s.Checkpoint())
	if err != nil {
		t.Fatal(err)
	}
	st, err := NewState(s.Variant())
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, st); err != nil {
		t.Fatal(err)
	}
	return st
}

// TestSolveStops: Solve stops when onStep says so, after MaxIter steps of a
// resumed solver, on cancellation (returning the steps so far), and when
// the stopping test passes; for the closed-form and the RBCD variants.
func TestSolveStops(t *testing.T) {
	for _, c := range []struct {
		v Variant
		p *solvers.Program
	}{
		{VariantClosedForm, program(30, 3, 4, 0.05, 2)},
		{VariantRBCD, rbcdProgram(t, 30, 3, 4, 0.02, 2, solvers.LogisticLoss)},
	} {
		t.Run(string(c.v), func(t *testing.T) {
			solve := func(ctx context.Context, o Options, st State, onStep func(Step) bool) (Solver, []Step, error) {
				s, err := New(c.p, solvers.Perturbation{}, c.v, o, st)
				if err != nil {
					t.Fatal(err)
				}
				hist, err := Solve(ctx, s, o.MaxIter, onStep)
				return s, hist, err
			}
			calls := 0
			a, hist, err := solve(context.Background(), Options{}, nil, func(s Step) bool {
				calls++
				return s.Iter < 7
			})
			if err != nil || len(hist) != 7 || calls != 7 || a.Iter() != 7 {
				t.Fatalf("early stop: %d steps, %d calls, err %v", len(hist), calls, err)
			}
			// Resume from the state for at most 5 more steps.
			b, hist, err := solve(context.Background(), Options{MaxIter: 5}, savedState(t, a), nil)
			if err != nil || len(hist) != 5 || b.Iter() != 12 || hist[0].Iter != 8 {
				t.Fatalf("resumed run: %d steps, at iteration %d, err %v", len(hist), b.Iter(), err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			d, hist, err := solve(ctx, Options{}, nil, func(s Step) bool {
				if s.Iter == 3 {
					cancel()
				}
				return true
			})
			if err != context.Canceled || len(hist) != 3 || d == nil || d.Iter() != 3 {
				t.Fatalf("canceled run: %d steps, err %v", len(hist), err)
			}
			if c.v != VariantClosedForm {
				return
			}
			_, hist, err = solve(context.Background(), Options{MaxIter: 100000}, nil, nil)
			if err != nil || len(hist) == 100000 {
				t.Fatalf("converging run: %d steps, err %v", len(hist), err)
			}
		})
	}
}
