package twohidden_test

import (
	"context"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/convexnn/convexnn/solvers"
	"github.com/convexnn/convexnn/solvers/general"
	"github.com/convexnn/convexnn/solvers/internal/testprog"
	"github.com/convexnn/convexnn/solvers/twohidden"
	"gonum.org/v1/gonum/floats"
	"gonum.org/v1/gonum/mat"
)

// data returns n points in 2-D with a bias column and labels for the loss.
func data(rng *rand.Rand, n int, loss solvers.Loss) (*mat.Dense, []float64) {
	x := mat.NewDense(n, 3, nil)
	y := make([]float64, n)
	for k := 0; k < n; k++ {
		a, b := rng.NormFloat64(), rng.NormFloat64()
		x.SetRow(k, []float64{a, b, 1})
		f := a*b + 0.1*rng.NormFloat64()
		switch loss {
		case solvers.SquaredLoss:
			y[k] = f
		case solvers.BCELoss:
			if f > 0 {
				y[k] = 1
			}
		default:
			y[k] = math.Copysign(1, f)
		}
	}
	return x, y
}

// randomNet returns k sub-networks of m1 neurons with first-layer columns
// in the unit ball.
func randomNet(rng *rand.Rand, k, d, m1 int) *twohidden.Network {
	net := &twohidden.Network{}
	for i := 0; i < k; i++ {
		s := twohidden.SubNetwork{W1: mat.NewDense(d, m1, nil), W2: make([]float64, m1), W3: rng.NormFloat64()}
		for j := 0; j < m1; j++ {
			col := make([]float64, d)
			for a := range col {
				col[a] = rng.NormFloat64()
			}
			floats.Scale(rng.Float64()/floats.Norm(col, 2), col)
			s.W1.SetCol(j, col)
			s.W2[j] = rng.NormFloat64()
		}
		net.Subs = append(net.Subs, s)
	}
	return net
}

