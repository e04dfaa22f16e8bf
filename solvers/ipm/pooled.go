package ipm

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/convexnn/convexnn/solvers"
	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/gonum/floats"
	"gonum.org/v1/gonum/mat"
)

// SolvePooled solves the two-layer program of eq. (convex_general) whose
// predictions pool over the rows of a stacked data matrix: X (nr×d) stacks
// fold blocks of n rows (block c, row k: the c-th row of sample k), the
// patterns D_i are over its nr rows, and
//
//	min ℓ(Σ_i (1/fold) S (D_iX(v_i − w_i)), y) + β Σ_i (‖v_i‖₂ + ‖w_i‖₂)
//	s.t. (2D_i − I)Xv_i ≥ 0, (2D_i − I)Xw_i ≥ 0,
//
// where S sums the fold blocks (ŷ_k is the mean over sample k's rows).
// With the patches of images as the rows this is the two-layer CNN with
// global average pooling (Ergen & Pilanci; solvers/cnn); fold = 1 is Solve's
// program. The method and its structured KKT solver are Solve's: group j's
// constraint rows add Xᵀdiag(ω_j)X to a d×d block and the pooled
// predictions couple the groups through F (n×dP), so an iteration costs
// about 2P·2(nr + d)d² + 2·min(n, dP)(dP)² flops, linear in the number of
// constraint rows, where a dense cone program would hold 2P·nr × 2Pd
// entries. Rows that repeat with the same pattern entries (the blank
// patches of digits) are the same constraint: the cone program keeps one
// of each, and F, which needs them all, enters through F_vᵀ (dP×n). Of the
// distinct rows, tens of thousands on filters of ten entries, only a few
// per group are active at the optimum (at most d − 1 where the group is
// nonzero): each pattern holds a working set of them (rowSet), solved
// again with the rows its solution violates until it violates none, so
// the last solve is the whole program's optimum (2000 digits at 14×14, 16
// patterns: about 550 of 47 249 rows per pattern, seven solves, 2.2 s
// instead of 96 s for one solve on every row). Iterations counts the
// iterations of every solve; MaxIter bounds each. The squared and hinge losses only. The Result's
// Dual has the multipliers of all nr rows (Alpha 2P×nr; a repeated row's
// on its first occurrence, zero on the rows left out) and no Bound:
// solvers/cnn certifies through the general program. When ctx ends a
// solve, its iterate is returned with ctx's error; it may violate rows
// left out of the set.
func SolvePooled(ctx context.Context, x *mat.Dense, fold int, d solvers.Patterns, y []float64, loss solvers.Loss, beta float64, o Options) (*Result, error) {
	return SolvePooledFrom(ctx, x, fold, d, y, loss, beta, nil, o)
}

// RowStart is where a pattern's working set of constraint rows starts
// (SolvePooledFrom, SolveRows): the rows Rows when not nil (a Result's
// Rows, say, after more patterns were added: a solve from the rows an
// earlier one ended with needs fewer rounds); else, when Dir is not nil,
// the rows of least relative margin along the direction Dir (a filter
// inside the pattern's cone: the one that generated the pattern); else
// those along the cone's central direction (see rowSet).
type RowStart struct {
	Rows []int
	Dir  []float64
}

// checkStarts checks the starts of the working sets of np patterns with
// nr candidate rows of dim entries.
func checkStarts(who string, start []RowStart, np, nr, dim int) error {
	if len(start) > np {
		return fmt.Errorf("%s: starting rows for %d patterns, there are %d", who, len(start), np)
	}
	for i, s := range start {
		for _, r := range s.Rows {
			if r < 0 || r >= nr {
				return fmt.Errorf("%s: starting row %d of pattern %d: there are %d rows", who, r, i, nr)
			}
		}
		if s.Dir != nil {
			if len(s.Dir) != dim {
				return fmt.Errorf("%s: pattern %d's starting direction has %d entries, rows have %d", who, i, len(s.Dir), dim)
			}
			if err := solvers.CheckFinite(fmt.Sprintf("%s: pattern %d's starting direction", who, i), mat.NewDense(1, dim, s.Dir)); err != nil {
				return err
			}
		}
	}
	return nil
}

