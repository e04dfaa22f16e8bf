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
	"gonum.org/v1/gonum/floats"
	"gonum.org/v1/gonum/mat"
)

func TestPatches(t *testing.T) {
	// One 2×3×3 image (CHW): channel 0 is 1…9, channel 1 is 11…19.
	img := make([]float64, 18)
	for i := range 9 {
		img[i], img[9+i] = float64(1+i), float64(11+i)
	}
	x := mat.NewDense(1, 18, img)
	pt, err := cnn.Patches(x, cnn.Shape{C: 2, H: 3, W: 3}, cnn.Conv{Size: 2, Stride: 1})
	if err != nil {
		t.Fatal(err)
	}
	if len(pt) != 4 {
		t.Fatalf("%d patches, want 4", len(pt))
	}
	want := [][]float64{
		{1, 2, 4, 5, 11, 12, 14, 15}, {2, 3, 5, 6, 12, 13, 15, 16},
		{4, 5, 7, 8, 14, 15, 17, 18}, {5, 6, 8, 9, 15, 16, 18, 19},
	}
	for k, w := range want {
		if got := pt[k].RawRowView(0); !floats.Equal(got, w) {
			t.Errorf("patch %d = %v, want %v", k, got, w)
		}
	}
	// Padding 1, stride 2: positions (0,0), (0,2), (2,0), (2,2) of the
	// padded 5×5 image.
	pt, err = cnn.Patches(x, cnn.Shape{C: 2, H: 3, W: 3}, cnn.Conv{Size: 2, Stride: 2, Pad: 1})
	if err != nil {
		t.Fatal(err)
	}
	if got := pt[0].RawRowView(0); !floats.Equal(got, []float64{0, 0, 0, 1, 0, 0, 0, 11}) {
		t.Errorf("padded patch 0 = %v", got)
	}
	if got := pt[3].RawRowView(0); !floats.Equal(got, []float64{5, 6, 8, 9, 15, 16, 18, 19}) {
		t.Errorf("padded patch 3 = %v", got)
	}
	// Bias: every patch ends with a 1.
	pt, err = cnn.Patches(x, cnn.Shape{C: 2, H: 3, W: 3}, cnn.Conv{Size: 2, Stride: 1, Bias: true})
	if err != nil {
		t.Fatal(err)
	}
	if got := pt[1].RawRowView(0); !floats.Equal(got, []float64{2, 3, 5, 6, 12, 13, 15, 16, 1}) {
		t.Errorf("patch 1 with bias = %v", got)
	}
}

// images returns n random c×h×w images and labels for the loss.
func images(rng *rand.Rand, n int, s cnn.Shape, loss solvers.Loss) (*mat.Dense, []float64) {
	d := s.C * s.H * s.W
	x := mat.NewDense(n, d, nil)
	y := make([]float64, n)
	for k := 0; k < n; k++ {
		row := x.RawRowView(k)
		for l := range row {
			row[l] = rng.Float64()
		}
		f := row[0] + row[d-1] - 1 + 0.2*rng.NormFloat64()
		switch {
		case loss == solvers.SquaredLoss:
			y[k] = f
		case loss == solvers.BCELoss:
			if f > 0 {
				y[k] = 1
			}
		default:
			y[k] = -1
			if f > 0 {
				y[k] = 1
			}
		}
	}
	return x, y
}

