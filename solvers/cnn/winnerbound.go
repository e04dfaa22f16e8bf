package cnn

import (
	"errors"
	"fmt"
	"math"

	"github.com/convexnn/convexnn/solvers"
	"gonum.org/v1/gonum/floats"
	"gonum.org/v1/gonum/mat"
)

// AddBoundPattern adds the max-pooling pattern that gives the filter u the
// largest lower bound of its robust response on each image (for the
// WinnerBound program): the winner a = argmax_k x_kᵀu − ε‖P_kᵀu‖₁ and the
// sign of that bound. At u the program's term for u is then
// max(0, max_k x_kᵀu − ε‖P_kᵀu‖₁), the best the bound can give. It reports
// whether the pattern is new.
func (p *Problem) AddBoundPattern(u []float64, eps float64) (bool, error) {
	switch {
	case p.Pool != MaxPool:
		return false, errors.New("cnn: AddBoundPattern is for max pooling (AddPattern)")
	case len(u) != p.Filter():
		return false, fmt.Errorf("cnn: filter direction has %d entries, filters have %d", len(u), p.Filter())
	case !(eps >= 0) || math.IsInf(eps, 0):
		return false, fmt.Errorf("cnn: ε = %v, need 0 ≤ ε < ∞", eps)
	}
	if err := solvers.CheckFinite("filter direction", mat.NewDense(1, len(u), u)); err != nil {
		return false, fmt.Errorf("cnn: %w", err)
	}
	n, _ := p.X.Dims()
	masks := p.masks()
	shrink := make([]float64, len(p.Patches)) // ε‖P_kᵀu‖₁
	for k := range shrink {
		for l, v := range u {
			shrink[k] += eps * masks[k][l] * math.Abs(v)
		}
	}
	arg := make([]int, n)
	pat := make(solvers.Pattern, n)
	for m := 0; m < n; m++ {
		best := math.Inf(-1)
		for k, xk := range p.Patches {
			if v := floats.Dot(xk.RawRowView(m), u) - shrink[k]; v > best {
				best, arg[m] = v, k
			}
		}
		pat[m] = best > 0
	}
	return p.addDistinct([]solvers.Pattern{pat}, arg), nil
}

