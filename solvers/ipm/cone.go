package ipm

import (
	"errors"
	"fmt"
	"math"
)

// Cone is the cone K = R^L₊ × Q^{q₁} × … × Q^{q_m} of a cone program, with
// the coordinates of a vector in K stacked in that order: first the L
// nonnegative-orthant entries, then one block per second-order cone
//
//	Q^q = {(u₀, u₁) ∈ R × R^{q−1} : u₀ ≥ ‖u₁‖₂}.
//
// K is self-dual. Its degree (the barrier parameter) is L + m, and the
// identity element e has ones in the orthant and (1, 0, …, 0) in every
// second-order cone.
type Cone struct {
	Orthant int   // L
	SOC     []int // q₁ … q_m, each at least 1
}

// Dim returns the dimension L + Σ q_j of K.
func (k Cone) Dim() int {
	m := k.Orthant
	for _, q := range k.SOC {
		m += q
	}
	return m
}

// Degree returns L + m, the degree of the cone's logarithmic barrier.
func (k Cone) Degree() int { return k.Orthant + len(k.SOC) }

// Validate reports an orthant dimension below 0 or a second-order cone of
// dimension below 1.
func (k Cone) Validate() error {
	if k.Orthant < 0 {
		return fmt.Errorf("ipm: cone has orthant dimension %d < 0", k.Orthant)
	}
	for j, q := range k.SOC {
		if q < 1 {
			return fmt.Errorf("ipm: second-order cone %d has dimension %d < 1", j, q)
		}
	}
	return nil
}

// addIdentity adds a·e to x.
func (k Cone) addIdentity(x []float64, a float64) {
	for i := 0; i < k.Orthant; i++ {
		x[i] += a
	}
	off := k.Orthant
	for _, q := range k.SOC {
		x[off] += a
		off += q
	}
}

// prod sets out = u∘v, the Jordan product of K: elementwise in the orthant
// and (u₀v₀ + u₁ᵀv₁, u₀v₁ + v₀u₁) in a second-order cone. out may alias u or v.
func (k Cone) prod(out, u, v []float64) {
	for i := 0; i < k.Orthant; i++ {
		out[i] = u[i] * v[i]
	}
	off := k.Orthant
	for _, q := range k.SOC {
		u0, v0 := u[off], v[off]
		dot := u0 * v0
		for i := off + 1; i < off+q; i++ {
			dot += u[i] * v[i]
		}
		for i := off + 1; i < off+q; i++ {
			out[i] = u0*v[i] + v0*u[i]
		}
		out[off] = dot
		off += q
	}
}

// div sets out = l⋄x, the solution y of l∘y = x for l in the interior of K:
// in a second-order cone y₀ = (l₀x₀ − l₁ᵀx₁)/(l₀² − ‖l₁‖²) and
// y₁ = (x₁ − y₀l₁)/l₀. out may alias x.
func (k Cone) div(out, l, x []float64) {
	for i := 0; i < k.Orthant; i++ {
		out[i] = x[i] / l[i]
	}
	off := k.Orthant
	for _, q := range k.SOC {
		l0 := l[off]
		var dot, nrm2 float64
		for i := off + 1; i < off+q; i++ {
			dot += l[i] * x[i]
			nrm2 += l[i] * l[i]
		}
		nrm := math.Sqrt(nrm2)
		y0 := (l0*x[off] - dot) / ((l0 - nrm) * (l0 + nrm))
		for i := off + 1; i < off+q; i++ {
			out[i] = (x[i] - y0*l[i]) / l0
		}
		out[off] = y0
		off += q
	}
}

// jnorm2 returns u₀² − ‖u₁‖², computed as (u₀ − ‖u₁‖)(u₀ + ‖u₁‖), and ‖u₁‖.
func jnorm2(u []float64) (float64, float64) {
	var s float64
	for _, v := range u[1:] {
		s += v * v
	}
	nrm := math.Sqrt(s)
	return (u[0] - nrm) * (u[0] + nrm), nrm
}

// maxStep returns sup{α ≥ 0 : x + α·dx ∈ K} for x in the interior of K, or
// +Inf when the ray stays in K.
//
// In a second-order cone, with x̂ = x/√(xᵀJx) (J = diag(1, −I)), the Lorentz
// boost that maps x̂ to e maps dx to ρ with ρ₀ = x̂ᵀJdx and
// ρ₁ = dx₁ − (dx₀ + ρ₀)/(x̂₀ + 1)·x̂₁; e + t·ρ ∈ Q iff t(‖ρ₁‖ − ρ₀) ≤ 1.
func (k Cone) maxStep(x, dx []float64) float64 {
	inv := 0.0 // 1/α
	for i := 0; i < k.Orthant; i++ {
		if r := -dx[i] / x[i]; r > inv {
			inv = r
		}
	}
	off := k.Orthant
	for _, q := range k.SOC {
		xs, ds := x[off:off+q], dx[off:off+q]
		off += q
		jj, _ := jnorm2(xs)
		if q == 1 {
			if r := -ds[0] / xs[0]; r > inv {
				inv = r
			}
			continue
		}
		nx := math.Sqrt(jj)
		rho0 := xs[0] * ds[0]
		for i := 1; i < q; i++ {
			rho0 -= xs[i] * ds[i]
		}
		rho0 /= nx
		f := (ds[0] + rho0) / (xs[0]/nx + 1) / nx
		var r2 float64
		for i := 1; i < q; i++ {
			r := ds[i] - f*xs[i]
			r2 += r * r
		}
		if r := (math.Sqrt(r2) - rho0) / nx; r > inv {
			inv = r
		}
	}
	if inv <= 0 {
		return math.Inf(1)
	}
	return 1 / inv
}

