package scp

import (
	"errors"
	"fmt"
	"math"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/gonum/floats"
	"gonum.org/v1/gonum/mat"
)

// ActiveSetResult is the outcome of SolveActiveSet: the weights, the
// objective F(α), the duality gap (F(α) − F* ≤ Gap, a certificate), and
// the feature-sign steps taken.
type ActiveSetResult struct {
	Alpha     []float64
	Objective float64
	Gap       float64
	Steps     int
}

// SolveActiveSet solves the Lasso eq. (SCP2),
//
//	minimize F(α) = ½‖Hα − y‖² + β‖α‖₁,
//
// exactly, by the feature-sign search of Lee, Battle, Raina and Ng (2007):
// it keeps an active set A with signs θ_A, solves the equality-constrained
// least squares α_A = (H_AᵀH_A)⁻¹(H_Aᵀy − βθ_A), walks from the current
// point towards it to the best point where a weight changes sign (dropping
// it), and adds the inactive weight whose optimality condition
// |h_jᵀ(Hα − y)| ≤ β is most violated, until every condition holds. Each
// step solves a system of the active set's size (at most about n, the
// data's rows), so on the small data of an explorer it reaches the optimum
// to rounding in milliseconds where proximal gradient methods crawl on the
// strongly correlated features (Hα)_+ of nearby neurons. start (nil: zero)
// gives the first active set and signs: a warm start.
//
// maxSteps caps the steps (0: 10·(n + m)); the returned Gap certifies the
// point reached either way.
func SolveActiveSet(p *Lasso, start []float64, maxSteps int) (*ActiveSetResult, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	n, m := p.H.Dims()
	if start != nil && len(start) != m {
		return nil, fmt.Errorf("scp: SolveActiveSet: start has %d weights, the problem %d neurons", len(start), m)
	}
	if maxSteps < 0 {
		return nil, errors.New("scp: SolveActiveSet: maxSteps must be ≥ 0")
	}
	if maxSteps == 0 {
		maxSteps = 10 * (n + m)
	}
	h := p.H.RawMatrix()
	alpha := make([]float64, m)
	if start != nil {
		copy(alpha, start)
	}
	// g = Hᵀ(Hα − y), the gradient of the smooth part.
	r := make([]float64, n)
	g := make([]float64, m)
	gradient := func() {
		copy(r, p.Y)
		blas64.Gemv(blas.NoTrans, 1, h, vec(alpha), -1, vec(r))
		blas64.Gemv(blas.Trans, 1, h, vec(r), 0, vec(g))
	}
	// The conditions are met to a tolerance relative to the data's scale.
	tol := 1e-11 * math.Max(p.Beta, floats.Norm(p.Y, 2)*maxColumnNorm(h))
	res := &ActiveSetResult{}
	for res.Steps < maxSteps {
		gradient()
		var active []int
		worst := -1
		for j, a := range alpha {
			if a != 0 {
				active = append(active, j)
			} else if v := math.Abs(g[j]) - p.Beta; v > tol && (worst < 0 || v > math.Abs(g[worst])-p.Beta) {
				worst = j
			}
		}
		nonzeroOK := true
		for _, j := range active {
			if math.Abs(g[j]+p.Beta*sign(alpha[j])) > tol {
				nonzeroOK = false
				break
			}
		}
		if worst < 0 && nonzeroOK {
			break
		}
		signs := make(map[int]float64, len(active)+1)
		for _, j := range active {
			signs[j] = sign(alpha[j])
		}
		if nonzeroOK {
			// Activate the most violated zero weight, with the sign that
			// lowers F.
			active = append(active, worst)
			signs[worst] = -sign(g[worst])
		}
		res.Steps++
		if err := featureSignStep(p, h, alpha, active, signs); err != nil {
			return nil, err
		}
	}
	res.Alpha = alpha
	res.Objective, res.Gap = p.Objective(alpha), p.DualityGap(alpha)
	return res, nil
}

// featureSignStep moves α (on the active set, with signs θ) towards the
// minimizer of ½‖Hα − y‖² + βθᵀα over span(A), stopping at the best point
// of the segment where a weight crosses zero (which then leaves).
func featureSignStep(p *Lasso, h blas64.General, alpha []float64, active []int, signs map[int]float64) error {
	n, k := h.Rows, len(active)
	ha := mat.NewDense(n, k, nil)
	for c, j := range active {
		for i := 0; i < n; i++ {
			ha.Set(i, c, h.Data[i*h.Stride+j])
		}
	}
	var gram mat.SymDense
	gram.SymOuterK(1, ha.T())
	rhs := mat.NewVecDense(k, nil)
	rhs.MulVec(ha.T(), mat.NewVecDense(n, p.Y))
	for c, j := range active {
		rhs.SetVec(c, rhs.AtVec(c)-p.Beta*signs[j])
	}
	target := mat.NewVecDense(k, nil)
	// Features of nearby neurons are nearly collinear: a tiny ridge,
	// raised until the factorization holds, keeps the solve defined.
	ridge := 0.0
	maxDiag := 0.0
	for c := 0; c < k; c++ {
		maxDiag = math.Max(maxDiag, gram.At(c, c))
	}
	for try := 0; ; try++ {
		var chol mat.Cholesky
		m := mat.NewSymDense(k, nil)
		m.CopySym(&gram)
		for c := 0; c < k; c++ {
			m.SetSym(c, c, m.At(c, c)+ridge)
		}
		if chol.Factorize(m) {
			if err := chol.SolveVecTo(target, rhs); err == nil {
				break
			}
		}
		if try == 8 || maxDiag == 0 {
			return errors.New("scp: SolveActiveSet: the active features' Gram matrix is singular")
		}
		ridge = math.Max(ridge*100, 1e-13*maxDiag)
	}
	// The segment from the current weights to the target: its end and the
	// points where a weight changes sign.
	cur := make([]float64, k)
	for c, j := range active {
		cur[c] = alpha[j]
	}
	best := -1.0
	bestObj := math.Inf(1)
	try := func(t float64) {
		trial := make([]float64, len(alpha))
		copy(trial, alpha)
		for c, j := range active {
			v := cur[c] + t*(target.AtVec(c)-cur[c])
			if t < 1 && cur[c] != 0 && sign(v) != sign(cur[c]) || math.Abs(v) < 1e-300 {
				v = 0
			}
			trial[j] = v
		}
		if obj := p.Objective(trial); obj < bestObj {
			best, bestObj = t, obj
		}
	}
	try(1)
	for c := range active {
		d := target.AtVec(c) - cur[c]
		if cur[c] != 0 && d != 0 && sign(target.AtVec(c)) != sign(cur[c]) {
			if t := -cur[c] / d; t > 0 && t < 1 {
				try(t)
			}
		}
	}
	for c, j := range active {
		v := cur[c] + best*(target.AtVec(c)-cur[c])
		if best < 1 && cur[c] != 0 && (sign(v) != sign(cur[c]) || math.Abs(-cur[c]/(target.AtVec(c)-cur[c])-best) < 1e-15) {
			v = 0
		}
		alpha[j] = v
	}
	return nil
}

// maxColumnNorm is the largest ‖h_j‖₂ of the columns of h.
func maxColumnNorm(h blas64.General) float64 {
	norms := make([]float64, h.Cols)
	for i := 0; i < h.Rows; i++ {
		for j, v := range h.Data[i*h.Stride : i*h.Stride+h.Cols] {
			norms[j] += v * v
		}
	}
	return math.Sqrt(floats.Max(norms))
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
