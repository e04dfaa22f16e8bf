package scp

import (
	"errors"
	"fmt"
	"math"

	"github.com/convexnn/convexnn/solvers"
	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/gonum/floats"
	"gonum.org/v1/gonum/mat"
)

// FeatureMatrix is the n×N feature matrix H = (XU)_+ of eq. (SCP2) seen only
// through its products, so the first-order solvers run on float64 or float32
// storage alike. MulVec sets dst = Hx (len(dst) = n, len(x) = N); MulTransVec
// sets dst = Hᵀx (len(dst) = N, len(x) = n).
type FeatureMatrix interface {
	Dims() (int, int)
	MulVec(dst, x []float64)
	MulTransVec(dst, x []float64)
}

// DenseFeatures is a FeatureMatrix backed by a float64 *mat.Dense.
type DenseFeatures struct{ M *mat.Dense }

// NewDenseFeatures wraps h.
func NewDenseFeatures(h *mat.Dense) *DenseFeatures { return &DenseFeatures{M: h} }

// Dims returns the shape of the wrapped matrix.
func (d *DenseFeatures) Dims() (int, int) { return d.M.Dims() }

// MulVec sets dst = Hx.
func (d *DenseFeatures) MulVec(dst, x []float64) {
	blas64.Gemv(blas.NoTrans, 1, d.M.RawMatrix(), vec(x), 0, vec(dst))
}

// MulTransVec sets dst = Hᵀx.
func (d *DenseFeatures) MulTransVec(dst, x []float64) {
	blas64.Gemv(blas.Trans, 1, d.M.RawMatrix(), vec(x), 0, vec(dst))
}

// Features32 stores H = (XU)_+ row-major in float32: N rows (data points),
// M columns (neurons), entry (i, j) at Data[i*M+j]. Products accumulate in
// float64.
type Features32 struct {
	N, M int
	Data []float32
}

// features32Block is the largest number of rows whose float64 product X·U is
// formed at once by NewFeatures32.
const features32Block = 1024

// NewFeatures32 computes (XU)_+ in row blocks of at most 1024 rows, so the
// only float64 temporary is a block of ≤ 1024×N entries.
func NewFeatures32(x, u *mat.Dense) (*Features32, error) {
	if x == nil || u == nil {
		return nil, errors.New("scp: NewFeatures32 needs X and U")
	}
	n, d := x.Dims()
	du, m := u.Dims()
	if d != du {
		return nil, fmt.Errorf("scp: X has %d columns but the neurons have dimension %d", d, du)
	}
	f := &Features32{N: n, M: m, Data: make([]float32, n*m)}
	bs := features32Block
	if n < bs {
		bs = n
	}
	buf := make([]float64, bs*m)
	for r0 := 0; r0 < n; r0 += bs {
		r1 := r0 + bs
		if r1 > n {
			r1 = n
		}
		rows := r1 - r0
		blk := mat.NewDense(rows, m, buf[:rows*m])
		blk.Mul(x.Slice(r0, r1, 0, d), u)
		out := f.Data[r0*m : r1*m]
		for k, v := range buf[:rows*m] {
			if v > 0 {
				out[k] = float32(v)
			} else {
				out[k] = 0
			}
		}
	}
	return f, nil
}

// Dims returns (N, M).
func (f *Features32) Dims() (int, int) { return f.N, f.M }

// MulVec sets dst = Hx with float64 accumulation.
func (f *Features32) MulVec(dst, x []float64) {
	m := f.M
	for i := 0; i < f.N; i++ {
		row := f.Data[i*m : i*m+m]
		var s float64
		for j, h := range row {
			s += float64(h) * x[j]
		}
		dst[i] = s
	}
}

// MulTransVec sets dst = Hᵀx with float64 accumulation.
func (f *Features32) MulTransVec(dst, x []float64) {
	m := f.M
	for j := range dst[:m] {
		dst[j] = 0
	}
	for i := 0; i < f.N; i++ {
		xi := x[i]
		if xi == 0 {
			continue
		}
		row := f.Data[i*m : i*m+m]
		for j, h := range row {
			dst[j] += float64(h) * xi
		}
	}
}

// FeatureBytes returns the storage of an n×N feature matrix in float64 or,
// when float32 is true, in float32.
func FeatureBytes(n, N int, float32 bool) int64 {
	b := int64(8)
	if float32 {
		b = 4
	}
	return int64(n) * int64(N) * b
}

func fmtGB(b int64) string {
	v := math.Round(float64(b)/1e8) / 10
	if v == 0 && b > 0 {
		return fmt.Sprintf("%.2g GB", float64(b)/1e9)
	}
	return fmt.Sprintf("%g GB", v)
}

