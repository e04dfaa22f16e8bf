package cnn_test

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/convexnn/convexnn/internal/testenv"
	"github.com/convexnn/convexnn/solvers"
	"github.com/convexnn/convexnn/solvers/cnn"
	"github.com/convexnn/convexnn/solvers/general"
	"github.com/convexnn/convexnn/solvers/internal/testprog"
	"gonum.org/v1/gonum/mat"
)

// robustCase is one of the small robust CNN programs the tests solve
// (4×4 images): both poolings, every loss. CVXOPT's programs have an
// epigraph per winner row and pixel, and cp (BCE, logistic) is slow on
// them: max pooling runs on fewer images. ADMM's tail is long on two of
// them (admmReaches false; TestRobustADMMCertified).
type robustCase struct {
	conv        cnn.Conv
	pool        cnn.Pooling
	loss        solvers.Loss
	n, np       int
	beta        float64
	admmReaches bool
}

var robustCases = []robustCase{
	{cnn.Conv{Size: 2, Stride: 2}, cnn.AvgPool, solvers.HingeLoss, 8, 3, 1e-2, true},
	{cnn.Conv{Size: 3, Stride: 1, Pad: 1}, cnn.AvgPool, solvers.SquaredLoss, 8, 3, 1e-2, true},
	{cnn.Conv{Size: 2, Stride: 2, Bias: true}, cnn.AvgPool, solvers.BCELoss, 8, 3, 1e-2, true},
	{cnn.Conv{Size: 3, Stride: 1, Pad: 1}, cnn.AvgPool, solvers.LogisticLoss, 6, 2, 1e-4, false},
	{cnn.Conv{Size: 2, Stride: 2, Bias: true}, cnn.MaxPool, solvers.HingeLoss, 6, 2, 1e-2, false},
	{cnn.Conv{Size: 3, Stride: 1, Bias: true}, cnn.MaxPool, solvers.SquaredLoss, 5, 2, 1e-2, true}, // overlapping patches
	{cnn.Conv{Size: 2, Stride: 2}, cnn.MaxPool, solvers.BCELoss, 4, 1, 1e-2, true},
	{cnn.Conv{Size: 2, Stride: 2, Bias: true}, cnn.MaxPool, solvers.LogisticLoss, 5, 2, 1e-4, true},
}

// build draws case trial's images from rng and returns its problem with
// sampled patterns, the images, labels and radius.
func (c robustCase) build(t *testing.T, rng *rand.Rand, trial int) (*cnn.Problem, *mat.Dense, []float64, float64) {
	t.Helper()
	shape := cnn.Shape{C: 1, H: 4, W: 4}
	x, y := images(rng, c.n, shape, c.loss)
	eps := []float64{0.05, 0.02}[trial%4/2]
	if trial == 7 {
		eps = 0.002 // larger radii leave it only the zero network here
	}
	p, err := cnn.New(x, shape, c.conv, c.pool, y, c.loss, c.beta)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.SamplePatterns(c.np, uint64(trial)); err != nil {
		t.Fatal(err)
	}
	return p, x, y, eps
}

// Convex adversarial training of CNNs with average and max pooling, every
// loss: CVXOPT's optimum between the certified bounds, a certified gap of
// 1e-6, the robust constraints, the robust objective above the standard
// optimum, and PGD never above the certified worst-case loss of any image.
func TestRobustAgainstCVXOPTAndPGD(t *testing.T) {
	testprog.RequireCVXOPT(t)
	rng := rand.New(rand.NewPCG(9, 10))
	for trial, c := range robustCases {
		conv, pool, loss, n := c.conv, c.pool, c.loss, c.n
		p, x, y, eps := c.build(t, rng, trial)
		shape := p.Shape
		t0 := time.Now()
		res, err := p.SolveRobust(context.Background(), eps, 1e-10)
		if err != nil {
			t.Fatalf("trial %d (%v, %v, %+v): %v", trial, pool, loss, conv, err)
		}
		solve := time.Since(t0)
		in := testprog.CVXOPTRobustCNNInput{Shape: [3]int{shape.C, shape.H, shape.W}, Conv: [3]int{conv.Size, conv.Stride, conv.Pad}, Bias: conv.Bias, Loss: loss.String(), Y: y, Beta: p.Beta, Eps: eps, Pool: "avg"}
		if pool == cnn.MaxPool {
			in.Pool, in.Argmax = "max", p.Argmax
		}
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
		t0 = time.Now()
		status, obj := testprog.CVXOPTRobustCNN(t, in)
		peer := time.Since(t0)
		name := fmt.Sprintf("trial %d (%v, %v, %+v, ε = %v)", trial, pool, loss, conv, eps)
		scale := math.Max(1, math.Abs(obj))
		if rel := math.Abs(res.Objective-obj) / scale; rel > 1e-6 {
			t.Errorf("%s: robust optimum %.10g, CVXOPT %.10g (%s)", name, res.Objective, obj, status)
		}
		if res.Lower > obj+1e-8*scale || res.Lower > res.Upper || res.Upper != res.Objective {
			t.Errorf("%s: certificate [%.10g, %.10g] does not hold CVXOPT's optimum %.10g", name, res.Lower, res.Upper, obj)
		}
		if res.CertifiedGap > 1e-6 {
			t.Errorf("%s: certified gap %.3g, want ≤ 1e-6 (lower %.10g, upper %.10g)", name, res.CertifiedGap, res.Lower, res.Upper)
		}
		if v, err := p.RobustViolation(eps, res.W, res.Wp); err != nil || v > 0 {
			t.Errorf("%s: robust constraints violated by %v (%v)", name, v, err)
		}
		if loss == solvers.HingeLoss || loss == solvers.SquaredLoss { // the cone programs general's interior-point method solves
			gp, err := p.Program()
			if err != nil {
				t.Fatal(err)
			}
			std, err := general.SolveInteriorPoint(context.Background(), gp, 1e-10)
			if err != nil {
				t.Fatal(err)
			}
			if res.Objective < std.Objective-1e-8 {
				t.Errorf("%s: robust optimum %.10g below the standard one %.10g", name, res.Objective, std.Objective)
			}
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
			if got > res.PointLoss[m]*(1+1e-9)+1e-9 {
				t.Errorf("%s image %d: PGD found loss %.8f above the certified %.8f", name, m, got, res.PointLoss[m])
			}
		}
		t.Logf("%s: objective %.8g, certified gap %.2g, %d interior-point iterations, %.2f s (CVXOPT %.2f s)", name, res.Objective, res.CertifiedGap, res.Iterations, solve.Seconds(), peer.Seconds())
	}
}

