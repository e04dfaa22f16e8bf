package cnn_test

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/convexnn/convexnn/solvers"
	"github.com/convexnn/convexnn/solvers/cnn"
	"github.com/convexnn/convexnn/solvers/general"
)

// The ADMM splitting of the robust CNN programs: on both poolings and every
// loss, its certificate holds the interior-point optimum (itself checked
// against CVXOPT in TestRobustAgainstCVXOPTAndPGD), its point is feasible
// and PGD never beats its per-image certified loss; it reaches a certified
// 1e-6 on the programs where ADMM's tail is short (measured: the
// average-pooling logistic program at β = 1e-4 and the max-pooling hinge
// program end at 6e-3 and 4e-5 after 50 000 steps).
func TestRobustADMMCertified(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	for trial, c := range robustCases {
		p, x, y, eps := c.build(t, rng, trial)
		ref, err := p.SolveRobust(context.Background(), eps, 1e-10)
		if err != nil {
			t.Fatal(err)
		}
		maxIter := 30000
		if !c.admmReaches {
			maxIter = 3000
		}
		res, err := p.SolveRobustADMM(context.Background(), eps, cnn.RobustADMMOptions{Gap: 1e-6, MaxIter: maxIter})
		if err != nil {
			t.Fatal(err)
		}
		name := fmt.Sprintf("trial %d (%v, %v)", trial, c.pool, c.loss)
		opt := ref.Objective
		scale := math.Max(1, math.Abs(opt))
		if res.Lower > opt+1e-9*scale || res.Upper < opt-1e-9*scale || res.Upper != res.Objective {
			t.Errorf("%s: ADMM's certificate [%.10g, %.10g] does not hold the optimum %.10g", name, res.Lower, res.Upper, opt)
		}
		if c.admmReaches && res.CertifiedGap > 1e-6 {
			t.Errorf("%s: certified gap %.3g after %d steps, want ≤ 1e-6", name, res.CertifiedGap, res.Iterations)
		}
		if !c.admmReaches && !(res.CertifiedGap < 0.25) { // 0.16 and 1.1e-3 measured
			t.Errorf("%s: certified gap %.3g after %d steps", name, res.CertifiedGap, res.Iterations)
		}
		if v, err := p.RobustViolation(eps, res.W, res.Wp); err != nil || v > 0 {
			t.Errorf("%s: robust constraints violated by %v (%v)", name, v, err)
		}
		net, err := p.Recover(res.W, res.Wp)
		if err != nil {
			t.Fatal(err)
		}
		for m := 0; m < c.n; m++ {
			got, err := net.PGD(x.RawRowView(m), y[m], eps, 20, c.loss)
			if err != nil {
				t.Fatal(err)
			}
			if got > res.PointLoss[m]*(1+1e-9)+1e-9 {
				t.Errorf("%s image %d: PGD found loss %.8f above the certified %.8f", name, m, got, res.PointLoss[m])
			}
		}
		t.Logf("%s: interior point %.10g, ADMM [%.10g, %.10g], certified gap %.2g after %d steps", name, opt, res.Lower, res.Upper, res.CertifiedGap, res.Iterations)
	}
}

// Continuing from a saved state takes exactly the steps of an
// uninterrupted run; bad options are refused.
func TestRobustADMMResumeAndRefusals(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	shape := cnn.Shape{C: 1, H: 4, W: 4}
	for _, loss := range []solvers.Loss{solvers.HingeLoss, solvers.BCELoss} {
		x, y := images(rng, 6, shape, loss)
		p, err := cnn.New(x, shape, cnn.Conv{Size: 2, Stride: 2, Bias: true}, cnn.AvgPool, y, loss, 1e-2)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := p.SamplePatterns(2, 1); err != nil {
			t.Fatal(err)
		}
		o := cnn.RobustADMMOptions{Gap: 1e-12, CertifyEvery: 50}
		o.MaxIter = 300
		whole, err := p.SolveRobustADMM(context.Background(), 0.03, o)
		if err != nil {
			t.Fatal(err)
		}
		o.MaxIter = 120
		first, err := p.SolveRobustADMM(context.Background(), 0.03, o)
		if err != nil {
			t.Fatal(err)
		}
		o.MaxIter, o.Start = 180, first.State
		rest, err := p.SolveRobustADMM(context.Background(), 0.03, o)
		if err != nil {
			t.Fatal(err)
		}
		if rest.State.Iter != 300 || !slices.Equal(rest.State.X, whole.State.X) || !slices.Equal(rest.State.Z, whole.State.Z) || rest.State.Rho != whole.State.Rho {
			t.Errorf("%v: resumed after 120 steps, state differs from 300 steps straight (iterations %d)", loss, rest.State.Iter)
		}
		bad := *first.State
		bad.X = bad.X[1:]
		for _, tc := range []struct {
			eps  float64
			o    cnn.RobustADMMOptions
			want string
		}{
			{0, cnn.RobustADMMOptions{}, "radius"},
			{0.03, cnn.RobustADMMOptions{Gap: math.NaN()}, "Gap"},
			{0.03, cnn.RobustADMMOptions{MaxIter: -1}, "MaxIter"},
			{0.03, cnn.RobustADMMOptions{Start: &bad}, "saved"},
		} {
			if _, err := p.SolveRobustADMM(context.Background(), tc.eps, tc.o); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("%v %+v: error %v, want one about %q", tc.eps, tc.o, err, tc.want)
			}
		}
	}
}

