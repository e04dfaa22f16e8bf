package certify

import (
	"math"

	"gonum.org/v1/gonum/floats"
	"gonum.org/v1/gonum/mat"
)

// The bound's s_j are norms of c_j − XᵀS_iα_j, sums of n products each.
// Evaluated by matrix products (lower), their rounding error is bounded by
// γ_n times the sums of the terms' magnitudes, |X|ᵀ|D∘μ| + |X|ᵀ|α_j|: on
// Table 2 (n = 11 809 digits, β = 10⁻³) that slack alone is about 10⁻⁶β,
// a certified gap of 10⁻⁶ that no solver accuracy can close. Summed with
// compensation instead (Ogita, Rump & Oishi 2005, algorithm Dot2: the
// products split exactly by an FMA, the sums by Knuth's TwoSum), the result
// is as accurate as if computed in twice the working precision,
//
//	|Dot2(x, y) − xᵀy| ≤ u|xᵀy| + γ_N²|x|ᵀ|y|,   γ_N = Nu/(1 − Nu),
//
// with N the number of terms (plus multiples of the smallest subnormal
// where products underflow), and the slack falls to about u·s_j.

// compensatedS returns, for the standard program (ε = 0), an upper bound of
// every group's s_j = ‖c_j − XᵀS_iα_j‖ at the clipped μ and the multipliers
// alpha (n×2P), from compensated sums: for group j of pattern i and sign
// σ_j, coordinate a of the residual is Σ_k x_ka(σ_j d_ik μ_k) −
// Σ_k x_ka(s_ik α_jk), 2n exact products. mag[j] is ‖|X|ᵀ|D∘μ| +
// |X|ᵀ|α_j|‖, the size of the terms the error bound needs. Only the groups
// in redo are evaluated, and s[j] (a bound already) becomes the smaller of
// the two.
func (c *Certifier) compensatedS(s, mu, mag []float64, alpha *mat.Dense, redo []bool) {
	ng := 2 * c.np
	g2 := gammaN(2 * c.n)
	g2 *= g2
	u := 0x1p-53
	// Underflow: each of the 2n exact splittings may lose up to a few
	// multiples of the smallest subnormal per coordinate.
	tiny := 10 * float64(2*c.n) * 0x1p-1074 * math.Sqrt(float64(c.d))
	hi, lo := make([]float64, c.d), make([]float64, c.d)
	for j := 0; j < ng; j++ {
		if !redo[j] {
			continue
		}
		c.compensatedResidual(hi, lo, mu, alpha, j)
		for a := range hi {
			hi[a] += lo[a]
		}
		r := floats.Norm(hi, 2)
		s[j] = math.Min(s[j], r*(1+gamma(c.d)+2*u)+2*g2*mag[j]+tiny)
	}
}

// compensatedResidual sets hi + lo (d entries each) to the residual
// c_j − XᵀS_iα_j of group j by Dot2 per coordinate: hi the running sums, lo
// the accumulated errors of the products and the additions.
func (c *Certifier) compensatedResidual(hi, lo, mu []float64, alpha *mat.Dense, j int) {
	clear(hi)
	clear(lo)
	i := j % c.np
	sigma := 1.0
	if j >= c.np {
		sigma = -1
	}
	for k := 0; k < c.n; k++ {
		// The row's two coefficients: σ_j d_ik μ_k and −s_ik α_jk (exact).
		cm := sigma * c.dm.At(k, i) * mu[k]
		ca := -c.sgn.At(k, i) * alpha.At(k, j)
		if cm == 0 && ca == 0 {
			continue
		}
		for a, x := range c.p.X.RawRowView(k) {
			if x == 0 {
				continue
			}
			for _, v := range [2]float64{cm, ca} {
				if v == 0 {
					continue
				}
				p := x * v
				e := math.FMA(x, v, -p) // x·v = p + e exactly
				t := hi[a] + p
				z := t - hi[a]
				lo[a] += (hi[a] - (t - z)) + (p - z) + e
				hi[a] = t
			}
		}
	}
}

// gammaN is γ_N = Nu/(1 − Nu), the bound of N roundings.
func gammaN(n int) float64 {
	const u = 0x1p-53
	nu := float64(n) * u
	return nu / (1 - nu)
}
