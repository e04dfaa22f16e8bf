package scp

import (
	"fmt"
	"math"

	"math/rand/v2"

	"github.com/convexnn/convexnn/solvers"
	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/gonum/floats"
	"gonum.org/v1/gonum/mat"
)

// SampleSphere returns a d×N matrix whose columns u_1 … u_N are drawn
// independently and uniformly on the unit sphere S^{d-1}: u = g/‖g‖₂ with
// g ~ N(0, I_d), the one-shot sampling of the appendix "SCP-based convex
// training". The same seed gives the same matrix.
func SampleSphere(d, n int, seed uint64) (*mat.Dense, error) {
	if d < 1 {
		return nil, fmt.Errorf("scp: sphere dimension d=%d, need d ≥ 1", d)
	}
	if n < 1 {
		return nil, fmt.Errorf("scp: number of neurons N=%d, need N ≥ 1", n)
	}
	rng := rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15))
	u := mat.NewDense(d, n, nil)
	col := make([]float64, d)
	for j := 0; j < n; j++ {
		for {
			for i := range col {
				col[i] = rng.NormFloat64()
			}
			if nrm := floats.Norm(col, 2); nrm > 1e-12 {
				floats.Scale(1/nrm, col)
				break
			}
		}
		u.SetCol(j, col)
	}
	return u, nil
}

// ReLUFeatures returns H = [(X u_1)_+ … (X u_N)_+], the n×N feature matrix of
// eq. (SCP2): row k holds the hidden-layer outputs for data point x_k.
func ReLUFeatures(x, u *mat.Dense) (*mat.Dense, error) {
	n, d := x.Dims()
	du, m := u.Dims()
	if d != du {
		return nil, fmt.Errorf("scp: X has %d columns but the neurons have dimension %d", d, du)
	}
	h := mat.NewDense(n, m, nil)
	h.Mul(x, u)
	raw := h.RawMatrix()
	for i := 0; i < n; i++ {
		row := raw.Data[i*raw.Stride : i*raw.Stride+m]
		for j, v := range row {
			if v < 0 {
				row[j] = 0
			}
		}
	}
	return h, nil
}

// Lasso is the squared-loss sampled convex program, eq. (SCP2) with
// ℓ(ŷ, y) = ½‖ŷ − y‖²:
//
//	minimize_α  F(α) = ½‖Hα − y‖² + β‖α‖₁,
//
// with H the n×N ReLU feature matrix of the sampled neurons.
type Lasso struct {
	H    *mat.Dense
	Y    []float64
	Beta float64
}

// Validate reports shape, finiteness and parameter errors: those of the
// same program as a FeatureLasso, and non-finite entries of H.
func (p *Lasso) Validate() error {
	var h FeatureMatrix // a nil H stays a nil FeatureMatrix
	if p.H != nil {
		h = NewDenseFeatures(p.H)
	}
	if err := (&FeatureLasso{H: h, Y: p.Y, Beta: p.Beta}).Validate(); err != nil {
		return err
	}
	return solvers.CheckFinite("scp: H", p.H)
}

// Objective returns F(α).
func (p *Lasso) Objective(alpha []float64) float64 {
	r := make([]float64, len(p.Y))
	return p.smooth(alpha, r) + p.Beta*floats.Norm(alpha, 1)
}

// smooth returns ½‖Hα − y‖² and leaves the residual Hα − y in r.
func (p *Lasso) smooth(alpha, r []float64) float64 {
	copy(r, p.Y)
	blas64.Gemv(blas.NoTrans, 1, p.H.RawMatrix(), vec(alpha), -1, vec(r))
	return 0.5 * floats.Dot(r, r)
}

