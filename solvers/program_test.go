package solvers

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"gonum.org/v1/gonum/mat"
)

// feasibleProgram returns a program whose patterns come from random
// directions a_i, and weights v_i = c_i a_i, w_i = c'_i a'_i that satisfy the
// cone constraints by construction.
func feasibleProgram(t *testing.T, n, d, np int, loss Loss, seed uint64) (*Program, Weights) {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 3))
	x := robRaw(rng, n, d)
	y := make([]float64, n)
	for k := range y {
		y[k] = 1
		if rng.IntN(2) == 0 {
			y[k] = -1
		}
	}
	p := &Program{X: x, Y: y, Loss: loss, Beta: 0.1}
	wt := Weights{V: mat.NewDense(np, d, nil), W: mat.NewDense(np, d, nil)}
	for i := 0; i < np; i++ {
		a := make([]float64, d)
		for j := range a {
			a[j] = rng.NormFloat64()
		}
		pat := make(Pattern, n)
		for k := 0; k < n; k++ {
			pat[k] = mat.Dot(x.RowView(k), mat.NewVecDense(d, a)) >= 0
		}
		p.D = append(p.D, pat)
		for j := range a {
			wt.V.Set(i, j, 0.3*a[j])
			if i%2 == 0 {
				wt.W.Set(i, j, 0.2*a[j])
			}
		}
	}
	return p, wt
}

func TestRecoveredNetworkAttainsConvexObjective(t *testing.T) {
	for _, loss := range []Loss{SquaredLoss, HingeLoss} {
		p, wt := feasibleProgram(t, 30, 4, 6, loss, 1)
		if err := p.Validate(); err != nil {
			t.Fatal(err)
		}
		viol, _ := p.Violation(wt)
		if viol > 1e-12 {
			t.Fatalf("constructed weights violate constraints by %v", viol)
		}
		cv, err := p.Objective(wt)
		if err != nil {
			t.Fatal(err)
		}
		net, err := p.Recover(wt)
		if err != nil {
			t.Fatal(err)
		}
		if net.Width() != 6+3 {
			t.Fatalf("recovered %d neurons, want 9", net.Width())
		}
		nc, err := p.NonconvexObjective(net)
		if err != nil {
			t.Fatal(err)
		}
		if math.Abs(nc-cv) > 1e-12*math.Max(1, cv) {
			t.Fatalf("%v: l^{u,α} = %v but l^{v,w} = %v", loss, nc, cv)
		}
		// Infeasible weights are measured.
		wt.V.Set(0, 0, wt.V.At(0, 0)+5)
		if v, _ := p.Violation(wt); v <= 0 {
			t.Fatal("violation not detected")
		}
	}
}

func TestProgramValidation(t *testing.T) {
	p, _ := feasibleProgram(t, 10, 3, 2, HingeLoss, 2)
	cases := map[string]func(q *Program){
		"y[3] = 0.5":      func(q *Program) { q.Y = append([]float64(nil), q.Y...); q.Y[3] = 0.5 },
		"β = -1":          func(q *Program) { q.Beta = -1 },
		"10 rows but y":   func(q *Program) { q.Y = q.Y[:4] },
		"pattern D_2 has": func(q *Program) { q.D = Patterns{q.D[0], q.D[1][:3]} },
		"no activation":   func(q *Program) { q.D = nil },
		"is not 1":        func(q *Program) { q.Bias = true },
		"X[1,2] is NaN":   func(q *Program) { q.X = mat.DenseCopyOf(q.X); q.X.Set(1, 2, math.NaN()) },
	}
	for want, mutate := range cases {
		q := *p
		mutate(&q)
		if err := q.Validate(); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("want error with %q, got %v", want, err)
		}
	}
}

// TestCheckFiniteNamesTheEntry: CheckFinite finds every non-finite entry
// by its position, and accepts finite rows whose sum overflows.
func TestCheckFiniteNamesTheEntry(t *testing.T) {
	big := mat.NewDense(2, 2, []float64{1e308, 1e308, -1e308, -1e308})
	if err := CheckFinite("X", big); err != nil {
		t.Fatalf("finite entries refused: %v", err)
	}
	for _, c := range []struct {
		v    []float64
		want string
	}{
		{[]float64{1, 2, 3, math.NaN()}, "X[1,1] is NaN"},
		{[]float64{math.Inf(1), math.Inf(-1), 0, 0}, "X[0,0] is +Inf"},
		{[]float64{0, 0, 1e308, math.Inf(-1)}, "X[1,1] is -Inf"},
	} {
		if err := CheckFinite("X", mat.NewDense(2, 2, c.v)); err == nil || err.Error() != c.want {
			t.Errorf("%v: error %v, want %q", c.v, err, c.want)
		}
	}
}

func TestWithoutZeroColumns(t *testing.T) {
	x := mat.NewDense(3, 5, []float64{
		1, 0, 2, 0, 0,
		0, 0, 3, 0, 4,
		5, 0, 0, 0, 0,
	})
	p := &Program{X: x, Y: []float64{1, -1, 1}, Loss: HingeLoss, Beta: 0.1, D: Patterns{{true, false, true}}}
	q, keep := p.WithoutZeroColumns()
	if want := []int{0, 2, 4}; !slicesEqual(keep, want) {
		t.Fatalf("kept columns %v, want %v", keep, want)
	}
	want := mat.NewDense(3, 3, []float64{1, 2, 0, 0, 3, 4, 5, 0, 0})
	if !mat.Equal(q.X, want) {
		t.Errorf("reduced X\n%v\nwant\n%v", mat.Formatted(q.X), mat.Formatted(want))
	}
	if q == p || p.X != x || q.Loss != p.Loss || q.Beta != p.Beta || len(q.D) != 1 {
		t.Errorf("the reduced program must be a copy with p's other fields: %+v", q)
	}
	full := &Program{X: mat.NewDense(2, 2, []float64{1, 0, 0, 1}), Y: []float64{1, 1}}
	if q, keep := full.WithoutZeroColumns(); q != full || keep != nil {
		t.Errorf("no zero column: got %p, %v; want p itself and nil", q, keep)
	}
	empty := &Program{X: mat.NewDense(2, 2, nil), Y: []float64{1, 1}}
	if q, keep := empty.WithoutZeroColumns(); q != empty || keep != nil {
		t.Errorf("only zero columns: got %p, %v; want p itself and nil", q, keep)
	}
}

func slicesEqual(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
