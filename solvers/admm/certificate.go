package admm

import (
	"context"
	"fmt"
	"math"

	"github.com/convexnn/convexnn/solvers"
	"github.com/convexnn/convexnn/solvers/certify"
	"gonum.org/v1/gonum/floats"
	"gonum.org/v1/gonum/mat"
)

// Hint returns the dual information of s's current iterate for a
// certificate (certify.Certifier.Bound): the multipliers of the cone
// constraints, α_j = −ρ γ ν_j (γ the constraint scaling: 1, or Robust's
// γ_G), from the scaled dual ν of the constraint G u = s, and for Split the
// loss dual μ = ρ μ_split of the constraint F u = q (its loss prox gives
// ρ μ ∈ ∂ℓ(q) at a fixed point), for Robust on a program with a bias the
// loss dual and perturbation slopes from its split of the per-point terms
// (robustLossDual). The other variants' loss dual is left to the
// certifier, which takes the gradient at the point. A hint only speeds
// up the bound's convergence: the certifier projects it, so it cannot make
// a bound invalid.
func Hint(s Solver) *certify.Hint {
	rho := s.Rho()
	alpha := func(nu []float64, scale float64, ng int) *mat.Dense {
		a := make([]float64, len(nu))
		for k, v := range nu {
			a[k] = -rho * scale * v
		}
		return mat.NewDense(ng, len(nu)/ng, a)
	}
	switch v := s.(type) {
	case *ClosedForm:
		return &certify.Hint{Alpha: alpha(v.State.Nu, 1, 2*len(v.Program.D))}
	case *RBCD:
		return &certify.Hint{Alpha: alpha(v.State.Nu, 1, 2*len(v.Program.D))}
	case *Split:
		mu := make([]float64, len(v.State.Mu))
		for k, m := range v.State.Mu {
			mu[k] = rho * m
		}
		return &certify.Hint{Mu: mu, Alpha: alpha(v.State.Nu, 1, 2*len(v.Program.D))}
	case *Robust:
		h := &certify.Hint{Alpha: alpha(v.State.Nu, v.r.gG, 2*len(v.Program.D))}
		if v.Program.Bias {
			robustLossDual(h, v.Program, v.Perturbation, v.State.M, rho*v.r.gZ)
		}
		return h
	}
	return nil
}

// robustLossDual sets the loss dual of a robust program with a bias from
// the scaled dual M (n×d) of Robust's split γ_Z A U = Z: at a fixed point
// m_k = ρ γ_Z M_k (scale) is a subgradient of the worst-case term ℓ_k at
// g_k, the slope μ_k x_k + w_k of an affine minorant, whose bias entry
// (x_k's is 1, w_k's 0) gives μ_k and whose feature entries give w_k; for
// the squared loss λ_k = ‖w_k‖_p/ε (see certify.Hint).
func robustLossDual(h *certify.Hint, p *solvers.Program, pert solvers.Perturbation, m []float64, scale float64) {
	n, d := p.X.Dims()
	f := solvers.PerturbedFeatures(d, true)
	h.Mu = make([]float64, n)
	h.Slopes = mat.NewDense(n, d, nil)
	if p.Loss == solvers.SquaredLoss && pert.Eps > 0 {
		h.Lambda = make([]float64, n)
	}
	for k := 0; k < n; k++ {
		mk, xk, w := m[k*d:(k+1)*d], p.X.RawRowView(k), h.Slopes.RawRowView(k)
		mu := scale * mk[d-1]
		h.Mu[k] = mu
		for l := 0; l < f; l++ {
			w[l] = scale*mk[l] - mu*xk[l]
		}
		if h.Lambda != nil {
			h.Lambda[k] = ballNorm(pert.Norm.Canonical(), w[:f]) / pert.Eps
		}
	}
}

// ballNorm is the ℓ_p norm of the perturbation set (p = ∞, 2, 1).
func ballNorm(kind solvers.Norm, w []float64) float64 {
	switch kind {
	case solvers.L2:
		return floats.Norm(w, 2)
	case solvers.L1:
		return floats.Norm(w, 1)
	}
	return floats.Norm(w, math.Inf(1))
}

// SolveToGap runs s until the certificate of its iterate reaches the
// certified relative gap: cert certifies the iterate (with Hint(s)) every
// `every` iterations (at least 1). It stops there, when the solver's own
// stopping test passes (Solver.Converged), after maxIter iterations (at
// least 1), or when ctx is done, and returns the certificate of the final
// iterate (certified again if the run went on after the last one), the
// iterations run, and ctx's error if it stopped the run.
func SolveToGap(ctx context.Context, s Solver, cert *certify.Certifier, gap float64, every, maxIter int) (certify.Bound, int, error) {
	if !(gap > 0 && gap < 1) || every < 1 || maxIter < 1 {
		return certify.Bound{}, 0, fmt.Errorf("admm: SolveToGap: gap %v (need 0 < gap < 1), every %d, maxIter %d (need ≥ 1)", gap, every, maxIter)
	}
	var b certify.Bound
	certified, runErr := -1, error(nil)
	for it := 1; it <= maxIter; it++ {
		if runErr = ctx.Err(); runErr != nil {
			break
		}
		st := s.Step()
		done := s.Converged(st)
		if it%every != 0 && !done {
			continue
		}
		var err error
		if b, err = cert.Bound(s.Weights(), Hint(s)); err != nil {
			return b, it, err
		}
		certified = s.Iter()
		if done || b.Gap <= gap {
			break
		}
	}
	if certified != s.Iter() {
		var err error
		if b, err = cert.Bound(s.Weights(), Hint(s)); err != nil {
			return b, s.Iter(), err
		}
	}
	return b, s.Iter(), runErr
}
