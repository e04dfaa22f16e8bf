// Package gated solves the gated ReLU programs of Mishkin, Sahiner and
// Pilanci ("Fast convex optimization for two-layer ReLU networks", ICML
// 2022), with scalar or vector outputs:
//
//	min_W  L(Σ_i D_i X W_i, T) + β Σ_i R(W_i),   W_i ∈ ℝ^{d×c},
//
// where D_i = diag(1[X g_i ≥ 0]) are fixed gates (sampled patterns), T holds
// the n×c targets and the network f(x) = Σ_i 1[xᵀg_i ≥ 0] W_iᵀx has one
// gated neuron per gate with an output vector per class. It is the program
// of eq. (convex_general) without its cone constraints: an unconstrained
// group lasso, which Decompose turns back into a ReLU network.
//
// Losses (Loss): the squared loss ½‖F − T‖²_F (a sum, as solvers.SquaredLoss;
// one-hot targets for classes) and the softmax cross-entropy
// (1/n) Σ_k (log Σ_j e^{F_kj} − ⟨T_k, F_k⟩) (a mean; rows of T on the simplex).
// Regularizers (Groups): Joint, R(W_i) = ‖W_i‖_F, a neuron shared by all
// classes (its gate and its weights are dropped together); PerClass,
// R(W_i) = Σ_j ‖W_i e_j‖, one group per neuron and class: the c programs
// separate (one-vs-all) for the squared loss.
//
// Solve runs accelerated proximal gradient (FISTA with backtracking and
// adaptive restart, Beck and Teboulle 2009; O'Donoghue and Candès 2015) in
// the metric of A = XᵀX: each step's proximal problem is solved exactly in
// A's eigenbasis (a one-dimensional secular equation per group), so the
// conditioning of the data, the main obstacle for plain proximal gradient
// on images, is taken out. Every certificate is a dual-feasible point built
// from the residual (Certificate): its value is a lower bound, always.
package gated

import (
	"errors"
	"fmt"
	"math"

	"github.com/convexnn/convexnn/solvers"
	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/gonum/mat"
)

// Loss is the training loss of a gated program.
type Loss int

const (
	// Squared is ½‖F − T‖²_F, a sum.
	Squared Loss = iota
	// Softmax is the mean cross-entropy (1/n) Σ_k (lse(F_k) − ⟨T_k, F_k⟩) of
	// the softmax of the outputs; T's rows lie on the simplex.
	Softmax
)

func (l Loss) String() string {
	switch l {
	case Squared:
		return "squared"
	case Softmax:
		return "softmax"
	}
	return fmt.Sprintf("Loss(%d)", int(l))
}

// Groups is the group structure of the regularizer.
type Groups int

const (
	// Joint groups all of W_i: R(W_i) = ‖W_i‖_F.
	Joint Groups = iota
	// PerClass groups each column: R(W_i) = Σ_j ‖W_i e_j‖.
	PerClass
)

func (g Groups) String() string {
	switch g {
	case Joint:
		return "joint"
	case PerClass:
		return "per-class"
	}
	return fmt.Sprintf("Groups(%d)", int(g))
}

// Problem is a gated program: data X (n×d; a ones column gives biases),
// gates D_i, targets T (n×c), loss, groups and β > 0.
type Problem struct {
	X       *mat.Dense
	Gates   solvers.Patterns
	Targets *mat.Dense
	Loss    Loss
	Groups  Groups
	Beta    float64
}

// Dims returns n, d, the number of gates P and of outputs c.
func (p *Problem) Dims() (n, d, np, c int) {
	n, d = p.X.Dims()
	_, c = p.Targets.Dims()
	return n, d, len(p.Gates), c
}

