package ipm

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/convexnn/convexnn/solvers"
	"gonum.org/v1/gonum/floats"
	"gonum.org/v1/gonum/mat"
)

// ConeQP is the cone quadratic program
//
//	minimize   ½xᵀQx + cᵀx
//	subject to Gx + s = h,  Ax = b,  s ∈ K,
//
// with K a Cone, and its dual
//
//	maximize   −½xᵀQx − hᵀz − bᵀy
//	subject to Qx + c + Gᵀz + Aᵀy = 0,  z ∈ K.
//
// Q (positive semidefinite) and A may be nil: a linear objective, no
// equality constraints. SolveConeQP works on dense matrices; the network
// program of Solve runs the same method with structured linear algebra.
type ConeQP struct {
	Q *mat.SymDense // n×n positive semidefinite (not checked), or nil
	C []float64     // n
	G *mat.Dense    // m×n, m = K.Dim()
	H []float64     // m
	A *mat.Dense    // p×n or nil
	B []float64     // p
	K Cone
	// SparseG says G is mostly zeros: the products with G and the normal
	// matrix GᵀW⁻²G use its nonzeros only (Σ_r nnz_r² flops over the
	// orthant's rows, dense blocks over each second-order cone's columns,
	// instead of n²m).
	SparseG bool
}

// ConeQPResult is the outcome of SolveConeQP. For Optimal, and for the
// non-converged statuses, X, Y, Z, S are the (best) iterate of the solver.
// For PrimalInfeasible, Y and Z are a certificate: z ∈ K,
// Gᵀz + Aᵀy ≈ 0 and hᵀz + bᵀy = −1 (X and S are nil). For
// DualInfeasible, X and S are a certificate: s ∈ K, Gx + s ≈ 0, Ax ≈ 0,
// Qx ≈ 0 and cᵀx = −1 (Y and Z are nil).
type ConeQPResult struct {
	Status     Status
	X, Y, Z, S []float64

	PrimalObjective float64 // ½xᵀQx + cᵀx
	DualObjective   float64 // −½xᵀQx − hᵀz − bᵀy
	Gap             float64 // relative duality gap
	PrimalResidual  float64 // max(‖Ax − b‖/max(1,‖b‖), ‖Gx + s − h‖/max(1,‖h‖))
	DualResidual    float64 // ‖Qx + c + Gᵀz + Aᵀy‖/max(1,‖c‖)
	Iterations      int
	Seconds         float64
}

// SolveConeQP solves p by a primal-dual interior-point method on the
// homogeneous self-dual embedding of its optimality conditions,
//
//	Qx + Aᵀy + Gᵀz + cτ = 0,   Ax − bτ = 0,   Gx + s − hτ = 0,
//	κ + cᵀx + bᵀy + hᵀz + xᵀQx/τ = 0,   (s, z) ∈ K × K,  τ, κ ≥ 0
//
// (the quadratic embedding of Goulart and Chen's Clarabel; for Q = 0 it is
// the self-dual embedding of CVXOPT's conelp). Every solution has
// sᵀz + τκ = 0; τ > 0 gives the optimum (x, y, z, s)/τ, κ > 0 a
// certificate of primal or dual infeasibility. Each iteration takes a
// Mehrotra predictor–corrector step in Nesterov–Todd scaling: with
// λ = Wz = W⁻ᵀs and μ = (sᵀz + τκ)/(deg K + 1), the direction solves the
// linearized embedding with right-hand side −η·(residual) and
//
//	λ∘(W⁻ᵀΔs + WΔz) = −d_s,  κΔτ + τΔκ = −d_κ,
//
// with η = 1, d_s = λ∘λ, d_κ = τκ for the affine predictor, and
// η = 1 − σ, d_s = λ∘λ + (W⁻ᵀΔs_a)∘(WΔz_a) − σμe,
// d_κ = τκ + Δτ_aΔκ_a − σμ, σ = (1 − α_a)³, for the corrector. Up to three
// centrality correctors (Gondzio's) follow: at the trial step
// ᾱ = min(1, 1.5α + 0.1), α the step to the boundary, the eigenvalues of the
// scaled products (λ + ᾱW⁻ᵀΔs)∘(λ + ᾱWΔz) and of (τ + ᾱΔτ)(κ + ᾱΔκ) that
// lie outside [σμ/10, 10σμ] are moved to that interval (by at most 10σμ
// downwards) through d_s and d_κ, and the corrected direction is kept while
// it lengthens the step by 1%. The step is 0.99 of the way to the boundary,
// at most 1. Eliminating Δs and Δκ leaves solves with the KKT matrix
// [Q Aᵀ Gᵀ; A 0 0; G 0 −W²] and a scalar equation for Δτ whose coefficient
// −(‖Wz₁‖² + (x₁ − x/τ)ᵀQ(x₁ − x/τ) + κ/τ) is negative by construction;
// (x₁, y₁, z₁) solves the KKT system for (−c, b, h), shared by all
// directions, and is computed as (x, y, z)/τ plus the solution for
// (−r_x, −r_y, 2s − r_z)/τ (the same system written around the iterate,
// with the residuals r of the embedding and W²z = s): near the end ‖W⁻¹h‖
// grows like 1/√μ, and a direct solve for (−c, b, h) loses all accuracy
// while the right-hand side around the iterate is of order √μ in the
// scaled norm. Each KKT solve is refined iteratively. The starting point is
// CVXOPT's (two least-squares solves with W = I, shifted into the cone).
// Without Q (a cone LP) the method runs on the program with c scaled to
// ‖c‖_∞ = 1 (the costs and multipliers it reports are the program's).
//
// Termination, with x̄ = x/τ and so on, pcost = ½x̄ᵀQx̄ + cᵀx̄,
// dcost = −½x̄ᵀQx̄ − hᵀz̄ − bᵀȳ:
//
//   - Optimal when max(‖Ax̄ − b‖/max(1,‖b‖), ‖Gx̄ + s̄ − h‖/max(1,‖h‖)),
//     ‖Qx̄ + c + Gᵀz̄ + Aᵀȳ‖/max(1,‖c‖) and the relative gap
//     max(s̄ᵀz̄, |pcost − dcost|)/max(1, min(|pcost|, |dcost|)) are all at
//     most o.Tol;
//   - PrimalInfeasible when hᵀz + bᵀy < 0 and
//     ‖Gᵀz + Aᵀy‖ ≤ o.Tol·(−hᵀz − bᵀy), DualInfeasible when cᵀx < 0 and
//     ‖Gx + s‖, ‖Ax‖, ‖Qx‖ ≤ o.Tol·(−cᵀx) (a feasible, respectively dual
//     feasible, program has no such certificate unless all its feasible
//     points are longer than about 1/o.Tol);
//   - Inaccurate when the method stalls: a step shorter than 1e-9, a
//     breakdown (the normal matrix is not positive definite, an iterate
//     leaves the cone in rounding), or 10 consecutive iterations in which
//     neither the merit max(gap, residuals) improved by 1% nor μ halved;
//   - IterationLimit after o.MaxIter iterations, or when ctx is done
//     (then with an error wrapping ctx.Err()).
//
// The non-converged statuses return the iterate with the smallest merit.
// SolveConeQP forms and factors the dense normal matrix
// Q + GᵀW⁻²G (+ AᵀA) once per iteration.
func SolveConeQP(ctx context.Context, p *ConeQP, o Options) (*ConeQPResult, error) {
	start := time.Now()
	if p == nil {
		return nil, errors.New("ipm: nil cone program")
	}
	if err := p.validate(); err != nil {
		return nil, err
	}
	o, err := o.resolve()
	if err != nil {
		return nil, err
	}
	ops := newDenseQP(p)
	prob := &coneProblem{c: p.C, h: p.H, b: p.B, k: p.K, ops: ops, linear: p.Q == nil}
	if prob.b == nil {
		prob.b = []float64{}
	}
	sol, err := solveCone(ctx, prob, o)
	return sol.result(start), err
}