// SolvePooledFrom is SolvePooled with pattern i's working set starting
// as starts[i] says (when i < len(starts); rows of X). The Result's Rows
// are the rows each pattern's set ended with.
func SolvePooledFrom(ctx context.Context, x *mat.Dense, fold int, d solvers.Patterns, y []float64, loss solvers.Loss, beta float64, starts []RowStart, o Options) (*Result, error) {
	start := time.Now()
	if x == nil {
		return nil, errors.New("ipm: SolvePooled: no data matrix X")
	}
	if err := solvers.CheckFinite("ipm: SolvePooled: X", x); err != nil {
		return nil, err
	}
	nr, dim := x.Dims()
	n := len(y)
	switch {
	case n == 0:
		return nil, errors.New("ipm: SolvePooled: no labels y")
	case fold < 1 || nr != fold*n:
		return nil, fmt.Errorf("ipm: SolvePooled: X has %d rows, need fold·n = %d·%d", nr, fold, n)
	case len(d) == 0:
		return nil, errors.New("ipm: SolvePooled: no activation patterns")
	case !(beta > 0) || beta > 1e300:
		return nil, fmt.Errorf("ipm: SolvePooled: β = %v, need 0 < β < ∞", beta)
	}
	for i, di := range d {
		if len(di) != nr {
			return nil, fmt.Errorf("ipm: SolvePooled: pattern %d has %d entries, X has %d rows", i, len(di), nr)
		}
	}
	o, err := o.resolveCone(loss, "ipm: SolvePooled solves the squared and hinge losses (second-order cone programs), not the %v loss")
	if err != nil {
		return nil, err
	}
	if err := loss.CheckLabels(y); err != nil {
		return nil, fmt.Errorf("ipm: SolvePooled: %w", err)
	}
	np := len(d)
	if err := checkStarts("ipm: SolvePooled", starts, np, nr, dim); err != nil {
		return nil, err
	}
	xg, dg, first, of := distinctRows(x, d)
	ng := len(first)
	need, what := netConeMemory(ng, n, dim, np)
	if err := o.fits(need, what, "use fewer patterns, or ADMM"); err != nil {
		return nil, err
	}
	// F_vᵀ (dP×n): column k sums the pattern's rows of sample k, over its
	// fold blocks, divided by fold.
	dp := dim * np
	fvt := blas64.General{Rows: dp, Cols: n, Stride: n, Data: make([]float64, dp*n)}
	pool := 1 / float64(fold)
	for r := 0; r < nr; r++ {
		k, row := r%n, x.RawRowView(r)
		for i, di := range d {
			if di[r] {
				for l, v := range row {
					fvt.Data[(i*dim+l)*n+k] += pool * v
				}
			}
		}
	}
	// The constraint rows are a working set of the distinct rows (rowSet):
	// each round solves the program on its rows, then adds the rows its
	// weights violate, until they violate none.
	from := make([]RowStart, len(starts))
	for i, st := range starts {
		from[i].Dir = st.Dir
		if st.Rows != nil {
			from[i].Rows = make([]int, len(st.Rows))
			for a, r := range st.Rows {
				from[i].Rows[a] = of[r]
			}
		}
	}
	xs := make([]*mat.Dense, np)
	for i := range xs {
		xs[i] = xg // every pattern's candidates are the distinct rows
	}
	ws := newRowSet(xs, dg, o.Tol, from)
	res, nc, sol, err := solveRowSets(ctx, ws, fvt, y, loss, beta, need, o)
	if res == nil {
		return nil, err
	}
	if len(sol.z) == nc.m {
		// The multipliers of the distinct rows go to their first
		// occurrences (a repeated row's multipliers only count summed).
		h := nc.dual(sol.z)
		a := mat.NewDense(2*np, nr, nil)
		for j := 0; j < 2*np; j++ {
			lo, _ := nc.rowsOf(j)
			for g, r := range ws.sel[j%np] {
				a.Set(j, first[r], sol.z[lo+g])
			}
		}
		h.Alpha = a
		res.Dual = h
	}
	for _, ri := range res.Rows {
		for a, r := range ri {
			ri[a] = first[r]
		}
	}
	res.Seconds = time.Since(start).Seconds()
	return res, err
}