// CheckFeatureMemory refuses (with the estimate in the message) a feature
// matrix whose float64 storage exceeds limitBytes.
func CheckFeatureMemory(n, N int, limitBytes int64) error {
	if n < 1 || N < 1 {
		return fmt.Errorf("scp: feature matrix %d×%d, need n ≥ 1 and N ≥ 1", n, N)
	}
	if limitBytes <= 0 {
		return fmt.Errorf("scp: memory limit %d bytes, need > 0", limitBytes)
	}
	b64 := FeatureBytes(n, N, false)
	if b64 <= limitBytes {
		return nil
	}
	entries := int64(n) * int64(N)
	es := fmt.Sprintf("%d", entries)
	if entries >= 1e6 {
		es = fmt.Sprintf("%.0f million", float64(entries)/1e6)
	}
	return fmt.Errorf("scp: the feature matrix (XU)_+ is n×N = %d×%d = %s entries: %s in float64, %s in float32; limit %s: use fewer neurons, float32 features, or more memory",
		n, N, es, fmtGB(b64), fmtGB(FeatureBytes(n, N, true)), fmtGB(limitBytes))
}

// BCELasso is eq. (SCP2) with the paper's binary cross-entropy loss for a
// tanh output, labels y_k ∈ {0, 1}:
//
//	minimize_α  F(α) = ℓ(Hα, y) + β‖α‖₁,
//	ℓ(ŷ, y) = (1/n) Σ_k (−2ŷ_k y_k + log(e^{2ŷ_k} + 1)).
//
// Writing c_k = 2(1 − 2y_k) ∈ {±2}, each term is f_k(z) = log(1 + e^{c_k z}),
// with f_k'(z) = c_k σ(c_k z).
//
// Dual. With the conjugate f_k*(s) = p log p + (1−p) log(1−p),
// p = s/c_k ∈ [0, 1] (the negative binary entropy; +∞ outside), Fenchel
// duality gives
//
//	max_v  −ℓ*(v) = −(1/n) Σ_k f_k*(n v_k)   s.t.  ‖Hᵀv‖∞ ≤ β,
//
// and at a solution v = ∇ℓ(Hα*). DualityGap scales v = ∇ℓ(Hα) by
// s = min(1, β/‖Hᵀv‖∞); since 0 is an endpoint of each domain interval the
// scaled point stays feasible, with p_k = s σ(c_k ŷ_k).
type BCELasso struct {
	H    FeatureMatrix
	Y    []float64
	Beta float64
}

// Validate reports shape, label and parameter errors.
func (p *BCELasso) Validate() error {
	if p.H == nil {
		return errors.New("scp: BCE problem has no feature matrix")
	}
	if d, ok := p.H.(*DenseFeatures); ok && d.M == nil {
		return errors.New("scp: BCE problem has no feature matrix")
	}
	n, m := p.H.Dims()
	if n < 1 || m < 1 {
		return fmt.Errorf("scp: feature matrix is %d×%d", n, m)
	}
	if err := checkLabels(n, p.Y, p.Beta, func(k int, v float64) error {
		if v != 0 && v != 1 {
			return fmt.Errorf("scp: BCE label y[%d] = %v, labels must be 0 or 1", k, v)
		}
		return nil
	}); err != nil {
		return err
	}
	if d, ok := p.H.(*DenseFeatures); ok {
		return solvers.CheckFinite("scp: H", d.M)
	}
	if f, ok := p.H.(*Features32); ok {
		if len(f.Data) != f.N*f.M {
			return fmt.Errorf("scp: Features32 holds %d values for %d×%d", len(f.Data), f.N, f.M)
		}
		for i, v := range f.Data {
			if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
				return fmt.Errorf("scp: H entry %d is %v", i, v)
			}
		}
	}
	return nil
}

func (p *BCELasso) c(k int) float64 { return 2 - 4*p.Y[k] }

// Loss returns ℓ(ŷ, y).
func (p *BCELasso) Loss(yhat []float64) float64 {
	var s float64
	for k, v := range yhat {
		s += solvers.Softplus(p.c(k) * v)
	}
	return s / float64(len(yhat))
}

// LossGrad sets dst = ∇ℓ(ŷ) = (c_k σ(c_k ŷ_k) / n)_k.
func (p *BCELasso) LossGrad(dst, yhat []float64) {
	inv := 1 / float64(len(yhat))
	for k, v := range yhat {
		c := p.c(k)
		dst[k] = c * solvers.Logistic(c*v) * inv
	}
}

// bregman returns ℓ(a) − ℓ(b) − ⟨∇ℓ(b), a − b⟩ computed termwise without the
// cancellation of the direct formula.
func (p *BCELasso) bregman(a, b []float64) float64 {
	var s float64
	for k := range a {
		c := p.c(k)
		d := c * (a[k] - b[k])
		sg := solvers.Logistic(c * b[k])
		if math.Abs(d) <= 1 {
			s += math.Log1p(sg*math.Expm1(d)) - sg*d
		} else {
			s += solvers.Softplus(c*a[k]) - solvers.Softplus(c*b[k]) - sg*d
		}
	}
	return s / float64(len(a))
}

