package ipm

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/convexnn/convexnn/solvers"
	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/gonum/floats"
	"gonum.org/v1/gonum/mat"
)

// L1Result is the outcome of SolveL1.
type L1Result struct {
	Status     Status
	Alpha      []float64 // the N weights
	Objective  float64   // ℓ(Hα) + β‖α‖₁ at Alpha
	Iterations int
	Seconds    float64
}

// L1MemoryEstimate returns the bytes SolveL1 allocates for an n×N feature
// matrix: the N×N matrix HᵀCH and its Cholesky factor, and the vectors.
func L1MemoryEstimate(n, nf int) int64 {
	return int64(8 * (2*float64(nf)*float64(nf) + 40*float64(nf) + 10*float64(n)))
}

// SolveL1 solves the ℓ₁-regularized program of the sampled convex program,
// eq. (SCP2),
//
//	minimize_α  ℓ(Hα) + β‖α‖₁,
//
// for a smooth loss ℓ (squared, BCE or logistic; solvers.Loss) of the
// labels y and an n×N matrix H, by the interior-point method of Solve on
// the cone QP in α = α⁺ − α⁻, α^± ≥ 0,
//
//	minimize  ½ŷᵀdiag(h)ŷ + rᵀŷ + β1ᵀ(α⁺ + α⁻),  ŷ = H(α⁺ − α⁻),
//
// the second-order model of ℓ (the squared loss itself: h = 1, r = −y),
// rebuilt at the iterate whenever it misses the loss's gradient there
// (‖Hᵀe‖∞ > Tol·β), as in Newton, so that it ends at the program's optimum.
// Its KKT systems reduce to one N×N system: with B = Hᵀdiag(h)H and the
// orthant scalings D₊, D₋ of α^±, (B + (D₊⁻¹ + D₋⁻¹)⁻¹)δ = … for
// δ = Δα⁺ − Δα⁻, by a Cholesky factorization per iteration (N³/3 flops; B
// is formed, nN² flops, when the model changes, which for the squared loss
// is never). The caller certifies
// the result (package scp: the duality gap of its dual-feasible point).
// A program whose matrices exceed the memory limit is refused first
// (L1MemoryEstimate).
func SolveL1(ctx context.Context, h *mat.Dense, y []float64, loss solvers.Loss, beta float64, o Options) (*L1Result, error) {
	start := time.Now()
	if h == nil {
		return nil, errors.New("ipm: SolveL1: no feature matrix")
	}
	n, nf := h.Dims()
	switch {
	case len(y) != n:
		return nil, fmt.Errorf("ipm: SolveL1: %d labels for %d rows of H", len(y), n)
	case !loss.Smooth():
		return nil, fmt.Errorf("ipm: SolveL1: the %v loss is not smooth (squared, bce or logistic)", loss)
	case !(beta > 0) || math.IsInf(beta, 0):
		return nil, fmt.Errorf("ipm: SolveL1: β = %v, need 0 < β < ∞", beta)
	}
	if err := solvers.CheckFinite("ipm: SolveL1: H", h); err != nil {
		return nil, err
	}
	for k, v := range y {
		if !loss.ValidLabel(v) {
			return nil, fmt.Errorf("ipm: SolveL1: y[%d] = %v: the %v loss needs labels %s", k, v, loss, loss.Labels())
		}
	}
	o, err := o.resolve()
	if err != nil {
		return nil, err
	}
	if err := o.fits(L1MemoryEstimate(n, nf), fmt.Sprintf("an N×N = %d×%d matrix and its factor", nf, nf), "use FISTA (scp.NewFISTA), which needs O(nN) memory"); err != nil {
		return nil, err
	}
	l := newL1Ops(h, y, loss, beta)
	l.setModel(make([]float64, n))
	cp := l.problem()
	at := make([]float64, n)
	alpha, yhat, e, he := make([]float64, nf), make([]float64, n), make([]float64, n), make([]float64, nf)
	cp.relinearize = func(x []float64, tau float64) (bool, error) {
		if loss == solvers.SquaredLoss {
			return false, nil // the model is the loss
		}
		l.alpha(alpha, x, tau)
		blas64.Gemv(blas.NoTrans, 1, l.h, blas64.Vector{N: nf, Inc: 1, Data: alpha}, 0, blas64.Vector{N: n, Inc: 1, Data: yhat})
		// The model's gradient error at the iterate, e = ∇ℓ(ŷ) − ∇model(ŷ),
		// measured where optimality looks at it: ‖Hᵀe‖∞ against β.
		loss.Grad(e, yhat, y)
		for k := range e {
			e[k] -= l.g[k] + l.w[k]*(yhat[k]-at[k])
		}
		blas64.Gemv(blas.Trans, 1, l.h, blas64.Vector{N: n, Inc: 1, Data: e}, 0, blas64.Vector{N: nf, Inc: 1, Data: he})
		if floats.Norm(he, math.Inf(1)) <= o.Tol*beta {
			return false, nil
		}
		copy(at, yhat)
		l.setModel(at)
		cp.offset = l.offset
		return true, nil
	}
	sol, err := solveCone(ctx, cp, o)
	if sol == nil {
		return nil, err
	}
	res := &L1Result{Status: sol.status, Iterations: sol.iters, Alpha: make([]float64, nf)}
	if len(sol.x) == 2*nf {
		l.alpha(res.Alpha, sol.x, 1)
	}
	clear(yhat)
	blas64.Gemv(blas.NoTrans, 1, l.h, blas64.Vector{N: nf, Inc: 1, Data: res.Alpha}, 0, blas64.Vector{N: n, Inc: 1, Data: yhat})
	res.Objective = loss.Value(yhat, y) + beta*floats.Norm(res.Alpha, 1)
	res.Seconds = time.Since(start).Seconds()
	return res, err
}

