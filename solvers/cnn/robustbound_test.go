package cnn_test

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/convexnn/convexnn/solvers"
	"github.com/convexnn/convexnn/solvers/cnn"
	"github.com/convexnn/convexnn/solvers/general"
	"github.com/convexnn/convexnn/solvers/internal/testprog"
	"gonum.org/v1/gonum/mat"
)

// boundCases are small max-pooling programs for the winner bound: the
// losses it takes, patches apart and overlapping, with and without biases.
var boundCases = []struct {
	conv  cnn.Conv
	loss  solvers.Loss
	n, np int
	beta  float64
	eps   float64
}{
	{cnn.Conv{Size: 2, Stride: 2, Bias: true}, solvers.HingeLoss, 8, 2, 1e-2, 0.05},
	{cnn.Conv{Size: 3, Stride: 1}, solvers.HingeLoss, 6, 3, 1e-3, 0.02},
	{cnn.Conv{Size: 2, Stride: 2}, solvers.BCELoss, 6, 2, 1e-2, 0.05},
	{cnn.Conv{Size: 3, Stride: 1, Pad: 1, Bias: true}, solvers.LogisticLoss, 5, 2, 1e-3, 0.02},
}

// The winner bound (cnn.WinnerBound) against CVXOPT's program written from
// its definition: the same optimum to 1e-6, a certified gap of 1e-6 whose
// lower bound holds CVXOPT's optimum, and PGD never above any image's
// certified worst-case loss. Rounds that add the patterns of the solution's
// filters (AddBoundPattern) never raise the optimum, and leave the solution's
// own terms at their best.
func TestRobustWinnerBound(t *testing.T) {
	testprog.RequireCVXOPT(t)
	rng := rand.New(rand.NewPCG(31, 32))
	shape := cnn.Shape{C: 1, H: 4, W: 4}
	for trial, c := range boundCases {
		x, y := images(rng, c.n, shape, c.loss)
		p, err := cnn.New(x, shape, c.conv, cnn.MaxPool, y, c.loss, c.beta)
		if err != nil {
			t.Fatal(err)
		}
		p.MaxRobust = cnn.WinnerBound
		if _, err := p.SamplePatterns(c.np, uint64(trial)); err != nil {
			t.Fatal(err)
		}
		name := fmt.Sprintf("trial %d (%v, %+v, ε = %v)", trial, c.loss, c.conv, c.eps)
		last := math.Inf(1)
		for round := 0; round < 3; round++ {
			res, err := p.SolveRobust(context.Background(), c.eps, 1e-10)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			in := testprog.CVXOPTRobustCNNInput{Shape: [3]int{shape.C, shape.H, shape.W}, Conv: [3]int{c.conv.Size, c.conv.Stride, c.conv.Pad}, Bias: c.conv.Bias,
				Loss: c.loss.String(), Y: y, Beta: c.beta, Eps: c.eps, Pool: "max-bound", Argmax: p.Argmax}
			for m := 0; m < c.n; m++ {
				in.X = append(in.X, x.RawRowView(m))
			}
			for _, sg := range p.Signs {
				in.Signs = append(in.Signs, [][]bool{sg[0]})
			}
			status, obj := testprog.CVXOPTRobustCNN(t, in)
			scale := math.Max(1, math.Abs(obj))
			if rel := math.Abs(res.Objective-obj) / scale; rel > 1e-6 {
				t.Errorf("%s round %d: optimum %.10g, CVXOPT %.10g (%s)", name, round, res.Objective, obj, status)
			}
			if res.Lower > obj+1e-8*scale || res.Lower > res.Upper {
				t.Errorf("%s round %d: certificate [%.10g, %.10g] does not hold CVXOPT's optimum %.10g", name, round, res.Lower, res.Upper, obj)
			}
			if res.CertifiedGap > 1e-6 {
				t.Errorf("%s round %d: certified gap %.3g, want ≤ 1e-6", name, round, res.CertifiedGap)
			}
			if res.Objective > last*(1+1e-9) {
				t.Errorf("%s round %d: optimum %.10g above the last round's %.10g", name, round, res.Objective, last)
			}
			last = res.Objective
			net, err := p.Recover(res.W, res.Wp)
			if err != nil {
				t.Fatal(err)
			}
			for m := 0; m < c.n; m++ {
				got, err := net.PGD(x.RawRowView(m), y[m], c.eps, 20, c.loss)
				if err != nil {
					t.Fatal(err)
				}
				if got > res.PointLoss[m]*(1+1e-9)+1e-9 {
					t.Errorf("%s round %d image %d: PGD found loss %.8f above the certified %.8f", name, round, m, got, res.PointLoss[m])
				}
			}
			t.Logf("%s round %d: %d patterns, objective %.8g, certified gap %.2g", name, round, len(p.Signs), res.Objective, res.CertifiedGap)
			f := p.Filter()
			for _, w := range [][]float64{res.W, res.Wp} {
				for i := 0; i < len(p.Signs)-0 && (i+1)*f <= len(w); i++ {
					u := w[i*f : (i+1)*f]
					if mat.Norm(mat.NewVecDense(f, u), 2) > 1e-9 {
						if _, err := p.AddBoundPattern(u, c.eps); err != nil {
							t.Fatal(err)
						}
					}
				}
			}
		}
	}
}

