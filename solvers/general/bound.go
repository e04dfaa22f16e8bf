package general

import (
	"context"
	"fmt"
	"math"
	"slices"

	"github.com/convexnn/convexnn/solvers"
	"github.com/convexnn/convexnn/solvers/ipm"
	"gonum.org/v1/gonum/floats"
	"gonum.org/v1/gonum/mat"
)

// Bound is a certified enclosure Lower ≤ p* ≤ Upper of the optimum p* of
// eq. (ct_general).
//
// Lower is the value of the Lagrangian dual
//
//	max −ℓ*(θ)  s.t.  ‖(Fᵀθ − Gᵀα)_g‖ ≤ β,  ‖(−Fᵀθ − Gᵀα′)_g‖ ≤ β  for every group g,  α, α′ ≥ 0
//
// at a point made feasible by scaling: θ is the loss's gradient at the
// point's predictions (for the hinge loss a subgradient, or ADMM's loss
// dual ρμ), moved into dom ℓ* (solvers.Loss.ClipDual); per group α_g
// minimizes ‖c_g − G_gᵀα_g‖ over α_g ≥ 0 (c_g = ±(Fᵀθ)_g), by accelerated
// projected gradient from ADMM's multipliers −ρν; with s the largest of
// these norms (plus its rounding error), (tθ, tα) is dual feasible for
// t ≤ β/s, and Lower is the largest −ℓ*(tθ) over those t. Upper is the
// objective (plus its rounding error) of the point made feasible group by
// group: a group whose constraints it violates is moved along an interior
// direction of its cone (restore), and set to zero if that does not make
// it exactly feasible. Whatever the point and the hints, Lower ≤ p* ≤
// Upper.
type Bound struct {
	Lower, Upper float64
	// Gap is (Upper − Lower)/|Upper| (Upper − Lower when Upper is 0).
	Gap float64
	// Restored is the number of groups changed to make the point feasible;
	// W, Wp is that point.
	Restored int
	W, Wp    []float64
}

// Best returns the better of the point (w, w′) and the bound's feasible
// point (W, W′) by the objective: the given point, unless the bound's is
// lower (the zero network, when an inaccurate solve, at a β far beyond
// the largest useful one say, left a worse point than zero).
func (b Bound) Best(p *Program, w, wp []float64) ([]float64, []float64, error) {
	if b.W == nil {
		return w, wp, nil
	}
	obj, err := p.Objective(w, wp)
	if err != nil {
		return nil, nil, err
	}
	if obj > b.Upper {
		return b.W, b.Wp, nil
	}
	return w, wp, nil
}

// certifier holds the dense blocks the bounds work with.
type certifier struct {
	p     *Program
	lay   layout
	fd    *mat.Dense   // F
	gd    []*mat.Dense // G_g
	gl    []float64    // ‖G_g‖²
	steps int

	inner     [][]float64 // per group an interior direction of its cone (interior), nil: none
	innerDone []bool
	norms     [][]float64 // per group its rows' norms (rowNorms), nil: not yet
	// support: groupNorm refines the multipliers only on the rows where
	// its start is positive, when they are at most half the rows (an
	// interior-point method's multipliers on a working set of rows).
	support bool
}

func newCertifier(p *Program, fd *mat.Dense, gd []*mat.Dense, gl []float64, steps int) *certifier {
	return &certifier{p: p, lay: p.layout(), fd: fd, gd: gd, gl: gl, steps: steps}
}

// Bound certifies the point (w, w′) of the ADMM's state, with its duals as
// hints.
func (a *ADMM) Bound() (Bound, error) {
	st := &a.State
	rho := st.Rho
	// ADMM's constraint g is (gs_g G_g)u = s: its multiplier −ρν is α/gs_g.
	alpha := func(nu []float64) []float64 {
		out := make([]float64, len(nu))
		for g := range a.Program.Groups {
			for i := a.lay.roff[g]; i < a.lay.roff[g+1]; i++ {
				out[i] = math.Max(0, -rho*nu[i]) * a.gs[g]
			}
		}
		return out
	}
	var theta []float64
	if a.split {
		theta = make([]float64, a.n)
		floats.ScaleTo(theta, rho, st.Mu)
	}
	return a.cert.bound(st.W, st.Wp, theta, alpha(st.Nu), alpha(st.Nup))
}

