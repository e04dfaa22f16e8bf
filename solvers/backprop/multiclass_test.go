package backprop

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/convexnn/convexnn/solvers/gated"
	"gonum.org/v1/gonum/mat"
)

// The gradient of the multi-class model matches central differences, for
// both losses, and Adam lowers the objective.
func TestMulticlassModel(t *testing.T) {
	rng := rand.New(rand.NewPCG(2, 3))
	x := mat.NewDense(12, 3, nil)
	y := make([]float64, 12)
	for k := 0; k < 12; k++ {
		for j := 0; j < 3; j++ {
			x.Set(k, j, rng.NormFloat64())
		}
		y[k] = float64(rng.IntN(3))
	}
	tg, _ := gated.OneHot(y, 3)
	for _, loss := range []gated.Loss{gated.Squared, gated.Softmax} {
		m, err := NewMulticlassModel(x, tg, loss, 0.01, 4, true, 1)
		if err != nil {
			t.Fatal(err)
		}
		p := m.Params()
		g := make([]float64, len(p))
		m.Objective(g)
		scratch := make([]float64, len(p))
		for i := range p {
			old := p[i]
			p[i] = old + 1e-6
			up := m.Objective(scratch)
			p[i] = old - 1e-6
			down := m.Objective(scratch)
			p[i] = old
			if fd := (up - down) / 2e-6; math.Abs(fd-g[i]) > 1e-5*math.Max(1, math.Abs(fd)) {
				t.Fatalf("%v: ∂/∂θ_%d = %v, differences %v", loss, i, g[i], fd)
			}
		}
		hist, err := Minimize(context.Background(), m, 0.01, 200)
		if err != nil {
			t.Fatal(err)
		}
		if hist[len(hist)-1] >= hist[0] {
			t.Fatalf("%v: Adam went from %v to %v", loss, hist[0], hist[len(hist)-1])
		}
		net := m.Network()
		s, err := net.Scores(x)
		if err != nil {
			t.Fatal(err)
		}
		if v := loss.Eval(nil, s, tg); math.Abs(v+0.5*0.01*sumSq(p)-hist[len(hist)-1]) > 1e-9 {
			t.Fatalf("%v: network's loss %v + reg differs from the model's objective %v", loss, v, hist[len(hist)-1])
		}
	}
	if _, err := NewMulticlassModel(x, mat.NewDense(5, 3, nil), gated.Softmax, 0.01, 4, true, 1); err == nil {
		t.Fatal("mismatched targets accepted")
	}
}

func sumSq(v []float64) float64 {
	var s float64
	for _, x := range v {
		s += x * x
	}
	return s
}
