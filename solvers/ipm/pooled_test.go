package ipm

import (
	"context"
	"math"
	"strings"
	"testing"

	"github.com/convexnn/convexnn/solvers"
	"gonum.org/v1/gonum/mat"
)

// With fold 1, SolvePooled is Solve: the same program, the same optimum.
// (The pooled programs themselves are checked against the dense cone
// program in solvers/cnn, TestSolveInteriorPointPooled.)
func TestSolvePooledFoldOne(t *testing.T) {
	x := mat.NewDense(6, 2, []float64{1, 0.5, -0.3, 1, 0.7, -1, -1, -0.2, 0.4, 0.9, -0.8, 0.3})
	y := []float64{1, -1, 1, -1, 1, -1}
	d := solvers.Patterns{{true, false, true, false, true, true}, {false, true, true, false, false, true}}
	for _, loss := range []solvers.Loss{solvers.SquaredLoss, solvers.HingeLoss} {
		p := &solvers.Program{X: x, Y: y, D: d, Loss: loss, Beta: 0.01}
		want, err := Solve(context.Background(), p, Options{Tol: 1e-10})
		if err != nil {
			t.Fatal(err)
		}
		got, err := SolvePooled(context.Background(), x, 1, d, y, loss, 0.01, Options{Tol: 1e-10})
		if err != nil {
			t.Fatal(err)
		}
		if math.Abs(got.Objective-want.Objective) > 1e-8*math.Max(1, want.Objective) {
			t.Errorf("%v: pooled optimum %.12g, Solve's %.12g", loss, got.Objective, want.Objective)
		}
	}
}

func TestSolvePooledBadInput(t *testing.T) {
	x := mat.NewDense(4, 2, []float64{1, 0, 0, 1, 1, 1, -1, 0})
	nan := mat.NewDense(4, 2, []float64{1, 0, 0, math.NaN(), 1, 1, -1, 0})
	y := []float64{1, -1}
	d := solvers.Patterns{{true, false, true, true}}
	for _, tc := range []struct {
		x    *mat.Dense
		fold int
		d    solvers.Patterns
		loss solvers.Loss
		want string
	}{
		{nil, 2, d, solvers.HingeLoss, "no data matrix"},
		{nan, 2, d, solvers.HingeLoss, "NaN"},
		{x, 3, d, solvers.HingeLoss, "X has 4 rows, need fold·n = 3·2"},
		{x, 2, solvers.Patterns{{true, false}}, solvers.HingeLoss, "pattern 0 has 2 entries, X has 4 rows"},
		{x, 2, nil, solvers.HingeLoss, "no activation patterns"},
		{x, 2, d, solvers.BCELoss, "squared and hinge"},
	} {
		_, err := SolvePooled(context.Background(), tc.x, tc.fold, tc.d, y, tc.loss, 0.1, Options{})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("error %v, want one mentioning %q", err, tc.want)
		}
	}
}

func TestDistinctRows(t *testing.T) {
	x := mat.NewDense(5, 2, []float64{0, 1, 2, 3, 0, 1, 0, 1, 2, 3})
	d := solvers.Patterns{{true, false, true, false, false}}
	xg, dg, first := distinctRows(x, d)
	// Rows 0 and 2 repeat (same values and pattern entry); row 3 has row 0's
	// values but another entry; row 4 repeats row 1.
	if want := []int{0, 1, 3}; len(first) != 3 || first[0] != 0 || first[1] != 1 || first[2] != 3 {
		t.Fatalf("first occurrences %v, want %v", first, want)
	}
	if r, _ := xg.Dims(); r != 3 || xg.At(2, 1) != 1 || len(dg[0]) != 3 || dg[0][0] != true || dg[0][2] != false {
		t.Fatalf("distinct rows %v, patterns %v", mat.Formatted(xg), dg)
	}
}
