package scp

// Verification tests for the SCP code (lasso.go, bce.go, iterative.go)
// against references that share none of its code:
//
//   - exact Lasso and BCE-Lasso optima from cyclic coordinate descent written
//     here (soft-threshold updates; 1-D safeguarded Newton for BCE), certified
//     by their own KKT residuals;
//   - monotonicity of the sampled optimum in nested neuron samples;
//   - Monte-Carlo coverage of the Hoeffding certificate;
//   - an audit of Iterative's per-round bookkeeping against quantities
//     recomputed from scratch.

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"gonum.org/v1/gonum/mat"
	"gonum.org/v1/gonum/stat/distuv"
)

// vfData returns n points x_k = (g_1, …, g_{d−1}, 1) with Gaussian g and a
// bias column, real targets y_k = g_1² − g_2 + 0.3ε (squared loss) and labels
// b_k = 1{g_1 g_2 + 0.5ε' > 0} ∈ {0, 1} (BCE), all noisy so that neither fit
// is exact.
func vfData(n, d int, seed uint64) (x *mat.Dense, y, b []float64) {
	rng := rand.New(rand.NewPCG(seed, 0x7e57))
	x = mat.NewDense(n, d, nil)
	y = make([]float64, n)
	b = make([]float64, n)
	for k := 0; k < n; k++ {
		for j := 0; j < d-1; j++ {
			x.Set(k, j, rng.NormFloat64())
		}
		x.Set(k, d-1, 1)
		g1, g2 := x.At(k, 0), x.At(k, 1)
		y[k] = g1*g1 - g2 + 0.3*rng.NormFloat64()
		if g1*g2+0.5*rng.NormFloat64() > 0 {
			b[k] = 1
		}
	}
	return x, y, b
}

// vfCols returns the columns of h as separate slices.
func vfCols(h *mat.Dense) [][]float64 {
	_, m := h.Dims()
	cols := make([][]float64, m)
	for j := range cols {
		cols[j] = mat.Col(nil, j, h)
	}
	return cols
}

// vfPredict returns ŷ = Σ_j α_j h_j by plain loops.
func vfPredict(cols [][]float64, n int, alpha []float64) []float64 {
	yhat := make([]float64, n)
	for j, c := range cols {
		if alpha[j] == 0 {
			continue
		}
		for k, hkj := range c {
			yhat[k] += alpha[j] * hkj
		}
	}
	return yhat
}

func vfDot(a, b []float64) float64 {
	var s float64
	for i := range a {
		s += a[i] * b[i]
	}
	return s
}

// vfNonzeros returns |{j : a_j ≠ 0}|.
func vfNonzeros(a []float64) int {
	nnz := 0
	for _, v := range a {
		if v != 0 {
			nnz++
		}
	}
	return nnz
}

// vfPerturbed returns a random point near a: each entry is, with probability
// ½, a_j + sd·N(0, 1) drawn from rng, and 0 otherwise.
func vfPerturbed(rng *rand.Rand, a []float64, sd float64) []float64 {
	out := make([]float64, len(a))
	for j := range out {
		if rng.Float64() < 0.5 {
			out[j] = a[j] + sd*rng.NormFloat64()
		}
	}
	return out
}

func vfL1(a []float64) float64 {
	var s float64
	for _, v := range a {
		s += math.Abs(v)
	}
	return s
}

// vfKKT returns the Lasso-type optimality residual of α given the smooth
// gradient G_j = ∂/∂α_j ℓ(Hα):
//
//	max_j { |G_j + β sgn α_j|       if α_j ≠ 0,
//	        max(0, |G_j| − β)       if α_j = 0 },
//
// which is zero exactly when 0 ∈ ∇(ℓ∘H)(α) + β∂‖α‖₁.
func vfKKT(grad, alpha []float64, beta float64) float64 {
	var res float64
	for j, a := range alpha {
		var e float64
		if a != 0 {
			e = math.Abs(grad[j] + beta*math.Copysign(1, a))
		} else {
			e = math.Max(0, math.Abs(grad[j])-beta)
		}
		res = math.Max(res, e)
	}
	return res
}

// vfSoft is the soft-threshold sgn(z) max(|z| − t, 0).
func vfSoft(z, t float64) float64 {
	switch {
	case z > t:
		return z - t
	case z < -t:
		return z + t
	}
	return 0
}

// ---- squared loss reference ----------------------------------------------

// vfLassoObj returns ½‖Hα − y‖² + β‖α‖₁ by plain loops.
func vfLassoObj(cols [][]float64, y, alpha []float64, beta float64) float64 {
	yhat := vfPredict(cols, len(y), alpha)
	var s float64
	for k := range y {
		d := yhat[k] - y[k]
		s += d * d
	}
	return s/2 + beta*vfL1(alpha)
}

// vfLassoGrad returns G = Hᵀ(Hα − y).
func vfLassoGrad(cols [][]float64, y, alpha []float64) []float64 {
	r := vfPredict(cols, len(y), alpha)
	for k := range r {
		r[k] -= y[k]
	}
	g := make([]float64, len(cols))
	for j, c := range cols {
		g[j] = vfDot(c, r)
	}
	return g
}

// vfLassoGap is an independent duality gap for the Lasso: with the residual
// ρ = y − Hα scaled to θ = sρ, s = min(1, β/‖Hᵀρ‖∞), the dual value is
// D(θ) = ½‖y‖² − ½‖y − θ‖² ≤ F*, so F(α) − D(θ) ≥ F(α) − F*.
func vfLassoGap(cols [][]float64, y, alpha []float64, beta float64) float64 {
	g := vfLassoGrad(cols, y, alpha) // = −Hᵀρ
	var inf float64
	for _, v := range g {
		inf = math.Max(inf, math.Abs(v))
	}
	s := 1.0
	if inf > beta {
		s = beta / inf
	}
	yhat := vfPredict(cols, len(y), alpha)
	var yy, dd float64
	for k := range y {
		th := s * (y[k] - yhat[k])
		yy += y[k] * y[k]
		dd += (y[k] - th) * (y[k] - th)
	}
	return vfLassoObj(cols, y, alpha, beta) - (yy/2 - dd/2)
}

