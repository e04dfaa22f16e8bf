package cnn

import (
	"context"
	"errors"
	"fmt"
	"math"

	"github.com/convexnn/convexnn/solvers"
	"github.com/convexnn/convexnn/solvers/ipm"
	"gonum.org/v1/gonum/floats"
	"gonum.org/v1/gonum/mat"
)

// RobustResult is the outcome of SolveRobust.
type RobustResult struct {
	W, Wp []float64 // v_i and w_i stacked, as Program's points
	// Objective is the robust objective at (W, Wp); PointLoss[m] is image
	// m's term max(0, 1 − y_m f_m + ε‖g_m‖₁) (before the 1/n), the certified
	// worst-case hinge loss of the recovered network on the ℓ∞ ball around
	// image m (see SolveRobust).
	Objective float64
	PointLoss []float64
	Status    ipm.Status
	// Gap is the interior-point method's relative duality gap.
	Gap        float64
	Iterations int
}

// masks returns, per patch position, which entries of a patch are image
// pixels (not padding), as 1/0.
func (p *Problem) masks() [][]float64 {
	s, cv := p.Shape, p.Conv
	pr, pc := cv.Positions(s)
	f := p.Filter()
	out := make([][]float64, 0, pr*pc)
	for a := 0; a < pr; a++ {
		for b := 0; b < pc; b++ {
			m := make([]float64, f)
			e := 0
			for c := 0; c < s.C; c++ {
				for i := 0; i < cv.Size; i++ {
					for j := 0; j < cv.Size; j++ {
						h, w := a*cv.Stride+i-cv.Pad, b*cv.Stride+j-cv.Pad
						if h >= 0 && h < s.H && w >= 0 && w < s.W {
							m[e] = 1
						}
						e++
					}
				}
			}
			out = append(out, m) // the bias entry, if any, stays 0
		}
	}
	return out
}

// pixelOf returns, per patch position and patch entry, the pixel index
// (CHW) it reads, −1 for padding and the bias entry.
func (p *Problem) pixelOf() [][]int {
	s, cv := p.Shape, p.Conv
	pr, pc := cv.Positions(s)
	out := make([][]int, 0, pr*pc)
	for a := 0; a < pr; a++ {
		for b := 0; b < pc; b++ {
			idx := make([]int, 0, p.Filter())
			for c := 0; c < s.C; c++ {
				for i := 0; i < cv.Size; i++ {
					for j := 0; j < cv.Size; j++ {
						h, w := a*cv.Stride+i-cv.Pad, b*cv.Stride+j-cv.Pad
						if h >= 0 && h < s.H && w >= 0 && w < s.W {
							idx = append(idx, (c*s.H+h)*s.W+w)
						} else {
							idx = append(idx, -1)
						}
					}
				}
			}
			if cv.Bias {
				idx = append(idx, -1)
			}
			out = append(out, idx)
		}
	}
	return out
}

// MaxRobustVariables bounds SolveRobust's variables (its program is dense).
const MaxRobustVariables = 4000

