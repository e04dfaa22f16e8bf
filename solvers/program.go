package solvers

import (
	"errors"
	"fmt"
	"math"

	"gonum.org/v1/gonum/floats"
	"gonum.org/v1/gonum/mat"
)

// Pattern is one ReLU activation pattern over the n data points: Pattern[k]
// is the diagonal entry k of D = diag(1[X u ≥ 0]) for some u.
type Pattern []bool

// Patterns is the list D_1 … D_P of the convex program.
type Patterns []Pattern

// Rows returns the patterns D_1 … D_P as rows of 0/1 over the n points.
func (ps Patterns) Rows() [][]int {
	d := make([][]int, 0, len(ps))
	for _, pat := range ps {
		row := make([]int, len(pat))
		for k, on := range pat {
			if on {
				row[k] = 1
			}
		}
		d = append(d, row)
	}
	return d
}

// ProgramRows is a program as plain rows, the form JSON files and the
// independent solvers (the tests' cvxopt oracle, bench/cvxopt_convex.py)
// take.
type ProgramRows struct {
	X    [][]float64 `json:"X"` // n×d, with the bias column when the program has one
	Y    []float64   `json:"y"`
	D    [][]int     `json:"D"` // Patterns.Rows
	Loss string      `json:"loss"`
	Beta float64     `json:"beta"`
}

// Rows returns the program as plain rows.
func (p *Program) Rows() ProgramRows {
	n, c := p.X.Dims()
	x := make([][]float64, n)
	for k := range x {
		x[k] = append([]float64(nil), p.X.RawRowView(k)[:c]...)
	}
	return ProgramRows{X: x, Y: p.Y, D: p.D.Rows(), Loss: p.Loss.String(), Beta: p.Beta}
}

// Program is the convex training program of eq. (convex_general), or its
// sampled version eq. (prac_clean):
//
//	minimize   ℓ(Σ_i D_i X (v_i − w_i), y) + β Σ_i (‖v_i‖₂ + ‖w_i‖₂)
//	subject to (2D_i − I) X v_i ≥ 0,  (2D_i − I) X w_i ≥ 0,  i = 1 … P.
//
// X already holds the bias column when the network has biases (Bias true:
// the last column of X is all ones), and the patterns were computed on that X.
type Program struct {
	X    *mat.Dense
	Y    []float64
	Loss Loss
	Beta float64
	D    Patterns
	Bias bool
}

// Validate reports the first problem with the program's data, naming it.
func (p *Program) Validate() error {
	if p.X == nil {
		return errors.New("solvers: program has no data matrix X")
	}
	n, d := p.X.Dims()
	if n == 0 || d == 0 {
		return fmt.Errorf("solvers: X is empty (%d×%d)", n, d)
	}
	if len(p.Y) != n {
		return fmt.Errorf("solvers: X has %d rows but y has %d entries", n, len(p.Y))
	}
	if err := CheckFinite("solvers: X", p.X); err != nil {
		return err
	}
	if err := p.Loss.CheckLabels(p.Y); err != nil {
		return fmt.Errorf("solvers: %w", err)
	}
	switch p.Loss {
	case SquaredLoss, HingeLoss, BCELoss, LogisticLoss:
	default:
		return fmt.Errorf("solvers: unknown loss %v", p.Loss)
	}
	if !(p.Beta > 0) || math.IsInf(p.Beta, 0) {
		return fmt.Errorf("solvers: β = %v, need 0 < β < ∞", p.Beta)
	}
	if len(p.D) == 0 {
		return errors.New("solvers: no activation patterns D_i")
	}
	for i, di := range p.D {
		if len(di) != n {
			return fmt.Errorf("solvers: pattern D_%d has %d entries for %d data points", i+1, len(di), n)
		}
	}
	if p.Bias {
		for k := 0; k < n; k++ {
			if p.X.RawRowView(k)[d-1] != 1 {
				return fmt.Errorf("solvers: Bias is set but X[%d,%d] = %v is not 1", k, d-1, p.X.At(k, d-1))
			}
		}
	}
	return nil
}

// Dims returns n, d and P.
func (p *Program) Dims() (n, d, np int) {
	n, d = p.X.Dims()
	return n, d, len(p.D)
}

