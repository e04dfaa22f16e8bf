package certify

import (
	"math"
	"slices"

	"github.com/convexnn/convexnn/solvers"
	"gonum.org/v1/gonum/floats"
	"gonum.org/v1/gonum/mat"
)

// pointDual returns the default dual information at a feasible point: for
// ε > 0 the worst-case perturbation Δ (solvers.WorstCase, padded with the
// bias column) and μ the (sub)gradient of the loss on X + Δ at the point's
// output ŷ_Δ = Σ_i D_i (X + Δ)(v_i − w_i).
func (c *Certifier) pointDual(wt solvers.Weights) ([]float64, *mat.Dense, error) {
	yhat, err := c.p.Predict(wt)
	if err != nil {
		return nil, nil, err
	}
	var delta *mat.Dense
	if c.eps > 0 {
		wc, err := solvers.WorstCase(c.p, wt, c.pert)
		if err != nil {
			return nil, nil, err
		}
		delta = mat.NewDense(c.n, c.d, nil)
		delta.Slice(0, c.n, 0, c.f).(*mat.Dense).Copy(wc)
		// g_k = Σ_i d_ik (v_i − w_i): ŷ_Δ,k = ŷ_k + δ_kᵀ g_k.
		diff := mat.NewDense(c.np, c.d, nil)
		diff.Sub(wt.V, wt.W)
		var g mat.Dense
		g.Mul(c.dm, diff)
		for k := range yhat {
			yhat[k] += floats.Dot(delta.RawRowView(k), g.RawRowView(k))
		}
	}
	mu := make([]float64, c.n)
	if c.p.Loss.Smooth() {
		c.p.Loss.Grad(mu, yhat, c.p.Y)
	} else { // hinge: a subgradient
		inv := 1 / float64(c.n)
		for k, y := range c.p.Y {
			if y*yhat[k] < 1 {
				mu[k] = -y * inv
			}
		}
	}
	return mu, delta, nil
}

// clipDual moves μ into the domain of ℓ* (solvers.Loss.ClipDual).
func (c *Certifier) clipDual(mu []float64) { c.p.Loss.ClipDual(mu, c.p.Y) }

// negConj returns −ℓ*(tμ) and the magnitude of its terms
// (solvers.Loss.NegConjugate).
func (c *Certifier) negConj(mu, lam []float64, t float64) (float64, float64) {
	return c.p.Loss.NegConjugate(mu, lam, c.p.Y, t)
}