// SolveRobust solves the convex adversarial training program of a CNN
// with average pooling and the hinge or squared loss against perturbations
// ‖δ‖_∞ ≤ eps of every image's pixels (the appendix "Convex Adversarial
// Training for ConvNets", as section 4 does for the two-layer network):
// the patterns must hold on the whole ball, and the loss is its worst case
// there, both in closed form. With the patterns fixed, patch k of x + δ is
// x_k + P_kδ, so for filter u the sign constraint holds on the ball iff
//
//	(2D_ik − I) x_kᵀu ≥ eps·‖u‖_{1,k}   (‖·‖_{1,k}: over the patch's pixels, padding excluded),
//
// and then f(x + δ) = f(x) + δᵀg with g = (1/K) Σ_i Σ_k D_ik P_kᵀ(v_i − w_i),
// whose worst hinge loss is max(0, 1 − y f(x) + eps‖g‖₁) and worst squared
// loss ½(|f(x) − y| + eps‖g‖₁)². The program
//
//	min (1/n) Σ_m max(0, 1 − y_m f_m + eps‖g_m‖₁) + β Σ_i (‖v_i‖₂ + ‖w_i‖₂)     (hinge)
//	min ½ Σ_m (|f_m − y_m| + eps‖g_m‖₁)² + β Σ_i (‖v_i‖₂ + ‖w_i‖₂)            (squared)
//
// s.t. the robust sign constraints, is a cone LP (QP for the squared loss;
// the ℓ₁ norms by epigraphs: n·C·H·W auxiliaries for the g_m), solved
// densely by ipm.SolveConeQP: small programs only. At its solution the
// recovered network's loss at any x_m + δ in the ball is at most
// PointLoss[m] (Network.PGD cannot beat it). BCE and logistic need an
// exponential cone, which the method does not have.
func (p *Problem) SolveRobust(ctx context.Context, eps, tol float64) (*RobustResult, error) {
	switch {
	case p.Pool != AvgPool:
		return nil, errors.New("cnn: robust training is available for average pooling only (max pooling's robust winners are not in closed form here)")
	case p.Loss != solvers.HingeLoss && p.Loss != solvers.SquaredLoss:
		return nil, fmt.Errorf("cnn: robust training is available for the hinge and squared losses (cone programs), not %v", p.Loss)
	case !(eps > 0) || math.IsInf(eps, 0):
		return nil, fmt.Errorf("cnn: robust training needs a radius 0 < ε < ∞, got %v", eps)
	case len(p.Signs) == 0:
		return nil, errors.New("cnn: no patterns (SamplePatterns)")
	}
	n, _ := p.X.Dims()
	f, np, nk := p.Filter(), len(p.Signs), len(p.Patches)
	npix := p.Shape.C * p.Shape.H * p.Shape.W
	// Variables: v (np·f), w (np·f), t (2np), a (np·f), b (np·f), ξ (n), e (n·npix).
	ov, ow, ot, oa, ob := 0, np*f, 2*np*f, 2*np*f+2*np, 3*np*f+2*np
	oxi := 4*np*f + 2*np
	oe := oxi + n
	nx := oe + n*npix
	if nx > MaxRobustVariables {
		return nil, fmt.Errorf("cnn: the robust program has %d variables, the dense interior-point method takes up to %d (fewer images, patterns or pixels)", nx, MaxRobustVariables)
	}
	masks, pix := p.masks(), p.pixelOf()
	orth := 2*np*nk*n + 4*np*f + 2*n + 2*n*npix
	rows := orth + 2*np*(f+1)
	g := mat.NewDense(rows, nx, nil)
	h := make([]float64, rows)
	r := 0
	// Robust sign rows: −(2D−I) x_kᵀu + ε Σ_{l ∈ patch} |u_l| ≤ 0.
	for half, off := range []int{ov, ow} {
		aoff := []int{oa, ob}[half]
		for i := 0; i < np; i++ {
			for k, xk := range p.Patches {
				for m := 0; m < n; m++ {
					s := -1.0
					if p.Signs[i][k][m] {
						s = 1
					}
					row := g.RawRowView(r)
					floats.AddScaled(row[off+i*f:off+(i+1)*f], -s, xk.RawRowView(m))
					floats.AddScaled(row[aoff+i*f:aoff+(i+1)*f], eps, masks[k])
					r++
				}
			}
		}
	}
	// |u| ≤ a: u − a ≤ 0, −u − a ≤ 0.
	for half, off := range []int{ov, ow} {
		aoff := []int{oa, ob}[half]
		for l := 0; l < np*f; l++ {
			g.Set(r, off+l, 1)
			g.Set(r, aoff+l, -1)
			g.Set(r+1, off+l, -1)
			g.Set(r+1, aoff+l, -1)
			r += 2
		}
	}
	// The loss rows, with coef·(v, w) = f_m = (1/K) Σ_i Σ_k D_ikm x_kmᵀ(v_i − w_i):
	// hinge   −ξ_m ≤ 0 and −y_m f_m + ε Σ_q e_mq − ξ_m ≤ −1;
	// squared ±(f_m − y_m) + ε Σ_q e_mq − z_m ≤ 0 (z_m in ξ's place).
	inv := 1 / float64(nk)
	hinge := p.Loss == solvers.HingeLoss
	for m := 0; m < n; m++ {
		r1, r2 := g.RawRowView(r), g.RawRowView(r+1)
		y := p.Y[m]
		a1, a2 := 0.0, -y // the coefficients of f_m in the two rows
		if !hinge {
			a1, a2 = 1, -1
		}
		for i := 0; i < np; i++ {
			for k, xk := range p.Patches {
				if p.Signs[i][k][m] {
					for _, rc := range []struct {
						row []float64
						a   float64
					}{{r1, a1}, {r2, a2}} {
						if rc.a != 0 {
							floats.AddScaled(rc.row[ov+i*f:ov+(i+1)*f], rc.a*inv, xk.RawRowView(m))
							floats.AddScaled(rc.row[ow+i*f:ow+(i+1)*f], -rc.a*inv, xk.RawRowView(m))
						}
					}
				}
			}
		}
		for q := 0; q < npix; q++ {
			r2[oe+m*npix+q] = eps
			if !hinge {
				r1[oe+m*npix+q] = eps
			}
		}
		r1[oxi+m], r2[oxi+m] = -1, -1
		if hinge {
			h[r+1] = -1
		} else {
			h[r], h[r+1] = y, -y
		}
		r += 2
	}
	// |g_m| ≤ e_m, g_mq = (1/K) Σ_i Σ_k D_ikm (v_i − w_i)[entry of patch k at pixel q].
	for m := 0; m < n; m++ {
		// Rows r + 2q and r + 2q + 1: ±g_mq − e_mq ≤ 0.
		for q := 0; q < npix; q++ {
			rp, rn := g.RawRowView(r+2*q), g.RawRowView(r+2*q+1)
			rp[oe+m*npix+q], rn[oe+m*npix+q] = -1, -1
		}
		for i := 0; i < np; i++ {
			for k := range p.Patches {
				if !p.Signs[i][k][m] {
					continue
				}
				for l, q := range pix[k] {
					if q < 0 {
						continue
					}
					rp, rn := g.RawRowView(r+2*q), g.RawRowView(r+2*q+1)
					rp[ov+i*f+l] += inv
					rp[ow+i*f+l] -= inv
					rn[ov+i*f+l] -= inv
					rn[ow+i*f+l] += inv
				}
			}
		}
		r += 2 * npix
	}
	cone := ipm.Cone{Orthant: orth}
	for half, off := range []int{ov, ow} {
		for i := 0; i < np; i++ {
			cone.SOC = append(cone.SOC, f+1)
			g.Set(r, ot+half*np+i, -1)
			for l := 0; l < f; l++ {
				g.Set(r+1+l, off+i*f+l, -1)
			}
			r += f + 1
		}
	}
	c := make([]float64, nx)
	for i := 0; i < 2*np; i++ {
		c[ot+i] = p.Beta
	}
	qp := &ipm.ConeQP{C: c, G: g, H: h, K: cone}
	if hinge {
		for m := 0; m < n; m++ {
			c[oxi+m] = 1 / float64(n)
		}
	} else { // ½ Σ z_m²
		qp.Q = mat.NewSymDense(nx, nil)
		for m := 0; m < n; m++ {
			qp.Q.SetSym(oxi+m, oxi+m, 1)
		}
	}
	if tol == 0 {
		tol = 1e-9
	}
	res, err := ipm.SolveConeQP(ctx, qp, ipm.Options{Tol: tol})
	if err != nil {
		return nil, err
	}
	if res.X == nil {
		return nil, fmt.Errorf("cnn: the robust program's interior-point solve ended %v", res.Status)
	}
	out := &RobustResult{W: append([]float64(nil), res.X[ov:ow]...), Wp: append([]float64(nil), res.X[ow:ot]...), Status: res.Status, Gap: res.Gap, Iterations: res.Iterations}
	out.Objective, out.PointLoss = p.RobustObjective(eps, out.W, out.Wp)
	return out, nil
}