// WinnerBoundObjective returns the WinnerBound program's objective at the
// filters u_j (u holds m filters of Filter() entries each) with output
// signs σ_j = ±1, each filter in a group of its own with its best pattern
// (AddBoundPattern), and sets grad (len(u)) to a subgradient. For image n
// with loss growing with c_n f (Loss.MarginScale), the filters with
// σ_j = −sign(c_n) lower-bound the margin and the others upper-bound it:
//
//	A_n = |c_n| (−Σ_{favourable j, b_j > 0} x_{a_j}ᵀu_j + ε‖Σ_{same j} P_{a_j}ᵀu_j‖₁
//	             + Σ_{adverse j} max(0, max_k x_kᵀu_j + ε‖P_kᵀu_j‖₁)),
//
// with b_j = max_k x_kᵀu_j − ε‖P_kᵀu_j‖₁ attained at a_j; the objective is
// (1/n) Σ_n ℓ(A_n) + β Σ_j ‖u_j‖₂ with ℓ(A) = max(0, 1 + A) (hinge) or
// log(1 + e^A) (BCE, logistic). The network Σ_j σ_j max_k (x_kᵀu_j)_+ has
// worst-case loss at most ℓ(A_n) on the ε-ball around image n. It is what
// back-prop minimizes to find patterns for the program
// (backprop.BoundPatterns); at those patterns the program's optimum is at
// most its value.
func (p *Problem) WinnerBoundObjective(eps float64, u, sigma, grad []float64) (float64, error) {
	f := p.Filter()
	switch {
	case p.Pool != MaxPool:
		return 0, errors.New("cnn: the winner bound is max pooling's")
	case p.Loss == solvers.SquaredLoss:
		return 0, errors.New("cnn: the winner bound takes the losses monotone in the margin (hinge, BCE, logistic), not the squared loss")
	case !(eps >= 0) || math.IsInf(eps, 0):
		return 0, fmt.Errorf("cnn: ε = %v, need 0 ≤ ε < ∞", eps)
	case len(u) == 0 || len(u)%f != 0 || len(u)/f != len(sigma) || len(grad) != len(u):
		return 0, fmt.Errorf("cnn: %d filter entries, %d signs and %d gradient entries for filters of %d entries", len(u), len(sigma), len(grad), f)
	}
	for _, s := range sigma {
		if s != 1 && s != -1 {
			return 0, fmt.Errorf("cnn: output sign %v, need ±1", s)
		}
	}
	m := len(sigma)
	n, _ := p.X.Dims()
	masks, pix := p.masks(), p.pixelOf()
	npix := p.Shape.C * p.Shape.H * p.Shape.W
	clear(grad)
	// Per filter and patch: ε‖P_kᵀu_j‖₁, the same for every image.
	shrink := make([]float64, m*len(p.Patches))
	for j := 0; j < m; j++ {
		for k := range p.Patches {
			for l, v := range u[j*f : (j+1)*f] {
				shrink[j*len(p.Patches)+k] += eps * masks[k][l] * math.Abs(v)
			}
		}
	}
	arg := make([]int, m)
	on := make([]bool, m)
	gpix := make([]float64, npix)
	var total float64
	inv := 1 / float64(n)
	for r := 0; r < n; r++ {
		c := p.Loss.MarginScale(p.Y[r])
		fav := -math.Copysign(1, c)
		clear(gpix)
		var a float64
		for j := 0; j < m; j++ {
			uj := u[j*f : (j+1)*f]
			best := math.Inf(-1)
			for k, xk := range p.Patches {
				v := floats.Dot(xk.RawRowView(r), uj)
				if sigma[j] == fav {
					v -= shrink[j*len(p.Patches)+k]
				} else {
					v += shrink[j*len(p.Patches)+k]
				}
				if v > best {
					best, arg[j] = v, k
				}
			}
			on[j] = best > 0
			switch {
			case !on[j]:
			case sigma[j] == fav:
				a -= floats.Dot(p.Patches[arg[j]].RawRowView(r), uj)
				for l, q := range pix[arg[j]] {
					if q >= 0 {
						gpix[q] += uj[l]
					}
				}
			default:
				a += best
			}
		}
		a = math.Abs(c) * (a + eps*floats.Norm(gpix, 1))
		var slope float64
		if p.Loss == solvers.HingeLoss {
			if 1+a > 0 {
				total += (1 + a) * inv
				slope = inv
			}
		} else {
			total += solvers.Softplus(a) * inv
			slope = solvers.Logistic(a) * inv
		}
		if slope == 0 {
			continue
		}
		slope *= math.Abs(c)
		for j := 0; j < m; j++ {
			if !on[j] {
				continue
			}
			gj, uj := grad[j*f:(j+1)*f], u[j*f:(j+1)*f]
			x := p.Patches[arg[j]].RawRowView(r)
			if sigma[j] == fav {
				floats.AddScaled(gj, -slope, x)
				for l, q := range pix[arg[j]] {
					if q >= 0 {
						gj[l] += slope * eps * sign(gpix[q])
					}
				}
				continue
			}
			floats.AddScaled(gj, slope, x)
			for l, v := range uj {
				gj[l] += slope * eps * masks[arg[j]][l] * sign(v)
			}
		}
	}
	for j := 0; j < m; j++ {
		uj := u[j*f : (j+1)*f]
		nu := floats.Norm(uj, 2)
		total += p.Beta * nu
		if nu > 0 {
			floats.AddScaled(grad[j*f:(j+1)*f], p.Beta/nu, uj)
		}
	}
	return total, nil
}

func sign(v float64) float64 {
	switch {
	case v > 0:
		return 1
	case v < 0:
		return -1
	}
	return 0
}