// Certify returns the bound of the point (w, w′) of p (see Bound), with
// steps projected-gradient steps per group (0: 200).
func Certify(p *Program, w, wp []float64, steps int) (Bound, error) {
	if err := p.Validate(); err != nil {
		return Bound{}, err
	}
	if steps < 0 {
		return Bound{}, fmt.Errorf("general: certificate steps %d < 0", steps)
	}
	if steps == 0 {
		steps = 200
	}
	gd, gl := groupBlocks(p)
	return newCertifier(p, dense(p.F), gd, gl, steps).bound(w, wp, nil, nil, nil)
}

// CertifyDual is Certify with an interior-point method's multipliers as
// the hints of the lower bound: alpha and alphap those of the rows
// G_g w_g ≥ 0 and G_g w′_g ≥ 0 (M each, in the groups' order), theta the
// loss dual per prediction (hinge: −y_k times the margin row's multiplier;
// nil for the squared loss, whose dual is read off the point). Any values
// give a valid bound (they are scaled to dual feasibility); good ones give
// a tight one.
func CertifyDual(p *Program, w, wp, theta, alpha, alphap []float64) (Bound, error) {
	if err := p.Validate(); err != nil {
		return Bound{}, err
	}
	n, _, m := p.Dims()
	if len(alpha) != m || len(alphap) != m || (theta != nil && len(theta) != n) {
		return Bound{}, fmt.Errorf("general: multipliers of %d, %d and %d entries, the program has %d constraint rows and %d predictions", len(alpha), len(alphap), len(theta), m, n)
	}
	gd, gl := groupBlocks(p)
	c := newCertifier(p, dense(p.F), gd, gl, 200)
	c.support = true
	return c.bound(w, wp, theta, alpha, alphap)
}

// groupBlocks returns the dense blocks G_g and ‖G_g‖².
func groupBlocks(p *Program) ([]*mat.Dense, []float64) {
	gd, gl := make([]*mat.Dense, len(p.Groups)), make([]float64, len(p.Groups))
	for g, gr := range p.Groups {
		if gr.G == nil {
			continue
		}
		gd[g] = dense(gr.G)
		// ‖G_g‖² is the largest eigenvalue of the k×k G_gᵀG_g (cheaper
		// than an SVD of the tall block; it only sets FISTA's step).
		_, k := gd[g].Dims()
		gram := mat.NewSymDense(k, nil)
		gram.SymOuterK(1, gd[g].T())
		var eig mat.EigenSym
		if eig.Factorize(gram, false) {
			gl[g] = floats.Max(eig.Values(nil))
		}
	}
	return gd, gl
}

const eps = 0x1p-52

// restoreZero is the norm, relative to the largest group's, below which a
// group that violates its cone is restored to zero (see restore).
const restoreZero = 1e-9

