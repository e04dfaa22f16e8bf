package ipm

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"runtime"
	"slices"
	"sync"
	"time"

	"github.com/convexnn/convexnn/solvers"
	"github.com/convexnn/convexnn/solvers/certify"
	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/gonum/floats"
	"gonum.org/v1/gonum/lapack/lapack64"
	"gonum.org/v1/gonum/mat"
)

// Status is how an interior-point run ended. The zero value is not a
// status (it is never "optimal" by accident).
type Status int

const (
	// Optimal: relative gap and primal and dual residuals are within
	// the tolerance.
	Optimal Status = iota + 1
	// Inaccurate: the method stalled (short steps, no progress, or a
	// numerical breakdown) before reaching the tolerance; the result is its
	// best iterate.
	Inaccurate
	// IterationLimit: the iteration limit was reached, or the context
	// was done, before convergence; the result is the best iterate.
	IterationLimit
	// PrimalInfeasible: a certificate of primal infeasibility was found.
	PrimalInfeasible
	// DualInfeasible: a certificate of dual infeasibility (an unbounded
	// primal) was found.
	DualInfeasible
)

var statusNames = [...]string{
	Optimal:          "optimal",
	Inaccurate:       "inaccurate",
	IterationLimit:   "iteration limit",
	PrimalInfeasible: "primal infeasible",
	DualInfeasible:   "dual infeasible",
}

func (s Status) String() string {
	if s > 0 && int(s) < len(statusNames) {
		return statusNames[s]
	}
	return fmt.Sprintf("Status(%d)", int(s))
}

// Options configure the interior-point method.
type Options struct {
	// MaxIter is the iteration limit; 0 means 100 (SolveRobust: 400, its
	// programs take 50–150 iterations at the sizes of Table 5).
	MaxIter int
	// Tol bounds the relative duality gap and the relative primal and dual
	// residuals at termination; 0 means 1e-8.
	Tol float64
	// Verbose, when not nil, receives one line per iteration.
	Verbose io.Writer
	// MaxMemory (bytes) refuses, with a *MemoryError and before anything
	// large is allocated, a program whose matrices would need more
	// (MemoryEstimate, RobustMemoryEstimate); 0 means 80% of the memory
	// available when the solve starts (MemAvailable), or 16 GiB where that
	// is unknown. Negative is an error.
	MaxMemory int64
	// Gap, when positive, asks Solve and SolveRobust for a certified
	// relative gap (certify): every iterate that meets Tol is certified,
	// and while its gap exceeds Gap the method divides Tol by ten (down to
	// 10⁻¹²) and goes on from that iterate rather than starting again.
	// Tol then defaults to Gap/10. Result.Bound holds the certificate of
	// the returned solution. At most 1.
	Gap float64
	// Certifier certifies for Gap; nil means NewCertifier for the program.
	Certifier *certify.Certifier

	// lateNormalFlops replaces the package's lateNormalFlops when positive
	// (the tests).
	lateNormalFlops float64
}

func (o Options) resolve() (Options, error) {
	if o.MaxIter < 0 {
		return o, fmt.Errorf("ipm: interior point iteration limit %d < 0", o.MaxIter)
	}
	if o.MaxIter == 0 {
		o.MaxIter = 100
	}
	if math.IsNaN(o.Tol) || o.Tol < 0 || math.IsInf(o.Tol, 0) {
		return o, fmt.Errorf("ipm: interior point tolerance %v, need 0 ≤ tol < ∞", o.Tol)
	}
	if math.IsNaN(o.Gap) || o.Gap < 0 || o.Gap > 1 {
		return o, fmt.Errorf("ipm: certified gap %v, need 0 ≤ gap ≤ 1 (0: none)", o.Gap)
	}
	if o.Tol == 0 {
		o.Tol = 1e-8
		if o.Gap > 0 {
			o.Tol = o.Gap / 10
		}
	}
	if o.MaxMemory < 0 {
		return o, fmt.Errorf("ipm: memory limit %d < 0 bytes", o.MaxMemory)
	}
	return o, nil
}

// resolveCone is resolve for a solve of a program with the given loss, which
// must be the squared or the hinge loss (the losses whose programs are cone
// programs); otherwise the error is refusal, a format for the loss.
func (o Options) resolveCone(loss solvers.Loss, refusal string) (Options, error) {
	if loss != solvers.SquaredLoss && loss != solvers.HingeLoss {
		return o, fmt.Errorf(refusal, loss)
	}
	return o.resolve()
}

// checkProgram reports a nil or invalid program.
func checkProgram(p *solvers.Program) error {
	if p == nil {
		return errors.New("ipm: nil program")
	}
	return p.Validate()
}

// Result is the outcome of Solve and SolveRobust.
type Result struct {
	Status     Status
	Weights    solvers.Weights // v_i, w_i
	Objective  float64         // l^{v,w} at Weights, recomputed with Program.Objective
	Gap        float64         // final relative duality gap
	Iterations int
	Seconds    float64
	// Dual holds the method's multipliers at Weights for a certificate
	// (certify.Certifier.Bound): the cone multipliers α_j of
	// S_{i(j)} X u_j ≥ 0 and, for the hinge loss, the loss dual μ_k = −y_k z_k
	// from the multipliers z_k ∈ [0, 1/n] of the margin rows (SolveRobust:
	// of its robust constraints and loss rows, robustCone.dual).
	Dual *certify.Hint
	// Bound is the certificate of Weights with Options.Gap, else nil.
	Bound *certify.Bound
	// Rows (SolvePooled) holds per pattern the rows of X its working set
	// ended with (SolvePooledFrom starts from them); nil for the others.
	Rows [][]int
}

// Solve solves p with a primal-dual interior-point method for its
// second-order cone form (the paper's "CVX" baseline). With u_j the 2P
// groups (v_1 … v_P, w_1 … w_P), σ_j = ±1 their sign in the prediction,
// i(j) their pattern, S_i = 2D_i − I and F = [D_1X … D_PX −D_1X … −D_PX],
// the squared loss is the cone QP
//
//	minimize   ½‖Fu‖² − yᵀFu + ½‖y‖² + β Σ_j t_j
//	subject to S_{i(j)} X u_j ≥ 0,  (t_j, u_j) ∈ Q^{d+1},  j = 1 … 2P,
//
// and the hinge loss the cone LP
//
//	minimize   (1/n) Σ_k ξ_k + β Σ_j t_j
//	subject to S_{i(j)} X u_j ≥ 0,  (t_j, u_j) ∈ Q^{d+1},
//	           ξ ≥ 0,  ξ_k + y_k(Fu)_k ≥ 1,  k = 1 … n.
//
// Both are solved by the method of SolveConeQP (Nesterov–Todd scaling,
// Mehrotra predictor–corrector with centrality correctors, homogeneous
// embedding) with a KKT solver that exploits the structure: t_j and ξ are
// eliminated in closed form, and what remains is the 2dP×2dP positive
// definite normal matrix H on u, block diagonal (the orthant constraints of
// group j add the weighted Gram matrix Xᵀdiag(ω_j)X to a d×d diagonal
// block) plus the coupling FᵀCF (C = I for the squared loss,
// C = diag(ω₀ω_m/(ω₀ + ω_m)) from the weights of ξ ≥ 0 and of the margin
// rows for the hinge loss). H is not formed: its triangular factor comes
// from a structured QR factorization of the scaled constraint rows (forming
// H squares their condition number, which on degenerate programs, such as
// many patterns with few points, stalls the method near a relative gap of
// 10⁻⁷), in which the groups v_i and w_i are combined into (v_i ± w_i)/√2 so
// that the coupling, which sees only v_i − w_i, acts on dP columns. An
// iteration costs about 2·min(n, dP)·(dP)² flops for the coupling,
// 2P·2(n + d)d² for the blocks, and about two dozen solves of
// O(nPd + (dP)²) each; the factor takes (dP)² floats. Far from the
// solution the factor comes from normal equations instead (see factor),
// and for the squared loss, whose coupling FᵀF does not change, from
// (dP)³/3 flops once FᵀF is formed. Columns of X that are zero in every row
// are left out of the cone program (solvers.Program.WithoutZeroColumns):
// Table 2's 144 blank pixels take d from 784 to 640 and the factorization's
// flops to 0.55 of theirs.
//
// p is validated first. The result carries the status; anything but
// Optimal is not an answer to the tolerance. When ctx is done between
// iterations the best iterate so far is returned with an error wrapping
// ctx.Err().
func Solve(ctx context.Context, p *solvers.Program, o Options) (*Result, error) {
	start := time.Now()
	if err := checkProgram(p); err != nil {
		return nil, err
	}
	o, err := o.resolveCone(p.Loss, "ipm: the interior-point method solves the squared and hinge losses (second-order cone programs), not the %v loss: use ADMM-RBCD or the loss-split ADMM")
	if err != nil {
		return nil, err
	}
	// The cone program leaves out the columns of X that are zero in every
	// row (solvers.Program.WithoutZeroColumns); weights, objective and
	// certificate are p's.
	q, keep := p.WithoutZeroColumns()
	need, what := MemoryEstimate(q)
	if err := o.fits(need, what, "use ADMM (admm.New), which needs O(nP + dP) memory, or fewer patterns"); err != nil {
		return nil, err
	}
	nc := newNetCone(q)
	nc.planFactor(need, o)
	build := func(sol *coneSolution, err error) (*Result, error) {
		res := &Result{Status: sol.status, Gap: sol.relgap, Iterations: sol.iters}
		err = res.finish(p, "program", expandColumns(sol.x, 2*len(p.D), p.X.RawMatrix().Cols, keep), p.Objective, err)
		if len(sol.z) == nc.m {
			res.Dual = nc.dual(sol.z)
		}
		return res, err
	}
	res, err := solveChecked(ctx, nc.problem(), o, p, solvers.Perturbation{}, build)
	if res != nil {
		res.Seconds = time.Since(start).Seconds()
	}
	return res, err
}

