package cnn

import (
	"context"
	"math/rand/v2"
	"os"
	"testing"
	"time"

	"github.com/convexnn/convexnn/data"
	"github.com/convexnn/convexnn/solvers"
	_ "github.com/convexnn/convexnn/solvers/openblas"
)

func TestZZPatterns(t *testing.T) {
	src := data.Source{Dir: os.Getenv("CONVEXNN_DATA")}
	a, b, err := data.MNIST(context.Background(), src)
	if err != nil {
		t.Fatal(err)
	}
	s, _ := a.Binary(2, 8, data.PlusMinus)
	s, _ = s.ScalePixels().Resize(14, 14)
	s, _ = s.Subsample(500, 1)
	v, _ := b.Binary(2, 8, data.PlusMinus)
	v, _ = v.ScalePixels().Resize(14, 14)
	for _, mode := range []string{"gauss", "anchored", "anchored-centred"} {
		for _, np := range []int{8, 16} {
			p, err := New(s.X, Shape{C: 1, H: 14, W: 14}, Conv{Size: 3, Stride: 2, Bias: true}, AvgPool, s.Y, solvers.HingeLoss, 1e-4)
			if err != nil {
				t.Fatal(err)
			}
			rng := rand.New(rand.NewPCG(1, 5))
			n, _ := s.X.Dims()
			f := p.Filter()
			u := make([]float64, f)
			for tries := 0; len(p.Signs) < np && tries < 1000; tries++ {
				for l := range u {
					u[l] = rng.NormFloat64()
				}
				switch mode {
				case "anchored", "anchored-centred":
					k, m := rng.IntN(len(p.Patches)), rng.IntN(n)
					row := p.Patches[k].RawRowView(m)
					if mode == "anchored-centred" {
						// a patch that is not blank
						for tries2 := 0; tries2 < 100; tries2++ {
							nz := 0.0
							for l := 0; l < f-1; l++ {
								nz += row[l]
							}
							if nz > 0.5 {
								break
							}
							k, m = rng.IntN(len(p.Patches)), rng.IntN(n)
							row = p.Patches[k].RawRowView(m)
						}
					}
					u[f-1] = 0
					var dot float64
					for l := 0; l < f-1; l++ {
						dot += u[l] * row[l]
					}
					u[f-1] = -dot
				}
				p.AddPattern(u)
			}
			st := time.Now()
			res, err := p.SolveInteriorPoint(context.Background(), 1e-8)
			if err != nil {
				t.Fatal(err)
			}
			net, _ := p.Recover(res.W, res.Wp)
			ptr, _ := net.Predict(s.X)
			pte, _ := net.Predict(v.X)
			atr, _ := solvers.Accuracy(ptr, s.Y)
			ate, _ := solvers.Accuracy(pte, v.Y)
			t.Logf("%s P %d: %.1fs iters %d obj %.5f gap %.1e train %.2f val %.2f", mode, np, time.Since(st).Seconds(), res.Iterations, res.Objective, res.Bound.Gap, 100*atr, 100*ate)
		}
	}
}
