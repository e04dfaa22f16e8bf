package cvx

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/convexnn/convexnn/solvers"
	"github.com/convexnn/convexnn/solvers/certify"
	"github.com/convexnn/convexnn/solvers/ipm"
	"gonum.org/v1/gonum/mat"
)

// Regress starts a regression problem on the rows of X (n×d) with real
// targets y (squared loss, β = 1e-3, no bias by default).
func Regress(x *mat.Dense, y []float64) *Problem {
	p := &Problem{x: x, y: y, beta: 1e-3, loss: Squared}
	p.err = validateData(x, y, false)
	return p
}

// IPM is the interior-point method (the paper's "CVX" baseline): it solves
// the convex program in one call to high accuracy.
type IPM struct {
	Tol     float64 // relative accuracy; 0 means 1e-8 (Gap/10 with Gap)
	MaxIter int     // 0 means the solver's default
	// Gap, when positive, goes on until the certified relative gap is at
	// most Gap, tightening Tol in place (ipm.Options.Gap).
	Gap float64
}

// options returns the ipm.Options of m.
func (m IPM) options() ipm.Options {
	return ipm.Options{Tol: m.Tol, MaxIter: m.MaxIter, Gap: m.Gap}
}

// Solution is a convex program solved in one call. For a robust problem
// (Perturbation.Eps > 0) Objective is the robust objective
// (solvers.RobustObjective: eq. hinge_adv_D for the hinge loss, eq. SOCP3 for
// the squared loss), Violation that of the robust constraints
// eq. (robust_constraint) (solvers.RobustViolation), Clean the standard
// objective l^{v,w} at the same weights and Nonconvex the clean l^{u,α}.
type Solution struct {
	Status    string
	Objective float64 // l^{v,w}; the robust objective for a robust problem
	Nonconvex float64 // l^{u,α} of the recovered network (on the clean data)
	Violation float64 // max constraint violation (robust constraints for a robust problem)
	// Clean is l^{v,w} on the clean data (ε = 0) at the solution; it equals
	// Objective for a standard problem.
	Clean float64
	// Perturbation is the problem's perturbation set; Eps is 0 for a
	// standard problem.
	Perturbation solvers.Perturbation
	Iterations   int
	Seconds      float64
	// Lower ≤ p* ≤ Upper certify the program's optimum p* (solvers/certify,
	// with the method's duals when it has them), and Gap is the certified
	// relative gap (Upper − Lower)/|Upper|.
	Lower, Upper, Gap float64
	Weights           solvers.Weights
	Network           *Network
	Program           *solvers.Program
	// CNN is the network of a Conv problem, TwoHidden that of a TwoHidden
	// one (Weights, Network and Program are then unset: their programs are
	// instances of eq. ct_general, Problem.ConvProgram and
	// Problem.TwoHiddenProgram).
	CNN       *CNN
	TwoHidden *TwoHiddenNetwork
	// Generated holds the rounds of a Conv problem's pattern generation
	// (GeneratePatterns), nil without it.
	Generated []GeneratedRound
}

// GeneratedRound is one solve of pattern generation: its patterns, its
// objective and, unless it is the last, the pricing's best filter as a
// multiple of β (the dual's constraint: above 1, the filter's pattern
// lowers the optimum).
type GeneratedRound struct {
	Round, Patterns int
	Objective       float64
	Violation       float64
}

// Solve solves the problem's convex program with the interior-point method:
// for a robust problem (Robust with ε > 0) the robust program of section
// "Convex Adversarial Training" by ipm.SolveRobust (every loss; a dense
// dP×dP factorization per iteration), otherwise eq. (convex_general) (or
// eq. prac_clean with sampled patterns) by ipm.Solve.
func Solve(p *Problem, m IPM) (*Solution, error) {
	return SolveContext(context.Background(), p, m)
}

// SolveContext is Solve with cancellation through ctx: when ctx is done
// the method stops and returns its best iterate so far (Status "iteration
// limit") with an error wrapping ctx's.
func SolveContext(ctx context.Context, p *Problem, m IPM) (*Solution, error) {
	if p.Err() == nil && (p.conv != nil || p.twoHidden > 0) {
		return solveGeneral(ctx, p, m)
	}
	prog, err := p.Convex()
	if err != nil {
		return nil, err
	}
	if p.robust() {
		return solveRobust(ctx, prog, p.Perturbation(), m)
	}
	return SolveProgramContext(ctx, prog, m)
}

// SolveProgram solves an already built convex program with the
// interior-point method.
func SolveProgram(prog *solvers.Program, m IPM) (*Solution, error) {
	return SolveProgramContext(context.Background(), prog, m)
}

