// Package batchnorm trains one-hidden-layer ReLU networks with full-batch
// batch normalization through their convex program (the appendix "One-Hidden-
// Layer Networks with Batch Normalization", after Ergen, Sahiner, Ozturkler,
// Pauly, Mardani and Pilanci, "Demystifying batch normalization in ReLU
// networks", ICLR 2022).
//
// The non-convex program, eq. (BNregularizedtraining), is
//
//	min ℓ(Σ_j (BN_{γ_j,α_j}(X w_j))_+ a_j, y) + (β/2)(‖γ‖² + ‖α‖² + ‖W‖_F² + ‖a‖²),
//
// with the full-batch, ℓ₂-normalized BN of Ergen et al.
//
//	BN_{γ,α}(h) = γ (h − h̄1)/‖h − h̄1‖₂ + α 1/√n,   h̄ = 1ᵀh/n.
//
// (The usual BN divides by the standard deviation ‖h − h̄1‖₂/√n and adds α'
// itself: γ' = γ/√n, α' = α/√n; Network.Standard converts.) With the compact
// SVD (I − 11ᵀ/n)X = UΣVᵀ of rank r and U′ = [U, 1/√n], every BN output is
// U′q with q = (γz, α), ‖z‖ = 1, so the program is eq. (convex_general) with
// U′ (n×(r+1)) as its data, eq. (BNregularizedtrainingconvex):
//
//	min ℓ(Σ_i D_i U′(v_i − w_i), y) + β Σ_i (‖v_i‖₂ + ‖w_i‖₂)
//	s.t. (2D_i − I)U′v_i ≥ 0, (2D_i − I)U′w_i ≥ 0,
//
// and every solver of the two-layer program (ADMM, the interior-point
// method, the certificate) solves it unchanged: Problem.Program is that
// program. BN is invariant to the scale of each w_j, so the infimum of the
// non-convex objective over those scales drops ‖W‖_F² (it is not attained:
// Objective leaves it out, and Recover returns unit columns).
package batchnorm

import (
	"errors"
	"fmt"
	"math"

	"github.com/convexnn/convexnn/solvers"
	"gonum.org/v1/gonum/floats"
	"gonum.org/v1/gonum/mat"
)

// Basis is the whitening of the training data X (n×d): the mean x̄ and the
// compact SVD (I − 11ᵀ/n)X = UΣVᵀ truncated to its numerical rank r, the
// singular values above RankTol·σ₁. Its features of a point x are
// u′(x) = (Σ⁻¹Vᵀ(x − x̄), 1/√n): on the training points the rows of U′.
type Basis struct {
	N     int        // training points n
	Mean  []float64  // x̄ (d)
	V     *mat.Dense // d×r
	Sigma []float64  // σ₁ ≥ … ≥ σ_r > RankTol·σ₁
	Tol   float64    // the absolute cut: singular values ≤ Tol were dropped
}

// RankTol is the relative cut of Basis's numerical rank, max(n, d)·ε as in
// LAPACK's and NumPy's rank: it is multiplied by max(n, d).
const RankTol = 2.220446049250313e-16

// NewBasis returns the whitening of x. It needs at least two distinct points.
func NewBasis(x *mat.Dense) (*Basis, error) {
	if x == nil {
		return nil, errors.New("batchnorm: no data matrix X")
	}
	n, d := x.Dims()
	if n < 2 || d == 0 {
		return nil, fmt.Errorf("batchnorm: X is %d×%d: batch normalization needs at least two points and one feature", n, d)
	}
	if err := solvers.CheckFinite("batchnorm: X", x); err != nil {
		return nil, err
	}
	mean := make([]float64, d)
	for k := 0; k < n; k++ {
		floats.Add(mean, x.RawRowView(k))
	}
	floats.Scale(1/float64(n), mean)
	c := mat.NewDense(n, d, nil)
	for k := 0; k < n; k++ {
		floats.SubTo(c.RawRowView(k), x.RawRowView(k), mean)
	}
	var svd mat.SVD
	if !svd.Factorize(c, mat.SVDThinV) {
		return nil, errors.New("batchnorm: the SVD of the centred data did not converge")
	}
	s := svd.Values(nil)
	tol := float64(max(n, d)) * RankTol * s[0]
	r := 0
	for r < len(s) && s[r] > tol {
		r++
	}
	if r == 0 {
		return nil, errors.New("batchnorm: every training point is the same: the centred data is zero and batch normalization is undefined")
	}
	var v mat.Dense
	svd.VTo(&v)
	b := &Basis{N: n, Mean: mean, V: mat.DenseCopyOf(v.Slice(0, d, 0, r)), Sigma: s[:r:r], Tol: tol}
	return b, nil
}

