package data

import (
	"math"
	"strings"
	"testing"

	"gonum.org/v1/gonum/mat"
)

// The recorded scaling replays ScalePixels and Standardize on raw rows.
func TestScalingReplays(t *testing.T) {
	raw := mat.NewDense(4, 3, []float64{0, 10, 255, 30, 20, 0, 60, 30, 128, 90, 40, 7})
	s := &Set{X: raw, Y: []float64{0, 1, 0, 1}}
	tr, others, err := s.ScalePixels().Standardize((&Set{X: mat.NewDense(1, 3, []float64{5, 6, 7}), Y: []float64{1}}).ScalePixels())
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		set *Set
		raw *mat.Dense
	}{{tr, raw}, {others[0], mat.NewDense(1, 3, []float64{5, 6, 7})}} {
		got, err := c.set.Scaling.Apply(c.raw)
		if err != nil {
			t.Fatal(err)
		}
		if !mat.EqualApprox(got, c.set.X, 1e-12) {
			t.Fatalf("replayed\n%v\nwant\n%v", mat.Formatted(got), mat.Formatted(c.set.X))
		}
	}
	b, _ := s.AddBias()
	bs, _, err := b.Standardize()
	if err != nil || bs.Scaling.Features() != 3 {
		t.Fatalf("a bias column is not scaled: %v features, %v", bs.Scaling.Features(), err)
	}
	if _, err := tr.Scaling.Apply(mat.NewDense(1, 2, nil)); err == nil || !strings.Contains(err.Error(), "2 features") {
		t.Fatalf("wrong width: %v", err)
	}
	bad := &Scaling{Shift: []float64{0}, Scale: []float64{math.NaN()}}
	if err := bad.Validate(); err == nil {
		t.Fatal("NaN scale accepted")
	}
}