// lower returns max over t ∈ [0, 1] of L(tμ, tW, tα) (see the package
// comment), refining α and W first. lam (nil: |μ|) is the squared loss's λ
// of a robust program (see Hint.Lambda); W starts from slopes, else from
// diag(μ)·delta.
func (c *Certifier) lower(mu, lam []float64, delta, slopes *mat.Dense, hint *mat.Dense, upper float64) float64 {
	c.clipDual(mu)
	n, np := c.n, c.np
	// M = D ∘ μ (n×P); c_j = σ_j (XᵀM + WᵀD)[:, i(j)].
	m := mat.NewDense(n, np, nil)
	absM := mat.NewDense(n, np, nil)
	for k := 0; k < n; k++ {
		for i := 0; i < np; i++ {
			if v := c.dm.At(k, i) * mu[k]; v != 0 {
				m.Set(k, i, v)
				absM.Set(k, i, math.Abs(v))
			}
		}
	}
	lam = c.lambdas(mu, lam)
	var w *mat.Dense // W = diag(μ)Δ, rows in the balls ελ_k; nil for the standard program
	var rad []float64
	if c.eps > 0 {
		w = mat.NewDense(n, c.d, nil)
		rad = make([]float64, n)
		for k := range rad {
			rad[k] = c.eps * lam[k]
		}
		switch {
		case slopes != nil:
			w.Copy(slopes)
			c.projectRows(w, rad)
		case delta != nil:
			w.Copy(delta)
			c.projectRows(w, nil)
			for k := 0; k < n; k++ {
				floats.Scale(mu[k], w.RawRowView(k))
			}
			c.projectRows(w, rad)
		}
	}
	alpha := c.startAlpha(hint)
	s := c.refine(m, w, rad, alpha)
	// Rounding: γ_n (|X|ᵀ|D∘μ| + |W|ᵀD + |X|ᵀ|S∘α|) bounds the error of c_j − XᵀSα_j.
	errC := mat.NewDense(c.d, np, nil)
	errC.Mul(c.absX.T(), absM)
	if w != nil {
		absW := mat.NewDense(n, c.d, nil)
		absW.Apply(func(_, _ int, v float64) float64 { return math.Abs(v) }, w)
		var ew mat.Dense
		ew.Mul(absW.T(), c.dm)
		errC.Add(errC, &ew)
	}
	absA := mat.NewDense(n, 2*np, nil)
	absA.Apply(func(_, _ int, v float64) float64 { return math.Abs(v) }, alpha)
	errA := mat.NewDense(c.d, 2*np, nil)
	errA.Mul(c.absX.T(), absA)
	g := gamma(n)
	var smax float64
	col := make([]float64, c.d)
	mag := make([]float64, 2*np) // ‖|X|ᵀ|D∘μ| + |X|ᵀ|α_j|‖ per group
	redo := make([]bool, 2*np)
	anyRedo := false
	for j := 0; j < 2*np; j++ {
		for r := 0; r < c.d; r++ {
			col[r] = errC.At(r, j%np) + errA.At(r, j)
		}
		mag[j] = floats.Norm(col, 2)
		slack := g*mag[j] + g*s[j]
		// Where the slack matters against the group's own excess over β,
		// the standard program's s_j are summed again with compensation
		// (compensatedS), whose slack is about u·s_j.
		if c.eps == 0 && slack > 0.01*(s[j]-c.p.Beta) {
			redo[j], anyRedo = true, true
		}
		s[j] += slack
	}
	if anyRedo {
		c.compensatedS(s, mu, mag, alpha, redo)
	}
	for _, v := range s {
		smax = math.Max(smax, v)
	}
	c.alpha, c.groups = alpha, s

	beta := c.p.Beta
	radius := upper / beta * (1 + gamma(2))
	eval := func(t float64) float64 {
		v, mag := c.negConj(mu, lam, t)
		return v - gamma(n)*mag + radius*math.Min(0, beta-t*smax)
	}
	best := math.Max(eval(0), eval(1))
	if smax > beta {
		best = math.Max(best, eval(beta/smax))
	}
	lo, hi := 0.0, 1.0
	for it := 0; it < 80; it++ { // golden section on the concave L(t)
		a := hi - 0.6180339887498949*(hi-lo)
		b := lo + 0.6180339887498949*(hi-lo)
		fa, fb := eval(a), eval(b)
		best = math.Max(best, math.Max(fa, fb))
		if fa < fb {
			lo = a
		} else {
			hi = b
		}
	}
	return best
}

// projectRows zeroes the unperturbed columns of w and projects its row k
// onto the ℓ_p ball of radius rad[k] (rad nil: ε), p the perturbation's norm.
func (c *Certifier) projectRows(w *mat.Dense, rad []float64) {
	for k := 0; k < c.n; k++ {
		row := w.RawRowView(k)
		for j := c.f; j < c.d; j++ {
			row[j] = 0
		}
		r, e := row[:c.f], c.eps
		if rad != nil {
			e = rad[k]
		}
		switch c.kind {
		case solvers.LInf:
			for j, v := range r {
				r[j] = math.Min(math.Max(v, -e), e)
			}
		case solvers.L2:
			if nr := floats.Norm(r, 2); nr > e {
				floats.Scale(e/nr, r)
			}
		case solvers.L1:
			projectL1(r, e)
		}
	}
}

// lambdas returns λ_k = |μ_k|, or for the squared loss max(|μ_k|, lam_k)
// when lam is given: the scale of point k's worst-case term (see Hint.Lambda).
func (c *Certifier) lambdas(mu, lam []float64) []float64 {
	out := make([]float64, len(mu))
	for k, v := range mu {
		out[k] = math.Abs(v)
		if lam != nil && c.p.Loss == solvers.SquaredLoss {
			out[k] = math.Max(out[k], lam[k])
		}
	}
	return out
}

// startAlpha returns the n×2P multipliers to start from: the hint (2P×n,
// transposed, clipped at 0), the previous call's, or zero.
func (c *Certifier) startAlpha(hint *mat.Dense) *mat.Dense {
	a := mat.NewDense(c.n, 2*c.np, nil)
	switch {
	case hint != nil:
		a.Copy(hint.T())
		a.Apply(func(_, _ int, v float64) float64 {
			if v > 0 && !math.IsInf(v, 1) {
				return v
			}
			return 0
		}, a)
	case c.alpha != nil:
		a.Copy(c.alpha)
	}
	return a
}

