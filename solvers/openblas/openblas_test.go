//go:build openblas

package openblas

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/convexnn/convexnn/solvers"
	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/gonum/lapack/gonum"
	"gonum.org/v1/gonum/lapack/lapack64"
	"gonum.org/v1/netlib/blas/netlib"
)

// TestOpenBLASRegistered checks the openblas build uses OpenBLAS and that
// its Cholesky factorization and solve agree with gonum's.
func TestOpenBLASRegistered(t *testing.T) {
	if _, ok := blas64.Implementation().(netlib.Implementation); !ok {
		t.Fatalf("blas64 uses %T, want netlib (OpenBLAS)", blas64.Implementation())
	}
	if got := solvers.BLAS(); got != "OpenBLAS" {
		t.Fatalf("solvers.BLAS() = %q, want OpenBLAS", got)
	}
	rng := rand.New(rand.NewPCG(1, 1))
	const n = 157
	g := blas64.General{Rows: n, Cols: n, Stride: n, Data: make([]float64, n*n)}
	for i := range g.Data {
		g.Data[i] = rng.NormFloat64()
	}
	a := blas64.General{Rows: n, Cols: n, Stride: n, Data: make([]float64, n*n)}
	blas64.Gemm(blas.NoTrans, blas.Trans, 1, g, g, 0, a)
	for i := 0; i < n; i++ {
		a.Data[i*n+i] += n
	}
	for _, ul := range []blas.Uplo{blas.Lower, blas.Upper} {
		ours := blas64.Symmetric{N: n, Stride: n, Uplo: ul, Data: append([]float64(nil), a.Data...)}
		ref := append([]float64(nil), a.Data...)
		if _, ok := lapack64.Potrf(ours); !ok {
			t.Fatal("OpenBLAS Dpotrf failed on an SPD matrix")
		}
		if !(gonum.Implementation{}).Dpotrf(ul, n, ref, n) {
			t.Fatal("gonum Dpotrf failed")
		}
		for i := 0; i < n; i++ {
			for j := 0; j < n; j++ {
				if (ul == blas.Lower && j > i) || (ul == blas.Upper && j < i) {
					continue
				}
				if math.Abs(ours.Data[i*n+j]-ref[i*n+j]) > 1e-9 {
					t.Fatalf("%v factor differs at (%d,%d): %v vs %v", ul, i, j, ours.Data[i*n+j], ref[i*n+j])
				}
			}
		}
		b := make([]float64, n)
		for i := range b {
			b[i] = rng.NormFloat64()
		}
		x := append([]float64(nil), b...)
		lapack64.Potrs(blas64.Triangular{N: n, Stride: n, Uplo: ul, Diag: blas.NonUnit, Data: ours.Data}, blas64.General{Rows: n, Cols: 1, Stride: 1, Data: x})
		// Check A x = b.
		for i := 0; i < n; i++ {
			var s float64
			for j := 0; j < n; j++ {
				s += a.Data[i*n+j] * x[j]
			}
			if math.Abs(s-b[i]) > 1e-8 {
				t.Fatalf("%v solve residual %v at row %d", ul, s-b[i], i)
			}
		}
	}
}
