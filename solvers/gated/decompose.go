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
// K_i = {u : (2D_i − I)Xu ≥ 0}, where D_iXw = (Xu)₊ − (Xv)₊. Two
// decompositions are formed per gate and the one of smaller weight decay
// kept: the least-ℓ2 one (minNormShift: ‖u‖² + ‖v‖² least, per output),
// and the closed form v = t g_i (g_i lies in K_i: (2D_i − I)Xg_i = |Xg_i|)
// with the least t ≥ 0 that puts u = w + t g_i in K_i. Each output j gives
// neurons u_j (output weight e_j) and v_j (−e_j); the closed form shares
// one neuron g_i/‖g_i‖ with output −‖g_i‖t. The decomposition is exact on
// the training data; the weight decay grows from β‖W_i‖ to what Gap
// reports.
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
	rowNorm := make([]float64, n)
	for k := 0; k < n; k++ {
		for _, v := range p.X.RawRowView(k) {
			rowNorm[k] += v * v
		}
	}
	var us, as [][]float64 // neurons and their output weights
	for i, b := range w {
		if mat.Norm(b, 2) == 0 {
			continue
		}
		xw.Mul(p.X, b)
		g := mat.Col(nil, i, gates)
		sign := func(k int) float64 {
			if p.Gates[i][k] {
				return 1
			}
			return -1
		}
		// The closed form: one shift t_j·g per output.
		t := make([]float64, c)
		for j := 0; j < c; j++ {
			for k := 0; k < n; k++ {
				if s := sign(k) * xw.At(k, j); s < 0 {
					if a := math.Abs(xg.At(k, i)); a > 0 {
						t[j] = math.Max(t[j], -s/a)
					}
				}
			}
		}
		closedU, closedA, closedCost := closedForm(b, g, t)
		// The least-norm decompositions of the block written as a sum of
		// rank-one terms w_r a_rᵀ: by its columns (a_r = e_j) and, with
		// several outputs, by its singular vectors (w_r = σ_r p_r, a_r = q_r).
		mnU, mnA, mnCost := leastNormTerms(p, i, rowNorm, g, mat.Col(nil, i, &xg), columnTerms(b))
		if c > 1 {
			if su, sa, sc := leastNormTerms(p, i, rowNorm, g, mat.Col(nil, i, &xg), singularTerms(b)); sc < mnCost {
				mnU, mnA, mnCost = su, sa, sc
			}
		}
		if mnCost <= closedCost {
			us, as = append(us, mnU...), append(as, mnA...)
		} else {
			us, as = append(us, closedU...), append(as, closedA...)
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

// rankOne is a term w aᵀ of a block: input weights w, unit output vector a.
type rankOne struct{ w, a []float64 }

func columnTerms(b *mat.Dense) []rankOne {
	_, c := b.Dims()
	var out []rankOne
	for j := 0; j < c; j++ {
		a := make([]float64, c)
		a[j] = 1
		out = append(out, rankOne{mat.Col(nil, j, b), a})
	}
	return out
}

func singularTerms(b *mat.Dense) []rankOne {
	var svd mat.SVD
	if !svd.Factorize(b, mat.SVDThin) {
		return nil
	}
	var pm, qm mat.Dense
	svd.UTo(&pm)
	svd.VTo(&qm)
	var out []rankOne
	for r, sv := range svd.Values(nil) {
		if sv == 0 {
			continue
		}
		w := mat.Col(nil, r, &pm)
		for l := range w {
			w[l] *= sv
		}
		out = append(out, rankOne{w, mat.Col(nil, r, &qm)})
	}
	return out
}

// leastNormTerms decomposes every term's w into u − v in gate i's cone
// (minNormShift) and returns the neurons u (output a) and v (output −a)
// with their cost Σ(‖u‖ + ‖v‖)‖a‖.
func leastNormTerms(p *Problem, i int, rowNorm, g, xg []float64, terms []rankOne) (us, as [][]float64, cost float64) {
	n, d := p.X.Dims()
	if len(terms) == 0 {
		return nil, nil, math.Inf(1)
	}
	xw := make([]float64, n)
	for _, t := range terms {
		if floats64Norm(t.w) == 0 {
			continue
		}
		mat.NewVecDense(n, xw).MulVec(p.X, mat.NewVecDense(d, t.w))
		v := minNormShift(p.X, p.Gates[i], rowNorm, t.w, xw, g, xg)
		u := make([]float64, d)
		for l := range u {
			u[l] = t.w[l] + v[l]
		}
		an := floats64Norm(t.a)
		us, as = append(us, u), append(as, t.a)
		cost += floats64Norm(u) * an
		if vn := floats64Norm(v); vn > 0 {
			na := make([]float64, len(t.a))
			for j, x := range t.a {
				na[j] = -x
			}
			us, as = append(us, v), append(as, na)
			cost += vn * an
		}
	}
	return us, as, cost
}

// closedForm returns the neurons of the decomposition by the gate vector
// g: w_j + t_j g per output j (output weight e_j) and g/‖g‖ with output
// −‖g‖t, and their cost Σ‖u‖‖a‖.
func closedForm(b *mat.Dense, g, t []float64) (us, as [][]float64, cost float64) {
	d, c := b.Dims()
	gn := floats64Norm(g)
	neg := false
	for j := 0; j < c; j++ {
		col := mat.Col(nil, j, b)
		for l := range col {
			col[l] += t[j] * g[l]
		}
		if nr := floats64Norm(col); nr > 0 {
			a := make([]float64, c)
			a[j] = 1
			us, as = append(us, col), append(as, a)
			cost += nr
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
		cost += floats64Norm(a)
	}
	return us, as, cost
}

// minNormShift returns v with w + v and v in the gate's cone
// K = {u : s_k x_kᵀu ≥ 0 for all k} (s_k = ±1 by the gate D), minimizing
// ‖w + v‖² + ‖v‖² (the least-ℓ2 cone decomposition): with z = v + w/2 it
// is the projection of 0 onto {z : s_k x_kᵀz ≥ |x_kᵀw|/2}, solved by
// coordinate ascent on its dual (z = Σ λ_k s_k x_k, λ ≥ 0) over the rows
// that bind, found by passes over all rows. What the iterations leave
// violated is closed exactly by a shift along g, which lies in K.
func minNormShift(x *mat.Dense, gate []bool, rowNorm, w, xw, g, xg []float64) []float64 {
	n, d := x.Dims()
	sgn := func(k int) float64 {
		if gate[k] {
			return 1
		}
		return -1
	}
	bp := make([]float64, n)
	scale := 0.0
	for k := 0; k < n; k++ {
		bp[k] = math.Abs(xw[k]) / 2
		scale = math.Max(scale, bp[k])
	}
	z := make([]float64, d)
	lam := make([]float64, n)
	az := make([]float64, n)
	tol := 1e-10 * math.Max(scale, 1e-300)
	for pass := 0; pass < 50; pass++ {
		// All rows: a_kᵀz, and the working set of binding rows.
		var work []int
		worst := 0.0
		for k := 0; k < n; k++ {
			row := x.RawRowView(k)
			var s float64
			for l, v := range row {
				s += v * z[l]
			}
			az[k] = sgn(k) * s
			if viol := bp[k] - az[k]; (viol > tol || lam[k] > 0) && rowNorm[k] > 0 {
				work = append(work, k)
				worst = math.Max(worst, viol)
			}
		}
		if worst <= tol {
			break
		}
		for sweep := 0; sweep < 200; sweep++ {
			moved := 0.0
			for _, k := range work {
				row := x.RawRowView(k)
				sk := sgn(k)
				var s float64
				for l, v := range row {
					s += v * z[l]
				}
				step := (bp[k] - sk*s) / rowNorm[k]
				nl := math.Max(0, lam[k]+step)
				delta := nl - lam[k]
				if delta == 0 {
					continue
				}
				lam[k] = nl
				for l, v := range row {
					z[l] += delta * sk * v
				}
				moved = math.Max(moved, math.Abs(delta)*math.Sqrt(rowNorm[k]))
			}
			if moved <= tol {
				break
			}
		}
	}
	v := make([]float64, d)
	for l := range v {
		v[l] = z[l] - w[l]/2
	}
	// Close what is left: t g with s_k x_kᵀ(w + v + tg) ≥ 0 and
	// s_k x_kᵀ(v + tg) ≥ 0, |x_kᵀg| = s_k x_kᵀg.
	t := 0.0
	for k := 0; k < n; k++ {
		row := x.RawRowView(k)
		var xv float64
		for l, val := range row {
			xv += val * v[l]
		}
		sk := sgn(k)
		need := math.Max(-sk*(xw[k]+xv), -sk*xv)
		if need > 0 {
			if a := math.Abs(xg[k]); a > 0 {
				t = math.Max(t, need/a)
			}
		}
	}
	for l := range v {
		v[l] += t * g[l]
	}
	return v
}

func floats64Norm(v []float64) float64 {
	var s float64
	for _, x := range v {
		s += x * x
	}
	return math.Sqrt(s)
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