// solveChecked runs solveCone on cp and returns build's Result of its
// solution; with o.Gap, cp.accept certifies the iterates that meet the
// tolerance (see Options.Gap) and the Result carries the certificate.
func solveChecked(ctx context.Context, cp *coneProblem, o Options, p *solvers.Program, pert solvers.Perturbation,
	build func(*coneSolution, error) (*Result, error)) (*Result, error) {
	if o.Gap == 0 {
		sol, err := solveCone(ctx, cp, o)
		if sol == nil {
			return nil, err
		}
		return build(sol, err)
	}
	cert := o.Certifier
	if cert == nil {
		var err error
		if cert, err = NewCertifier(p, pert); err != nil {
			return nil, err
		}
	}
	if cert.Enough == 0 {
		cert.Enough = enoughFor(o.Gap)
		defer func() { cert.Enough = 0 }()
	}
	var last *coneSolution
	var lastRes *Result
	certified := func(sol *coneSolution, err error) (*Result, error) {
		if sol == last {
			return lastRes, err
		}
		res, err := build(sol, err)
		if res.Status == PrimalInfeasible || res.Status == DualInfeasible {
			return res, err
		}
		b, cerr := cert.Bound(res.Weights, res.Dual)
		if cerr != nil {
			return res, cerr
		}
		res.Bound = &b
		last, lastRes = sol, res
		return res, err
	}
	cp.accept = func(sol *coneSolution) (bool, error) {
		res, err := certified(sol, nil)
		if err != nil || res.Bound == nil {
			return false, err
		}
		if o.Verbose != nil {
			fmt.Fprintf(o.Verbose, "ipm: certified gap %.2e (lower %.10g, upper %.10g)\n", res.Bound.Gap, res.Bound.Lower, res.Bound.Upper)
		}
		return res.Bound.Gap <= o.Gap, nil
	}
	sol, err := solveCone(ctx, cp, o)
	if sol == nil {
		return nil, err
	}
	return certified(sol, err)
}

// finish completes a Result of Solve or SolveRobust on p whose Status, Gap
// and Iterations are set, after a cone solve that returned x and err.
// Weights are the groups in x (groupWeights), except after an infeasibility
// certificate: the program (what names it) is feasible, u = 0 with large
// enough slacks, and its objective is bounded below by 0, so a certificate
// is a numerical failure, reported as an error, and Weights stay zero.
// Objective is objective(Weights). finish returns err, or else the first
// error it met.
func (r *Result) finish(p *solvers.Program, what string, x []float64, objective func(solvers.Weights) (float64, error), err error) error {
	switch r.Status {
	case PrimalInfeasible, DualInfeasible:
		r.Weights = p.NewWeights()
		if err == nil {
			err = fmt.Errorf("ipm: interior point reports the %s %v, which it is not: numerical failure", what, r.Status)
		}
	default:
		r.Weights = groupWeights(p, x)
	}
	if obj, oerr := objective(r.Weights); oerr == nil {
		r.Objective = obj
	} else if err == nil {
		err = oerr
	}
	return err
}

// expandColumns returns the cone variables x of a program on the columns
// keep of X (WithoutZeroColumns) as the groups of the whole program, of
// width d: each of the first ng groups of len(keep) entries becomes one of d
// entries, zero on the other columns. x itself when keep is nil; the rest of
// x (t, ξ) is left out, which groupWeights does not read.
func expandColumns(x []float64, ng, d int, keep []int) []float64 {
	if keep == nil {
		return x
	}
	dk := len(keep)
	u := make([]float64, ng*d)
	for j := 0; j < ng; j++ {
		for a, c := range keep {
			u[j*d+c] = x[j*dk+a]
		}
	}
	return u
}

// groupWeights returns the weights of p whose groups u_j (j = 1 … 2P) are
// the first 2Pd cone variables x (u_j = x[j·d : (j+1)·d]): v_i = u_i and
// w_i = u_{P+i}.
func groupWeights(p *solvers.Program, x []float64) solvers.Weights {
	wt := p.NewWeights()
	np, d := wt.V.Dims()
	for i := 0; i < np; i++ {
		copy(wt.V.RawRowView(i), x[i*d:(i+1)*d])
		copy(wt.W.RawRowView(i), x[(np+i)*d:(np+i+1)*d])
	}
	return wt
}

// netCone is the cone program of Solve as operators, with its KKT solver.
//
// Variables x = (u, t, ξ): u_j = x[j·d : (j+1)·d] for the 2P groups, t_j at
// 2Pd + j, and for the hinge loss ξ_k at 2Pd + 2P + k. Cone rows (s = h − Gx):
// the pattern rows s[j·n + k] = (S_{i(j)}Xu_j)_k of group j, for the hinge
// loss n rows ξ ≥ 0 and n rows ξ_k + y_k(Fu)_k − 1 ≥ 0, then one
// second-order cone (t_j, u_j) per group.
//
// Robust programs (section 4) fit the same mould: constraints local to a
// group (the ℓ₁ epigraph of (2D_i − I)Xv_i ≥ ε‖v_i‖₁) enlarge the group's
// eliminated auxiliaries beside t_j; constraints per sample that mix the
// groups (the hinge margin with ε‖Σ_i d_ik(v_i − w_i)‖₁) add rows to the
// coupling term FᵀCF.
type netCone struct {
	noEqualities
	p            *solvers.Program
	n, d, np, ng int // ng = 2P groups
	// nr rows of X, the pattern rows of each group: n for the two-layer
	// program. SolvePooled's X holds the distinct rows of its stacked
	// matrix instead and its F is given (fvt, fvtF): the products with F
	// then go through F_vᵀ, not through the rows of X.
	nr int
	// off: pattern i's constraint rows are the rows off[i] … off[i+1] of
	// its matrix (xOf), and group j's cone rows are ⌊j/P⌋·off[P] + off[i]
	// onwards (rowsOf). Uniform (every program but SolvePooled's): the nr
	// rows of X for every pattern, off[i] = i·nr. Ragged (xcat.Rows > 0,
	// newNetConeRagged): each pattern its own rows, stacked in xcat; nr
	// is then the most any pattern has.
	off           []int
	xcat          blas64.General
	fvtF          bool
	pd            []float64 // dP: v − w (fvtF)
	ry            []float64 // n: y∘z on the margin rows (fvtF)
	hinge         bool
	nu, nx, m     int
	rowXi, rowMar int // first ξ ≥ 0 row and first margin row
	rowSOC        int // first second-order cone row
	x             blas64.General
	sgn, dm       []float64 // P×nr: S_i[k] and D_i[k]
	c, h          []float64
	offset        float64

	// workspace
	zt, yt blas64.General // 2P×nr
	fu     []float64      // n
	tz     []float64      // m

	// KKT
	w *ntScaling
	// The factor R of H in the coordinates q_i = (v_i + w_i)/√2,
	// p_i = (v_i − w_i)/√2 (see factor): per pattern R_qq,i (d×d upper) and
	// R_qp,i (d×d), and the dense R_pp (dP×dP upper).
	rqq, rqp []float64      // P·d·d
	rpp      blas64.General // dP×dP
	ppTri    blas64.Triangular
	fvt      blas64.General // dP×n: F_vᵀ, F_v = [D_1X … D_PX]
	frow     blas64.General // dP×rows: the coupling rows on p, transposed: hinge (√(2C) F_v)ᵀ, squared loss (√2 F_v)ᵀ or R_Fᵀ
	fq       []float64      // squared loss: the constant frow ((√2 F_v)ᵀ, or R_Fᵀ when n > dP)
	fqTri    bool           // fq holds R_Fᵀ (lower triangular)
	work     []factorWork   // per factor worker (GOMAXPROCS, at most P)
	qr       tpqrWork
	normalEq bool      // factor the coupling by normal equations (see atGap)
	hw       []float64 // quadratic model: the weights h of ½ŷᵀdiag(h)ŷ (nil: all ones)
	// setModel's buffers: hw's storage, the row weights √(2h), the
	// weighted rows (fq when n ≤ dP), and for n > dP the rows transposed
	// for their QR factorization and R_Fᵀ (fq then).
	hwBuf, roww, modelRows []float64
	qrRows                 blas64.General
	rft                    []float64
	cw                     []float64 // hinge: per sample ω_m/(ω₀ + ω_m)
	tcoef                  []float64 // per group 2w̄₀/(1 + 2‖w̄₁‖²)
	tden                   []float64 // per group 1 + 2‖w̄₁‖²
	// gram is fq·fqᵀ (dP×dP, upper triangle), the Gram matrix of the
	// constant coupling rows of a program that is not hinge, formed once
	// per model (setModel clears gramOK) and added to every normal-equation
	// factorization instead of forming it again (normalFactor); nil when
	// it would not fit in memory (planFactor).
	gram   []float64
	gramOK bool
	// lateNormal: the normal equations may go on below normalEqGap (see
	// there).
	lateNormal bool
}

func newNetCone(p *solvers.Program) *netCone { return newNetConeLoss(p, nil) }

// newNetConeLoss is the cone form of p's own loss (hinge, or squared: h = 1,
// r = −y, offset ½‖y‖²), with F given as fvt when not nil (newNetConeF).
func newNetConeLoss(p *solvers.Program, fvt *blas64.General) *netCone {
	if p.Loss == solvers.HingeLoss {
		return newNetConeF(p, fvt, nil, nil, 0)
	}
	r := make([]float64, len(p.Y))
	floats.ScaleTo(r, -1, p.Y)
	return newNetConeF(p, fvt, nil, r, 0.5*floats.Dot(p.Y, p.Y))
}