// vfCD runs cyclic coordinate descent with active-set cycling (as glmnet
// does): a full pass over all coordinates, then passes over the non-zero
// coordinates only until their largest change is ≤ max(1e-14, kktTol/100)·
// max(1, ‖α‖∞), then another full pass, and so on. update(j) sets α_j to its
// exact minimizer given the other coordinates and returns |Δα_j|. After each
// full pass refresh() recomputes the maintained residual from scratch and
// kkt() returns the KKT residual; the run stops when it is ≤ kktTol or when the full pass
// changed no coordinate by more than 1e-14·max(1, ‖α‖∞). It returns the
// number of coordinate passes and the final KKT residual.
func vfCD(alpha []float64, update func(j int) float64, refresh func(), kkt func() float64, kktTol float64, maxPasses int) (int, float64) {
	all := make([]int, len(alpha))
	for j := range all {
		all[j] = j
	}
	passes := 0
	// pass updates the coordinates idx and returns the largest change
	// relative to max(1, max_{j∈idx} |α_j|).
	pass := func(idx []int) float64 {
		var mc float64
		scale := 1.0
		for _, j := range idx {
			mc = math.Max(mc, update(j))
			scale = math.Max(scale, math.Abs(alpha[j]))
		}
		passes++
		return mc / scale
	}
	innerTol := math.Max(1e-14, 1e-2*kktTol)
	res := math.Inf(1)
	for passes < maxPasses {
		mc := pass(all)
		refresh()
		res = kkt()
		if res <= kktTol || mc <= 1e-14 {
			break
		}
		var act []int
		for j, a := range alpha {
			if a != 0 {
				act = append(act, j)
			}
		}
		for passes < maxPasses && pass(act) > innerTol {
		}
		refresh()
	}
	return passes, res
}

// vfLassoCD minimizes ½‖Hα − y‖² + β‖α‖₁ by coordinate descent (vfCD): each
// coordinate is set to its exact minimizer given the others,
//
//	α_j ← S(h_jᵀρ_j, β)/‖h_j‖²,   ρ_j = y − Σ_{i≠j} α_i h_i,
//
// with S the soft threshold (α_j = 0 when h_j = 0), starting from α = start
// padded with zeros (nil: α = 0). It returns α, the coordinate passes taken
// and the final KKT residual.
func vfLassoCD(cols [][]float64, y []float64, beta, kktTol float64, maxPasses int, start []float64) ([]float64, int, float64) {
	m := len(cols)
	alpha := make([]float64, m)
	copy(alpha, start)
	sq := make([]float64, m)
	for j, c := range cols {
		sq[j] = vfDot(c, c)
	}
	r := vfPredict(cols, len(y), alpha) // r = y − Hα
	for k := range r {
		r[k] = y[k] - r[k]
	}
	update := func(j int) float64 {
		if sq[j] == 0 {
			return 0
		}
		c, old := cols[j], alpha[j]
		nw := vfSoft(vfDot(c, r)+sq[j]*old, beta) / sq[j]
		d := nw - old
		if d != 0 {
			for k, hkj := range c {
				r[k] -= d * hkj
			}
			alpha[j] = nw
		}
		return math.Abs(d)
	}
	refresh := func() {
		yhat := vfPredict(cols, len(y), alpha)
		for k := range r {
			r[k] = y[k] - yhat[k]
		}
	}
	kkt := func() float64 { return vfKKT(vfLassoGrad(cols, y, alpha), alpha, beta) }
	passes, res := vfCD(alpha, update, refresh, kkt, kktTol, maxPasses)
	return alpha, passes, res
}

// ---- BCE reference ---------------------------------------------------------

// vfSigma is 1/(1 + e^{−t}).
func vfSigma(t float64) float64 {
	if t >= 0 {
		return 1 / (1 + math.Exp(-t))
	}
	e := math.Exp(t)
	return e / (1 + e)
}

// vfBCETerm is the paper's per-sample loss −2zb + log(e^{2z} + 1) for a label
// b ∈ {0, 1}, evaluated as −2zb + max(2z, 0) + log(1 + e^{−|2z|}).
func vfBCETerm(z, b float64) float64 {
	return -2*z*b + math.Max(2*z, 0) + math.Log1p(math.Exp(-math.Abs(2*z)))
}

// vfBCEObj returns (1/n) Σ_k (−2ŷ_k b_k + log(e^{2ŷ_k} + 1)) + β‖α‖₁.
func vfBCEObj(cols [][]float64, b, alpha []float64, beta float64) float64 {
	yhat := vfPredict(cols, len(b), alpha)
	var s float64
	for k, z := range yhat {
		s += vfBCETerm(z, b[k])
	}
	return s/float64(len(b)) + beta*vfL1(alpha)
}

// vfBCEGrad returns G_j = (1/n) Σ_k h_kj (−2b_k + 2σ(2ŷ_k)).
func vfBCEGrad(cols [][]float64, b, alpha []float64) []float64 {
	n := len(b)
	yhat := vfPredict(cols, n, alpha)
	d := make([]float64, n)
	for k, z := range yhat {
		d[k] = (-2*b[k] + 2*vfSigma(2*z)) / float64(n)
	}
	g := make([]float64, len(cols))
	for j, c := range cols {
		g[j] = vfDot(c, d)
	}
	return g
}