// SolveRows solves the two-layer program whose pattern i holds its own
// constraint rows R_i (rows[i], m×d with the same m for every pattern):
//
//	min ℓ(F_v(v − w), y) + β Σ_i (‖v_i‖₂ + ‖w_i‖₂)
//	s.t. R_i v_i ≥ 0, R_i w_i ≥ 0,
//
// with F_v given as fvt = F_vᵀ (dP×n). The two-layer CNN with max pooling
// is one (solvers/cnn: R_i the signed winning patch and the winner's
// differences with the other patches, F_v the signed winning patches).
// The method is SolvePooled's: each pattern's rows a working set (rowSet)
// as starts[i] says (when i < len(starts); else the rows of least margin
// on the cone's central direction), solved
// again with the rows the solution violates until it violates none. The
// Result's Dual holds the multipliers of every row (Alpha 2P×m, zero on
// the rows left out) and, for the hinge loss, the loss dual; Rows the
// rows each pattern's set ended with. The squared and hinge losses only.
func SolveRows(ctx context.Context, rows []*mat.Dense, fvt *mat.Dense, y []float64, loss solvers.Loss, beta float64, starts []RowStart, o Options) (*Result, error) {
	start := time.Now()
	n, np := len(y), len(rows)
	switch {
	case n == 0:
		return nil, errors.New("ipm: SolveRows: no labels y")
	case np == 0:
		return nil, errors.New("ipm: SolveRows: no patterns")
	case fvt == nil:
		return nil, errors.New("ipm: SolveRows: no F_vᵀ")
	case !(beta > 0) || beta > 1e300:
		return nil, fmt.Errorf("ipm: SolveRows: β = %v, need 0 < β < ∞", beta)
	}
	m, dim := rows[0].Dims()
	for i, r := range rows {
		if rm, rd := r.Dims(); rm != m || rd != dim {
			return nil, fmt.Errorf("ipm: SolveRows: pattern %d has %d×%d rows, pattern 0 %d×%d", i, rm, rd, m, dim)
		}
		if err := solvers.CheckFinite(fmt.Sprintf("ipm: SolveRows: rows of pattern %d", i), r); err != nil {
			return nil, err
		}
	}
	if fr, fc := fvt.Dims(); fr != dim*np || fc != n {
		return nil, fmt.Errorf("ipm: SolveRows: F_vᵀ is %d×%d, need dP×n = %d×%d", fr, fc, dim*np, n)
	}
	if err := solvers.CheckFinite("ipm: SolveRows: F_vᵀ", fvt); err != nil {
		return nil, err
	}
	if err := checkStarts("ipm: SolveRows", starts, np, m, dim); err != nil {
		return nil, err
	}
	o, err := o.resolveCone(loss, "ipm: SolveRows solves the squared and hinge losses (second-order cone programs), not the %v loss")
	if err != nil {
		return nil, err
	}
	if err := loss.CheckLabels(y); err != nil {
		return nil, fmt.Errorf("ipm: SolveRows: %w", err)
	}
	need, what := netConeMemory(m, n, dim, np)
	if err := o.fits(need, what, "use fewer patterns, or ADMM"); err != nil {
		return nil, err
	}
	signs := make(solvers.Patterns, np)
	for i := range signs {
		signs[i] = make(solvers.Pattern, m)
		for r := range signs[i] {
			signs[i][r] = true
		}
	}
	ws := newRowSet(rows, signs, o.Tol, starts)
	res, nc, sol, err := solveRowSets(ctx, ws, fvt.RawMatrix(), y, loss, beta, need, o)
	if res == nil {
		return nil, err
	}
	if len(sol.z) == nc.m {
		h := nc.dual(sol.z)
		a := mat.NewDense(2*np, m, nil)
		for j := 0; j < 2*np; j++ {
			lo, _ := nc.rowsOf(j)
			for g, r := range ws.sel[j%np] {
				a.Set(j, r, sol.z[lo+g])
			}
		}
		h.Alpha = a
		res.Dual = h
	}
	res.Seconds = time.Since(start).Seconds()
	return res, err
}

