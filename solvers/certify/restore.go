package certify

import (
	"math"

	"github.com/convexnn/convexnn/solvers"
	"gonum.org/v1/gonum/floats"
	"gonum.org/v1/gonum/mat"
)

// restore returns a copy of wt in which every group satisfies its cone
// constraints S_i X u ≥ εN(u)1 in floating point, the number of groups it
// changed (see the package comment), and the largest violation at wt,
// max_{j,k} (εN(u_j) − S_i[k] x_kᵀu_j)_+ (solvers.RobustViolation's).
func (c *Certifier) restore(wt solvers.Weights) (solvers.Weights, int, float64) {
	out := solvers.Weights{V: mat.DenseCopyOf(wt.V), W: mat.DenseCopyOf(wt.W)}
	changed := 0
	var violation float64
	xu := make([]float64, c.n)
	for j := 0; j < 2*c.np; j++ {
		i, m := j%c.np, out.V
		if j >= c.np {
			m = out.W
		}
		u := m.RawRowView(i)
		low := c.minMargin(i, u, xu)
		if low >= 0 {
			continue
		}
		violation = math.Max(violation, -low)
		changed++
		if c.nudge(i, u, xu) {
			continue
		}
		if e := c.direction(i, wt); e != nil && c.shift(i, u, e, xu) {
			continue
		}
		clear(u)
	}
	return out, changed, violation
}

// margins sets xu to the margins S_i[k] x_kᵀu − εN(u^f) of group u under
// pattern i and returns their minimum.
func (c *Certifier) minMargin(i int, u, xu []float64) float64 {
	var nrm float64
	if c.eps > 0 {
		nrm = c.eps * c.kind.Dual(u[:c.f])
	}
	mat.NewVecDense(c.n, xu).MulVec(c.p.X, mat.NewVecDense(c.d, u))
	low := math.Inf(1)
	for k := range xu {
		xu[k] = c.sgn.At(k, i)*xu[k] - nrm
		low = math.Min(low, xu[k])
	}
	return low
}

// nudgeNear: margins below nudgeNear·‖x_k‖‖u‖ are lifted with the negative
// ones by nudge (the rows active at an interior-point solution).
const nudgeNear = 1e-9

// nudge moves u (in place) by the least-norm change δ that lifts the
// negative and the nearly active margins to a small positive target:
// δ = A⁺r, the rows of A the constraint rows S_i[k] x_kᵀ of the margins to
// lift, r_k = target·‖x_k‖‖u‖ − m_k. Rows that the change makes negative
// join the set, for up to 20 rounds; the target doubles each round. This
// repairs the violations of size 10⁻¹² that an interior-point solution
// leaves on its active rows, where a shift along a fixed interior direction
// may be as long as the group (measured on the mid-size MNIST hinge program
// of bench accuracy: a group of norm 0.67 with 16 rows at −5·10⁻¹² was
// shifted, and the upper bound rose by 1.5 %). It reports success: every
// margin ≥ 0 in floating point. xu holds u's margins on entry and is
// overwritten; on failure u is unchanged.
func (c *Certifier) nudge(i int, u, xu []float64) bool {
	nu := floats.Norm(u, 2)
	if nu == 0 {
		return false
	}
	orig := append([]float64(nil), u...)
	in := make([]bool, c.n)
	var ks []int
	target := 1e-12
	for round := 0; round < 20; round++ {
		for k, m := range xu {
			if !in[k] && m < nudgeNear*c.xnorm[k]*nu {
				in[k] = true
				ks = append(ks, k)
			}
		}
		a := mat.NewDense(len(ks), c.d, nil)
		r := mat.NewVecDense(len(ks), nil)
		for q, k := range ks {
			floats.ScaleTo(a.RawRowView(q), c.sgn.At(k, i), c.p.X.RawRowView(k))
			r.SetVec(q, target*c.xnorm[k]*nu-xu[k])
		}
		var delta mat.VecDense
		if err := delta.SolveVec(a, r); err != nil {
			break
		}
		floats.Add(u, delta.RawVector().Data)
		if c.minMargin(i, u, xu) >= 0 {
			return true
		}
		target *= 2
	}
	copy(u, orig)
	c.minMargin(i, u, xu)
	return false
}