// vfBCECD minimizes the BCE objective by coordinate descent (vfCD) with an
// exact 1-D minimization per coordinate. For coordinate j with the others
// fixed, φ(t) = ψ(t) + β|t| with ψ(t) = (1/n) Σ_k f(ŷ_k + (t − α_j)h_kj) convex
// and smooth; t = 0 is optimal iff |ψ'(0)| ≤ β, otherwise the minimizer is the
// root of the increasing function q(t) = ψ'(t) + β sgn(−ψ'(0)) on the side
// where ψ'(0) points downhill (q changes sign there since β > 0 and ψ' is
// bounded), found by Newton steps from the current α_j, safeguarded by a
// bracket (expanded geometrically while its far end is unbounded, bisected
// otherwise).
func vfBCECD(cols [][]float64, b []float64, beta, kktTol float64, maxPasses int) ([]float64, int, float64) {
	n, m := len(b), len(cols)
	alpha := make([]float64, m)
	yhat := make([]float64, n)
	// derivs returns ψ'(t), ψ''(t) for column c whose weight is currently a.
	derivs := func(c []float64, a, t float64) (float64, float64) {
		var g, h float64
		for k, hkj := range c {
			if hkj == 0 {
				continue
			}
			s := vfSigma(2 * (yhat[k] + (t-a)*hkj))
			g += hkj * (-2*b[k] + 2*s)
			h += hkj * hkj * 4 * s * (1 - s)
		}
		return g / float64(n), h / float64(n)
	}
	update := func(j int) float64 {
		c, a := cols[j], alpha[j]
		g0, _ := derivs(c, a, 0)
		nw := 0.0
		if math.Abs(g0) > beta {
			// sg = +1: t > 0 with q(0) = g0 + β < 0; sg = −1: t < 0 with
			// q(0) = g0 − β > 0. Expand the bracket until q changes sign.
			sg := 1.0
			if g0 > 0 {
				sg = -1
			}
			q := func(t float64) (float64, float64) { g, h := derivs(c, a, t); return g + sg*beta, h }
			// Bracket q(lo) < 0 < q(hi); the far side starts unbounded.
			lo, hi := math.Inf(-1), 0.0
			if sg > 0 {
				lo, hi = 0, math.Inf(1)
			}
			t := a // warm start at the current value when it lies on the right side
			if sg*a <= 0 {
				t = sg * 1e-3
			}
			for it := 0; it < 200; it++ {
				v, d := q(t)
				if v == 0 {
					break
				}
				if v < 0 {
					lo = t
				} else {
					hi = t
				}
				tn := t - v/d
				newton := d > 0 && tn > lo && tn < hi
				if !newton {
					switch {
					case math.IsInf(hi, 1):
						tn = lo + math.Max(1, 2*math.Abs(lo))
					case math.IsInf(lo, -1):
						tn = hi - math.Max(1, 2*math.Abs(hi))
					default:
						tn = (lo + hi) / 2
					}
				}
				// Newton converges quadratically: after an accepted Newton
				// step of relative size ≤ 1e-9 the error is O(1e-18), below
				// rounding. A bracket of relative width 1e-15 also ends it.
				done := newton && math.Abs(tn-t) <= 1e-9*math.Max(1, math.Abs(t)) || hi-lo <= 1e-15*math.Max(1, math.Abs(t))
				t = tn
				if done {
					break
				}
			}
			nw = t
		}
		d := nw - a
		if d != 0 {
			for k, hkj := range c {
				yhat[k] += d * hkj
			}
			alpha[j] = nw
		}
		return math.Abs(d)
	}
	refresh := func() { copy(yhat, vfPredict(cols, n, alpha)) }
	kkt := func() float64 { return vfKKT(vfBCEGrad(cols, b, alpha), alpha, beta) }
	passes, res := vfCD(alpha, update, refresh, kkt, kktTol, maxPasses)
	return alpha, passes, res
}

// vfSolveBCE runs FISTABCE until its duality gap is ≤ tol·max(1, F).
// It also returns copies of the first 30 iterates.
func vfSolveBCE(t *testing.T, p *BCELasso, tol float64, maxIter int) ([]float64, FISTAStep, [][]float64) {
	t.Helper()
	f, err := NewFISTABCE(p, nil)
	if err != nil {
		t.Fatal(err)
	}
	var early [][]float64
	var st FISTAStep
	for it := 0; it < maxIter; it++ {
		st = f.Step()
		if it < 30 {
			early = append(early, append([]float64(nil), f.State.Alpha...))
		}
		if st.Gap <= tol*math.Max(1, st.Objective) {
			return append([]float64(nil), f.State.Alpha...), st, early
		}
	}
	t.Fatalf("FISTABCE did not reach gap %g in %d iterations (gap %g)", tol, maxIter, st.Gap)
	return nil, st, nil
}

// vfMaxAbsDiff returns ‖a − b‖∞.
func vfMaxAbsDiff(a, b []float64) float64 {
	var s float64
	for i := range a {
		s = math.Max(s, math.Abs(a[i]-b[i]))
	}
	return s
}

