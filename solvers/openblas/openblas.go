//go:build openblas

package openblas

/*
#cgo LDFLAGS: -lopenblas
extern void dpotrf_(const char* uplo, const int* n, double* a, const int* lda, int* info);
extern void dpotrs_(const char* uplo, const int* n, const int* nrhs, const double* a, const int* lda, double* b, const int* ldb, int* info);
*/
import "C"

import (
	"unsafe"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/gonum/lapack/gonum"
	"gonum.org/v1/gonum/lapack/lapack64"
	"gonum.org/v1/netlib/blas/netlib"
)

// init registers OpenBLAS (see the package comment).
func init() {
	blas64.Use(netlib.Implementation{})
	lapack64.Use(openblasLAPACK{})
}

type openblasLAPACK struct{ gonum.Implementation }

func flip(ul blas.Uplo) C.char {
	if ul == blas.Lower {
		return 'U'
	}
	return 'L'
}

// Dpotrf computes the Cholesky factorization of the n×n symmetric positive
// definite a (row-major, leading dimension lda) in place.
func (openblasLAPACK) Dpotrf(ul blas.Uplo, n int, a []float64, lda int) bool {
	if n == 0 {
		return true
	}
	if len(a) < (n-1)*lda+n {
		panic("openblas: Dpotrf: short matrix")
	}
	uplo, cn, clda := flip(ul), C.int(n), C.int(lda)
	var info C.int
	C.dpotrf_(&uplo, &cn, (*C.double)(unsafe.Pointer(&a[0])), &clda, &info)
	return info == 0
}

// Dpotrs solves A X = B with the factorization from Dpotrf; B is n×nrhs
// row-major with leading dimension ldb, overwritten by X.
func (impl openblasLAPACK) Dpotrs(ul blas.Uplo, n, nrhs int, a []float64, lda int, b []float64, ldb int) {
	if n == 0 || nrhs == 0 {
		return
	}
	if nrhs != 1 && ldb != nrhs {
		// Column-major OpenBLAS needs each right-hand side contiguous:
		// fall back to gonum for strided multi-column B.
		impl.Implementation.Dpotrs(ul, n, nrhs, a, lda, b, ldb)
		return
	}
	if nrhs == 1 {
		// One column with stride ldb: gather if strided.
		if ldb != 1 {
			impl.Implementation.Dpotrs(ul, n, nrhs, a, lda, b, ldb)
			return
		}
		uplo, cn, one, clda, cldb := flip(ul), C.int(n), C.int(1), C.int(lda), C.int(n)
		var info C.int
		C.dpotrs_(&uplo, &cn, &one, (*C.double)(unsafe.Pointer(&a[0])), &clda, (*C.double)(unsafe.Pointer(&b[0])), &cldb, &info)
		return
	}
	// Row-major B (n×nrhs, ldb = nrhs) is column-major Bᵀ (nrhs×n): solve
	// Xᵀ A = Bᵀ instead, i.e. A Xᵀ... A is symmetric, so transposing both
	// sides keeps the system; use gonum for this rare case.
	impl.Implementation.Dpotrs(ul, n, nrhs, a, lda, b, ldb)
}
