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

// Stride and Resize carry the pixel scaling to the new features.
func TestScalingThroughStrideAndResize(t *testing.T) {
	im := imagesFixture(4, 1, 4, 4)
	s, err := im.Binary(0, 1, PlusMinus)
	if err != nil {
		t.Fatal(err)
	}
	sc := s.ScalePixels()
	st, err := sc.Stride(2)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := s.Stride(2)
	got, err := st.Scaling.Apply(raw.X)
	if err != nil || !mat.EqualApprox(got, st.X, 1e-12) {
		t.Fatalf("stride: %v", err)
	}
	rs, err := sc.Resize(2, 2)
	if err != nil {
		t.Fatal(err)
	}
	rraw, _ := s.Resize(2, 2)
	got, err = rs.Scaling.Apply(rraw.X)
	if err != nil || !mat.EqualApprox(got, rs.X, 1e-12) {
		t.Fatalf("resize: %v", err)
	}
	std, _, _ := sc.Standardize()
	if r2, _ := std.Resize(2, 2); r2.Scaling != nil {
		t.Fatal("a per-feature scaling survived averaging")
	}
}