// TestLassoFISTAMatchesCoordinateDescent compares FISTA on the squared-loss
// SCP (eq. SCP2) with an independent cyclic coordinate-descent solve certified
// by its KKT residual, on ReLU features of random data for N ∈ {5, 20, 60}
// sampled neurons (n = 30 points, so N = 60 is overparameterized). Checked:
//
//   - relative objective difference ≤ 1e-9;
//   - ‖H(α_F − α_CD)‖₂ ≤ √(2 gap_F) + √(2 gap_CD): F is 1-strongly convex in
//     Hα, so ½‖H(α − α*)‖² ≤ F(α) − F* ≤ gap(α);
//   - α itself agrees to 1e-6 (the optimum is unique for these features);
//   - Lasso.DualityGap is a valid bound: gap(α) ≥ F(α) − F* for FISTA's early
//     iterates and for random α (weak duality; a wrong dual would fail), and
//     the float64 FeatureLasso/FISTAFeatures path lands on the same optimum.
func TestLassoFISTAMatchesCoordinateDescent(t *testing.T) {
	start := time.Now()
	for _, seed := range []uint64{1, 2, 3} {
		x, y, _ := vfData(30, 4, seed)
		for _, N := range []int{5, 20, 60} {
			_, h := sampledFeatures(t, x, N, 1000*seed+uint64(N))
			cols := vfCols(h)
			// β = 2% of the smallest β with α* = 0 keeps several neurons active.
			var lmax float64
			for _, c := range cols {
				lmax = math.Max(lmax, math.Abs(vfDot(c, y)))
			}
			beta := 0.02 * lmax
			aCD, sweeps, kkt := vfLassoCD(cols, y, beta, 1e-12, 2000000, nil)
			if kkt > 1e-10 {
				t.Fatalf("seed %d N=%d: reference CD not converged: KKT %g after %d passes", seed, N, kkt, sweeps)
			}
			fCD := vfLassoObj(cols, y, aCD, beta)
			gCD := vfLassoGap(cols, y, aCD, beta)

			p := &Lasso{H: h, Y: y, Beta: beta}
			f, err := NewFISTA(p, nil)
			if err != nil {
				t.Fatal(err)
			}
			fStar := fCD - math.Max(gCD, 0) // certified lower bound on F*
			var st FISTAStep
			for it := 0; it < 500000; it++ {
				st = f.Step()
				if it < 30 {
					fa := vfLassoObj(cols, y, f.State.Alpha, beta)
					if g := p.DualityGap(f.State.Alpha); g < fa-fCD-1e-12*math.Max(1, fCD) || g < -1e-12 {
						t.Fatalf("seed %d N=%d iter %d: DualityGap %g < F(α) − F* = %g", seed, N, it, g, fa-fCD)
					}
				}
				if st.Gap <= 1e-13*math.Max(1, st.Objective) {
					break
				}
			}
			aF := f.State.Alpha
			fF := vfLassoObj(cols, y, aF, beta)
			gF := vfLassoGap(cols, y, aF, beta)
			rel := math.Abs(fF-fCD) / math.Max(1, math.Abs(fCD))
			fitDiff := math.Sqrt(vfDot(
				vfPredict(cols, len(y), vfDiff(aF, aCD)),
				vfPredict(cols, len(y), vfDiff(aF, aCD))))
			fitBound := math.Sqrt(2*math.Max(gF, 0)) + math.Sqrt(2*math.Max(gCD, 0)) + 1e-12
			aDiff := vfMaxAbsDiff(aF, aCD)
			nnz := vfNonzeros(aCD)
			t.Logf("seed %d N=%2d β=%.4g: F_CD=%.15g (KKT %.1e, %d passes, gap %.1e) F_FISTA=%.15g (gap %.1e, %d it) rel %.2e ‖α diff‖∞ %.2e ‖H Δα‖ %.2e ≤ %.2e nnz %d",
				seed, N, beta, fCD, kkt, sweeps, gCD, fF, st.Gap, st.Iter, rel, aDiff, fitDiff, fitBound, nnz)
			if rel > 1e-9 {
				t.Errorf("seed %d N=%d: objectives differ: FISTA %.15g, CD %.15g (rel %.2e)", seed, N, fF, fCD, rel)
			}
			if fitDiff > fitBound {
				t.Errorf("seed %d N=%d: ‖H(α_F − α_CD)‖ = %.3g exceeds the strong-convexity bound %.3g", seed, N, fitDiff, fitBound)
			}
			if aDiff > 1e-6 {
				t.Errorf("seed %d N=%d: ‖α_F − α_CD‖∞ = %.3g", seed, N, aDiff)
			}
			if fF < fStar-1e-12*math.Max(1, fCD) {
				t.Errorf("seed %d N=%d: FISTA objective %.15g below the certified lower bound %.15g", seed, N, fF, fStar)
			}
			// Weak duality of DualityGap at random points.
			rng := rand.New(rand.NewPCG(seed, uint64(N)))
			for trial := 0; trial < 20; trial++ {
				a := vfPerturbed(rng, aCD, 0.1)
				fa := vfLassoObj(cols, y, a, beta)
				if g := p.DualityGap(a); g < fa-fCD-1e-12*math.Max(1, fa) {
					t.Fatalf("seed %d N=%d: DualityGap %g < F(α) − F* = %g at a random α", seed, N, g, fa-fCD)
				}
			}
			// Same problem through the FeatureMatrix path (float64 storage).
			ff, err := NewFISTAFeatures(&FeatureLasso{H: NewDenseFeatures(h), Y: y, Beta: beta}, nil)
			if err != nil {
				t.Fatal(err)
			}
			fs := runUntil(ff, 500000, relGapAtMost(1e-13))
			if r := math.Abs(vfLassoObj(cols, y, ff.State.Alpha, beta)-fCD) / math.Max(1, fCD); r > 1e-9 {
				t.Errorf("seed %d N=%d: FISTAFeatures objective off by rel %.2e (gap %.2e)", seed, N, r, fs.Gap)
			}
		}
	}
	t.Logf("%.2fs", time.Since(start).Seconds())
}

func vfDiff(a, b []float64) []float64 {
	d := make([]float64, len(a))
	for i := range a {
		d[i] = a[i] - b[i]
	}
	return d
}

// TestBCEFISTAMatchesCoordinateNewton compares FISTABCE on the paper's BCE
// loss with an independent coordinate descent (exact 1-D Newton minimization
// per coordinate, loss written in the paper's form −2ŷy + log(e^{2ŷ} + 1))
// certified by its KKT residual: relative objective difference ≤ 1e-9, α
// agreement, and BCELasso.DualityGap ≥ F(α) − F* at early iterates and random
// points.
func TestBCEFISTAMatchesCoordinateNewton(t *testing.T) {
	start := time.Now()
	for _, seed := range []uint64{1, 2, 3} {
		x, _, b := vfData(40, 4, 10+seed)
		for _, N := range []int{5, 20, 60} {
			_, h := sampledFeatures(t, x, N, 2000*seed+uint64(N))
			cols := vfCols(h)
			lmax := 0.0
			for _, g := range vfBCEGrad(cols, b, make([]float64, N)) {
				lmax = math.Max(lmax, math.Abs(g))
			}
			beta := 0.05 * lmax
			aCD, sweeps, kkt := vfBCECD(cols, b, beta, 1e-11, 500000)
			if kkt > 1e-10 {
				t.Fatalf("seed %d N=%d: reference CD not converged: KKT %g after %d passes", seed, N, kkt, sweeps)
			}
			fCD := vfBCEObj(cols, b, aCD, beta)
			p := &BCELasso{H: NewDenseFeatures(h), Y: b, Beta: beta}
			aF, st, early := vfSolveBCE(t, p, 1e-13, 500000)
			fF := vfBCEObj(cols, b, aF, beta)
			rel := math.Abs(fF-fCD) / math.Max(1, math.Abs(fCD))
			aDiff := vfMaxAbsDiff(aF, aCD)
			nnz := vfNonzeros(aCD)
			t.Logf("seed %d N=%2d β=%.4g: F_CD=%.15g (KKT %.1e, %d passes) F_FISTA=%.15g (gap %.1e, %d it) rel %.2e ‖α diff‖∞ %.2e nnz %d",
				seed, N, beta, fCD, kkt, sweeps, fF, st.Gap, st.Iter, rel, aDiff, nnz)
			if rel > 1e-9 {
				t.Errorf("seed %d N=%d: objectives differ: FISTA %.15g, CD %.15g (rel %.2e)", seed, N, fF, fCD, rel)
			}
			if aDiff > 1e-5 {
				t.Errorf("seed %d N=%d: ‖α_F − α_CD‖∞ = %.3g", seed, N, aDiff)
			}
			if fF < fCD-st.Gap-1e-12 || fCD < fF-st.Gap-1e-12 {
				t.Errorf("seed %d N=%d: |F_FISTA − F_CD| = %.3g exceeds FISTA's gap %.3g", seed, N, math.Abs(fF-fCD), st.Gap)
			}
			for i, a := range early {
				fa := vfBCEObj(cols, b, a, beta)
				if g := p.DualityGap(a); g < fa-fCD-1e-12 || g < -1e-12 {
					t.Fatalf("seed %d N=%d iter %d: BCE DualityGap %g < F(α) − F* = %g", seed, N, i+1, g, fa-fCD)
				}
			}
			rng := rand.New(rand.NewPCG(seed, uint64(N)+99))
			for trial := 0; trial < 20; trial++ {
				a := vfPerturbed(rng, aCD, 0.3)
				fa := vfBCEObj(cols, b, a, beta)
				if g := p.DualityGap(a); g < fa-fCD-1e-12 {
					t.Fatalf("seed %d N=%d: BCE DualityGap %g < F(α) − F* = %g at a random α", seed, N, g, fa-fCD)
				}
				if math.Abs(p.Objective(a)-fa) > 1e-13*math.Max(1, fa) {
					t.Fatalf("seed %d N=%d: BCELasso.Objective %.17g vs paper formula %.17g", seed, N, p.Objective(a), fa)
				}
			}
		}
	}
	t.Logf("%.2fs", time.Since(start).Seconds())
}

