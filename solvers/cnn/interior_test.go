package cnn_test

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/convexnn/convexnn/solvers"
	"github.com/convexnn/convexnn/solvers/cnn"
	"github.com/convexnn/convexnn/solvers/general"
)

// The structured interior-point method of average pooling
// (ipm.SolvePooled) reaches the dense cone program's optimum, and its
// certificate brackets that optimum, on random programs of both losses,
// with and without bias, padding and stride.
func TestSolveInteriorPointPooled(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	shape := cnn.Shape{C: 2, H: 5, W: 4}
	for trial := 0; trial < 12; trial++ {
		loss := []solvers.Loss{solvers.SquaredLoss, solvers.HingeLoss}[trial%2]
		conv := []cnn.Conv{{Size: 2, Stride: 1}, {Size: 3, Stride: 2, Pad: 1, Bias: true}, {Size: 2, Stride: 2, Bias: true}}[trial/2%3]
		beta := []float64{1e-3, 0.05}[trial/6]
		x, y := images(rng, 12+2*trial, shape, loss)
		if trial%4 == 3 {
			// Blank rows at the top of every image: repeated patches, which
			// the structured method keeps once as constraints.
			r, _ := x.Dims()
			for k := 0; k < r; k++ {
				for c := 0; c < shape.C; c++ {
					clear(x.RawRowView(k)[c*shape.H*shape.W : c*shape.H*shape.W+2*shape.W])
				}
			}
		}
		p, err := cnn.New(x, shape, conv, cnn.AvgPool, y, loss, beta)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := p.SamplePatterns(5, uint64(trial)); err != nil {
			t.Fatal(err)
		}
		gp, err := p.Program()
		if err != nil {
			t.Fatal(err)
		}
		dense, err := general.SolveInteriorPoint(context.Background(), gp, 1e-10)
		if err != nil {
			t.Fatal(err)
		}
		got, err := p.SolveInteriorPoint(context.Background(), 1e-10)
		if err != nil {
			t.Fatal(err)
		}
		scale := math.Max(1, dense.Objective)
		if math.Abs(got.Objective-dense.Objective)/scale > 1e-7 {
			t.Errorf("trial %d (%v, %+v): structured optimum %.12g, dense %.12g", trial, loss, conv, got.Objective, dense.Objective)
		}
		b := got.Bound
		if b.Gap > 1e-6 {
			t.Errorf("trial %d: certified gap %.1e", trial, b.Gap)
		}
		// The certificate must bracket the optimum, whichever solve found it.
		if b.Lower > dense.Bound.Upper+1e-12*scale || b.Upper < dense.Bound.Lower-1e-12*scale {
			t.Errorf("trial %d: bounds [%.12g, %.12g] miss the dense optimum in [%.12g, %.12g]", trial, b.Lower, b.Upper, dense.Bound.Lower, dense.Bound.Upper)
		}
		if v, _ := gp.Violation(got.W, got.Wp); v > 1e-8 {
			t.Errorf("trial %d: constraint violation %.1e", trial, v)
		}
	}
}

func TestSolveInteriorPointPooledRefuses(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	shape := cnn.Shape{C: 1, H: 4, W: 4}
	x, y := images(rng, 10, shape, solvers.BCELoss)
	p, err := cnn.New(x, shape, cnn.Conv{Size: 2, Stride: 1}, cnn.AvgPool, y, solvers.BCELoss, 1e-3)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.SamplePatterns(3, 1); err != nil {
		t.Fatal(err)
	}
	if _, err := p.SolveInteriorPoint(context.Background(), 0); err == nil {
		t.Error("BCE: no error, want a refusal naming the losses")
	}
}