// Rank returns the numerical rank r of the centred data.
func (b *Basis) Rank() int { return len(b.Sigma) }

// Features returns the rows u′(x_k) = (Σ⁻¹Vᵀ(x_k − x̄), 1/√n) of x (m×d)
// with the training statistics: U′ for the training points.
func (b *Basis) Features(x *mat.Dense) (*mat.Dense, error) {
	d := len(b.Mean)
	if x == nil {
		return nil, errors.New("batchnorm: no data matrix")
	}
	m, dx := x.Dims()
	if dx != d {
		return nil, fmt.Errorf("batchnorm: data has %d features, the training data had %d", dx, d)
	}
	if err := solvers.CheckFinite("batchnorm: X", x); err != nil {
		return nil, err
	}
	r := b.Rank()
	c := mat.NewDense(m, d, nil)
	for k := 0; k < m; k++ {
		floats.SubTo(c.RawRowView(k), x.RawRowView(k), b.Mean)
	}
	var z mat.Dense
	z.Mul(c, b.V)
	u := mat.NewDense(m, r+1, nil)
	last := 1 / math.Sqrt(float64(b.N))
	for k := 0; k < m; k++ {
		row := u.RawRowView(k)
		for l := 0; l < r; l++ {
			row[l] = z.At(k, l) / b.Sigma[l]
		}
		row[r] = last
	}
	return u, nil
}

// Problem is eq. (BNregularizedtrainingconvex) on training data X: the
// whitening Basis and the two-layer program whose data matrix is U′.
type Problem struct {
	Basis   *Basis
	X       *mat.Dense       // the raw training data (n×d)
	Program *solvers.Program // eq. (convex_general) with U′ as X; its D are patterns over the n points
}

// New returns the problem of training data x (raw, without a bias column:
// BN brings the shift), labels y, the loss and β, without patterns (set
// Program.D, or call SamplePatterns).
func New(x *mat.Dense, y []float64, loss solvers.Loss, beta float64) (*Problem, error) {
	b, err := NewBasis(x)
	if err != nil {
		return nil, err
	}
	u, err := b.Features(x)
	if err != nil {
		return nil, err
	}
	p := &solvers.Program{X: u, Y: y, Loss: loss, Beta: beta}
	return &Problem{Basis: b, X: x, Program: p}, nil
}

// SamplePatterns sets the program's patterns to P patterns drawn by
// SamplePatterns (the function) from the raw training data.
func (p *Problem) SamplePatterns(np int, seed uint64) error {
	pats, err := SamplePatterns(p.X, np, seed)
	if len(pats) > 0 {
		p.Program.D = pats
	}
	return err
}

// SamplePatterns draws P distinct patterns for the BN program of the raw
// training data x (n×d): every BN pre-activation is an affine map of x, so
// the patterns 1[U′q ≥ 0] are those of the affine maps, 1[Xw + c ≥ 0].
// They are drawn in the input space, through the data
// (solvers.SampleAnchoredPatterns: w ~ N(0, I_d), the hyperplane through a
// random training point), not isotropically in the whitened U′: whitening
// gives every direction unit variance, so Gaussian q would split the data
// mostly along its directions of least variance (on 2000 MNIST digits at
// 14×14, hinge, β = 1e-4, 16 patterns: validation accuracy 96.2 % against
// 97.2 % drawn here; docs/performance.md). The patterns are realizable on U′
// up to the directions dropped by the numerical rank; a group whose pattern
// is not stays feasible at zero. See solvers.SamplePatterns for the seed and
// the *solvers.FewPatternsError.
func SamplePatterns(x *mat.Dense, np int, seed uint64) (solvers.Patterns, error) {
	return solvers.SampleAnchoredPatterns(x, np, seed, 0)
}