// newNetConeModel returns the cone form of p, whose loss, unless it is the
// hinge loss, is replaced by the quadratic
//
//	½ ŷᵀdiag(h)ŷ + rᵀŷ + offset,   ŷ = Fu
//
// (h nil: all ones; the squared loss is h = 1, r = −y, offset ½‖y‖²; a
// smooth loss's second-order model at ŷ₀ is h = ∇²ℓ(ŷ₀),
// r = ∇ℓ(ŷ₀) − diag(h)ŷ₀). Q = FᵀHF then enters the factorization as the
// rows √(2h_k)·(row k of F_v) on p, just as the hinge loss's coupling does.
func newNetConeModel(p *solvers.Program, h, r []float64, offset float64) *netCone {
	return newNetConeF(p, nil, h, r, offset)
}

// newNetConeF is newNetConeModel with F given as fvt = F_vᵀ (dP×n), for
// SolvePooled, whose X holds only the constraint rows; nil: F_v =
// [D_1X … D_PX].
func newNetConeF(p *solvers.Program, fvt *blas64.General, h, r []float64, offset float64) *netCone {
	return newNetConeRows(p, nil, fvt, h, r, offset)
}

// newNetConeRagged is newNetConeLoss with F given as fvt and pattern i's
// constraint rows its own: the counts[i] rows of p.X from Σ_{l<i} counts[l]
// on, with their signs in p.D[i] there (p.D[i]'s other entries are not
// read).
func newNetConeRagged(p *solvers.Program, counts []int, fvt *blas64.General) *netCone {
	if p.Loss == solvers.HingeLoss {
		return newNetConeRows(p, counts, fvt, nil, nil, 0)
	}
	r := make([]float64, len(p.Y))
	floats.ScaleTo(r, -1, p.Y)
	return newNetConeRows(p, counts, fvt, nil, r, 0.5*floats.Dot(p.Y, p.Y))
}

// newNetConeRows is newNetConeF with pattern i's rows the counts[i] rows of
// p.X from Σ_{l<i} counts[l] on (ragged; fvt given), or with every row of
// p.X (counts nil).
func newNetConeRows(p *solvers.Program, counts []int, fvt *blas64.General, h, r []float64, offset float64) *netCone {
	nr, d := p.X.Dims()
	n, np := len(p.Y), len(p.D)
	ng := 2 * np
	nc := &netCone{p: p, n: n, d: d, np: np, ng: ng, nr: nr, hinge: p.Loss == solvers.HingeLoss, x: p.X.RawMatrix()}
	nc.off = make([]int, np+1)
	for i := range np {
		c := nr
		if counts != nil {
			c = counts[i]
		}
		nc.off[i+1] = nc.off[i] + c
	}
	if counts != nil {
		if fvt == nil || nc.off[np] != nr {
			panic("ipm: ragged rows need F_vᵀ and counts that add up to the rows of X")
		}
		nc.xcat, nc.nr = nc.x, max(1, slices.Max(counts))
	}
	nc.nu = ng * d
	nc.nx = nc.nu + ng
	nc.rowXi = 2 * nc.off[np]
	nc.rowMar = nc.rowXi
	nc.rowSOC = nc.rowXi
	if nc.hinge {
		nc.nx += n
		nc.rowMar += n
		nc.rowSOC += 2 * n
	}
	nc.m = nc.rowSOC + ng*(d+1)
	nc.sgn = make([]float64, nc.off[np])
	nc.dm = make([]float64, nc.off[np])
	for i, di := range p.D {
		for k := range nc.off[i+1] - nc.off[i] {
			at := nc.off[i] + k
			on := di[k]
			if nc.ragged() {
				on = di[at]
			}
			nc.sgn[at] = -1
			if on {
				nc.sgn[at], nc.dm[at] = 1, 1
			}
		}
	}
	gen := func(r, c int) blas64.General {
		return blas64.General{Rows: r, Cols: c, Stride: c, Data: make([]float64, r*c)}
	}
	if nc.ragged() {
		nc.zt, nc.yt = gen(1, nc.rowXi), gen(1, nc.rowXi)
	} else {
		nc.zt, nc.yt = gen(ng, nr), gen(ng, nr)
	}
	nr = nc.nr
	nc.fu = make([]float64, n)
	nc.tz = make([]float64, nc.m)
	nu := nc.nu
	dp := d * np
	nc.rqq, nc.rqp = make([]float64, dp*d), make([]float64, dp*d)
	nc.rpp = gen(dp, dp)
	nc.work = make([]factorWork, max(1, min(runtime.GOMAXPROCS(0), np)))
	for t := range nc.work {
		nc.work[t] = factorWork{gmt: make([]float64, d*(nr+d)), rw: make([]float64, d*d), pmt: make([]float64, 4*d*d), pr: make([]float64, 4*d*d)}
	}
	nc.tcoef = make([]float64, ng)
	nc.tden = make([]float64, ng)

	// c, h and the constant of the objective.
	nc.c = make([]float64, nc.nx)
	nc.h = make([]float64, nc.m)
	for j := 0; j < ng; j++ {
		nc.c[nu+j] = p.Beta
	}
	if fvt != nil {
		nc.fvt, nc.fvtF = *fvt, true
		nc.pd, nc.ry = make([]float64, dp), make([]float64, n)
	} else {
		nc.fvt = gen(dp, n)
		for k := 0; k < n; k++ {
			for i := 0; i < np; i++ {
				if nc.dm[i*n+k] != 0 {
					for l := 0; l < d; l++ {
						nc.fvt.Data[(i*d+l)*n+k] = nc.x.Data[k*nc.x.Stride+l]
					}
				}
			}
		}
	}
	if nc.hinge {
		for k := 0; k < n; k++ {
			nc.c[nu+ng+k] = 1 / float64(n)
			nc.h[nc.rowMar+k] = -1
		}
		nc.frow = gen(dp, n)
		nc.cw = make([]float64, n)
	} else {
		nc.setModel(h, r, offset)
	}
	nc.qr = newTPQRWork(dp)
	return nc
}

// setModel sets the quadratic loss ½ŷᵀdiag(h)ŷ + rᵀŷ + offset of a
// program that is not hinge (see newNetConeModel; h nil: all ones): c_u =
// Fᵀr and the constant coupling rows. Q = FᵀHF enters the factorization as
// the rows √(2h_k)·(row k of F_v) on p (see factor), or, when there are
// more of them than columns, as those of the triangular factor R_F of
// that matrix, √(2H)F_v = Q_F R_F.
func (nc *netCone) setModel(h, r []float64, offset float64) {
	n, dp := nc.n, nc.d*nc.np
	nc.fuT(nc.c[:nc.nu], r, 1, 0)
	nc.offset = offset
	nc.gramOK = false
	// The buffers are kept: the model is rebuilt at most every iteration.
	if len(nc.roww) != n {
		nc.roww, nc.modelRows = make([]float64, n), make([]float64, dp*n)
	}
	nc.hw = nil
	for k := range nc.roww {
		nc.roww[k] = math.Sqrt2
	}
	if h != nil {
		nc.hw = append(nc.hwBuf[:0], h...)
		nc.hwBuf = nc.hw
		for k, v := range h {
			nc.roww[k] *= math.Sqrt(v)
		}
	}
	rows := nc.modelRows
	for a := 0; a < dp; a++ {
		floats.MulTo(rows[a*n:(a+1)*n], nc.roww, nc.fvt.Data[a*n:(a+1)*n])
	}
	nc.fq, nc.fqTri = rows, false
	cols := n
	if n > dp {
		if len(nc.rft) != dp*dp {
			nc.qrRows = blas64.General{Rows: n, Cols: dp, Stride: dp, Data: make([]float64, n*dp)}
			nc.rft = make([]float64, dp*dp)
		}
		f := nc.qrRows
		for a := 0; a < dp; a++ {
			for k := 0; k < n; k++ {
				f.Data[k*dp+a] = rows[a*n+k]
			}
		}
		tau, work := make([]float64, dp), make([]float64, 1)
		lapack64.Geqrf(f, tau, work, -1)
		fw := make([]float64, max(1, int(work[0])))
		lapack64.Geqrf(f, tau, fw, len(fw))
		for a := 0; a < dp; a++ { // R_Fᵀ, lower triangular (the rest stays zero)
			for b := a; b < dp; b++ {
				nc.rft[b*dp+a] = f.Data[a*dp+b]
			}
		}
		nc.fq, nc.fqTri, cols = nc.rft, true, dp
	}
	// frow is the factorization's scratch copy of fq.
	if nc.frow.Cols != cols || nc.frow.Rows != dp {
		nc.frow = blas64.General{Rows: dp, Cols: cols, Stride: cols, Data: make([]float64, dp*cols)}
	}
}

// dual returns the certificate's hint from the cone multipliers z: the
// orthant rows j·n + k of −S_{i(j)} X u_j ≤ 0 carry α_j, the margin rows
// of the hinge loss −ξ_k − y_k(Fu)_k ≤ −1 carry z_k, whose loss dual is
// μ_k = −y_k z_k.
func (nc *netCone) dual(z []float64) *certify.Hint {
	h := &certify.Hint{}
	if !nc.ragged() { // ragged: the caller reads z (rowsOf)
		h.Alpha = mat.NewDense(nc.ng, nc.nr, append([]float64(nil), z[:nc.ng*nc.nr]...))
	}
	if nc.hinge {
		h.Mu = make([]float64, nc.n)
		for k, y := range nc.p.Y {
			h.Mu[k] = -y * z[nc.rowMar+k]
		}
	}
	return h
}

