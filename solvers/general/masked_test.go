package general

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"gonum.org/v1/gonum/floats"
	"gonum.org/v1/gonum/mat"
)

// TestMasked checks a Masked operator's products against its dense matrix,
// built independently here row by row, and its bad input.
func TestMasked(t *testing.T) {
	for _, fold := range []int{1, 3} {
		testMaskedProducts(t, fold)
	}
	r := 6
	x := mat.NewDense(r, 2, nil)
	for _, tc := range []struct {
		in, out int
		term    MaskTerm
		want    string
	}{
		{0, 1, MaskTerm{Mask: make([]float64, r)}, "0 input"},
		{-4, 1, MaskTerm{Mask: make([]float64, r)}, "into 4 blocks"},
		{1, 1, MaskTerm{In: 1, Mask: make([]float64, r)}, "reads input block 1 of 1"},
		{1, 1, MaskTerm{Out: 2, Mask: make([]float64, r)}, "writes output block 2"},
		{1, 1, MaskTerm{Mask: make([]float64, r-1)}, "mask of 5 entries, X has 6 rows"},
		{1, 1, MaskTerm{Mask: []float64{0, 0, math.NaN(), 0, 0, 0}}, "entry 2 = NaN"},
	} {
		fold := 1
		if tc.in < 0 {
			tc.in, fold = 1, 4
		}
		if _, err := NewMasked(x, fold, tc.in, tc.out, []MaskTerm{tc.term}); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("error %v, want one mentioning %q", err, tc.want)
		}
	}
}

// testMaskedProducts checks a Masked operator's Dense and products against
// its matrix built independently here, entry by entry.
func testMaskedProducts(t *testing.T, fold int) {
	rng := rand.New(rand.NewPCG(3, uint64(fold)))
	r, d, in, out := 6*fold, 3, 4, 3
	rb := r / fold
	x := mat.NewDense(r, d, nil)
	for i := 0; i < r; i++ {
		for k := 0; k < d; k++ {
			x.Set(i, k, rng.NormFloat64())
		}
	}
	var terms []MaskTerm
	want := mat.NewDense(out*rb, in*d, nil)
	for k := 0; k < 9; k++ {
		t := MaskTerm{In: rng.IntN(in), Out: rng.IntN(out), Mask: make([]float64, r)}
		for i := range t.Mask {
			t.Mask[i] = float64(rng.IntN(3) - 1) // −1, 0, 1
			row := t.Out*rb + i%rb
			for c := 0; c < d; c++ {
				want.Set(row, t.In*d+c, want.At(row, t.In*d+c)+t.Mask[i]*x.At(i, c))
			}
		}
		terms = append(terms, t)
	}
	m, err := NewMasked(x, fold, in, out, terms)
	if err != nil {
		t.Fatal(err)
	}
	if !mat.EqualApprox(m.Dense(), want, 1e-14) {
		t.Fatalf("fold %d: Dense differs from the matrix of the terms", fold)
	}
	u, y := make([]float64, in*d), make([]float64, out*rb)
	for i := range u {
		u[i] = rng.NormFloat64()
	}
	for i := range y {
		y[i] = rng.NormFloat64()
	}
	got, gotT := make([]float64, out*rb), make([]float64, in*d)
	for i := range got {
		got[i] = math.NaN() // Apply overwrites
	}
	m.Apply(got, u)
	m.ApplyT(gotT, y)
	var wa, wt mat.VecDense
	wa.MulVec(want, mat.NewVecDense(in*d, u))
	wt.MulVec(want.T(), mat.NewVecDense(out*rb, y))
	if !floats.EqualApprox(got, wa.RawVector().Data, 1e-12) || !floats.EqualApprox(gotT, wt.RawVector().Data, 1e-12) {
		t.Fatalf("fold %d: products differ from the dense matrix's", fold)
	}
}

// BlockDiagonal's products are the blocks' own, each on its part.
func TestMaskedBlockDiagonal(t *testing.T) {
	x := mat.NewDense(3, 2, []float64{1, 2, -1, 0.5, 3, -2})
	a, _ := NewMasked(x, 1, 1, 2, []MaskTerm{{Mask: []float64{1, -1, 0}}, {Out: 1, Mask: []float64{0, 2, 1}}})
	b, _ := NewMasked(x, 1, 2, 1, []MaskTerm{{Mask: []float64{1, 1, 1}}, {In: 1, Mask: []float64{-1, 0, 1}}})
	bd, err := BlockDiagonal([]*Masked{a, b})
	if err != nil {
		t.Fatal(err)
	}
	want := mat.NewDense(9, 6, nil)
	want.Slice(0, 6, 0, 2).(*mat.Dense).Copy(a.Dense())
	want.Slice(6, 9, 2, 6).(*mat.Dense).Copy(b.Dense())
	if !mat.Equal(bd.Dense(), want) {
		t.Fatalf("block diagonal\n%v\nwant\n%v", mat.Formatted(bd.Dense()), mat.Formatted(want))
	}
	other, _ := NewMasked(mat.DenseCopyOf(x), 1, 1, 1, []MaskTerm{{Mask: []float64{1, 1, 1}}})
	if _, err := BlockDiagonal([]*Masked{a, other}); err == nil || !strings.Contains(err.Error(), "another data matrix") {
		t.Errorf("blocks on two matrices: error %v", err)
	}
	if _, err := BlockDiagonal(nil); err == nil {
		t.Error("no blocks: no error")
	}
}