// Validate reports shapes that do not match, non-finite data, targets the
// loss cannot take, an unknown loss or grouping and β outside (0, ∞).
func (p *Problem) Validate() error {
	if p == nil || p.X == nil || p.Targets == nil {
		return errors.New("gated: the problem needs X and targets")
	}
	n, _ := p.X.Dims()
	tn, c := p.Targets.Dims()
	if tn != n {
		return fmt.Errorf("gated: X has %d rows, the targets %d", n, tn)
	}
	if len(p.Gates) == 0 {
		return errors.New("gated: no gates (sample patterns first)")
	}
	for i, g := range p.Gates {
		if len(g) != n {
			return fmt.Errorf("gated: gate %d has %d entries, X has %d rows", i, len(g), n)
		}
	}
	if err := solvers.CheckFinite("gated: X", p.X); err != nil {
		return err
	}
	if err := solvers.CheckFinite("gated: targets", p.Targets); err != nil {
		return err
	}
	if !(p.Beta > 0) || math.IsInf(p.Beta, 0) {
		return fmt.Errorf("gated: β = %v, need 0 < β < ∞", p.Beta)
	}
	if p.Groups != Joint && p.Groups != PerClass {
		return fmt.Errorf("gated: unknown grouping %v", p.Groups)
	}
	switch p.Loss {
	case Squared:
	case Softmax:
		if c < 2 {
			return fmt.Errorf("gated: the softmax loss needs at least 2 outputs, the targets have %d", c)
		}
		for k := 0; k < n; k++ {
			s := 0.0
			for j, v := range p.Targets.RawRowView(k) {
				if v < 0 {
					return fmt.Errorf("gated: softmax target row %d has entry %d = %v < 0", k, j, v)
				}
				s += v
			}
			if math.Abs(s-1) > 1e-9 {
				return fmt.Errorf("gated: softmax target row %d sums to %v, not 1", k, s)
			}
		}
	default:
		return fmt.Errorf("gated: unknown loss %v", p.Loss)
	}
	return nil
}

// OneHot returns the n×c one-hot targets of class indices y (0 … c−1),
// with value hi for the class and lo elsewhere (1, 0 for one-hot; c = 1
// gives the ±1 column of a binary problem when lo = −1 for class 0).
func OneHot(y []float64, c int) (*mat.Dense, error) {
	if c < 2 {
		return nil, fmt.Errorf("gated: %d classes, need at least 2", c)
	}
	if c > len(y) {
		return nil, fmt.Errorf("gated: %d classes for %d labels: at most one class per label", c, len(y))
	}
	t := mat.NewDense(len(y), c, nil)
	for k, v := range y {
		if v < 0 || v >= float64(c) || v != math.Trunc(v) {
			return nil, fmt.Errorf("gated: label %d is %v, not a class index 0…%d", k, v, c-1)
		}
		t.Set(k, int(v), 1)
	}
	return t, nil
}

// Weights are the blocks W_i (d×c each) of a gated program.
type Weights []*mat.Dense

// Predict returns F = Σ_i D_i X W_i (n×c).
func (p *Problem) Predict(w Weights) (*mat.Dense, error) {
	n, d, np, c := p.Dims()
	if err := checkWeights(w, np, d, c); err != nil {
		return nil, err
	}
	f := mat.NewDense(n, c, nil)
	xw := mat.NewDense(n, c, nil)
	for i, g := range p.Gates {
		xw.Mul(p.X, w[i])
		for k, on := range g {
			if on {
				floats64Add(f.RawRowView(k), xw.RawRowView(k))
			}
		}
	}
	return f, nil
}

func floats64Add(dst, s []float64) {
	for j, v := range s {
		dst[j] += v
	}
}

// checkWeights reports weights that are not P blocks of d×c finite
// numbers.
func checkWeights(w Weights, np, d, c int) error {
	if len(w) != np {
		return fmt.Errorf("gated: %d weight blocks for %d gates", len(w), np)
	}
	for i, b := range w {
		if b == nil {
			return fmt.Errorf("gated: weight block %d is missing", i)
		}
		if r, cc := b.Dims(); r != d || cc != c {
			return fmt.Errorf("gated: weight block %d is %d×%d, want %d×%d", i, r, cc, d, c)
		}
		if err := solvers.CheckFinite(fmt.Sprintf("gated: weight block %d", i), b); err != nil {
			return err
		}
	}
	return nil
}