func (nc *netCone) problem() *coneProblem {
	k := Cone{Orthant: nc.rowSOC, SOC: make([]int, nc.ng)}
	for j := range k.SOC {
		k.SOC[j] = nc.d + 1
	}
	return &coneProblem{c: nc.c, h: nc.h, b: []float64{}, k: k, offset: nc.offset, ops: nc, linear: nc.hinge}
}

// sigma returns the sign of group j in Fu.
func (nc *netCone) sigma(j int) float64 {
	if j < nc.np {
		return 1
	}
	return -1
}

// ragged reports whether each pattern has its own constraint rows (see off).
func (nc *netCone) ragged() bool { return nc.xcat.Rows > 0 }

// rowsOf returns the range of group j's cone rows.
func (nc *netCone) rowsOf(j int) (lo, hi int) {
	i := j % nc.np
	base := (j / nc.np) * nc.off[nc.np]
	return base + nc.off[i], base + nc.off[i+1]
}

// xOf returns pattern i's constraint rows.
func (nc *netCone) xOf(i int) blas64.General {
	if !nc.ragged() {
		return nc.x
	}
	x := nc.xcat
	return blas64.General{Rows: nc.off[i+1] - nc.off[i], Cols: x.Cols, Stride: x.Stride, Data: x.Data[nc.off[i]*x.Stride:]}
}

// xu sets zt's group j rows to (its rows of X) u_j for the groups u in
// x[:nu] (uniform: zt = U Xᵀ).
func (nc *netCone) xu(u []float64) {
	if !nc.ragged() {
		ug := blas64.General{Rows: nc.ng, Cols: nc.d, Stride: nc.d, Data: u[:nc.nu]}
		blas64.Gemm(blas.NoTrans, blas.Trans, 1, ug, nc.x, 0, nc.zt)
		return
	}
	d := nc.d
	for j := 0; j < nc.ng; j++ {
		lo, hi := nc.rowsOf(j)
		blas64.Gemv(blas.NoTrans, 1, nc.xOf(j%nc.np), blas64.Vector{N: d, Inc: 1, Data: u[j*d : (j+1)*d]}, 0, blas64.Vector{N: hi - lo, Inc: 1, Data: nc.zt.Data[lo:hi]})
	}
}

// fuFromZt sets fu = Fu from zt = U Xᵀ (not fvtF).
func (nc *netCone) fuFromZt() {
	n := nc.n
	clear(nc.fu)
	for j := 0; j < nc.ng; j++ {
		sg, dm, row := nc.sigma(j), nc.dm[(j%nc.np)*n:(j%nc.np+1)*n], nc.zt.Data[j*n:(j+1)*n]
		for k, on := range dm {
			if on != 0 {
				nc.fu[k] += sg * row[k]
			}
		}
	}
}

// fuOf sets fu = Fu for the groups u in x[:nu]: fu = F_v(v − w) by F_vᵀ
// (fvtF), or else from zt, which it computes unless zt already holds
// U Xᵀ of x (haveZt).
func (nc *netCone) fuOf(x []float64, haveZt bool) {
	if !nc.fvtF {
		if !haveZt {
			nc.xu(x)
		}
		nc.fuFromZt()
		return
	}
	dp := nc.d * nc.np
	floats.SubTo(nc.pd, x[:dp], x[dp:2*dp])
	blas64.Gemv(blas.Trans, 1, nc.fvt, blas64.Vector{N: dp, Inc: 1, Data: nc.pd}, 0, blas64.Vector{N: nc.n, Inc: 1, Data: nc.fu})
}

// fuT sets out = α Fᵀr + β·out on the u part (out has length nu).
func (nc *netCone) fuT(out, r []float64, alpha, beta float64) {
	n := nc.n
	if nc.fvtF {
		// F_vᵀr on the groups v_i, its negative on w_i.
		dp := nc.d * nc.np
		t := nc.pd
		blas64.Gemv(blas.NoTrans, 1, nc.fvt, blas64.Vector{N: n, Inc: 1, Data: r}, 0, blas64.Vector{N: dp, Inc: 1, Data: t})
		for a, v := range t {
			out[a] = alpha*v + beta*out[a]
			out[dp+a] = -alpha*v + beta*out[dp+a]
		}
		return
	}
	for j := 0; j < nc.ng; j++ {
		sg, dm, row := nc.sigma(j), nc.dm[(j%nc.np)*n:(j%nc.np+1)*n], nc.yt.Data[j*n:(j+1)*n]
		for k := range row {
			row[k] = sg * dm[k] * r[k]
		}
	}
	og := blas64.General{Rows: nc.ng, Cols: nc.d, Stride: nc.d, Data: out[:nc.nu]}
	blas64.Gemm(blas.NoTrans, blas.NoTrans, alpha, nc.yt, nc.x, beta, og)
}

// mulQ: Q = FᵀHF on u for a quadratic loss (H = I for the squared loss), 0
// for the hinge loss.
func (nc *netCone) mulQ(out, x []float64) {
	clear(out)
	if nc.hinge {
		return
	}
	nc.fuOf(x, false)
	if nc.hw != nil {
		floats.Mul(nc.fu, nc.hw)
	}
	nc.fuT(out, nc.fu, 1, 0)
}

func (nc *netCone) mulG(out, x []float64, alpha, beta float64) {
	n, d, nu := nc.n, nc.d, nc.nu
	if beta == 0 {
		clear(out)
	} else if beta != 1 {
		floats.Scale(beta, out)
	}
	nc.xu(x)
	for j := 0; j < nc.ng; j++ {
		i := j % nc.np
		lo, hi := nc.rowsOf(j)
		sg, row, o := nc.sgn[nc.off[i]:nc.off[i+1]], nc.zt.Data[lo:hi], out[lo:hi]
		for k := range o {
			o[k] -= alpha * sg[k] * row[k]
		}
	}
	if nc.hinge {
		nc.fuOf(x, true)
		xi := x[nu+nc.ng:]
		for k := 0; k < n; k++ {
			out[nc.rowXi+k] -= alpha * xi[k]
			out[nc.rowMar+k] -= alpha * (nc.p.Y[k]*nc.fu[k] + xi[k])
		}
	}
	for j := 0; j < nc.ng; j++ {
		o := out[nc.rowSOC+j*(d+1):]
		o[0] -= alpha * x[nu+j]
		for l := 0; l < d; l++ {
			o[1+l] -= alpha * x[j*d+l]
		}
	}
}

func (nc *netCone) mulGT(out, z []float64, alpha, beta float64) {
	n, d, nu, np := nc.n, nc.d, nc.nu, nc.np
	for j := 0; j < nc.ng; j++ {
		i := j % np
		lo, hi := nc.rowsOf(j)
		sg, row, zz := nc.sgn[nc.off[i]:nc.off[i+1]], nc.yt.Data[lo:hi], z[lo:hi]
		for k := range row {
			row[k] = -sg[k] * zz[k]
		}
		if nc.hinge && !nc.fvtF {
			s, dm, zm := nc.sigma(j), nc.dm[(j%np)*n:(j%np+1)*n], z[nc.rowMar:nc.rowMar+n]
			for k := range row {
				row[k] -= s * dm[k] * nc.p.Y[k] * zm[k]
			}
		}
	}
	if nc.ragged() {
		for j := 0; j < nc.ng; j++ {
			lo, hi := nc.rowsOf(j)
			blas64.Gemv(blas.Trans, alpha, nc.xOf(j%np), blas64.Vector{N: hi - lo, Inc: 1, Data: nc.yt.Data[lo:hi]}, beta, blas64.Vector{N: d, Inc: 1, Data: out[j*d : (j+1)*d]})
		}
	} else {
		og := blas64.General{Rows: nc.ng, Cols: d, Stride: d, Data: out[:nu]}
		blas64.Gemm(blas.NoTrans, blas.NoTrans, alpha, nc.yt, nc.x, beta, og)
	}
	if nc.hinge && nc.fvtF {
		// The margin rows: −α Fᵀ(y∘z_m).
		floats.MulTo(nc.ry, nc.p.Y, z[nc.rowMar:nc.rowMar+n])
		nc.fuT(out, nc.ry, -alpha, 1)
	}
	for j := 0; j < nc.ng; j++ {
		zs := z[nc.rowSOC+j*(d+1):]
		out[nu+j] = beta*out[nu+j] - alpha*zs[0]
		for l := 0; l < d; l++ {
			out[j*d+l] -= alpha * zs[1+l]
		}
	}
	if nc.hinge {
		for k := 0; k < n; k++ {
			o := &out[nu+nc.ng+k]
			*o = beta**o - alpha*(z[nc.rowXi+k]+z[nc.rowMar+k])
		}
	}
}

// noEqualities gives the products with A of a cone QP without equality
// constraints (A has no rows).
type noEqualities struct{}

func (noEqualities) mulA(out, x []float64, alpha, beta float64) {}

func (noEqualities) mulAT(out, y []float64, alpha, beta float64) {
	if beta == 0 {
		clear(out)
	} else if beta != 1 {
		floats.Scale(beta, out)
	}
}