// WithoutZeroColumns returns p on the columns of X that are not zero in
// every row, and their indices in order; p itself and nil when X has no zero
// column (or only zero columns). The two programs are equivalent: a weight on a zero
// column changes no prediction and no constraint (Xu does not see it) and
// only adds to the group norms, so every optimum of p is zero there and
// restricts to an optimum of the other, with the same objective. (MNIST's
// 28×28 digits have 144 pixels that are 0 in every training image of
// Table 2: its d falls from 784 to 640.) The returned program shares Y and
// D with p.
func (p *Program) WithoutZeroColumns() (*Program, []int) {
	n, d := p.X.Dims()
	keep := nonzeroColumns(p.X)
	if len(keep) == d || len(keep) == 0 {
		return p, nil
	}
	x := mat.NewDense(n, len(keep), nil)
	for k := 0; k < n; k++ {
		row, out := p.X.RawRowView(k), x.RawRowView(k)
		for a, c := range keep {
			out[a] = row[c]
		}
	}
	q := *p
	q.X = x
	return &q, keep
}

// nonzeroColumns returns the indices of the columns of x that are not zero
// in every row, in order.
func nonzeroColumns(x *mat.Dense) []int {
	n, d := x.Dims()
	var keep []int
	for c := 0; c < d; c++ {
		for k := 0; k < n; k++ {
			if x.At(k, c) != 0 {
				keep = append(keep, c)
				break
			}
		}
	}
	return keep
}

// Weights are the variables of the convex program: row i of V is v_i and row
// i of W is w_i (both P×d).
type Weights struct {
	V, W *mat.Dense
}

// NewWeights returns zero weights for the program.
func (p *Program) NewWeights() Weights {
	_, d, np := p.Dims()
	return Weights{V: mat.NewDense(np, d, nil), W: mat.NewDense(np, d, nil)}
}

func (p *Program) checkWeights(wt Weights) error {
	_, d, np := p.Dims()
	if wt.V == nil || wt.W == nil {
		return errors.New("solvers: weights are missing V or W")
	}
	if r, c := wt.V.Dims(); r != np || c != d {
		return fmt.Errorf("solvers: V is %d×%d, want P×d = %d×%d", r, c, np, d)
	}
	if r, c := wt.W.Dims(); r != np || c != d {
		return fmt.Errorf("solvers: W is %d×%d, want P×d = %d×%d", r, c, np, d)
	}
	return nil
}

// Predict returns ŷ = Σ_i D_i X (v_i − w_i).
func (p *Program) Predict(wt Weights) ([]float64, error) {
	if err := p.checkWeights(wt); err != nil {
		return nil, err
	}
	n, d, np := p.Dims()
	diff := mat.NewDense(np, d, nil)
	diff.Sub(wt.V, wt.W)
	// Z = X diffᵀ is n×P; ŷ_k = Σ_i D_i[k] Z[k,i].
	var z mat.Dense
	z.Mul(p.X, diff.T())
	yhat := make([]float64, n)
	for i, di := range p.D {
		for k, on := range di {
			if on {
				yhat[k] += z.At(k, i)
			}
		}
	}
	return yhat, nil
}

// Objective returns the convex objective l^{v,w} = ℓ(ŷ, y) + β Σ(‖v_i‖ + ‖w_i‖).
func (p *Program) Objective(wt Weights) (float64, error) {
	yhat, err := p.Predict(wt)
	if err != nil {
		return 0, err
	}
	return p.Loss.Value(yhat, p.Y) + p.Beta*groupNorms(wt), nil
}

func groupNorms(wt Weights) float64 {
	np, _ := wt.V.Dims()
	var s float64
	for i := 0; i < np; i++ {
		s += floats.Norm(wt.V.RawRowView(i), 2) + floats.Norm(wt.W.RawRowView(i), 2)
	}
	return s
}

// Violation returns the largest violation of the cone constraints,
// max over i, k of (−(2D_i[k] − 1) x_kᵀ v_i)_+ and the same for w_i.
func (p *Program) Violation(wt Weights) (float64, error) {
	if err := p.checkWeights(wt); err != nil {
		return 0, err
	}
	return p.violation(wt, nil, nil), nil
}

// violation returns max_{i,k} of (radV_i − (2D_i[k] − 1) x_kᵀ v_i)_+ and the
// same for w_i: the largest violation of the cone constraints (radii nil,
// that is 0) or of the robust ones (eq. robust_constraint, radii ε‖·^f‖_*).
func (p *Program) violation(wt Weights, radV, radW []float64) float64 {
	var zv, zw mat.Dense
	zv.Mul(p.X, wt.V.T())
	zw.Mul(p.X, wt.W.T())
	var worst float64
	for i, di := range p.D {
		var rv, rw float64
		if radV != nil {
			rv, rw = radV[i], radW[i]
		}
		for k, on := range di {
			s := -1.0
			if on {
				s = 1
			}
			worst = math.Max(worst, math.Max(rv-s*zv.At(k, i), rw-s*zw.At(k, i)))
		}
	}
	return worst
}