// l1Ops is the cone QP of SolveL1: x = (α⁺, α⁻), G = −I, h = 0, the
// orthant cone of dimension 2N.
type l1Ops struct {
	noEqualities
	h      blas64.General // n×N
	y      []float64
	loss   solvers.Loss
	beta   float64
	n, nf  int
	b      blas64.Symmetric // B = Hᵀdiag(w)H, lower
	m      blas64.Symmetric // B + E⁻¹
	fac    blas64.Symmetric // its Cholesky factor
	chol   blas64.Triangular
	c      []float64
	offset float64
	w      []float64      // the model's curvature
	g      []float64      // the model's gradient at its point
	r      []float64      // its linear coefficient g − diag(w)ŷ
	hs     blas64.General // n×N: the rows of H scaled by √w
	einv   []float64      // (D₊⁻¹ + D₋⁻¹)⁻¹
	d1, d2 []float64      // D₊, D₋
	t, u   []float64      // length N
	yh     []float64      // length n
}

func newL1Ops(h *mat.Dense, y []float64, loss solvers.Loss, beta float64) *l1Ops {
	n, nf := h.Dims()
	sym := func() blas64.Symmetric {
		return blas64.Symmetric{Uplo: blas.Lower, N: nf, Stride: nf, Data: make([]float64, nf*nf)}
	}
	v := func(k int) []float64 { return make([]float64, k) }
	return &l1Ops{h: h.RawMatrix(), y: y, loss: loss, beta: beta, n: n, nf: nf, b: sym(), m: sym(), fac: sym(),
		c: v(2 * nf), w: v(n), g: v(n), r: v(n), einv: v(nf), d1: v(nf), d2: v(nf), t: v(nf), u: v(nf), yh: v(n)}
}

// setModel builds the model of the loss at ŷ: B, c and the offset.
func (l *l1Ops) setModel(yhat []float64) {
	n, nf := l.n, l.nf
	g, r := l.g, l.r
	l.loss.Grad(g, yhat, l.y)
	l.loss.Curvature(l.w, yhat, l.y)
	wmax := floats.Max(l.w)
	for k := range l.w {
		l.w[k] = math.Max(l.w[k], 1e-12*wmax)
		r[k] = g[k] - l.w[k]*yhat[k]
	}
	l.offset = l.loss.Value(yhat, l.y) - floats.Dot(g, yhat) + 0.5*weightedSquare(l.w, yhat)
	// B = Hᵀdiag(w)H by a rank-n update with the rows scaled by √w.
	if l.hs.Data == nil { // kept: the model is rebuilt at most every iteration
		l.hs = blas64.General{Rows: n, Cols: nf, Stride: nf, Data: make([]float64, n*nf)}
	}
	hs := l.hs
	for k := 0; k < n; k++ {
		floats.ScaleTo(hs.Data[k*nf:(k+1)*nf], math.Sqrt(l.w[k]), l.h.Data[k*l.h.Stride:k*l.h.Stride+nf])
	}
	blas64.Syrk(blas.Trans, 1, hs, 0, l.b)
	hr := l.c[:nf]
	blas64.Gemv(blas.Trans, 1, l.h, blas64.Vector{N: n, Inc: 1, Data: r}, 0, blas64.Vector{N: nf, Inc: 1, Data: hr})
	for i := 0; i < nf; i++ {
		v := hr[i]
		l.c[i], l.c[nf+i] = v+l.beta, -v+l.beta
	}
}