// result is the ConeQPResult of a solve that started at start (nil for a
// nil solution).
func (sol *coneSolution) result(start time.Time) *ConeQPResult {
	if sol == nil {
		return nil
	}
	return &ConeQPResult{
		Status: sol.status, X: sol.x, Y: sol.y, Z: sol.z, S: sol.s,
		PrimalObjective: sol.pcost, DualObjective: sol.dcost, Gap: sol.relgap,
		PrimalResidual: sol.pres, DualResidual: sol.dres,
		Iterations: sol.iters, Seconds: time.Since(start).Seconds(),
	}
}

func (p *ConeQP) validate() error {
	if err := p.K.Validate(); err != nil {
		return err
	}
	n := len(p.C)
	if n == 0 {
		return errors.New("ipm: cone program has no variables (empty c)")
	}
	if p.G == nil {
		return errors.New("ipm: cone program has no cone constraints (nil G)")
	}
	m := p.K.Dim()
	if r, c := p.G.Dims(); r != m || c != n {
		return fmt.Errorf("ipm: G is %d×%d, want %d×%d (cone dimension × variables)", r, c, m, n)
	}
	if len(p.H) != m {
		return fmt.Errorf("ipm: h has %d entries, the cone has dimension %d", len(p.H), m)
	}
	if p.Q != nil {
		if r := p.Q.SymmetricDim(); r != n {
			return fmt.Errorf("ipm: Q is %d×%d, want %d×%d", r, r, n, n)
		}
		for i := 0; i < n; i++ {
			for j := i; j < n; j++ {
				if v := p.Q.At(i, j); math.IsNaN(v) || math.IsInf(v, 0) {
					return fmt.Errorf("ipm: Q[%d,%d] is %v", i, j, v)
				}
			}
		}
	}
	if p.A != nil {
		r, c := p.A.Dims()
		if c != n {
			return fmt.Errorf("ipm: A has %d columns, want %d", c, n)
		}
		if len(p.B) != r {
			return fmt.Errorf("ipm: A has %d rows but b has %d entries", r, len(p.B))
		}
		if err := solvers.CheckFinite("ipm: A", p.A); err != nil {
			return err
		}
	} else if len(p.B) != 0 {
		return errors.New("ipm: b given without A")
	}
	if err := solvers.CheckFinite("ipm: G", p.G); err != nil {
		return err
	}
	for _, v := range [][]float64{p.C, p.H, p.B} {
		for i, x := range v {
			if math.IsNaN(x) || math.IsInf(x, 0) {
				return fmt.Errorf("ipm: cone program data entry %d is %v", i, x)
			}
		}
	}
	return nil
}