// RecoveryTol is the one rule of weight recovery: a group (v_i or w_i) whose
// norm is at most RecoveryTol times the largest group norm counts as zero.
// Solutions are zero only up to their solver's accuracy (about 1e-8 relative
// for the interior-point method); a dropped group changes l^{u,α} by about
// that much relative to l^{v,w}, and ADMM's soft-threshold zeros are exact.
const RecoveryTol = 1e-8

// Recover returns the two-layer network of eq. (recover_weights): for every
// v_i with ‖v_i‖₂ > τ a neuron u = v_i/√‖v_i‖, α = √‖v_i‖, and for every w_i
// with ‖w_i‖₂ > τ a neuron u = w_i/√‖w_i‖, α = −√‖w_i‖, where
// τ = RecoveryTol · max_i max(‖v_i‖₂, ‖w_i‖₂). The network has Bias set when
// the program has. Every solver of the program (ADMM, the interior-point
// method) and every caller (cvx, the command line, the paper's experiments)
// recovers networks through it; the sampled convex program eq. (SCP2),
// whose neurons are fixed, has its own (scp.Network).
func (p *Program) Recover(wt Weights) (*Network, error) {
	if err := p.checkWeights(wt); err != nil {
		return nil, err
	}
	if err := CheckFinite("solvers: V", wt.V); err != nil {
		return nil, err
	}
	if err := CheckFinite("solvers: W", wt.W); err != nil {
		return nil, err
	}
	_, d, _ := p.Dims()
	cols, alpha := Neurons(rowsOf(wt.V), rowsOf(wt.W))
	net := &Network{Bias: p.Bias}
	if len(cols) == 0 {
		net.U, net.Alpha = mat.NewDense(d, 1, nil), []float64{0}
		return net, nil
	}
	net.U = mat.NewDense(d, len(cols), nil)
	for j, c := range cols {
		net.U.SetCol(j, c)
	}
	net.Alpha = alpha
	return net, nil
}

// NonconvexObjective returns l^{u,α} = ℓ(Σ_j (X u_j)_+ α_j, y) +
// (β/2) Σ_j (‖u_j‖² + α_j²), the objective of eq. (nonconvex_general) for
// a network on the program's data (X with its bias column, if any).
func (p *Program) NonconvexObjective(net *Network) (float64, error) {
	if err := net.Validate(); err != nil {
		return 0, err
	}
	n, d := p.X.Dims()
	if r, _ := net.U.Dims(); r != d {
		return 0, fmt.Errorf("solvers: network input dimension %d (with bias) does not match X's %d columns", r, d)
	}
	var h mat.Dense
	h.Mul(p.X, net.U)
	yhat := make([]float64, n)
	for k := 0; k < n; k++ {
		for j, a := range net.Alpha {
			if v := h.At(k, j); v > 0 {
				yhat[k] += v * a
			}
		}
	}
	var reg float64
	_, m := net.U.Dims()
	for j := 0; j < m; j++ {
		c := mat.Col(nil, j, net.U)
		reg += floats.Dot(c, c) + net.Alpha[j]*net.Alpha[j]
	}
	return p.Loss.Value(yhat, p.Y) + p.Beta/2*reg, nil
}

func rowsOf(m *mat.Dense) [][]float64 {
	r, _ := m.Dims()
	out := make([][]float64, r)
	for i := range out {
		out[i] = m.RawRowView(i)
	}
	return out
}

// Neurons is the one rule of weight recovery (eq. (convex_general) to eq.
// (nonconvex_general)): every group u of pos and of neg whose norm exceeds
// RecoveryTol·max‖·‖ over all of them becomes the neuron u/√‖u‖ with output
// weight √‖u‖ (pos) or −√‖u‖ (neg), so that (xᵀu/√‖u‖)_+·√‖u‖ = (xᵀu)_+ and
// the neuron's weight decay ½(‖u‖ + ‖u‖) is the group's norm. Program.Recover
// and the recoveries of the other architectures (cnn) use it.
func Neurons(pos, neg [][]float64) (units [][]float64, alpha []float64) {
	var tol float64
	for _, set := range [][][]float64{pos, neg} {
		for _, u := range set {
			tol = math.Max(tol, floats.Norm(u, 2))
		}
	}
	tol *= RecoveryTol
	for s, set := range [][][]float64{pos, neg} {
		for _, g := range set {
			nrm := floats.Norm(g, 2)
			if nrm <= tol || nrm == 0 {
				continue
			}
			r := math.Sqrt(nrm)
			u := make([]float64, len(g))
			floats.ScaleTo(u, 1/r, g)
			units, alpha = append(units, u), append(alpha, float64(1-2*s)*r)
		}
	}
	return units, alpha
}