func (l *l1Ops) problem() *coneProblem {
	return &coneProblem{c: l.c, h: make([]float64, 2*l.nf), b: []float64{}, k: Cone{Orthant: 2 * l.nf}, offset: l.offset, ops: l}
}

// alpha sets a = (x⁺ − x⁻)/τ.
func (l *l1Ops) alpha(a, x []float64, tau float64) {
	for i := range a {
		a[i] = (x[i] - x[l.nf+i]) / tau
	}
}

// symv sets out = B·v.
func (l *l1Ops) symv(out, v []float64) {
	blas64.Symv(1, l.b, blas64.Vector{N: l.nf, Inc: 1, Data: v}, 0, blas64.Vector{N: l.nf, Inc: 1, Data: out})
}

func (l *l1Ops) mulQ(out, x []float64) {
	nf := l.nf
	for i := 0; i < nf; i++ {
		l.t[i] = x[i] - x[nf+i]
	}
	l.symv(l.u, l.t)
	for i, v := range l.u {
		out[i], out[nf+i] = v, -v
	}
}

func (l *l1Ops) mulG(out, x []float64, alpha, beta float64) {
	for i := range out {
		out[i] = beta*out[i] - alpha*x[i]
	}
}

func (l *l1Ops) mulGT(out, z []float64, alpha, beta float64) {
	for i := range out {
		out[i] = beta*out[i] - alpha*z[i]
	}
}

// factor factors B + E⁻¹, E = D₊⁻¹ + D₋⁻¹ with D_± = W⁻² on α^±.
func (l *l1Ops) factor(w *ntScaling) error {
	nf := l.nf
	for i := 0; i < nf; i++ {
		a, b := w.d[i], w.d[nf+i]
		l.d1[i], l.d2[i] = 1/(a*a), 1/(b*b)
		l.einv[i] = 1 / (a*a + b*b)
	}
	for i := 0; i < nf; i++ {
		copy(l.m.Data[i*nf:i*nf+i+1], l.b.Data[i*nf:i*nf+i+1])
		l.m.Data[i*nf+i] += l.einv[i]
	}
	t, ok := cholesky(l.m, l.fac)
	if !ok {
		return errors.New("ipm: SolveL1: the reduced KKT matrix is not positive definite")
	}
	l.chol = t
	return nil
}

// solve: (Q + D)x' = x − Dz with D = W⁻², then z' = −D(z + x'); (Q + D)
// is solved through δ = x'₊ − x'₋: (B + E⁻¹)δ = E⁻¹(D₊⁻¹b₊ − D₋⁻¹b₋),
// x'₊ = D₊⁻¹(b₊ − Bδ), x'₋ = D₋⁻¹(b₋ + Bδ).
func (l *l1Ops) solve(x, y, z []float64) error {
	nf := l.nf
	b1, b2 := x[:nf], x[nf:]
	for i := 0; i < nf; i++ {
		b1[i] -= l.d1[i] * z[i]
		b2[i] -= l.d2[i] * z[nf+i]
		l.t[i] = l.einv[i] * (b1[i]/l.d1[i] - b2[i]/l.d2[i])
	}
	blas64.Trsv(blas.NoTrans, l.chol, blas64.Vector{N: nf, Inc: 1, Data: l.t})
	blas64.Trsv(blas.Trans, l.chol, blas64.Vector{N: nf, Inc: 1, Data: l.t})
	l.symv(l.u, l.t)
	for i := 0; i < nf; i++ {
		b1[i] = (b1[i] - l.u[i]) / l.d1[i]
		b2[i] = (b2[i] + l.u[i]) / l.d2[i]
	}
	for i := range z {
		z[i] = -(z[i] + x[i]) * wInv2(l, i)
	}
	return nil
}

func wInv2(l *l1Ops, i int) float64 {
	if i < l.nf {
		return l.d1[i]
	}
	return l.d2[i-l.nf]
}
