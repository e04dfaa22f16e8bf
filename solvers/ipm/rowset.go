package ipm

import (
	"math"
	"slices"

	"github.com/convexnn/convexnn/solvers"
	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/gonum/floats"
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
// of its cone {u : (2D_i − I)Xu ≥ 0} seen from a direction c_i inside it:
// the rows of least s_ir x_rᵀc_i/‖x_r‖ (s_ir = ±1 the pattern's sign). c_i
// is the filter that generated the pattern when the caller knows it
// (RowStart.Dir), else the cone's central direction Σ_r s_ir x_r/‖x_r‖. A round adds, for each group u_j of
// pattern i, up to rowSetAdd·d rows of largest relative violation
// −s_ir x_rᵀu_j/(‖x_r‖‖u_j‖) above the tolerance.
type rowSet struct {
	x    []*mat.Dense     // per pattern its candidate rows (patterns may share them)
	d    solvers.Patterns // per pattern the signs of its rows (true: +1)
	norm [][]float64      // per pattern ‖x_r‖ (shared with x)
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

// newRowSet returns the first working sets of pattern i's candidate rows
// x[i] with signs d[i] (every row when they are few): as start[i] says
// when i < len(start) (see RowStart), else the rows of least margin on the
// cone's central direction (see rowSet).
func newRowSet(x []*mat.Dense, d solvers.Patterns, tol float64, start []RowStart) *rowSet {
	np := len(d)
	ws := &rowSet{x: x, d: d, norm: make([][]float64, np), sel: make([][]int, np), in: make([][]bool, np), tol: tol}
	_, dim := x[0].Dims()
	k0 := rowSetStart * dim
	ws.all = true
	for i, xi := range x {
		if i > 0 && xi == x[i-1] {
			ws.norm[i] = ws.norm[i-1]
		} else {
			nr, _ := xi.Dims()
			ws.norm[i] = make([]float64, nr)
			for r := range nr {
				ws.norm[i][r] = blas64.Nrm2(blas64.Vector{N: dim, Inc: 1, Data: xi.RawRowView(r)})
			}
		}
		ws.in[i] = make([]bool, len(ws.norm[i]))
		ws.all = ws.all && len(ws.norm[i]) <= 2*k0
	}
	if ws.all {
		for i := range np {
			for r := range ws.norm[i] {
				ws.add(i, r)
			}
		}
		return ws
	}
	c := make([]float64, dim)
	var idx []int
	var key, m []float64
	for i, di := range d {
		var st RowStart
		if i < len(start) {
			st = start[i]
		}
		if st.Rows != nil {
			for _, r := range st.Rows {
				ws.add(i, r)
			}
			slices.Sort(ws.sel[i])
			continue
		}
		xi, norm := x[i], ws.norm[i]
		nr := len(norm)
		if st.Dir != nil {
			copy(c, st.Dir)
		} else { // the central direction c_i
			clear(c)
			for r := range nr {
				if norm[r] == 0 {
					continue
				}
				s := 1 / norm[r]
				if !di[r] {
					s = -s
				}
				floats.AddScaled(c, s, xi.RawRowView(r))
			}
		}
		// The relative margins of the rows on c.
		m = slices.Grow(m[:0], nr)[:nr]
		mat.NewVecDense(nr, m).MulVec(xi, mat.NewVecDense(dim, c))
		idx, key = idx[:0], slices.Grow(key[:0], nr)[:nr]
		for r := range nr {
			if norm[r] == 0 {
				continue
			}
			key[r] = m[r] / norm[r]
			if !di[r] {
				key[r] = -key[r]
			}
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
	_, dim := ws.x[0].Dims()
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
			copy(x.RawRowView(at), ws.x[i].RawRowView(r))
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
	_, dim := ws.x[0].Dims()
	np := len(ws.d)
	unorm := make([]float64, 2*np)
	for i := 0; i < np; i++ {
		unorm[i] = blas64.Nrm2(blas64.Vector{N: dim, Inc: 1, Data: wt.V.RawRowView(i)})
		unorm[np+i] = blas64.Nrm2(blas64.Vector{N: dim, Inc: 1, Data: wt.W.RawRowView(i)})
	}
	big := 0.0
	for _, v := range unorm {
		big = math.Max(big, v)
	}
	before := ws.size()
	var idx []int
	var key, z []float64
	for j := 0; j < 2*np; j++ {
		if !(unorm[j] > rowSetZero*big) {
			continue // zero, or numerically zero (its violations are rounding)
		}
		i := j % np
		di, in, norm := ws.d[i], ws.in[i], ws.norm[i]
		nr := len(norm)
		uj := wt.V.RawRowView(i)
		if j >= np {
			uj = wt.W.RawRowView(i)
		}
		z = slices.Grow(z[:0], nr)[:nr]
		blas64.Gemv(blas.NoTrans, 1, ws.x[i].RawMatrix(), blas64.Vector{N: dim, Inc: 1, Data: uj}, 0, blas64.Vector{N: nr, Inc: 1, Data: z})
		idx, key = idx[:0], slices.Grow(key[:0], nr)[:nr]
		for r := range nr {
			if in[r] || norm[r] == 0 {
				continue
			}
			v := z[r] / (norm[r] * unorm[j])
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