// factor computes a triangular factor R, RᵀR = H, of the normal matrix on
// u,
//
//	H = FᵀCF + blkdiag_j( Xᵀdiag(ω_j)X + β_j⁻²(I − 2w̄₁w̄₁ᵀ/(1 + 2‖w̄₁‖²)) ),
//
// where ω_j = z/s on the pattern rows of group j and the second term is the
// Schur complement, after eliminating t_j, of the second-order cone block
// W_j⁻² = β_j⁻²(2Jw̄w̄ᵀJ − J) (w̄ = (w̄₀, w̄₁) the NT point). For the squared
// loss C = I; for the hinge loss eliminating ξ leaves
// C = diag(ω₀ω_m/(ω₀ + ω_m)) with ω₀, ω_m the weights of ξ ≥ 0 and of the
// margin rows.
//
// H is never formed: R comes from orthogonal transformations of rows whose
// Gram matrix is H (a QR factorization of the scaled constraint matrix
// W⁻¹G, as in CVXOPT's "qr" KKT solver, but structured). Forming H squares
// the condition number. Near the end of a degenerate program (groups
// spanning the same neuron, e.g. two patterns that differ only in a point on
// the neuron's hyperplane, so that the optimal face is not a point) H has
// eigenvalues of order μ along directions in which single rows have weights
// of order 1/μ; the rounding errors of the assembled H, ε/μ relative to its
// largest entries, swamp them once μ² < ε, the step gets garbage components
// along the optimal face, and the method creeps and stalls at a relative
// gap of about 10⁻⁷. The rows carry errors of order ε/√μ in those
// directions, harmless until μ < ε.
//
// Group j has the n rows √ω_jk·x_kᵀ and d rows T_j with
// T_jᵀT_j = β_j⁻²(I − ŵŵᵀ + ŵŵᵀ/(1 + 2‖w̄₁‖²)), ŵ = w̄₁/‖w̄₁‖: the row
// β_j⁻¹ŵᵀ/√(1 + 2‖w̄₁‖²) and β_j⁻¹ times an orthonormal basis of ŵ⊥, so that
// the small eigenvalue is not the difference of two large ones. A
// Householder QR of these n + d rows gives R_j (d×d). Since
// F = [F_v −F_v], the coupling depends on u only through p_i = (v_i − w_i)/√2:
// in the orthogonal coordinates q_i = (v_i + w_i)/√2, p_i the rows of
// pattern i are [R_vi R_vi; R_wi −R_wi]/√2 on (q_i, p_i), whose QR gives
// R_qq,i, R_qp,i and a block R_pp,i, and the coupling rows √(2C_k) (row k of
// F_v) touch p alone: a blocked Householder QR of blkdiag(R_pp,i) stacked on
// them gives the dense R_pp. Cost: 2P(2(n + d)d² + O(d³)) for the blocks
// and about 2·min(n, dP)·(dP)² for the coupling, against (2dP)³/3 for a
// Cholesky factorization of H; the factor takes (dP)² floats. While the
// iterate is far from the solution, where the weights are moderate, the
// same factor comes about twice as fast from the rows' Gram matrices
// (normalFactor, see normalEqGap); a matrix that is not numerically
// positive definite there falls back to the rows.
func (nc *netCone) factor(w *ntScaling) error {
	nc.w = w
	n, d, np := nc.n, nc.d, nc.np
	dp := d * np
	rpp := nc.rpp
	clear(rpp.Data)
	fr := nc.frow
	if nc.hinge {
		for k := 0; k < n; k++ {
			w0, wm := 1/square(w.d[nc.rowXi+k]), 1/square(w.d[nc.rowMar+k])
			nc.cw[k] = wm / (w0 + wm)
			nc.fu[k] = math.Sqrt(2 * w0 * nc.cw[k])
		}
		for a := 0; a < dp; a++ {
			floats.MulTo(fr.Data[a*fr.Stride:a*fr.Stride+n], nc.fu, nc.fvt.Data[a*n:(a+1)*n])
		}
	}
	if nc.normalEq {
		rows := fr
		if !nc.hinge {
			rows.Data = nc.fq
		}
		if nc.normalFactor(rows) {
			nc.ppTri = blas64.Triangular{Uplo: blas.Upper, Diag: blas.NonUnit, N: dp, Stride: rpp.Stride, Data: rpp.Data}
			return nil
		}
		// Not numerically positive definite: factor orthogonally (and from
		// now on below normalEqGap).
		nc.normalEq, nc.lateNormal = false, false
		clear(rpp.Data)
	}
	if !nc.hinge {
		copy(fr.Data, nc.fq) // the orthogonal factorization overwrites its rows
	}
	// The patterns are independent: each worker factors every len(nc.work)-th
	// one with its own scratch.
	var wg sync.WaitGroup
	for t := range nc.work {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := t; i < np; i += len(nc.work) {
				nc.factorPattern(i, &nc.work[t])
			}
		}()
	}
	wg.Wait()
	nc.qr.factor(rpp, fr, nc.fqTri)
	for a := 0; a < dp; a++ {
		if !nonzero(rpp.Data[a*rpp.Stride+a]) || !nonzero(nc.rqq[a*d+a%d]) {
			return errors.New("ipm: the normal matrix of the interior-point step is singular")
		}
	}
	nc.ppTri = blas64.Triangular{Uplo: blas.Upper, Diag: blas.NonUnit, N: dp, Stride: rpp.Stride, Data: rpp.Data}
	return nil
}

// normalEqGap is the relative duality gap above which netCone factors H by
// normal equations (normalFactor) rather than orthogonally. Measured on
// mid-size hinge (MNIST 2 vs 8, n = 2000, d = 50, P = 48, OpenBLAS, 2
// cores): the same 50 iterations and certified gap (3.7e-7) as with the
// orthogonal factorization throughout, factorizations 10.1 s instead of
// 18.3 s; its last 8 iterations are below 10⁻⁵ and factored orthogonally.
//
// Below it, a program whose orthogonal factorization costs at least
// lateNormalFlops (2·min(rows, dP)·(dP)² for the coupling: Table 2's takes
// minutes per iteration) keeps the normal equations for as long as every
// KKT solve of the iteration before was refined to its tolerance
// (kktSolve), and factors orthogonally from the first iteration where one
// was not: iterative refinement corrects a factor whose errors are small
// against the step, and shows it when they no longer are.
const normalEqGap = 1e-5

// lateNormalFlops is the cost of the coupling's orthogonal factorization
// from which a program keeps the normal equations below normalEqGap (see
// there).
const lateNormalFlops = 1e12

// planFactor chooses how nc factors, for a solve with options o by a
// method that needs need bytes itself. It keeps the coupling's Gram matrix
// (nc.gram) for a program that is not hinge when its (dP)² floats fit in
// o's memory limit beside need; otherwise every normal-equation
// factorization forms it again. And it lets the normal equations go on
// below normalEqGap when the coupling's orthogonal factorization costs at
// least lateNormalFlops (see normalEqGap).
func (nc *netCone) planFactor(need int64, o Options) {
	dp := int64(nc.d * nc.np)
	if !nc.hinge && need+8*dp*dp <= o.memoryLimit() {
		nc.gram = make([]float64, dp*dp)
	}
	late := lateNormalFlops
	if o.lateNormalFlops > 0 {
		late = o.lateNormalFlops
	}
	nc.lateNormal = 2*float64(min(int64(nc.frow.Cols), dp))*float64(dp*dp) >= late
}

var _ gapAware = (*netCone)(nil)

// atGap tells the factorization the relative gap of the iterate it is about
// to factor at, and whether the solves since the last one were refined to
// their tolerance.
func (nc *netCone) atGap(relgap float64, refined bool) {
	if relgap <= normalEqGap && nc.normalEq && !refined {
		nc.lateNormal = false
	}
	nc.normalEq = relgap > normalEqGap || (nc.lateNormal && refined)
}

