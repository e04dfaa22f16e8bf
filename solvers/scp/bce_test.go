package scp

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"gonum.org/v1/gonum/mat"
)

// bceTestProblem returns n Gaussian points in d dimensions with noisy 0/1
// labels, m sampled neurons U and their features H = (XU)_+.
func bceTestProblem(t *testing.T, n, d, m int, seed uint64) (x, u, h *mat.Dense, y []float64) {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 7))
	x, y = gaussianData(n, d, rng, func(row []float64) float64 {
		if row[0]+0.5*rng.NormFloat64() > 0 {
			return 1
		}
		return 0
	})
	u, h = sampledFeatures(t, x, m, seed)
	return x, u, h, y
}

func runBCE(t *testing.T, p *BCELasso, maxIter int) (FISTAStep, []float64) {
	t.Helper()
	f, err := NewFISTABCE(p, nil)
	if err != nil {
		t.Fatal(err)
	}
	st := runUntil(f, maxIter, func(st FISTAStep) bool { return st.ProxGrad <= 1e-9 && st.Gap <= 1e-9 })
	return st, f.State.Alpha
}

func TestBCEFISTAOptimality(t *testing.T) {
	_, _, h, y := bceTestProblem(t, 40, 3, 25, 1)
	beta := 0.01
	p := &BCELasso{H: NewDenseFeatures(h), Y: y, Beta: beta}
	st, alpha := runBCE(t, p, 200000)
	t.Logf("iter %d obj %.12g gap %.3g proxgrad %.3g nnz %d", st.Iter, st.Objective, st.Gap, st.ProxGrad, st.Nonzeros)
	if st.ProxGrad > 1e-8 || st.Gap > 1e-7 || st.Gap < -1e-12 {
		t.Fatalf("not optimal: proxgrad %g gap %g", st.ProxGrad, st.Gap)
	}
	// The step's gap uses the dual point of the extrapolated iterate, the
	// DualityGap that of α itself: two certificates, both small at the end.
	if g := p.DualityGap(alpha); g > 1e-7 || g < -1e-12 {
		t.Fatalf("DualityGap %g at the final α (step gap %g)", g, st.Gap)
	}
	if st.Nonzeros == 0 || st.Nonzeros == len(alpha) {
		t.Logf("warning: nnz %d of %d", st.Nonzeros, len(alpha))
	}
	// Independent KKT check with a hand-written BCE gradient.
	n, m := h.Dims()
	yhat := make([]float64, n)
	for k := 0; k < n; k++ {
		for j := 0; j < m; j++ {
			yhat[k] += h.At(k, j) * alpha[j]
		}
	}
	for j := 0; j < m; j++ {
		var gj float64
		for k := 0; k < n; k++ {
			// d/dŷ [−2ŷy + log(e^{2ŷ}+1)]/n = (−2y + 2 e^{2ŷ}/(e^{2ŷ}+1))/n
			e := math.Exp(2 * yhat[k])
			gj += h.At(k, j) * (-2*y[k] + 2*e/(e+1)) / float64(n)
		}
		switch {
		case alpha[j] > 0:
			if math.Abs(gj+beta) > 1e-6 {
				t.Fatalf("KKT j=%d α>0: hᵀ∇ℓ = %g, want %g", j, gj, -beta)
			}
		case alpha[j] < 0:
			if math.Abs(gj-beta) > 1e-6 {
				t.Fatalf("KKT j=%d α<0: hᵀ∇ℓ = %g, want %g", j, gj, beta)
			}
		default:
			if math.Abs(gj) > beta+1e-6 {
				t.Fatalf("KKT j=%d α=0: |hᵀ∇ℓ| = %g > β", j, math.Abs(gj))
			}
		}
	}
	// Direct loss formula agrees with the stable one.
	var direct float64
	for k := 0; k < n; k++ {
		direct += -2*yhat[k]*y[k] + math.Log(math.Exp(2*yhat[k])+1)
	}
	direct /= float64(n)
	if math.Abs(direct-p.Loss(yhat)) > 1e-12 {
		t.Fatalf("loss %g vs direct %g", p.Loss(yhat), direct)
	}
}

func TestBCELossStableLarge(t *testing.T) {
	p := &BCELasso{Y: []float64{0, 1, 0, 1}}
	l := p.Loss([]float64{500, 500, -500, -500})
	want := (1000 + 0 + 0 + 1000) / 4.0
	if math.IsInf(l, 0) || math.IsNaN(l) || math.Abs(l-want) > 1e-9 {
		t.Fatalf("loss %g, want %g", l, want)
	}
}

