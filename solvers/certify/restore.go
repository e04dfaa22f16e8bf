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
// With lift, a feasible nonzero group with margins below
// nudgeTarget·‖x_k‖‖u‖ (active rows, as at an interior-point solution) is
// nudged too, when that succeeds (see Strict).
func (c *Certifier) restore(wt solvers.Weights, lift bool) (solvers.Weights, int, float64) {
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
			if lift && c.nearlyActive(u, xu) && c.nudge(i, u, xu) {
				changed++
			}
			continue
		}
		violation = math.Max(violation, -low)
		changed++
		if c.tiny(u, low) && c.nudge(i, u, xu) {
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

// Strict returns a copy of wt that satisfies the program's constraints in
// floating point with its active margins lifted to about 10⁻¹² relative
// (groups outside their cones restored as for Bound's upper bound, feasible
// groups with margins below nudgeTarget·‖x_k‖‖u‖ moved by the least-norm
// change that lifts them, where it succeeds), and the number of groups it
// changed. A solution on the boundary of its cones keeps, so lifted, every
// promise of the program through the rounding of a network's evaluation:
// an interior-point solution of the robust program had left a training
// point at a certified margin of −8·10⁻¹⁷.
func (c *Certifier) Strict(wt solvers.Weights) (solvers.Weights, int, error) {
	if err := c.p.CheckRobust(wt, c.pert); err != nil {
		return solvers.Weights{}, 0, err
	}
	out, changed, _ := c.restore(wt, true)
	return out, changed, nil
}

// nudgeNear: margins below nudgeNear·‖x_k‖‖u‖ are lifted with the negative
// ones by nudge (the rows active at an interior-point solution), to at
// least nudgeTarget·‖x_k‖‖u‖.
const (
	nudgeNear   = 1e-9
	nudgeTarget = 1e-12
	// nudgeTiny bounds the violations nudge repairs, relative to
	// ‖u‖ max_k ‖x_k‖: an interior-point iterate at tolerance 10⁻⁵ violates
	// by about 10⁻⁷ (mid-size hinge), where shifting raised the upper bound
	// from 0.036473 to 0.0537 and the certificate missed 10⁻⁴.
	nudgeTiny = 1e-5
)

// tiny reports whether a violation −low of group u is of the size an
// interior-point iterate leaves (at most nudgeTiny·‖u‖ max_k ‖x_k‖), which
// nudge repairs; larger ones (an ADMM iterate's) go to shift.
func (c *Certifier) tiny(u []float64, low float64) bool {
	return -low <= nudgeTiny*floats.Norm(u, 2)*floats.Max(c.xnorm)
}

// nearlyActive reports whether the nonzero group u has a margin (in xu)
// below nudgeTarget·‖x_k‖‖u‖.
func (c *Certifier) nearlyActive(u, xu []float64) bool {
	nu := floats.Norm(u, 2)
	if nu == 0 {
		return false
	}
	for k, m := range xu {
		if m < nudgeTarget*c.xnorm[k]*nu {
			return true
		}
	}
	return false
}

// nudge moves u (in place) by the least-norm change δ with
// a_kᵀδ ≥ target·‖x_k‖‖u‖ − m_k on the negative and the nearly active
// margins m_k (below nudgeNear·‖x_k‖‖u‖), a_k = S_i[k] x_k − ε∂N(u^f) their
// gradients: a small QP, tried first as the equalities' least-norm
// solution (leastNormEqual, 8 rounds) and then by Hildreth's method
// (hildreth, 20 rounds), which also holds when more rows are active than u
// has entries (nudgeRounds: rows that the change makes negative join, and
// the target doubles; the robust term εN(u) is not linear). This repairs the
// violations of size 10⁻¹² that an interior-point solution leaves on its
// active rows, where a shift along a fixed interior direction may be as
// long as the group (measured on the mid-size MNIST hinge program of bench
// accuracy: a group of norm 0.67 with 16 rows at −5·10⁻¹² was shifted, and
// the upper bound rose by 1.5 %). It reports success: every margin ≥ 0 in
// floating point. xu holds u's margins on entry and is overwritten; on
// failure u is unchanged.
func (c *Certifier) nudge(i int, u, xu []float64) bool {
	nu := floats.Norm(u, 2)
	if nu == 0 {
		return false
	}
	return c.nudgeRounds(i, u, xu, nu, 8, leastNormEqual) || c.nudgeRounds(i, u, xu, nu, 20, hildreth)
}

// nudgeRounds is nudge's loop with the given solver of the small QP: each
// round selects the negative and nearly active margins (those selected
// stay), builds their gradients a_k = S_i[k] x_k − ε∂N(u^f) at u and the
// right-hand sides r_k = target·‖x_k‖‖u‖ − m_k, moves u by the solver's δ
// and stops when every margin is ≥ 0; the target doubles each round. On
// failure u and xu are as on entry.
func (c *Certifier) nudgeRounds(i int, u, xu []float64, nu float64, rounds int, solve func(a *mat.Dense, r, delta []float64) bool) bool {
	orig := append([]float64(nil), u...)
	in := make([]bool, c.n)
	var ks []int
	var sub []float64
	if c.eps > 0 {
		sub = make([]float64, c.f)
	}
	delta := make([]float64, c.d)
	target := nudgeTarget
	for round := 0; round < rounds; round++ {
		for k, m := range xu {
			if !in[k] && m < nudgeNear*c.xnorm[k]*nu {
				in[k] = true
				ks = append(ks, k)
			}
		}
		if sub != nil {
			c.kind.Maximizer(sub, u[:c.f])
		}
		a := mat.NewDense(len(ks), c.d, nil)
		r := make([]float64, len(ks))
		for q, k := range ks {
			row := a.RawRowView(q)
			floats.ScaleTo(row, c.sgn.At(k, i), c.p.X.RawRowView(k))
			if sub != nil {
				floats.AddScaled(row[:c.f], -c.eps, sub)
			}
			r[q] = target*c.xnorm[k]*nu - xu[k]
		}
		if !solve(a, r, delta) {
			break
		}
		floats.Add(u, delta)
		if c.minMargin(i, u, xu) >= 0 {
			return true
		}
		target *= 2
	}
	copy(u, orig)
	c.minMargin(i, u, xu)
	return false
}

// leastNormEqual sets δ = A⁺r, the least-norm solution of Aδ = r (a
// least-squares solve), which lifts the selected margins in a round or two
// when at most d rows are active.
func leastNormEqual(a *mat.Dense, r, delta []float64) bool {
	var x mat.VecDense
	if err := x.SolveVec(a, mat.NewVecDense(len(r), r)); err != nil {
		return false
	}
	copy(delta, x.RawVector().Data)
	return true
}

// hildreth sets δ to the least-norm solution of Aδ ≥ r by Hildreth's dual
// coordinate ascent (δ = Aᵀλ, λ ≥ 0), for at most 300 sweeps or until no
// row is short by more than half its right-hand side's scale; it holds
// also when more rows are active than δ has entries, where
// leastNormEqual's equalities may have no solution.
func hildreth(a *mat.Dense, r, delta []float64) bool {
	rows, _ := a.Dims()
	lam := make([]float64, rows)
	a2 := make([]float64, rows)
	for q := range a2 {
		a2[q] = floats.Dot(a.RawRowView(q), a.RawRowView(q))
	}
	clear(delta)
	for sweep := 0; sweep < 300; sweep++ {
		worst := 0.0
		for q := 0; q < rows; q++ {
			if a2[q] == 0 {
				continue
			}
			row := a.RawRowView(q)
			short := r[q] - floats.Dot(row, delta)
			worst = math.Max(worst, short-0.5*math.Abs(r[q]))
			nl := math.Max(0, lam[q]+short/a2[q])
			if step := nl - lam[q]; step != 0 {
				floats.AddScaled(delta, step, row)
				lam[q] = nl
			}
		}
		if worst <= 0 {
			break
		}
	}
	return true
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
// positive), or nil when none was found. The directions of all patterns not
// yet searched are searched together when the first is asked for, and kept
// (searchDirections).
func (c *Certifier) direction(i int, wt solvers.Weights) []float64 {
	if !c.dirDone[i] {
		c.searchDirections(wt)
	}
	return c.dirs[i]
}

// searchDirections searches an interior direction for every pattern not yet
// searched: from the best of the pattern's mean signed direction
// Σ_k S_i[k] x_k/‖x_k‖ and the groups v_i, w_i of wt, subgradient ascent on
// the smallest normalized margin min_k (S_i[k] x_kᵀe − εN(e^f))/‖x_k‖ over
// the unit sphere, at most 200 steps, until it exceeds 10⁻⁶. The patterns'
// searches are independent; each step of all of them is one product X·Eᵀ
// with the n×d data, read once per step instead of once per pattern and step
// (Table 2's MNIST, n = 11 809, d = 785, 24 patterns: the first certificate of
// an ADMM run fell from about 12.4 s to 6.9 s, the search from 13.7 s of CPU
// time to 4.3 s).
func (c *Certifier) searchDirections(wt solvers.Weights) {
	var todo []int
	for i, done := range c.dirDone {
		if !done {
			todo = append(todo, i)
			c.dirDone[i] = true
		}
	}
	m := len(todo)
	if m == 0 {
		return
	}
	// The candidates, three rows per pattern: the mean signed direction
	// (row t of Wᵀ X with W[k][t] = S_i[k]/‖x_k‖), v_i and w_i.
	w := mat.NewDense(c.n, m, nil)
	for t, i := range todo {
		for k := 0; k < c.n; k++ {
			if c.xnorm[k] > 0 {
				w.Set(k, t, c.sgn.At(k, i)/c.xnorm[k])
			}
		}
	}
	var mean mat.Dense
	mean.Mul(w.T(), c.p.X)
	cands := mat.NewDense(3*m, c.d, nil)
	for t, i := range todo {
		cands.SetRow(3*t, mean.RawRowView(t))
		cands.SetRow(3*t+1, wt.V.RawRowView(i))
		cands.SetRow(3*t+2, wt.W.RawRowView(i))
	}
	// margin returns the smallest normalized margin of row r of es under
	// pattern i, from column r of xe = X esᵀ, and where it is.
	margin := func(es, xe *mat.Dense, r, i int) (float64, int) {
		e := es.RawRowView(r)
		ne := floats.Norm(e, 2)
		if ne == 0 {
			return math.Inf(-1), -1
		}
		var nrm float64
		if c.eps > 0 {
			nrm = c.eps * c.kind.Dual(e[:c.f])
		}
		low, arg := math.Inf(1), -1
		for k := 0; k < c.n; k++ {
			if c.xnorm[k] == 0 {
				continue
			}
			if v := (c.sgn.At(k, i)*xe.At(k, r) - nrm) / c.xnorm[k] / ne; v < low {
				low, arg = v, k
			}
		}
		return low, arg
	}
	var xc mat.Dense
	xc.Mul(c.p.X, cands.T())
	best := mat.NewDense(m, c.d, nil)
	bestM := make([]float64, m)
	found := make([]bool, m)
	for t, i := range todo {
		bestM[t] = math.Inf(-1)
		for r := 3 * t; r < 3*t+3; r++ {
			if mr, _ := margin(cands, &xc, r, i); mr > bestM[t] {
				bestM[t] = mr
				best.SetRow(t, cands.RawRowView(r))
				found[t] = true
			}
		}
	}
	e := mat.NewDense(m, c.d, nil)
	active := make([]bool, m)
	for t := range todo {
		if !found[t] {
			continue
		}
		row := e.RawRowView(t)
		copy(row, best.RawRowView(t))
		floats.Scale(1/floats.Norm(row, 2), row)
		active[t] = true
	}
	sub := make([]float64, c.f)
	xe := mat.NewDense(c.n, m, nil) // X eᵀ
	for it := 0; it < 200; it++ {
		any := false
		for t := range active {
			if active[t] && bestM[t] > 1e-6 {
				active[t] = false
			}
			any = any || active[t]
		}
		if !any {
			break
		}
		xe.Mul(c.p.X, e.T())
		step := 0.5 / math.Sqrt(float64(it+1))
		for t, i := range todo {
			if !active[t] {
				continue
			}
			mt, k := margin(e, xe, t, i)
			row := e.RawRowView(t)
			if mt > bestM[t] {
				bestM[t] = mt
				best.SetRow(t, row)
			}
			if k < 0 {
				active[t] = false
				continue
			}
			// A subgradient of the smallest margin: S_i[k] x_k/‖x_k‖ − ε ∂N(e^f)/‖x_k‖.
			floats.AddScaled(row, step*c.sgn.At(k, i)/c.xnorm[k], c.p.X.RawRowView(k))
			if c.eps > 0 {
				c.kind.Maximizer(sub, row[:c.f]) // a subgradient of N at e
				floats.AddScaled(row[:c.f], -step*c.eps/c.xnorm[k], sub)
			}
			floats.Scale(1/floats.Norm(row, 2), row)
		}
	}
	xe.Mul(c.p.X, e.T())
	for t, i := range todo {
		if !found[t] {
			continue
		}
		if mt, _ := margin(e, xe, t, i); mt > bestM[t] {
			bestM[t] = mt
			best.SetRow(t, e.RawRowView(t))
		}
		if bestM[t] > 0 {
			c.dirs[i] = append([]float64(nil), best.RawRowView(t)...)
		}
	}
}
