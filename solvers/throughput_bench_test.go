package solvers

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

// BenchmarkADMMRobustStep times one iteration of the robust ADMM (hinge
// loss, ℓ∞ set) on the shape of Table 5 (600 CIFAR-10 images at 7×7×3 plus a
// bias, 72 patterns: P_s = 36 from Algorithm adv_train doubled) and on a
// larger one, and reports the GFLOP/s of its dense work: the products with X
// and with A (seven, 4ndP flops each for the 2P×d weights: 28ndP) and the
// Sylvester solve in the eigenbases (two products on each side:
// 8(2P)²d + 8(2P)d²).
func BenchmarkADMMRobustStep(b *testing.B) {
	for _, sh := range [][3]int{{600, 148, 72}, {4000, 148, 72}} {
		n, d, np := sh[0], sh[1], sh[2]
		p := admmBenchProgram(n, d, np)
		p.Loss = HingeLoss
		b.Run(fmt.Sprintf("n=%d/d=%d/P=%d", n, d, np), func(b *testing.B) {
			a, err := NewADMMRobust(p, Perturbation{Eps: 10.0 / 255, Norm: "inf"}, ADMMOptions{}, nil)
			if err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				a.Step()
			}
			s := b.Elapsed().Seconds() / float64(b.N)
			fn, fd, fp := float64(n), float64(d), float64(np)
			flops := 28*fn*fd*fp + 8*4*fp*fp*fd + 8*2*fp*fd*fd
			b.ReportMetric(flops/s/1e9, "GFLOP/s")
			b.ReportMetric(s*1e3, "ms/iter")
		})
	}
}

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
