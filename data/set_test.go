package data

import (
	"math"
	"slices"
	"strings"
	"testing"

	"gonum.org/v1/gonum/floats"
	"gonum.org/v1/gonum/mat"
)

// imagesFixture returns n images of c×h×w with pixel value (k*7 + i) mod 256
// and labels k mod 3.
func imagesFixture(n, c, h, w int) *Images {
	im := &Images{Channels: c, Height: h, Width: w, Classes: []string{"zero", "one", "two"}}
	for k := 0; k < n; k++ {
		for i := 0; i < c*h*w; i++ {
			im.Pix = append(im.Pix, uint8((k*7+i)%256))
		}
		im.Labels = append(im.Labels, uint8(k%3))
	}
	return im
}

func TestBinaryAndScale(t *testing.T) {
	im := imagesFixture(9, 1, 4, 4)
	s, err := im.Binary(0, 2, PlusMinus)
	if err != nil {
		t.Fatal(err)
	}
	if n, d := s.Dims(); n != 6 || d != 16 || s.Shape != [3]int{1, 4, 4} {
		t.Fatalf("binary set %d×%d shape %v", n, d, s.Shape)
	}
	if !slices.Equal(s.Classes, []string{"zero", "two"}) || s.Y[0] != -1 || s.Y[1] != 1 {
		t.Fatalf("classes %v labels %v", s.Classes, s.Y)
	}
	if s.X.At(1, 3) != float64(im.Image(2)[3]) {
		t.Fatal("row 1 is not image 2")
	}
	z, _ := im.Binary(0, 2, ZeroOne)
	if z.Y[0] != 0 || z.Y[1] != 1 {
		t.Fatalf("0/1 labels %v", z.Y)
	}
	sc := s.ScalePixels()
	if mat.Max(sc.X) > 1 || sc.X.At(1, 3) != s.X.At(1, 3)/255 || s.X.At(1, 3) == sc.X.At(1, 3) && s.X.At(1, 3) != 0 {
		t.Fatal("ScalePixels wrong or modified its input")
	}
	if _, err := im.Binary(1, 1, PlusMinus); err == nil {
		t.Fatal("same class twice accepted")
	}
	if _, err := im.Binary(0, 7, PlusMinus); err == nil || !strings.Contains(err.Error(), "7 has 0") {
		t.Fatalf("absent class: %v", err)
	}
}

func TestStrideAndResize(t *testing.T) {
	im := imagesFixture(3, 3, 8, 6)
	s, _ := im.Binary(0, 1, PlusMinus)
	st, err := s.Stride(2)
	if err != nil {
		t.Fatal(err)
	}
	if st.Shape != [3]int{3, 4, 3} {
		t.Fatalf("stride shape %v", st.Shape)
	}
	// channel 2, row 1, column 2 of the strided image is channel 2, row 2, column 4.
	if st.X.At(1, (2*4+1)*3+2) != s.X.At(1, (2*8+2)*6+4) {
		t.Fatal("stride picked the wrong pixel")
	}
	// Resizing by an integer factor is block averaging.
	rs, err := s.Resize(4, 3)
	if err != nil {
		t.Fatal(err)
	}
	for ch := 0; ch < 3; ch++ {
		for i := 0; i < 4; i++ {
			for j := 0; j < 3; j++ {
				var want float64
				for a := 0; a < 2; a++ {
					for b := 0; b < 2; b++ {
						want += s.X.At(0, (ch*8+2*i+a)*6+2*j+b) / 4
					}
				}
				if got := rs.X.At(0, (ch*4+i)*3+j); math.Abs(got-want) > 1e-9 {
					t.Fatalf("block (%d,%d,%d) = %v, want %v", ch, i, j, got, want)
				}
			}
		}
	}
	// Fractional ratios preserve the image mean, and constants stay constant.
	frac, err := s.Resize(3, 5)
	if err != nil {
		t.Fatal(err)
	}
	for ch := 0; ch < 3; ch++ {
		in := mat.Row(nil, 1, s.X)[ch*48 : (ch+1)*48]
		out := mat.Row(nil, 1, frac.X)[ch*15 : (ch+1)*15]
		if math.Abs(floats.Sum(in)/48-floats.Sum(out)/15) > 1e-9 {
			t.Fatalf("channel %d mean %v → %v", ch, floats.Sum(in)/48, floats.Sum(out)/15)
		}
	}
	c := &Set{X: mat.NewDense(1, 28*28, nil), Y: []float64{1}, Shape: [3]int{1, 28, 28}}
	for j := 0; j < 28*28; j++ {
		c.X.Set(0, j, 0.25)
	}
	ten, _ := c.Resize(10, 10)
	for j := 0; j < 100; j++ {
		if math.Abs(ten.X.At(0, j)-0.25) > 1e-12 {
			t.Fatalf("constant image resized to %v at %d", ten.X.At(0, j), j)
		}
	}
	if _, err := c.Resize(30, 10); err == nil {
		t.Fatal("upsizing accepted")
	}
	tab := &Set{X: mat.NewDense(2, 2, nil), Y: []float64{1, -1}}
	if _, err := tab.Stride(2); err == nil {
		t.Fatal("stride of a non-image set accepted")
	}
}

