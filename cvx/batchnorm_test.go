package cvx

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/convexnn/convexnn/solvers"

	"gonum.org/v1/gonum/mat"
)

// A BatchNorm problem solves on U′, and its network, turned into the BN
// network, has the solution's objective with full-batch BN on the raw data.
func TestBatchNormProblem(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	n, d := 40, 3
	x := mat.NewDense(n, d, nil)
	y := make([]float64, n)
	for k := 0; k < n; k++ {
		for l := 0; l < d; l++ {
			x.Set(k, l, 5+rng.NormFloat64())
		}
		y[k] = -1
		if x.At(k, 0)*x.At(k, 1) > 25 {
			y[k] = 1
		}
	}
	p := Classify(x, y).Hinge().Beta(1e-3).BatchNorm().SamplePatterns(12, 1)
	sol, err := Solve(p, IPM{})
	if err != nil {
		t.Fatal(err)
	}
	if cols, _ := sol.Program.X.Dims(); cols != n {
		t.Fatalf("program has %d rows", cols)
	}
	if _, c := sol.Program.X.Dims(); c != d+1 {
		t.Fatalf("program data has %d columns, want r + 1 = %d", c, d+1)
	}
	bn, err := p.BatchNormNetwork(sol.Network)
	if err != nil {
		t.Fatal(err)
	}
	obj, err := bn.Objective(x, y, solvers.HingeLoss, 1e-3)
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(obj-sol.Objective) > 1e-6*math.Max(1, sol.Objective) {
		t.Errorf("BN network objective %.10g, convex optimum %.10g", obj, sol.Objective)
	}
	if err := BatchNormTable(bn); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		p    *Problem
		want string
	}{
		{Classify(x, y).Bias().BatchNorm(), "drop Bias()"},
		{Classify(x, y).BatchNorm().Bias().SamplePatterns(3, 1), "drop Bias()"},
		{Classify(x, y).BatchNorm().Robust(0.1, LInf).SamplePatterns(3, 1), "robust training is not available"},
		{Classify(mat.NewDense(3, 2, []float64{1, 1, 1, 1, 1, 1}), []float64{1, -1, 1}).BatchNorm().SamplePatterns(2, 1), "every training point is the same"},
	} {
		if _, err := c.p.Convex(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("error %v, want one naming %q", err, c.want)
		}
	}
	if _, err := Classify(x, y).SamplePatterns(3, 1).BatchNormNetwork(sol.Network); err == nil || !strings.Contains(err.Error(), "no batch normalization") {
		t.Errorf("BatchNormNetwork without BatchNorm: %v", err)
	}
}
