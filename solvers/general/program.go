// Package general is the paper's general convex training program and its
// ADMM (appendix "Extending the ADMM Approach to More Sophisticated ReLU
// Networks"): eq. (ct_general),
//
//	min_{w, w′} ℓ(F(w − w′), y) + β(‖w‖_{2,1} + ‖w′‖_{2,1})   s.t.  Gw ≥ 0,  Gw′ ≥ 0,
//
// with F and G linear operators built from the data and the activation
// patterns and ‖·‖_{2,1} the sum of the ℓ₂ norms of the groups of a
// partition. The two-layer program eq. (convex_general) is the instance
// F = [D_1X … D_PX], G = blkdiag((2D_i − I)X) with P groups of size d
// (TwoLayer); batch normalization, two-hidden-layer sub-networks and
// two-layer CNNs are others. G is block diagonal over the groups in every
// instance of the paper, and Program takes it so: one operator per group,
// which keeps the ADMM's u-update and the certificate separable.
package general

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

// Operator is a linear map A: ℝ^c → ℝ^r with its adjoint.
type Operator interface {
	Dims() (r, c int)
	// Apply sets dst = Ax (len(dst) = r, len(x) = c).
	Apply(dst, x []float64)
	// ApplyT sets dst = Aᵀy (len(dst) = c, len(y) = r).
	ApplyT(dst, y []float64)
}

// Matrix is the Operator of a dense matrix.
type Matrix struct{ M *mat.Dense }

// Dims returns the matrix's dimensions.
func (m Matrix) Dims() (int, int) { return m.M.Dims() }

// Apply sets dst = Mx.
func (m Matrix) Apply(dst, x []float64) {
	raw := m.M.RawMatrix()
	blas64.Gemv(blas.NoTrans, 1, raw, blas64.Vector{N: len(x), Inc: 1, Data: x}, 0, blas64.Vector{N: len(dst), Inc: 1, Data: dst})
}

// ApplyT sets dst = Mᵀy.
func (m Matrix) ApplyT(dst, y []float64) {
	raw := m.M.RawMatrix()
	blas64.Gemv(blas.Trans, 1, raw, blas64.Vector{N: len(y), Inc: 1, Data: y}, 0, blas64.Vector{N: len(dst), Inc: 1, Data: dst})
}

// Group is one group of the partition: its size and the block G_g of G on
// it (nil: the group is unconstrained).
type Group struct {
	Size int
	G    Operator
}

// Program is eq. (ct_general). F maps the N = Σ Size coordinates of w (and
// of w′, partitioned alike) to the n predictions; group g's constraint is
// G_g w_g ≥ 0 (and G_g w′_g ≥ 0).
type Program struct {
	F      Operator
	Groups []Group
	// BlockG, when not nil, is blkdiag(G_1, …, G_K) as one M×N operator
	// (groups without G have no rows), for programs whose products are
	// much cheaper whole than group by group (Masked operators on one
	// shared X: one matrix product for all groups). The solvers use it for
	// every product with G; the Groups' blocks remain for their factors and
	// certificates. It must equal them.
	BlockG Operator
	Y      []float64
	Loss   solvers.Loss
	Beta   float64
}

// Dims returns the number of predictions n, of coordinates N (of w; w′
// has as many) and of constraint rows M (of Gw; Gw′ has as many).
func (p *Program) Dims() (n, nv, m int) {
	n, _ = p.F.Dims()
	for _, g := range p.Groups {
		nv += g.Size
		if g.G != nil {
			r, _ := g.G.Dims()
			m += r
		}
	}
	return n, nv, m
}

// Validate reports the first problem with p, naming it.
func (p *Program) Validate() error {
	if p == nil || p.F == nil {
		return errors.New("general: program has no operator F")
	}
	if len(p.Groups) == 0 {
		return errors.New("general: program has no groups")
	}
	n, c := p.F.Dims()
	nv := 0
	for g, gr := range p.Groups {
		if gr.Size < 1 {
			return fmt.Errorf("general: group %d has size %d", g, gr.Size)
		}
		if gr.G != nil {
			if _, gc := gr.G.Dims(); gc != gr.Size {
				return fmt.Errorf("general: group %d has %d coordinates but its constraint block G_g has %d columns", g, gr.Size, gc)
			}
		}
		nv += gr.Size
	}
	if c != nv {
		return fmt.Errorf("general: F has %d columns, the groups %d coordinates", c, nv)
	}
	if len(p.Y) != n {
		return fmt.Errorf("general: F has %d rows (predictions) but y has %d entries", n, len(p.Y))
	}
	if p.BlockG != nil {
		_, _, m := p.Dims()
		if r, c := p.BlockG.Dims(); r != m || c != nv {
			return fmt.Errorf("general: BlockG is %d×%d, the groups' blocks make %d×%d", r, c, m, nv)
		}
	}
	if err := p.Loss.CheckLabels(p.Y); err != nil {
		return fmt.Errorf("general: %w", err)
	}
	switch p.Loss {
	case solvers.SquaredLoss, solvers.HingeLoss, solvers.BCELoss, solvers.LogisticLoss:
	default:
		return fmt.Errorf("general: unknown loss %v", p.Loss)
	}
	if !(p.Beta > 0) || math.IsInf(p.Beta, 0) {
		return fmt.Errorf("general: β = %v, need 0 < β < ∞", p.Beta)
	}
	return nil
}