func (c *certifier) bound(w, wp, theta, alpha, alphap []float64) (Bound, error) {
	p := c.p
	if err := p.checkPoint(w, wp); err != nil {
		return Bound{}, err
	}
	n, nv, _ := p.Dims()
	// Upper: the point made feasible.
	b := Bound{W: append([]float64(nil), w...), Wp: append([]float64(nil), wp...)}
	big := 0.0
	for g := range p.Groups {
		for _, x := range [][]float64{b.W, b.Wp} {
			big = math.Max(big, floats.Norm(x[c.lay.off[g]:c.lay.off[g+1]], 2))
		}
	}
	for g := range p.Groups {
		for _, x := range [][]float64{b.W, b.Wp} {
			if c.restore(g, x[c.lay.off[g]:c.lay.off[g+1]], restoreZero*big) {
				b.Restored++
			}
		}
	}
	up, err := p.Objective(b.W, b.Wp)
	if err != nil {
		return Bound{}, err
	}
	up *= 1 + float64(n+nv+2)*eps
	if u0 := p.Loss.Value(make([]float64, n), p.Y); u0 < up {
		clear(b.W)
		clear(b.Wp)
		up = u0 * (1 + float64(n+2)*eps)
	}
	b.Upper = up

	// Lower: θ at the given point's predictions.
	diff := make([]float64, nv)
	floats.SubTo(diff, w, wp)
	yhat := make([]float64, n)
	p.F.Apply(yhat, diff)
	th := make([]float64, n)
	switch {
	case theta != nil && len(theta) == n:
		copy(th, theta)
	case p.Loss.Smooth():
		p.Loss.Grad(th, yhat, p.Y)
	default: // hinge: a subgradient
		for k, y := range p.Y {
			switch m := y * yhat[k]; {
			case m < 1:
				th[k] = -y / float64(n)
			case m == 1:
				th[k] = -y / float64(2*n)
			}
		}
	}
	for _, v := range th {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return Bound{}, fmt.Errorf("general: the loss dual is not finite")
		}
	}
	p.Loss.ClipDual(th, p.Y)
	ft := make([]float64, nv)
	p.F.ApplyT(ft, th)
	absTh := make([]float64, n)
	for k, v := range th {
		absTh[k] = math.Abs(v)
	}
	fmag := make([]float64, nv) // |F|ᵀ|θ|: the size of Fᵀθ's rounding error
	for k := 0; k < n; k++ {
		floats.AddScaled(fmag, absTh[k], absRow(c.fd.RawRowView(k)))
	}
	var smax float64
	for g, gr := range p.Groups {
		o, e := c.lay.off[g], c.lay.off[g+1]
		for half, a0 := range [][]float64{alpha, alphap} {
			cg := make([]float64, e-o)
			copy(cg, ft[o:e])
			if half == 1 {
				floats.Scale(-1, cg)
			}
			var start []float64
			if a0 != nil && gr.G != nil {
				start = a0[c.lay.roff[g]:c.lay.roff[g+1]]
			}
			s := c.groupNorm(g, cg, fmag[o:e], start, n)
			smax = math.Max(smax, s)
		}
	}
	tcap := math.Inf(1)
	if p.Loss != solvers.SquaredLoss {
		tcap = 1 // dom ℓ* is an interval around 0 that holds θ
	}
	if smax > 0 {
		tcap = math.Min(tcap, p.Beta/smax)
	}
	phi := func(t float64) float64 { v, _ := p.Loss.NegConjugate(th, nil, p.Y, t); return v }
	lo, hi := 0.0, tcap
	if math.IsInf(hi, 1) { // squared loss with Fᵀθ = 0: −ℓ*(tθ) peaks at t = −θᵀy/‖θ‖²
		hi = math.Max(0, -floats.Dot(th, p.Y)/math.Max(floats.Dot(th, th), math.SmallestNonzeroFloat64))
		lo = hi
	}
	const golden = 0.6180339887498949
	for it := 0; it < 100 && hi-lo > 1e-15*math.Max(1, hi); it++ {
		m1, m2 := hi-golden*(hi-lo), lo+golden*(hi-lo)
		if phi(m1) < phi(m2) {
			lo = m1
		} else {
			hi = m2
		}
	}
	t := (lo + hi) / 2
	val, mag := p.Loss.NegConjugate(th, nil, p.Y, t)
	b.Lower = val - float64(n+2)*eps*mag
	if b.Lower < 0 {
		b.Lower = 0 // t = 0 is dual feasible: −ℓ*(0) = inf ℓ = 0 for every loss here
	}
	b.Gap = b.Upper - b.Lower
	if b.Upper != 0 {
		b.Gap /= math.Abs(b.Upper)
	}
	return b, nil
}

func absRow(r []float64) []float64 {
	out := make([]float64, len(r))
	for i, v := range r {
		out[i] = math.Abs(v)
	}
	return out
}