// Objective returns F(α).
func (p *BCELasso) Objective(alpha []float64) float64 { return objective(p, alpha) }

// DualityGap returns F(α) − D(v) for the scaled dual point described on
// BCELasso; it bounds F(α) − F(α*) and vanishes at a solution.
func (p *BCELasso) DualityGap(alpha []float64) float64 { return dualityGap(p, alpha) }

// dual returns the dual objective −ℓ*(s v) at v = ∇ℓ(r), scaled into the
// dual feasible set by s = min(1, β/‖g‖∞), given g = Hᵀv. By weak duality it
// is a lower bound on min F for every r.
func (p *BCELasso) dual(r, g []float64) float64 {
	s := dualScale(g, p.Beta)
	var conj float64
	for k, yk := range r {
		t := s * solvers.Logistic(p.c(k)*yk)
		if t > 0 {
			conj += t * math.Log(t)
		}
		if t < 1 {
			conj += (1 - t) * math.Log1p(-t)
		}
	}
	return -conj / float64(len(r))
}

// FeatureLasso is the squared-loss program ½‖Hα − y‖² + β‖α‖₁ of Lasso on a
// FeatureMatrix (for example float32 features).
type FeatureLasso struct {
	H    FeatureMatrix
	Y    []float64
	Beta float64
}

// Validate reports shape, finiteness and parameter errors.
func (p *FeatureLasso) Validate() error {
	if p.H == nil {
		return errors.New("scp: lasso has no feature matrix")
	}
	n, _ := p.H.Dims()
	return checkLabels(n, p.Y, p.Beta, finiteLabel)
}

// Loss returns ½‖ŷ − y‖².
func (p *FeatureLasso) Loss(yhat []float64) float64 {
	var s float64
	for k, v := range yhat {
		d := v - p.Y[k]
		s += d * d
	}
	return s / 2
}

// LossGrad sets dst = ŷ − y.
func (p *FeatureLasso) LossGrad(dst, yhat []float64) {
	for k, v := range yhat {
		dst[k] = v - p.Y[k]
	}
}

func (p *FeatureLasso) bregman(a, b []float64) float64 {
	var s float64
	for k := range a {
		d := a[k] - b[k]
		s += d * d
	}
	return s / 2
}

// Objective returns F(α).
func (p *FeatureLasso) Objective(alpha []float64) float64 { return objective(p, alpha) }

// DualityGap is Lasso.DualityGap on a FeatureMatrix.
func (p *FeatureLasso) DualityGap(alpha []float64) float64 { return dualityGap(p, alpha) }

// dual returns D(θ) = ½‖y‖² − ½‖y − θ‖² at θ = −s(r − y), the residual of r
// scaled into the dual feasible set ‖Hᵀθ‖∞ ≤ β by s = min(1, β/‖g‖∞), given
// g = Hᵀ(r − y). By weak duality it is a lower bound on min F for every r.
func (p *FeatureLasso) dual(r, g []float64) float64 {
	return squaredDual(p.Y, dualScale(g, p.Beta), func(k int) float64 { return r[k] - p.Y[k] })
}

// smoothProblem is what the FeatureMatrix FISTA needs of a loss.
type smoothProblem interface {
	Validate() error
	Loss(yhat []float64) float64
	LossGrad(dst, yhat []float64)
	bregman(a, b []float64) float64
	dual(r, g []float64) float64
	features() FeatureMatrix
	beta() float64
}

func (p *BCELasso) features() FeatureMatrix     { return p.H }
func (p *BCELasso) beta() float64               { return p.Beta }
func (p *FeatureLasso) features() FeatureMatrix { return p.H }
func (p *FeatureLasso) beta() float64           { return p.Beta }

// fistaFM is FISTA with backtracking and restart (as FISTA in lasso.go) for a
// smooth loss of Hα plus β‖α‖₁ with H a FeatureMatrix, arranged for feature
// matrices too large for cache, where every product with H is a pass over
// memory: one iteration costs one product Hᵀv and one product Hz (plus one
// Hz per backtracking doubling of L).
//
//   - The extrapolated prediction is not recomputed: H y = Hα_k +
//     m_k(Hα_k − Hα_{k−1}) from the stored predictions of the last two
//     iterates (they are products of the same vectors, so a resumed solve
//     recomputes them bit for bit).
//   - The reported duality gap is F(α_{k+1}) − D(s∇ℓ(Hy)): the dual point is
//     built from the gradient already computed at the extrapolated point, so
//     the gap costs no product; weak duality keeps it an upper bound on
//     F(α_{k+1}) − min F, and it vanishes at the solution.
type fistaFM struct {
	prob   smoothProblem
	State  FISTAState
	Shrink float64 // factor in (0,1] applied to L before each step; 0 means 0.9

	ra, rp  []float64 // Hα_k and Hα_{k−1}
	ry, rz  []float64 // Hy and Hz
	v       []float64
	g, y, z []float64
}