// normalFactor computes the factor of factor from the Gram matrices of its
// rows instead of the rows, and reports whether every matrix it factored
// was numerically positive definite (rpp and the pattern blocks are then
// garbage). Group j's Gram matrix is
//
//	H_j = Xᵀdiag(ω_j)X + β_j⁻²(I − 2w̄₁w̄₁ᵀ/(1 + 2‖w̄₁‖²)).
//
// For pattern i with Σ = H_v + H_w = LLᵀ, M = L⁻¹H_v and N = L⁻¹H_w, the
// rows' factor on (q_i, p_i) is R_qq = Lᵀ/√2, R_qp = (M − N)/√2 and
// R_ppᵀR_pp = 2H_wΣ⁻¹H_v = NᵀM + MᵀN (no difference of large terms), and the
// dense block is the Cholesky factor of blkdiag(R_ppᵀR_pp) + fr·frᵀ. The
// products cost P(2n + 4d)d² + n(dP)² + (dP)³/3 flops in matrix products
// (one BLAS call at a time, multi-threaded), against 4P(n + d)d² in
// Householder reflections and about 2n(dP)² for the orthogonal
// factorization. For a loss other than the hinge loss the coupling rows fr
// do not change with the iterate: their Gram matrix fr·frᵀ is formed once
// (nc.gram, when it fits in memory; pattern pair by pattern pair over the
// rows both keep, pairGram) and copied, which leaves P(2n + 4d)d²
// + (dP)³/3 per factorization (Table 2's n = 11 809 and, without its zero
// columns, dP = 15 360: 1.5·10¹² flops instead of 4.3·10¹²). Forming Gram matrices squares their
// condition numbers, so the method is used only while the iterate is far
// from the solution (normalEqGap).
func (nc *netCone) normalFactor(fr blas64.General) bool {
	d, np := nc.d, nc.np
	w, rpp := nc.w, nc.rpp
	fw := &nc.work[0]
	hv := blas64.Symmetric{Uplo: blas.Upper, N: d, Stride: d, Data: fw.pmt[:d*d]}
	hw := blas64.Symmetric{Uplo: blas.Upper, N: d, Stride: d, Data: fw.pmt[d*d : 2*d*d]}
	sig := fw.pmt[2*d*d : 3*d*d]
	mn := fw.pr[:2*d*d] // d×2d: [H_v H_w], then [M N]
	dp := d * np
	cached := !nc.hinge && nc.gram != nil
	blkBeta := 0.0
	// The patterns' d×d products go to blas64's implementation (OpenBLAS
	// with -tags openblas): one call at a time here, and at Table 2's
	// d = 640 gonum's native Dsyr2k and Dtrsm took 3.3 s per factorization.
	bi := blas64.Implementation()
	if cached {
		if !nc.gramOK {
			if nc.fvtF || nc.fqTri {
				blas64.Syrk(blas.NoTrans, 1, fr, 0, blas64.Symmetric{Uplo: blas.Upper, N: dp, Stride: dp, Data: nc.gram})
			} else {
				nc.pairGram(fw.gmt, fw.pmt[:d*d])
			}
			nc.gramOK = true
		}
		for a := 0; a < dp; a++ {
			copy(rpp.Data[a*rpp.Stride+a:a*rpp.Stride+dp], nc.gram[a*dp+a:(a+1)*dp])
		}
		blkBeta = 1
	}
	for i := 0; i < np; i++ {
		for t, j := range [2]int{i, np + i} {
			h := hv
			if t == 1 {
				h = hw
			}
			lo, hi := nc.rowsOf(j)
			wd, xi := w.d[lo:hi], nc.xOf(i)
			xs := blas64.General{Rows: hi - lo, Cols: d, Stride: d, Data: fw.gmt[:(hi-lo)*d]}
			for k := range wd {
				floats.ScaleTo(xs.Data[k*d:(k+1)*d], 1/wd[k], xi.Data[k*xi.Stride:k*xi.Stride+d])
			}
			blas64.Syrk(blas.Trans, 1, xs, 0, h)
			w1, _, den := nc.socSchur(j)
			ib2 := 1 / square(w.beta[j])
			for a := 0; a < d; a++ {
				h.Data[a*d+a] += ib2
				floats.AddScaled(h.Data[a*d+a:(a+1)*d], -2*ib2*w1[a]/den, w1[a:])
			}
		}
		// Full symmetric H_v, H_w (upper → both), Σ = H_v + H_w.
		for a := 0; a < d; a++ {
			for b := a; b < d; b++ {
				v, u := hv.Data[a*d+b], hw.Data[a*d+b]
				mn[a*2*d+b], mn[b*2*d+a] = v, v
				mn[a*2*d+d+b], mn[b*2*d+d+a] = u, u
				sig[a*d+b] = v + u
			}
		}
		if !localLAPACK.Dpotrf(blas.Upper, d, sig, d) { // Σ = UᵀU, U = Lᵀ
			return false
		}
		// M = U⁻ᵀH_v, N = U⁻ᵀH_w.
		bi.Dtrsm(blas.Left, blas.Upper, blas.Trans, blas.NonUnit, d, 2*d, 1, sig, d, mn, 2*d)
		rqq, rqp := nc.rqq[i*d*d:(i+1)*d*d], nc.rqp[i*d*d:(i+1)*d*d]
		for a := 0; a < d; a++ {
			for b := 0; b < d; b++ {
				rqq[a*d+b] = 0
				if b >= a {
					rqq[a*d+b] = sig[a*d+b] / math.Sqrt2
				}
				rqp[a*d+b] = (mn[a*2*d+b] - mn[a*2*d+d+b]) / math.Sqrt2
			}
		}
		// R_ppᵀR_pp = NᵀM + MᵀN into pattern i's diagonal block (upper).
		blk := rpp.Data[i*d*rpp.Stride+i*d:]
		bi.Dsyr2k(blas.Upper, blas.Trans, d, d, 1, mn[d:], 2*d, mn, 2*d, blkBeta, blk, rpp.Stride)
	}
	h := blas64.Symmetric{Uplo: blas.Upper, N: dp, Stride: rpp.Stride, Data: rpp.Data}
	if !cached {
		blas64.Syrk(blas.NoTrans, 1, fr, 1, h)
	}
	_, ok := lapack64.Potrf(h)
	return ok
}

// pairGram sets nc.gram (upper triangle) to fq·fqᵀ where fq holds the
// weighted rows √(2h_k)·(row k of F_v) (not R_Fᵀ, not a given F_v): its
// block (i, j) is Σ_k 2h_k d_ik d_jk x_kx_kᵀ, one product over the n_ij
// rows that both patterns keep, Σ_{i≤j} n_ij d² flops instead of n(dP)²
// for the product of the whole rows, whose zeros it skips (Table 2, where
// a pattern keeps about half the rows: 4·10¹¹ instead of 2.8·10¹²). rows
// (n·d) and blk (d·d) are scratch.
func (nc *netCone) pairGram(rows, blk []float64) {
	n, d, np := nc.n, nc.d, nc.np
	dp := d * np
	for i := 0; i < np; i++ {
		for j := i; j < np; j++ {
			cnt := 0
			for k := 0; k < n; k++ {
				if nc.dm[i*nc.nr+k] != 0 && nc.dm[j*nc.nr+k] != 0 {
					floats.ScaleTo(rows[cnt*d:(cnt+1)*d], nc.roww[k], nc.x.Data[k*nc.x.Stride:k*nc.x.Stride+d])
					cnt++
				}
			}
			sb := blas64.Symmetric{Uplo: blas.Upper, N: d, Stride: d, Data: blk}
			if cnt == 0 {
				clear(blk)
			} else {
				blas64.Syrk(blas.Trans, 1, blas64.General{Rows: cnt, Cols: d, Stride: d, Data: rows}, 0, sb)
			}
			for a := 0; a < d; a++ {
				dst := nc.gram[(i*d+a)*dp+j*d : (i*d+a)*dp+(j+1)*d]
				if i == j {
					copy(dst[a:], blk[a*d+a:(a+1)*d])
					continue
				}
				for b := 0; b < d; b++ {
					dst[b] = blk[min(a, b)*d+max(a, b)]
				}
			}
		}
	}
}

// factorPattern computes R_qq,i, R_qp,i and the diagonal block R_pp,i of
// pattern i (see factor) with the scratch fw.
func (nc *netCone) factorPattern(i int, fw *factorWork) {
	d, np := nc.d, nc.np
	w, rpp := nc.w, nc.rpp
	xi := nc.xOf(i)
	nr := xi.Rows
	m := nr + d
	gmt := fw.gmt
	rv := nc.rqp[i*d*d : (i+1)*d*d] // R_vi waits in the storage of R_qp,i
	for _, j := range [2]int{i, np + i} {
		lo, hi := nc.rowsOf(j)
		wd := w.d[lo:hi]
		for k := 0; k < nr; k++ {
			xk := xi.Data[k*xi.Stride : k*xi.Stride+d]
			for a, v := range xk {
				gmt[a*m+k] = v / wd[k]
			}
		}
		w1, nw, den := nc.socSchur(j)
		socRowsT(gmt, m, nr, w1, nw, den, 1/w.beta[j])
		if j == i {
			householderR(rv, d, gmt, m, d)
		} else {
			householderR(fw.rw, d, gmt, m, d)
		}
	}
	// The 2d rows [R_v R_v; R_w −R_w]/√2 on (q_i, p_i).
	d2 := 2 * d
	pmt := fw.pmt
	for a := 0; a < d; a++ {
		for c := 0; c < d; c++ {
			v, u := rv[a*d+c]/math.Sqrt2, fw.rw[a*d+c]/math.Sqrt2
			pmt[c*d2+a], pmt[c*d2+d+a] = v, u
			pmt[(d+c)*d2+a], pmt[(d+c)*d2+d+a] = v, -u
		}
	}
	householderR(fw.pr, d2, pmt, d2, d2)
	for a := 0; a < d; a++ {
		copy(nc.rqq[(i*d+a)*d:(i*d+a+1)*d], fw.pr[a*d2:a*d2+d])
		copy(nc.rqp[(i*d+a)*d:(i*d+a+1)*d], fw.pr[a*d2+d:(a+1)*d2])
		copy(rpp.Data[(i*d+a)*rpp.Stride+i*d:], fw.pr[(d+a)*d2+d:(d+a+1)*d2])
	}
}

// socSchur returns group j's NT point w̄₁, ‖w̄₁‖ and den = 1 + 2‖w̄₁‖², and
// stores the coefficients that eliminating t_j leaves (tcoef, tden).
func (nc *netCone) socSchur(j int) (w1 []float64, nw, den float64) {
	d := nc.d
	wb := nc.w.wbar[j*(d+1) : (j+1)*(d+1)]
	w1 = wb[1:]
	nw = floats.Norm(w1, 2)
	den = 1 + 2*nw*nw
	nc.tcoef[j] = 2 * wb[0] / den
	nc.tden[j] = den
	return w1, nw, den
}

// factorWork is one factor worker's scratch.
type factorWork struct {
	gmt []float64 // d×(n+d): one group's rows [√ω_j·X; T_j], transposed
	rw  []float64 // d×d: the factor of group w_i
	pmt []float64 // 2d×2d: pattern i's rows, transposed
	pr  []float64 // 2d×2d: their factor
}

func nonzero(v float64) bool { return v != 0 && !math.IsNaN(v) && !math.IsInf(v, 0) }

