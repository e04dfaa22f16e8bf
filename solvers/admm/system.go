package admm

import (
	"fmt"
	"math"
	"math/bits"
	"runtime"
	"sync"
	"time"

	"github.com/convexnn/convexnn/internal/floatbits"
	"github.com/convexnn/convexnn/solvers"
	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/gonum/lapack/lapack64"
)

// The u-update of the ADMM algorithm (eq. uupdate) solves
//
//	A u = b,  A = I + (1/ρ) FᵀF + GᵀG,
//
// with F = [F_1 … F_P  −F_1 … −F_P], F_i = D_i X, and
// G = blkdiag(G_1 … G_P, G_1 … G_P), G_i = (2D_i − I) X. Since
// (2D_i − I)² = I, GᵀG = blkdiag(XᵀX, …) (2P copies), so
//
//	A = B + (1/ρ) FᵀF,  B = blkdiag(M, …, M),  M = I + XᵀX  (d×d).
//
// Write Φ = [F_1 … F_P] (n×dP), so F = [Φ  −Φ], and u = (u_1 … u_P, z_1 … z_P).
// The orthogonal change of variables p_i = u_i + z_i, m_i = u_i − z_i splits
// the 2dP×2dP system exactly into
//
//	M p_i = b_i + c_i                       (P independent d×d systems),
//	(B_P + (2/ρ) ΦᵀΦ) m = e,  e_i = b_i − c_i,  B_P = blkdiag(M × P),
//
// where b = (b_1 … b_P, c_1 … c_P), and u_i = (p_i + m_i)/2,
// z_i = (p_i − m_i)/2. The second system (dP×dP) is solved by one of three
// routes:
//
//   - woodbury: (B_P + (2/ρ)ΦᵀΦ)⁻¹ = B_P⁻¹ − B_P⁻¹Φᵀ S⁻¹ Φ B_P⁻¹ with the n×n
//     S = (ρ/2) I + Φ B_P⁻¹ Φᵀ = (ρ/2) I + K∘C, where K = X M⁻¹ Xᵀ,
//     C = Σ_i d_i d_iᵀ (C_kl counts the patterns active at both x_k and x_l)
//     and ∘ is the Hadamard product (S is half of the ρI + 2K∘C that the
//     Woodbury identity gives on the undivided 2dP×2dP system).
//
//   - direct: the dP×dP matrix with blocks δ_ij M + (2/ρ) Xᵀ D_i D_j X
//     (D_i D_j is the elementwise AND of the patterns) is assembled and
//     factored.
//
//   - cg (inexact, no factor but L_M): preconditioned conjugate gradients on
//     the dP×dP system with the preconditioner B_P, whose condition number
//     there is at most 1 + 2P/ρ (K = X M⁻¹ Xᵀ has eigenvalues below 1 and
//     the diagonal of C is at most P); each step is one product with Φ and
//     one with Φᵀ (4ndP flops) and two triangular solves with L_M.
//
// All factor M = L_M L_Mᵀ once; products with many vectors are done as
// matrix-matrix products on row-major stacks of the vectors.
type system struct {
	n, d, np int
	rho      float64
	route    Route

	x  blas64.General    // n×d data (aliases the program's X)
	lm blas64.Triangular // Cholesky factor of M = I + XᵀX (d×d, lower)
	// gram is M itself, for the states that keep it (Gram).
	gram *Gram
	ls   blas64.Triangular // woodbury: Cholesky factor of S (n×n, lower)
	la   blas64.Triangular // direct: Cholesky factor of B_P + (2/ρ)ΦᵀΦ (dP×dP, lower)
	dm   []float64         // P×n: dm[i*n+k] = 1 if D_i[k] else 0

	// woodbury workspaces
	tp []float64 // P×n
	t  []float64 // n
	yw []float64 // P×d
	gw []float64 // split-k partial products of Φᵀt

	// cg workspaces: M (d×d), the CG vectors (P×d each) and the count of
	// CG iterations of the last solve.
	mfull            []float64
	cr, cz, cp, cq   []float64
	cgIters, cgTotal int

	// prof records the wall time of the set-up phases, for benchmarks.
	prof setupProfile
}

