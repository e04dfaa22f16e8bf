package ipm

import (
	"math"
	"slices"

	"github.com/convexnn/convexnn/solvers"
	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/gonum/mat"
)

// rowSet is SolvePooled's working set of constraint rows, one set per
// pattern. A pooled program (the CNN's, on stacked patches) has tens of
// thousands of rows on groups of a few entries, and at its optimum only a
// few rows per group are active (at most d − 1 on a nonzero group). The
// method solves the program on each pattern's set of rows, checks every
// row, adds those the weights violate and solves again, until no row is
// violated: the last solve is then the whole program's optimum, since its
// program is a relaxation of the whole one whose optimum is feasible for
// it, and its multipliers, zero on the rows left out, are the whole
// program's.
//
// Pattern i's first set holds the rowSetStart·d rows nearest the boundary
// of its cone {u : (2D_i − I)Xu ≥ 0} seen from the cone's central
// direction c_i = Σ_r s_ir x_r/‖x_r‖ (s_ir = ±1 the pattern's sign): the
// rows of least s_ir x_rᵀc_i/‖x_r‖. A round adds, for each group u_j of
// pattern i, up to rowSetAdd·d rows of largest relative violation
// −s_ir x_rᵀu_j/(‖x_r‖‖u_j‖) above the tolerance.
type rowSet struct {
	x    *mat.Dense       // the distinct rows
	d    solvers.Patterns // their patterns
	norm []float64        // ‖x_r‖
	sel  [][]int          // per pattern the rows in its set, increasing
	in   [][]bool
	all  bool    // every pattern holds every row
	tol  float64 // the relative violation a row may keep
}

const (
	rowSetStart = 8 // first rows per pattern, per entry of a row
	rowSetAdd   = 8 // rows added per group and round, per entry
	// rowSetZero is the relative norm below which a group is numerically
	// zero: the method's absolute residuals make its relative violations
	// meaningless, and it adds nothing to the objective.
	rowSetZero = 1e-9
)

// newRowSet returns the first working sets of the rows x with patterns d
// (every row when they are few): pattern i's the rows from[i] when i <
// len(from) and from[i] is not nil, else those of least margin (see
// rowSet).
func newRowSet(x *mat.Dense, d solvers.Patterns, tol float64, from [][]int) *rowSet {
	nr, dim := x.Dims()
	np := len(d)
	ws := &rowSet{x: x, d: d, norm: make([]float64, nr), sel: make([][]int, np), in: make([][]bool, np), tol: tol}
	for r := range nr {
		ws.norm[r] = blas64.Nrm2(blas64.Vector{N: dim, Inc: 1, Data: x.RawRowView(r)})
	}
	for i := range np {
		ws.in[i] = make([]bool, nr)
	}
	k0 := rowSetStart * dim
	if nr <= 2*k0 {
		ws.all = true
		for i := range np {
			for r := range nr {
				ws.add(i, r)
			}
		}
		return ws
	}
	// The central directions c_i, then the margins of every row on them.
	c := mat.NewDense(dim, np, nil)
	for r := range nr {
		if ws.norm[r] == 0 {
			continue
		}
		row := x.RawRowView(r)
		for i, di := range d {
			s := 1 / ws.norm[r]
			if !di[r] {
				s = -s
			}
			for l, v := range row {
				c.Set(l, i, c.At(l, i)+s*v)
			}
		}
	}
	margins := mat.NewDense(nr, np, nil)
	margins.Mul(x, c)
	idx := make([]int, 0, nr)
	key := make([]float64, nr)
	for i, di := range d {
		if i < len(from) && from[i] != nil {
			for _, r := range from[i] {
				ws.add(i, r)
			}
			slices.Sort(ws.sel[i])
			continue
		}
		idx = idx[:0]
		for r := range nr {
			if ws.norm[r] == 0 {
				continue
			}
			m := margins.At(r, i) / ws.norm[r]
			if !di[r] {
				m = -m
			}
			key[r] = m
			idx = append(idx, r)
		}
		ws.addLeast(i, idx, key, k0)
	}
	return ws
}

func (ws *rowSet) add(i, r int) {
	if !ws.in[i][r] {
		ws.in[i][r] = true
		ws.sel[i] = append(ws.sel[i], r)
	}
}

// addLeast adds to pattern i's set the k rows of idx with the least key.
func (ws *rowSet) addLeast(i int, idx []int, key []float64, k int) {
	for _, r := range solvers.Least(idx, key, k) {
		ws.add(i, r)
	}
	slices.Sort(ws.sel[i])
}

// program returns the program on the sets' rows, stacked pattern by
// pattern, and each pattern's number of rows (for newNetConeRagged).
func (ws *rowSet) program(y []float64, loss solvers.Loss, beta float64) (*solvers.Program, []int) {
	_, dim := ws.x.Dims()
	counts := make([]int, len(ws.sel))
	total := 0
	for i, s := range ws.sel {
		counts[i] = len(s)
		total += len(s)
	}
	x := mat.NewDense(total, dim, nil)
	d := make(solvers.Patterns, len(ws.d))
	for i := range d {
		d[i] = make(solvers.Pattern, total)
	}
	at := 0
	for i, s := range ws.sel {
		for _, r := range s {
			copy(x.RawRowView(at), ws.x.RawRowView(r))
			d[i][at] = ws.d[i][r]
			at++
		}
	}
	return &solvers.Program{X: x, Y: y, D: d, Loss: loss, Beta: beta}, counts
}

// size returns the number of rows in the sets.
func (ws *rowSet) size() int {
	n := 0
	for _, s := range ws.sel {
		n += len(s)
	}
	return n
}

// grow adds the rows the weights wt violate (see rowSet) and reports
// whether it added any.
func (ws *rowSet) grow(wt solvers.Weights) bool {
	if ws.all {
		return false
	}
	nr, dim := ws.x.Dims()
	np := len(ws.d)
	u := mat.NewDense(dim, 2*np, nil)
	unorm := make([]float64, 2*np)
	for i := 0; i < np; i++ {
		u.SetCol(i, wt.V.RawRowView(i))
		u.SetCol(np+i, wt.W.RawRowView(i))
		unorm[i] = blas64.Nrm2(blas64.Vector{N: dim, Inc: 1, Data: wt.V.RawRowView(i)})
		unorm[np+i] = blas64.Nrm2(blas64.Vector{N: dim, Inc: 1, Data: wt.W.RawRowView(i)})
	}
	big := 0.0
	for _, v := range unorm {
		big = math.Max(big, v)
	}
	z := mat.NewDense(nr, 2*np, nil)
	zr, xr, ur := z.RawMatrix(), ws.x.RawMatrix(), u.RawMatrix()
	blas64.Gemm(blas.NoTrans, blas.NoTrans, 1, xr, ur, 0, zr)
	before := ws.size()
	idx := make([]int, 0, nr)
	key := make([]float64, nr)
	for j := 0; j < 2*np; j++ {
		if !(unorm[j] > rowSetZero*big) {
			continue // zero, or numerically zero (its violations are rounding)
		}
		i := j % np
		di, in := ws.d[i], ws.in[i]
		idx = idx[:0]
		for r := range nr {
			if in[r] || ws.norm[r] == 0 {
				continue
			}
			v := zr.Data[r*zr.Stride+j] / (ws.norm[r] * unorm[j])
			if di[r] {
				v = -v
			}
			if v > ws.tol {
				key[r] = -v
				idx = append(idx, r)
			}
		}
		ws.addLeast(i, idx, key, rowSetAdd*dim)
	}
	return ws.size() > before
}
