package scp

import (
	"fmt"
	"math"

	"gonum.org/v1/gonum/floats"
)

// The pieces the programs of eq. (SCP2) share: validation, the objective and
// the duality gap on a FeatureMatrix, and the scaling of a dual point into
// the dual feasible set.

// checkLabels validates the labels (one per feature row, each accepted by
// label) and β of a program with n feature rows.
func checkLabels(n int, y []float64, beta float64, label func(k int, v float64) error) error {
	if len(y) != n {
		return fmt.Errorf("scp: %d labels for %d feature rows", len(y), n)
	}
	if !(beta > 0) || math.IsInf(beta, 0) {
		return fmt.Errorf("scp: regularization β=%v, need 0 < β < ∞", beta)
	}
	for k, v := range y {
		if err := label(k, v); err != nil {
			return err
		}
	}
	return nil
}

// makeZeros sets each of vs to a new zero vector of length n (solver
// workspace).
func makeZeros(n int, vs ...*[]float64) {
	for _, v := range vs {
		*v = make([]float64, n)
	}
}

// initialState returns the state FISTA starts from on a problem with m
// weights: a copy of the saved state st, or, when st is nil, α = α_prev = 0
// with t = 1 and L = 1 (the caller sets Obj = F(0)).
func initialState(st *FISTAState, m int) (FISTAState, error) {
	if st == nil {
		return FISTAState{Alpha: make([]float64, m), Prev: make([]float64, m), T: 1, L: 1}, nil
	}
	if len(st.Alpha) != m || len(st.Prev) != m {
		return FISTAState{}, fmt.Errorf("scp: saved FISTA state has %d weights, the problem has %d neurons", len(st.Alpha), m)
	}
	if !(st.L > 0) || !(st.T >= 1) {
		return FISTAState{}, fmt.Errorf("scp: saved FISTA state is corrupt (L=%v, t=%v)", st.L, st.T)
	}
	return FISTAState{Iter: st.Iter, Alpha: append([]float64(nil), st.Alpha...), Prev: append([]float64(nil), st.Prev...), T: st.T, L: st.L, Obj: st.Obj}, nil
}

// finiteLabel accepts any finite target (the squared loss).
func finiteLabel(k int, v float64) error {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return fmt.Errorf("scp: y[%d] is %v", k, v)
	}
	return nil
}

// objective returns F(α) = ℓ(Hα) + β‖α‖₁.
func objective(p smoothProblem, alpha []float64) float64 {
	n, _ := p.features().Dims()
	r := make([]float64, n)
	p.features().MulVec(r, alpha)
	return p.Loss(r) + p.beta()*floats.Norm(alpha, 1)
}

// dualityGap returns F(α) − D at the dual point of the problem's dual.
func dualityGap(p smoothProblem, alpha []float64) float64 {
	n, m := p.features().Dims()
	r := make([]float64, n)
	p.features().MulVec(r, alpha)
	return gapAt(p, alpha, r, make([]float64, n), make([]float64, m))
}

// gapAt returns F(α) − D(s∇ℓ(r)) given r = Hα, with the scratch v (n) and
// g (N): the dual point is the loss gradient at r scaled into the dual
// feasible set (dual), so by weak duality the gap bounds F(α) − min F.
func gapAt(p smoothProblem, alpha, r, v, g []float64) float64 {
	primal := p.Loss(r) + p.beta()*floats.Norm(alpha, 1)
	p.LossGrad(v, r)
	p.features().MulTransVec(g, v)
	return primal - p.dual(r, g)
}

// dualScale returns s = min(1, β/‖g‖∞): a point v with Hᵀv = g, scaled by
// s, satisfies the dual constraint ‖Hᵀ(s v)‖∞ ≤ β.
func dualScale(g []float64, beta float64) float64 {
	if inf := floats.Norm(g, math.Inf(1)); inf > beta {
		return beta / inf
	}
	return 1
}

// squaredDual returns D(θ) = ½‖y‖² − ½‖y − θ‖², the dual objective of the
// squared loss, at θ_k = −s·resid(k), the scaled residual Hα − y.
func squaredDual(y []float64, s float64, resid func(k int) float64) float64 {
	var yy, dd float64
	for k, yk := range y {
		th := -s * resid(k)
		yy += yk * yk
		dd += (yk - th) * (yk - th)
	}
	return 0.5*yy - 0.5*dd
}

// proxStep sets z = S_{β/L}(y − g/L), the proximal-gradient step of FISTA
// (soft-thresholding of the gradient step at y with gradient g), and returns
// ‖z − y‖².
func proxStep(z, y, g []float64, L, beta float64) (quad float64) {
	thr := beta / L
	for j := range z {
		w := shrink(y[j]-g[j]/L, thr)
		z[j] = w
		dz := w - y[j]
		quad += dz * dz
	}
	return quad
}

// shrink is the soft threshold S(w, t) = sign(w) max(|w| − t, 0), the
// proximal map of t|·|.
func shrink(w, t float64) float64 {
	switch {
	case w > t:
		return w - t
	case w < -t:
		return w + t
	}
	return 0
}