// Gram is the set-up's Gram matrix M = I + XᵀX (d×d, row-major) of the
// data X whose digest (floatbits.Rows) is Data. A saved state that carries
// it lets a resumed solver skip the product, O(nd²) and the largest part of
// the set-up at Table 2's size (0.1 s of a second's reopening); it is used
// only for data with the same digest, and recomputed otherwise.
type Gram struct {
	Data uint64
	M    []float64
}

// digest returns g.Data, the digest of x, computing it if unset.
func (g *Gram) digest(x blas64.General) uint64 {
	if g.Data == 0 {
		g.Data = floatbits.Rows(x.Data, x.Rows, x.Cols, x.Stride)
	}
	return g.Data
}

// gramState is the Gram matrix for a saved state, its digest computed on
// the first save (not at set-up, where nothing needs it).
func (s *system) gramState() *Gram {
	s.gram.digest(s.x)
	return s.gram
}

type setupProfile struct {
	gramSec, gramFlops float64 // M, and K∘C or the assembly of the dP×dP matrix
	cholSec, cholFlops float64 // Cholesky factorization of S or of the dP×dP matrix
}

// routeCost is the flop model used to choose the route. Level-2 flops
// (triangular solves with one right-hand side) are weighted by level2
// because they run at memory speed, about that many times slower than the
// matrix-matrix products.
type routeCost struct {
	setup, iter float64 // Gemm-equivalent flops
}

const level2 = 8

// routeCosts returns the set-up and per-iteration cost of both routes for
// data of n points in d dimensions and P patterns whose per-point active
// counts are c_k = |{i : D_i[k]}|. Counted (flops, multiply-add = 2):
//
//	common set-up       M = I + XᵀX: 2nd², its Cholesky d³/3
//	woodbury set-up     X L_M⁻ᵀ: nd², K∘C lower half: n²d, Cholesky of S: n³/3
//	woodbury iteration  2P d×d solve pairs with M: 4Pd², then Φq and Φᵀt: 4ndP,
//	                    S⁻¹ (two n×n triangular solves): 2n², M⁻¹ again: 2Pd²
//	direct set-up       Σ_{i≥j} Xᵀ D_iD_j X: 2d² Σ_k c_k(c_k+1)/2, Cholesky (dP)³/3
//	direct iteration    P solve pairs with M: 2Pd², two dP triangular solves: 2(dP)²
//
// The rest of an iteration (G u, Gᵀ[s; ν], X v for the objective: 16ndP,
// and O(nP + dP) elementwise work) is the same for both routes.
func routeCosts(n, d, np int, counts []int) (woodbury, direct routeCost) {
	fn, fd, fp := float64(n), float64(d), float64(np)
	common := 2*fn*fd*fd + fd*fd*fd/3
	woodbury.setup = common + fn*fd*fd + fn*fn*fd + fn*fn*fn/3
	woodbury.iter = 6*fp*fd*fd + 4*fn*fd*fp + level2*2*fn*fn
	var pairs float64
	for _, c := range counts {
		pairs += float64(c) * float64(c+1) / 2
	}
	dp := fd * fp
	direct.setup = common + 2*fd*fd*pairs + dp*dp*dp/3
	direct.iter = 2*fp*fd*fd + level2*2*dp*dp
	return woodbury, direct
}

// cgCost is the cost model of RouteCG: set-up M = I + XᵀX and its
// Cholesky factor (2nd² + d³/3); per iteration cgTypical CG steps, each
// a product with A_m (Φx and Φᵀt: 4ndP, B_P x: 2Pd²) and the
// preconditioner (two triangular solves with L_M: 2Pd²).
func cgCost(n, d, np int) routeCost {
	fn, fd, fp := float64(n), float64(d), float64(np)
	return routeCost{setup: 2*fn*fd*fd + fd*fd*fd/3, iter: cgTypical * (4*fn*fd*fp + 4*fp*fd*fd)}
}

// cgTypical is the CG steps of a warm-started u-update at the tolerances
// of cgTol in the first tens of ADMM iterations (8–17 on MNIST 2 vs 8,
// n = 11809, d = 785, P = 24).
const cgTypical = 15