// shift moves u (in place) along the interior direction e of pattern i by
// the least step that makes every margin nonnegative, when that step is
// shorter than u; it reports success. xu holds u's margins on entry.
func (c *Certifier) shift(i int, u, e, xu []float64) bool {
	me := make([]float64, c.n)
	c.minMargin(i, e, me)
	var tau float64
	for k, m := range xu {
		if m < 0 {
			tau = math.Max(tau, -m/me[k])
		}
	}
	ne, nu := floats.Norm(e, 2), floats.Norm(u, 2)
	try := make([]float64, c.d)
	for attempt := 0; attempt < 6; attempt++ {
		tau *= 1 + 1e-9
		tau += 1e-300
		if tau*ne >= nu {
			return false
		}
		floats.AddScaledTo(try, u, tau, e)
		if c.minMargin(i, try, me) >= 0 {
			copy(u, try)
			return true
		}
		tau *= 2
	}
	return false
}

// direction returns an interior direction of pattern i's cone (every margin
// positive), searched once per pattern and kept: from the best of the
// pattern's mean signed direction Σ_k S_i[k] x_k/‖x_k‖ and the groups v_i, w_i
// of the first point it is asked for, subgradient ascent on the smallest
// normalized margin min_k (S_i[k] x_kᵀe − εN(e^f))/‖x_k‖ over the unit sphere.
// It returns nil when none was found.
func (c *Certifier) direction(i int, wt solvers.Weights) []float64 {
	if c.dirDone[i] {
		return c.dirs[i]
	}
	c.dirDone[i] = true
	cands := [][]float64{make([]float64, c.d), append([]float64(nil), wt.V.RawRowView(i)...), append([]float64(nil), wt.W.RawRowView(i)...)}
	for k := 0; k < c.n; k++ {
		if c.xnorm[k] > 0 {
			floats.AddScaled(cands[0], c.sgn.At(k, i)/c.xnorm[k], c.p.X.RawRowView(k))
		}
	}
	xu := make([]float64, c.n)
	margin := func(e []float64) (float64, int) {
		ne := floats.Norm(e, 2)
		if ne == 0 {
			return math.Inf(-1), -1
		}
		c.minMargin(i, e, xu)
		low, arg := math.Inf(1), -1
		for k, m := range xu {
			if c.xnorm[k] == 0 {
				continue
			}
			if v := m / c.xnorm[k] / ne; v < low {
				low, arg = v, k
			}
		}
		return low, arg
	}
	var best []float64
	bestM := math.Inf(-1)
	for _, e := range cands {
		if m, _ := margin(e); m > bestM {
			best, bestM = e, m
		}
	}
	if best == nil {
		return nil
	}
	e := append([]float64(nil), best...)
	floats.Scale(1/floats.Norm(e, 2), e)
	sub := make([]float64, c.f)
	for it := 0; it < 200 && bestM <= 1e-6; it++ {
		m, k := margin(e)
		if m > bestM {
			bestM = m
			copy(best, e)
		}
		if k < 0 {
			break
		}
		// A subgradient of the smallest margin: S_i[k] x_k/‖x_k‖ − ε ∂N(e^f)/‖x_k‖.
		step := 0.5 / math.Sqrt(float64(it+1))
		floats.AddScaled(e, step*c.sgn.At(k, i)/c.xnorm[k], c.p.X.RawRowView(k))
		if c.eps > 0 {
			c.kind.Maximizer(sub, e[:c.f]) // a subgradient of N at e
			floats.AddScaled(e[:c.f], -step*c.eps/c.xnorm[k], sub)
		}
		floats.Scale(1/floats.Norm(e, 2), e)
	}
	if m, _ := margin(e); m > bestM {
		bestM = m
		copy(best, e)
	}
	if !(bestM > 0) {
		return nil
	}
	c.dirs[i] = best
	return best
}