// RobustObjective returns the robust objective of SolveRobust at (w, w′)
// and its per-image worst-case loss terms (hinge: before the 1/n).
func (p *Problem) RobustObjective(eps float64, w, wp []float64) (float64, []float64) {
	n, _ := p.X.Dims()
	f, nk := p.Filter(), len(p.Patches)
	npix := p.Shape.C * p.Shape.H * p.Shape.W
	pix := p.pixelOf()
	inv := 1 / float64(nk)
	terms := make([]float64, n)
	var total float64
	for m := 0; m < n; m++ {
		var fm float64
		gm := make([]float64, npix)
		for i := range p.Signs {
			for k, xk := range p.Patches {
				if !p.Signs[i][k][m] {
					continue
				}
				for l, q := range pix[k] {
					d := w[i*f+l] - wp[i*f+l]
					fm += inv * xk.At(m, l) * d
					if q >= 0 {
						gm[q] += inv * d
					}
				}
			}
		}
		if p.Loss == solvers.HingeLoss {
			terms[m] = math.Max(0, 1-p.Y[m]*fm+eps*floats.Norm(gm, 1))
		} else {
			e := math.Abs(fm-p.Y[m]) + eps*floats.Norm(gm, 1)
			terms[m] = e * e / 2
		}
		total += terms[m]
	}
	var reg float64
	for i := range p.Signs {
		reg += floats.Norm(w[i*f:(i+1)*f], 2) + floats.Norm(wp[i*f:(i+1)*f], 2)
	}
	if p.Loss == solvers.HingeLoss {
		total /= float64(n)
	}
	return total + p.Beta*reg, terms
}

