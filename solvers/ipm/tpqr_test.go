package ipm

import (
	"math"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/gonum/mat"
)

// TestTPQRFactor: the factor R' of [R; B] satisfies R'ᵀR' = RᵀR + BᵀB to
// rounding, for sizes below, at and above the panel and leaf widths, for B
// full and upper triangular (tri), and B with no rows.
func TestTPQRFactor(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 11))
	for _, tc := range []struct {
		n, mb int
		tri   bool
	}{{1, 1, false}, {3, 0, false}, {7, 5, false}, {8, 20, false}, {9, 3, false}, {33, 50, false}, {64, 64, false},
		{65, 10, false}, {150, 300, false}, {200, 90, false}, {20, 20, true}, {70, 70, true}, {130, 100, true}, {97, 97, true}} {
		r := make([]float64, tc.n*tc.n)
		for i := 0; i < tc.n; i++ {
			r[i*tc.n+i] = 1 + rng.Float64()
			for j := i + 1; j < tc.n; j++ {
				r[i*tc.n+j] = rng.NormFloat64()
			}
		}
		bt := make([]float64, tc.n*max(1, tc.mb))
		for c := 0; c < tc.n; c++ {
			for k := 0; k < tc.mb; k++ {
				if !tc.tri || k <= c {
					bt[c*max(1, tc.mb)+k] = rng.NormFloat64()
				}
			}
		}
		rm := mat.NewDense(tc.n, tc.n, append([]float64(nil), r...))
		want := mat.NewDense(tc.n, tc.n, nil)
		want.Mul(rm.T(), rm)
		if tc.mb > 0 {
			btm := mat.NewDense(tc.n, tc.mb, append([]float64(nil), bt[:tc.n*tc.mb]...))
			var g mat.Dense
			g.Mul(btm, btm.T())
			want.Add(want, &g)
		}
		q := newTPQRWork(tc.n)
		q.factor(blas64.General{Rows: tc.n, Cols: tc.n, Stride: tc.n, Data: r},
			blas64.General{Rows: tc.n, Cols: tc.mb, Stride: max(1, tc.mb), Data: bt}, tc.tri)
		for i := 0; i < tc.n; i++ {
			for j := 0; j < i; j++ {
				r[i*tc.n+j] = 0
			}
		}
		rp := mat.NewDense(tc.n, tc.n, r)
		var got mat.Dense
		got.Mul(rp.T(), rp)
		var diff mat.Dense
		diff.Sub(&got, want)
		if e := mat.Norm(&diff, math.Inf(1)) / mat.Norm(want, math.Inf(1)); !(e <= 1e-13) {
			t.Errorf("n %d, mb %d, tri %v: ‖R'ᵀR' − (RᵀR + BᵀB)‖/‖·‖ = %g", tc.n, tc.mb, tc.tri, e)
		}
	}
}