// chooseRoute picks the route of least set-up + horizon × iteration
// cost. RouteCG must beat both factored routes by half: it solves the
// u-update inexactly, with tolerances that tighten as 1/k², so it is taken
// only for short runs on large data, where factoring costs more than all
// the iterations.
func chooseRoute(w, dr, cg routeCost, horizon int) Route {
	h := float64(horizon)
	best, route := w.setup+h*w.iter, RouteWoodbury
	if c := dr.setup + h*dr.iter; c <= best {
		best, route = c, RouteDirect
	}
	if 2*(cg.setup+h*cg.iter) < best {
		route = RouteCG
	}
	return route
}

// newSystem factors the u-update system for the given route (RouteAuto
// chooses by routeCosts over horizon iterations).
func newSystem(x blas64.General, pats solvers.Patterns, rho float64, route Route, horizon int, known *Gram, digest uint64) (*system, error) {
	n, d, np := x.Rows, x.Cols, len(pats)
	s := &system{n: n, d: d, np: np, rho: rho, x: x}
	words := (np + 63) / 64
	masks := make([]uint64, n*words)
	counts := make([]int, n)
	s.dm = make([]float64, np*n)
	for i, pat := range pats {
		for k, on := range pat {
			if on {
				s.dm[i*n+k] = 1
				masks[k*words+i/64] |= 1 << uint(i%64)
				counts[k]++
			}
		}
	}
	wc, dc := routeCosts(n, d, np, counts)
	switch route {
	case RouteAuto:
		route = chooseRoute(wc, dc, cgCost(n, d, np), horizon)
	case RouteWoodbury, RouteDirect, RouteCG:
	default:
		_, err := ParseRoute(string(route))
		return nil, err
	}
	s.route = route

	mg := blas64.General{Rows: d, Cols: d, Stride: d, Data: make([]float64, d*d)}
	s.gram = &Gram{Data: digest}
	if known != nil && len(known.M) == d*d && known.Data == s.gram.digest(x) {
		copy(mg.Data, known.M)
	} else {
		gemm(blas.Trans, blas.NoTrans, 1, x, x, mg, make([]float64, splitSize(d, d, n)))
		for j := 0; j < d; j++ {
			mg.Data[j*d+j]++
		}
	}
	mcopy := append([]float64(nil), mg.Data...)
	s.gram.M = mcopy
	l, ok := lapack64.Potrf(blas64.Symmetric{Uplo: blas.Lower, N: d, Stride: d, Data: mg.Data})
	if !ok {
		return nil, fmt.Errorf("admm: ADMM: I + XᵀX is not numerically positive definite (X has non-finite or huge entries?)")
	}
	s.lm = l

	var err error
	switch route {
	case RouteWoodbury:
		err = s.factorWoodbury(masks, words)
	case RouteDirect:
		err = s.factorDirect(mcopy, masks, words)
	case RouteCG:
		s.setupCG(mcopy)
	}
	if err != nil {
		return nil, err
	}
	return s, nil
}