// solveH overwrites u (2dP, groups v_1 … v_P, w_1 … w_P) by H⁻¹u, with the
// factor of factor: RᵀR y = Uᵀu in the coordinates (q, p), u = U y.
func (nc *netCone) solveH(u []float64) {
	d, np := nc.d, nc.np
	dp := d * np
	uv, uw := u[:dp], u[dp:2*dp]
	// (q, p) = ((v + w)/√2, (v − w)/√2), kept in (uv, uw).
	for a := range uv {
		v, w := uv[a], uw[a]
		uv[a], uw[a] = (v+w)/math.Sqrt2, (v-w)/math.Sqrt2
	}
	// Forward: R_qqᵀz_q = b_q, then b_p −= R_qpᵀz_q, R_ppᵀz_p = b_p.
	for i := 0; i < np; i++ {
		rqq, rqp := nc.rqq[i*d*d:(i+1)*d*d], nc.rqp[i*d*d:(i+1)*d*d]
		zq, bp := uv[i*d:(i+1)*d], uw[i*d:(i+1)*d]
		for a := 0; a < d; a++ {
			s := zq[a]
			for b := 0; b < a; b++ {
				s -= rqq[b*d+a] * zq[b]
			}
			zq[a] = s / rqq[a*d+a]
		}
		for b := 0; b < d; b++ {
			floats.AddScaled(bp, -zq[b], rqp[b*d:(b+1)*d])
		}
	}
	blas64.Trsv(blas.Trans, nc.ppTri, blas64.Vector{N: dp, Inc: 1, Data: uw})
	blas64.Trsv(blas.NoTrans, nc.ppTri, blas64.Vector{N: dp, Inc: 1, Data: uw})
	// Backward: R_qq y_q = z_q − R_qp y_p.
	for i := 0; i < np; i++ {
		rqq, rqp := nc.rqq[i*d*d:(i+1)*d*d], nc.rqp[i*d*d:(i+1)*d*d]
		yq, yp := uv[i*d:(i+1)*d], uw[i*d:(i+1)*d]
		for a := d - 1; a >= 0; a-- {
			s := yq[a] - floats.Dot(rqp[a*d:(a+1)*d], yp)
			for b := a + 1; b < d; b++ {
				s -= rqq[a*d+b] * yq[b]
			}
			yq[a] = s / rqq[a*d+a]
		}
	}
	for a := range uv {
		q, p := uv[a], uw[a]
		uv[a], uw[a] = (q+p)/math.Sqrt2, (q-p)/math.Sqrt2
	}
}

// socRowsT writes d rows T with TᵀT = b²(I − 2w₁w₁ᵀ/den), den = 1 + 2‖w₁‖²,
// nw = ‖w₁‖, as the columns n … n+d−1 of gmt (d×m, row-major, so that
// gmt[a*m + n + c] is entry a of row c): the row b·ŵᵀ/√den and b times the
// columns 2…d of the Householder reflector that maps e₁ to ±ŵ, an
// orthonormal basis of ŵ⊥.
func socRowsT(gmt []float64, m, n int, w1 []float64, nw, den, b float64) {
	d := len(w1)
	for a := 0; a < d; a++ {
		clear(gmt[a*m+n : a*m+n+d])
	}
	if nw == 0 {
		for a := 0; a < d; a++ {
			gmt[a*m+n+a] = b
		}
		return
	}
	// v = ŵ + sign(ŵ₀)e₁, H = I − 2vvᵀ/vᵀv, H e₁ = −sign(ŵ₀)ŵ, 2/vᵀv = 1/(1 + |ŵ₀|).
	s := b / math.Sqrt(den)
	w0 := w1[0] / nw
	sg := 1.0
	if w0 < 0 {
		sg = -1
	}
	f := 1 / (1 + math.Abs(w0))
	v := func(a int) float64 {
		if a == 0 {
			return w0 + sg
		}
		return w1[a] / nw
	}
	for a := 0; a < d; a++ {
		va := v(a)
		col := gmt[a*m+n : a*m+n+d]
		col[0] = s * w1[a] / nw
		for c := 1; c < d; c++ {
			col[c] = -b * f * va * v(c)
		}
		if a > 0 {
			col[a] += b
		}
	}
}

// householderR writes into r (d×d, row stride rs; zeros below the diagonal)
// the upper triangular factor of the m×d matrix whose columns are the rows
// of at (d×m, row-major), which it overwrites.
func householderR(r []float64, rs int, at []float64, m, d int) {
	for a := 0; a < d; a++ {
		clear(r[a*rs : a*rs+a])
		v := at[a*m+a+1 : (a+1)*m]
		alpha := at[a*m+a]
		xnorm := floats.Norm(v, 2)
		if xnorm == 0 {
			r[a*rs+a] = alpha
			for b := a + 1; b < d; b++ {
				r[a*rs+b] = at[b*m+a]
			}
			continue
		}
		beta := -math.Copysign(math.Hypot(alpha, xnorm), alpha)
		tau := (beta - alpha) / beta
		floats.Scale(1/(alpha-beta), v)
		r[a*rs+a] = beta
		for b := a + 1; b < d; b++ {
			u := at[b*m+a+1 : (b+1)*m]
			sv := tau * (at[b*m+a] + floats.Dot(v, u))
			r[a*rs+b] = at[b*m+a] - sv
			floats.AddScaled(u, -sv, v)
		}
	}
}

func square(x float64) float64 { return x * x }

// solve solves the KKT system (no y): with r = x + GᵀW⁻²z it eliminates t
// and ξ, solves H Δu = r_u' by the factor R, recovers Δt and Δξ, and sets
// z = W⁻²(GΔx − z). The eliminations are written out so that no two large
// terms cancel: for the hinge loss, with a = ω₀ and b = ω_m of sample k,
// folding and eliminating ξ_k gives
//
//	r_u' = r_u − Fᵀ(y∘(b/(a+b)·x_ξ + ab/(a+b)·(z_m − z_ξ))),
//
// where the literal order (first GᵀW⁻²z, then −Fᵀ(y∘b/(a+b)∘r_ξ)) cancels
// two terms of size b·z_m, and b grows like 1/μ on the margin rows; likewise
// for t_j, whose block of W⁻² has entries of order β⁻²(1 + 2‖w̄₁‖²),
// r_u' = x_u + 2w̄₀x_t w̄₁/(1 + 2‖w̄₁‖²) − S_j z_u with S_j the Schur
// complement of factor.
func (nc *netCone) solve(x, y, z []float64) error {
	w := nc.w
	n, d, nu, ng := nc.n, nc.d, nc.nu, nc.ng
	// Pattern rows: r_u += GᵀW⁻²z.
	for i := 0; i < nc.rowXi; i++ {
		nc.tz[i] = z[i] / square(w.d[i])
	}
	clear(nc.tz[nc.rowXi:])
	nc.mulGT(x, nc.tz, 1, 1)
	// Second-order cones: r_u_j += 2w̄₀x_t w̄₁/den − β⁻²(z_u − 2w̄₁(w̄₁ᵀz_u)/den),
	// and x_t is kept for Δt.
	rt := x[nu : nu+ng]
	for j := 0; j < ng; j++ {
		w1 := w.wbar[j*(d+1)+1 : (j+1)*(d+1)]
		zu := z[nc.rowSOC+j*(d+1)+1 : nc.rowSOC+(j+1)*(d+1)]
		xu := x[j*d : (j+1)*d]
		ib2 := 1 / square(w.beta[j])
		floats.AddScaled(xu, nc.tcoef[j]*rt[j]+2*ib2*floats.Dot(w1, zu)/nc.tden[j], w1)
		floats.AddScaled(xu, -ib2, zu)
	}
	var rxi []float64
	if nc.hinge {
		// r_u −= Fᵀ(y∘(b/(a+b)·x_ξ + ab/(a+b)·(z_m − z_ξ))), and
		// r_ξ/(a+b) = (x_ξ − a z_ξ − b z_m)/(a+b) kept for Δξ.
		rxi = x[nu+ng:]
		for k := 0; k < n; k++ {
			a, b := 1/square(w.d[nc.rowXi+k]), 1/square(w.d[nc.rowMar+k])
			zx, zm := z[nc.rowXi+k], z[nc.rowMar+k]
			cw := nc.cw[k]
			nc.fu[k] = nc.p.Y[k] * (cw*rxi[k] + a*cw*(zm-zx))
			rxi[k] = (rxi[k]-a*zx)/(a+b) - cw*zm
		}
		nc.fuT(x, nc.fu, -1, 1)
	}
	nc.solveH(x[:nu])
	// Δt_j = β²x_t/den − z_t + 2w̄₀w̄₁ᵀ(Δu_j + z_u)/den.
	for j := 0; j < ng; j++ {
		wb := w.wbar[j*(d+1) : (j+1)*(d+1)]
		zs := z[nc.rowSOC+j*(d+1) : nc.rowSOC+(j+1)*(d+1)]
		xu := x[j*d : (j+1)*d]
		var dot float64
		for l := 0; l < d; l++ {
			dot += wb[1+l] * (xu[l] + zs[1+l])
		}
		rt[j] = (square(w.beta[j])*rt[j]+2*wb[0]*dot)/nc.tden[j] - zs[0]
	}
	if nc.hinge {
		// Δξ_k = (x_ξ − a z_ξ)/(a+b) − b/(a+b)·(z_m + y_k(FΔu)_k).
		nc.fuOf(x, false)
		for k := 0; k < n; k++ {
			rxi[k] -= nc.cw[k] * nc.p.Y[k] * nc.fu[k]
		}
	}
	nc.mulG(nc.tz, x, 1, 0)
	for i := range z {
		z[i] = nc.tz[i] - z[i]
	}
	w.unscale2(z)
	return nil
}

// tpqrBlock is the block size of tpqrWork.factor; panels of at most
// tpqrLeaf columns are factored column by column.
const (
	tpqrBlock = 256
	tpqrLeaf  = 8
)

// tpqrWork is the workspace of a blocked Householder QR factorization of a
// matrix [R; B] with R upper triangular (LAPACK's dtpqrt).
type tpqrWork struct {
	tau []float64
	t   blas64.General // nb×nb, upper triangle: the block reflector I − VTVᵀ of a panel
	w   blas64.General // nb×N
}

func newTPQRWork(n int) tpqrWork {
	nb := min(tpqrBlock, max(1, n))
	return tpqrWork{
		tau: make([]float64, n),
		t:   blas64.General{Rows: nb, Cols: nb, Stride: nb, Data: make([]float64, nb*nb)},
		w:   blas64.General{Rows: nb, Cols: n, Stride: max(1, n), Data: make([]float64, nb*max(1, n))},
	}
}