// coeffs sets cc (d×2P) to the columns c_j = σ_j (XᵀM + WᵀD)[:, i(j)]
// (w nil: W = 0).
func (c *Certifier) coeffs(cc, m, w *mat.Dense) {
	np := c.np
	left := cc.Slice(0, c.d, 0, np).(*mat.Dense)
	left.Mul(c.p.X.T(), m)
	if w != nil {
		var wd mat.Dense
		wd.Mul(w.T(), c.dm)
		left.Add(left, &wd)
	}
	cc.Slice(0, c.d, np, 2*np).(*mat.Dense).Scale(-1, left)
}

// refine improves the multipliers α (n×2P, in place) and, for a robust
// program, the loss's perturbation slopes W (rows w_k in the ℓ_p balls of
// radius rad[k], in place), by accelerated projected-gradient steps (FISTA
// with restart) on Σ_j ½ s_j² over the groups with s_j > β (robust
// programs: Σ_j ½ (s_j − β)_+², since W moves all groups at once; measured:
// closer bounds there, slower on the standard program), keeping the point
// of least excess Σ_j (s_j − β)_+², and returns s_j there. The excess is
// zero exactly when every s_j ≤ β, where the bound needs no more (its
// remaining term is −ℓ*). It stops there, after Refine steps, or when the
// largest s_j stalls (less than 10⁻⁶ relative progress over 200 steps). W
// matters at points where the worst case is not unique (g_k = 0, a zero
// entry of g_k for the ℓ_∞ set, a zero residual of the squared loss).
func (c *Certifier) refine(m, w *mat.Dense, rad []float64, alpha *mat.Dense) []float64 {
	steps := c.Refine
	if steps == 0 {
		steps = 2000
	}
	// The exact multipliers first (Exact): each group's α_j solved for,
	// which the steps then polish (the solver's tolerance leaves s_j
	// slightly above its minimum, by about the tolerance times ‖c_j‖).
	exact := func() {
		if c.Exact != nil && steps > 0 {
			cc := mat.NewDense(c.d, 2*c.np, nil)
			c.coeffs(cc, m, w)
			c.exact(cc, alpha)
		}
	}
	exact()
	if w == nil || steps < 0 {
		return c.refineWith(m, w, false, rad, alpha, steps)
	}
	// The multipliers alone first: each group's own, they cannot spoil a
	// group that holds (a hint's slopes stay exact); then W with them, for
	// what α alone cannot close, and with Exact once more at the W reached.
	s := c.refineWith(m, w, false, rad, alpha, (steps+1)/2)
	if c.enough(s) {
		return s
	}
	if s = c.refineWith(m, w, true, rad, alpha, steps/2); c.enough(s) || c.Exact == nil || steps/2 == 0 {
		return s
	}
	exact()
	return c.refineWith(m, w, false, rad, alpha, (steps+3)/4)
}

// enough reports whether the groups' s_j need no more refinement: every
// s_j ≤ β, or ≤ β(1 + Enough) when Enough is set.
func (c *Certifier) enough(s []float64) bool {
	return floats.Max(s) <= c.p.Beta*(1+math.Max(0, c.Enough))
}

