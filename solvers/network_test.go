package solvers

import (
	"math"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/mat"
)

// TestPredictMatchesEval checks the blocked matrix-product Predict against
// the per-point Eval, with and without the bias row, on more rows than one
// block, and its shape errors.
func TestPredictMatchesEval(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, bias := range []bool{false, true} {
		rows, cols, m := predictBlock+77, 5, 9
		x := robRaw(rng, rows, cols)
		net := robNetwork(rng, cols, m, bias)
		pred, err := net.Predict(x)
		if err != nil {
			t.Fatal(err)
		}
		for k := 0; k < rows; k++ {
			f, err := net.Eval(x.RawRowView(k))
			if err != nil {
				t.Fatal(err)
			}
			if math.Abs(f-pred[k]) > 1e-12*(1+math.Abs(f)) {
				t.Fatalf("bias %v, row %d: Predict %v, Eval %v", bias, k, pred[k], f)
			}
		}
		if _, err := net.Predict(mat.NewDense(3, cols+1, nil)); err == nil {
			t.Fatalf("bias %v: Predict accepted %d features for a network of %d", bias, cols+1, cols)
		}
	}
}