// factor overwrites the upper triangle of r (N×N) by the triangular factor
// R' of [R; B], R'ᵀR' = RᵀR + BᵀB, where bt (N×mb) holds Bᵀ, and bt by the
// Householder vectors. With tri, B is upper triangular (Bᵀ lower), which
// the factorization keeps and exploits.
//
// Column c's reflector is I − τ_c v_c v_cᵀ with v_c = (e_c, b_c): its R part
// is a unit vector because R is triangular. Panels of tpqrBlock columns are
// factored recursively (Elmroth and Gustavson): the left half, its block
// reflector I − V₁T₁V₁ᵀ applied to the right half, the right half, and
// T = [T₁ −T₁(V₁ᵀV₂)T₂; 0 T₂] (V₁ᵀV₂ = B₁ᵀB₂: the unit parts are
// disjoint), so that all but tpqrLeaf-column leaves are matrix products;
// each panel's block reflector then updates the trailing columns.
func (q *tpqrWork) factor(r, bt blas64.General, tri bool) {
	n, mb := r.Rows, bt.Cols
	if mb == 0 {
		return
	}
	nb := q.t.Rows
	for c0 := 0; c0 < n; c0 += nb {
		kb := min(nb, n-c0)
		t := blas64.General{Rows: kb, Cols: kb, Stride: q.t.Stride, Data: q.t.Data}
		q.panel(r, bt, tri, c0, kb, t)
		if rest := n - c0 - kb; rest > 0 {
			q.apply(r, bt, q.rows(tri, mb, c0+kb), c0, kb, t, c0+kb, rest)
		}
	}
}

// rows returns how many rows of B the reflectors of the columns before end
// touch: all, or with tri only the first end.
func (q *tpqrWork) rows(tri bool, mb, end int) int {
	if tri {
		return min(mb, end)
	}
	return mb
}

// panel factors the columns c0 … c0+k−1 of [R; B] (no other column is
// touched) and sets t (k×k, upper) to the T of their block reflector.
func (q *tpqrWork) panel(r, bt blas64.General, tri bool, c0, k int, t blas64.General) {
	mb := bt.Cols
	if k <= tpqrLeaf {
		q.leaf(r, bt, tri, c0, k, t)
		return
	}
	k1 := k / 2
	k2 := k - k1
	t1 := blas64.General{Rows: k1, Cols: k1, Stride: t.Stride, Data: t.Data}
	t2 := blas64.General{Rows: k2, Cols: k2, Stride: t.Stride, Data: t.Data[k1*t.Stride+k1:]}
	q.panel(r, bt, tri, c0, k1, t1)
	rows1 := q.rows(tri, mb, c0+k1)
	q.apply(r, bt, rows1, c0, k1, t1, c0+k1, k2)
	q.panel(r, bt, tri, c0+k1, k2, t2)
	// T₁₂ = −T₁ (V₁ᵀV₂) T₂, V₁ᵀV₂ = B₁ᵀB₂ on the rows B₁ touches.
	bs := bt.Stride
	t12 := blas64.General{Rows: k1, Cols: k2, Stride: t.Stride, Data: t.Data[k1:]}
	v1t := blas64.General{Rows: k1, Cols: rows1, Stride: bs, Data: bt.Data[c0*bs:]}
	v2t := blas64.General{Rows: k2, Cols: rows1, Stride: bs, Data: bt.Data[(c0+k1)*bs:]}
	blas64.Gemm(blas.NoTrans, blas.Trans, 1, v1t, v2t, 0, t12)
	blas64.Trmm(blas.Left, blas.NoTrans, -1, upper(t1), t12)
	blas64.Trmm(blas.Right, blas.NoTrans, 1, upper(t2), t12)
	for i := 0; i < k2; i++ { // the lower triangle stays zero
		for j := 0; j < k1; j++ {
			t.Data[(k1+i)*t.Stride+j] = 0
		}
	}
}

// upper returns the upper triangle of the square g.
func upper(g blas64.General) blas64.Triangular {
	return blas64.Triangular{Uplo: blas.Upper, Diag: blas.NonUnit, N: g.Rows, Stride: g.Stride, Data: g.Data}
}

// leaf factors the columns c0 … c0+k−1 one reflector at a time and builds
// T column by column (LAPACK's dlarft).
func (q *tpqrWork) leaf(r, bt blas64.General, tri bool, c0, k int, t blas64.General) {
	mb := bt.Cols
	rs, bs := r.Stride, bt.Stride
	rd, bd := r.Data, bt.Data
	tau := q.tau
	for c := c0; c < c0+k; c++ {
		lim := q.rows(tri, mb, c+1)
		v := bd[c*bs : c*bs+lim]
		alpha := rd[c*rs+c]
		xnorm := floats.Norm(v, 2)
		if xnorm == 0 {
			tau[c] = 0
			continue
		}
		beta := -math.Copysign(math.Hypot(alpha, xnorm), alpha)
		tau[c] = (beta - alpha) / beta
		floats.Scale(1/(alpha-beta), v)
		rd[c*rs+c] = beta
		for cc := c + 1; cc < c0+k; cc++ {
			u := bd[cc*bs : cc*bs+lim]
			s := tau[c] * (rd[c*rs+cc] + floats.Dot(v, u))
			rd[c*rs+cc] -= s
			floats.AddScaled(u, -s, v)
		}
	}
	rows := q.rows(tri, mb, c0+k)
	var tmp [tpqrLeaf]float64
	for i := 0; i < k; i++ {
		ci := c0 + i
		vi := bd[ci*bs : ci*bs+rows]
		for p := 0; p < i; p++ {
			tmp[p] = -tau[ci] * floats.Dot(bd[(c0+p)*bs:(c0+p)*bs+rows], vi)
		}
		for p := 0; p < i; p++ {
			var s float64
			for l := p; l < i; l++ {
				s += t.Data[p*t.Stride+l] * tmp[l]
			}
			t.Data[p*t.Stride+i] = s
		}
		t.Data[i*t.Stride+i] = tau[ci]
		for p := i + 1; p < k; p++ {
			t.Data[p*t.Stride+i] = 0
		}
	}
}

// apply applies the transposed block reflector of the columns c0 … c0+k−1
// (T in t, their B parts on the first rows rows of bt) to the columns
// a … a+m−1: W = Tᵀ(R₁ + V_BᵀB₂), R₁ −= W, B₂ −= V_B W, R₁ the rows
// c0 … c0+k−1 of R.
func (q *tpqrWork) apply(r, bt blas64.General, rows, c0, k int, t blas64.General, a, m int) {
	rs, bs := r.Stride, bt.Stride
	vt := blas64.General{Rows: k, Cols: rows, Stride: bs, Data: bt.Data[c0*bs:]}
	b2t := blas64.General{Rows: m, Cols: rows, Stride: bs, Data: bt.Data[a*bs:]}
	r1 := blas64.General{Rows: k, Cols: m, Stride: rs, Data: r.Data[c0*rs+a:]}
	w := blas64.General{Rows: k, Cols: m, Stride: q.w.Stride, Data: q.w.Data}
	for i := 0; i < k; i++ {
		copy(w.Data[i*w.Stride:i*w.Stride+m], r1.Data[i*rs:i*rs+m])
	}
	if rows > 0 {
		blas64.Gemm(blas.NoTrans, blas.Trans, 1, vt, b2t, 1, w)
	}
	blas64.Trmm(blas.Left, blas.Trans, 1, upper(t), w)
	for i := 0; i < k; i++ {
		floats.Sub(r1.Data[i*rs:i*rs+m], w.Data[i*w.Stride:i*w.Stride+m])
	}
	if rows > 0 {
		blas64.Gemm(blas.Trans, blas.NoTrans, -1, w, vt, 1, b2t)
	}
}

// SolveProgram solves p by SolveRobust when pert.Eps > 0 and by Solve
// otherwise.
func SolveProgram(ctx context.Context, p *solvers.Program, pert solvers.Perturbation, o Options) (*Result, error) {
	if pert.Eps > 0 {
		return SolveRobust(ctx, p, pert, o)
	}
	return Solve(ctx, p, o)
}

// SolveToGap solves p (SolveProgram) to a certified relative gap with
// Options.Gap (the tolerance from gap/10, tightened in place while the
// certificate misses the gap, certified by cert or NewCertifier(p, pert)
// when nil) and returns the solution with its bounds; the bounds are NaN
// when there is none (no solution, or one the certifier could not bound).
func SolveToGap(ctx context.Context, p *solvers.Program, pert solvers.Perturbation, gap float64, o Options, cert *certify.Certifier) (*Result, certify.Bound, error) {
	nan := math.NaN()
	if !(gap > 0) {
		return nil, certify.Bound{Lower: nan, Upper: nan, Gap: nan, Objective: nan, Violation: nan},
			fmt.Errorf("ipm: certified gap %v, need 0 < gap ≤ 1", gap)
	}
	o.Gap, o.Certifier = gap, cert
	res, err := SolveProgram(ctx, p, pert, o)
	if res == nil || res.Bound == nil {
		return res, certify.Bound{Lower: nan, Upper: nan, Gap: nan, Objective: nan, Violation: nan}, err
	}
	return res, *res.Bound, err
}

// enoughFor is the certifier's Enough for a target certified gap: the
// multipliers are refined only as far as the target needs. An excess e of
// the largest s_j over β costs about e of relative gap (mid-size robust
// hinge: 3.32e-7 → 3.35e-7), and 200 stalled steps cost seconds there.
func enoughFor(gap float64) float64 { return gap / 2 }