func TestStandardizeUsesTrainingStatistics(t *testing.T) {
	train := &Set{X: mat.NewDense(4, 2, []float64{1, 5, 2, 5, 3, 5, 4, 5}), Y: []float64{1, -1, 1, -1}}
	test := &Set{X: mat.NewDense(1, 2, []float64{5, 7}), Y: []float64{1}}
	st, others, err := train.Standardize(test)
	if err != nil {
		t.Fatal(err)
	}
	col := mat.Col(nil, 0, st.X)
	mean := floats.Sum(col) / 4
	var v float64
	for _, x := range col {
		v += (x - mean) * (x - mean) / 4
	}
	if math.Abs(mean) > 1e-12 || math.Abs(v-1) > 1e-12 {
		t.Fatalf("standardized training column has mean %v variance %v", mean, v)
	}
	// Test point 5 with training mean 2.5 and sd sqrt(1.25); constant column only centred.
	if got, want := others[0].X.At(0, 0), (5-2.5)/math.Sqrt(1.25); math.Abs(got-want) > 1e-12 {
		t.Fatalf("test feature %v, want %v", got, want)
	}
	if others[0].X.At(0, 1) != 2 || train.X.At(0, 0) != 1 {
		t.Fatal("constant column not just centred, or input modified")
	}
	if _, _, err := train.Standardize(&Set{X: mat.NewDense(1, 3, nil), Y: []float64{1}}); err == nil {
		t.Fatal("feature count mismatch accepted")
	}
}

func TestSplitSubsampleBias(t *testing.T) {
	x := mat.NewDense(10, 1, nil)
	y := make([]float64, 10)
	for i := range y {
		x.Set(i, 0, float64(i))
		y[i] = float64(i)
	}
	s := &Set{X: x, Y: y}
	tr, te, err := s.Split(0.7, 3)
	if err != nil {
		t.Fatal(err)
	}
	tr2, _, _ := s.Split(0.7, 3)
	if n, _ := tr.Dims(); n != 7 || len(te.Y) != 3 || !floats.Equal(tr.Y, tr2.Y) {
		t.Fatalf("split sizes %d/%d or not deterministic", n, len(te.Y))
	}
	seen := map[float64]bool{}
	for _, v := range append(append([]float64{}, tr.Y...), te.Y...) {
		if seen[v] || tr.X.RawMatrix().Data == nil {
			t.Fatal("split repeats a row")
		}
		seen[v] = true
	}
	sub, err := s.Subsample(4, 1)
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i < 4; i++ {
		if sub.Y[i] <= sub.Y[i-1] {
			t.Fatalf("subsample not in original order: %v", sub.Y)
		}
	}
	if _, err := s.Subsample(11, 1); err == nil {
		t.Fatal("subsample larger than the set accepted")
	}
	in, out, err := s.SubsampleHoldout(4, 1)
	if err != nil {
		t.Fatal(err)
	}
	if !floats.Equal(in.Y, sub.Y) {
		t.Fatalf("SubsampleHoldout's subsample %v is not Subsample's %v", in.Y, sub.Y)
	}
	if len(out.Y) != 6 {
		t.Fatalf("holdout has %d rows, want 6", len(out.Y))
	}
	seenH := map[float64]bool{}
	for _, v := range append(append([]float64{}, in.Y...), out.Y...) {
		if seenH[v] {
			t.Fatalf("row %v both in the subsample and held out", v)
		}
		seenH[v] = true
	}
	for i := 1; i < len(out.Y); i++ {
		if out.Y[i] <= out.Y[i-1] || out.X.At(i, 0) != out.Y[i] {
			t.Fatalf("holdout not in original order or rows mixed: %v", out.Y)
		}
	}
	for _, m := range []int{0, 10} {
		if _, _, err := s.SubsampleHoldout(m, 1); err == nil || !strings.Contains(err.Error(), "10 rows") {
			t.Fatalf("SubsampleHoldout(%d): %v, want an error naming the size", m, err)
		}
	}
	b, err := s.AddBias()
	if err != nil || b.X.At(3, 1) != 1 || !b.Bias {
		t.Fatalf("AddBias: %v", err)
	}
	if _, err := b.AddBias(); err == nil {
		t.Fatal("second bias column accepted")
	}
	if _, _, err := s.Split(1, 1); err == nil {
		t.Fatal("split fraction 1 accepted")
	}
}