// DualityGap returns F(α) − D(θ) for the dual-feasible point θ obtained by
// scaling the residual y − Hα into {θ : ‖Hᵀθ‖∞ ≤ β}, where
// D(θ) = ½‖y‖² − ½‖y − θ‖². The gap bounds F(α) − F(α*) from above and is zero
// exactly at a solution.
func (p *Lasso) DualityGap(alpha []float64) float64 {
	n, m := p.H.Dims()
	r := make([]float64, n)
	g := make([]float64, m)
	return p.gap(alpha, r, g)
}

func (p *Lasso) gap(alpha, r, g []float64) float64 {
	f := p.smooth(alpha, r) // r = Hα − y
	primal := f + p.Beta*floats.Norm(alpha, 1)
	blas64.Gemv(blas.Trans, 1, p.H.RawMatrix(), vec(r), 0, vec(g))
	// θ = −s r = s (y − Hα); D(θ) = ½‖y‖² − ½‖y − θ‖².
	return primal - squaredDual(p.Y, dualScale(g, p.Beta), func(k int) float64 { return r[k] })
}

// FISTAState is the complete iteration state of FISTA on a Lasso; a solve
// continued from a saved FISTAState takes exactly the steps the uninterrupted
// solve would have taken.
type FISTAState struct {
	Iter  int       // finished iterations
	Alpha []float64 // current iterate α_k
	Prev  []float64 // previous iterate α_{k-1}
	T     float64   // momentum parameter t_k
	L     float64   // current Lipschitz estimate (step 1/L)
	Obj   float64   // F(α_k)
}

// extrapolate sets y to the extrapolated point
// y = α_k + m(α_k − α_{k−1}) with the momentum m = (t_k − 1)/t_{k+1},
// t_{k+1} = (1 + √(1 + 4t_k²))/2, and returns t_{k+1} and m.
func (s *FISTAState) extrapolate(y []float64) (tNext, mom float64) {
	tNext = (1 + math.Sqrt(1+4*s.T*s.T)) / 2
	mom = (s.T - 1) / tNext
	for j := range y {
		y[j] = s.Alpha[j] + mom*(s.Alpha[j]-s.Prev[j])
	}
	return tNext, mom
}

// shrinkFactor returns the factor applied to L before each step: shrink when
// it lies in (0, 1], otherwise 0.9.
func shrinkFactor(shrink float64) float64 {
	if shrink <= 0 || shrink > 1 {
		return 0.9
	}
	return shrink
}

// accept makes z the new iterate α_{k+1} after a step from the extrapolated
// point y. Adaptive restart (O'Donoghue and Candès) drops the momentum when
// F increased or the gradient-mapping test ⟨y − z, z − α_k⟩ > 0 says the
// momentum points against the prox-gradient step. It returns whether it
// restarted and the number of non-zero weights.
func (s *FISTAState) accept(z, y []float64, objZ, tNext, L float64) (restarted bool, nnz int) {
	var dir float64
	for j := range z {
		dir += (y[j] - z[j]) * (z[j] - s.Alpha[j])
	}
	if objZ > s.Obj || dir > 0 {
		restarted, tNext = true, 1
	}
	copy(s.Prev, s.Alpha)
	copy(s.Alpha, z)
	s.T, s.L, s.Obj = tNext, L, objZ
	s.Iter++
	for _, v := range s.Alpha {
		if v != 0 {
			nnz++
		}
	}
	return restarted, nnz
}

// FISTAStep is what one iteration reports.
type FISTAStep struct {
	Iter      int
	Objective float64 // F(α_k)
	Gap       float64 // duality gap at α_k
	ProxGrad  float64 // ‖L(α_k − prox(y_k − ∇f(y_k)/L))‖₂, the prox-gradient norm at the extrapolated point
	Restarted bool    // the momentum was reset because F increased
	Nonzeros  int     // |{j : α_j ≠ 0}|
}