// Validate reports the first problem with p.
func (p *Problem) Validate() error {
	if p == nil || p.Basis == nil || p.Program == nil || p.X == nil {
		return errors.New("batchnorm: incomplete problem (use New)")
	}
	if n, _ := p.X.Dims(); n != p.Basis.N {
		return fmt.Errorf("batchnorm: X has %d rows, the basis %d", n, p.Basis.N)
	}
	return p.Program.Validate()
}

// Network is a one-hidden-layer ReLU network with batch normalization,
//
//	f(x) = Σ_j (γ_j (xᵀw_j − μ_j)/s_j + α_j/√n)_+ a_j,
//
// where μ_j and s_j are the mean and the norm ‖Xw_j − μ_j1‖₂ of the
// pre-activations over the training batch, kept for prediction (Predict);
// BatchOutputs normalizes with the statistics of the batch it is given.
type Network struct {
	W     *mat.Dense // d×m first-layer weights w_j (unit columns)
	Mean  []float64  // μ_j
	Scale []float64  // s_j
	Gamma []float64  // γ_j ≥ 0
	Alpha []float64  // α_j
	A     []float64  // output weights a_j
	N     int        // training batch size n (α enters as α/√n)
}

// Width returns the number of hidden neurons.
func (net *Network) Width() int { return len(net.A) }

// Recover returns the BN network of the convex weights wt (v_i, w_i ∈
// ℝ^{r+1}): each group above solvers.RecoveryTol·max‖·‖ becomes a neuron
// with q = u/√‖u‖, output weight ±√‖u‖ (+ for v_i, − for w_i), γ = ‖q_{1:r}‖,
// α = q_{r+1} and w = VΣ⁻¹z/‖VΣ⁻¹z‖ for z = q_{1:r}/γ (any unit z when
// γ = 0). At a feasible wt the network's outputs on the training data equal
// Σ_i D_iU′(v_i − w_i) and its Objective equals the convex objective.
func (p *Problem) Recover(wt solvers.Weights) (*Network, error) {
	lin, err := p.Program.Recover(wt)
	if err != nil {
		return nil, err
	}
	return p.Basis.Network(lin)
}

// Network returns the BN network of lin, a two-layer network on the
// features u′(x) (columns q_j = (γ_j z_j, α_j), output weights a_j): see
// Problem.Recover.
func (b *Basis) Network(lin *solvers.Network) (*Network, error) {
	if err := lin.Validate(); err != nil {
		return nil, err
	}
	r := b.Rank()
	if lr, _ := lin.U.Dims(); lr != r+1 || lin.Bias {
		return nil, fmt.Errorf("batchnorm: the network has %d inputs (bias %v), the BN features %d (no bias)", lr, lin.Bias, r+1)
	}
	d := len(b.Mean)
	_, m := lin.U.Dims()
	net := &Network{W: mat.NewDense(d, m, nil), N: b.N}
	z := make([]float64, r)
	w := make([]float64, d)
	for j := 0; j < m; j++ {
		q := mat.Col(nil, j, lin.U)
		if lin.Alpha[j] == 0 {
			continue // the zero network
		}
		gamma := floats.Norm(q[:r], 2)
		if gamma > 0 {
			floats.ScaleTo(z, 1/gamma, q[:r])
		} else {
			clear(z)
			z[0] = 1
		}
		for l := range z {
			z[l] /= b.Sigma[l]
		}
		wv := mat.NewVecDense(d, w)
		wv.MulVec(b.V, mat.NewVecDense(r, z))
		nw := floats.Norm(w, 2)
		floats.Scale(1/nw, w)
		net.W.SetCol(j, w)
		// s = ‖ΣVᵀw‖ = 1/‖VΣ⁻¹z‖ for the unit w, μ = x̄ᵀw.
		net.Mean = append(net.Mean, floats.Dot(b.Mean, w))
		net.Scale = append(net.Scale, 1/nw)
		net.Gamma = append(net.Gamma, gamma)
		net.Alpha = append(net.Alpha, q[r])
		net.A = append(net.A, lin.Alpha[j])
	}
	if len(net.A) == 0 {
		net.W = mat.NewDense(d, 1, nil)
		net.W.Set(0, 0, 1)
		net.Mean, net.Scale, net.Gamma, net.Alpha, net.A = []float64{0}, []float64{1}, []float64{0}, []float64{0}, []float64{0}
	}
	return net, nil
}