// At feasible points, the recovered CNN's training objective is the convex
// objective, for both poolings and every loss.
func TestRecoverKeepsTheObjective(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	shape := cnn.Shape{C: 2, H: 5, W: 4}
	for trial := 0; trial < 40; trial++ {
		loss := []solvers.Loss{solvers.SquaredLoss, solvers.HingeLoss, solvers.BCELoss, solvers.LogisticLoss}[trial%4]
		pool := []cnn.Pooling{cnn.AvgPool, cnn.MaxPool}[trial/4%2]
		conv := []cnn.Conv{{Size: 2, Stride: 1}, {Size: 3, Stride: 2, Pad: 1, Bias: true}}[trial/8%2]
		x, y := images(rng, 15, shape, loss)
		p, err := cnn.New(x, shape, conv, pool, y, loss, 0.01+rng.Float64())
		if err != nil {
			t.Fatal(err)
		}
		var dirs [][]float64
		for len(dirs) < 4 {
			u := make([]float64, p.Filter())
			for l := range u {
				u[l] = rng.NormFloat64()
			}
			if ok, err := p.AddPattern(u); err != nil {
				t.Fatal(err)
			} else if ok {
				dirs = append(dirs, u)
			}
		}
		gp, err := p.Program()
		if err != nil {
			t.Fatal(err)
		}
		f := p.Filter()
		w, wp := make([]float64, 4*f), make([]float64, 4*f)
		for i, u := range dirs {
			floats.ScaleTo(w[i*f:(i+1)*f], float64(i%3)*rng.Float64(), u)
			floats.ScaleTo(wp[i*f:(i+1)*f], float64((i+1)%3)*rng.Float64(), u)
		}
		if v, err := gp.Violation(w, wp); err != nil || v > 1e-12 {
			t.Fatalf("trial %d: the point violates the constraints by %v (%v)", trial, v, err)
		}
		cobj, err := gp.Objective(w, wp)
		if err != nil {
			t.Fatal(err)
		}
		net, err := p.Recover(w, wp)
		if err != nil {
			t.Fatal(err)
		}
		obj, err := net.Objective(x, y, loss, p.Beta)
		if err != nil {
			t.Fatal(err)
		}
		if math.Abs(obj-cobj) > 1e-9*math.Max(1, cobj) {
			t.Errorf("trial %d (%v, %v, %+v): CNN objective %.12g, convex objective %.12g", trial, loss, pool, conv, obj, cobj)
		}
	}
}

// The interior-point optimum of the CNN programs matches CVXOPT's on the
// same F and G, is certified, and the recovered CNN attains it; ADMM
// approaches it.
func TestOptimumAgainstCVXOPT(t *testing.T) {
	testprog.RequireCVXOPT(t)
	rng := rand.New(rand.NewPCG(3, 4))
	shape := cnn.Shape{C: 1, H: 4, W: 4}
	for trial := 0; trial < 8; trial++ {
		loss := []solvers.Loss{solvers.SquaredLoss, solvers.HingeLoss}[trial%2]
		pool := []cnn.Pooling{cnn.AvgPool, cnn.MaxPool}[trial/2%2]
		conv := cnn.Conv{Size: 2, Stride: 1 + trial/4}
		x, y := images(rng, 14, shape, loss)
		p, err := cnn.New(x, shape, conv, pool, y, loss, []float64{1e-3, 0.05}[trial%2])
		if err != nil {
			t.Fatal(err)
		}
		if _, err := p.SamplePatterns(6, uint64(trial)); err != nil {
			t.Fatal(err)
		}
		gp, err := p.Program()
		if err != nil {
			t.Fatal(err)
		}
		res, err := general.SolveInteriorPoint(context.Background(), gp, 1e-10)
		if err != nil {
			t.Fatal(err)
		}
		sizes, blocks := gp.Blocks()
		oracle := testprog.CVXOPTGeneral(t, gp.F, sizes, blocks, gp.Y, gp.Loss, gp.Beta)
		if rel := math.Abs(res.Objective-oracle.Objective) / math.Max(1, oracle.Objective); rel > 1e-6 {
			t.Errorf("trial %d (%v, %v): optimum %.10g, CVXOPT %.10g (%s)", trial, loss, pool, res.Objective, oracle.Objective, oracle.Status)
		}
		if res.Bound.Gap > 1e-6 {
			t.Errorf("trial %d (%v, %v): certified gap %.1e", trial, loss, pool, res.Bound.Gap)
		}
		net, err := p.Recover(res.W, res.Wp)
		if err != nil {
			t.Fatal(err)
		}
		obj, err := net.Objective(x, y, loss, p.Beta)
		if err != nil {
			t.Fatal(err)
		}
		if rel := math.Abs(obj-res.Objective) / math.Max(1, res.Objective); rel > 1e-6 {
			t.Errorf("trial %d (%v, %v): recovered CNN objective %.10g, optimum %.10g", trial, loss, pool, obj, res.Objective)
		}
		a, err := general.New(gp, general.Options{}, nil)
		if err != nil {
			t.Fatal(err)
		}
		steps := 3000
		if loss == solvers.SquaredLoss {
			steps = 30000 // ρ = 0.1 is slow on these: 0.0475 against 0.04423 after 3000 steps, 0.04423455 after 30000
		}
		last, err := a.Solve(context.Background(), steps, 0, 0, nil)
		if err != nil {
			t.Fatal(err)
		}
		b, err := a.Bound()
		if err != nil {
			t.Fatal(err)
		}
		if b.Lower > res.Bound.Upper+1e-9 || b.Upper < res.Bound.Lower-1e-9 {
			t.Errorf("trial %d: ADMM's bound [%v, %v] misses the optimum in [%v, %v]", trial, b.Lower, b.Upper, res.Bound.Lower, res.Bound.Upper)
		}
		if loss == solvers.SquaredLoss && (b.Upper-res.Objective)/math.Max(1, res.Objective) > 1e-4 {
			t.Errorf("trial %d (%v): ADMM after %d steps at %.8g (feasible), the optimum %.8g", trial, pool, last.Iter, b.Upper, res.Objective)
		}
	}
}