// refineWith is refine's loop: steps projected-gradient steps on α, and on
// W when moveW.
func (c *Certifier) refineWith(m, w *mat.Dense, moveW bool, rad []float64, alpha *mat.Dense, steps int) []float64 {
	ng, np := 2*c.np, c.np
	beta := c.p.Beta
	cc := mat.NewDense(c.d, ng, nil)
	c.coeffs(cc, m, w)
	best := c.distances(cc, alpha, nil)
	if steps <= 0 || c.lip == 0 {
		return best.s
	}
	mw := w
	if !moveW {
		mw = nil // W fixed: the loop below moves α only
	}
	excess := func(s []float64) float64 {
		var v float64
		for _, x := range s {
			if x > beta {
				v += (x - beta) * (x - beta) / 2
			}
		}
		return v
	}
	bestVal := excess(best.s)
	bestAlpha := mat.DenseCopyOf(alpha)
	var bestW, prevW, yW *mat.Dense
	var etaW float64
	eta := 1 / c.lip
	if mw != nil {
		bestW, prevW, yW = mat.DenseCopyOf(w), mat.DenseCopyOf(w), mat.DenseCopyOf(w)
		// Lipschitz bound of the W-gradient: 2‖D‖_F² (c_j is linear in W
		// through D; v_i and w_i share a column). The α- and W-steps are
		// halved for the joint step.
		etaW = 1 / math.Max(4*frobenius2(c.dm), 1e-300)
		eta /= 2
	}
	prev := mat.DenseCopyOf(alpha)
	y := mat.DenseCopyOf(alpha)
	tk := 1.0
	var xe, gd mat.Dense
	wk := c.newDistWork() // the loop's storage: it allocates nothing else
	h := mat.NewDense(c.d, np, nil)
	wj := make([]float64, ng)
	mark, markAt := floats.Max(best.s), 0
	for it := 0; it < steps && !c.enough(best.s); it++ {
		if mw != nil {
			c.coeffs(cc, m, yW)
		}
		cur := c.distances(cc, y, wk)
		for j := range wj {
			wj[j] = 0
			if cur.s[j] > beta {
				wj[j] = 1
				if mw != nil {
					wj[j] = (cur.s[j] - beta) / cur.s[j]
				}
			}
		}
		xe.Mul(c.p.X, cur.e)
		prev.Copy(alpha)
		for k := 0; k < c.n; k++ {
			ar, yr, xr, sr := alpha.RawRowView(k), y.RawRowView(k), xe.RawRowView(k), c.sgn.RawRowView(k)
			for j := 0; j < ng; j++ {
				// ∂(½s_j²)/∂α_kj = −S_i[k] (X e_j)_k − ε N(e_j^f), weighted.
				gj := wj[j] * (-sr[j%np]*xr[j] - c.eps*cur.nq[j])
				ar[j] = math.Max(0, yr[j]-eta*gj)
			}
		}
		if mw != nil {
			// ∂/∂w_k = Σ_i d_ik (w_{v_i} e_{v_i} − w_{w_i} e_{w_i}) = (D Hᵀ)_k.
			for r := 0; r < c.d; r++ {
				er, hr := cur.e.RawRowView(r), h.RawRowView(r)
				for i := 0; i < np; i++ {
					hr[i] = wj[i]*er[i] - wj[np+i]*er[np+i]
				}
			}
			gd.Mul(c.dm, h.T())
			prevW.Copy(w)
			gd.Scale(etaW, &gd)
			w.Sub(yW, &gd)
			c.projectRows(w, rad)
			c.coeffs(cc, m, w)
		}
		tn := (1 + math.Sqrt(1+4*tk*tk)) / 2
		mom := (tk - 1) / tn
		tk = tn
		now := c.distances(cc, alpha, wk) // cur is spent: its storage is reused
		if v := excess(now.s); v < bestVal {
			bestVal = v
			bestAlpha.Copy(alpha)
			if mw != nil {
				bestW.Copy(w)
			}
			copy(best.s, now.s)
		} else { // restart the momentum from the best point
			tk, mom = 1, 0
			alpha.Copy(bestAlpha)
			if mw != nil {
				w.Copy(bestW)
			}
		}
		// y = (α + mom(α − α_prev))_+
		for k := 0; k < c.n; k++ {
			ar, pr, yr := alpha.RawRowView(k), prev.RawRowView(k), y.RawRowView(k)
			for j := range yr {
				yr[j] = math.Max(ar[j]+mom*(ar[j]-pr[j]), 0)
			}
		}
		if mw != nil {
			yW.Sub(w, prevW)
			yW.Scale(mom, yW)
			yW.Add(yW, w)
			c.projectRows(yW, rad)
		}
		if it-markAt >= 200 {
			if v := floats.Max(best.s); v > mark*(1-1e-6) {
				break
			} else {
				mark, markAt = v, it
			}
		}
	}
	alpha.Copy(bestAlpha)
	if mw != nil {
		w.Copy(bestW)
		c.coeffs(cc, m, w)
	}
	return c.distances(cc, alpha, nil).s
}

// dist holds, per group j, s_j, the residual e_j = r_j − proj(r_j) as column
// j of e (d×2P), and N(e_j^f) (the dual norm on the perturbed features).
type dist struct {
	s, nq []float64
	e     *mat.Dense
}

// distWork is the storage of distances and ballResidual, kept across the
// iterations of refineWith so that its loop allocates nothing.
type distWork struct {
	b        *mat.Dense // n×2P: column j is S_i α_j
	sum, col []float64  // 1ᵀα_j per group; one column of e
	scratch  []float64  // 2f: the ℓ₁ ball's projection and sorted magnitudes
	out      dist       // distances' result when reused
}