func newFistaFM(p smoothProblem, st *FISTAState) (*fistaFM, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	n, m := p.features().Dims()
	state, err := initialState(st, m)
	if err != nil {
		return nil, err
	}
	f := &fistaFM{prob: p, State: state}
	makeZeros(n, &f.ra, &f.rp, &f.ry, &f.rz, &f.v)
	makeZeros(m, &f.g, &f.y, &f.z)
	if st == nil {
		f.State.Obj = p.Loss(f.ra) // α = 0: Hα = 0
		return f, nil
	}
	p.features().MulVec(f.ra, f.State.Alpha)
	p.features().MulVec(f.rp, f.State.Prev)
	return f, nil
}

func (f *fistaFM) step() FISTAStep {
	p, s := f.prob, &f.State
	H, beta := p.features(), p.beta()
	tNext, mom := s.extrapolate(f.y)
	for k := range f.ry {
		f.ry[k] = f.ra[k] + mom*(f.ra[k]-f.rp[k])
	}
	p.LossGrad(f.v, f.ry)
	H.MulTransVec(f.g, f.v) // ∇(ℓ∘H)(y) = Hᵀ∇ℓ(Hy)
	dualY := p.dual(f.ry, f.g)
	L := s.L * shrinkFactor(f.Shrink)
	var proxNorm float64
	for {
		quad := proxStep(f.z, f.y, f.g, L, beta)
		H.MulVec(f.rz, f.z)
		// Sufficient decrease ℓ(Hz) ≤ ℓ(Hy) + ⟨∇, z − y⟩ + (L/2)‖z − y‖²,
		// with the left-minus-linear part evaluated as a termwise Bregman
		// divergence to avoid cancellation near the optimum.
		if d := p.bregman(f.rz, f.ry); d <= 0.5*L*quad || quad == 0 || L > 1e300 {
			proxNorm = L * math.Sqrt(quad)
			break
		}
		L *= 2
	}
	objZ := p.Loss(f.rz) + beta*floats.Norm(f.z, 1)
	restarted, nnz := s.accept(f.z, f.y, objZ, tNext, L)
	f.ra, f.rp, f.rz = f.rz, f.ra, f.rp
	return FISTAStep{Iter: s.Iter, Objective: objZ, Gap: objZ - dualY, ProxGrad: proxNorm, Restarted: restarted, Nonzeros: nnz}
}

// fistaSolver is fistaFM with its problem: FISTABCE and FISTAFeatures.
type fistaSolver[P smoothProblem] struct {
	Problem P
	*fistaFM
}

// newFISTASolver starts fistaFM on p at α = 0, or continues from a saved
// state when st is not nil.
func newFISTASolver[P smoothProblem](p P, st *FISTAState) (*fistaSolver[P], error) {
	f, err := newFistaFM(p, st)
	if err != nil {
		return nil, err
	}
	return &fistaSolver[P]{Problem: p, fistaFM: f}, nil
}

// Step performs one iteration. It allocates nothing.
func (f *fistaSolver[P]) Step() FISTAStep { return f.step() }

// FISTABCE solves a BCELasso by FISTA with backtracking on L and
// function-value / gradient-mapping restart, exactly as FISTA does for Lasso;
// the step reports the BCE duality gap of BCELasso. Its field Problem is
// the problem, State the iteration state (and Shrink the factor in (0,1]
// applied to L before each step; 0 means 0.9); its Step method performs one
// iteration and allocates nothing.
type FISTABCE = fistaSolver[*BCELasso]

// NewFISTABCE starts at α = 0, or continues from a saved state when st is not
// nil.
func NewFISTABCE(p *BCELasso, st *FISTAState) (*FISTABCE, error) {
	if p == nil {
		return nil, errors.New("scp: nil BCE problem")
	}
	return newFISTASolver(p, st)
}

// FISTAFeatures solves a FeatureLasso (squared loss on any FeatureMatrix, e.g.
// Features32) by the same FISTA, with the same fields and Step method as
// FISTABCE.
type FISTAFeatures = fistaSolver[*FeatureLasso]

// NewFISTAFeatures starts at α = 0, or continues from st when not nil.
func NewFISTAFeatures(p *FeatureLasso, st *FISTAState) (*FISTAFeatures, error) {
	if p == nil {
		return nil, errors.New("scp: nil lasso problem")
	}
	return newFISTASolver(p, st)
}
