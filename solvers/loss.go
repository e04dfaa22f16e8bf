package solvers

import (
	"fmt"
	"math"
)

// Loss names the training loss ℓ(ŷ, y) of a program.
type Loss int

const (
	// SquaredLoss is ℓ(ŷ, y) = ½ Σ_k (ŷ_k − y_k)², a sum, not a mean.
	SquaredLoss Loss = iota
	// HingeLoss is ℓ(ŷ, y) = (1/n) Σ_k max(0, 1 − y_k ŷ_k), a mean, with
	// labels y_k ∈ {−1, +1}.
	HingeLoss
	// BCELoss is the paper's binary cross-entropy for a tanh output (section
	// "Binary Cross-Entropy Loss", Table 4), labels y_k ∈ {0, 1}, a mean:
	// ℓ(ŷ, y) = (1/n) Σ_k (−2ŷ_k y_k + log(e^{2ŷ_k} + 1)). With
	// c_k = 2(1 − 2y_k) ∈ {±2} each term is log(1 + e^{c_k ŷ_k}): it is the
	// logistic loss of the label 2y_k − 1 at the doubled output 2ŷ_k.
	BCELoss
	// LogisticLoss is ℓ(ŷ, y) = (1/n) Σ_k log(1 + e^{−y_k ŷ_k}), a mean, with
	// labels y_k ∈ {−1, +1}.
	LogisticLoss
)

// Smooth reports whether the loss is differentiable with a Lipschitz
// gradient (squared, BCE, logistic; not hinge).
func (l Loss) Smooth() bool { return l == SquaredLoss || l == BCELoss || l == LogisticLoss }

// MarginScale returns, for the labels y_k, the factor c_k of the smooth
// classification losses written as (1/n) Σ_k log(1 + e^{c_k ŷ_k}):
// c_k = 2(1 − 2y_k) for BCE and −y_k for the logistic loss.
func (l Loss) MarginScale(yk float64) float64 {
	if l == BCELoss {
		return 2 - 4*yk
	}
	return -yk
}

// Grad sets dst = ∇ℓ(ŷ) for a smooth loss: ŷ − y for the squared loss,
// (c_k σ(c_k ŷ_k)/n)_k for BCE and logistic (see MarginScale). It panics
// for the hinge loss, which has no gradient.
func (l Loss) Grad(dst, yhat, y []float64) {
	switch l {
	case SquaredLoss:
		for k := range y {
			dst[k] = yhat[k] - y[k]
		}
	case BCELoss, LogisticLoss:
		inv := 1 / float64(len(y))
		for k := range y {
			c := l.MarginScale(y[k])
			dst[k] = c * Logistic(c*yhat[k]) * inv
		}
	default:
		panic(fmt.Sprintf("solvers: the %v loss has no gradient", l))
	}
}

// Curvature sets dst = diag ∇²ℓ(ŷ) for a smooth loss (every one is
// separable, so the Hessian is diagonal): 1 for the squared loss,
// c_k² σ(c_kŷ_k)(1 − σ(c_kŷ_k))/n for BCE and logistic (see MarginScale).
// It panics for the hinge loss.
func (l Loss) Curvature(dst, yhat, y []float64) {
	switch l {
	case SquaredLoss:
		for k := range dst {
			dst[k] = 1
		}
	case BCELoss, LogisticLoss:
		inv := 1 / float64(len(y))
		for k := range y {
			c := l.MarginScale(y[k])
			s := Logistic(c * yhat[k])
			dst[k] = c * c * s * (1 - s) * inv
		}
	default:
		panic(fmt.Sprintf("solvers: the %v loss has no curvature", l))
	}
}

// Labels describes the labels the loss expects, for error messages.
func (l Loss) Labels() string {
	switch l {
	case HingeLoss, LogisticLoss:
		return "−1 or +1"
	case BCELoss:
		return "0 or 1"
	}
	return "any finite value"
}

// ValidLabel reports whether y is a valid label for the loss.
func (l Loss) ValidLabel(y float64) bool {
	switch l {
	case HingeLoss, LogisticLoss:
		return y == 1 || y == -1
	case BCELoss:
		return y == 0 || y == 1
	}
	return true
}

func (l Loss) String() string {
	switch l {
	case SquaredLoss:
		return "squared"
	case HingeLoss:
		return "hinge"
	case BCELoss:
		return "bce"
	case LogisticLoss:
		return "logistic"
	}
	return fmt.Sprintf("Loss(%d)", int(l))
}

// ParseLoss maps "squared", "hinge", "bce" and "logistic" to a Loss.
func ParseLoss(s string) (Loss, error) {
	switch s {
	case "squared":
		return SquaredLoss, nil
	case "hinge":
		return HingeLoss, nil
	case "bce":
		return BCELoss, nil
	case "logistic":
		return LogisticLoss, nil
	}
	return 0, fmt.Errorf("solvers: unknown loss %q (want squared, hinge, bce or logistic)", s)
}