// qpOps are the matrices Q, G and A of a cone QP as operators, and a solver
// of its KKT system. The interior-point method never sees the matrices.
type qpOps interface {
	mulQ(out, x []float64)                       // out = Qx
	mulG(out, x []float64, alpha, beta float64)  // out = αGx + β·out
	mulGT(out, z []float64, alpha, beta float64) // out = αGᵀz + β·out
	mulA(out, x []float64, alpha, beta float64)  // out = αAx + β·out
	mulAT(out, y []float64, alpha, beta float64) // out = αAᵀy + β·out
	// factor prepares solve for the scaling w.
	factor(w *ntScaling) error
	// solve overwrites (x, y, z) by the solution of
	//
	//	[Q  Aᵀ  Gᵀ  ] [x']   [x]
	//	[A  0   0   ] [y'] = [y]
	//	[G  0   −W² ] [z']   [z].
	solve(x, y, z []float64) error
}

// gapAware is a KKT solver that chooses its factorization by how close the
// iterate is to the solution: step tells it the relative gap before each
// factorization, and whether every KKT solve since the last one was
// refined to its tolerance (kktSolve).
type gapAware interface {
	atGap(relgap float64, refined bool)
}

// coneProblem is a cone QP given by operators; offset is added to both
// objectives (a constant of the objective left out of the QP).
type coneProblem struct {
	c, h, b []float64
	k       Cone
	offset  float64
	ops     qpOps
	// relinearize, when not nil, may replace Q, c, h and offset (in
	// place, through ops and the slices) by a model built at the point
	// x/τ of the iterate; it reports whether it did. solveCone calls it
	// at every iteration after the first, before its stopping tests: a
	// model that changes keeps the method going.
	relinearize func(x []float64, tau float64) (bool, error)
	// relinearizeResidual, when positive, holds relinearize back until the
	// iterate's primal and dual residuals are at most this (an infeasible
	// iterate's point is no place to build a model).
	relinearizeResidual float64
	// linear marks a cone LP (Q = 0, no relinearize), whose objective
	// solveCone scales to ‖c‖_∞ = 1 (see scaleObjective).
	linear bool
	// scale is the factor applied to the program's objective (0 means 1):
	// the costs are divided by it and the multipliers (y, z) too.
	scale float64
	// accept, when not nil, is asked at every iterate that meets the
	// tolerance whether to stop there (Options.Gap); when it says no, the
	// tolerance is divided by ten, down to ipmMinTol, and the method goes
	// on from that iterate. An error stops the method.
	accept func(sol *coneSolution) (bool, error)
	// tol is the current tolerance, set and tightened by solveCone.
	tol float64
}

// scaleObjective returns p with c scaled to ‖c‖_∞ = 1 when p is linear,
// else p. A cone LP's costs may be far below its constraints' right-hand
// sides (the hinge program: β = 10⁻⁴ and 1/n against margins 1); the dual
// residual is measured against max(1, ‖c‖), so unscaled it would be an
// absolute tolerance on multipliers of size β. Scaled, the method measures
// it relative to the costs and takes fewer iterations (measured on the
// mid-size MNIST hinge program: 52 instead of 60 at tolerance 10⁻⁸; 300
// points: 25 instead of 34).
func (p *coneProblem) scaleObjective() *coneProblem {
	cm := maxAbs(p.c)
	if !p.linear || !(cm > 0) || math.IsInf(cm, 0) {
		return p
	}
	q := *p
	q.c = scaledCopy(p.c, 1/cm)
	q.scale = 1 / cm
	return &q
}

// objScale returns the factor of the objective (scale, 1 when unset).
func (p *coneProblem) objScale() float64 {
	if p.scale == 0 {
		return 1
	}
	return p.scale
}

// coneSolution is what solveCone returns (see ConeQPResult).
type coneSolution struct {
	status                                Status
	x, y, z, s                            []float64
	pcost, dcost, gap, relgap, pres, dres float64
	iters                                 int
}

// The interior-point method of solveCone.
const (
	ipmStep      = 0.99  // fraction of the step to the boundary
	ipmRefine    = 3     // at most this many steps of iterative refinement per KKT solve
	ipmMinStep   = 1e-9  // a step shorter than this is a stall
	ipmMinTol    = 1e-12 // Options.Gap tightens the tolerance down to this
	ipmStallRuns = 10    // iterations without progress (see SolveConeQP) before a stall is declared

	// Centrality correctors (see SolveConeQP).
	ipmCorrectors = 3    // at most this many per iteration
	ipmCorrWiden  = 0.1  // trial step min(1, 1.5α + ipmCorrWiden)
	ipmCorrBand   = 10.0 // products outside [σμ/ipmCorrBand, ipmCorrBand·σμ] are corrected
	ipmCorrGain   = 1.01 // a corrector is kept when it lengthens the step by this factor
)