// The winner bound's certificate holds for any multipliers: bounds from
// random nonnegative multipliers and from loose solves never exceed the
// optimum.
func TestRobustWinnerBoundValidForAnyMultipliers(t *testing.T) {
	rng := rand.New(rand.NewPCG(33, 34))
	shape := cnn.Shape{C: 1, H: 4, W: 4}
	checked := 0
	for trial := 0; trial < 6; trial++ {
		loss := []solvers.Loss{solvers.HingeLoss, solvers.BCELoss, solvers.LogisticLoss}[trial%3]
		conv := []cnn.Conv{{Size: 2, Stride: 2, Bias: true}, {Size: 3, Stride: 1}}[trial%2]
		x, y := images(rng, 5, shape, loss)
		eps := 0.01 + 0.05*rng.Float64()
		p, err := cnn.New(x, shape, conv, cnn.MaxPool, y, loss, math.Pow(10, -3+2*rng.Float64()))
		if err != nil {
			t.Fatal(err)
		}
		p.MaxRobust = cnn.WinnerBound
		if _, err := p.SamplePatterns(2+trial%2, uint64(trial)); err != nil {
			t.Fatal(err)
		}
		best, err := p.SolveRobust(context.Background(), eps, 1e-10)
		if err != nil {
			t.Fatal(err)
		}
		opt := best.Upper
		check := func(what string, lower float64) {
			checked++
			if lower > opt+1e-9*math.Max(1, math.Abs(opt)) {
				t.Errorf("trial %d (%v): lower bound %.12g from %s above the optimum %.12g", trial, loss, lower, what, opt)
			}
		}
		for _, tol := range []float64{1e-2, 1e-5} {
			res, err := p.SolveRobust(context.Background(), eps, tol)
			if err != nil {
				t.Fatal(err)
			}
			check(fmt.Sprintf("a solve at tolerance %g", tol), res.Lower)
		}
		boundsFromRandomMultipliers(t, rng, p, eps, 8, check)
	}
	t.Logf("%d bounds checked", checked)
}

func TestRobustWinnerBoundRefusals(t *testing.T) {
	rng := rand.New(rand.NewPCG(35, 36))
	shape := cnn.Shape{C: 1, H: 4, W: 4}
	for _, c := range []struct {
		pool cnn.Pooling
		loss solvers.Loss
		form cnn.MaxRobustForm
		want string
	}{
		{cnn.AvgPool, solvers.HingeLoss, cnn.WinnerBound, "average pooling has no winner"},
		{cnn.MaxPool, solvers.SquaredLoss, cnn.WinnerBound, "not the squared loss"},
		{cnn.MaxPool, solvers.HingeLoss, cnn.MaxRobustForm(7), "unknown max-pooling robust program"},
	} {
		x, y := images(rng, 5, shape, c.loss)
		p, err := cnn.New(x, shape, cnn.Conv{Size: 2, Stride: 2}, c.pool, y, c.loss, 0.1)
		if err != nil {
			t.Fatal(err)
		}
		p.MaxRobust = c.form
		if _, err := p.SamplePatterns(2, 1); err != nil {
			t.Fatal(err)
		}
		if _, err := p.SolveRobust(context.Background(), 0.02, 0); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v, %v, %v: error %v, want one naming %q", c.pool, c.loss, c.form, err, c.want)
		}
		// The objective and the ADMM splitting refuse the same forms.
		w := make([]float64, len(p.Signs)*p.Filter())
		if _, _, err := p.RobustObjective(0.02, w, w); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v, %v, %v: RobustObjective: error %v, want one naming %q", c.pool, c.loss, c.form, err, c.want)
		}
		if _, err := p.NewRobustADMM(0.02, general.ConeOptions{}, nil); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v, %v, %v: NewRobustADMM: error %v, want one naming %q", c.pool, c.loss, c.form, err, c.want)
		}
	}
	x, y := images(rng, 5, shape, solvers.HingeLoss)
	p, err := cnn.New(x, shape, cnn.Conv{Size: 2, Stride: 2}, cnn.MaxPool, y, solvers.HingeLoss, 0.1)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		u    []float64
		eps  float64
		want string
	}{
		{[]float64{1, 2, 3}, 0.1, "3 entries"},
		{[]float64{1, math.NaN(), 0, 0}, 0.1, "NaN"},
		{[]float64{1, 0, 0, 0}, -1, "ε = -1"},
	} {
		if _, err := p.AddBoundPattern(c.u, c.eps); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("AddBoundPattern(%v, %v): error %v, want one naming %q", c.u, c.eps, err, c.want)
		}
	}
}

