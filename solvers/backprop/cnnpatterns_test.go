package backprop_test

import (
	"context"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/convexnn/convexnn/solvers"
	"github.com/convexnn/convexnn/solvers/backprop"
	"github.com/convexnn/convexnn/solvers/cnn"
)

// The CNN program over the patterns of a trained CNN reaches at most that
// network's objective (certified), for both poolings, hinge and squared; and
// its optimum over the patterns of the untrained start is higher than
// over the trained ones on most programs (the training finds patterns).
func TestCNNPatternsBoundTheProgram(t *testing.T) {
	rng := rand.New(rand.NewPCG(61, 62))
	shape := cnn.Shape{C: 1, H: 6, W: 6}
	better, cases := 0, 0
	for _, pool := range []cnn.Pooling{cnn.AvgPool, cnn.MaxPool} {
		for _, loss := range []solvers.Loss{solvers.HingeLoss, solvers.SquaredLoss} { // the interior-point method's losses
			for round := range 3 {
				x, y := points(rng, 30, 36, loss)
				p, err := cnn.New(x, shape, cnn.Conv{Size: 3, Stride: 3, Bias: round == 0}, pool, y, loss, 1e-2)
				if err != nil {
					t.Fatal(err)
				}
				seed := uint64(10*round + 1)
				if _, _, err := backprop.CNNPatterns(context.Background(), p, 4, 0, 0.02, seed); err != nil {
					t.Fatal(err)
				}
				untrained, err := p.SolveInteriorPoint(context.Background(), 1e-9)
				if err != nil {
					t.Fatal(err)
				}
				p.Signs, p.Argmax = nil, nil
				added, obj, err := backprop.CNNPatterns(context.Background(), p, 4, 400, 0.02, seed)
				if err != nil {
					t.Fatal(err)
				}
				if added < 1 || len(p.Signs) != added {
					t.Fatalf("%v %v: %d patterns added, the problem has %d", pool, loss, added, len(p.Signs))
				}
				res, err := p.SolveInteriorPoint(context.Background(), 1e-9)
				if err != nil {
					t.Fatal(err)
				}
				if res.Objective > obj*(1+1e-8)+1e-12 || res.Bound.Gap > 1e-6 {
					t.Errorf("%v %v round %d: program optimum %.9f (certified gap %.2g) above the trained network's objective %.9f", pool, loss, round, res.Objective, res.Bound.Gap, obj)
				}
				cases++
				if res.Objective < untrained.Objective*(1-1e-6) {
					better++
				}
				t.Logf("%v %v round %d: untrained patterns %.6f, trained network %.6f, program over its %d patterns %.6f", pool, loss, round, untrained.Objective, obj, added, res.Objective)
			}
		}
	}
	if better < cases*3/4 {
		t.Errorf("the trained patterns' optimum beat the untrained ones' on %d of %d programs", better, cases)
	}
}

func TestCNNPatternsRefusals(t *testing.T) {
	rng := rand.New(rand.NewPCG(63, 64))
	x, y := points(rng, 10, 16, solvers.HingeLoss)
	shape := cnn.Shape{C: 1, H: 4, W: 4}
	p, err := cnn.New(x, shape, cnn.Conv{Size: 2, Stride: 2}, cnn.MaxPool, y, solvers.HingeLoss, 0.1)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		width int
		lr    float64
		bound bool
		want  string
	}{
		{0, 0.02, false, "0 filters"},
		{2, 0, false, "learning rate 0"},
		{2, 0.02, true, "BoundPatterns"},
	} {
		p.MaxRobust = cnn.WinnerRows
		if c.bound {
			p.MaxRobust = cnn.WinnerBound
		}
		if _, _, err := backprop.CNNPatterns(context.Background(), p, c.width, 10, c.lr, 1); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: error %v, want one naming %q", c, err, c.want)
		}
	}
	if _, _, err := backprop.CNNPatterns(context.Background(), nil, 2, 10, 0.02, 1); err == nil {
		t.Error("no problem: no error")
	}
}