// solveCone solves the cone QP p by the method documented at SolveConeQP.
func solveCone(ctx context.Context, p *coneProblem, o Options) (*coneSolution, error) {
	p = p.scaleObjective()
	p.tol = o.Tol
	s := newIPM(p)
	if err := s.start(); err != nil {
		return nil, err
	}
	alpha := 1.0 // length of the last step
	stall := 0   // iterations without progress
	muMark := math.Inf(1)
	for iter := 0; ; iter++ {
		s.residuals()
		m := s.measure()
		if p.relinearize != nil && iter > 0 && (p.relinearizeResidual <= 0 || math.Max(m.pres, m.dres) <= p.relinearizeResidual) {
			changed, err := p.relinearize(s.x, s.tau)
			if err != nil {
				return nil, err
			}
			if changed {
				s.nc = math.Max(1, floats.Norm(p.c, 2))
				s.residuals()
				m = s.measure()
				s.best, stall, muMark = nil, 0, math.Inf(1)
			}
		}
		if o.Verbose != nil {
			fmt.Fprintf(o.Verbose, "ipm %3d: pcost % .10e  dcost % .10e  gap %.2e  pres %.2e  dres %.2e  k/t %.2e  step %.4f  solves %d\n",
				iter, m.pcost, m.dcost, m.relgap, m.pres, m.dres, s.kappa/s.tau, alpha, s.solves)
			s.solves = 0
		}
		// Progress: the best merit improves by 1%, or μ halves.
		merit := math.Max(m.relgap, math.Max(m.pres, m.dres))
		progress := s.best == nil || merit < 0.99*s.bestMerit || m.mu < 0.5*muMark
		if s.best == nil || merit < s.bestMerit {
			s.keepBest(m, merit)
		}
		if progress {
			stall, muMark = 0, m.mu
		} else {
			stall++
		}
		meets := func(tol float64) bool { return m.pres <= tol && m.dres <= tol && m.relgap <= tol }
		if meets(p.tol) {
			sol := s.solution(Optimal, m, iter)
			if p.accept == nil || p.tol <= ipmMinTol {
				return sol, nil
			}
			if ok, err := p.accept(sol); ok || err != nil {
				return sol, err
			}
			for p.tol > ipmMinTol && meets(p.tol) {
				p.tol = math.Max(p.tol/10, ipmMinTol)
			}
			if meets(p.tol) {
				return sol, nil
			}
			if o.Verbose != nil {
				fmt.Fprintf(o.Verbose, "ipm %3d: certified gap missed: tolerance %.0e\n", iter, p.tol)
			}
		}
		var why string
		switch {
		case s.primalInfeasible(o.Tol):
			return s.certificate(PrimalInfeasible, m, iter), nil
		case s.dualInfeasible(o.Tol):
			return s.certificate(DualInfeasible, m, iter), nil
		case math.IsNaN(merit) || math.IsNaN(s.tau) || math.IsNaN(s.kappa):
			why = "not a number in the iterate"
		case iter > 0 && alpha < ipmMinStep:
			why = fmt.Sprintf("step %.1e", alpha)
		case stall >= ipmStallRuns:
			why = fmt.Sprintf("no progress in %d iterations", stall)
		case iter >= o.MaxIter:
			return s.bestSolution(IterationLimit, iter), nil
		}
		if why != "" {
			if o.Verbose != nil {
				fmt.Fprintf(o.Verbose, "ipm %3d: stalled: %s\n", iter, why)
			}
			return s.bestSolution(Inaccurate, iter), nil
		}
		if err := ctx.Err(); err != nil {
			return s.bestSolution(IterationLimit, iter), fmt.Errorf("ipm: interior point stopped after %d iterations: %w", iter, err)
		}
		var err error
		if alpha, err = s.step(m); err != nil {
			if o.Verbose != nil {
				fmt.Fprintf(o.Verbose, "ipm %3d: stalled: %v\n", iter, err)
			}
			return s.bestSolution(Inaccurate, iter), nil
		}
	}
}

// ipm is the state and workspace of solveCone.
type ipm struct {
	p         *coneProblem
	nx, ny, m int
	deg       float64
	w         *ntScaling

	x, y, z, s []float64
	tau, kappa float64

	rx, ry, rz   []float64 // residuals of the embedding
	rt           float64
	qx, gtz      []float64 // Qx and Gᵀz + Aᵀy
	xqx          float64   // xᵀQx
	nc, nh, nb   float64   // max(1, ‖c‖), max(1, ‖h‖), max(1, ‖b‖)
	x1, y1, z1   []float64 // K⁻¹[−c; b; h]
	den          float64   // coefficient of Δτ
	dx, dy, dz   []float64
	ds           []float64 // Δs
	dtau, dkap   float64
	dsv, lds     []float64 // d_s and λ⋄d_s
	tm           []float64 // length m
	tx           []float64 // length nx
	ex, ey, ez   []float64 // refinement residual
	cx, cy, cz   []float64 // refinement correction
	fx, fy       []float64 // saved right-hand sides
	aff, aff2    []float64 // affine scaled directions and their product
	cdsv, corr   []float64 // centrality correctors: d_s before the corrector, the correction
	sdx, sdy     []float64 // the direction before a corrector
	sdz, sds     []float64
	solves       int     // calls of qpOps.solve since the last trace line
	refineTol    float64 // kktSolve refines while the residual exceeds this times the right-hand side (see refinementTol)
	refineMiss   bool    // a KKT solve since the last factorization ended above refineTol
	best         *coneSolution
	bestMerit    float64
	bestTau      float64
	bestX, bestY []float64
	bestZ, bestS []float64
}