// FISTA solves a Lasso by the fast iterative shrinkage-thresholding algorithm
// of Beck and Teboulle with backtracking on L (the step 1/L doubles L until
// the quadratic upper bound holds, and L shrinks by Shrink at the start of
// each step so the step can grow again) and function-value adaptive restart
// (O'Donoghue and Candès): when F(α_k) > F(α_{k−1}) the momentum is reset.
// The ISTA update is α⁺ = prox_{β/L‖·‖₁}(y − ∇f(y)/L), with the
// soft-threshold prox sgn(·)max(|·| − β/L, 0).
type FISTA struct {
	Problem *Lasso
	State   FISTAState
	Shrink  float64 // factor in (0,1] applied to L before each step; 0 means 0.9

	r, rz, g, y, z []float64
}

// NewFISTA starts FISTA at α = 0, or continues from a saved state when st is
// not nil.
func NewFISTA(p *Lasso, st *FISTAState) (*FISTA, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	n, m := p.H.Dims()
	state, err := initialState(st, m)
	if err != nil {
		return nil, err
	}
	f := &FISTA{Problem: p, State: state}
	if st == nil {
		f.State.Obj = p.Objective(f.State.Alpha)
	}
	makeZeros(n, &f.r, &f.rz)
	makeZeros(m, &f.g, &f.y, &f.z)
	return f, nil
}

// Step performs one FISTA iteration. It allocates nothing.
func (f *FISTA) Step() FISTAStep {
	p, s := f.Problem, &f.State
	tNext, _ := s.extrapolate(f.y)
	p.smooth(f.y, f.r)
	blas64.Gemv(blas.Trans, 1, p.H.RawMatrix(), vec(f.r), 0, vec(f.g)) // ∇f(y) = Hᵀ(Hy − y_data)
	L := s.L * shrinkFactor(f.Shrink)
	var fz, proxNorm float64
	for {
		quad := proxStep(f.z, f.y, f.g, L, p.Beta)
		fz = p.smooth(f.z, f.rz)
		// For the quadratic f, f(z) − f(y) − ⟨∇f(y), z − y⟩ = ½‖H(z − y)‖²
		// exactly; testing ‖H(z − y)‖² ≤ L‖z − y‖² with H(z − y) = r_z − r_y
		// avoids the cancellation of the textbook test near the optimum.
		var curv float64
		for k, v := range f.rz {
			d := v - f.r[k]
			curv += d * d
		}
		if curv <= L*quad || L > 1e300 {
			proxNorm = L * math.Sqrt(quad)
			break
		}
		L *= 2
	}
	objZ := fz + p.Beta*floats.Norm(f.z, 1)
	restarted, nnz := s.accept(f.z, f.y, objZ, tNext, L)
	return FISTAStep{Iter: s.Iter, Objective: objZ, Gap: p.gap(s.Alpha, f.r, f.g), ProxGrad: proxNorm, Restarted: restarted, Nonzeros: nnz}
}

// Network returns the trained network of eq. (SCP2): the sampled neurons
// (the columns of u) with a non-zero output weight α_j and their weights.
// FISTA's soft-threshold sets the inactive α_j exactly to zero, so nothing
// else is dropped (the SCP counterpart of solvers.Program.Recover).
func Network(u *mat.Dense, alpha []float64, bias bool) (*solvers.Network, error) {
	d, m := u.Dims()
	if m != len(alpha) {
		return nil, fmt.Errorf("scp: %d neurons but %d output weights", m, len(alpha))
	}
	var keep []int
	for j, a := range alpha {
		if math.Abs(a) > 0 {
			keep = append(keep, j)
		}
	}
	net := &solvers.Network{Bias: bias, Alpha: make([]float64, len(keep))}
	if len(keep) == 0 {
		net.U = mat.NewDense(d, 1, nil)
		net.Alpha = []float64{0}
		return net, nil
	}
	net.U = mat.NewDense(d, len(keep), nil)
	for jj, j := range keep {
		for i := 0; i < d; i++ {
			net.U.Set(i, jj, u.At(i, j))
		}
		net.Alpha[jj] = alpha[j]
	}
	return net, nil
}
