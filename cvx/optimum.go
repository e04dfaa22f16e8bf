package cvx

import (
	"context"
	"fmt"
	"time"

	"github.com/convexnn/convexnn/solvers"
	"github.com/convexnn/convexnn/solvers/admm"
	"github.com/convexnn/convexnn/solvers/certify"
	"github.com/convexnn/convexnn/solvers/ipm"
)

// Optimum solves the problem's convex program to a certified relative gap
// (upper − lower)/|upper| ≤ gap (solvers/certify) in one call, by the method
// ipm.MethodFor chooses: the interior-point method when the loss is squared
// or hinge and its matrices fit in memory (ipm.MemoryEstimate,
// ipm.RobustMemoryEstimate; run with ipm.Options.Gap: certified at each
// iterate that meets its tolerance, which tightens until the gap holds), on
// large robust programs (ℓ∞ set) through ipm.WorkingSet over patterns
// (Solution.Iterations counts its rounds), the proximal Newton method (ipm.Newton) for a
// standard program with the BCE or logistic loss, otherwise ADMM (admm.ChooseVariant's variant) certified every 25 iterations with
// its multipliers until the gap is reached, at most maxIter iterations (0
// means 100000). The appendix's CNN and two-hidden-layer problems go to
// their interior-point method when it takes the program, else to their
// ADMM splitting (optimumGeneral). The Solution's Status is "gap reached"
// or "gap not reached", and Lower, Upper and Gap hold the last certificate.
func Optimum(p *Problem, gap float64, maxIter int) (*Solution, error) {
	return OptimumContext(context.Background(), p, gap, maxIter)
}

// OptimumContext is Optimum with cancellation through ctx (the best point
// so far is returned with an error wrapping ctx's).
func OptimumContext(ctx context.Context, p *Problem, gap float64, maxIter int) (*Solution, error) {
	if !(gap > 0 && gap < 1) {
		return nil, fmt.Errorf("cvx: Optimum: certified gap %v, need 0 < gap < 1", gap)
	}
	if maxIter < 0 {
		return nil, fmt.Errorf("cvx: Optimum: maxIter %d < 0", maxIter)
	}
	if maxIter == 0 {
		maxIter = 100000
	}
	if p.Err() == nil && (p.conv != nil || p.twoHidden > 0) {
		return optimumGeneral(ctx, p, gap, maxIter)
	}
	prog, err := p.Convex()
	if err != nil {
		return nil, err
	}
	var pert solvers.Perturbation
	if p.robust() {
		pert = p.Perturbation()
	}
	return optimum(ctx, prog, pert, gap, maxIter, ipm.MethodFor(prog, pert))
}

// optimum is OptimumContext by the given method (NoMethod: ADMM).
func optimum(ctx context.Context, prog *solvers.Program, pert solvers.Perturbation, gap float64, maxIter int, method ipm.Method) (*Solution, error) {
	robust := pert.Eps > 0
	t0 := time.Now()
	switch method {
	case ipm.ProximalNewton:
		nt, err := ipm.NewNewton(prog, gap, ipm.Options{}, nil, nil)
		if err != nil {
			return nil, err
		}
		last, stop := nt.Solve(ctx, 0, nil)
		if last.Iter == 0 {
			return nil, stop
		}
		s := &Solution{Status: gapStatus(last.Bound.Gap, gap), Objective: last.Objective, Violation: last.Bound.Violation,
			Iterations: last.Iter, Weights: last.Weights, Program: prog, Perturbation: pert, Clean: last.Objective}
		if err := s.complete(t0, last.Bound); err != nil {
			return nil, err
		}
		if stop != nil {
			return s, fmt.Errorf("cvx: Optimum stopped after %d proximal Newton steps: %w", s.Iterations, stop)
		}
		return s, nil
	case ipm.PatternWorkingSet:
		ws, err := ipm.NewWorkingSet(prog, pert, gap, 0, ipm.Options{}, nil, nil)
		if err != nil {
			return nil, err
		}
		return workingSetSolution(ctx, ws, t0)
	case ipm.InteriorPoint:
		var s *Solution
		var err error
		if robust {
			s, err = solveRobust(ctx, prog, pert, IPM{Gap: gap})
		} else {
			s, err = SolveProgramContext(ctx, prog, IPM{Gap: gap})
		}
		if s != nil {
			s.Seconds = time.Since(t0).Seconds()
			s.Status = gapStatus(s.Gap, gap)
			switch {
			case s.Gap <= gap && ctx.Err() == nil:
				// The certificate is the answer: a method that ended short
				// of its own tolerance (inaccurate) but within the gap has
				// solved the problem as asked.
				err = nil
			case err == nil:
				err = fmt.Errorf("cvx: Optimum: certified gap %.3g above the target %.3g at the interior-point method's tightest tolerance", s.Gap, gap)
			}
		}
		return s, err
	}
	solver, err := admm.New(prog, pert, admm.ChooseVariant(prog.Loss, robust), admm.Options{MaxIter: maxIter, AbsTol: 1e-12, RelTol: 1e-12}, nil)
	if err != nil {
		return nil, err
	}
	cert, err := certify.New(prog, pert)
	if err != nil {
		return nil, err
	}
	cert.Refine = 20 // warm-started from one certificate to the next
	b, _, stop := admm.SolveToGap(ctx, solver, cert, gap, 25, maxIter)
	if stop != nil && ctx.Err() == nil {
		return nil, stop
	}
	wt := solver.Weights()
	s := &Solution{Status: gapStatus(b.Gap, gap), Objective: b.Objective, Violation: b.Violation, Iterations: solver.Iter(),
		Weights: wt, Program: prog, Perturbation: pert}
	if s.Clean, err = prog.Objective(wt); err != nil {
		return nil, err
	}
	if err := s.complete(t0, b); err != nil {
		return nil, err
	}
	if stop != nil {
		return s, fmt.Errorf("cvx: Optimum stopped after %d ADMM iterations: %w", s.Iterations, stop)
	}
	return s, nil
}

func gapStatus(got, want float64) string {
	if got <= want {
		return "gap reached"
	}
	return "gap not reached"
}

// workingSetSolution runs ws (ipm.WorkingSet) to its certified gap and
// returns its last round's point as a Solution (Iterations counts the
// rounds), the point lifted off its active cone margins (adoptStrict); the
// Status says whether the gap was reached. When the method stops early
// (ctx, or no pattern left to add) the last round's Solution comes with
// the error; before the first round, the error alone.
func workingSetSolution(ctx context.Context, ws *ipm.WorkingSet, t0 time.Time) (*Solution, error) {
	prog, pert := ws.Program, ws.Perturbation
	last, stop := ws.Solve(ctx, 0, nil)
	if last.Round == 0 {
		return nil, stop
	}
	b := last.Bound
	s := &Solution{Objective: b.Objective, Violation: b.Violation, Iterations: last.Round, Weights: last.Weights, Program: prog, Perturbation: pert}
	var err error
	if s.Clean, err = prog.Objective(s.Weights); err != nil {
		return nil, err
	}
	cert, err := certify.New(prog, pert)
	if err != nil {
		return nil, err
	}
	if err := s.adoptBest(b); err != nil {
		return nil, err
	}
	if err := s.adoptStrict(cert, &b); err != nil {
		return nil, err
	}
	if err := s.complete(t0, b); err != nil {
		return nil, err
	}
	s.Status = gapStatus(s.Gap, ws.Gap)
	if stop != nil {
		return s, fmt.Errorf("cvx: the working-set method stopped after %d rounds: %w", s.Iterations, stop)
	}
	return s, nil
}
