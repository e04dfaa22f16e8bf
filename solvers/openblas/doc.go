// Package openblas registers OpenBLAS for gonum when the program is built
// with -tags openblas; import it for its side effect:
//
//	import _ "github.com/convexnn/convexnn/solvers/openblas"
//
// With the tag, its init makes all of blas64 use OpenBLAS through
// gonum.org/v1/netlib, and the Cholesky factorization and solve of lapack64
// (Dpotrf, Dpotrs) call OpenBLAS's LAPACK directly, which works on gonum's
// row-major storage in place (a row-major lower triangle is a column-major
// upper one); every other LAPACK routine stays gonum's, running on the
// OpenBLAS BLAS. Without the tag the package does nothing, and gonum's pure-Go
// BLAS is used. solvers.BLAS reports which one is in use.
//
// The command line, the cvx package (and so the notebooks) and the tests of
// the numerical packages import it; the numerical packages themselves do not.
package openblas