// Validate reports a network whose parts do not match.
func (net *Network) Validate() error {
	if net == nil || net.W == nil {
		return errors.New("batchnorm: network has no hidden layer")
	}
	_, m := net.W.Dims()
	for _, s := range [][]float64{net.Mean, net.Scale, net.Gamma, net.Alpha, net.A} {
		if len(s) != m {
			return fmt.Errorf("batchnorm: network has %d neurons but parameter vectors of lengths %d, %d, %d, %d, %d",
				m, len(net.Mean), len(net.Scale), len(net.Gamma), len(net.Alpha), len(net.A))
		}
	}
	if net.N < 1 {
		return fmt.Errorf("batchnorm: training batch size %d", net.N)
	}
	return nil
}

// Predict returns f(x_k) for the rows of x with the training statistics.
func (net *Network) Predict(x *mat.Dense) ([]float64, error) {
	return net.outputs(x, false)
}

// BatchOutputs returns the outputs with full-batch BN over the rows of x
// (training mode: μ_j and s_j of the batch x itself). A neuron constant on
// the batch (s_j = 0) outputs its shift.
func (net *Network) BatchOutputs(x *mat.Dense) ([]float64, error) {
	return net.outputs(x, true)
}

func (net *Network) outputs(x *mat.Dense, batch bool) ([]float64, error) {
	if err := net.Validate(); err != nil {
		return nil, err
	}
	if x == nil {
		return nil, errors.New("batchnorm: no data matrix")
	}
	n, d := x.Dims()
	if wd, _ := net.W.Dims(); wd != d {
		return nil, fmt.Errorf("batchnorm: data has %d features, the network expects %d", d, wd)
	}
	if err := solvers.CheckFinite("batchnorm: X", x); err != nil {
		return nil, err
	}
	var h mat.Dense
	h.Mul(x, net.W)
	out := make([]float64, n)
	shift := 1 / math.Sqrt(float64(net.N))
	col := make([]float64, n)
	for j, a := range net.A {
		mat.Col(col, j, &h)
		mu, s := net.Mean[j], net.Scale[j]
		if batch {
			mu = floats.Sum(col) / float64(n)
			s = 0
			for _, v := range col {
				s += (v - mu) * (v - mu)
			}
			s = math.Sqrt(s)
		}
		for k, v := range col {
			bn := net.Alpha[j] * shift
			if s > 0 {
				bn += net.Gamma[j] * (v - mu) / s
			}
			if bn > 0 {
				out[k] += bn * a
			}
		}
	}
	return out, nil
}

// Objective returns the objective of eq. (BNregularizedtraining) with
// full-batch BN over x, ℓ(f(X), y) + (β/2)(‖γ‖² + ‖α‖² + ‖a‖²), the
// infimum over the scales of the w_j (see the package comment).
func (net *Network) Objective(x *mat.Dense, y []float64, loss solvers.Loss, beta float64) (float64, error) {
	out, err := net.BatchOutputs(x)
	if err != nil {
		return 0, err
	}
	if len(y) != len(out) {
		return 0, fmt.Errorf("batchnorm: %d labels for %d points", len(y), len(out))
	}
	reg := floats.Dot(net.Gamma, net.Gamma) + floats.Dot(net.Alpha, net.Alpha) + floats.Dot(net.A, net.A)
	return loss.Value(out, y) + beta/2*reg, nil
}

// Standard returns the scale and shift of the usual BN, which divides by
// the standard deviation and adds the shift itself: γ' = γ/√n, α' = α/√n.
func (net *Network) Standard() (gamma, alpha []float64) {
	f := 1 / math.Sqrt(float64(net.N))
	gamma, alpha = make([]float64, len(net.Gamma)), make([]float64, len(net.Alpha))
	floats.ScaleTo(gamma, f, net.Gamma)
	floats.ScaleTo(alpha, f, net.Alpha)
	return gamma, alpha
}