func TestBadInput(t *testing.T) {
	x := mat.NewDense(2, 8, nil)
	y := []float64{1, -1}
	for _, c := range []struct {
		s    cnn.Shape
		cv   cnn.Conv
		want string
	}{
		{cnn.Shape{C: 1, H: 2, W: 4}, cnn.Conv{Size: 3, Stride: 1}, "do not fit"},
		{cnn.Shape{C: 1, H: 2, W: 4}, cnn.Conv{Size: 2, Stride: 0}, "stride 0"},
		{cnn.Shape{C: 1, H: 3, W: 3}, cnn.Conv{Size: 2, Stride: 1}, "8 entries, images of shape 1×3×3 have 9"},
		{cnn.Shape{C: 0, H: 2, W: 4}, cnn.Conv{Size: 2, Stride: 1}, "must be positive"},
		{cnn.Shape{C: 1, H: 2, W: 4}, cnn.Conv{Size: 2, Stride: 1, Pad: 2}, "padding must be smaller than the filter"},
	} {
		if _, err := cnn.New(x, c.s, c.cv, cnn.AvgPool, y, solvers.HingeLoss, 0.1); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v %+v: error %v, want one naming %q", c.s, c.cv, err, c.want)
		}
	}
	if _, err := cnn.New(x, cnn.Shape{C: 1, H: 2, W: 4}, cnn.Conv{Size: 2, Stride: 1}, cnn.AvgPool, y, solvers.Loss(99), 0.1); err == nil || !strings.Contains(err.Error(), "unknown loss") {
		t.Errorf("loss 99: %v", err)
	}
	s, cv := cnn.Shape{C: 1, H: 2, W: 4}, cnn.Conv{Size: 2, Stride: 1}
	if _, err := cnn.New(x, s, cv, cnn.AvgPool, []float64{1, 0.5}, solvers.HingeLoss, 0.1); err == nil || !strings.Contains(err.Error(), "needs labels") {
		t.Errorf("labels: %v", err)
	}
	if _, err := cnn.New(x, s, cv, cnn.Pooling(7), y, solvers.HingeLoss, 0.1); err == nil || !strings.Contains(err.Error(), "unknown pooling") {
		t.Errorf("pooling: %v", err)
	}
	p, err := cnn.New(x, s, cv, cnn.MaxPool, y, solvers.HingeLoss, 0.1)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Program(); err == nil || !strings.Contains(err.Error(), "no patterns") {
		t.Errorf("program without patterns: %v", err)
	}
	if _, err := p.AddPattern([]float64{1}); err == nil || !strings.Contains(err.Error(), "1 entries, filters have 4") {
		t.Errorf("short direction: %v", err)
	}
	if _, err := p.AddPattern([]float64{1, -1, 0.5, 2}); err != nil {
		t.Fatal(err)
	}
	// A point of the wrong length, or a bad radius, is refused by every
	// function of a point.
	if _, err := p.RobustViolation(0.1, []float64{1}, []float64{1}); err == nil || !strings.Contains(err.Error(), "point has 1 and 1 entries, the program 4") {
		t.Errorf("RobustViolation of a short point: %v", err)
	}
	if _, _, err := p.RobustObjective(0.1, make([]float64, 4), make([]float64, 3)); err == nil || !strings.Contains(err.Error(), "point has 4 and 3 entries") {
		t.Errorf("RobustObjective of a short point: %v", err)
	}
	if _, err := p.RobustViolation(math.NaN(), make([]float64, 4), make([]float64, 4)); err == nil || !strings.Contains(err.Error(), "ε = NaN") {
		t.Errorf("RobustViolation at ε = NaN: %v", err)
	}
	if _, err := p.Recover(make([]float64, 5), make([]float64, 4)); err == nil || !strings.Contains(err.Error(), "point has 5 and 4 entries") {
		t.Errorf("Recover of a long point: %v", err)
	}
}
