package certify

import (
	"math"

	"github.com/convexnn/convexnn/solvers"
	"gonum.org/v1/gonum/floats"
	"gonum.org/v1/gonum/mat"
)

// ProjectionQP is the cone quadratic program
//
//	minimize   ½xᵀQx + Cᵀx
//	subject to Gx + s = H,  s ∈ R^Orthant₊ × Q^{SOC[0]} × …
//
// (Q^q the second-order cone {(s₀, s₁) : s₀ ≥ ‖s₁‖₂}) whose multipliers of
// the first n rows are a group's exact α_j (see Certifier.Exact).
type ProjectionQP struct {
	Q       *mat.SymDense
	C       []float64
	G       *mat.Dense
	H       []float64
	Orthant int
	SOC     []int
}

// QPSolver returns multipliers z ∈ K (one per row of G) of an optimal
// solution of q, or an error. Nothing it returns can make a bound invalid:
// the certifier keeps z only where it lowers s_j, recomputed from z.
type QPSolver func(q *ProjectionQP) ([]float64, error)

// exactBudget caps the size (rows × variables²) of the projection QPs
// Certifier.Exact is used for: about one dense normal matrix of 2.7·10⁸
// flops per interior-point iteration (mid-size programs: 2·10⁷, Table 5:
// 8·10⁷; MNIST 2 vs 8 at d = 784: 7·10⁹, left to the projected gradient).
const exactBudget = 1 << 28

// projectionQP returns group j's projection program: s_j is the distance of
// c_j from the cone C_j = {XᵀS_iα + q : α ≥ 0, q ∈ ε(1ᵀα)B^f}, which by
// Moreau's decomposition is the norm of the projection of c_j onto the
// polar cone C_j° = {u : S_i[k] x_kᵀu + εN(u) ≤ 0 for all k}:
//
//	minimize ½‖u‖² − c_jᵀu  subject to  S_i[k] x_kᵀu + εN(u) ≤ 0  (k = 1…n),
//
// with N(u) = ‖u^f‖_* written through auxiliaries: for the ℓ∞ set
// (N = ℓ₁) a_l ≥ ±u_l and N = 1ᵀa; for the ℓ₁ set (N = ℓ∞) ρ ≥ ±u_l; for
// the ℓ₂ set (ρ, u^f) in a second-order cone. The multipliers of the n rows
// satisfy c_j − u = XᵀS_iα + ε(1ᵀα)g with ‖g‖ ≤ 1 in the perturbation's
// norm, so they attain s_j = ‖u‖. The returned program has G's rows of
// the pattern in place; c_j is set by the caller.
func (c *Certifier) projectionQP(i int) *ProjectionQP {
	n, d, f := c.n, c.d, c.f
	aux, epi, soc := c.projectionShape()
	nv := d + aux
	rows := n + epi
	for _, q := range soc {
		rows += q
	}
	g := mat.NewDense(rows, nv, nil)
	for k := 0; k < n; k++ {
		r := g.RawRowView(k)
		floats.ScaleTo(r[:d], c.sgn.At(k, i), c.p.X.RawRowView(k))
		for a := d; a < nv; a++ {
			r[a] = c.eps
		}
	}
	switch {
	case epi > 0: // ±u_l − a_l ≤ 0 (ℓ∞ set) or ±u_l − ρ ≤ 0 (ℓ₁ set)
		for l := 0; l < f; l++ {
			a := d
			if aux == f {
				a = d + l
			}
			g.Set(n+2*l, l, 1)
			g.Set(n+2*l, a, -1)
			g.Set(n+2*l+1, l, -1)
			g.Set(n+2*l+1, a, -1)
		}
	case soc != nil: // s = (ρ, u^f) ∈ Q^{1+f}
		g.Set(n, d, -1)
		for l := 0; l < f; l++ {
			g.Set(n+1+l, l, -1)
		}
	}
	q := mat.NewSymDense(nv, nil)
	for a := 0; a < d; a++ {
		q.SetSym(a, a, 1)
	}
	return &ProjectionQP{Q: q, C: make([]float64, nv), G: g, H: make([]float64, rows), Orthant: n + epi, SOC: soc}
}

// projectionShape returns the auxiliaries, the epigraph rows after the n
// cone rows, and the second-order cones of the projection programs.
func (c *Certifier) projectionShape() (aux, epi int, soc []int) {
	switch {
	case c.eps == 0:
		return 0, 0, nil
	case c.kind == solvers.L2:
		return 1, 0, []int{1 + c.f}
	case c.kind == solvers.LInf:
		return c.f, 2 * c.f, nil
	}
	return 1, 2 * c.f, nil
}

// exact replaces, for every group whose s_j (at alpha, coefficients cc)
// exceeds β(1 + Enough), column j of alpha by the multipliers of its
// projection program solved by c.Exact, where that lowers s_j, and
// returns the distances at the result. Programs larger than exactBudget
// are left alone.
func (c *Certifier) exact(cc, alpha *mat.Dense) []float64 {
	cur := c.distances(cc, alpha, nil)
	s := cur.s
	if c.Exact == nil || c.enough(s) {
		return s
	}
	lim := c.p.Beta * (1 + math.Max(0, c.Enough))
	aux, epi, soc := c.projectionShape()
	rows, nv := float64(c.n+epi), float64(c.d+aux)
	for _, q := range soc {
		rows += float64(q)
	}
	if rows*nv*nv > exactBudget {
		return s
	}
	np, n := c.np, c.n
	one := mat.NewDense(c.d, 1, nil)
	col := mat.NewDense(n, 1, nil)
	for i := 0; i < np; i++ { // v_i and w_i share their pattern's program
		if s[i] <= lim && s[np+i] <= lim {
			continue
		}
		qp := c.projectionQP(i)
		for _, j := range [2]int{i, np + i} {
			if s[j] <= lim {
				continue
			}
			c.exactGroup(qp, cc, alpha, s, j, one, col)
		}
	}
	return s
}

// exactGroup solves group j's projection program qp (its pattern's, c set
// here from cc) and takes its multipliers as column j of alpha when they
// lower s[j]; one (d×1) and col (n×1) are scratch.
func (c *Certifier) exactGroup(qp *ProjectionQP, cc, alpha *mat.Dense, s []float64, j int, one, col *mat.Dense) {
	for r := 0; r < c.d; r++ {
		qp.C[r] = -cc.At(r, j)
	}
	z, err := c.Exact(qp)
	if err != nil || len(z) < c.n {
		return
	}
	for k := 0; k < c.n; k++ {
		v := z[k]
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return
		}
		col.Set(k, 0, math.Max(v, 0))
	}
	// s_j at the new column alone (the other groups are unaffected).
	for r := 0; r < c.d; r++ {
		one.Set(r, 0, cc.At(r, j))
	}
	if sj := c.groupDistance(one, col, j%c.np); sj < s[j] {
		alpha.SetCol(j, col.RawMatrix().Data)
		s[j] = sj
	}
}

// groupDistance is distances for one group of pattern i: cj (d×1) its
// coefficients, a (n×1) its multipliers.
func (c *Certifier) groupDistance(cj, a *mat.Dense, i int) float64 {
	b := mat.NewDense(c.n, 1, nil)
	var sum float64
	for k := 0; k < c.n; k++ {
		v := a.At(k, 0)
		b.Set(k, 0, c.sgn.At(k, i)*v)
		sum += v
	}
	var e mat.Dense
	e.Mul(c.p.X.T(), b)
	e.Sub(cj, &e)
	r := e.RawMatrix().Data
	c.ballResidual(r, c.eps*sum, nil)
	return floats.Norm(r, 2)
}