// RobustInteriorPointFits, the rule of -solver auto and cvx.Optimum:
// small programs fit the dense interior-point method, programs with more
// than MaxRobustVariables variables (one gradient epigraph per image and
// pixel where the images' gradients differ) do not, and SolveRobust
// refuses them naming the ADMM splitting.
func TestRobustInteriorPointFits(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	shape := cnn.Shape{C: 1, H: 6, W: 6}
	for _, c := range []struct {
		n    int
		fits bool
	}{{10, true}, {2000, false}} {
		x, y := images(rng, c.n, shape, solvers.HingeLoss)
		p, err := cnn.New(x, shape, cnn.Conv{Size: 3, Stride: 1, Bias: true}, cnn.AvgPool, y, solvers.HingeLoss, 1e-2)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := p.SamplePatterns(4, 1); err != nil {
			t.Fatal(err)
		}
		if got := p.RobustInteriorPointFits(0.01); got != c.fits {
			t.Errorf("%d images: RobustInteriorPointFits %v, want %v", c.n, got, c.fits)
		}
		if !c.fits {
			if _, err := p.SolveRobust(context.Background(), 0.01, 0); err == nil || !strings.Contains(err.Error(), "NewRobustADMM") {
				t.Errorf("%d images: SolveRobust: %v, want a refusal naming the ADMM splitting", c.n, err)
			}
		}
	}
	// Within the interior-point method's variables but beyond its memory
	// (600 images: 96 084 rows × 9686 variables, 9.7 GB with the dense G):
	// refused with the estimate before G is built.
	{
		x, y := images(rng, 600, shape, solvers.HingeLoss)
		p, err := cnn.New(x, shape, cnn.Conv{Size: 3, Stride: 1, Bias: true}, cnn.AvgPool, y, solvers.HingeLoss, 1e-2)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := p.SamplePatterns(4, 1); err != nil {
			t.Fatal(err)
		}
		rows, vars, bytes := cnn.RobustSize(p, 0.01)
		if vars > cnn.MaxRobustVariables || bytes <= cnn.MaxRobustBytes {
			t.Fatalf("600 images: %d rows × %d variables, %.1f GB: the case no longer tests the memory limit", rows, vars, bytes/1e9)
		}
		if p.RobustInteriorPointFits(0.01) {
			t.Errorf("600 images: %d rows × %d variables (%.1f GB) fit, want not", rows, vars, bytes/1e9)
		}
		if _, err := p.SolveRobust(context.Background(), 0.01, 0); err == nil || !strings.Contains(err.Error(), "GB") {
			t.Errorf("600 images, %d rows × %d variables: SolveRobust: %v, want a refusal with the memory estimate", rows, vars, err)
		}
	}
	// Beyond the splitting's memory limit: refused with its estimate before
	// G is built.
	x, y := images(rng, 600, shape, solvers.HingeLoss)
	p, err := cnn.New(x, shape, cnn.Conv{Size: 3, Stride: 1, Pad: 1, Bias: true}, cnn.AvgPool, y, solvers.HingeLoss, 1e-2)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.SamplePatterns(8, 1); err != nil {
		t.Fatal(err)
	}
	_, err = p.NewRobustADMM(0.01, general.ConeOptions{}, nil)
	t.Log(err)
	if err == nil || !strings.Contains(err.Error(), "GB") || !strings.Contains(err.Error(), "limit") {
		t.Errorf("600 images at 6×6, 36 patches, 8 patterns: %v, want a refusal with the memory estimate", err)
	}
}
