package ipm

import (
	"errors"
	"math"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/gonum/floats"
	"gonum.org/v1/gonum/lapack/lapack64"
	"gonum.org/v1/gonum/mat"
)

// denseQP are the operators and the KKT solver of a dense ConeQP: the
// normal matrix H = Q + GᵀW⁻²G + AᵀA is factored as LLᵀ, and with equality
// constraints also the Schur complement S = AH⁻¹Aᵀ. (Adding AᵀA keeps H
// positive definite when Q + GᵀW⁻²G is singular on the null space of A and
// changes nothing on solutions, which have Ax = b.)
type denseQP struct {
	p         *ConeQP
	nx, ny, m int
	wg        blas64.General // n×m, row i = W⁻¹(column i of G)
	h, hs     blas64.Symmetric
	hl        blas64.Triangular
	hiat      blas64.General // H⁻¹Aᵀ
	sc        blas64.Symmetric
	sl        blas64.Triangular
	w         *ntScaling
	tz        []float64
	tx, ty    []float64
	rows      *sparseRows // G by rows when ConeQP.SparseG (then wg stays empty)
}

// sparseRows is a matrix by rows: row r's nonzeros are in columns
// idx[start[r]:start[r+1]] with values val[start[r]:start[r+1]].
type sparseRows struct {
	start []int
	idx   []int
	val   []float64
}

func newSparseRows(g *mat.Dense) *sparseRows {
	m, _ := g.Dims()
	sr := &sparseRows{start: make([]int, m+1)}
	for r := 0; r < m; r++ {
		for c, v := range g.RawRowView(r) {
			if v != 0 {
				sr.idx = append(sr.idx, c)
				sr.val = append(sr.val, v)
			}
		}
		sr.start[r+1] = len(sr.idx)
	}
	return sr
}

// mul sets out = αGx + β·out.
func (sr *sparseRows) mul(out, x []float64, alpha, beta float64) {
	for r := range out {
		var s float64
		for e := sr.start[r]; e < sr.start[r+1]; e++ {
			s += sr.val[e] * x[sr.idx[e]]
		}
		if beta == 0 {
			out[r] = alpha * s
		} else {
			out[r] = alpha*s + beta*out[r]
		}
	}
}

// mulT sets out = αGᵀz + β·out.
func (sr *sparseRows) mulT(out, z []float64, alpha, beta float64) {
	if beta == 0 {
		clear(out)
	} else if beta != 1 {
		floats.Scale(beta, out)
	}
	for r := 0; r+1 < len(sr.start); r++ {
		a := alpha * z[r]
		if a == 0 {
			continue
		}
		for e := sr.start[r]; e < sr.start[r+1]; e++ {
			out[sr.idx[e]] += a * sr.val[e]
		}
	}
}

// normal sets the lower triangle of h to GᵀW⁻²G: over each orthant row r
// the outer product of its nonzeros divided by d_r², over each
// second-order cone the Gram matrix of W_j⁻¹ times the block's rows,
// restricted to the columns they use.
func (sr *sparseRows) normal(w *ntScaling, h blas64.Symmetric) {
	clear(h.Data)
	L := w.k.Orthant
	for r := 0; r < L; r++ {
		s := 1 / (w.d[r] * w.d[r])
		lo, hi := sr.start[r], sr.start[r+1]
		for a := lo; a < hi; a++ { // columns ascend along a row
			ia, va := sr.idx[a], s*sr.val[a]
			row := h.Data[ia*h.Stride:]
			for b := lo; b <= a; b++ {
				row[sr.idx[b]] += va * sr.val[b]
			}
		}
	}
	off := L
	pos := map[int]int{}
	for j, q := range w.k.SOC {
		clear(pos)
		var cols []int
		for r := off; r < off+q; r++ {
			for e := sr.start[r]; e < sr.start[r+1]; e++ {
				if _, ok := pos[sr.idx[e]]; !ok {
					pos[sr.idx[e]] = len(cols)
					cols = append(cols, sr.idx[e])
				}
			}
		}
		// m[c] = W_j⁻¹ (column c of the block's rows).
		m := make([][]float64, len(cols))
		for c := range m {
			m[c] = make([]float64, q)
		}
		for r := off; r < off+q; r++ {
			for e := sr.start[r]; e < sr.start[r+1]; e++ {
				m[pos[sr.idx[e]]][r-off] = sr.val[e]
			}
		}
		for c := range m {
			jReflect(m[c], w.v[off-L:off-L+q], 1/w.beta[j])
		}
		for a, ia := range cols {
			for b, ib := range cols {
				if ib <= ia {
					h.Data[ia*h.Stride+ib] += floats.Dot(m[a], m[b])
				}
			}
		}
		off += q
	}
}

func newDenseQP(p *ConeQP) *denseQP {
	nx, m := len(p.C), p.K.Dim()
	ny := len(p.B)
	sym := func(n int) blas64.Symmetric {
		return blas64.Symmetric{N: n, Stride: max(1, n), Uplo: blas.Lower, Data: make([]float64, n*n)}
	}
	q := &denseQP{p: p, nx: nx, ny: ny, m: m,
		h: sym(nx), hs: sym(nx),
		tz: make([]float64, m), tx: make([]float64, nx), ty: make([]float64, ny),
	}
	if p.SparseG {
		q.rows = newSparseRows(p.G)
	} else {
		q.wg = blas64.General{Rows: nx, Cols: m, Stride: max(1, m), Data: make([]float64, nx*m)}
	}
	if ny > 0 {
		q.hiat = blas64.General{Rows: nx, Cols: ny, Stride: ny, Data: make([]float64, nx*ny)}
		q.sc = sym(ny)
	}
	return q
}