// TestNestedSamplesObjectiveNonincreasing checks that the sampled optimum
// cannot increase when neurons are added: with U_1 ⊂ U_2 ⊂ U_3 the first N_1,
// N_2, N_3 columns of one SampleSphere draw, α*_{N_i} padded with zeros is
// feasible for the larger program with the same objective, so
// F*_{N3} ≤ F*_{N2} ≤ F*_{N1}. Each program is solved to a duality gap
// g ≤ 1e-10 and F(α) − g ≤ F* ≤ F(α), hence the computed values must satisfy
// F(α_{i+1}) ≤ F(α_i) + g_{i+1}. Both squared and BCE losses, three seeds.
func TestNestedSamplesObjectiveNonincreasing(t *testing.T) {
	start := time.Now()
	Ns := []int{8, 32, 128}
	const gapTol = 1e-10
	strict := 0
	for _, seed := range []uint64{1, 2, 3} {
		x, y, b := vfData(25, 4, 100+seed)
		uAll, err := SampleSphere(4, Ns[2], 300+seed)
		if err != nil {
			t.Fatal(err)
		}
		for _, loss := range []string{"squared", "bce"} {
			var objs, gaps []float64
			for _, N := range Ns {
				u := mat.DenseCopyOf(uAll.Slice(0, 4, 0, N))
				h, err := ReLUFeatures(x, u)
				if err != nil {
					t.Fatal(err)
				}
				var obj, gap float64
				switch loss {
				case "squared":
					p := &Lasso{H: h, Y: y, Beta: 0.1}
					f, err := NewFISTA(p, nil)
					if err != nil {
						t.Fatal(err)
					}
					runUntil(f, 1000000, gapAtMost(gapTol))
					obj, gap = vfLassoObj(vfCols(h), y, f.State.Alpha, p.Beta), vfLassoGap(vfCols(h), y, f.State.Alpha, p.Beta)
				case "bce":
					p := &BCELasso{H: NewDenseFeatures(h), Y: b, Beta: 0.005}
					f, err := NewFISTABCE(p, nil)
					if err != nil {
						t.Fatal(err)
					}
					st := runUntil(f, 1000000, gapAtMost(gapTol))
					obj, gap = vfBCEObj(vfCols(h), b, f.State.Alpha, p.Beta), st.Gap
				}
				if !(gap <= gapTol) || gap < -1e-12 {
					t.Fatalf("seed %d %s N=%d: gap %g not reached or negative (weak duality violated)", seed, loss, N, gap)
				}
				objs, gaps = append(objs, obj), append(gaps, gap)
			}
			t.Logf("seed %d %-7s F*_{%d,%d,%d} = %.12g, %.12g, %.12g (gaps %.1e %.1e %.1e)",
				seed, loss, Ns[0], Ns[1], Ns[2], objs[0], objs[1], objs[2], gaps[0], gaps[1], gaps[2])
			for i := 1; i < len(Ns); i++ {
				if objs[i] > objs[i-1]+gaps[i]+1e-13 {
					t.Errorf("seed %d %s: F*_{N=%d} = %.15g > F*_{N=%d} = %.15g + gap %.2g", seed, loss, Ns[i], objs[i], Ns[i-1], objs[i-1], gaps[i])
				}
				if objs[i] < objs[i-1]-1e-6 {
					strict++
				}
			}
			if objs[2] > objs[0]+2*gapTol+1e-13 {
				t.Errorf("seed %d %s: F*_{N=%d} = %.15g > F*_{N=%d} + 2 tol", seed, loss, Ns[2], objs[2], Ns[0])
			}
		}
	}
	// The check is not vacuous: most enlargements strictly lower the optimum.
	if strict < 6 {
		t.Errorf("only %d of 12 enlargements lowered the optimum by > 1e-6; the instances are too easy", strict)
	}
	t.Logf("%d of 12 enlargements strictly decreased F*; %.2fs", strict, time.Since(start).Seconds())
}

// vfTheta estimates θ = P_{u∼Unif(S^{d−1})}(|vᵀ(Xu)_+| > β(1+tol)) from
// `total` fresh neurons drawn in blocks of 20000 (seeds seed, seed+1, …),
// counted by Violations.
func vfTheta(t *testing.T, x *mat.Dense, v []float64, beta, tol float64, total int, seed uint64) float64 {
	t.Helper()
	_, d := x.Dims()
	const block = 20000
	count := 0
	for done, i := 0, uint64(0); done < total; i++ {
		m := min(block, total-done)
		u, err := SampleSphere(d, m, seed+i)
		if err != nil {
			t.Fatal(err)
		}
		c, err := Violations(x, u, v, beta, tol)
		if err != nil {
			t.Fatal(err)
		}
		count += c
		done += m
	}
	return float64(count) / float64(total)
}