// LossValue returns L(F, T).
func (p *Problem) LossValue(f *mat.Dense) float64 { return p.Loss.Eval(nil, f, p.Targets) }

// lossGrad sets g = ∇_F L(F, T).
func (p *Problem) lossGrad(g, f *mat.Dense) { p.Loss.Eval(g, f, p.Targets) }

// Eval returns L(F, T) for outputs F and targets T (n×c) and, when g is
// not nil, sets g = ∇_F L: F − T for the squared loss, (softmax(F_k) −
// T_k)/n row by row for the softmax cross-entropy.
func (l Loss) Eval(g, f, t *mat.Dense) float64 {
	n, c := f.Dims()
	var s float64
	switch l {
	case Squared:
		for k := 0; k < n; k++ {
			tr, fr := t.RawRowView(k), f.RawRowView(k)
			for j, v := range fr {
				e := v - tr[j]
				s += 0.5 * e * e
				if g != nil {
					g.RawRowView(k)[j] = e
				}
			}
		}
	case Softmax:
		inv := 1 / float64(n)
		for k := 0; k < n; k++ {
			fr, tr := f.RawRowView(k), t.RawRowView(k)
			lse := logSumExp(fr)
			for j := 0; j < c; j++ {
				s += tr[j] * (lse - fr[j])
				if g != nil {
					g.RawRowView(k)[j] = (math.Exp(fr[j]-lse) - tr[j]) * inv
				}
			}
		}
		s *= inv
	}
	return s
}

// curvature returns the Lipschitz constant of ∇L: 1 for the squared loss,
// 1/(2n) for the mean softmax cross-entropy (its Hessian per row is
// diag(p) − ppᵀ ⪯ ½I, Böhning 1992).
func (p *Problem) curvature() float64 {
	if p.Loss == Softmax {
		n, _ := p.X.Dims()
		return 0.5 / float64(n)
	}
	return 1
}

func logSumExp(v []float64) float64 {
	m := math.Inf(-1)
	for _, x := range v {
		m = math.Max(m, x)
	}
	var s float64
	for _, x := range v {
		s += math.Exp(x - m)
	}
	return m + math.Log(s)
}

// Regularizer returns Σ_i R(W_i) (without β).
func (p *Problem) Regularizer(w Weights) float64 {
	var s float64
	for _, b := range w {
		s += groupNorms(b.RawMatrix(), p.Groups)
	}
	return s
}

func groupNorms(b blas64.General, g Groups) float64 {
	if g == Joint {
		var s float64
		for r := 0; r < b.Rows; r++ {
			for _, v := range b.Data[r*b.Stride : r*b.Stride+b.Cols] {
				s += v * v
			}
		}
		return math.Sqrt(s)
	}
	var tot float64
	for j := 0; j < b.Cols; j++ {
		var s float64
		for r := 0; r < b.Rows; r++ {
			v := b.Data[r*b.Stride+j]
			s += v * v
		}
		tot += math.Sqrt(s)
	}
	return tot
}

// Objective returns L(Σ D_i X W_i, T) + β Σ R(W_i).
func (p *Problem) Objective(w Weights) (float64, error) {
	f, err := p.Predict(w)
	if err != nil {
		return 0, err
	}
	return p.LossValue(f) + p.Beta*p.Regularizer(w), nil
}

// BetaMax returns the smallest β at which W = 0 is optimal:
// max over groups of ‖(D_i X)ᵀ ∇L(0)[g]‖.
func (p *Problem) BetaMax() (float64, error) {
	if err := p.Validate(); err != nil {
		return 0, err
	}
	n, _, _, c := p.Dims()
	g := mat.NewDense(n, c, nil)
	p.lossGrad(g, mat.NewDense(n, c, nil))
	return p.dualNorm(g), nil
}

// dualNorm returns max_{i,g} ‖(D_i X)ᵀ G[g]‖, the dual norm of the
// regularizer at Xᵀ-images of the loss gradient G (n×c).
func (p *Problem) dualNorm(g *mat.Dense) float64 {
	n, d, np, c := p.Dims()
	m := mat.NewDense(n, np*c, nil)
	maskRows(m, g, p.Gates)
	h := mat.NewDense(d, np*c, nil)
	h.Mul(p.X.T(), m)
	return maxBlockNorm(h, np, c, p.Groups)
}

