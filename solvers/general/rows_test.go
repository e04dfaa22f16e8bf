package general

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/convexnn/convexnn/solvers/ipm"
	"gonum.org/v1/gonum/floats"
	"gonum.org/v1/gonum/mat"
)

// The certifier's QPs on a working set of a group's rows (onRows) solve the
// QPs on every row: the projection of a point that violates a few rows
// against the projection computed on all rows, and an interior direction
// strictly inside every nonzero row, on random blocks of many rows and of
// few (solved whole), some with zero rows.
func TestCertifierRowWorkingSets(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 5))
	for trial := range 30 {
		m, k := 700+rng.IntN(700), 2+rng.IntN(4)
		if trial%2 == 1 { // a small block: one solve on its nonzero rows
			m = 60 + rng.IntN(240)
		}
		// Rows with a positive component along h: the cone holds h.
		h := make([]float64, k)
		for l := range h {
			h[l] = rng.NormFloat64()
		}
		gd := mat.NewDense(m, k, nil)
		for r := range m {
			row := gd.RawRowView(r)
			if trial%3 == 0 && r%50 == 0 {
				continue // zero rows are no constraint
			}
			for l := range row {
				row[l] = rng.NormFloat64()
			}
			if s := floats.Dot(row, h); s < 0 {
				floats.AddScaled(row, -2*s/floats.Dot(h, h), h)
			}
		}
		var svd mat.SVD
		svd.Factorize(gd, mat.SVDNone)
		c := &certifier{gd: []*mat.Dense{gd}, gl: []float64{svd.Values(nil)[0] * svd.Values(nil)[0]}, steps: 10}

		// A point inside, pushed out of a few rows.
		x := append([]float64(nil), h...)
		for l := range x {
			x[l] += 0.3 * rng.NormFloat64()
		}
		y := c.project(0, x)
		if y == nil {
			t.Fatalf("trial %d: no projection", trial)
		}
		want := projectAll(t, gd, x)
		if d := floats.Distance(y, want, 2); d > 1e-7*math.Max(1, floats.Norm(want, 2)) {
			t.Errorf("trial %d (%d×%d): working-set projection %v, on every row %v", trial, m, k, y, want)
		}
		gy := make([]float64, m)
		mat.NewVecDense(m, gy).MulVec(gd, mat.NewVecDense(k, y))
		if v := floats.Min(gy); v < -1e-9*floats.Norm(y, 2)*mat.Norm(gd, math.Inf(1)) {
			t.Errorf("trial %d: the projection violates a row by %.3g", trial, v)
		}

		z := c.interior(0)
		if z == nil {
			t.Fatalf("trial %d: no interior direction", trial)
		}
		gz := make([]float64, m)
		mat.NewVecDense(m, gz).MulVec(gd, mat.NewVecDense(k, z))
		for r, v := range gz {
			if floats.Norm(gd.RawRowView(r), 2) > 0 && !(v > 0) {
				t.Errorf("trial %d: interior direction has G_r z = %.3g on row %d", trial, v, r)
				break
			}
		}
	}
}

// projectAll is the projection onto {G y ≥ 0} by the interior-point method
// on every row.
func projectAll(t *testing.T, gd *mat.Dense, x []float64) []float64 {
	m, k := gd.Dims()
	a := mat.NewDense(m, k, nil)
	a.Scale(-1, gd)
	q := mat.NewSymDense(k, nil)
	for i := range k {
		q.SetSym(i, i, 1)
	}
	cost := make([]float64, k)
	floats.ScaleTo(cost, -1, x)
	res, err := ipm.SolveConeQP(context.Background(), &ipm.ConeQP{Q: q, C: cost, G: a, H: make([]float64, m), K: ipm.Cone{Orthant: m}}, ipm.Options{Tol: 1e-12})
	if err != nil {
		t.Fatal(err)
	}
	return res.X
}