// layout holds the offsets of the groups in w (N) and in Gw (M).
type layout struct {
	off, roff []int
}

func (p *Program) layout() layout {
	l := layout{off: make([]int, len(p.Groups)+1), roff: make([]int, len(p.Groups)+1)}
	for g, gr := range p.Groups {
		l.off[g+1] = l.off[g] + gr.Size
		r := 0
		if gr.G != nil {
			r, _ = gr.G.Dims()
		}
		l.roff[g+1] = l.roff[g] + r
	}
	return l
}

// Objective returns ℓ(F(w − w′), y) + β(‖w‖_{2,1} + ‖w′‖_{2,1}).
func (p *Program) Objective(w, wp []float64) (float64, error) {
	if err := p.checkPoint(w, wp); err != nil {
		return 0, err
	}
	n, nv, _ := p.Dims()
	diff := make([]float64, nv)
	floats.SubTo(diff, w, wp)
	yhat := make([]float64, n)
	p.F.Apply(yhat, diff)
	l := p.layout()
	var reg float64
	for g := range p.Groups {
		reg += floats.Norm(w[l.off[g]:l.off[g+1]], 2) + floats.Norm(wp[l.off[g]:l.off[g+1]], 2)
	}
	return p.Loss.Value(yhat, p.Y) + p.Beta*reg, nil
}

// Violation returns the largest violation max(0, −min(G_g w_g), −min(G_g w′_g)).
func (p *Program) Violation(w, wp []float64) (float64, error) {
	if err := p.checkPoint(w, wp); err != nil {
		return 0, err
	}
	l := p.layout()
	var viol float64
	if p.BlockG != nil {
		_, _, m := p.Dims()
		r := make([]float64, m)
		for _, x := range [][]float64{w, wp} {
			p.BlockG.Apply(r, x)
			for _, v := range r {
				viol = math.Max(viol, -v)
			}
		}
		return viol, nil
	}
	for g, gr := range p.Groups {
		if gr.G == nil {
			continue
		}
		r := make([]float64, l.roff[g+1]-l.roff[g])
		for _, x := range [][]float64{w, wp} {
			gr.G.Apply(r, x[l.off[g]:l.off[g+1]])
			for _, v := range r {
				viol = math.Max(viol, -v)
			}
		}
	}
	return viol, nil
}

func (p *Program) checkPoint(w, wp []float64) error {
	_, nv, _ := p.Dims()
	if len(w) != nv || len(wp) != nv {
		return fmt.Errorf("general: point has %d and %d coordinates, the program %d", len(w), len(wp), nv)
	}
	for _, x := range [][]float64{w, wp} {
		for i, v := range x {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return fmt.Errorf("general: point coordinate %d is %v", i, v)
			}
		}
	}
	return nil
}

// Blocks is the operator [B_1 … B_K] of dense blocks side by side (equal
// row counts): Bx = Σ_g B_g x_g, the F of a program whose predictions sum
// one term per group.
type Blocks []*mat.Dense

// Dims returns the rows of the blocks and the sum of their columns.
func (b Blocks) Dims() (int, int) {
	r, c := 0, 0
	for _, m := range b {
		mr, mc := m.Dims()
		r, c = mr, c+mc
	}
	return r, c
}

// Apply sets dst = Σ_g B_g x_g.
func (b Blocks) Apply(dst, x []float64) {
	clear(dst)
	o := 0
	for _, m := range b {
		_, mc := m.Dims()
		blas64.Gemv(blas.NoTrans, 1, m.RawMatrix(), blas64.Vector{N: mc, Inc: 1, Data: x[o : o+mc]}, 1, blas64.Vector{N: len(dst), Inc: 1, Data: dst})
		o += mc
	}
}

// ApplyT sets dst_g = B_gᵀy.
func (b Blocks) ApplyT(dst, y []float64) {
	o := 0
	for _, m := range b {
		_, mc := m.Dims()
		blas64.Gemv(blas.Trans, 1, m.RawMatrix(), blas64.Vector{N: len(y), Inc: 1, Data: y}, 0, blas64.Vector{N: mc, Inc: 1, Data: dst[o : o+mc]})
		o += mc
	}
}

// Blocks returns the groups' sizes and constraint blocks (nil: none).
func (p *Program) Blocks() (sizes []int, blocks []Operator) {
	for _, g := range p.Groups {
		sizes, blocks = append(sizes, g.Size), append(blocks, g.G)
	}
	return sizes, blocks
}