// WinnerBoundObjective is the program's objective at filters in groups of
// their own with their AddBoundPattern patterns (two implementations of
// one bound), its gradient matches finite differences, and PGD never beats
// its per-image bound.
func TestWinnerBoundObjectiveIsTheProgramsAtItsPatterns(t *testing.T) {
	rng := rand.New(rand.NewPCG(37, 38))
	shape := cnn.Shape{C: 2, H: 4, W: 4}
	checked := 0
	for trial := 0; trial < 9; trial++ {
		loss := []solvers.Loss{solvers.HingeLoss, solvers.BCELoss, solvers.LogisticLoss}[trial%3]
		conv := []cnn.Conv{{Size: 2, Stride: 2, Bias: true}, {Size: 3, Stride: 1}, {Size: 3, Stride: 2, Pad: 1, Bias: true}}[trial/3]
		x, y := images(rng, 7, shape, loss)
		p, err := cnn.New(x, shape, conv, cnn.MaxPool, y, loss, 1e-2)
		if err != nil {
			t.Fatal(err)
		}
		p.MaxRobust = cnn.WinnerBound
		f, m, eps := p.Filter(), 4, 0.03
		u := make([]float64, m*f)
		for l := range u {
			u[l] = rng.NormFloat64()
		}
		sigma := []float64{1, -1, 1, -1}
		grad := make([]float64, len(u))
		val, err := p.WinnerBoundObjective(eps, u, sigma, grad)
		if err != nil {
			t.Fatal(err)
		}
		distinct := true
		for j := 0; j < m; j++ {
			ok, err := p.AddBoundPattern(u[j*f:(j+1)*f], eps)
			if err != nil {
				t.Fatal(err)
			}
			distinct = distinct && ok
		}
		if !distinct {
			continue
		}
		w, wp := make([]float64, m*f), make([]float64, m*f)
		for j := 0; j < m; j++ {
			dst := w
			if sigma[j] < 0 {
				dst = wp
			}
			copy(dst[j*f:(j+1)*f], u[j*f:(j+1)*f])
		}
		obj, _, err := p.RobustObjective(eps, w, wp)
		if err != nil {
			t.Fatal(err)
		}
		if math.Abs(obj-val) > 1e-12*math.Max(1, math.Abs(val)) {
			t.Errorf("trial %d (%v, %+v): WinnerBoundObjective %.15g, the program's objective %.15g", trial, loss, conv, val, obj)
		}
		checked++
		for e := 0; e < 6; e++ {
			l := rng.IntN(len(u))
			h := 1e-6
			up := append([]float64(nil), u...)
			dn := append([]float64(nil), u...)
			up[l] += h
			dn[l] -= h
			scratch := make([]float64, len(u))
			fu, _ := p.WinnerBoundObjective(eps, up, sigma, scratch)
			fd, _ := p.WinnerBoundObjective(eps, dn, sigma, scratch)
			if fdg := (fu - fd) / (2 * h); math.Abs(fdg-grad[l]) > 1e-5*math.Max(1, math.Abs(grad[l])) {
				t.Errorf("trial %d: ∂/∂u[%d] = %.8g, finite difference %.8g", trial, l, grad[l], fdg)
			}
		}
	}
	if checked < 6 {
		t.Errorf("only %d of 9 trials had distinct patterns", checked)
	}
}
