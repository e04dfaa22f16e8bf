package gated

import (
	"errors"
	"fmt"
	"math"

	"github.com/convexnn/convexnn/solvers"
	"gonum.org/v1/gonum/mat"
)

// Decomposition is a ReLU network recovered from a gated solution by a
// cone decomposition, with what it costs.
type Decomposition struct {
	Network *solvers.MultiNetwork
	// GatedObjective is the gated program's objective at the solution;
	// Objective the ReLU network's training objective with weight decay
	// at its optimal scaling, L(f(X), T) + β Σ_j ‖u_j‖‖a_j‖; Gap is
	// (Objective − GatedObjective)/|GatedObjective| ≥ 0 when the training
	// outputs agree.
	GatedObjective, Objective, Gap float64
	// Mismatch is the largest difference between the two networks' outputs
	// on the training rows (0 up to rounding: a row exactly on a gate's
	// hyperplane is the only exception).
	Mismatch float64
}

// Decompose turns the gated solution w (gates g_i, the columns of gates, as
// drawn for p) into a ReLU network with the same outputs on the training
// rows, by a cone decomposition (Mishkin, Sahiner and Pilanci 2022): each
// column w of W_i is written u − v with u, v in the cone
// K_i = {u : (2D_i − I)Xu ≥ 0}, where D_iXw = (Xu)₊ − (Xv)₊. Here v = t g_i
// (g_i lies in K_i: (2D_i − I)Xg_i = |Xg_i|) and u = w + t g_i with the
// least t ≥ 0 that puts u in K_i, t = max_k −((2D_i−I)Xw)_k / |Xg_i|_k over
// the rows where w leaves the cone. Each gate gives a neuron w_j + t_j g_i
// per output j (output weight e_j) and one neuron g_i/‖g_i‖ with output
// −‖g_i‖ t (all outputs at once). The decomposition is exact on the
// training data; the weight decay grows from β‖W_i‖ to what Gap reports.
func Decompose(p *Problem, gates *mat.Dense, w Weights, bias bool) (*Decomposition, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	n, d, np, c := p.Dims()
	if err := checkWeights(w, np, d, c); err != nil {
		return nil, err
	}
	if gates == nil {
		return nil, errors.New("gated: Decompose needs the gate vectors")
	}
	if gd, gp := gates.Dims(); gd != d || gp != np {
		return nil, fmt.Errorf("gated: gate vectors are %d×%d, the program has %d gates of %d entries", gd, gp, np, d)
	}
	var xg, xw mat.Dense
	xg.Mul(p.X, gates)
	var us, as [][]float64 // neurons and their output weights
	for i, b := range w {
		if mat.Norm(b, 2) == 0 {
			continue
		}
		xw.Mul(p.X, b)
		t := make([]float64, c)
		for j := 0; j < c; j++ {
			for k := 0; k < n; k++ {
				s := xw.At(k, j)
				if !p.Gates[i][k] {
					s = -s
				}
				if s >= 0 {
					continue
				}
				if a := math.Abs(xg.At(k, i)); a > 0 {
					t[j] = math.Max(t[j], -s/a)
				}
			}
		}
		g := mat.Col(nil, i, gates)
		gn := 0.0
		for _, v := range g {
			gn += v * v
		}
		gn = math.Sqrt(gn)
		neg := false
		for j := 0; j < c; j++ {
			col := mat.Col(nil, j, b)
			nz := false
			for l := range col {
				col[l] += t[j] * g[l]
				nz = nz || col[l] != 0
			}
			if nz {
				a := make([]float64, c)
				a[j] = 1
				us, as = append(us, col), append(as, a)
			}
			neg = neg || t[j] > 0
		}
		if neg && gn > 0 {
			u := make([]float64, d)
			for l := range u {
				u[l] = g[l] / gn
			}
			a := make([]float64, c)
			for j := range a {
				a[j] = -gn * t[j]
			}
			us, as = append(us, u), append(as, a)
		}
	}
	m := max(len(us), 1)
	net := &solvers.MultiNetwork{U: mat.NewDense(d, m, nil), A: mat.NewDense(m, c, nil), Bias: bias}
	var reg float64
	for j := range us {
		net.U.SetCol(j, us[j])
		net.A.SetRow(j, as[j])
		reg += mat.Norm(mat.NewVecDense(d, us[j]), 2) * mat.Norm(mat.NewVecDense(c, as[j]), 2)
	}
	// The training outputs, on X as the program holds it (with its ones
	// column when bias: the network's own input is the raw rows).
	f := p.reluOutputs(net)
	fg, err := p.Predict(w)
	if err != nil {
		return nil, err
	}
	var mis float64
	for k := 0; k < n; k++ {
		for j, v := range f.RawRowView(k) {
			mis = math.Max(mis, math.Abs(v-fg.At(k, j)))
		}
	}
	gobj := p.LossValue(fg) + p.Beta*p.Regularizer(w)
	obj := p.LossValue(f) + p.Beta*reg
	return &Decomposition{Network: net, GatedObjective: gobj, Objective: obj,
		Gap: (obj - gobj) / math.Max(math.Abs(gobj), 1e-300), Mismatch: mis}, nil
}

// reluOutputs returns Σ_j (Xu_j)₊ a_jᵀ on the program's X.
func (p *Problem) reluOutputs(net *solvers.MultiNetwork) *mat.Dense {
	var h mat.Dense
	h.Mul(p.X, net.U)
	r, _ := h.Dims()
	for k := 0; k < r; k++ {
		row := h.RawRowView(k)
		for j, v := range row {
			row[j] = math.Max(v, 0)
		}
	}
	var f mat.Dense
	f.Mul(&h, net.A)
	return &f
}