func newIPM(p *coneProblem) *ipm {
	nx, ny, m := len(p.c), len(p.b), p.k.Dim()
	v := func(k int) []float64 { return make([]float64, k) }
	return &ipm{
		p: p, nx: nx, ny: ny, m: m, deg: float64(p.k.Degree() + 1), w: newNTScaling(p.k),
		x: v(nx), y: v(ny), z: v(m), s: v(m), rx: v(nx), ry: v(ny), rz: v(m),
		qx: v(nx), gtz: v(nx), x1: v(nx), y1: v(ny), z1: v(m),
		dx: v(nx), dy: v(ny), dz: v(m), ds: v(m), dsv: v(m), lds: v(m),
		tm: v(m), tx: v(nx), ex: v(nx), ey: v(ny), ez: v(m), cx: v(nx), cy: v(ny), cz: v(m), fx: v(nx), fy: v(ny),
		aff: v(m), aff2: v(m), cdsv: v(m), corr: v(m), sdx: v(nx), sdy: v(ny), sdz: v(m), sds: v(m),
		bestX: v(nx), bestY: v(ny), bestZ: v(m), bestS: v(m),
		refineTol: 1e-15,
		nc:        math.Max(1, floats.Norm(p.c, 2)), nh: math.Max(1, floats.Norm(p.h, 2)), nb: math.Max(1, floats.Norm(p.b, 2)),
	}
}

// start sets the initial point of CVXOPT's conelp: with W = I, x solves
// min ½xᵀQx + ½‖Gx − h‖² s.t. Ax = b and s = h − Gx, (y, z) solve
// min ½xᵀQx + cᵀx + ½‖Gx‖² s.t. Ax = 0 with z = Gx; s and z are shifted
// into the interior of K along e when they are not in it; τ = κ = 1.
func (s *ipm) start() error {
	s.w.identity()
	if g, ok := s.p.ops.(gapAware); ok {
		g.atGap(math.Inf(1), true) // the identity scaling is as far from the solution as it gets
	}
	if err := s.p.ops.factor(s.w); err != nil {
		return fmt.Errorf("ipm: the KKT system is singular at the starting point (dependent equality constraints?): %w", err)
	}
	clear(s.x)
	copy(s.y, s.p.b)
	copy(s.z, s.p.h)
	if err := s.kktSolve(s.x, s.y, s.z); err != nil {
		return err
	}
	for i := range s.s {
		s.s[i] = -s.z[i]
	}
	for i, c := range s.p.c {
		s.dx[i] = -c
	}
	clear(s.y)
	clear(s.z)
	if err := s.kktSolve(s.dx, s.y, s.z); err != nil {
		return err
	}
	for _, u := range [][]float64{s.s, s.z} {
		if t := s.p.k.violation(u); t >= -1e-8*math.Max(1, floats.Norm(u, 2)) {
			s.p.k.addIdentity(u, 1+t)
		}
	}
	s.tau, s.kappa = 1, 1
	return nil
}

// kktSolve overwrites (x, y, z) by the solution of the KKT system (see
// qpOps.solve), refined iteratively on the first two block rows (see
// kktResidual). A correction that increases the residual is undone.
func (s *ipm) kktSolve(x, y, z []float64) error {
	copy(s.fx, x)
	copy(s.fy, y)
	ops := s.p.ops
	if err := ops.solve(x, y, z); err != nil {
		return err
	}
	s.solves++
	res := s.kktResidual(x, y, z)
	scale := math.Max(1, math.Max(maxAbs(s.fx), maxAbs(s.fy)))
	for it := 0; it < ipmRefine && res > s.refineTol*scale; it++ {
		if err := ops.solve(s.ex, s.ey, s.ez); err != nil {
			return err
		}
		s.solves++
		copy(s.cx, s.ex)
		copy(s.cy, s.ey)
		copy(s.cz, s.ez)
		floats.Add(x, s.cx)
		floats.Add(y, s.cy)
		floats.Add(z, s.cz)
		prev := res
		if res = s.kktResidual(x, y, z); res > 0.5*prev {
			if res > prev {
				floats.Sub(x, s.cx)
				floats.Sub(y, s.cy)
				floats.Sub(z, s.cz)
			}
			break
		}
	}
	if res > s.refineTol*scale {
		s.refineMiss = true
	}
	return nil
}

// refinementTol is the relative residual of a KKT solve below which
// kktSolve does not refine, at an iterate whose smallest of relative gap,
// primal and dual residual is r: 10⁻³·r, in [10⁻¹⁵, 10⁻⁹]. Directions
// solved to that accuracy change the step by far less than what the step
// is to reduce, and each refinement costs a solve: on mid-size robust
// hinge (MNIST 2 vs 8, n = 2000, d = 50, P = 48) refining to 10⁻¹⁵
// throughout took about 16 solves per iteration and half of the time, for
// the same iterations. A program whose model follows the iterate
// (coneProblem.relinearize) refines to 10⁻¹⁵ throughout: its residuals jump
// with the model, and a robust BCE program solved with this rule stalled
// at a primal residual of 2·10⁻⁸.
func refinementTol(r float64) float64 {
	if !(r > 0) {
		return 1e-15
	}
	return math.Max(1e-15, math.Min(1e-9, 1e-3*r))
}