func TestBCEFeatures32Solve(t *testing.T) {
	x, u, h, y := bceTestProblem(t, 60, 4, 30, 3)
	f32, err := NewFeatures32(x, u)
	if err != nil {
		t.Fatal(err)
	}
	p64 := &BCELasso{H: NewDenseFeatures(h), Y: y, Beta: 0.02}
	p32 := &BCELasso{H: f32, Y: y, Beta: 0.02}
	s64, _ := runBCE(t, p64, 100000)
	s32, _ := runBCE(t, p32, 100000)
	if s32.Gap > 1e-7 || math.Abs(s32.Objective-s64.Objective) > 1e-5*math.Abs(s64.Objective) {
		t.Fatalf("float32 solve obj %g gap %g vs float64 obj %g", s32.Objective, s32.Gap, s64.Objective)
	}
	// Squared loss on Features32 vs the dense Lasso (lasso.go).
	yl := make([]float64, len(y))
	for k := range y {
		yl[k] = 2*y[k] - 1
	}
	fl, err := NewFISTAFeatures(&FeatureLasso{H: f32, Y: yl, Beta: 0.1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	st := runUntil(fl, 100000, gapAtMost(1e-9))
	ref, err := NewFISTA(&Lasso{H: h, Y: yl, Beta: 0.1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	rs := runUntil(ref, 100000, gapAtMost(1e-9))
	if st.Gap > 1e-7 || math.Abs(st.Objective-rs.Objective) > 1e-5*rs.Objective {
		t.Fatalf("squared float32 obj %g gap %g vs Lasso %g", st.Objective, st.Gap, rs.Objective)
	}
}

func TestFeatures32Products(t *testing.T) {
	// More than one 1024-row block.
	x, u, h, _ := bceTestProblem(t, 2500, 5, 17, 5)
	f32, err := NewFeatures32(x, u)
	if err != nil {
		t.Fatal(err)
	}
	if n, m := f32.Dims(); n != 2500 || m != 17 {
		t.Fatalf("dims %d×%d", n, m)
	}
	d := NewDenseFeatures(h)
	rng := rand.New(rand.NewPCG(9, 9))
	a := make([]float64, 17)
	for j := range a {
		a[j] = rng.NormFloat64()
	}
	b := make([]float64, 2500)
	for i := range b {
		b[i] = rng.NormFloat64()
	}
	check := func(name string, got, want []float64) {
		var num, den float64
		for i := range got {
			num += (got[i] - want[i]) * (got[i] - want[i])
			den += want[i] * want[i]
		}
		if r := math.Sqrt(num / den); r > 1e-5 {
			t.Fatalf("%s: relative error %g", name, r)
		}
	}
	g1, g2 := make([]float64, 2500), make([]float64, 2500)
	f32.MulVec(g1, a)
	d.MulVec(g2, a)
	check("MulVec", g1, g2)
	t1, t2 := make([]float64, 17), make([]float64, 17)
	f32.MulTransVec(t1, b)
	d.MulTransVec(t2, b)
	check("MulTransVec", t1, t2)
	for i := 0; i < 2500; i++ {
		for j := 0; j < 17; j++ {
			if v := f32.Data[i*17+j]; v < 0 || math.Abs(float64(v)-h.At(i, j)) > 1e-6*(1+h.At(i, j)) {
				t.Fatalf("entry (%d,%d) %g vs %g", i, j, v, h.At(i, j))
			}
		}
	}
	if _, err := NewFeatures32(x, mat.NewDense(4, 3, nil)); err == nil || !strings.Contains(err.Error(), "dimension") {
		t.Fatalf("shape mismatch error %v", err)
	}
}

func TestFeatureMemoryCheck(t *testing.T) {
	if b := FeatureBytes(11809, 39365, false); b != 11809*39365*8 {
		t.Fatalf("bytes %d", b)
	}
	if b := FeatureBytes(11809, 39365, true); b != 11809*39365*4 {
		t.Fatalf("bytes %d", b)
	}
	err := CheckFeatureMemory(11809, 39365, 2e9)
	if err == nil {
		t.Fatal("expected refusal")
	}
	msg := err.Error()
	for _, s := range []string{"11809×39365", "465 million", "3.7 GB in float64", "1.9 GB in float32", "limit 2 GB", "fewer neurons", "float32 features"} {
		if !strings.Contains(msg, s) {
			t.Fatalf("message %q lacks %q", msg, s)
		}
	}
	if err := CheckFeatureMemory(1000, 1000, 2e9); err != nil {
		t.Fatal(err)
	}
	if err := CheckFeatureMemory(0, 10, 2e9); err == nil {
		t.Fatal("n=0 accepted")
	}
}

func TestBCEBadInputs(t *testing.T) {
	h := mat.NewDense(3, 2, []float64{1, 0, 0, 1, 1, 1})
	cases := []struct {
		p    *BCELasso
		want string
	}{
		{&BCELasso{H: NewDenseFeatures(h), Y: []float64{0, 1, 2}, Beta: 1}, "must be 0 or 1"},
		{&BCELasso{H: NewDenseFeatures(h), Y: []float64{0, 1, -1}, Beta: 1}, "must be 0 or 1"},
		{&BCELasso{H: NewDenseFeatures(h), Y: []float64{0, 1, 0}, Beta: 0}, "β"},
		{&BCELasso{H: NewDenseFeatures(h), Y: []float64{0, 1, 0}, Beta: -1}, "β"},
		{&BCELasso{H: NewDenseFeatures(h), Y: []float64{0, 1}, Beta: 1}, "2 labels for 3 feature rows"},
		{&BCELasso{Y: []float64{0, 1}, Beta: 1}, "no feature matrix"},
	}
	for i, c := range cases {
		if _, err := NewFISTABCE(c.p, nil); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Fatalf("case %d: error %v, want %q", i, err, c.want)
		}
	}
	p := &BCELasso{H: NewDenseFeatures(h), Y: []float64{0, 1, 0}, Beta: 1}
	if _, err := NewFISTABCE(p, &FISTAState{Alpha: make([]float64, 5), Prev: make([]float64, 5), T: 1, L: 1}); err == nil {
		t.Fatal("bad state accepted")
	}
}
