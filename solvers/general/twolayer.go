package general

import (
	"github.com/convexnn/convexnn/solvers"
	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/gonum/mat"
)

// TwoLayer returns the two-layer program eq. (convex_general) of p as an
// instance of eq. (ct_general): F = [D_1X … D_PX], one group of size d per
// pattern with G_i = (2D_i − I)X; w = (v_1 … v_P) and w′ = (w_1 … w_P)
// (TwoLayerWeights maps them back).
func TwoLayer(p *solvers.Program) (*Program, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	n, d, np := p.Dims()
	f := &patternSum{x: p.X.RawMatrix(), masks: make([][]float64, np), n: n, d: d, tmp: make([]float64, n)}
	gp := &Program{F: f, Y: p.Y, Loss: p.Loss, Beta: p.Beta}
	for i, di := range p.D {
		mask, sign := make([]float64, n), make([]float64, n)
		for k, on := range di {
			sign[k] = -1
			if on {
				mask[k], sign[k] = 1, 1
			}
		}
		f.masks[i] = mask
		gp.Groups = append(gp.Groups, Group{Size: d, G: &signedRows{x: p.X.RawMatrix(), sign: sign, tmp: make([]float64, n)}})
	}
	return gp, nil
}

// TwoLayerWeights returns the weights (V, W) of the two-layer program p for
// the point (w, w′) of TwoLayer(p).
func TwoLayerWeights(p *solvers.Program, w, wp []float64) solvers.Weights {
	_, d, np := p.Dims()
	return solvers.Weights{V: mat.NewDense(np, d, append([]float64(nil), w...)), W: mat.NewDense(np, d, append([]float64(nil), wp...))}
}

// patternSum is F = [D_1X … D_PX]: Fw = Σ_i D_i X w_i. Its products use
// tmp (n) as scratch: not safe for concurrent use, like signedRows.
type patternSum struct {
	x     blas64.General
	masks [][]float64
	n, d  int
	tmp   []float64
}

func (f *patternSum) Dims() (int, int) { return f.n, f.d * len(f.masks) }

func (f *patternSum) Apply(dst, w []float64) {
	clear(dst)
	t := f.tmp
	for i, m := range f.masks {
		blas64.Gemv(blas.NoTrans, 1, f.x, blas64.Vector{N: f.d, Inc: 1, Data: w[i*f.d : (i+1)*f.d]}, 0, blas64.Vector{N: f.n, Inc: 1, Data: t})
		for k, on := range m {
			dst[k] += on * t[k]
		}
	}
}

func (f *patternSum) ApplyT(dst, y []float64) {
	t := f.tmp
	for i, m := range f.masks {
		for k, on := range m {
			t[k] = on * y[k]
		}
		blas64.Gemv(blas.Trans, 1, f.x, blas64.Vector{N: f.n, Inc: 1, Data: t}, 0, blas64.Vector{N: f.d, Inc: 1, Data: dst[i*f.d : (i+1)*f.d]})
	}
}

// signedRows is G_i = diag(sign)X.
type signedRows struct {
	x    blas64.General
	sign []float64
	tmp  []float64
}

func (g *signedRows) Dims() (int, int) { return g.x.Rows, g.x.Cols }

func (g *signedRows) Apply(dst, x []float64) {
	blas64.Gemv(blas.NoTrans, 1, g.x, blas64.Vector{N: len(x), Inc: 1, Data: x}, 0, blas64.Vector{N: len(dst), Inc: 1, Data: dst})
	for k, s := range g.sign {
		dst[k] *= s
	}
}

func (g *signedRows) ApplyT(dst, y []float64) {
	for k, s := range g.sign {
		g.tmp[k] = s * y[k]
	}
	blas64.Gemv(blas.Trans, 1, g.x, blas64.Vector{N: len(y), Inc: 1, Data: g.tmp}, 0, blas64.Vector{N: len(dst), Inc: 1, Data: dst})
}
