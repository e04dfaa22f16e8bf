package ipm

import (
	"math"

	"github.com/convexnn/convexnn/solvers"
	"github.com/convexnn/convexnn/solvers/certify"
	"gonum.org/v1/gonum/mat"
)

// The dense form of the robust program, robustCone: every row written out
// as an affine expression. It is the reference for the layout and the
// operators of robustNet (robustnet_test.go).

func newRobustCone(p *solvers.Program, pert solvers.Perturbation) *robustCone {
	n, d, np := p.Dims()
	kind := pert.Norm.Canonical()
	rb := &robustCone{p: p, pert: pert, kind: kind, n: n, d: d, np: np, f: solvers.PerturbedFeatures(d, p.Bias)}
	ng := 2 * np
	nu := ng * d
	rb.nx = nu + ng + n
	robust := pert.Eps > 0 && rb.f > 0

	// Groups: robust pattern constraints and norm epigraphs.
	for j := 0; j < ng; j++ {
		i := j % np
		var rho robustLin
		if robust {
			e := make([]robustLin, rb.f)
			for l := range e {
				e[l] = robustVar(j*d + l)
			}
			rho = rb.dualNormBound(e)
		}
		rb.groupRow = append(rb.groupRow, len(rb.lin))
		for k := 0; k < n; k++ {
			s := -1.0
			if p.D[i][k] {
				s = 1
			}
			row := robustLin{}
			for l, x := range p.X.RawRowView(k)[:d] {
				if x != 0 {
					row.idx = append(row.idx, j*d+l)
					row.val = append(row.val, s*x)
				}
			}
			if robust {
				row = row.add(-pert.Eps, rho)
			}
			rb.lin = append(rb.lin, row)
		}
		cone := []robustLin{robustVar(nu + j)}
		for l := 0; l < d; l++ {
			cone = append(cone, robustVar(j*d+l))
		}
		rb.soc = append(rb.soc, cone)
	}

	// Samples: the worst-case loss terms.
	for k := 0; k < n; k++ {
		xk := p.X.RawRowView(k)[:d]
		// g_k entry l and ŷ_k − y_k as expressions.
		gk := make([]robustLin, d)
		for i := 0; i < np; i++ {
			if !p.D[i][k] {
				continue
			}
			for l := 0; l < d; l++ {
				gk[l].idx = append(gk[l].idx, i*d+l, (np+i)*d+l)
				gk[l].val = append(gk[l].val, 1, -1)
			}
		}
		var yhat robustLin
		for l := 0; l < d; l++ {
			yhat = yhat.add(xk[l], gk[l])
		}
		var rk robustLin
		if robust {
			if rb.kind == solvers.L2 {
				rb.epi = append(rb.epi, len(rb.soc))
			} else {
				rb.epi = append(rb.epi, len(rb.lin))
			}
			rk = rb.dualNormBound(gk[:rb.f])
		}
		slack := robustVar(nu + ng + k)
		switch p.Loss {
		case solvers.BCELoss, solvers.LogisticLoss:
			// v_k − a_k ≥ 0 with a_k = c_k ŷ_k + ε|c_k| r_k, the worst case
			// of c_k(x_k + δ)ᵀg_k, and v_k ≥ m*_k (the vertex of the model
			// of softplus, set by setSmoothModel): the model, a convex
			// quadratic q(v_k), is then increasing in a_k, as softplus is;
			// without the second row it would reward raising a_k towards
			// its vertex through the free auxiliaries r_k.
			ck := p.Loss.MarginScale(p.Y[k])
			rb.lossRow = append(rb.lossRow, len(rb.lin))
			row := slack.add(-ck, yhat)
			if robust {
				row = row.add(-pert.Eps*math.Abs(ck), rk)
			}
			rb.lin = append(rb.lin, row, slack)
		case solvers.HingeLoss:
			// ξ_k ≥ 0 and ξ_k − 1 + y_k ŷ_k − ε r_k ≥ 0.
			rb.lin = append(rb.lin, slack)
			rb.lossRow = append(rb.lossRow, len(rb.lin))
			row := slack.add(p.Y[k], yhat)
			row.c = -1
			if robust {
				row = row.add(-pert.Eps, rk)
			}
			rb.lin = append(rb.lin, row)
		default:
			// z_k ∓ (ŷ_k − y_k) − ε r_k ≥ 0.
			res := yhat
			res.c = -p.Y[k]
			rb.lossRow = append(rb.lossRow, len(rb.lin))
			for _, sg := range []float64{-1, 1} {
				row := slack.add(sg, res)
				if robust {
					row = row.add(-pert.Eps, rk)
				}
				rb.lin = append(rb.lin, row)
			}
		}
	}
	return rb
}

