package ipm

import (
	"context"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/convexnn/convexnn/internal/testenv"
	"github.com/convexnn/convexnn/solvers"
	"gonum.org/v1/gonum/floats"
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
	for _, tc := range []struct {
		starts []RowStart
		want   string
	}{
		{[]RowStart{{}, {}}, "starting rows for 2 patterns, there are 1"},
		{[]RowStart{{Rows: []int{4}}}, "starting row 4 of pattern 0: there are 4 rows"},
		{[]RowStart{{Dir: []float64{1}}}, "pattern 0's starting direction has 1 entries, rows have 2"},
		{[]RowStart{{Dir: []float64{1, math.Inf(1)}}}, "starting direction[0,1] is +Inf"},
	} {
		_, err := SolvePooledFrom(context.Background(), x, 2, d, y, solvers.HingeLoss, 0.1, tc.starts, Options{})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("starts %v: error %v, want one mentioning %q", tc.starts, err, tc.want)
		}
	}
}

func TestDistinctRows(t *testing.T) {
	x := mat.NewDense(5, 2, []float64{0, 1, 2, 3, 0, 1, 0, 1, 2, 3})
	d := solvers.Patterns{{true, false, true, false, false}}
	xg, dg, first, of := distinctRows(x, d)
	// Rows 0 and 2 repeat (same values and pattern entry); row 3 has row 0's
	// values but another entry; row 4 repeats row 1.
	if want := []int{0, 1, 3}; len(first) != 3 || first[0] != 0 || first[1] != 1 || first[2] != 3 {
		t.Fatalf("first occurrences %v, want %v", first, want)
	}
	if r, _ := xg.Dims(); r != 3 || xg.At(2, 1) != 1 || len(dg[0]) != 3 || dg[0][0] != true || dg[0][2] != false {
		t.Fatalf("distinct rows %v, patterns %v", mat.Formatted(xg), dg)
	}
	if want := []int{0, 1, 0, 2, 1}; !slices.Equal(of, want) {
		t.Fatalf("distinct row of every row %v, want %v", of, want)
	}
}

// The constraint rows' working set (rowSet) reaches the whole program's
// optimum: on random programs with far more rows than the first set holds,
// SolvePooled with fold 1 (rows added as its weights violate them) against
// Solve on every row, and its weights feasible for every row.
func TestSolvePooledRowWorkingSet(t *testing.T) {
	testenv.SkipUnderRace(t, "24 programs of 400–700 rows (18 s under -race); TestSolvePooledFoldOne runs the pooled method under it")
	rng := rand.New(rand.NewPCG(7, 1))
	for trial := range 24 {
		n, dim, np := 400+rng.IntN(300), 2+rng.IntN(3), 2+rng.IntN(5)
		x := mat.NewDense(n, dim, nil)
		for k := range n {
			for l := range dim {
				x.Set(k, l, rng.NormFloat64())
			}
			if trial%2 == 0 {
				x.Set(k, dim-1, 1) // a bias column: no row is zero
			}
		}
		y := make([]float64, n)
		for k := range y {
			y[k] = 1
			if x.At(k, 0)*x.At(k, 1) < 0.2*rng.NormFloat64() {
				y[k] = -1
			}
		}
		d, err := solvers.SamplePatterns(x, np, uint64(trial), 0)
		if err != nil {
			t.Fatal(err)
		}
		if ws := newRowSet(slices.Repeat([]*mat.Dense{x}, len(d)), d, 1e-10, nil); ws.all {
			t.Fatalf("trial %d: the first working sets hold all %d rows", trial, n)
		}
		loss := []solvers.Loss{solvers.SquaredLoss, solvers.HingeLoss}[trial%2]
		beta := math.Pow(10, -3+2*rng.Float64())
		p := &solvers.Program{X: x, Y: y, D: d, Loss: loss, Beta: beta}
		want, err := Solve(context.Background(), p, Options{Tol: 1e-10})
		if err != nil {
			t.Fatal(err)
		}
		got, err := SolvePooled(context.Background(), x, 1, d, y, loss, beta, Options{Tol: 1e-10})
		if err != nil {
			t.Fatal(err)
		}
		if math.Abs(got.Objective-want.Objective) > 1e-7*math.Max(1, want.Objective) {
			t.Errorf("trial %d (n %d, d %d, P %d, %v, β %.3g): working-set optimum %.12g, Solve's %.12g", trial, n, dim, np, loss, beta, got.Objective, want.Objective)
		}
		if v := maxViolation(x, d, got.Weights); v > 1e-8 {
			t.Errorf("trial %d: weights violate a row by %.3g (relative)", trial, v)
		}
		// Sets started from directions (any: a start only saves rounds)
		// end at the same optimum.
		starts := make([]RowStart, np)
		for i := 0; i < np; i += 2 {
			starts[i].Dir = make([]float64, dim)
			for l := range dim {
				starts[i].Dir[l] = rng.NormFloat64()
			}
		}
		dirs, err := SolvePooledFrom(context.Background(), x, 1, d, y, loss, beta, starts, Options{Tol: 1e-10})
		if err != nil {
			t.Fatal(err)
		}
		if math.Abs(dirs.Objective-want.Objective) > 1e-7*math.Max(1, want.Objective) {
			t.Errorf("trial %d: working sets from directions: optimum %.12g, Solve's %.12g", trial, dirs.Objective, want.Objective)
		}
		if v := maxViolation(x, d, dirs.Weights); v > 1e-8 {
			t.Errorf("trial %d: working sets from directions: weights violate a row by %.3g (relative)", trial, v)
		}
	}
}

// maxViolation returns the largest −(2d_ik − 1)x_kᵀu/(‖x_k‖‖u‖) over the
// rows x_k and the groups u of wt that are not numerically zero (of norm
// above 10⁻⁸ of the largest: the solver's absolute residuals make the
// relative violations of the others meaningless).
func maxViolation(x *mat.Dense, d solvers.Patterns, wt solvers.Weights) float64 {
	n, _ := x.Dims()
	worst, big := 0.0, math.Max(mat.Norm(wt.V, math.Inf(1)), mat.Norm(wt.W, math.Inf(1)))
	for i, di := range d {
		for _, u := range [][]float64{wt.V.RawRowView(i), wt.W.RawRowView(i)} {
			un := floats.Norm(u, 2)
			if un <= 1e-8*big {
				continue
			}
			for k := range n {
				row := x.RawRowView(k)
				v := floats.Dot(row, u) / (un * floats.Norm(row, 2))
				if di[k] {
					v = -v
				}
				worst = math.Max(worst, v)
			}
		}
	}
	return worst
}