func TestTableBinary(t *testing.T) {
	tab := &Table{Columns: []string{"a", "b", "label"}, Rows: [][]float64{{1, 2, 0}, {3, math.NaN(), 1}, {5, 6, 1}}}
	if _, err := tab.Binary("label", PlusMinus); err == nil || !strings.Contains(err.Error(), "row 1, column b") {
		t.Fatalf("missing value: %v", err)
	}
	s, err := tab.Complete().Binary("label", ZeroOne)
	if err != nil {
		t.Fatal(err)
	}
	if n, d := s.Dims(); n != 2 || d != 2 || s.Y[0] != 0 || s.Y[1] != 1 || s.Features[1] != "b" {
		t.Fatalf("table set %d×%d %v %v", n, d, s.Y, s.Features)
	}
	if _, err := tab.Binary("nope", PlusMinus); err == nil {
		t.Fatal("unknown label column accepted")
	}
}

func TestSyntheticSets(t *testing.T) {
	x, y := Stability2D(1)
	if n, d := x.Dims(); n != 40 || d != 2 || len(y) != 40 {
		t.Fatalf("Stability2D %d×%d", n, d)
	}
	tx, ty := Toy2D(2)
	if n, _ := tx.Dims(); n != 34 {
		t.Fatalf("Toy2D has %d points", n)
	}
	for i := 0; i < 34; i++ {
		for j := 0; j < i; j++ {
			if ty[i] != ty[j] && math.Max(math.Abs(tx.At(i, 0)-tx.At(j, 0)), math.Abs(tx.At(i, 1)-tx.At(j, 1))) < 0.16 {
				t.Fatalf("opposite points %d and %d closer than 2ε", i, j)
			}
		}
	}
	tr, te, err := Regression1D(8, 100, 3)
	if err != nil {
		t.Fatal(err)
	}
	if len(tr.Y) != 8 || len(te.Y) != 100 {
		t.Fatalf("regression sizes %d/%d", len(tr.Y), len(te.Y))
	}
	for k, v := range te.Y {
		if v != Step1D(te.X.At(k, 0)) {
			t.Fatal("target is not Step1D(x)")
		}
	}
	if Step1D(-0.9) != -0.5 || Step1D(0.25) != 0.5 || Step1D(0.9) != 0 || Step1D(-0.25) != 0 {
		t.Fatal("Step1D flat regions wrong")
	}
}

func TestMulticlass(t *testing.T) {
	im := imagesFixture(9, 1, 4, 4)
	s, err := im.Multiclass()
	if err != nil {
		t.Fatal(err)
	}
	if n, d := s.Dims(); n != 9 || d != 16 || s.Coding != ClassIndex || s.NumClasses() != 3 || s.Classes[2] != "two" {
		t.Fatalf("multi-class set %d×%d, coding %v, classes %v", n, d, s.Coding, s.Classes)
	}
	for k, y := range s.Y {
		if y != float64(k%3) || s.X.At(k, 5) != float64(im.Image(k)[5]) {
			t.Fatalf("row %d: label %v", k, y)
		}
	}
	two, err := s.PickClasses(PlusMinus, "zero", "two")
	if err != nil || two.NumClasses() != 2 || two.Y[1] != 1 || two.Coding != PlusMinus {
		t.Fatalf("PickClasses: %v %v", two, err)
	}
}

// TestSortedByAndGrid1D: SortedBy orders the rows by one feature, keeping
// each row with its label; Grid1D spans its interval evenly; both refuse
// bad arguments.
func TestSortedByAndGrid1D(t *testing.T) {
	s := &Set{X: mat.NewDense(4, 2, []float64{3, 30, 1, 10, 2, 20, 1, 11}), Y: []float64{3, 1, 2, 1.1}}
	got, err := s.SortedBy(0)
	if err != nil {
		t.Fatal(err)
	}
	for k, want := range [][3]float64{{1, 10, 1}, {1, 11, 1.1}, {2, 20, 2}, {3, 30, 3}} {
		if got.X.At(k, 0) != want[0] || got.X.At(k, 1) != want[1] || got.Y[k] != want[2] {
			t.Fatalf("row %d: %v %v %v, want %v", k, got.X.At(k, 0), got.X.At(k, 1), got.Y[k], want)
		}
	}
	if _, err := s.SortedBy(2); err == nil {
		t.Error("SortedBy(2) of a 2-feature set")
	}
	g, xs, err := Grid1D(-1, 1, 4)
	if err != nil || len(xs) != 5 || xs[0] != -1 || xs[4] != 1 || xs[2] != 0 || g.At(3, 0) != 0.5 {
		t.Fatalf("Grid1D: %v %v", xs, err)
	}
	for _, bad := range [][3]float64{{1, 1, 4}, {0, 1, 0}, {math.Inf(-1), 1, 4}} {
		if _, _, err := Grid1D(bad[0], bad[1], int(bad[2])); err == nil {
			t.Errorf("Grid1D%v accepted", bad)
		}
	}
}