// vfCoverage repeats the certificate `trials` times with fresh check samples
// of nCheck neurons and returns how many times θ ≤ HoeffdingBound(Z̄, nCheck, ξ)
// and how many times θ ≤ Z̄ + log(1/ξ)/(2 nCheck) (the paper's printed bound).
func vfCoverage(t *testing.T, x *mat.Dense, v []float64, beta, tol, theta float64, nCheck, trials int, xi float64, seed uint64) (hoeff, paper int) {
	t.Helper()
	_, d := x.Dims()
	for i := 0; i < trials; i++ {
		u, err := SampleSphere(d, nCheck, seed+uint64(i))
		if err != nil {
			t.Fatal(err)
		}
		c, err := Violations(x, u, v, beta, tol)
		if err != nil {
			t.Fatal(err)
		}
		zbar := float64(c) / float64(nCheck)
		bnd, err := HoeffdingBound(zbar, nCheck, xi)
		if err != nil {
			t.Fatal(err)
		}
		if theta <= bnd {
			hoeff++
		}
		if theta <= zbar+math.Log(1/xi)/(2*float64(nCheck)) {
			paper++
		}
	}
	return hoeff, paper
}

// vfBinomialLowerCount returns the smallest success count k that a
// Binomial(trials, p) variable reaches with probability ≥ 1 − level, i.e. the
// largest k with P(K < k) ≤ level: a one-sided (1 − level) lower limit.
func vfBinomialLowerCount(trials int, p, level float64) int {
	bin := distuv.Binomial{N: float64(trials), P: p}
	k := 0
	for c := 1; c <= trials; c++ {
		if bin.CDF(float64(c-1)) <= level {
			k = c
		}
	}
	return k
}

// TestHoeffdingCertificateCoverage checks the probabilistic certificate of
// the iterative-sampling Algorithm empirically. For a fixed dual v, the
// violation probability θ = P_u(|vᵀ(Xu)_+| > β(1+tol)) is estimated from
// 200 000 fresh uniform neurons (standard error ≤ 0.0012). The certificate is
// then repeated in T = 200 independent trials, each with a fresh check sample
// of N_check neurons, and the number of trials with θ ≤ HoeffdingBound(Z̄,
// N_check, ξ = 0.05) must be at least the one-sided 99.9% binomial lower limit
// k_min of Binomial(T, 1 − ξ): k_min = 179, i.e. coverage ≥ 0.895 instead of
// 0.95 (the slack 0.055 is the binomial noise of T = 200 trials at level
// 0.001: P(K < 179) ≤ 0.001 when K ~ Binomial(200, 0.95)).
//
// Case A: v = Dual of a small fixed sample (θ ≈ 0.48), where the paper's
// printed bound Z̄ + log(1/ξ)/(2N) (no square root) is asserted to FAIL the
// same coverage test (Z̄'s standard deviation √(θ(1−θ)/N) ≈ 0.03 dwarfs
// log(20)/400 ≈ 0.0075), so the test can tell a valid bound from an invalid
// one. Case B: v of the final round of Iterative; also θ ≤ ψ (what the
// certificate asserts for this seeded run).
func TestHoeffdingCertificateCoverage(t *testing.T) {
	start := time.Now()
	const (
		xi     = 0.05
		trials = 200
		nCheck = 200
		tol    = 1e-6
	)
	kMin := vfBinomialLowerCount(trials, 1-xi, 0.001)
	if kMin < 170 || kMin > 190 { // sanity of the binomial limit (normal approximation: 190 − 3.09·3.08 ≈ 180)
		t.Fatalf("binomial lower limit %d out of range", kMin)
	}
	x, y := twoD(30, 7)
	const beta = 0.05

	// Case A: fixed sample of 20 neurons.
	_, h := sampledFeatures(t, x, 20, 71)
	p := &Lasso{H: h, Y: y, Beta: beta}
	alpha := solveLassoTo(t, p, 1e-12)
	v := Dual(p, alpha)
	theta := vfTheta(t, x, v, beta, tol, 200000, 1<<20)
	if theta < 0.1 || theta > 0.6 {
		t.Fatalf("case A: θ = %.4f; the setting should have a moderate violation probability", theta)
	}
	hc, pc := vfCoverage(t, x, v, beta, tol, theta, nCheck, trials, xi, 1<<30)
	t.Logf("case A: θ_true = %.4f; coverage of θ ≤ Hoeffding bound %d/%d = %.3f, paper bound (no sqrt) %d/%d = %.3f; need ≥ %d/%d = %.3f",
		theta, hc, trials, float64(hc)/trials, pc, trials, float64(pc)/trials, kMin, trials, float64(kMin)/trials)
	if hc < kMin {
		t.Errorf("case A: Hoeffding bound covered θ in %d/%d trials, below the 99.9%% binomial lower limit %d of 1−ξ", hc, trials, kMin)
	}
	if pc >= kMin {
		t.Errorf("case A: the paper's bound without the square root covered θ in %d/%d trials; expected it to fail (< %d)", pc, trials, kMin)
	}

	// Case B: the final dual of Iterative.
	o := IterativeOptions{N0: 3, N1: nCheck, Psi: 0.2, Xi: xi, MaxRounds: 15, GapTol: 1e-10, ViolationTol: tol, Seed: 9}
	res, err := Iterative(context.Background(), x, y, beta, o)
	if err != nil {
		t.Fatal(err)
	}
	last := res.Rounds[len(res.Rounds)-1]
	if !res.Certified {
		t.Fatalf("case B: Iterative not certified (%s, bound %.3f)", res.StopReason, last.Bound)
	}
	thetaB := vfTheta(t, x, res.V, beta, tol, 200000, 1<<21)
	hb, pb := vfCoverage(t, x, res.V, beta, tol, thetaB, nCheck, trials, xi, 1<<31)
	t.Logf("case B: %d rounds, %d neurons, certified bound %.4f ≤ ψ=%.2f; θ_true = %.4f; coverage Hoeffding %d/%d = %.3f, paper %d/%d = %.3f",
		len(res.Rounds), last.Neurons, last.Bound, o.Psi, thetaB, hb, trials, float64(hb)/trials, pb, trials, float64(pb)/trials)
	if thetaB > o.Psi {
		t.Errorf("case B: certified run has θ_true = %.4f > ψ = %.2f", thetaB, o.Psi)
	}
	if hb < kMin {
		t.Errorf("case B: Hoeffding bound covered θ in %d/%d trials, below %d", hb, trials, kMin)
	}
	t.Logf("%.2fs", time.Since(start).Seconds())
}

