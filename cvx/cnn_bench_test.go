package cvx

import (
	"context"
	"testing"
	"time"

	"github.com/convexnn/convexnn/data"
)

// BenchmarkCNNGenerated times issue 19's CNN target: on 2000 MNIST 2 vs 8
// digits at 14×14 (validation: the 1984 official test digits alike), the
// convex CNN with average or max pooling (3×3 filters with bias, stride 2, hinge,
// β = 10⁻⁴) trained in ≤ 30 s and within a point of back-prop of the same
// width. The convex program holds 8 sampled patterns and 4 rounds of up to
// 16 generated ones (GeneratePatterns), solved by the interior-point method
// and certified; back-prop (BackpropArchitecture: full-batch Adam, 1000
// steps, seed 1) gets the convex network's width. Run with
//
//	go test -tags openblas -run '^$' -bench CNNGenerated -benchtime 3x ./cvx/
func BenchmarkCNNGenerated(b *testing.B) {
	tr, te := mnistDigits(b, 2000, 14)
	shape := ImageShape{C: 1, H: 14, W: 14}
	for _, pool := range []string{"avg", "max"} {
		b.Run(pool, func(b *testing.B) { benchCNNGenerated(b, tr, te, shape, pool) })
	}
}

func benchCNNGenerated(b *testing.B, tr, te *data.Set, shape ImageShape, pool string) {
	for k := range b.N {
		seed := uint64(k + 1)
		prob := func() *Problem {
			p := Classify(tr.X, tr.Y).Hinge().Beta(1e-4).Bias().Conv(shape, 3, 2).SamplePatterns(8, seed)
			if pool == "max" {
				p.MaxPool()
			}
			return p
		}
		start := time.Now()
		sol, err := Solve(prob().GeneratePatterns(4, 16), IPM{})
		if err != nil {
			b.Fatal(err)
		}
		convexTime := time.Since(start)
		acc, err := ClassAccuracy(sol.CNN, te.X, te.Y)
		if err != nil {
			b.Fatal(err)
		}
		start = time.Now()
		bp, bobj, err := BackpropArchitecture(context.Background(), prob(), sol.CNN.Width(), 1000, 0, seed)
		if err != nil {
			b.Fatal(err)
		}
		bpTime := time.Since(start)
		bacc, err := ClassAccuracy(bp, te.X, te.Y)
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(convexTime.Seconds(), "convex-s")
		b.ReportMetric(100*acc, "convex-val-%")
		b.ReportMetric(100*bacc, "backprop-val-%")
		b.Logf("%s pooling, seed %d: convex %.1f s, objective %.7g (certified gap %.1e), %d filters, validation %.2f %%; back-prop, %d filters: %.1f s, objective %.7g, validation %.2f %%",
			pool, seed, convexTime.Seconds(), sol.Objective, sol.Gap, sol.CNN.Width(), 100*acc, bp.Width(), bpTime.Seconds(), bobj, 100*bacc)
	}
}
