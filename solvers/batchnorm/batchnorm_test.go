package batchnorm_test

import (
	"context"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/convexnn/convexnn/solvers"
	"github.com/convexnn/convexnn/solvers/batchnorm"
	"github.com/convexnn/convexnn/solvers/internal/testprog"
	"github.com/convexnn/convexnn/solvers/ipm"
	"gonum.org/v1/gonum/floats"
	"gonum.org/v1/gonum/mat"
)

// randomData returns n Gaussian points in d dimensions, shifted off the
// origin, with column dup (when ≥ 0) a copy of column 0 (rank d − 1), and
// labels of the loss from a random teacher.
func randomData(rng *rand.Rand, n, d, dup int, loss solvers.Loss) (*mat.Dense, []float64) {
	x := mat.NewDense(n, d, nil)
	for k := 0; k < n; k++ {
		for l := 0; l < d; l++ {
			x.Set(k, l, 3+rng.NormFloat64()*(1+float64(l)))
		}
		if dup >= 0 {
			x.Set(k, dup, x.At(k, 0))
		}
	}
	y := make([]float64, n)
	for k := range y {
		f := x.At(k, 1) - 3 + 0.5*rng.NormFloat64()
		switch loss {
		case solvers.SquaredLoss:
			y[k] = f
		case solvers.BCELoss:
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

func TestBasisWhitens(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, c := range []struct{ n, d, dup, rank int }{{30, 5, -1, 5}, {30, 6, 5, 5}, {4, 7, -1, 3}} {
		x, _ := randomData(rng, c.n, c.d, c.dup, solvers.SquaredLoss)
		b, err := batchnorm.NewBasis(x)
		if err != nil {
			t.Fatal(err)
		}
		if b.Rank() != c.rank {
			t.Errorf("n=%d d=%d: rank %d, want %d", c.n, c.d, b.Rank(), c.rank)
		}
		u, err := b.Features(x)
		if err != nil {
			t.Fatal(err)
		}
		// U′ᵀU′ = I: U's columns are orthonormal and orthogonal to 1.
		var g mat.Dense
		g.Mul(u.T(), u)
		r, _ := g.Dims()
		if r != c.rank+1 {
			t.Fatalf("U′ has %d columns, want %d", r, c.rank+1)
		}
		for a := 0; a < r; a++ {
			for e := 0; e < r; e++ {
				want := 0.0
				if a == e {
					want = 1
				}
				if math.Abs(g.At(a, e)-want) > 1e-10 {
					t.Fatalf("n=%d d=%d: (U′ᵀU′)[%d,%d] = %v, want %v", c.n, c.d, a, e, g.At(a, e), want)
				}
			}
		}
	}
}

// feasible returns weights of p that satisfy its constraints exactly:
// patterns D_i = 1[U′q_i ≥ 0] of random q_i and v_i, w_i nonnegative
// multiples of q_i (some zero).
func feasible(rng *rand.Rand, p *batchnorm.Problem, np int) solvers.Weights {
	u := p.Program.X
	n, d := u.Dims()
	p.Program.D = nil
	qs := make([][]float64, np)
	for i := range qs {
		q := make([]float64, d)
		for l := range q {
			q[l] = rng.NormFloat64()
		}
		var z mat.VecDense
		z.MulVec(u, mat.NewVecDense(d, q))
		pat := make(solvers.Pattern, n)
		for k := range pat {
			pat[k] = z.AtVec(k) >= 0
		}
		p.Program.D = append(p.Program.D, pat)
		qs[i] = q
	}
	wt := p.Program.NewWeights()
	for i, q := range qs {
		a, b := rng.Float64(), rng.Float64()
		if i%3 == 1 {
			b = 0
		}
		if i%5 == 2 {
			a = 0
		}
		floats.ScaleTo(wt.V.RawRowView(i), a, q)
		floats.ScaleTo(wt.W.RawRowView(i), b, q)
	}
	return wt
}

// At feasible points the recovered BN network, with full-batch BN on the
// training data, has the convex objective, and predicts with the training
// statistics what the two-layer network on the BN features predicts.
func TestRecoverKeepsTheObjective(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for trial := 0; trial < 40; trial++ {
		loss := []solvers.Loss{solvers.SquaredLoss, solvers.HingeLoss, solvers.BCELoss, solvers.LogisticLoss}[trial%4]
		n, d := 10+rng.IntN(40), 2+rng.IntN(6)
		dup := -1
		if trial%3 == 0 {
			dup = d - 1
		}
		x, y := randomData(rng, n, d, dup, loss)
		p, err := batchnorm.New(x, y, loss, 0.01+rng.Float64())
		if err != nil {
			t.Fatal(err)
		}
		wt := feasible(rng, p, 1+rng.IntN(8))
		if v, err := p.Program.Violation(wt); err != nil || v > 0 {
			t.Fatalf("trial %d: the point is not feasible: %v %v", trial, v, err)
		}
		cobj, err := p.Program.Objective(wt)
		if err != nil {
			t.Fatal(err)
		}
		net, err := p.Recover(wt)
		if err != nil {
			t.Fatal(err)
		}
		obj, err := net.Objective(x, y, loss, p.Program.Beta)
		if err != nil {
			t.Fatal(err)
		}
		if math.Abs(obj-cobj) > 1e-9*math.Max(1, math.Abs(cobj)) {
			t.Errorf("trial %d (%v, n=%d, d=%d): BN network objective %.12g, convex objective %.12g", trial, loss, n, d, obj, cobj)
		}
		train, err := net.Predict(x)
		if err != nil {
			t.Fatal(err)
		}
		batch, err := net.BatchOutputs(x)
		if err != nil {
			t.Fatal(err)
		}
		if diff := maxDiff(train, batch); diff > 1e-9*math.Max(1, floats.Norm(batch, math.Inf(1))) {
			t.Errorf("trial %d: training-statistics outputs differ from full-batch outputs on the training data by %g", trial, diff)
		}
		// New points: the BN network with training statistics is the
		// two-layer network on the BN features.
		xn, _ := randomData(rng, 7, d, dup, loss)
		got, err := net.Predict(xn)
		if err != nil {
			t.Fatal(err)
		}
		lin, err := p.Program.Recover(wt)
		if err != nil {
			t.Fatal(err)
		}
		fn, err := p.Basis.Features(xn)
		if err != nil {
			t.Fatal(err)
		}
		want, err := lin.Predict(fn)
		if err != nil {
			t.Fatal(err)
		}
		if diff := maxDiff(got, want); diff > 1e-9*math.Max(1, floats.Norm(want, math.Inf(1))) {
			t.Errorf("trial %d: predictions on new points differ from the feature network's by %g", trial, diff)
		}
		for j, g := range net.Gamma {
			if g < 0 || net.Scale[j] <= 0 || math.Abs(floats.Norm(mat.Col(nil, j, net.W), 2)-1) > 1e-12 {
				t.Fatalf("trial %d neuron %d: γ = %v, s = %v, ‖w‖ = %v", trial, j, g, net.Scale[j], floats.Norm(mat.Col(nil, j, net.W), 2))
			}
		}
	}
}

func maxDiff(a, b []float64) float64 {
	var m float64
	for k := range a {
		m = math.Max(m, math.Abs(a[k]-b[k]))
	}
	return m
}

// The interior-point optimum of the BN program matches CVXOPT's on the
// oracle's own U′ (its own centring and SVD; the bases differ by an
// orthogonal map, which keeps the optimum), and the recovered network
// attains it.
func TestOptimumAgainstCVXOPT(t *testing.T) {
	testprog.RequireCVXOPT(t)
	rng := rand.New(rand.NewPCG(5, 6))
	for trial := 0; trial < 8; trial++ {
		loss := []solvers.Loss{solvers.SquaredLoss, solvers.HingeLoss}[trial%2]
		n, d := 20+rng.IntN(30), 2+rng.IntN(5)
		dup := -1
		if trial%4 >= 2 {
			dup = d - 1
		}
		x, y := randomData(rng, n, d, dup, loss)
		beta := []float64{1e-3, 0.05, 0.5}[trial%3]
		p, err := batchnorm.New(x, y, loss, beta)
		if err != nil {
			t.Fatal(err)
		}
		if err := p.SamplePatterns(6+rng.IntN(10), uint64(trial)); err != nil {
			t.Fatal(err)
		}
		res, err := ipm.Solve(context.Background(), p.Program, ipm.Options{Tol: 1e-10})
		if err != nil {
			t.Fatal(err)
		}
		oracle := testprog.CVXOPTBatchNorm(t, x, y, p.Program.D, loss, beta)
		if oracle.Rank != p.Basis.Rank() {
			t.Fatalf("trial %d: rank %d, the oracle's %d", trial, p.Basis.Rank(), oracle.Rank)
		}
		if oracle.Status != "optimal" {
			t.Logf("trial %d: CVXOPT ended %q at tolerance %g", trial, oracle.Status, oracle.Tolerance)
		}
		if rel := math.Abs(res.Objective-oracle.Objective) / math.Max(1, math.Abs(oracle.Objective)); rel > 1e-6 {
			t.Errorf("trial %d (%v, n=%d, d=%d, rank %d, β=%g): optimum %.10g, CVXOPT %.10g (relative difference %.1e)",
				trial, loss, n, d, p.Basis.Rank(), beta, res.Objective, oracle.Objective, rel)
		}
		net, err := p.Recover(res.Weights)
		if err != nil {
			t.Fatal(err)
		}
		obj, err := net.Objective(x, y, loss, beta)
		if err != nil {
			t.Fatal(err)
		}
		if rel := math.Abs(obj-res.Objective) / math.Max(1, math.Abs(res.Objective)); rel > 1e-6 {
			t.Errorf("trial %d: recovered BN network objective %.10g, optimum %.10g", trial, obj, res.Objective)
		}
	}
}

func TestBadInput(t *testing.T) {
	nan := mat.NewDense(3, 2, []float64{1, 2, 3, math.NaN(), 5, 6})
	same := mat.NewDense(3, 2, []float64{1, 2, 1, 2, 1, 2})
	for _, c := range []struct {
		x    *mat.Dense
		want string
	}{
		{nil, "no data matrix"},
		{mat.NewDense(1, 3, []float64{1, 2, 3}), "at least two points"},
		{nan, "NaN"},
		{same, "every training point is the same"},
	} {
		_, err := batchnorm.New(c.x, []float64{1, 1, 1}, solvers.SquaredLoss, 0.1)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("error %v, want one naming %q", err, c.want)
		}
	}
	x := mat.NewDense(4, 2, []float64{0, 1, 1, 0, 2, 3, 5, 1})
	p, err := batchnorm.New(x, []float64{1, -1, 1, -1}, solvers.HingeLoss, 0.1)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Basis.Features(mat.NewDense(2, 3, nil)); err == nil || !strings.Contains(err.Error(), "3 features") {
		t.Errorf("features of 3-feature data: %v", err)
	}
	if err := p.SamplePatterns(3, 1); err != nil {
		t.Fatal(err)
	}
	res, err := ipm.Solve(context.Background(), p.Program, ipm.Options{})
	if err != nil {
		t.Fatal(err)
	}
	net, err := p.Recover(res.Weights)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := net.Predict(mat.NewDense(1, 5, nil)); err == nil || !strings.Contains(err.Error(), "5 features") {
		t.Errorf("prediction on 5-feature data: %v", err)
	}
	if _, err := net.Objective(x, []float64{1}, solvers.HingeLoss, 0.1); err == nil || !strings.Contains(err.Error(), "labels") {
		t.Errorf("objective with 1 label for 4 points: %v", err)
	}
}