// groupNorm returns an upper bound on min over α ≥ 0 of ‖c − G_gᵀα‖ (the
// norm at the best α found, plus its rounding error; cmag bounds the error
// of c), by FISTA on ½‖c − G_gᵀα‖² from start (nil: zero).
func (c *certifier) groupNorm(g int, cg, cmag, start []float64, n int) float64 {
	gd := c.gd[g]
	if gd == nil || c.gl[g] == 0 {
		return floats.Norm(cg, 2) + float64(n+2)*eps*floats.Norm(cmag, 2)
	}
	m, k := gd.Dims()
	if c.support && start != nil {
		// The rows of the start's support, when few: α is zero on the
		// others, so the bound is that of a restriction, valid as any α
		// ≥ 0 is, and the step 1/‖G_g‖² is within the restriction's.
		var rows []int
		for i, v := range start {
			if v > 0 {
				rows = append(rows, i)
			}
		}
		if 2*len(rows) <= m {
			sub := mat.NewDense(max(len(rows), 1), k, nil)
			sa := make([]float64, max(len(rows), 1))
			for j, r := range rows {
				copy(sub.RawRowView(j), gd.RawRowView(r))
				sa[j] = start[r]
			}
			gd, start = sub, sa
		}
	}
	m, k = gd.Dims()
	alpha, y, prev := make([]float64, m), make([]float64, m), make([]float64, m)
	if start != nil {
		copy(alpha, start)
	}
	r := make([]float64, k)
	grad := make([]float64, m)
	resid := func(a []float64) float64 {
		gt := mat.NewVecDense(k, r)
		gt.MulVec(gd.T(), mat.NewVecDense(m, a))
		floats.SubTo(r, cg, r)
		return floats.Norm(r, 2)
	}
	best := resid(alpha)
	bestA := append([]float64(nil), alpha...)
	copy(y, alpha)
	step := 1 / c.gl[g]
	tk := 1.0
	for it := 0; it < c.steps; it++ {
		resid(y)
		gv := mat.NewVecDense(m, grad)
		gv.MulVec(gd, mat.NewVecDense(k, r)) // G(c − Gᵀy) = −∇
		copy(prev, alpha)
		for i := range alpha {
			alpha[i] = math.Max(0, y[i]+step*grad[i])
		}
		if s := resid(alpha); s < best {
			best = s
			copy(bestA, alpha)
		}
		tn := (1 + math.Sqrt(1+4*tk*tk)) / 2
		for i := range y {
			y[i] = alpha[i] + (tk-1)/tn*(alpha[i]-prev[i])
		}
		tk = tn
	}
	// Rounding: ‖c − Gᵀα‖ is computed with an error of at most
	// γ(|c| + |G|ᵀα) per entry, γ = (m + 2)ε, and c carries cmag's.
	gmag := make([]float64, k)
	for i := 0; i < m; i++ {
		if bestA[i] != 0 {
			floats.AddScaled(gmag, bestA[i], absRow(gd.RawRowView(i)))
		}
	}
	for i := range gmag {
		gmag[i] = float64(m+2)*eps*(gmag[i]+math.Abs(cg[i])) + float64(n+2)*eps*cmag[i]
	}
	return best + floats.Norm(gmag, 2)
}

// restore makes x (group g's coordinates) satisfy G_g x ≥ 0 exactly, and
// reports whether it changed it: zero when ‖x‖ ≤ zero (a numerically zero
// group, restoreZero of the largest: its direction is the solver's noise,
// which violates thousands of rows of a large block and is costly to
// project, while zero moves the objective at rounding level); else its
// projection onto {G_g x ≥ 0} (project),
// then, where that leaves rows violated by the solver's tolerance, a move
// along an interior direction z of the cone (G_g z > 0 on its nonzero rows;
// interior), x + τz with the smallest τ that lifts every violated row;
// without one (or if rounding defeats it), Hildreth's projection; else
// zero.
func (c *certifier) restore(g int, x []float64, zero float64) bool {
	gd := c.gd[g]
	if gd == nil {
		return false
	}
	m, _ := gd.Dims()
	gx := make([]float64, m)
	feasible := func() bool {
		mat.NewVecDense(m, gx).MulVec(gd, mat.NewVecDense(len(x), x))
		for _, v := range gx {
			if v < 0 {
				return false
			}
		}
		return true
	}
	if feasible() {
		return false
	}
	if floats.Norm(x, 2) <= zero {
		clear(x)
		return true
	}
	// Candidates: the projection (lifted along z where it falls short by
	// the QP's tolerance) and x lifted along z; the nearer feasible one.
	orig := append([]float64(nil), x...)
	var best []float64
	bestDist := math.Inf(1)
	try := func(start []float64) {
		copy(x, start)
		if c.lift(g, x, gx, feasible) {
			if d := floats.Distance(x, orig, 2); d < bestDist {
				best, bestDist = append([]float64(nil), x...), d
			}
		}
	}
	if y := c.project(g, orig); y != nil {
		try(y)
	}
	try(orig)
	if best != nil {
		copy(x, best)
		return true
	}
	copy(x, orig)
	feasible()
	alpha := make([]float64, m)
	nr := make([]float64, m)
	for i := range nr {
		row := gd.RawRowView(i)
		nr[i] = floats.Dot(row, row)
	}
	for sweep := 0; sweep < 200; sweep++ {
		for i := 0; i < m; i++ {
			if nr[i] == 0 {
				continue
			}
			row := gd.RawRowView(i)
			// Aim a little inside the half-space so that rounding leaves
			// the row satisfied.
			d := math.Max(-alpha[i], (1e-12*math.Sqrt(nr[i])*floats.Norm(x, 2)-floats.Dot(row, x))/nr[i])
			alpha[i] += d
			floats.AddScaled(x, d, row)
		}
		if feasible() {
			return true
		}
	}
	clear(x)
	return true
}

