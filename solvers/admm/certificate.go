package admm

import (
	"github.com/convexnn/convexnn/solvers/certify"
	"gonum.org/v1/gonum/mat"
)

// Hint returns the dual information of s's current iterate for a
// certificate (certify.Certifier.Bound): the multipliers of the cone
// constraints, α_j = −ρ γ ν_j (γ the constraint scaling: 1, or Robust's
// γ_G), from the scaled dual ν of the constraint G u = s, and for Split the
// loss dual μ = ρ μ_split of the constraint F u = q (its loss prox gives
// ρ μ ∈ ∂ℓ(q) at a fixed point). The other variants' loss dual is left to
// the certifier, which takes the gradient at the point. A hint only speeds
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
		return &certify.Hint{Alpha: alpha(v.State.Nu, v.r.gG, 2*len(v.Program.D))}
	}
	return nil
}