// centralityCorrection replaces v by the correction that moves its
// eigenvalues into [lo, hi] (see centralityCorrection of a scalar): in the
// orthant entry by entry, in a second-order cone with the spectral
// decomposition v = l₁c₁ + l₂c₂, l₁,₂ = v₀ ± ‖v₁‖,
// c₁,₂ = ½(1, ±v₁/‖v₁‖).
func (k Cone) centralityCorrection(v []float64, lo, hi float64) {
	for i := 0; i < k.Orthant; i++ {
		v[i] = centralityCorrection(v[i], lo, hi)
	}
	off := k.Orthant
	for _, q := range k.SOC {
		u := v[off : off+q]
		off += q
		_, nrm := jnorm2(u)
		d1, d2 := centralityCorrection(u[0]+nrm, lo, hi), centralityCorrection(u[0]-nrm, lo, hi)
		u[0] = (d1 + d2) / 2
		if q == 1 {
			continue
		}
		if nrm == 0 {
			clear(u[1:])
			u[1] = (d1 - d2) / 2
			continue
		}
		f := (d1 - d2) / 2 / nrm
		for i := 1; i < q; i++ {
			u[i] *= f
		}
	}
}

// centralityCorrection returns the amount c that moves l into [lo, hi],
// upwards fully and downwards by at most hi: lo − l below lo,
// max(hi − l, −hi) above hi, and 0 inside.
func centralityCorrection(l, lo, hi float64) float64 {
	switch {
	case l < lo:
		return lo - l
	case l > hi:
		return math.Max(hi-l, -hi)
	}
	return 0
}

// violation returns the smallest t with x + t·e ∈ K: max over the orthant of
// −x_i and over the second-order cones of ‖x₁‖ − x₀. It is negative exactly
// when x is in the interior of K.
func (k Cone) violation(x []float64) float64 {
	v := math.Inf(-1)
	for i := 0; i < k.Orthant; i++ {
		v = math.Max(v, -x[i])
	}
	off := k.Orthant
	for _, q := range k.SOC {
		_, nrm := jnorm2(x[off : off+q])
		v = math.Max(v, nrm-x[off])
		off += q
	}
	return v
}

// errNotInterior reports an iterate that left the interior of the cone
// (rounding at the end of a run or a breakdown).
var errNotInterior = errors.New("ipm: iterate is not in the interior of the cone")

// ntScaling is the Nesterov–Todd scaling W of a pair s, z in the interior of
// K: the symmetric positive definite matrix, block diagonal over the cones,
// with W⁻ᵀs = Wz = λ (W = Wᵀ here). In the orthant W = diag(d) with
// d_i = √(s_i/z_i) and λ_i = √(s_i z_i). In a second-order cone, with
// J = diag(1, −I), a = √(sᵀJs), b = √(zᵀJz), s̄ = s/a, z̄ = z/b,
// γ = √((1 + s̄ᵀz̄)/2), the NT point w̄ = (s̄ + Jz̄)/(2γ) (w̄ᵀJw̄ = 1) and
// v = (w̄ + e)/√(2(w̄₀ + 1)),
//
//	W = β(2vvᵀ − J),  W⁻¹ = β⁻¹(2Jvvᵀ J − J),  W⁻² = β⁻²(2Jw̄w̄ᵀJ − J),
//
// with β = √(a/b), and λ = √(ab)·(γ, ((γ + z̄₀)s̄₁ + (γ + s̄₀)z̄₁)/(2γ + s̄₀ + z̄₀)).
// See L. Vandenberghe, "The CVXOPT linear and quadratic cone program
// solvers" (2010), section 4.
type ntScaling struct {
	k      Cone
	d      []float64 // orthant part of W
	beta   []float64 // β_j per second-order cone
	v      []float64 // v_j, stacked like the cone blocks
	wbar   []float64 // w̄_j, stacked like the cone blocks
	lambda []float64 // λ = Wz = W⁻¹s
}

func newNTScaling(k Cone) *ntScaling {
	m := k.Dim()
	return &ntScaling{
		k:      k,
		d:      make([]float64, k.Orthant),
		beta:   make([]float64, len(k.SOC)),
		v:      make([]float64, m-k.Orthant),
		wbar:   make([]float64, m-k.Orthant),
		lambda: make([]float64, m),
	}
}

