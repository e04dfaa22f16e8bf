package gated

import (
	"math"

	"gonum.org/v1/gonum/mat"
)

// Reusing a factor of M_t at other kernel weights.
//
// For weights s and the weights t of the factor, M_s = I + Σ_i s_i K_i and
// M_t = I + Σ_i t_i K_i with every K_i = D_iXXᵀD_i positive semidefinite,
// so with r_i = s_i/t_i
//
//	min(1, min_i r_i)·M_t ⪯ M_s ⪯ max(1, max_i r_i)·M_t:
//
// the eigenvalues of M_t⁻¹M_s lie in an interval of ratio κ = max(1, r_max)/
// min(1, r_min), and conjugate gradients on M_s preconditioned by M_t's
// factor reduce the error's M_s-norm by (√κ − 1)/(√κ + 1) per iteration at
// least. Near an optimum Newton's steps change t by a few per cent, κ is
// close to one, and a solve costs a few products with X instead of an n³/3
// factorization (kernelSystem.solveAt).

// KernelPath carries the kernel method (SolveKernel) from one point of a
// regularization path to the next: the same X, gates and targets, another
// β, started from the weights the last solve returned. It keeps XXᵀ, the
// last factor of M_t, the last kernel weights and Λ, so the next point
// starts at those weights, where conjugate gradients with the factor give
// Λ and the first Newton step for the new β needs no factorization of its
// own: the Gram matrix is formed once per path, and a point usually takes
// fewer factorizations than from a fresh warm start at t_i = ‖W_i‖_F/β
// (TestKernelPath). A zero KernelPath is ready; it holds 2·8n² bytes while
// referenced, and it is not for concurrent solves.
type KernelPath struct {
	ks  *kernelSystem
	t   []float64  // the kernel weights the last solve ended at
	lam *mat.Dense // Λ there (or at its last trial), a warm start for conjugate gradients
	w   Weights    // the weights it returned
}

// resume returns the state kept for p, started from start, or nil when
// there is none: another X, gates, targets or number of outputs, or start
// not the weights the last solve returned.
func (kp *KernelPath) resume(p *Problem, start Weights) *KernelPath {
	if kp == nil || kp.ks == nil || len(start) != len(kp.w) || len(start) == 0 {
		return nil
	}
	q := kp.ks.p
	if q.X != p.X || q.Targets != p.Targets || len(q.Gates) != len(p.Gates) {
		return nil
	}
	for i, g := range p.Gates {
		if len(g) != len(q.Gates[i]) || (len(g) > 0 && &g[0] != &q.Gates[i][0]) {
			return nil
		}
	}
	for i, w := range start {
		if w != kp.w[i] {
			return nil
		}
	}
	return kp
}

// reuseKappa is the largest bound κ at which solveAt tries conjugate
// gradients with the factor at hand rather than factoring anew.
const reuseKappa = 1.2

// pcgMaxIter bounds solveAt's conjugate-gradient iterations.
const pcgMaxIter = 60

// kappaBound returns the bound κ = max(1, r_max)/min(1, r_min) on the
// condition of M_ref⁻¹M_s, r_i = s_i/ref_i, +Inf when a weight is zero in
// one and not in the other (a gate entering or leaving: K_i's range is
// then not bounded by the other matrix).
func kappaBound(s, ref []float64) float64 {
	lo, hi := 1.0, 1.0
	for i, v := range s {
		switch {
		case v == ref[i]:
		case v == 0 || ref[i] == 0:
			return math.Inf(1)
		default:
			r := v / ref[i]
			lo, hi = math.Min(lo, r), math.Max(hi, r)
		}
	}
	return hi / lo
}

// applyM sets out = M_s·in = in + Σ_i s_i D_iXXᵀD_i·in by products with X
// (in and out n×c, distinct); zs is d×Pc work space.
func (ks *kernelSystem) applyM(out, in, zs *mat.Dense, s []float64) {
	ks.ops.backward(zs, in)
	c := ks.c
	raw := zs.RawMatrix()
	for r := 0; r < raw.Rows; r++ {
		row := raw.Data[r*raw.Stride : r*raw.Stride+raw.Cols]
		for i, v := range s {
			for j := range row[i*c : (i+1)*c] {
				row[i*c+j] *= v
			}
		}
	}
	ks.ops.forward(out, zs)
	out.Add(out, in)
}