// solveRowSets solves the program with pattern i's constraint rows the
// working set ws.sel[i] of its candidates ws.x[i], F_v by fvt, adding the
// rows its solution violates until it violates none (rowSet). It returns
// the result (without Dual; Rows in candidate indices), the last solve's
// cone program and solution, and the error the last solve ended with.
func solveRowSets(ctx context.Context, ws *rowSet, fvt blas64.General, y []float64, loss solvers.Loss, beta float64, need int64, o Options) (*Result, *netCone, *coneSolution, error) {
	np := len(ws.d)
	_, dim := ws.x[0].Dims()
	shared := true // every pattern's candidates the same rows: uniform when all are in
	for _, x := range ws.x {
		shared = shared && x == ws.x[0]
	}
	var (
		p     *solvers.Program
		nc    *netCone
		sol   *coneSolution
		iters int
		err   error
	)
	for {
		if ws.all && shared {
			p = &solvers.Program{X: ws.x[0], Y: y, D: ws.d, Loss: loss, Beta: beta}
			nc = newNetConeLoss(p, &fvt)
		} else {
			var counts []int
			p, counts = ws.program(y, loss, beta)
			nc = newNetConeRagged(p, counts, &fvt)
		}
		nc.planFactor(need, o)
		sol, err = solveCone(ctx, nc.problem(), o)
		if sol == nil {
			return nil, nil, nil, err
		}
		iters += sol.iters
		if err != nil || sol.status == PrimalInfeasible || sol.status == DualInfeasible || !ws.grow(groupWeights(p, sol.x)) {
			break
		}
	}
	// The objective at the weights, with F_v's predictions.
	objective := func(wt solvers.Weights) (float64, error) {
		u := make([]float64, nc.nu)
		for i := 0; i < np; i++ {
			copy(u[i*dim:(i+1)*dim], wt.V.RawRowView(i))
			copy(u[(np+i)*dim:(np+i+1)*dim], wt.W.RawRowView(i))
		}
		nc.fuOf(u, false)
		var reg float64
		for j := 0; j < nc.ng; j++ {
			reg += floats.Norm(u[j*dim:(j+1)*dim], 2)
		}
		return loss.Value(nc.fu, y) + beta*reg, nil
	}
	res := &Result{Status: sol.status, Gap: sol.relgap, Iterations: iters}
	err = res.finish(p, "program", sol.x, objective, err)
	res.Rows = make([][]int, np)
	for i, sel := range ws.sel {
		res.Rows[i] = slices.Clone(sel)
	}
	return res, nc, sol, err
}

// distinctRows returns the distinct rows of x with their pattern entries
// (a row is a repeat when its values and its entry in every pattern
// agree), their patterns, for each the index of its first occurrence, and
// for every row of x the index of its distinct row.
func distinctRows(x *mat.Dense, d solvers.Patterns) (*mat.Dense, solvers.Patterns, []int, []int) {
	nr, dim := x.Dims()
	of := make([]int, nr)
	key := make([]byte, 8*dim+(len(d)+7)/8)
	seen := make(map[string]int, nr)
	var first []int
	for r := 0; r < nr; r++ {
		for l, v := range x.RawRowView(r) {
			binary.LittleEndian.PutUint64(key[8*l:], math.Float64bits(v))
		}
		bits := key[8*dim:]
		clear(bits)
		for i, di := range d {
			if di[r] {
				bits[i/8] |= 1 << (i % 8)
			}
		}
		if g, ok := seen[string(key)]; ok {
			of[r] = g
			continue
		}
		of[r] = len(first)
		seen[string(key)] = len(first)
		first = append(first, r)
	}
	xg := mat.NewDense(len(first), dim, nil)
	dg := make(solvers.Patterns, len(d))
	for i := range dg {
		dg[i] = make(solvers.Pattern, len(first))
	}
	for g, r := range first {
		copy(xg.RawRowView(g), x.RawRowView(r))
		for i, di := range d {
			dg[i][g] = di[r]
		}
	}
	return xg, dg, first, of
}