// A network lifts to a feasible point whose objective is at most the
// network's, and that point's recovered network has exactly the convex
// objective.
func TestLiftAndRecover(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for trial := 0; trial < 40; trial++ {
		loss := []solvers.Loss{solvers.SquaredLoss, solvers.HingeLoss, solvers.BCELoss, solvers.LogisticLoss}[trial%4]
		m1 := 1 + trial%3
		x, y := data(rng, 12+trial%9, loss)
		p, err := twohidden.New(x, y, m1, loss, 0.01+rng.Float64())
		if err != nil {
			t.Fatal(err)
		}
		net := randomNet(rng, 1+trial%4, 3, m1)
		for i := range net.Subs {
			if _, err := p.AddTuple(twohidden.TupleOf(x, &net.Subs[i])); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := p.SamplePatterns(3, uint64(trial)); err != nil {
			t.Fatal(err)
		}
		gp, err := p.Program()
		if err != nil {
			t.Fatal(err)
		}
		w, wp, err := p.Lift(net)
		if err != nil {
			t.Fatal(err)
		}
		if v, err := gp.Violation(w, wp); err != nil || v > 1e-12 {
			t.Fatalf("trial %d: lifted point violates the constraints by %v (%v)", trial, v, err)
		}
		cobj, err := gp.Objective(w, wp)
		if err != nil {
			t.Fatal(err)
		}
		nobj, err := net.Objective(x, y, loss, p.Beta)
		if err != nil {
			t.Fatal(err)
		}
		if cobj > nobj*(1+1e-12)+1e-12 {
			t.Errorf("trial %d (%v, m1 = %d): lifted objective %.12g above the network's %.12g", trial, loss, m1, cobj, nobj)
		}
		rec, err := p.Recover(w, wp)
		if err != nil {
			t.Fatal(err)
		}
		robj, err := rec.Objective(x, y, loss, p.Beta)
		if err != nil {
			t.Fatal(err)
		}
		if math.Abs(robj-cobj) > 1e-9*math.Max(1, cobj) {
			t.Errorf("trial %d (%v, m1 = %d): recovered network's objective %.12g, convex objective %.12g", trial, loss, m1, robj, cobj)
		}
	}
}

// The interior-point optimum matches CVXOPT's on the same F and G, is
// certified, is attained by the recovered network, and is at most the
// objective of every network whose patterns the program holds.
func TestOptimumAgainstCVXOPT(t *testing.T) {
	testprog.RequireCVXOPT(t)
	rng := rand.New(rand.NewPCG(3, 4))
	for trial := 0; trial < 6; trial++ {
		loss := []solvers.Loss{solvers.SquaredLoss, solvers.HingeLoss}[trial%2]
		m1 := 1 + trial%2
		x, y := data(rng, 14, loss)
		p, err := twohidden.New(x, y, m1, loss, []float64{1e-3, 0.05, 0.3}[trial%3])
		if err != nil {
			t.Fatal(err)
		}
		net := randomNet(rng, 3, 3, m1)
		for i := range net.Subs {
			if _, err := p.AddTuple(twohidden.TupleOf(x, &net.Subs[i])); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := p.SamplePatterns(8, uint64(trial)); err != nil {
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
			t.Errorf("trial %d (%v, m1 = %d): optimum %.10g, CVXOPT %.10g (%s)", trial, loss, m1, res.Objective, oracle.Objective, oracle.Status)
		}
		if res.Bound.Gap > 1e-6 {
			t.Errorf("trial %d: certified gap %.1e", trial, res.Bound.Gap)
		}
		rec, err := p.Recover(res.W, res.Wp)
		if err != nil {
			t.Fatal(err)
		}
		robj, err := rec.Objective(x, y, loss, p.Beta)
		if err != nil {
			t.Fatal(err)
		}
		if rel := math.Abs(robj-res.Objective) / math.Max(1, res.Objective); rel > 1e-6 {
			t.Errorf("trial %d: recovered network objective %.10g, optimum %.10g", trial, robj, res.Objective)
		}
		nobj, err := net.Objective(x, y, loss, p.Beta)
		if err != nil {
			t.Fatal(err)
		}
		if res.Bound.Lower > nobj+1e-9 {
			t.Errorf("trial %d: certified lower bound %.10g above a network of the program's patterns (%.10g)", trial, res.Bound.Lower, nobj)
		}
	}
}

func TestBadInput(t *testing.T) {
	x := mat.NewDense(3, 2, []float64{1, 2, 3, 4, 5, 6})
	for _, c := range []struct {
		x    *mat.Dense
		y    []float64
		m1   int
		beta float64
		want string
	}{
		{nil, nil, 1, 1, "no data matrix"},
		{x, []float64{1, 1}, 1, 1, "y has 2 entries"},
		{x, []float64{1, 0, 1}, 1, 1, "needs labels"},
		{x, []float64{1, -1, 1}, 0, 1, "0 first-layer neurons"},
		{x, []float64{1, -1, 1}, 2, -1, "β = -1"},
	} {
		if _, err := twohidden.New(c.x, c.y, c.m1, solvers.HingeLoss, c.beta); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("error %v, want one naming %q", err, c.want)
		}
	}
	p, err := twohidden.New(x, []float64{1, -1, 1}, 2, solvers.HingeLoss, 0.1)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Program(); err == nil || !strings.Contains(err.Error(), "no patterns") {
		t.Errorf("program without patterns: %v", err)
	}
	if _, err := p.AddTuple(twohidden.Tuple{First: []solvers.Pattern{{true, false, true}}, Sign: []float64{1}, Second: solvers.Pattern{true, true, true}}); err == nil || !strings.Contains(err.Error(), "1 first-layer patterns") {
		t.Errorf("short tuple: %v", err)
	}
	bad := &twohidden.Network{Subs: []twohidden.SubNetwork{{W1: mat.NewDense(2, 1, []float64{3, 0}), W2: []float64{1}, W3: 1}}}
	if _, err := bad.Objective(x, []float64{1, -1, 1}, solvers.HingeLoss, 0.1); err == nil || !strings.Contains(err.Error(), "> 1") {
		t.Errorf("first layer outside the unit ball: %v", err)
	}
}