// maskRows sets m = [D_1G … D_PG] (n×Pc) for G (n×c): row k of block i is
// G's row k where gate i is on, zero elsewhere.
func maskRows(m, g *mat.Dense, gates solvers.Patterns) {
	n, c := g.Dims()
	for k := 0; k < n; k++ {
		mr, gr := m.RawRowView(k), g.RawRowView(k)
		for i, gate := range gates {
			if gate[k] {
				copy(mr[i*c:(i+1)*c], gr)
			} else {
				clear(mr[i*c : (i+1)*c])
			}
		}
	}
}

// maxBlockNorm returns the largest group norm of the P blocks of c
// columns of h.
func maxBlockNorm(h *mat.Dense, np, c int, g Groups) float64 {
	rows, _ := h.Dims()
	var worst float64
	for i := 0; i < np; i++ {
		worst = math.Max(worst, maxGroupNorm(h.Slice(0, rows, i*c, (i+1)*c).(*mat.Dense).RawMatrix(), g))
	}
	return worst
}

func maxGroupNorm(b blas64.General, g Groups) float64 {
	if g == Joint {
		return groupNorms(b, Joint)
	}
	var worst float64
	for j := 0; j < b.Cols; j++ {
		var s float64
		for r := 0; r < b.Rows; r++ {
			v := b.Data[r*b.Stride+j]
			s += v * v
		}
		worst = math.Max(worst, math.Sqrt(s))
	}
	return worst
}

// Certificate is a certified bracket of the program's optimum.
type Certificate struct {
	// Upper is the objective at the point; Lower the dual value of the
	// scaled residual: Lower ≤ optimum ≤ Upper.
	Upper, Lower float64
	// Gap is (Upper − Lower)/max(|Upper|, 1e-12).
	Gap float64
}

// Certify returns the certificate of the point w. The dual point is
// Λ = −s ∇L(F(w)) with s = min(1, β/‖(D_iX)ᵀ∇L‖_*), dual feasible
// exactly; its value is
//
//	squared: ⟨Λ, T⟩ − ½‖Λ‖²_F,
//	softmax: −(1/n) Σ_k Σ_j q_kj log q_kj,  q = s·softmax(F) + (1 − s)·T,
//
// by weak duality a lower bound on the optimum.
func (p *Problem) Certify(w Weights) (Certificate, error) {
	if err := p.Validate(); err != nil {
		return Certificate{}, err
	}
	f, err := p.Predict(w)
	if err != nil {
		return Certificate{}, err
	}
	up := p.LossValue(f) + p.Beta*p.Regularizer(w)
	n, c := f.Dims()
	g := mat.NewDense(n, c, nil)
	p.lossGrad(g, f)
	return p.certificate(up, f, g, p.dualNorm(g)), nil
}

// certificate builds the bracket from the objective up at F with loss
// gradient g and its dual norm dn.
func (p *Problem) certificate(up float64, f, g *mat.Dense, dn float64) Certificate {
	s := 1.0
	if dn > p.Beta {
		s = p.Beta / dn
	}
	n, c := f.Dims()
	var low float64
	switch p.Loss {
	case Squared:
		for k := 0; k < n; k++ {
			t, gr := p.Targets.RawRowView(k), g.RawRowView(k)
			for j := 0; j < c; j++ {
				lam := -s * gr[j]
				low += lam*t[j] - 0.5*lam*lam
			}
		}
	case Softmax:
		for k := 0; k < n; k++ {
			row, t := f.RawRowView(k), p.Targets.RawRowView(k)
			lse := logSumExp(row)
			for j, v := range row {
				q := s*math.Exp(v-lse) + (1-s)*t[j]
				if q > 0 {
					low -= q * math.Log(q)
				}
			}
		}
		low /= float64(n)
	}
	return Certificate{Upper: up, Lower: low, Gap: (up - low) / math.Max(math.Abs(up), 1e-12)}
}