// TestIterativeSCPRoundsAudit recomputes every quantity Iterative reports
// from scratch. The fresh samples of each round are regenerated from the
// documented seed derivation (one PCG stream seeded by Options.Seed drawing
// the seed of U_0 and then one seed per round); the test first confirms that
// the regenerated U_0 equals the leading columns of the returned U. For each
// round r, the Lasso on the leading Neurons_r columns of U is re-solved by the
// coordinate-descent reference (α*_r, v*_r = y − Hα*_r), and:
//
//   - |Objective_r − F*_r| ≤ Gap_r + gap_ref, and Gap_r ≤ GapTol·max(1, F)
//     unless the iteration cap was hit;
//   - Violations_r lies between the numbers of fresh neurons that certainly
//     and that possibly violate: the solver's v_r is within
//     ρ = √(2(F(α_r) − F*)) + √(2 gap_ref) of v*_r in ‖·‖₂ (the objective is
//     1-strongly convex in Hα), so |v_rᵀh − v*_rᵀh| ≤ ρ‖h‖; also
//     Violations(X, U1_r, v*_r) equals a hand count of |v*ᵀh_j| > β(1+tol);
//   - Z̄ = Violations/N1 and Bound = HoeffdingBound(Z̄, N1, ξ) exactly;
//   - the neurons appended to U are fresh neurons of U1_r in increasing order
//     containing every certain violator and only possible violators (all of
//     U1_r with AddAll), and Neurons_{r+1} = Neurons_r + Added_r;
//   - for the last round, V = y − Hα, Nonzeros, Objective and Gap match
//     independent recomputation, and Certified ⇔ Bound ≤ ψ.
//
// Also checks the GuidanceStop and MaxIter options, otherwise untested.
func TestIterativeSCPRoundsAudit(t *testing.T) {
	start := time.Now()
	x, y, _ := vfData(40, 4, 5)
	n, d := x.Dims()
	const beta = 1.0
	for _, addAll := range []bool{false, true} {
		o := IterativeOptions{N0: 3, N1: 300, Psi: 0.1, Xi: 0.05, MaxRounds: 12, GapTol: 1e-8, ViolationTol: 1e-5, AddAll: addAll, Seed: 17}
		res, err := Iterative(context.Background(), x, y, beta, o)
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Rounds) < 3 {
			t.Fatalf("AddAll=%v: only %d round(s); the audit needs several", addAll, len(res.Rounds))
		}
		seeds := rand.New(rand.NewPCG(o.Seed, 0x5c9d1a7e3b2f4c61))
		u0, _ := SampleSphere(d, o.N0, seeds.Uint64())
		if !mat.Equal(u0, res.U.Slice(0, d, 0, o.N0)) {
			t.Fatal("Iterative's seed derivation changed; update the regeneration in this test")
		}
		lim := beta * (1 + o.ViolationTol)
		var prevRef []float64
		for i, r := range res.Rounds {
			if r.Round != i {
				t.Fatalf("round %d labelled %d", i, r.Round)
			}
			u1, _ := SampleSphere(d, o.N1, seeds.Uint64())
			ur := mat.DenseCopyOf(res.U.Slice(0, d, 0, r.Neurons))
			h, _ := ReLUFeatures(x, ur)
			cols := vfCols(h)
			aRef, sweeps, kkt := vfLassoCD(cols, y, beta, 1e-10, 2000000, prevRef)
			prevRef = aRef // the next round's neurons extend these
			if kkt > 1e-10 {
				t.Fatalf("round %d: reference not converged (KKT %g)", i, kkt)
			}
			fRef := vfLassoObj(cols, y, aRef, beta)
			gRef := math.Max(vfLassoGap(cols, y, aRef, beta), 0)
			if math.Abs(r.Objective-fRef) > r.Gap+gRef+1e-12*math.Max(1, fRef) {
				t.Errorf("AddAll=%v round %d: reported objective %.15g, reference optimum %.15g, reported gap %.2g", addAll, i, r.Objective, fRef, r.Gap)
			}
			if r.Iters < 200000 && r.Gap > o.GapTol*math.Max(1, r.Objective) {
				t.Errorf("AddAll=%v round %d: gap %.3g above GapTol after %d iterations", addAll, i, r.Gap, r.Iters)
			}
			vRef := vfPredict(cols, n, aRef)
			for k := range vRef {
				vRef[k] = y[k] - vRef[k]
			}
			rho := math.Sqrt(2*math.Max(r.Objective-fRef+gRef, 0)) + math.Sqrt(2*gRef)
			h1, _ := ReLUFeatures(x, u1)
			certain, possible := map[int]bool{}, map[int]bool{}
			exact := 0
			for j, c := range vfCols(h1) {
				a, hn := math.Abs(vfDot(c, vRef)), math.Sqrt(vfDot(c, c))
				if a > lim {
					exact++
				}
				if a-rho*hn > lim {
					certain[j] = true
				}
				if a+rho*hn > lim {
					possible[j] = true
				}
			}
			if c, err := Violations(x, u1, vRef, beta, o.ViolationTol); err != nil || c != exact {
				t.Errorf("round %d: Violations %d (%v), hand count %d", i, c, err, exact)
			}
			if r.Violations < len(certain) || r.Violations > len(possible) {
				t.Errorf("AddAll=%v round %d: reported %d violations, recomputed between %d and %d (exact v*: %d)", addAll, i, r.Violations, len(certain), len(possible), exact)
			}
			if r.Zbar != float64(r.Violations)/float64(o.N1) {
				t.Errorf("round %d: Z̄ %v ≠ %d/%d", i, r.Zbar, r.Violations, o.N1)
			}
			if want, _ := HoeffdingBound(r.Zbar, o.N1, o.Xi); r.Bound != want {
				t.Errorf("round %d: bound %v, HoeffdingBound gives %v", i, r.Bound, want)
			}
			t.Logf("AddAll=%v round %d: %d neurons (CD %d passes), F %.12g vs F* %.12g, violations %d ∈ [%d, %d], ρ %.1e, added %d",
				addAll, i, r.Neurons, sweeps, r.Objective, fRef, r.Violations, len(certain), len(possible), rho, r.Added)
			if i == len(res.Rounds)-1 {
				if r.Added != 0 {
					t.Errorf("last round reports %d added neurons", r.Added)
				}
				continue
			}
			next := res.Rounds[i+1]
			if next.Neurons != r.Neurons+r.Added {
				t.Fatalf("AddAll=%v round %d: neurons %d + added %d ≠ %d", addAll, i, r.Neurons, r.Added, next.Neurons)
			}
			if addAll && r.Added != o.N1 || !addAll && r.Added != r.Violations {
				t.Errorf("AddAll=%v round %d: added %d with %d violations of %d", addAll, i, r.Added, r.Violations, o.N1)
			}
			// Locate each appended neuron among the fresh ones.
			last := -1
			seen := map[int]bool{}
			for k := 0; k < r.Added; k++ {
				col := res.U.ColView(r.Neurons + k)
				j := last + 1
				for ; j < o.N1 && !mat.Equal(col, u1.ColView(j)); j++ {
				}
				if j == o.N1 {
					t.Fatalf("AddAll=%v round %d: appended neuron %d is not a later fresh neuron of this round", addAll, i, k)
				}
				if !addAll && !possible[j] {
					t.Errorf("AddAll=%v round %d: appended fresh neuron %d does not violate", addAll, i, j)
				}
				seen[j], last = true, j
			}
			for j := range certain {
				if !seen[j] {
					t.Errorf("AddAll=%v round %d: violating fresh neuron %d was not added", addAll, i, j)
				}
			}
			if next.Objective > r.Objective+next.Gap+1e-12 {
				t.Errorf("round %d: objective rose %.15g → %.15g", i, r.Objective, next.Objective)
			}
		}
		// Last round: returned α, V, Nonzeros, Gap.
		last := res.Rounds[len(res.Rounds)-1]
		h, _ := ReLUFeatures(x, res.U)
		cols := vfCols(h)
		if len(res.Alpha) != len(cols) || last.Neurons != len(cols) {
			t.Fatalf("shapes: α %d, U %d, last round %d", len(res.Alpha), len(cols), last.Neurons)
		}
		fit := vfPredict(cols, n, res.Alpha)
		for k := range fit {
			if math.Abs(res.V[k]-(y[k]-fit[k])) > 1e-12 {
				t.Fatalf("V[%d] = %v, y − Hα = %v", k, res.V[k], y[k]-fit[k])
			}
		}
		if nnz := vfNonzeros(res.Alpha); nnz != last.Nonzeros {
			t.Errorf("nonzeros %d, reported %d", nnz, last.Nonzeros)
		}
		if g := vfLassoGap(cols, y, res.Alpha, beta); math.Abs(g-last.Gap) > 1e-12 {
			t.Errorf("last gap %.3g, independent gap %.3g", last.Gap, g)
		}
		if o := vfLassoObj(cols, y, res.Alpha, beta); math.Abs(o-last.Objective) > 1e-12*math.Max(1, o) {
			t.Errorf("last objective %.15g, recomputed %.15g", last.Objective, o)
		}
		if res.Certified != (last.Bound <= o.Psi) || (res.Certified && res.StopReason != "certified") {
			t.Errorf("Certified=%v StopReason=%q with bound %.3f, ψ %.2f", res.Certified, res.StopReason, last.Bound, o.Psi)
		}
		t.Logf("AddAll=%v: %d rounds, neurons %d → %d, stop %s, final bound %.3f", addAll, len(res.Rounds), res.Rounds[0].Neurons, last.Neurons, res.StopReason, last.Bound)
	}

	// GuidanceStop: stops at the first uncertified round whose neuron count
	// reaches SampleSizeGuidance(n, ψ, ξ) = min((n+1)/(ψξ) − 1, (2/ξ)(n+1−log ψ)).
	xs, ys := twoD(10, 5)
	og := IterativeOptions{N0: 4, N1: 300, Psi: 0.05, Xi: 0.5, MaxRounds: 10, GapTol: 1e-10, AddAll: true, GuidanceStop: true, Seed: 3}
	guide := math.Min(11/(og.Psi*og.Xi)-1, 2/og.Xi*(11-math.Log(og.Psi)))
	rg, err := Iterative(context.Background(), xs, ys, 1e-3, og)
	if err != nil {
		t.Fatal(err)
	}
	lg := rg.Rounds[len(rg.Rounds)-1]
	t.Logf("GuidanceStop: guidance %.1f neurons; %d rounds, last %d neurons, bound %.3f, stop %s", guide, len(rg.Rounds), lg.Neurons, lg.Bound, rg.StopReason)
	if rg.StopReason != "guidance" || rg.Certified || float64(lg.Neurons) < guide {
		t.Errorf("GuidanceStop: stop %q certified %v with %d neurons (guidance %.1f)", rg.StopReason, rg.Certified, lg.Neurons, guide)
	}
	for _, r := range rg.Rounds[:len(rg.Rounds)-1] {
		if float64(r.Neurons) >= guide {
			t.Errorf("GuidanceStop: round %d already had %d ≥ %.1f neurons but went on", r.Round, r.Neurons, guide)
		}
	}

	// MaxIter caps each round's FISTA iterations; the rounds go on and report
	// the (larger) gap of the capped iterate.
	oc := IterativeOptions{N0: 5, N1: 150, Psi: 0.2, Xi: 0.05, MaxRounds: 3, MaxIter: 4, GapTol: 1e-12, AddAll: true, Seed: 4}
	rc, err := Iterative(context.Background(), x, y, beta, oc)
	if err != nil {
		t.Fatal(err)
	}
	if len(rc.Rounds) != 3 || rc.StopReason != "max-rounds" {
		t.Errorf("MaxIter: %d rounds, stop %q; want 3 rounds, max-rounds", len(rc.Rounds), rc.StopReason)
	}
	for _, r := range rc.Rounds {
		if r.Iters > oc.MaxIter {
			t.Errorf("MaxIter: round %d ran %d > %d iterations", r.Round, r.Iters, oc.MaxIter)
		}
	}
	lc := rc.Rounds[len(rc.Rounds)-1]
	hc, _ := ReLUFeatures(x, rc.U)
	if g := vfLassoGap(vfCols(hc), y, rc.Alpha, beta); math.Abs(g-lc.Gap) > 1e-12*math.Max(1, g) || g < 1e-6 {
		t.Errorf("MaxIter: capped last round reports gap %.3g, independent gap %.3g (expected a large gap)", lc.Gap, g)
	}
	t.Logf("%.2fs", time.Since(start).Seconds())
}