// kktResidual sets (ex, ey) to the residual (fx − Qx − Aᵀy − Gᵀz, fy − Ax)
// of the first two block rows of the KKT system, ez to zero, and returns the
// largest entry in magnitude. The third block row, Gx − W²z = b_z, holds by
// construction (qpOps.solve returns z = W⁻²(Gx − b_z), and a correction with
// right-hand side ez = 0 keeps it); evaluating it would multiply by W², whose
// condition number grows like 1/μ² in the second-order cones, and ruin the
// refinement near the solution.
func (s *ipm) kktResidual(x, y, z []float64) float64 {
	ops := s.p.ops
	ops.mulQ(s.ex, x)
	ops.mulAT(s.ex, y, 1, 1)
	ops.mulGT(s.ex, z, 1, 1)
	floats.SubTo(s.ex, s.fx, s.ex)
	ops.mulA(s.ey, x, 1, 0)
	floats.SubTo(s.ey, s.fy, s.ey)
	clear(s.ez)
	return math.Max(maxAbs(s.ex), maxAbs(s.ey))
}

func maxAbs(v []float64) float64 {
	var m float64
	for _, x := range v {
		m = math.Max(m, math.Abs(x))
	}
	return m
}

// residuals sets rx = Qx + Aᵀy + Gᵀz + cτ, ry = Ax − bτ, rz = Gx + s − hτ
// and rt = κ + cᵀx + bᵀy + hᵀz + xᵀQx/τ, with Qx, Gᵀz + Aᵀy and xᵀQx.
func (s *ipm) residuals() {
	ops, p := s.p.ops, s.p
	ops.mulQ(s.qx, s.x)
	s.xqx = floats.Dot(s.x, s.qx)
	ops.mulGT(s.gtz, s.z, 1, 0)
	ops.mulAT(s.gtz, s.y, 1, 1)
	for i := range s.rx {
		s.rx[i] = s.qx[i] + s.gtz[i] + p.c[i]*s.tau
	}
	ops.mulA(s.ry, s.x, 1, 0)
	floats.AddScaled(s.ry, -s.tau, p.b)
	ops.mulG(s.rz, s.x, 1, 0)
	for i := range s.rz {
		s.rz[i] += s.s[i] - p.h[i]*s.tau
	}
	s.rt = s.kappa + floats.Dot(p.c, s.x) + floats.Dot(p.b, s.y) + floats.Dot(p.h, s.z) + s.xqx/s.tau
}

// measures are the convergence measures of an iterate, for (x, y, z, s)/τ.
type measures struct {
	pcost, dcost, gap, relgap, pres, dres, mu float64
}

func (s *ipm) measure() measures {
	p, t := s.p, s.tau
	var m measures
	sz := floats.Dot(s.s, s.z)
	m.mu = (sz + s.tau*s.kappa) / s.deg
	sc := p.objScale()
	m.pcost = (0.5*s.xqx/(t*t)+floats.Dot(p.c, s.x)/t)/sc + p.offset
	m.dcost = -(0.5*s.xqx/(t*t)+(floats.Dot(p.h, s.z)+floats.Dot(p.b, s.y))/t)/sc + p.offset
	m.gap = sz / (t * t) / sc
	m.relgap = math.Max(m.gap, math.Abs(m.pcost-m.dcost)) / math.Max(1, math.Min(math.Abs(m.pcost), math.Abs(m.dcost)))
	m.pres = math.Max(floats.Norm(s.ry, 2)/s.nb, floats.Norm(s.rz, 2)/s.nh) / t
	m.dres = floats.Norm(s.rx, 2) / s.nc / t
	return m
}

// primalInfeasible reports whether (y, z) certify primal infeasibility:
// hᵀz + bᵀy < 0 and ‖Gᵀz + Aᵀy‖ ≤ tol·(−hᵀz − bᵀy). A feasible x₀ bounds
// the ratio below by 1/‖x₀‖, so a feasible program is never reported
// infeasible unless all its feasible points have norm beyond 1/tol.
func (s *ipm) primalInfeasible(tol float64) bool {
	hz := floats.Dot(s.p.h, s.z) + floats.Dot(s.p.b, s.y)
	return hz < 0 && floats.Norm(s.gtz, 2) <= -tol*hz
}

// dualInfeasible reports whether (x, s) certify dual infeasibility
// (unboundedness): cᵀx < 0 and ‖Gx + s‖, ‖Ax‖, ‖Qx‖ ≤ tol·(−cᵀx).
func (s *ipm) dualInfeasible(tol float64) bool {
	cx := floats.Dot(s.p.c, s.x)
	if !(cx < 0) {
		return false
	}
	lim := -tol * cx
	if floats.Norm(s.qx, 2) > lim {
		return false
	}
	s.p.ops.mulA(s.ey, s.x, 1, 0)
	if floats.Norm(s.ey, 2) > lim {
		return false
	}
	s.p.ops.mulG(s.ez, s.x, 1, 0)
	floats.Add(s.ez, s.s)
	return floats.Norm(s.ez, 2) <= lim
}

func (s *ipm) keepBest(m measures, merit float64) {
	s.bestMerit, s.bestTau = merit, s.tau
	copy(s.bestX, s.x)
	copy(s.bestY, s.y)
	copy(s.bestZ, s.z)
	copy(s.bestS, s.s)
	s.best = &coneSolution{pcost: m.pcost, dcost: m.dcost, gap: m.gap, relgap: m.relgap, pres: m.pres, dres: m.dres}
}

func scaledCopy(v []float64, a float64) []float64 {
	out := make([]float64, len(v))
	floats.ScaleTo(out, a, v)
	return out
}

