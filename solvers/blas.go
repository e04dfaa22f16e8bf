package solvers

import (
	"reflect"
	"strings"

	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/gonum/blas/gonum"
)

// GonumBLAS is what BLAS reports for gonum's own, pure-Go BLAS.
const GonumBLAS = "gonum (pure Go)"

// BLAS names the BLAS that gonum's blas64 uses: "gonum (pure Go)" by
// default, "OpenBLAS" once a program imports
// github.com/convexnn/convexnn/solvers/openblas built with -tags openblas
// (which registers it through gonum.org/v1/netlib), or the type of any other
// registered implementation.
func BLAS() string {
	impl := blas64.Implementation()
	if _, ok := impl.(gonum.Implementation); ok {
		return GonumBLAS
	}
	t := reflect.TypeOf(impl)
	if strings.HasPrefix(t.PkgPath(), "gonum.org/v1/netlib/") {
		return "OpenBLAS"
	}
	return t.String()
}
