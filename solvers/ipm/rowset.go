package ipm

import (
	"math"
	"slices"

	"github.com/convexnn/convexnn/solvers"
	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/gonum/mat"
)

// rowSet is SolvePooled's working set of constraint rows. A pooled program
// (the CNN's, on stacked patches) has tens of thousands of rows on groups
// of a few entries, and at its optimum only a few rows per group are
// active. The method solves the program on a set of rows, checks every
// row, adds those its weights violate and solves again, until no row is
// violated: the last solve is then the whole program's optimum, since its
// program is a relaxation of the whole one whose optimum is feasible for
// it, and its multipliers, zero on the rows left out, are the whole
// program's.
//
// The first set holds, for each pattern i, the rowSetStart·d rows nearest
// the boundary of its cone {u : (2D_i − I)Xu ≥ 0} seen from the cone's
// central direction c_i = Σ_r s_ir x_r/‖x_r‖ (s_ir = ±1 the pattern's
// sign): the rows of least s_ir x_rᵀc_i/‖x_r‖. A round adds, for each
// group u_j, up to rowSetAdd·d rows of largest relative violation
// −s_ir x_rᵀu_j/(‖x_r‖‖u_j‖) above the tolerance.
type rowSet struct {
	x    *mat.Dense       // the distinct rows
	d    solvers.Patterns // their patterns
	norm []float64        // ‖x_r‖
	sel  []int            // the rows in the set, increasing
	in   []bool
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

// newRowSet returns the first working set of the rows x with patterns d
// (all rows when they are few).
func newRowSet(x *mat.Dense, d solvers.Patterns, tol float64) *rowSet {
	nr, dim := x.Dims()
	np := len(d)
	ws := &rowSet{x: x, d: d, norm: make([]float64, nr), in: make([]bool, nr), tol: tol}
	for r := range nr {
		ws.norm[r] = blas64.Nrm2(blas64.Vector{N: dim, Inc: 1, Data: x.RawRowView(r)})
	}
	k0 := rowSetStart * dim
	if nr <= 2*k0*np {
		for r := range nr {
			ws.add(r)
		}
		ws.sort()
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
		ws.addLeast(idx, key, k0)
	}
	ws.sort()
	return ws
}

func (ws *rowSet) add(r int) {
	if !ws.in[r] {
		ws.in[r] = true
		ws.sel = append(ws.sel, r)
	}
}

func (ws *rowSet) sort() { slices.Sort(ws.sel) }

// addLeast adds the k rows of idx with the least key.
func (ws *rowSet) addLeast(idx []int, key []float64, k int) {
	if len(idx) > k {
		slices.SortFunc(idx, func(a, b int) int {
			switch {
			case key[a] < key[b]:
				return -1
			case key[a] > key[b]:
				return 1
			}
			return a - b
		})
		idx = idx[:k]
	}
	for _, r := range idx {
		ws.add(r)
	}
}

// rows returns the rows of the set.
func (ws *rowSet) rows() *mat.Dense {
	_, dim := ws.x.Dims()
	out := mat.NewDense(len(ws.sel), dim, nil)
	for g, r := range ws.sel {
		copy(out.RawRowView(g), ws.x.RawRowView(r))
	}
	return out
}

// patterns returns the patterns on the rows of the set.
func (ws *rowSet) patterns() solvers.Patterns {
	out := make(solvers.Patterns, len(ws.d))
	for i, di := range ws.d {
		out[i] = make(solvers.Pattern, len(ws.sel))
		for g, r := range ws.sel {
			out[i][g] = di[r]
		}
	}
	return out
}

// grow adds the rows the weights wt violate (see rowSet) and reports
// whether it added any.
func (ws *rowSet) grow(wt solvers.Weights) bool {
	nr, dim := ws.x.Dims()
	if len(ws.sel) == nr {
		return false
	}
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
	before := len(ws.sel)
	idx := make([]int, 0, nr)
	key := make([]float64, nr)
	for j := 0; j < 2*np; j++ {
		if !(unorm[j] > rowSetZero*big) {
			continue // zero, or numerically zero (its violations are rounding)
		}
		di := ws.d[j%np]
		idx = idx[:0]
		for r := range nr {
			if ws.in[r] || ws.norm[r] == 0 {
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
		ws.addLeast(idx, key, rowSetAdd*dim)
	}
	ws.sort()
	return len(ws.sel) > before
}
