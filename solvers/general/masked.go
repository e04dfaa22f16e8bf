package general

import (
	"fmt"
	"math"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/gonum/mat"
)

// Masked is the operator of row-masked copies of one data matrix X (r×d):
// its input is In blocks x_1 … x_In of d coordinates, its output Out blocks
// of r/Fold rows, and
//
//	(Ax)_o = S Σ_{t: Out(t) = o} m_t ∘ (X x_{In(t)}),
//
// a sum of terms each with its own mask m_t ∈ ℝ^r (a diagonal matrix, for
// example an activation pattern D or a sign pattern 2D − I), where S sums
// the Fold stacked row blocks of r/Fold rows (S = I when Fold is 1). The
// programs of the two-hidden-layer sub-networks have F and G of this form
// (every block of theirs is a masked X), and so do those of the CNNs with
// average pooling, X stacking the patches of every image: G_i = (2D_i − I)X
// and F_i sums the masked patches of each image (Fold = patches). A product costs one r×d by d×In matrix product
// and r per term, where the dense (Out·r)×(In·d) matrix would be read whole:
// X is read once for all blocks, and stays in cache.
//
// A Masked is not safe for concurrent use: its products share scratch (so
// that they allocate nothing), as the solvers of a program, which run one
// product at a time, need.
type Masked struct {
	x             *mat.Dense
	fold, in, out int
	terms         []MaskTerm

	z, w []float64 // r×In scratch
}

// MaskTerm is one term of a Masked operator: m ∘ (X x_In) added to output
// block Out.
type MaskTerm struct {
	In, Out int
	Mask    []float64 // r
}

// NewMasked returns the operator of the terms on X with fold stacked row
// blocks summed (1: none), in input blocks and out output blocks, checking
// every index and mask.
func NewMasked(x *mat.Dense, fold, in, out int, terms []MaskTerm) (*Masked, error) {
	if x == nil {
		return nil, fmt.Errorf("general: Masked has no data matrix X")
	}
	r, _ := x.Dims()
	if in < 1 || out < 1 {
		return nil, fmt.Errorf("general: Masked with %d input and %d output blocks, need ≥ 1 of each", in, out)
	}
	if fold < 1 || r%fold != 0 {
		return nil, fmt.Errorf("general: Masked folds the %d rows of X into %d blocks: need a divisor of %d", r, fold, r)
	}
	for k, t := range terms {
		switch {
		case t.In < 0 || t.In >= in:
			return nil, fmt.Errorf("general: Masked term %d reads input block %d of %d", k, t.In, in)
		case t.Out < 0 || t.Out >= out:
			return nil, fmt.Errorf("general: Masked term %d writes output block %d of %d", k, t.Out, out)
		case len(t.Mask) != r:
			return nil, fmt.Errorf("general: Masked term %d has a mask of %d entries, X has %d rows", k, len(t.Mask), r)
		}
		for i, v := range t.Mask {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return nil, fmt.Errorf("general: Masked term %d has mask entry %d = %v", k, i, v)
			}
		}
	}
	return &Masked{x: x, fold: fold, in: in, out: out, terms: terms}, nil
}

// Dims returns (Out·r/Fold, In·d).
func (m *Masked) Dims() (int, int) {
	r, d := m.x.Dims()
	return m.out * r / m.fold, m.in * d
}

func (m *Masked) scratch() (z, w []float64) {
	r, _ := m.x.Dims()
	if m.z == nil {
		m.z, m.w = make([]float64, r*m.in), make([]float64, r*m.in)
	}
	return m.z, m.w
}

// Apply sets dst = Ax: Z = X[x_1 … x_In] once, then the masked rows.
func (m *Masked) Apply(dst, x []float64) {
	r, d := m.x.Dims()
	z, _ := m.scratch()
	blas64.Gemm(blas.NoTrans, blas.Trans, 1, m.x.RawMatrix(),
		blas64.General{Rows: m.in, Cols: d, Stride: d, Data: x},
		0, blas64.General{Rows: r, Cols: m.in, Stride: m.in, Data: z})
	clear(dst)
	rb := r / m.fold
	for _, t := range m.terms {
		o := dst[t.Out*rb : (t.Out+1)*rb]
		for c := 0; c < m.fold; c++ {
			for i, v := range t.Mask[c*rb : (c+1)*rb] {
				if v != 0 {
					o[i] += v * z[(c*rb+i)*m.in+t.In]
				}
			}
		}
	}
}

// ApplyT sets dst = Aᵀy: block x_b = Xᵀ Σ_{t: In(t) = b} m_t ∘ y_{Out(t)},
// one (In×r)·(r×d) product for all blocks.
func (m *Masked) ApplyT(dst, y []float64) {
	r, d := m.x.Dims()
	_, w := m.scratch()
	clear(w)
	rb := r / m.fold
	for _, t := range m.terms {
		yo := y[t.Out*rb : (t.Out+1)*rb]
		for c := 0; c < m.fold; c++ {
			for i, v := range t.Mask[c*rb : (c+1)*rb] {
				w[(c*rb+i)*m.in+t.In] += v * yo[i]
			}
		}
	}
	blas64.Gemm(blas.Trans, blas.NoTrans, 1, blas64.General{Rows: r, Cols: m.in, Stride: m.in, Data: w},
		m.x.RawMatrix(), 0, blas64.General{Rows: m.in, Cols: d, Stride: d, Data: dst})
}

// Dense returns the operator's matrix: row i of output block o, columns of
// input block b, is Σ_t Σ_c m_t[c·r/Fold + i] x_{c·r/Fold + i}ᵀ over its
// terms.
func (m *Masked) Dense() *mat.Dense {
	rows, cols := m.Dims()
	r, d := m.x.Dims()
	rb := r / m.fold
	a := mat.NewDense(rows, cols, nil)
	for _, t := range m.terms {
		for i, v := range t.Mask {
			if v == 0 {
				continue
			}
			dst := a.RawRowView(t.Out*rb + i%rb)[t.In*d : (t.In+1)*d]
			for k, xv := range m.x.RawRowView(i) {
				dst[k] += v * xv
			}
		}
	}
	return a
}

// BlockDiagonal returns blkdiag(A_1, …, A_K) of Masked operators on one
// data matrix X with one fold, as one Masked operator: block g's input and
// output blocks follow those of the blocks before it. With the groups'
// constraint blocks it is Program.BlockG.
func BlockDiagonal(blocks []*Masked) (*Masked, error) {
	if len(blocks) == 0 {
		return nil, fmt.Errorf("general: BlockDiagonal of no blocks")
	}
	x, fold := blocks[0].x, blocks[0].fold
	var terms []MaskTerm
	in, out := 0, 0
	for g, b := range blocks {
		if b.x != x || b.fold != fold {
			return nil, fmt.Errorf("general: BlockDiagonal: block %d is on another data matrix or fold than block 0", g)
		}
		for _, t := range b.terms {
			terms = append(terms, MaskTerm{In: in + t.In, Out: out + t.Out, Mask: t.Mask})
		}
		in, out = in+b.in, out+b.out
	}
	return NewMasked(x, fold, in, out, terms)
}