// RobustViolation returns the largest violation of the robust sign
// constraints at (w, w′).
func (p *Problem) RobustViolation(eps float64, w, wp []float64) float64 {
	n, _ := p.X.Dims()
	f := p.Filter()
	masks := p.masks()
	var worst float64
	for _, x := range [][]float64{w, wp} {
		for i := range p.Signs {
			u := x[i*f : (i+1)*f]
			for k, xk := range p.Patches {
				var l1 float64
				for l, v := range u {
					l1 += masks[k][l] * math.Abs(v)
				}
				for m := 0; m < n; m++ {
					s := -1.0
					if p.Signs[i][k][m] {
						s = 1
					}
					worst = math.Max(worst, eps*l1-s*floats.Dot(xk.RawRowView(m), u))
				}
			}
		}
	}
	return worst
}

// PGD attacks the image x with label y: projected gradient ascent on the
// loss (hinge max(0, 1 − y f(x + δ)) or squared ½(f(x + δ) − y)²) over
// ‖δ‖_∞ ≤ eps (steps of eps/4, from δ = 0 and from the corner the
// gradient points to), and returns the largest loss found.
func (net *Network) PGD(x []float64, y, eps float64, steps int, loss solvers.Loss) (float64, error) {
	if loss != solvers.HingeLoss && loss != solvers.SquaredLoss {
		return 0, fmt.Errorf("cnn: PGD attacks the hinge and squared losses, not %v", loss)
	}
	d := len(x)
	if d != net.Shape.C*net.Shape.H*net.Shape.W {
		return 0, fmt.Errorf("cnn: image has %d entries, the network's shape %d", d, net.Shape.C*net.Shape.H*net.Shape.W)
	}
	eval := func(z []float64) (float64, []float64, error) {
		out, err := net.Predict(mat.NewDense(1, d, z))
		if err != nil {
			return 0, nil, err
		}
		return out[0], net.inputGradient(z), nil
	}
	// lossAt returns the loss at output fz and the factor s of the
	// gradient ascent direction s·∇f.
	lossAt := func(fz float64) (float64, float64) {
		if loss == solvers.HingeLoss {
			return math.Max(0, 1-y*fz), -y
		}
		return (fz - y) * (fz - y) / 2, math.Copysign(1, fz-y)
	}
	best := 0.0
	for _, start := range []bool{false, true} {
		z := append([]float64(nil), x...)
		if start {
			fz, g, err := eval(z)
			if err != nil {
				return 0, err
			}
			_, s := lossAt(fz)
			for i := range z {
				z[i] = x[i] + eps*math.Copysign(1, s*g[i])
			}
		}
		for it := 0; it <= steps; it++ {
			fz, g, err := eval(z)
			if err != nil {
				return 0, err
			}
			l, s := lossAt(fz)
			best = math.Max(best, l)
			for i := range z {
				z[i] += eps / 4 * math.Copysign(1, s*g[i])
				z[i] = math.Min(x[i]+eps, math.Max(x[i]-eps, z[i]))
			}
		}
	}
	return best, nil
}

// inputGradient returns ∂f/∂x at the image z (a subgradient at kinks).
func (net *Network) inputGradient(z []float64) []float64 {
	p := &Problem{Shape: net.Shape, Conv: net.Conv}
	pt, _ := Patches(mat.NewDense(1, len(z), z), net.Shape, net.Conv)
	p.Patches = pt
	pix := p.pixelOf()
	grad := make([]float64, len(z))
	f, m := net.U.Dims()
	col := make([]float64, f)
	for j := 0; j < m; j++ {
		mat.Col(col, j, net.U)
		best, arg := math.Inf(-1), -1
		for k, xk := range pt {
			r := floats.Dot(xk.RawRowView(0), col)
			if net.Pool == AvgPool {
				if r > 0 {
					for l, q := range pix[k] {
						if q >= 0 {
							grad[q] += net.Alpha[j] * col[l] / float64(len(pt))
						}
					}
				}
			} else if r > best {
				best, arg = r, k
			}
		}
		if net.Pool == MaxPool && best > 0 {
			for l, q := range pix[arg] {
				if q >= 0 {
					grad[q] += net.Alpha[j] * col[l]
				}
			}
		}
	}
	return grad
}