// solution returns the current iterate divided by τ (the multipliers also
// by the objective's scale).
func (s *ipm) solution(st Status, m measures, iter int) *coneSolution {
	t := 1 / s.tau
	td := t / s.p.objScale()
	return &coneSolution{status: st, x: scaledCopy(s.x, t), y: scaledCopy(s.y, td), z: scaledCopy(s.z, td), s: scaledCopy(s.s, t),
		pcost: m.pcost, dcost: m.dcost, gap: m.gap, relgap: m.relgap, pres: m.pres, dres: m.dres, iters: iter}
}

// bestSolution returns the iterate with the smallest max(gap, pres, dres).
func (s *ipm) bestSolution(st Status, iter int) *coneSolution {
	b := *s.best
	t := 1 / s.bestTau
	td := t / s.p.objScale()
	b.status, b.iters = st, iter
	b.x, b.y, b.z, b.s = scaledCopy(s.bestX, t), scaledCopy(s.bestY, td), scaledCopy(s.bestZ, td), scaledCopy(s.bestS, t)
	return &b
}

// certificate returns the normalized infeasibility certificate.
func (s *ipm) certificate(st Status, m measures, iter int) *coneSolution {
	sol := &coneSolution{status: st, pcost: math.NaN(), dcost: math.NaN(), gap: math.NaN(), relgap: math.NaN(),
		pres: m.pres, dres: m.dres, iters: iter}
	if st == PrimalInfeasible {
		t := -1 / (floats.Dot(s.p.h, s.z) + floats.Dot(s.p.b, s.y))
		sol.y, sol.z = scaledCopy(s.y, t), scaledCopy(s.z, t)
		sol.dcost = math.Inf(1)
	} else {
		t := -1 / floats.Dot(s.p.c, s.x)
		sol.x, sol.s = scaledCopy(s.x, t), scaledCopy(s.s, t)
		sol.pcost = math.Inf(-1)
	}
	return sol
}

// step takes one predictor–corrector step and returns its length.
func (s *ipm) step(m measures) (float64, error) {
	p, k, w := s.p, s.p.k, s.w
	if err := w.compute(s.s, s.z); err != nil {
		return 0, err
	}
	if g, ok := p.ops.(gapAware); ok {
		g.atGap(m.relgap, !s.refineMiss)
	}
	s.refineMiss = false
	if p.relinearize == nil {
		s.refineTol = refinementTol(math.Min(m.relgap, math.Min(m.pres, m.dres)))
	}
	if err := p.ops.factor(w); err != nil {
		return 0, err
	}
	// (x₁, y₁, z₁) = (x, y, z)/τ + K⁻¹(−r_x, −r_y, 2s − r_z)/τ = K⁻¹(−c, b, h).
	itau := 1 / s.tau
	floats.ScaleTo(s.x1, -itau, s.rx)
	floats.ScaleTo(s.y1, -itau, s.ry)
	for i := range s.z1 {
		s.z1[i] = (2*s.s[i] - s.rz[i]) * itau
	}
	if err := s.kktSolve(s.x1, s.y1, s.z1); err != nil {
		return 0, err
	}
	floats.AddScaled(s.x1, itau, s.x)
	floats.AddScaled(s.y1, itau, s.y)
	floats.AddScaled(s.z1, itau, s.z)
	// den = −(‖Wz₁‖² + (x₁ − x/τ)ᵀQ(x₁ − x/τ) + κ/τ).
	copy(s.tm, s.z1)
	w.scale(s.tm)
	den := floats.Dot(s.tm, s.tm) + s.kappa/s.tau
	floats.AddScaledTo(s.tx, s.x1, -1/s.tau, s.x)
	p.ops.mulQ(s.ex, s.tx)
	den += floats.Dot(s.tx, s.ex)
	s.den = -den
	if !(den > 0) || math.IsInf(den, 0) {
		return 0, fmt.Errorf("ipm: breakdown in the τ equation (coefficient %v)", -den)
	}

	// Affine predictor.
	lam := w.lambda
	k.prod(s.dsv, lam, lam)
	if err := s.direction(1, s.tau*s.kappa); err != nil {
		return 0, err
	}
	alphaA := math.Min(1, s.maxStep())
	sigma := math.Pow(1-alphaA, 3)
	// Mehrotra's second-order term (W⁻ᵀΔs_a)∘(WΔz_a).
	copy(s.aff, s.ds)
	w.unscale(s.aff)
	copy(s.aff2, s.dz)
	w.scale(s.aff2)
	k.prod(s.aff, s.aff, s.aff2)
	dtA, dkA := s.dtau, s.dkap

	// Combined corrector.
	k.prod(s.dsv, lam, lam)
	floats.Add(s.dsv, s.aff)
	k.addIdentity(s.dsv, -sigma*m.mu)
	if err := s.direction(1-sigma, s.tau*s.kappa+dtA*dkA-sigma*m.mu); err != nil {
		return 0, err
	}
	if err := s.correct(1-sigma, s.tau*s.kappa+dtA*dkA-sigma*m.mu, sigma*m.mu); err != nil {
		return 0, err
	}
	alpha := math.Min(1, ipmStep*s.maxStep())

	floats.AddScaled(s.x, alpha, s.dx)
	floats.AddScaled(s.y, alpha, s.dy)
	floats.AddScaled(s.z, alpha, s.dz)
	floats.AddScaled(s.s, alpha, s.ds)
	s.tau += alpha * s.dtau
	s.kappa += alpha * s.dkap
	return alpha, nil
}