// newDistWork returns the storage of distances for c.
func (c *Certifier) newDistWork() *distWork {
	ng := 2 * c.np
	return &distWork{b: mat.NewDense(c.n, ng, nil), sum: make([]float64, ng), col: make([]float64, c.d),
		scratch: make([]float64, 2*c.f),
		out:     dist{s: make([]float64, ng), nq: make([]float64, ng), e: mat.NewDense(c.d, ng, nil)}}
}

// distances evaluates s_j = dist(c_j − XᵀS_iα_j, ε(1ᵀα_j)B^f) for every
// group. With wk nil the result is freshly allocated; otherwise it is
// wk.out, overwritten by the next call with wk.
func (c *Certifier) distances(cc, alpha *mat.Dense, wk *distWork) dist {
	if wk == nil {
		wk = c.newDistWork()
	}
	ng := 2 * c.np
	b, sum, out := wk.b, wk.sum, wk.out
	clear(sum)
	for k := 0; k < c.n; k++ {
		ar, br, sr := alpha.RawRowView(k), b.RawRowView(k), c.sgn.RawRowView(k)
		for j := 0; j < ng; j++ {
			br[j] = sr[j%c.np] * ar[j]
			sum[j] += ar[j]
		}
	}
	e := out.e
	e.Mul(c.p.X.T(), b)
	e.Sub(cc, e)
	col := wk.col
	for j := 0; j < ng; j++ {
		mat.Col(col, j, e)
		c.ballResidual(col, c.eps*sum[j], wk.scratch)
		e.SetCol(j, col)
		out.s[j] = floats.Norm(col, 2)
		out.nq[j] = c.kind.Dual(col[:c.f])
		if c.eps == 0 {
			out.nq[j] = 0
		}
	}
	return out
}

// ballResidual replaces r by r − proj(r) onto the ball {z : z = 0 off the f
// perturbed features, ‖z^f‖_p ≤ rad}. scratch (length 2f, or nil) is storage
// for the ℓ₁ ball's projection.
func (c *Certifier) ballResidual(r []float64, rad float64, scratch []float64) {
	if rad <= 0 {
		return
	}
	rf := r[:c.f]
	switch c.kind {
	case solvers.LInf:
		for j, v := range rf {
			a := math.Abs(v) - rad
			if a <= 0 {
				rf[j] = 0
			} else {
				rf[j] = math.Copysign(a, v)
			}
		}
	case solvers.L2:
		nr := floats.Norm(rf, 2)
		if nr <= rad {
			clear(rf)
		} else {
			floats.Scale((nr-rad)/nr, rf)
		}
	case solvers.L1:
		if len(scratch) < 2*c.f {
			scratch = make([]float64, 2*c.f)
		}
		p := scratch[:c.f]
		copy(p, rf)
		projectL1Into(p, rad, scratch[c.f:2*c.f])
		floats.Sub(rf, p)
	}
}

// projectL1 projects r onto the ℓ₁ ball of radius rad, in place
// (soft threshold at the θ with Σ (|r_j| − θ)_+ = rad).
func projectL1(r []float64, rad float64) {
	projectL1Into(r, rad, make([]float64, len(r)))
}

// projectL1Into is projectL1 with a, of r's length, as its storage.
func projectL1Into(r []float64, rad float64, a []float64) {
	var l1 float64
	for _, v := range r {
		l1 += math.Abs(v)
	}
	if l1 <= rad {
		return
	}
	a = a[:len(r)]
	for j, v := range r {
		a[j] = math.Abs(v)
	}
	slices.Sort(a)
	slices.Reverse(a)
	// θ = (Σ_{l≤ρ} a_l − rad)/(ρ + 1) at the largest ρ with a_ρ above it;
	// with rad = 0 no ρ qualifies and θ = max_l a_l (the projection is 0).
	cum, theta := 0.0, a[0]
	for j, v := range a {
		cum += v
		t := (cum - rad) / float64(j+1)
		if t >= v {
			break
		}
		theta = t
	}
	for j, v := range r {
		r[j] = math.Copysign(math.Max(math.Abs(v)-theta, 0), v)
	}
}

// frobenius2 returns ‖a‖_F².
func frobenius2(a *mat.Dense) float64 {
	r, _ := a.Dims()
	var s float64
	for k := 0; k < r; k++ {
		s += floats.Dot(a.RawRowView(k), a.RawRowView(k))
	}
	return s
}