// lift makes x feasible along the interior direction of group g (see
// restore) and reports whether it is then exactly feasible; gx holds G_g x
// on entry and is kept current by feasible.
func (c *certifier) lift(g int, x, gx []float64, feasible func() bool) bool {
	if feasible() {
		return true
	}
	z := c.interior(g)
	if z == nil {
		return false
	}
	gd := c.gd[g]
	m, _ := gd.Dims()
	gz := make([]float64, m)
	mat.NewVecDense(m, gz).MulVec(gd, mat.NewVecDense(len(z), z))
	for try := 0; try < 4; try++ {
		var tau float64
		for r, v := range gx {
			if v < 0 {
				if gz[r] <= 0 {
					return false
				}
				tau = math.Max(tau, -v/gz[r])
			}
		}
		floats.AddScaled(x, tau*(1+1e-9*math.Pow(1e3, float64(try))), z)
		if feasible() {
			return true
		}
	}
	return false
}

// project returns the projection of x onto {G_g x ≥ 0}, the QP
// min ½‖y − x‖² s.t. G_g y ≥ 0 solved by the interior-point method on a
// working set of rows (onRows: first the rows x violates or nearly meets),
// nil if it fails; it may violate rows by the method's tolerance.
func (c *certifier) project(g int, x []float64) []float64 {
	gd := c.gd[g]
	m, k := gd.Dims()
	q := mat.NewSymDense(k, nil)
	for i := 0; i < k; i++ {
		q.SetSym(i, i, 1)
	}
	cost := make([]float64, k)
	floats.ScaleTo(cost, -1, x)
	gx := make([]float64, m)
	mat.NewVecDense(m, gx).MulVec(gd, mat.NewVecDense(k, x))
	norms := c.rowNorms(g)
	xn := floats.Norm(x, 2)
	var first []int
	for r, v := range gx {
		if norms[r] > 0 && v <= rowNear*norms[r]*xn {
			first = append(first, r)
		}
	}
	solve := func(rows []int) []float64 {
		if len(rows) == 0 {
			return append([]float64(nil), x...)
		}
		a := mat.NewDense(len(rows), k, nil)
		for i, r := range rows {
			floats.ScaleTo(a.RawRowView(i), -1, gd.RawRowView(r))
		}
		res, err := ipm.SolveConeQP(context.Background(), &ipm.ConeQP{Q: q, C: cost, G: a, H: make([]float64, len(rows)), K: ipm.Cone{Orthant: len(rows)}}, ipm.Options{Tol: 1e-12})
		if err != nil || res.X == nil || res.Status != ipm.Optimal {
			return nil
		}
		for _, v := range res.X {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return nil
			}
		}
		return res.X
	}
	// A row left out is violated when it is negative beyond rounding.
	violation := func(y []float64, r int, gy float64) float64 { return -gy / (norms[r] * floats.Norm(y, 2)) }
	return c.onRows(g, first, solve, violation, 1e-13)
}