func (s *system) factorWoodbury(masks []uint64, words int) error {
	n, d := s.n, s.d
	t0 := now()
	// Z = X L_M⁻ᵀ, so K = X M⁻¹ Xᵀ = Z Zᵀ.
	z := blas64.General{Rows: n, Cols: d, Stride: d, Data: make([]float64, n*d)}
	for k := 0; k < n; k++ {
		copy(z.Data[k*d:(k+1)*d], s.x.Data[k*s.x.Stride:k*s.x.Stride+d])
	}
	blas64.Trsm(blas.Right, blas.Trans, 1, s.lm, z)
	// Lower block triangle of K, one Gemm per block row.
	sd := make([]float64, n*n)
	const nb = 256
	for i0 := 0; i0 < n; i0 += nb {
		i1 := min(i0+nb, n)
		zi := blas64.General{Rows: i1 - i0, Cols: d, Stride: d, Data: z.Data[i0*d:]}
		zj := blas64.General{Rows: i1, Cols: d, Stride: d, Data: z.Data}
		c := blas64.General{Rows: i1 - i0, Cols: i1, Stride: n, Data: sd[i0*n:]}
		blas64.Gemm(blas.NoTrans, blas.Trans, 1, zi, zj, 0, c)
	}
	// S = (ρ/2) I + K∘C on and below the diagonal.
	half := s.rho / 2
	parallelRange(n, func(k0, k1 int) {
		for k := k0; k < k1; k++ {
			mk := masks[k*words : (k+1)*words]
			row := sd[k*n : k*n+k+1]
			for l := range row {
				ml := masks[l*words : (l+1)*words]
				c := 0
				for w, v := range mk {
					c += bits.OnesCount64(v & ml[w])
				}
				row[l] *= float64(c)
			}
			row[k] += half
		}
	})
	t1 := now()
	s.prof.gramSec, s.prof.gramFlops = t1-t0, float64(n)*float64(d)*float64(d)+float64(n)*float64(n)*float64(d)
	l, ok := lapack64.Potrf(blas64.Symmetric{Uplo: blas.Lower, N: n, Stride: n, Data: sd})
	if !ok {
		return fmt.Errorf("admm: ADMM: the %d×%d Woodbury matrix (ρ/2)I + K∘C is not numerically positive definite", n, n)
	}
	s.prof.cholSec, s.prof.cholFlops = now()-t1, float64(n)*float64(n)*float64(n)/3
	s.ls = l
	s.tp = make([]float64, s.np*n)
	s.t = make([]float64, n)
	s.yw = make([]float64, s.np*d)
	s.gw = make([]float64, splitSize(s.np, d, n))
	return nil
}

func (s *system) factorDirect(mm []float64, masks []uint64, words int) error {
	n, d, np := s.n, s.d, s.np
	dp := d * np
	t0 := now()
	a := make([]float64, dp*dp)
	gath := make([]float64, d*n)
	idx := make([]int, 0, n)
	scale := 2 / s.rho
	var flops float64
	for i := 0; i < np; i++ {
		for j := 0; j <= i; j++ {
			idx = idx[:0]
			wi, bi := i/64, uint64(1)<<uint(i%64)
			wj, bj := j/64, uint64(1)<<uint(j%64)
			for k := 0; k < n; k++ {
				if masks[k*words+wi]&bi != 0 && masks[k*words+wj]&bj != 0 {
					idx = append(idx, k)
				}
			}
			blk := blas64.General{Rows: d, Cols: d, Stride: dp, Data: a[i*d*dp+j*d:]}
			if c := len(idx); c > 0 {
				// Gather the rows of X where both patterns are active.
				for q, k := range idx {
					copy(gath[q*d:(q+1)*d], s.x.Data[k*s.x.Stride:k*s.x.Stride+d])
				}
				g := blas64.General{Rows: c, Cols: d, Stride: d, Data: gath}
				blas64.Gemm(blas.Trans, blas.NoTrans, scale, g, g, 0, blk)
				flops += 2 * float64(d) * float64(d) * float64(c)
			}
			if i == j {
				for r := 0; r < d; r++ {
					row := blk.Data[r*dp : r*dp+r+1]
					for q := range row {
						row[q] += mm[r*d+q]
					}
				}
			}
		}
	}
	t1 := now()
	s.prof.gramSec, s.prof.gramFlops = t1-t0, flops
	l, ok := lapack64.Potrf(blas64.Symmetric{Uplo: blas.Lower, N: dp, Stride: dp, Data: a})
	if !ok {
		return fmt.Errorf("admm: ADMM: the %d×%d matrix B + (2/ρ)ΦᵀΦ is not numerically positive definite", dp, dp)
	}
	s.prof.cholSec, s.prof.cholFlops = now()-t1, float64(dp)*float64(dp)*float64(dp)/3
	s.la = l
	return nil
}

// setupCG keeps M = I + XᵀX and allocates the workspaces of RouteCG.
func (s *system) setupCG(m []float64) {
	n, d, np := s.n, s.d, s.np
	s.mfull = m
	s.cr, s.cz, s.cp, s.cq = make([]float64, np*d), make([]float64, np*d), make([]float64, np*d), make([]float64, np*d)
	s.tp = make([]float64, np*n)
	s.t = make([]float64, n)
}