// SolveProgramContext is SolveProgram with cancellation through ctx.
func SolveProgramContext(ctx context.Context, prog *solvers.Program, m IPM) (*Solution, error) {
	t0 := time.Now()
	res, err := ipm.Solve(ctx, prog, m.options())
	if err != nil && (res == nil || ctx.Err() == nil) {
		return nil, err
	}
	s := &Solution{Status: res.Status.String(), Objective: res.Objective, Clean: res.Objective, Iterations: res.Iterations, Weights: res.Weights, Program: prog, Perturbation: solvers.Perturbation{Norm: "inf"}}
	if s.Violation, err = prog.Violation(res.Weights); err != nil {
		return nil, err
	}
	return s.finish(ctx, t0, "interior-point method", fmt.Sprintf("objective %.8g", s.Objective), res)
}

// complete sets the solution's certificate b, its network
// (solvers.Program.Recover), its clean non-convex objective l^{u,α} and the
// time since t0.
func (s *Solution) complete(t0 time.Time, b certify.Bound) error {
	s.Lower, s.Upper, s.Gap = b.Lower, b.Upper, b.Gap
	var err error
	if s.Network, err = s.Program.Recover(s.Weights); err != nil {
		return err
	}
	if s.Nonconvex, err = s.Program.NonconvexObjective(s.Network); err != nil {
		return err
	}
	s.Seconds = time.Since(t0).Seconds()
	return nil
}

// adoptStrict replaces the solution's weights by cert.Strict's, the point
// with its active cone margins lifted to about 10⁻¹² relative (an
// interior-point solution violates or just meets its active constraints),
// when the certifier changed it and its objective is within 10⁻⁹ (relative)
// of the solution's: the recovered network then keeps every promise of the
// program in floating point (a point the robust program certifies is
// certified by the network, not missed by −10⁻¹⁷). Objective, Clean,
// Violation and the upper bound b follow the new weights.
func (s *Solution) adoptStrict(cert *certify.Certifier, b *certify.Bound) error {
	strict, changed, err := cert.Strict(s.Weights)
	if err != nil || changed == 0 {
		return err
	}
	obj, err := s.Program.Objective(strict)
	if s.Perturbation.Eps > 0 {
		obj, err = solvers.RobustObjective(s.Program, strict, s.Perturbation)
	}
	if err != nil {
		return err
	}
	if !(obj <= s.Objective+1e-9*math.Max(1, math.Abs(s.Objective))) {
		return nil
	}
	if err := s.setWeights(strict); err != nil {
		return err
	}
	// The lifted point is feasible: its objective, with the rounding slack
	// of Bound's, is an upper bound as valid as Bound's (and never raises
	// it).
	b.Upper = math.Min(b.Upper, s.Objective*(1+1e-12))
	b.Gap = certify.RelativeGap(b.Lower, b.Upper)
	return nil
}

// adoptBest replaces the solution's weights by the bound's feasible point
// when that is lower (certify.Bound.Best: the zero network, when an
// inaccurate solve, at a β far beyond the largest useful one say, left a
// worse point than zero).
func (s *Solution) adoptBest(b certify.Bound) error {
	if best := b.Best(s.Weights); best.V != s.Weights.V {
		return s.setWeights(best)
	}
	return nil
}

// setWeights sets the solution's weights with their objective (robust for
// ε > 0), clean objective and violation.
func (s *Solution) setWeights(w solvers.Weights) error {
	robust := s.Perturbation.Eps > 0
	obj, err := s.Program.Objective(w)
	if robust {
		obj, err = solvers.RobustObjective(s.Program, w, s.Perturbation)
	}
	if err != nil {
		return err
	}
	clean, err := s.Program.Objective(w)
	if err != nil {
		return err
	}
	viol, err := s.Program.Violation(w)
	if robust {
		viol, err = solvers.RobustViolation(s.Program, w, s.Perturbation)
	}
	if err != nil {
		return err
	}
	s.Weights, s.Objective, s.Clean, s.Violation = w, obj, clean, viol
	return nil
}

// finish sets the solution's certificate (the method's, or from its duals),
// its network (solvers.Program.Recover), its clean
// non-convex objective l^{u,α} and the time since t0, and returns the
// solution with an error naming the method when ctx stopped it or it ended
// other than optimal (objective describes where it ended).
func (s *Solution) finish(ctx context.Context, t0 time.Time, method, objective string, res *ipm.Result) (*Solution, error) {
	cert, err := ipm.NewCertifier(s.Program, s.Perturbation)
	if err != nil {
		return nil, err
	}
	var b certify.Bound
	if res.Bound != nil {
		b = *res.Bound
	} else if b, err = cert.Bound(s.Weights, res.Dual); err != nil {
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
	if ctx.Err() != nil {
		return s, stoppedBy(ctx.Err(), method, s.Iterations)
	}
	if s.Status != "optimal" {
		return s, fmt.Errorf("cvx: %s ended %s (%s)", method, s.Status, objective)
	}
	return s, nil
}