// solveAt solves M_s Λ = T for the columns of T by conjugate gradients
// preconditioned by the factor at hand (of M at ks.ref), from the Λ given
// (a warm start), and reports whether it reached the accuracy a direct
// solve gives the certificate: the error δ of each column small in
// M_s-norm, ‖δ‖_{M_s} ≤ tol, where tol is set so that every active gate's
// a_i = ‖XᵀD_iΛ‖_F changes by at most 10⁻¹⁰β (‖XᵀD_iδ‖² = δᵀK_iδ ≤
// ‖δ‖²_{M_s}/s_i); where the iterations stop before (the rounding floor of
// the residual, or pcgMaxIter), within 10⁴·tol. The estimate of ‖δ‖²_{M_s} is
// κ·rᵀM_ref⁻¹r with the residual r recomputed at the end. It returns false
// (Λ is then a partial solve, to be replaced) when the bound κ on
// M_ref⁻¹M_s exceeds reuseKappa or the iterations do not reach that
// accuracy; res, when not nil, gets the final residual T − M_sΛ.
func (ks *kernelSystem) solveAt(lam, res *mat.Dense, t *mat.Dense, s []float64, beta float64) bool {
	if ks.ref == nil {
		return false
	}
	kappa := kappaBound(s, ks.ref)
	if kappa > reuseKappa {
		return false
	}
	smin := math.Inf(1)
	for _, v := range s {
		if v > 0 {
			smin = math.Min(smin, v)
		}
	}
	if math.IsInf(smin, 1) {
		smin = 1
	}
	tol := 1e-10 * beta * math.Sqrt(smin)
	n, c := ks.n, ks.c
	if ks.pr == nil {
		ks.pr, ks.pz, ks.pp, ks.pq = mat.NewDense(n, c, nil), mat.NewDense(n, c, nil), mat.NewDense(n, c, nil), mat.NewDense(n, c, nil)
		_, d, np, _ := ks.p.Dims()
		ks.pw = mat.NewDense(d, np*c, nil)
	}
	r, z, p, q := ks.pr, ks.pz, ks.pp, ks.pq
	residual := func() {
		ks.applyM(q, lam, ks.pw, s)
		r.Sub(t, q)
	}
	residual()
	z.Copy(r)
	ks.solve(z)
	p.Copy(z)
	rz := colDots(r, z)
	// below reports whether every column's estimate is below tol.
	below := func(tol float64) bool {
		for _, v := range rz {
			if !(v*kappa <= tol*tol) {
				return false
			}
		}
		return true
	}
	// The residual is computed with rounding errors (a direct solve's
	// accuracy is of the same order): where the estimate stops falling
	// (by 4× in three iterations) the iterations are at that floor.
	var hist [3]float64
	alpha := make([]float64, c)
	for its := 0; its < pcgMaxIter && !below(tol); its++ {
		worst := 0.0
		for _, v := range rz {
			worst = math.Max(worst, v)
		}
		if its >= 3 && worst > 0.25*hist[its%3] {
			break // at the rounding floor
		}
		hist[its%3] = worst
		ks.applyM(q, p, ks.pw, s)
		pq := colDots(p, q)
		for j := range alpha {
			alpha[j] = 0
			if pq[j] > 0 {
				alpha[j] = rz[j] / pq[j]
			}
		}
		addCols(lam, p, alpha, 1)
		addCols(r, q, alpha, -1)
		z.Copy(r)
		ks.solve(z)
		rzNew := colDots(r, z)
		for j := range rz {
			b := 0.0
			if rz[j] > 0 {
				b = rzNew[j] / rz[j]
			}
			rz[j] = rzNew[j]
			scaleCol(p, j, b)
		}
		p.Add(p, z)
	}
	// The recursive residual drifts from the true one: decide on the
	// true residual.
	residual()
	z.Copy(r)
	ks.solve(z)
	rz = colDots(r, z)
	if res != nil {
		res.Copy(r)
	}
	// Stopped at tol, or early (the rounding floor, or the cap): accepted
	// within 10⁴·tol, 10⁻⁶β√s_min.
	return below(1e4 * tol)
}

// colDots returns the inner products of the columns of a and b.
func colDots(a, b *mat.Dense) []float64 {
	ar, br := a.RawMatrix(), b.RawMatrix()
	out := make([]float64, ar.Cols)
	for k := 0; k < ar.Rows; k++ {
		x, y := ar.Data[k*ar.Stride:k*ar.Stride+ar.Cols], br.Data[k*br.Stride:k*br.Stride+br.Cols]
		for j, v := range x {
			out[j] += v * y[j]
		}
	}
	return out
}

// addCols sets a ← a + sign·b·diag(w).
func addCols(a, b *mat.Dense, w []float64, sign float64) {
	ar, br := a.RawMatrix(), b.RawMatrix()
	for k := 0; k < ar.Rows; k++ {
		x, y := ar.Data[k*ar.Stride:k*ar.Stride+ar.Cols], br.Data[k*br.Stride:k*br.Stride+br.Cols]
		for j := range x {
			x[j] += sign * w[j] * y[j]
		}
	}
}

// scaleCol multiplies column j of a by s.
func scaleCol(a *mat.Dense, j int, s float64) {
	ar := a.RawMatrix()
	for k := 0; k < ar.Rows; k++ {
		ar.Data[k*ar.Stride+j] *= s
	}
}