// cgTol returns the relative residual ‖e − A_m m‖ ≤ tol_k ‖e‖ at which
// RouteCG stops at ADMM iteration k: tol_k = 10⁻²/(k+1)², summable, so
// the inexact ADMM keeps the convergence of the exact one (Eckstein and
// Bertsekas 1992, Theorem 8), floored at 10⁻¹²; cgMax caps the CG
// iterations of one solve.
func cgTol(k int) float64 {
	kk := float64(k + 1)
	return math.Max(1e-12, 1e-2/(kk*kk))
}

const cgMax = 1000

// applyM sets q = A_m x = B_P x + (2/ρ) ΦᵀΦ x for x, q P×d row-major.
func (s *system) applyM(q, x []float64) {
	d, np := s.d, s.np
	xg := blas64.General{Rows: np, Cols: d, Stride: d, Data: x}
	qg := blas64.General{Rows: np, Cols: d, Stride: d, Data: q}
	// B_P x: rows x_i M.
	blas64.Gemm(blas.NoTrans, blas.NoTrans, 1, xg, blas64.General{Rows: d, Cols: d, Stride: d, Data: s.mfull}, 0, qg)
	t := s.phi(xg)
	// q += (2/ρ) Φᵀ t: rows (D_i t)ᵀ X.
	tp := s.maskedRows(t)
	blas64.Gemm(blas.NoTrans, blas.NoTrans, 2/s.rho, tp, s.x, 1, qg)
}

// phi returns t = Φ x = Σ_i D_i X x_i for x P×d, in s.t (s.tp is scratch).
func (s *system) phi(x blas64.General) []float64 {
	n, np := s.n, s.np
	tp := blas64.General{Rows: np, Cols: n, Stride: n, Data: s.tp}
	blas64.Gemm(blas.NoTrans, blas.Trans, 1, x, s.x, 0, tp)
	t := s.t
	copy(t, s.tp[:n])
	mul(t, s.dm[:n])
	for i := 1; i < np; i++ {
		addMasked(t, s.tp[i*n:(i+1)*n], s.dm[i*n:(i+1)*n])
	}
	return t
}

// maskedRows sets the rows of s.tp (P×n) to D_i t, the left factors of
// Φᵀ t = rows (D_i t)ᵀ X, and returns s.tp.
func (s *system) maskedRows(t []float64) blas64.General {
	n, np := s.n, s.np
	for i := 0; i < np; i++ {
		row, msk := s.tp[i*n:(i+1)*n], s.dm[i*n:(i+1)*n]
		for k, v := range t {
			row[k] = v * msk[k]
		}
	}
	return blas64.General{Rows: np, Cols: n, Stride: n, Data: s.tp}
}

// solveCG overwrites e (P×d) with the solution of A_m m = e by conjugate
// gradients preconditioned with B_P (two triangular solves with L_M per
// iteration), started from m0 (which may be s.cp: it is read before the
// first search direction is written there).
func (s *system) solveCG(e, m0 []float64, tol float64) {
	np, d := s.np, s.d
	r, z, p, q := s.cr, s.cz, s.cp, s.cq
	enorm := math.Sqrt(dot(e, e))
	// m = m0, r = e − A_m m0.
	s.applyM(q, m0)
	for j := range r {
		r[j] = e[j] - q[j]
	}
	copy(e, m0)
	m := e
	pre := func(dst, src []float64) {
		copy(dst, src)
		g := blas64.General{Rows: np, Cols: d, Stride: d, Data: dst}
		blas64.Trsm(blas.Right, blas.Trans, 1, s.lm, g)
		blas64.Trsm(blas.Right, blas.NoTrans, 1, s.lm, g)
	}
	pre(z, r)
	copy(p, z)
	rz := dot(r, z)
	it := 0
	for ; it < cgMax && math.Sqrt(dot(r, r)) > tol*enorm; it++ {
		s.applyM(q, p)
		alpha := rz / dot(p, q)
		for j := range m {
			m[j] += alpha * p[j]
			r[j] -= alpha * q[j]
		}
		pre(z, r)
		rzNew := dot(r, z)
		beta := rzNew / rz
		rz = rzNew
		for j := range p {
			p[j] = z[j] + beta*p[j]
		}
	}
	s.cgIters = it
	s.cgTotal += it
}

