package cnn_test

import (
	"context"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/convexnn/convexnn/solvers"
	"github.com/convexnn/convexnn/solvers/cnn"
	"github.com/convexnn/convexnn/solvers/general"
	"github.com/convexnn/convexnn/solvers/internal/testprog"
)

// Convex adversarial training of an average-pooling CNN (hinge and squared
// losses): CVXOPT's optimum, the robust constraints, the robust objective
// above the standard optimum, and PGD never above the certified worst-case
// loss of any image.
func TestRobustAgainstCVXOPTAndPGD(t *testing.T) {
	testprog.RequireCVXOPT(t)
	rng := rand.New(rand.NewPCG(9, 10))
	shape := cnn.Shape{C: 1, H: 4, W: 4}
	for trial := 0; trial < 6; trial++ {
		conv := []cnn.Conv{{Size: 2, Stride: 2}, {Size: 3, Stride: 1, Pad: 1}, {Size: 2, Stride: 2, Bias: true}}[trial%3]
		loss := []solvers.Loss{solvers.HingeLoss, solvers.SquaredLoss}[trial%2]
		x, y := images(rng, 10, shape, loss)
		eps := []float64{0.02, 0.05}[trial/3]
		p, err := cnn.New(x, shape, conv, cnn.AvgPool, y, loss, 1e-2)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := p.SamplePatterns(3, uint64(trial)); err != nil {
			t.Fatal(err)
		}
		res, err := p.SolveRobust(context.Background(), eps, 1e-10)
		if err != nil {
			t.Fatal(err)
		}
		in := testprog.CVXOPTRobustCNNInput{Shape: [3]int{shape.C, shape.H, shape.W}, Conv: [3]int{conv.Size, conv.Stride, conv.Pad}, Bias: conv.Bias, Loss: loss.String(), Y: y, Beta: p.Beta, Eps: eps}
		n, _ := x.Dims()
		for m := 0; m < n; m++ {
			in.X = append(in.X, x.RawRowView(m))
		}
		for _, sg := range p.Signs {
			var g [][]bool
			for _, pat := range sg {
				g = append(g, pat)
			}
			in.Signs = append(in.Signs, g)
		}
		status, obj := testprog.CVXOPTRobustCNN(t, in)
		if rel := math.Abs(res.Objective-obj) / math.Max(1, obj); rel > 1e-6 {
			t.Errorf("trial %d (%+v, ε = %v): robust optimum %.10g, CVXOPT %.10g (%s)", trial, conv, eps, res.Objective, obj, status)
		}
		if v := p.RobustViolation(eps, res.W, res.Wp); v > 1e-7 {
			t.Errorf("trial %d: robust constraints violated by %v", trial, v)
		}
		gp, err := p.Program()
		if err != nil {
			t.Fatal(err)
		}
		std, err := general.SolveInteriorPoint(context.Background(), gp, 1e-10)
		if err != nil {
			t.Fatal(err)
		}
		if res.Objective < std.Objective-1e-8 {
			t.Errorf("trial %d: robust optimum %.10g below the standard one %.10g", trial, res.Objective, std.Objective)
		}
		net, err := p.Recover(res.W, res.Wp)
		if err != nil {
			t.Fatal(err)
		}
		for m := 0; m < n; m++ {
			got, err := net.PGD(x.RawRowView(m), y[m], eps, 20, loss)
			if err != nil {
				t.Fatal(err)
			}
			if got > res.PointLoss[m]*(1+1e-6)+1e-6 {
				t.Errorf("trial %d (%v) image %d: PGD found loss %.8f above the certified %.8f", trial, loss, m, got, res.PointLoss[m])
			}
		}
	}
}

func TestRobustRefusals(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 1))
	shape := cnn.Shape{C: 1, H: 4, W: 4}
	x, y := images(rng, 6, shape, solvers.HingeLoss)
	for _, c := range []struct {
		pool cnn.Pooling
		loss solvers.Loss
		eps  float64
		want string
	}{
		{cnn.MaxPool, solvers.HingeLoss, 0.1, "average pooling only"},
		{cnn.AvgPool, solvers.LogisticLoss, 0.1, "hinge and squared losses"},
		{cnn.AvgPool, solvers.HingeLoss, 0, "0 < ε < ∞"},
	} {
		p, err := cnn.New(x, shape, cnn.Conv{Size: 2, Stride: 2}, c.pool, y, c.loss, 0.1)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := p.SamplePatterns(2, 1); err != nil {
			t.Fatal(err)
		}
		if _, err := p.SolveRobust(context.Background(), c.eps, 0); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("error %v, want one naming %q", err, c.want)
		}
	}
}

// On images with blank patches, robust training without biases can only
// return zero filters (a filter answers 0 on a blank patch, and δ can move
// that to either sign); with biases it learns.
func TestRobustNeedsBiasOnBlankPatches(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	shape := cnn.Shape{C: 1, H: 4, W: 4}
	x, y := images(rng, 10, shape, solvers.HingeLoss)
	for m := 0; m < 10; m++ {
		row := x.RawRowView(m)
		for _, q := range []int{0, 1, 4, 5} { // the top-left 2×2 patch is blank
			row[q] = 0
		}
	}
	var objs []float64
	for _, bias := range []bool{false, true} {
		p, err := cnn.New(x, shape, cnn.Conv{Size: 2, Stride: 2, Bias: bias}, cnn.AvgPool, y, solvers.HingeLoss, 1e-3)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := p.SamplePatterns(4, 3); err != nil {
			t.Fatal(err)
		}
		res, err := p.SolveRobust(context.Background(), 0.02, 1e-10)
		if err != nil {
			t.Fatal(err)
		}
		objs = append(objs, res.Objective)
	}
	if math.Abs(objs[0]-1) > 1e-6 || objs[1] > 0.99 {
		t.Errorf("robust objective without biases %.8f (want 1, the zero network), with biases %.8f (want below 1)", objs[0], objs[1])
	}
}
