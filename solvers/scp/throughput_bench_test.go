package scp

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/mat"
)

// BenchmarkSCPProducts times the two products of a FISTA iteration on a
// feature matrix (eq. SCP2), Hz and Hᵀv, for H = (XU)_+ of n = 11809 rows
// (MNIST 2 vs 8) and N neurons, in float64 (DenseFeatures, a BLAS Dgemv) and
// float32 (Features32). Each product is 2nN flops over nN stored entries, so
// it is bound by memory bandwidth: it reports GFLOP/s and GB/s read.
func BenchmarkSCPProducts(b *testing.B) {
	const n = 11809
	for _, m := range []int{4096, 16384} {
		rng := rand.New(rand.NewPCG(1, uint64(m)))
		h := mat.NewDense(n, m, nil)
		raw := h.RawMatrix().Data
		for i := range raw {
			if v := rng.NormFloat64(); v > 0 {
				raw[i] = v
			}
		}
		f32 := &Features32{N: n, M: m, Data: make([]float32, n*m)}
		for i, v := range raw {
			f32.Data[i] = float32(v)
		}
		x, y := make([]float64, m), make([]float64, n)
		for i := range x {
			x[i] = rng.NormFloat64()
		}
		for k := range y {
			y[k] = rng.NormFloat64()
		}
		for _, c := range []struct {
			name  string
			f     FeatureMatrix
			bytes float64
		}{{"float64", NewDenseFeatures(h), 8}, {"float32", f32, 4}} {
			b.Run(fmt.Sprintf("n=%d/N=%d/%s", n, m, c.name), func(b *testing.B) {
				for i := 0; i < b.N; i++ {
					c.f.MulVec(y, x)
					c.f.MulTransVec(x, y)
				}
				s := b.Elapsed().Seconds() / float64(b.N)
				b.ReportMetric(2*2*float64(n)*float64(m)/s/1e9, "GFLOP/s")
				b.ReportMetric(2*c.bytes*float64(n)*float64(m)/s/1e9, "GB/s")
			})
		}
	}
}
