package ipm

import (
	"errors"
	"math"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/gonum/floats"
	"gonum.org/v1/gonum/lapack/lapack64"
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
}

func newDenseQP(p *ConeQP) *denseQP {
	nx, m := len(p.C), p.K.Dim()
	ny := len(p.B)
	sym := func(n int) blas64.Symmetric {
		return blas64.Symmetric{N: n, Stride: max(1, n), Uplo: blas.Lower, Data: make([]float64, n*n)}
	}
	q := &denseQP{p: p, nx: nx, ny: ny, m: m,
		wg: blas64.General{Rows: nx, Cols: m, Stride: max(1, m), Data: make([]float64, nx*m)},
		h:  sym(nx), hs: sym(nx),
		tz: make([]float64, m), tx: make([]float64, nx), ty: make([]float64, ny),
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
	blas64.Gemv(blas.NoTrans, alpha, q.p.G.RawMatrix(), vec(x), beta, vec(out))
}

func (q *denseQP) mulGT(out, z []float64, alpha, beta float64) {
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
	g := q.p.G.RawMatrix()
	for i := 0; i < q.nx; i++ {
		row := q.wg.Data[i*q.wg.Stride : i*q.wg.Stride+q.m]
		for r := 0; r < q.m; r++ {
			row[r] = g.Data[r*g.Stride+i]
		}
		w.unscale(row)
	}
	blas64.Syrk(blas.NoTrans, 1, q.wg, 0, q.h)
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