// compute sets the scaling of s and z; it fails when either is not in the
// interior of K.
func (w *ntScaling) compute(s, z []float64) error {
	L := w.k.Orthant
	for i := 0; i < L; i++ {
		if !(s[i] > 0) || !(z[i] > 0) {
			return errNotInterior
		}
		w.d[i] = math.Sqrt(s[i] / z[i])
		w.lambda[i] = math.Sqrt(s[i] * z[i])
	}
	off := L
	for j, q := range w.k.SOC {
		ss, zz := s[off:off+q], z[off:off+q]
		v, wb, lam := w.v[off-L:off-L+q], w.wbar[off-L:off-L+q], w.lambda[off:off+q]
		off += q
		sj, _ := jnorm2(ss)
		zj, _ := jnorm2(zz)
		if !(ss[0] > 0) || !(zz[0] > 0) || !(sj > 0) || !(zj > 0) {
			return errNotInterior
		}
		a, b := math.Sqrt(sj), math.Sqrt(zj)
		var sz float64
		for i := range ss {
			sz += ss[i] * zz[i]
		}
		g := math.Sqrt((sz/(a*b) + 1) / 2)
		s0, z0 := ss[0]/a, zz[0]/b
		wb[0] = (s0 + z0) / (2 * g)
		for i := 1; i < q; i++ {
			wb[i] = (ss[i]/a - zz[i]/b) / (2 * g)
		}
		f := 1 / math.Sqrt(2*(wb[0]+1))
		v[0] = (wb[0] + 1) * f
		for i := 1; i < q; i++ {
			v[i] = wb[i] * f
		}
		w.beta[j] = math.Sqrt(a / b)
		r := math.Sqrt(a * b)
		den := 2*g + s0 + z0
		cs, cz := (g+z0)/den/a, (g+s0)/den/b
		lam[0] = g * r
		for i := 1; i < q; i++ {
			lam[i] = r * (cs*ss[i] + cz*zz[i])
		}
	}
	return nil
}

// identity sets W = I (the scaling of s = z = e).
func (w *ntScaling) identity() {
	for i := range w.d {
		w.d[i] = 1
	}
	for i := range w.v {
		w.v[i], w.wbar[i] = 0, 0
	}
	off := 0
	for j, q := range w.k.SOC {
		w.beta[j] = 1
		w.v[off], w.wbar[off] = 1, 1
		off += q
	}
	for i := range w.lambda {
		w.lambda[i] = 0
	}
	w.k.addIdentity(w.lambda, 1)
}

// scale sets x = W x; in a second-order cone W x = β(2v(vᵀx) − Jx).
func (w *ntScaling) scale(x []float64) {
	L := w.k.Orthant
	for i := 0; i < L; i++ {
		x[i] *= w.d[i]
	}
	off := L
	for j, q := range w.k.SOC {
		xs, v := x[off:off+q], w.v[off-L:off-L+q]
		off += q
		var vx float64
		for i := range xs {
			vx += v[i] * xs[i]
		}
		bt := w.beta[j]
		xs[0] = bt * (2*v[0]*vx - xs[0])
		for i := 1; i < q; i++ {
			xs[i] = bt * (2*v[i]*vx + xs[i])
		}
	}
}

// unscale sets x = W⁻¹x; in a second-order cone W⁻¹x = β⁻¹(2Jv(vᵀJx) − Jx).
func (w *ntScaling) unscale(x []float64) {
	L := w.k.Orthant
	for i := 0; i < L; i++ {
		x[i] /= w.d[i]
	}
	off := L
	for j, q := range w.k.SOC {
		jReflect(x[off:off+q], w.v[off-L:off-L+q], 1/w.beta[j])
		off += q
	}
}

// unscale2 sets x = W⁻²x; in a second-order cone
// W⁻²x = β⁻²(2Jw̄(w̄ᵀJx) − Jx).
func (w *ntScaling) unscale2(x []float64) {
	L := w.k.Orthant
	for i := 0; i < L; i++ {
		x[i] /= w.d[i] * w.d[i]
	}
	off := L
	for j, q := range w.k.SOC {
		jReflect(x[off:off+q], w.wbar[off-L:off-L+q], 1/(w.beta[j]*w.beta[j]))
		off += q
	}
}

// jReflect sets x = b(2Jv(vᵀJx) − Jx) for one second-order cone block, with
// J = diag(1, −1, …, −1) and len(v) = len(x).
func jReflect(x, v []float64, b float64) {
	vx := v[0] * x[0]
	for i := 1; i < len(x); i++ {
		vx -= v[i] * x[i]
	}
	x[0] = b * (2*v[0]*vx - x[0])
	for i := 1; i < len(x); i++ {
		x[i] = b * (-2*v[i]*vx + x[i])
	}
}
