package admm

import (
	"fmt"
	"testing"

	"github.com/convexnn/convexnn/solvers"
)

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
		p := benchProgram(n, d, np)
		p.Loss = solvers.HingeLoss
		b.Run(fmt.Sprintf("n=%d/d=%d/P=%d", n, d, np), func(b *testing.B) {
			a, err := NewRobust(p, solvers.Perturbation{Eps: 10.0 / 255, Norm: "inf"}, Options{}, nil)
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
