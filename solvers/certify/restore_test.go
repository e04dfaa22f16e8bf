package certify

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/convexnn/convexnn/solvers"
	"gonum.org/v1/gonum/floats"
	"gonum.org/v1/gonum/mat"
)

// TestRestoreNudgesTinyViolations: a group on the boundary of its cone,
// with a few margins at −10⁻¹²‖x_k‖‖u‖ as an interior-point solution leaves
// them, is made feasible in floating point by a change of at most 10⁻⁹‖u‖
// (before nudge, the shift along a fixed interior direction could move it
// by up to its norm).
func TestRestoreNudgesTinyViolations(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 9))
	repaired := 0
	for trial := 0; trial < 40; trial++ {
		n, d := 30+rng.IntN(30), 3+rng.IntN(5)
		x := mat.NewDense(n, d, nil)
		for k := 0; k < n; k++ {
			for l := 0; l < d; l++ {
				x.Set(k, l, rng.NormFloat64())
			}
		}
		g := make([]float64, d)
		for l := range g {
			g[l] = rng.NormFloat64()
		}
		pat := make(solvers.Pattern, n)
		xg := make([]float64, n)
		mat.NewVecDense(n, xg).MulVec(x, mat.NewVecDense(d, g))
		for k, v := range xg {
			pat[k] = v >= 0
		}
		y := make([]float64, n)
		for k := range y {
			y[k] = rng.NormFloat64()
		}
		p := &solvers.Program{X: x, Y: y, Loss: solvers.SquaredLoss, Beta: 1e-3, D: solvers.Patterns{pat}}
		c, err := New(p, solvers.Perturbation{})
		if err != nil {
			t.Fatal(err)
		}
		// Move g onto the boundary: its q smallest margins set to a
		// violation of 10⁻¹² relative (q < d rows: an exact least-norm move).
		m := make([]float64, n)
		c.minMargin(0, g, m)
		q := 1 + rng.IntN(d-1)
		rows := make([]int, n)
		for k := range rows {
			rows[k] = k
		}
		for a := 0; a < q; a++ { // selection of the q smallest margins
			for b := a + 1; b < n; b++ {
				if m[rows[b]] < m[rows[a]] {
					rows[a], rows[b] = rows[b], rows[a]
				}
			}
		}
		a := mat.NewDense(q, d, nil)
		r := mat.NewVecDense(q, nil)
		ng := floats.Norm(g, 2)
		for i, k := range rows[:q] {
			floats.ScaleTo(a.RawRowView(i), c.sgn.At(k, 0), x.RawRowView(k))
			r.SetVec(i, -1e-12*c.xnorm[k]*ng-m[k])
		}
		var delta mat.VecDense
		if err := delta.SolveVec(a, r); err != nil {
			t.Fatal(err)
		}
		u := append([]float64(nil), g...)
		floats.Add(u, delta.RawVector().Data)
		if low := c.minMargin(0, u, m); low >= 0 || low < -1e-9*ng*floats.Max(c.xnorm) {
			continue // the move did not leave just tiny violations
		}
		wt := p.NewWeights()
		copy(wt.V.RawRowView(0), u)
		out, changed, viol := c.restore(wt, false)
		if changed != 1 || !(viol > 0) {
			t.Fatalf("trial %d: restore changed %d groups, violation %g; want 1 and > 0", trial, changed, viol)
		}
		fixed := out.V.RawRowView(0)
		if low := c.minMargin(0, fixed, m); low < 0 {
			t.Fatalf("trial %d: restored group still violates by %g", trial, -low)
		}
		diff := append([]float64(nil), fixed...)
		floats.Sub(diff, u)
		if dn, un := floats.Norm(diff, 2), floats.Norm(u, 2); !(dn <= 1e-9*un) {
			t.Fatalf("trial %d (n %d, d %d, %d rows at the boundary): restore moved the group by %g, ‖u‖ = %g", trial, n, d, q, dn, un)
		}
		if math.IsNaN(fixed[0]) {
			t.Fatal("NaN")
		}
		repaired++
	}
	if repaired < 20 {
		t.Fatalf("only %d of 40 trials built a group with tiny violations", repaired)
	}
	t.Logf("%d groups repaired", repaired)
}

// TestDirectionsAreInterior: the interior directions searched together for
// all patterns (searchDirections) lie strictly inside their cones, the
// robust ones (ε > 0, every norm) included, for patterns drawn from random
// vectors g (whose cones hold g, so a direction exists), starting from a
// point of zeros; a later request reuses them.
func TestDirectionsAreInterior(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 11))
	for trial := 0; trial < 30; trial++ {
		n, d, np := 20+rng.IntN(40), 2+rng.IntN(5), 1+rng.IntN(6)
		x := mat.NewDense(n, d, nil)
		for k := 0; k < n; k++ {
			for l := 0; l < d; l++ {
				x.Set(k, l, rng.NormFloat64())
			}
		}
		var pats solvers.Patterns
		for i := 0; i < np; i++ {
			g := make([]float64, d)
			for l := range g {
				g[l] = rng.NormFloat64()
			}
			xg := make([]float64, n)
			mat.NewVecDense(n, xg).MulVec(x, mat.NewVecDense(d, g))
			pat := make(solvers.Pattern, n)
			for k, v := range xg {
				pat[k] = v >= 0
			}
			pats = append(pats, pat)
		}
		y := make([]float64, n)
		p := &solvers.Program{X: x, Y: y, Loss: solvers.SquaredLoss, Beta: 1e-3, D: pats}
		pert := solvers.Perturbation{}
		if trial%2 == 1 {
			pert = solvers.Perturbation{Eps: 1e-3, Norm: []solvers.Norm{solvers.LInf, solvers.L2, solvers.L1}[trial%3]}
		}
		c, err := New(p, pert)
		if err != nil {
			t.Fatal(err)
		}
		zero := solvers.Weights{V: mat.NewDense(np, d, nil), W: mat.NewDense(np, d, nil)}
		last := rng.IntN(np)
		e := c.direction(last, zero)
		for i := 0; i < np; i++ {
			if !c.dirDone[i] {
				t.Fatalf("trial %d: pattern %d not searched with pattern %d", trial, i, last)
			}
			if c.dirs[i] == nil {
				t.Errorf("trial %d (ε = %g): no interior direction for pattern %d", trial, pert.Eps, i)
				continue
			}
			m := make([]float64, n)
			if low := c.minMargin(i, c.dirs[i], m); !(low > 0) {
				t.Errorf("trial %d (ε = %g): pattern %d's direction has margin %g", trial, pert.Eps, i, low)
			}
		}
		if again := c.direction(last, zero); &again[0] != &e[0] {
			t.Errorf("trial %d: the direction was searched again", trial)
		}
	}
}