// direction solves for (Δx, Δy, Δz, Δτ, Δs, Δκ) with residual factor η,
// d_s in s.dsv and d_κ = dk:
//
//	[Q Aᵀ Gᵀ; A 0 0; G 0 −W²](Δx, Δy, Δz) = (−ηr_x, −ηr_y, −ηr_z + W(λ⋄d_s)) − Δτ(c, −b, −h),
//	Δτ = (−ηr_τ + d_κ/τ − (c + 2Qx/τ)ᵀΔx₀ − bᵀΔy₀ − hᵀΔz₀)/den,
//	Δs = −ηr_z + hΔτ − GΔx,  Δκ = −(d_κ + κΔτ)/τ,
//
// where (Δx₀, Δy₀, Δz₀) is the solution for Δτ = 0. Δs is taken from the
// linearized primal equation, not from its equivalent −W(λ⋄d_s) − W²Δz:
// the primal residual then shrinks by exactly 1 − αη, and the round trip
// W·W⁻¹, inaccurate when the scaling is ill-conditioned, perturbs only the
// centering.
func (s *ipm) direction(eta, dk float64) error {
	p, w := s.p, s.w
	p.k.div(s.lds, w.lambda, s.dsv)
	for i := range s.dx {
		s.dx[i] = -eta * s.rx[i]
	}
	for i := range s.dy {
		s.dy[i] = -eta * s.ry[i]
	}
	copy(s.tm, s.lds)
	w.scale(s.tm)
	for i := range s.dz {
		s.dz[i] = -eta*s.rz[i] + s.tm[i]
	}
	if err := s.kktSolve(s.dx, s.dy, s.dz); err != nil {
		return err
	}
	g := floats.Dot(p.c, s.dx) + 2*floats.Dot(s.qx, s.dx)/s.tau + floats.Dot(p.b, s.dy) + floats.Dot(p.h, s.dz)
	s.dtau = (-eta*s.rt + dk/s.tau - g) / s.den
	floats.AddScaled(s.dx, s.dtau, s.x1)
	floats.AddScaled(s.dy, s.dtau, s.y1)
	floats.AddScaled(s.dz, s.dtau, s.z1)
	p.ops.mulG(s.ds, s.dx, -1, 0)
	for i := range s.ds {
		s.ds[i] += -eta*s.rz[i] + p.h[i]*s.dtau
	}
	s.dkap = -(dk + s.kappa*s.dtau) / s.tau
	return nil
}

// correct applies Gondzio's centrality correctors to the direction from
// direction(eta, dk) with d_s in s.dsv (see SolveConeQP): target is σμ. At
// the trial step ᾱ the scaled products v = (λ + ᾱW⁻ᵀΔs)∘(λ + ᾱWΔz) get the
// correction c of Cone.centralityCorrection, and the direction is
// recomputed with d_s − c (and likewise d_κ), which moves the linearized
// products at ᾱ by ᾱc; it is kept when the step to the boundary grows.
func (s *ipm) correct(eta, dk, target float64) error {
	k, w := s.p.k, s.w
	lam := w.lambda
	lo, hi := target/ipmCorrBand, target*ipmCorrBand
	alpha := math.Min(1, s.maxStep())
	for it := 0; it < ipmCorrectors && alpha < 1; it++ {
		at := math.Min(1, 1.5*alpha+ipmCorrWiden)
		a, b := s.aff, s.aff2
		copy(a, s.ds)
		w.unscale(a)
		copy(b, s.dz)
		w.scale(b)
		for i := range a {
			a[i] = lam[i] + at*a[i]
			b[i] = lam[i] + at*b[i]
		}
		k.prod(s.corr, a, b)
		k.centralityCorrection(s.corr, lo, hi)
		ck := centralityCorrection((s.tau+at*s.dtau)*(s.kappa+at*s.dkap), lo, hi)
		copy(s.sdx, s.dx)
		copy(s.sdy, s.dy)
		copy(s.sdz, s.dz)
		copy(s.sds, s.ds)
		dtau, dkap := s.dtau, s.dkap
		copy(s.cdsv, s.dsv)
		floats.Sub(s.dsv, s.corr)
		if err := s.direction(eta, dk-ck); err != nil {
			return err
		}
		next := math.Min(1, s.maxStep())
		if !(next >= ipmCorrGain*alpha) {
			copy(s.dx, s.sdx)
			copy(s.dy, s.sdy)
			copy(s.dz, s.sdz)
			copy(s.ds, s.sds)
			s.dtau, s.dkap = dtau, dkap
			copy(s.dsv, s.cdsv)
			break
		}
		alpha, dk = next, dk-ck
	}
	return nil
}

// maxStep returns the largest α with s + αΔs, z + αΔz ∈ K and
// τ + αΔτ, κ + αΔκ ≥ 0.
func (s *ipm) maxStep() float64 {
	a := math.Min(s.p.k.maxStep(s.s, s.ds), s.p.k.maxStep(s.z, s.dz))
	if s.dtau < 0 {
		a = math.Min(a, -s.tau/s.dtau)
	}
	if s.dkap < 0 {
		a = math.Min(a, -s.kappa/s.dkap)
	}
	return a
}