// interior returns (and caches) a direction z with G_g z > 0 on the nonzero
// rows of G_g, from the LP max t s.t. G_g z ≥ t, −1 ≤ z ≤ 1, t ≤ 1, solved
// by the interior-point method; nil when the cone has no interior (t* ≤ 0)
// or the LP fails.
func (c *certifier) interior(g int) []float64 {
	if c.inner == nil {
		c.inner = make([][]float64, len(c.gd))
		c.innerDone = make([]bool, len(c.gd))
	}
	if c.innerDone[g] {
		return c.inner[g]
	}
	c.innerDone[g] = true
	gd := c.gd[g]
	m, k := gd.Dims()
	norms := c.rowNorms(g)
	// The first rows: those of least margin on the normalized rows' sum.
	central := make([]float64, k)
	for r := 0; r < m; r++ {
		if norms[r] > 0 {
			floats.AddScaled(central, 1/norms[r], gd.RawRowView(r))
		}
	}
	var nonzero []int
	key := make([]float64, m)
	for r := 0; r < m; r++ {
		if norms[r] > 0 {
			key[r] = floats.Dot(gd.RawRowView(r), central) / norms[r]
			nonzero = append(nonzero, r)
		}
	}
	first := solvers.Least(nonzero, key, rowFirst*k)
	var t float64
	solve := func(rows []int) []float64 {
		nr := len(rows) + 2*k + 1
		a := mat.NewDense(nr, k+1, nil)
		h := make([]float64, nr)
		for i, r := range rows { // −G z + t ≤ 0, rows scaled to unit norm
			floats.ScaleTo(a.RawRowView(i)[:k], -1/norms[r], gd.RawRowView(r))
			a.Set(i, k, 1)
		}
		for j := 0; j < k; j++ {
			a.Set(len(rows)+2*j, j, 1)
			h[len(rows)+2*j] = 1
			a.Set(len(rows)+2*j+1, j, -1)
			h[len(rows)+2*j+1] = 1
		}
		a.Set(nr-1, k, 1)
		h[nr-1] = 1
		cost := make([]float64, k+1)
		cost[k] = -1
		res, err := ipm.SolveConeQP(context.Background(), &ipm.ConeQP{C: cost, G: a, H: h, K: ipm.Cone{Orthant: nr}}, ipm.Options{})
		if err != nil || res.X == nil || !(res.X[k] > 1e-9) {
			return nil
		}
		t = res.X[k]
		return res.X[:k]
	}
	// A row left out is violated when its margin falls below half the
	// set's: the direction need not be the LP's optimum, only inside.
	violation := func(z []float64, r int, gz float64) float64 { return t/2 - gz/norms[r] }
	z := c.onRows(g, first, solve, violation, 0)
	if z == nil {
		return nil
	}
	c.inner[g] = append([]float64(nil), z...)
	return c.inner[g]
}

// Row working sets (onRows) of the certifier's QPs and LPs on a group's
// rows: rowNear is the relative margin under which project starts with a
// row, rowFirst (per entry of the group) the rows interior starts with,
// rowAdd (per entry) the most rows a round adds.
const (
	rowNear  = 1e-6
	rowFirst = 20
	rowAdd   = 8
)

// onRows solves a program on group g's rows by a working set: solve(rows)
// solves it on the rows given (increasing) and returns its solution (nil:
// failed), violation(x, r, G_r x) measures row r's violation; each round
// adds up to rowAdd·k of the rows left out whose violation exceeds tol,
// most violated first, until none does (the solution then holds on every
// row) or every row is in. A block of at most 4·rowFirst·k rows is solved
// on all its nonzero rows at once.
func (c *certifier) onRows(g int, first []int, solve func([]int) []float64, violation func([]float64, int, float64) float64, tol float64) []float64 {
	gd := c.gd[g]
	m, k := gd.Dims()
	in := make([]bool, m)
	rows := make([]int, 0, len(first))
	if m <= 4*rowFirst*k {
		first = nil // few rows: one solve on all of them (a zero row is no constraint)
		for r, nr := range c.rowNorms(g) {
			if nr > 0 {
				rows = append(rows, r)
			}
		}
	}
	for _, r := range first {
		if !in[r] {
			in[r] = true
			rows = append(rows, r)
		}
	}
	gx := make([]float64, m)
	key := make([]float64, m)
	var out []int
	for {
		slices.Sort(rows)
		x := solve(rows)
		if x == nil || len(rows) == m {
			return x
		}
		mat.NewVecDense(m, gx).MulVec(gd, mat.NewVecDense(k, x))
		out = out[:0]
		for r, v := range gx {
			if in[r] {
				continue
			}
			if e := violation(x, r, v); e > tol {
				key[r] = -e
				out = append(out, r)
			}
		}
		if len(out) == 0 {
			return x
		}
		for _, r := range solvers.Least(out, key, rowAdd*k) {
			in[r] = true
			rows = append(rows, r)
		}
	}
}

// rowNorms returns (and caches) the norms of group g's rows.
func (c *certifier) rowNorms(g int) []float64 {
	if c.norms == nil {
		c.norms = make([][]float64, len(c.gd))
	}
	if c.norms[g] == nil {
		m, _ := c.gd[g].Dims()
		c.norms[g] = make([]float64, m)
		for r := range m {
			c.norms[g][r] = floats.Norm(c.gd[g].RawRowView(r), 2)
		}
	}
	return c.norms[g]
}
