package backprop_test

import (
	"context"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/convexnn/convexnn/solvers"
	"github.com/convexnn/convexnn/solvers/backprop"
	"github.com/convexnn/convexnn/solvers/cnn"
)

// BoundPatterns lowers the winner bound from its random start, and the
// winner-bound program over the patterns it adds reaches at most that
// bound (certified), for the hinge and logistic losses.
func TestBoundPatternsBoundTheProgram(t *testing.T) {
	rng := rand.New(rand.NewPCG(51, 52))
	shape := cnn.Shape{C: 1, H: 6, W: 6}
	for _, loss := range []solvers.Loss{solvers.HingeLoss, solvers.LogisticLoss} {
		x, y := points(rng, 40, 36, loss)
		for k := 0; k < 40; k++ { // pixels in [0, 1]
			for l := 0; l < 36; l++ {
				x.Set(k, l, 1/(1+math.Exp(-x.At(k, l))))
			}
		}
		p, err := cnn.New(x, shape, cnn.Conv{Size: 3, Stride: 3, Bias: true}, cnn.MaxPool, y, loss, 1e-3)
		if err != nil {
			t.Fatal(err)
		}
		p.MaxRobust = cnn.WinnerBound
		eps := 0.02
		_, start, err := backprop.BoundPatterns(context.Background(), p, eps, 4, 1, 0, 0.02, 1)
		if err != nil {
			t.Fatal(err)
		}
		p.Signs, p.Argmax = nil, nil
		added, bound, err := backprop.BoundPatterns(context.Background(), p, eps, 4, 2, 300, 0.02, 1)
		if err != nil {
			t.Fatal(err)
		}
		if added < 1 || len(p.Signs) != added {
			t.Fatalf("%v: %d patterns added, the problem has %d", loss, added, len(p.Signs))
		}
		if !(bound < 0.95*start) {
			t.Errorf("%v: training took the bound from %.6f to %.6f", loss, start, bound)
		}
		res, err := p.SolveRobust(context.Background(), eps, 1e-9)
		if err != nil {
			t.Fatal(err)
		}
		if res.Objective > bound*(1+1e-9) || res.CertifiedGap > 1e-6 {
			t.Errorf("%v: program optimum %.8f (certified gap %.2g) above the trained filters' bound %.8f", loss, res.Objective, res.CertifiedGap, bound)
		}
		t.Logf("%v: bound %.6f → %.6f, %d patterns, certified optimum %.6f", loss, start, bound, added, res.Objective)
	}
}

func TestBoundPatternsRefusals(t *testing.T) {
	rng := rand.New(rand.NewPCG(53, 54))
	x, y := points(rng, 10, 16, solvers.HingeLoss)
	shape := cnn.Shape{C: 1, H: 4, W: 4}
	for _, c := range []struct {
		pool  cnn.Pooling
		loss  solvers.Loss
		width int
		lr    float64
		want  string
	}{
		{cnn.MaxPool, solvers.HingeLoss, 0, 0.02, "0 filters from 1 starts"},
		{cnn.MaxPool, solvers.HingeLoss, 2, 0, "learning rate 0"},
		{cnn.AvgPool, solvers.HingeLoss, 2, 0.02, "max pooling"},
		{cnn.MaxPool, solvers.SquaredLoss, 2, 0.02, "not the squared loss"},
	} {
		yy := y
		if c.loss == solvers.SquaredLoss {
			yy = append([]float64(nil), y...)
			yy[0] = 0.5
		}
		p, err := cnn.New(x, shape, cnn.Conv{Size: 2, Stride: 2}, c.pool, yy, c.loss, 0.1)
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := backprop.BoundPatterns(context.Background(), p, 0.01, c.width, 1, 10, c.lr, 1); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: error %v, want one naming %q", c, err, c.want)
		}
	}
}