func dot(a, b []float64) float64 {
	var s float64
	for j, v := range a {
		s += v * b[j]
	}
	return s
}

// solve overwrites b (2P×d row-major: rows b_1 … b_P, c_1 … c_P) with
// A⁻¹ b. RouteCG starts its iteration from warm (the current iterate u,
// same layout: the m-part is m_i = u_i − z_i) and stops at the tolerance of
// ADMM iteration k (cgTol). It allocates nothing beyond what the BLAS
// does.
func (s *system) solve(b, warm []float64, k int) {
	d, np := s.d, s.np
	pd := np * d
	// h_i = b_i + c_i (rows 0…P−1), e_i = b_i − c_i (rows P…2P−1).
	for q := 0; q < pd; q++ {
		bi, ci := b[q], b[pd+q]
		b[q], b[pd+q] = bi+ci, bi-ci
	}
	if s.route == RouteCG {
		h := blas64.General{Rows: np, Cols: d, Stride: d, Data: b[:pd]}
		blas64.Trsm(blas.Right, blas.Trans, 1, s.lm, h)
		blas64.Trsm(blas.Right, blas.NoTrans, 1, s.lm, h)
		// m0 = u − z in the search-direction buffer, which solveCG reads
		// before its first direction overwrites it.
		m0 := s.cp
		for q := 0; q < pd; q++ {
			m0[q] = warm[q] - warm[pd+q]
		}
		s.solveCG(b[pd:2*pd], m0, cgTol(k))
	} else if s.route == RouteWoodbury {
		// B_P⁻¹ on both halves at once: rows ← rows M⁻¹ = rows L⁻ᵀ L⁻¹.
		all := blas64.General{Rows: 2 * np, Cols: d, Stride: d, Data: b}
		blas64.Trsm(blas.Right, blas.Trans, 1, s.lm, all)
		blas64.Trsm(blas.Right, blas.NoTrans, 1, s.lm, all)
		q := blas64.General{Rows: np, Cols: d, Stride: d, Data: b[pd:]}
		// r = Φ q, then t = S⁻¹ r.
		t := s.phi(q)
		blas64.Trsv(blas.NoTrans, s.ls, vec(t))
		blas64.Trsv(blas.Trans, s.ls, vec(t))
		// y = B_P⁻¹ Φᵀ t: rows (D_i t)ᵀ X, then M⁻¹.
		tp := s.maskedRows(t)
		yw := blas64.General{Rows: np, Cols: d, Stride: d, Data: s.yw}
		gemm(blas.NoTrans, blas.NoTrans, 1, tp, s.x, yw, s.gw)
		blas64.Trsm(blas.Right, blas.Trans, 1, s.lm, yw)
		blas64.Trsm(blas.Right, blas.NoTrans, 1, s.lm, yw)
		// m = q − y.
		m := b[pd : 2*pd]
		for j, v := range s.yw {
			m[j] -= v
		}
	} else {
		h := blas64.General{Rows: np, Cols: d, Stride: d, Data: b[:pd]}
		blas64.Trsm(blas.Right, blas.Trans, 1, s.lm, h)
		blas64.Trsm(blas.Right, blas.NoTrans, 1, s.lm, h)
		e := vec(b[pd : 2*pd])
		blas64.Trsv(blas.NoTrans, s.la, e)
		blas64.Trsv(blas.Trans, s.la, e)
	}
	// u_i = (p_i + m_i)/2, z_i = (p_i − m_i)/2.
	for q := 0; q < pd; q++ {
		p, m := b[q], b[pd+q]
		b[q], b[pd+q] = (p+m)/2, (p-m)/2
	}
}

// addMasked sets t_k ← t_k + a_k m_k.
func addMasked(t, a, m []float64) {
	a, m = a[:len(t)], m[:len(t)]
	for k := range t {
		t[k] += a[k] * m[k]
	}
}

