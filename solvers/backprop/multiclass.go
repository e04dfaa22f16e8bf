package backprop

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/convexnn/convexnn/solvers"
	"github.com/convexnn/convexnn/solvers/gated"
	"gonum.org/v1/gonum/mat"
)

// MulticlassModel is a two-layer ReLU network with c outputs
// (solvers.MultiNetwork) trained on X against targets T (n×c: one-hot for
// classes), objective L(f(X), T) + (β/2)(‖U‖²_F + ‖A‖²_F) with L the
// gated package's squared or softmax loss: the back-prop baseline of a
// multi-class convex program of the same width.
type MulticlassModel struct {
	X    *mat.Dense // with the ones column when Bias
	T    *mat.Dense
	Loss gated.Loss
	Beta float64
	Bias bool
	m, c int
	p    []float64 // U (d̃×m, row-major), then A (m×c)
	// work space
	h, z, f, g, dz *mat.Dense
}

// NewMulticlassModel returns the model of width m on raw features x
// (n×d; a ones column is appended when bias), initialized with the seed.
func NewMulticlassModel(x, t *mat.Dense, loss gated.Loss, beta float64, m int, bias bool, seed uint64) (*MulticlassModel, error) {
	if x == nil || t == nil {
		return nil, errors.New("backprop: no data or targets")
	}
	n, d := x.Dims()
	tn, c := t.Dims()
	if tn != n {
		return nil, fmt.Errorf("backprop: X has %d rows but the targets %d", n, tn)
	}
	if !(beta > 0) || math.IsInf(beta, 0) || m < 1 {
		return nil, fmt.Errorf("backprop: β = %v and width %d, need β > 0 and width ≥ 1", beta, m)
	}
	if loss != gated.Squared && loss != gated.Softmax {
		return nil, fmt.Errorf("backprop: unknown loss %v", loss)
	}
	if err := solvers.CheckFinite("backprop: X", x); err != nil {
		return nil, err
	}
	xt := x
	if bias {
		xt = solvers.WithOnes(x)
		d++
	}
	mm := &MulticlassModel{X: xt, T: t, Loss: loss, Beta: beta, Bias: bias, m: m, c: c, p: make([]float64, d*m+m*c),
		h: mat.NewDense(n, m, nil), z: mat.NewDense(n, m, nil), f: mat.NewDense(n, c, nil), g: mat.NewDense(n, c, nil), dz: mat.NewDense(n, m, nil)}
	rng := rand.New(rand.NewPCG(seed, 0x3c))
	gaussian(rng, mm.p[:d*m], math.Sqrt(2/float64(d)))
	gaussian(rng, mm.p[d*m:], 1/math.Sqrt(float64(m)))
	return mm, nil
}

// Params returns U and A as one vector.
func (mm *MulticlassModel) Params() []float64 { return mm.p }

func (mm *MulticlassModel) layers(p []float64) (u, a *mat.Dense) {
	_, d := mm.X.Dims()
	return mat.NewDense(d, mm.m, p[:d*mm.m]), mat.NewDense(mm.m, mm.c, p[d*mm.m:])
}

// Network returns the current network (copies of the layers).
func (mm *MulticlassModel) Network() *solvers.MultiNetwork {
	u, a := mm.layers(mm.p)
	return &solvers.MultiNetwork{U: mat.DenseCopyOf(u), A: mat.DenseCopyOf(a), Bias: mm.Bias}
}

// Objective returns L(f(X), T) + (β/2)‖θ‖² and sets grad to its gradient.
func (mm *MulticlassModel) Objective(grad []float64) float64 {
	u, a := mm.layers(mm.p)
	gu, ga := mm.layers(grad)
	mm.h.Mul(mm.X, u)
	n, _ := mm.h.Dims()
	for k := 0; k < n; k++ {
		hr, zr := mm.h.RawRowView(k), mm.z.RawRowView(k)
		for j, v := range hr {
			zr[j] = math.Max(v, 0)
		}
	}
	mm.f.Mul(mm.z, a)
	obj := mm.Loss.Eval(mm.g, mm.f, mm.T)
	ga.Mul(mm.z.T(), mm.g)
	mm.dz.Mul(mm.g, a.T())
	for k := 0; k < n; k++ {
		hr, dr := mm.h.RawRowView(k), mm.dz.RawRowView(k)
		for j, v := range hr {
			if v <= 0 {
				dr[j] = 0
			}
		}
	}
	gu.Mul(mm.X.T(), mm.dz)
	var reg float64
	for i, v := range mm.p {
		reg += v * v
		grad[i] += mm.Beta * v
	}
	return obj + 0.5*mm.Beta*reg
}