// The certificate is valid for any multipliers: on random programs of both
// poolings and every loss, bounds from loose solves (tolerances 1e-2 and
// 1e-5), from random nonnegative multipliers and from the optimum's
// multipliers perturbed never exceed the optimum (the certified upper
// bound of a 1e-10 solve, itself checked against CVXOPT above).
func TestRobustBoundValidForAnyMultipliers(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 22))
	shape := cnn.Shape{C: 1, H: 4, W: 4}
	losses := []solvers.Loss{solvers.HingeLoss, solvers.SquaredLoss, solvers.BCELoss, solvers.LogisticLoss}
	checked, trials := 0, 12
	if testenv.Race { // the race detector slows the solves fivefold: a third of the programs
		trials = 4
	}
	for trial := 0; trial < trials; trial++ {
		conv := []cnn.Conv{{Size: 2, Stride: 2, Bias: true}, {Size: 2, Stride: 1}, {Size: 3, Stride: 1, Pad: 1}}[trial%3]
		loss := losses[trial%4]
		pool := []cnn.Pooling{cnn.AvgPool, cnn.MaxPool}[trial/4%2]
		if pool == cnn.MaxPool && conv.Pad == 1 {
			conv.Pad = 0
		}
		x, y := images(rng, 5, shape, loss)
		eps := 0.01 + 0.05*rng.Float64()
		p, err := cnn.New(x, shape, conv, pool, y, loss, math.Pow(10, -3+2*rng.Float64()))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := p.SamplePatterns(2+trial%3, uint64(trial)); err != nil {
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
				t.Errorf("trial %d (%v, %v): lower bound %.12g from %s above the optimum %.12g", trial, pool, loss, lower, what, opt)
			}
		}
		for _, tol := range []float64{1e-2, 1e-5} {
			res, err := p.SolveRobust(context.Background(), eps, tol)
			if err != nil {
				t.Fatal(err)
			}
			check(fmt.Sprintf("a solve at tolerance %g", tol), res.Lower)
		}
		boundsFromRandomMultipliers(t, rng, p, eps, 5, check)
	}
	t.Logf("%d bounds checked", checked)
}

// boundsFromRandomMultipliers hands check the robust program's lower bounds
// from draws random multiplier vectors (entries spread over four decades,
// a third negative, which the bound clips).
func boundsFromRandomMultipliers(t *testing.T, rng *rand.Rand, p *cnn.Problem, eps float64, draws int, check func(what string, lower float64)) {
	t.Helper()
	_, rows, err := cnn.RobustBound(p, eps, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k := 0; k < draws; k++ {
		z := make([]float64, rows)
		for r := range z {
			z[r] = rng.ExpFloat64() * math.Pow(10, -3+3*rng.Float64())
			if rng.IntN(3) == 0 {
				z[r] = -z[r] // negative entries are clipped
			}
		}
		lower, _, err := cnn.RobustBound(p, eps, z)
		if err != nil {
			t.Fatal(err)
		}
		check("random multipliers", lower)
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
		{cnn.MaxPool, solvers.HingeLoss, math.Inf(1), "0 < ε < ∞"},
		{cnn.AvgPool, solvers.LogisticLoss, math.NaN(), "0 < ε < ∞"},
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

// The epigraphs of the |g_mq| are shared by the images whose gradient
// reads alike at pixel q: with P patterns and non-overlapping patches each
// pixel has at most 2^P − 1 nonzero forms, however many images.
func TestRobustEpigraphsStopGrowing(t *testing.T) {
	rng := rand.New(rand.NewPCG(41, 42))
	shape := cnn.Shape{C: 1, H: 4, W: 4}
	for _, n := range []int{10, 200} {
		x, y := images(rng, n, shape, solvers.HingeLoss)
		p, err := cnn.New(x, shape, cnn.Conv{Size: 2, Stride: 2}, cnn.AvgPool, y, solvers.HingeLoss, 1e-2)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := p.SamplePatterns(2, 1); err != nil {
			t.Fatal(err)
		}
		if e, most := cnn.RobustEpigraphs(p, 0.01), min(n, 3)*16; e > most || e < 1 {
			t.Errorf("%d images: %d epigraph variables, want 1 to %d (n·pixels = %d)", n, e, most, n*16)
		}
	}
}