// parallelRange splits [0, n) into GOMAXPROCS contiguous chunks of about
// equal triangular work (row k costs k) and runs f on them concurrently.
func parallelRange(n int, f func(k0, k1 int)) {
	w := runtime.GOMAXPROCS(0)
	if w < 2 || n < 256 {
		f(0, n)
		return
	}
	var wg sync.WaitGroup
	k0 := 0
	for c := 1; c <= w; c++ {
		// Rows [0, k) hold about k²/2 entries: cut at n·sqrt(c/w).
		k1 := n
		if c < w {
			k1 = int(float64(n) * math.Sqrt(float64(c)/float64(w)))
		}
		if k1 <= k0 {
			continue
		}
		wg.Add(1)
		go func(a, b int) {
			defer wg.Done()
			f(a, b)
		}(k0, k1)
		k0 = k1
	}
	wg.Wait()
}

var epoch = time.Now()

// now returns monotonic seconds.
func now() float64 { return time.Since(epoch).Seconds() }

// splitK is the chunk of the inner dimension in gemm. It is a
// constant, not derived from GOMAXPROCS, so results do not depend on the
// number of threads (exact resume on another machine).
const splitK = 2048

// splitSize returns the workspace gemm needs for an m×nn result
// with inner dimension k: 0 when the product is not split, which is always
// the case with OpenBLAS (it threads every product itself).
func splitSize(m, nn, k int) int {
	if solvers.BLAS() != solvers.GonumBLAS || blocks64(m)*blocks64(nn) >= 4 || k < 2*splitK {
		return 0
	}
	return (k + splitK - 1) / splitK * m * nn
}

func blocks64(m int) int { return (m + 63) / 64 }

// gemm sets C = alpha op(A) op(B) (op(A) m×k, op(B) k×nn, op the
// transpose for blas.Trans). gonum's Gemm runs in parallel over 64×64
// blocks of C only; when C has fewer than 4 such blocks and k is long
// (Gᵀ[s; ν] with small d and P, for example), the inner dimension is cut
// into fixed chunks whose products run concurrently into ws (splitSize)
// and are summed in order. The data X enters as itself (n×d, inner
// dimension n, transposed), never as a copy of Xᵀ.
func gemm(tA, tB blas.Transpose, alpha float64, a, b, c blas64.General, ws []float64) {
	m, nn, k := a.Rows, b.Cols, a.Cols
	if tA == blas.Trans {
		m, k = a.Cols, a.Rows
	}
	if tB == blas.Trans {
		nn = b.Rows
	}
	if splitSize(m, nn, k) == 0 {
		blas64.Gemm(tA, tB, alpha, a, b, 0, c)
		return
	}
	// inner is the part k0…k1 of op(M)'s inner dimension.
	inner := func(t blas.Transpose, mat blas64.General, k0, k1 int, left bool) blas64.General {
		if (t == blas.Trans) == left { // the inner dimension runs along rows
			return blas64.General{Rows: k1 - k0, Cols: mat.Cols, Stride: mat.Stride, Data: mat.Data[k0*mat.Stride:]}
		}
		return blas64.General{Rows: mat.Rows, Cols: k1 - k0, Stride: mat.Stride, Data: mat.Data[k0:]}
	}
	nch := (k + splitK - 1) / splitK
	sem := make(chan struct{}, runtime.GOMAXPROCS(0))
	var wg sync.WaitGroup
	for j := 0; j < nch; j++ {
		k0, k1 := j*splitK, min((j+1)*splitK, k)
		aj, bj := inner(tA, a, k0, k1, true), inner(tB, b, k0, k1, false)
		cj := blas64.General{Rows: m, Cols: nn, Stride: nn, Data: ws[j*m*nn : (j+1)*m*nn]}
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			blas64.Gemm(tA, tB, alpha, aj, bj, 0, cj)
		}()
	}
	wg.Wait()
	for r := 0; r < m; r++ {
		row := c.Data[r*c.Stride : r*c.Stride+nn]
		copy(row, ws[r*nn:(r+1)*nn])
		for j := 1; j < nch; j++ {
			part := ws[j*m*nn+r*nn : j*m*nn+(r+1)*nn]
			for q, v := range part {
				row[q] += v
			}
		}
	}
}

// transpose sets dst (c×r) to the transpose of src (r×c), both dense.
func transpose(dst, src []float64, r, c int) {
	for i := 0; i < r; i++ {
		row := src[i*c : (i+1)*c]
		for j, v := range row {
			dst[j*r+i] = v
		}
	}
}