// dual returns the certificate's hint from the multipliers z of the
// orthant rows (see certify.Hint): α_j[k] of group j's robust constraint
// S_i[k] x_kᵀu_j − ε ρ_j ≥ 0, and the loss dual μ_k = ∂ℓ/∂ŷ_k: −y_k z_k of
// the hinge margin row, a − b from the squared loss's two rows
// z_k ∓ (ŷ_k − y_k) − ε r_k ≥ 0 (multipliers a, b), with λ_k = a + b (the
// term's size, Hint.Lambda; a + b = z_k at the optimum). The perturbation is left
// to the certifier (the worst case at the point).
func (rb *robustCone) dual(z []float64) *certify.Hint {
	ng := 2 * rb.np
	a := mat.NewDense(ng, rb.n, nil)
	for j := 0; j < ng; j++ {
		copy(a.RawRowView(j), z[rb.groupRow[j]:rb.groupRow[j]+rb.n])
	}
	h := &certify.Hint{Mu: make([]float64, rb.n), Alpha: a}
	if rb.p.Loss == solvers.SquaredLoss {
		h.Lambda = make([]float64, rb.n)
	}
	for k, r := range rb.lossRow {
		switch rb.p.Loss {
		case solvers.HingeLoss:
			h.Mu[k] = -rb.p.Y[k] * z[r]
		case solvers.SquaredLoss:
			h.Mu[k], h.Lambda[k] = z[r]-z[r+1], z[r]+z[r+1]
		default:
			h.Mu[k] = rb.p.Loss.MarginScale(rb.p.Y[k]) * z[r]
		}
	}
	if len(rb.epi) == rb.n {
		// The slope of the Lagrangian in g_k^f through the epigraph rows:
		// p_l − q_l from the multipliers of ρ − e_l ≥ 0 and ρ + e_l ≥ 0, or
		// −z₁ from the cone (ρ, e) ∈ Q.
		h.Slopes = mat.NewDense(rb.n, rb.d, nil)
		socStart := len(rb.lin)
		var offs []int
		for _, c := range rb.soc {
			offs = append(offs, socStart)
			socStart += len(c)
		}
		for k, at := range rb.epi {
			row := h.Slopes.RawRowView(k)
			for l := 0; l < rb.f; l++ {
				if rb.kind == solvers.L2 {
					row[l] = -z[offs[at]+1+l]
				} else {
					row[l] = z[at+2*l] - z[at+2*l+1]
				}
			}
		}
	}
	return h
}

// coneQP assembles the robust program (see assemble).
func (rb *robustCone) coneQP() *ConeQP {
	g, h, k := rb.assemble()
	ng := 2 * rb.np
	nu := ng * rb.d
	c := make([]float64, rb.nx)
	for j := 0; j < ng; j++ {
		c[nu+j] = rb.p.Beta
	}
	qp := &ConeQP{C: c, G: g, H: h, K: k}
	if rb.p.Loss == solvers.BCELoss || rb.p.Loss == solvers.LogisticLoss {
		qp.Q = mat.NewSymDense(rb.nx, nil) // the model's (setSmoothModel)
	} else if rb.p.Loss == solvers.HingeLoss {
		for kk := 0; kk < rb.n; kk++ {
			c[nu+ng+kk] = 1 / float64(rb.n)
		}
	} else {
		q := mat.NewSymDense(rb.nx, nil)
		for kk := 0; kk < rb.n; kk++ {
			q.SetSym(nu+ng+kk, nu+ng+kk, 1)
		}
		qp.Q = q
	}
	return qp
}
