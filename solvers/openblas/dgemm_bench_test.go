package openblas

import (
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/mat"
)

// BenchmarkDgemmPeak is the machine's reference: a square 2048×2048
// product C = AB through whatever BLAS the build registered (gonum's pure
// Go, or OpenBLAS with -tags openblas), 2·2048³ flops. The other
// benchmarks' GFLOP/s read against it.
func BenchmarkDgemmPeak(b *testing.B) {
	const n = 2048
	rng := rand.New(rand.NewPCG(5, 6))
	a, c := mat.NewDense(n, n, nil), mat.NewDense(n, n, nil)
	for _, m := range []*mat.Dense{a, c} {
		raw := m.RawMatrix().Data
		for i := range raw {
			raw[i] = rng.NormFloat64()
		}
	}
	var p mat.Dense
	p.Mul(a, c)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		p.Mul(a, c)
	}
	b.ReportMetric(2*n*n*n*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
}