// Value returns ℓ(ŷ, y).
func (l Loss) Value(yhat, y []float64) float64 {
	var s float64
	switch l {
	case SquaredLoss:
		for k := range y {
			d := yhat[k] - y[k]
			s += d * d
		}
		return s / 2
	case HingeLoss:
		for k := range y {
			s += math.Max(0, 1-y[k]*yhat[k])
		}
		return s / float64(len(y))
	case BCELoss, LogisticLoss:
		for k := range y {
			s += Softplus(l.MarginScale(y[k]) * yhat[k])
		}
		return s / float64(len(y))
	}
	return math.NaN()
}

// Softplus returns log(1 + eᵗ) without overflow: the terms of the BCE and
// logistic losses.
func Softplus(t float64) float64 {
	if t > 0 {
		return t + math.Log1p(math.Exp(-t))
	}
	return math.Log1p(math.Exp(t))
}

// Logistic returns σ(t) = 1/(1 + e^{−t}) without overflow, the derivative of
// Softplus.
func Logistic(t float64) float64 {
	if t >= 0 {
		return 1 / (1 + math.Exp(-t))
	}
	e := math.Exp(t)
	return e / (1 + e)
}

// ClipDual moves μ into the domain of the conjugate ℓ*(μ) =
// sup_ŷ μᵀŷ − ℓ(ŷ, y): for the hinge loss −y_k μ_k ∈ [0, 1/n]; for BCE and
// logistic, with the margin scale c_k (MarginScale), n μ_k / c_k ∈ [0, 1];
// the squared loss's ℓ* is finite everywhere. At an optimum μ = ∇ℓ(ŷ) (a
// subgradient for the hinge loss), which is in the domain.
func (l Loss) ClipDual(mu, y []float64) {
	inv := 1 / float64(len(y))
	switch l {
	case HingeLoss:
		for k, yk := range y {
			a := math.Min(math.Max(-yk*mu[k], 0), inv)
			mu[k] = -yk * a
		}
	case BCELoss, LogisticLoss:
		for k, yk := range y {
			s := l.MarginScale(yk)
			a := math.Min(math.Max(mu[k]/(s*inv), 0), 1)
			mu[k] = a * s * inv
		}
	}
}

// NegConjugate returns −ℓ*(tμ) for μ in the domain of ℓ* (ClipDual), and
// the sum of the magnitudes of its terms (for a rounding slack):
//
//	squared   ℓ*(μ) = ½‖λ‖² + μᵀy     (λ = |μ|, or lam when not nil, λ_k ≥ |μ_k|)
//	hinge     ℓ*(μ) = Σ_k y_k μ_k       (−y_k μ_k ∈ [0, 1/n])
//	BCE, logistic  ℓ*(μ) = (1/n) Σ_k a_k log a_k + (1 − a_k) log(1 − a_k),  a_k = n μ_k / c_k ∈ [0, 1].
//
// (A lam above |μ| bounds the conjugate of the robust squared loss.)
func (l Loss) NegConjugate(mu, lam, y []float64, t float64) (value, magnitude float64) {
	var s, mag float64
	switch l {
	case SquaredLoss:
		for k, yk := range y {
			m := t * mu[k]
			lk := math.Abs(m)
			if lam != nil {
				lk = t * lam[k]
			}
			v := 0.5*lk*lk + m*yk
			s -= v
			mag += 0.5*lk*lk + math.Abs(m*yk)
		}
	case HingeLoss:
		for k, yk := range y {
			v := -yk * t * mu[k]
			s += v
			mag += math.Abs(v)
		}
	default:
		inv := 1 / float64(len(y))
		for k, yk := range y {
			a := t * mu[k] / (l.MarginScale(yk) * inv)
			a = math.Min(math.Max(a, 0), 1)
			v := inv * (xlogx(a) + xlogx(1-a))
			s -= v
			mag += math.Abs(v)
		}
	}
	return s, mag
}

func xlogx(a float64) float64 {
	if a <= 0 {
		return 0
	}
	return a * math.Log(a)
}

// CheckLabels reports an unknown loss, or the first label that is not
// finite or not one the loss takes (for error messages, prefixed by the
// caller's package).
func (l Loss) CheckLabels(y []float64) error {
	if l < SquaredLoss || l > LogisticLoss {
		return fmt.Errorf("unknown loss %v (want squared, hinge, bce or logistic)", l)
	}
	for k, v := range y {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return fmt.Errorf("y[%d] is %v", k, v)
		}
		if !l.ValidLabel(v) {
			return fmt.Errorf("y[%d] = %v: the %v loss needs labels %s", k, v, l, l.Labels())
		}
	}
	return nil
}