func (q *denseQP) mulQ(out, x []float64) {
	if q.p.Q == nil {
		clear(out)
		return
	}
	blas64.Symv(1, q.p.Q.RawSymmetric(), vec(x), 0, vec(out))
}

func (q *denseQP) mulG(out, x []float64, alpha, beta float64) {
	if q.rows != nil {
		q.rows.mul(out, x, alpha, beta)
		return
	}
	blas64.Gemv(blas.NoTrans, alpha, q.p.G.RawMatrix(), vec(x), beta, vec(out))
}

func (q *denseQP) mulGT(out, z []float64, alpha, beta float64) {
	if q.rows != nil {
		q.rows.mulT(out, z, alpha, beta)
		return
	}
	blas64.Gemv(blas.Trans, alpha, q.p.G.RawMatrix(), vec(z), beta, vec(out))
}

func (q *denseQP) mulA(out, x []float64, alpha, beta float64) {
	if q.ny > 0 {
		blas64.Gemv(blas.NoTrans, alpha, q.p.A.RawMatrix(), vec(x), beta, vec(out))
	}
}

func (q *denseQP) mulAT(out, y []float64, alpha, beta float64) {
	if q.ny > 0 {
		blas64.Gemv(blas.Trans, alpha, q.p.A.RawMatrix(), vec(y), beta, vec(out))
	} else if beta != 1 {
		floats.Scale(beta, out)
	}
}

func (q *denseQP) factor(w *ntScaling) error {
	q.w = w
	if q.rows != nil {
		q.rows.normal(w, q.h)
	} else {
		g := q.p.G.RawMatrix()
		for i := 0; i < q.nx; i++ {
			row := q.wg.Data[i*q.wg.Stride : i*q.wg.Stride+q.m]
			for r := 0; r < q.m; r++ {
				row[r] = g.Data[r*g.Stride+i]
			}
			w.unscale(row)
		}
		blas64.Syrk(blas.NoTrans, 1, q.wg, 0, q.h)
	}
	if q.p.Q != nil {
		qs := q.p.Q.RawSymmetric()
		for i := 0; i < q.nx; i++ {
			for j := 0; j <= i; j++ {
				v := qs.Data[i*qs.Stride+j]
				if qs.Uplo == blas.Upper {
					v = qs.Data[j*qs.Stride+i]
				}
				q.h.Data[i*q.h.Stride+j] += v
			}
		}
	}
	if q.ny > 0 {
		blas64.Syrk(blas.Trans, 1, q.p.A.RawMatrix(), 1, q.h)
	}
	var ok bool
	if q.hl, ok = cholesky(q.h, q.hs); !ok {
		return errors.New("ipm: normal matrix Q + GᵀW⁻²G + AᵀA is not positive definite")
	}
	if q.ny == 0 {
		return nil
	}
	a := q.p.A.RawMatrix()
	for i := 0; i < q.nx; i++ {
		for j := 0; j < q.ny; j++ {
			q.hiat.Data[i*q.hiat.Stride+j] = a.Data[j*a.Stride+i]
		}
	}
	lapack64.Potrs(q.hl, q.hiat)
	sg := blas64.General{Rows: q.ny, Cols: q.ny, Stride: q.sc.Stride, Data: q.sc.Data}
	blas64.Gemm(blas.NoTrans, blas.NoTrans, 1, a, q.hiat, 0, sg)
	if q.sl, ok = lapack64.Potrf(q.sc); !ok {
		return errors.New("ipm: A(Q + GᵀW⁻²G + AᵀA)⁻¹Aᵀ is not positive definite (dependent equality constraints)")
	}
	return nil
}

// cholesky factors a copy of h into hs, retrying with a small diagonal
// shift (10⁻¹³·max(1, max diag)) when h is numerically indefinite; the
// iterative refinement of the caller corrects the perturbation.
func cholesky(h, hs blas64.Symmetric) (blas64.Triangular, bool) {
	n := h.N
	var dmax float64
	for i := 0; i < n; i++ {
		dmax = math.Max(dmax, h.Data[i*h.Stride+i])
	}
	for _, shift := range []float64{0, 1e-13, 1e-10} {
		for i := 0; i < n; i++ {
			copy(hs.Data[i*hs.Stride:i*hs.Stride+i+1], h.Data[i*h.Stride:i*h.Stride+i+1])
			hs.Data[i*hs.Stride+i] += shift * math.Max(1, dmax)
		}
		if t, ok := lapack64.Potrf(hs); ok {
			return t, true
		}
	}
	return blas64.Triangular{}, false
}

func (q *denseQP) solve(x, y, z []float64) error {
	// x ← x + GᵀW⁻²z + Aᵀy.
	copy(q.tz, z)
	q.w.unscale2(q.tz)
	q.mulGT(x, q.tz, 1, 1)
	q.mulAT(x, y, 1, 1)
	lapack64.Potrs(q.hl, blas64.General{Rows: q.nx, Cols: 1, Stride: 1, Data: x})
	if q.ny > 0 {
		// y = S⁻¹(A H⁻¹r − y),  x = H⁻¹r − H⁻¹Aᵀ y.
		q.mulA(q.ty, x, 1, 0)
		floats.Sub(q.ty, y)
		lapack64.Potrs(q.sl, blas64.General{Rows: q.ny, Cols: 1, Stride: 1, Data: q.ty})
		copy(y, q.ty)
		blas64.Gemv(blas.NoTrans, -1, q.hiat, vec(y), 1, vec(x))
	}
	// z ← W⁻²(Gx − z).
	q.mulG(q.tz, x, 1, 0)
	for i := range z {
		z[i] = q.tz[i] - z[i]
	}
	q.w.unscale2(z)
	return nil
}
