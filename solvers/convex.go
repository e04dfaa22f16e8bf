package solvers

import (
	"errors"
	"fmt"
	"math"

	"gonum.org/v1/gonum/floats"
	"gonum.org/v1/gonum/mat"
)

// Loss names the training loss ℓ(ŷ, y) of a program.
type Loss int

const (
	// SquaredLoss is ℓ(ŷ, y) = ½ Σ_k (ŷ_k − y_k)², a sum, not a mean.
	SquaredLoss Loss = iota
	// HingeLoss is ℓ(ŷ, y) = (1/n) Σ_k max(0, 1 − y_k ŷ_k), a mean, with
	// labels y_k ∈ {−1, +1}.
	HingeLoss
	// BCELoss is the paper's binary cross-entropy for a tanh output (section
	// "Binary Cross-Entropy Loss", Table 4), labels y_k ∈ {0, 1}, a mean:
	// ℓ(ŷ, y) = (1/n) Σ_k (−2ŷ_k y_k + log(e^{2ŷ_k} + 1)). With
	// c_k = 2(1 − 2y_k) ∈ {±2} each term is log(1 + e^{c_k ŷ_k}): it is the
	// logistic loss of the label 2y_k − 1 at the doubled output 2ŷ_k.
	BCELoss
	// LogisticLoss is ℓ(ŷ, y) = (1/n) Σ_k log(1 + e^{−y_k ŷ_k}), a mean, with
	// labels y_k ∈ {−1, +1}.
	LogisticLoss
)

// Smooth reports whether the loss is differentiable with a Lipschitz
// gradient (squared, BCE, logistic; not hinge).
func (l Loss) Smooth() bool { return l == SquaredLoss || l == BCELoss || l == LogisticLoss }

// marginScale returns, for the labels y_k, the factor c_k of the smooth
// classification losses written as (1/n) Σ_k log(1 + e^{c_k ŷ_k}):
// c_k = 2(1 − 2y_k) for BCE and −y_k for the logistic loss.
func (l Loss) marginScale(yk float64) float64 {
	if l == BCELoss {
		return 2 - 4*yk
	}
	return -yk
}

// Grad sets dst = ∇ℓ(ŷ) for a smooth loss: ŷ − y for the squared loss,
// (c_k σ(c_k ŷ_k)/n)_k for BCE and logistic (see marginScale). It panics
// for the hinge loss, which has no gradient.
func (l Loss) Grad(dst, yhat, y []float64) {
	switch l {
	case SquaredLoss:
		for k := range y {
			dst[k] = yhat[k] - y[k]
		}
	case BCELoss, LogisticLoss:
		inv := 1 / float64(len(y))
		for k := range y {
			c := l.marginScale(y[k])
			dst[k] = c * logistic(c*yhat[k]) * inv
		}
	default:
		panic(fmt.Sprintf("solvers: the %v loss has no gradient", l))
	}
}

// Labels describes the labels the loss expects, for error messages.
func (l Loss) Labels() string {
	switch l {
	case HingeLoss, LogisticLoss:
		return "−1 or +1"
	case BCELoss:
		return "0 or 1"
	}
	return "any finite value"
}

// checkLabel reports whether y is a valid label for the loss.
func (l Loss) checkLabel(y float64) bool {
	switch l {
	case HingeLoss, LogisticLoss:
		return y == 1 || y == -1
	case BCELoss:
		return y == 0 || y == 1
	}
	return true
}

func (l Loss) String() string {
	switch l {
	case SquaredLoss:
		return "squared"
	case HingeLoss:
		return "hinge"
	case BCELoss:
		return "bce"
	case LogisticLoss:
		return "logistic"
	}
	return fmt.Sprintf("Loss(%d)", int(l))
}

// ParseLoss maps "squared", "hinge", "bce" and "logistic" to a Loss.
func ParseLoss(s string) (Loss, error) {
	switch s {
	case "squared":
		return SquaredLoss, nil
	case "hinge":
		return HingeLoss, nil
	case "bce":
		return BCELoss, nil
	case "logistic":
		return LogisticLoss, nil
	}
	return 0, fmt.Errorf("solvers: unknown loss %q (want squared, hinge, bce or logistic)", s)
}

// Value returns ℓ(ŷ, y).
func (l Loss) Value(yhat, y []float64) float64 {
	var s float64
	switch l {
	case SquaredLoss:
		for k := range y {
			d := yhat[k] - y[k]
			s += d * d
		}
		return s / 2
	case HingeLoss:
		for k := range y {
			s += math.Max(0, 1-y[k]*yhat[k])
		}
		return s / float64(len(y))
	case BCELoss, LogisticLoss:
		for k := range y {
			s += softplus(l.marginScale(y[k]) * yhat[k])
		}
		return s / float64(len(y))
	}
	return math.NaN()
}

// Pattern is one ReLU activation pattern over the n data points: Pattern[k]
// is the diagonal entry k of D = diag(1[X u ≥ 0]) for some u.
type Pattern []bool

// Patterns is the list D_1 … D_P of the convex program.
type Patterns []Pattern

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
	for k, v := range p.Y {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return fmt.Errorf("solvers: y[%d] is %v", k, v)
		}
		if !p.Loss.checkLabel(v) {
			return fmt.Errorf("solvers: y[%d] = %v: the %v loss needs labels %s", k, v, p.Loss, p.Loss.Labels())
		}
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
			if p.X.At(k, d-1) != 1 {
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
	var zv, zw mat.Dense
	zv.Mul(p.X, wt.V.T())
	zw.Mul(p.X, wt.W.T())
	var worst float64
	for i, di := range p.D {
		for k, on := range di {
			s := -1.0
			if on {
				s = 1
			}
			worst = math.Max(worst, math.Max(-s*zv.At(k, i), -s*zw.At(k, i)))
		}
	}
	return worst, nil
}

// Recover returns the two-layer network of eq. (recover_weights): for every
// v_i with ‖v_i‖₂ > tol a neuron u = v_i/√‖v_i‖, α = √‖v_i‖, and for every
// w_i with ‖w_i‖₂ > tol a neuron u = w_i/√‖w_i‖, α = −√‖w_i‖. Groups at or
// below tol (ADMM and interior-point solutions are zero only up to their
// accuracy) are dropped. The network has Bias set when the program has.
func (p *Program) Recover(wt Weights, tol float64) (*Network, error) {
	if err := p.checkWeights(wt); err != nil {
		return nil, err
	}
	if tol < 0 {
		return nil, fmt.Errorf("solvers: recovery tolerance %v < 0", tol)
	}
	_, d, np := p.Dims()
	var cols [][]float64
	var alpha []float64
	add := func(row []float64, sign float64) {
		nrm := floats.Norm(row, 2)
		if nrm <= tol {
			return
		}
		s := math.Sqrt(nrm)
		u := make([]float64, d)
		floats.ScaleTo(u, 1/s, row)
		cols, alpha = append(cols, u), append(alpha, sign*s)
	}
	for i := 0; i < np; i++ {
		add(wt.V.RawRowView(i), 1)
	}
	for i := 0; i < np; i++ {
		add(wt.W.RawRowView(i), -1)
	}
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
	if err := net.check(); err != nil {
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
