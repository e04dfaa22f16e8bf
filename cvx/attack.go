package cvx

import (
	"errors"
	"fmt"
	"html"
	"math"
	"strings"

	"github.com/convexnn/convexnn/plots"
	"github.com/convexnn/convexnn/solvers"
	"github.com/convexnn/convexnn/solvers/backprop"
	"gonum.org/v1/gonum/mat"
)

// Adversary names an attack (backprop.Adversary): FGSM or PGD, or
// NoAdversary for none.
type Adversary = backprop.Adversary

// The attacks.
const (
	NoAdversary Adversary = backprop.NoAdversary   // none (GD-std; clean accuracy)
	FGSM        Adversary = backprop.FGSMAdversary // one step x̃ = Π(x + ε sgn ∇_x ℓ)
	PGD         Adversary = backprop.PGDAdversary  // eq. (PGD), T projected steps
)

// Attack configures an adversarial attack on the inner maximization of
// eq. (robust_general),
//
//	max_{‖δ_k‖ ≤ ε} ℓ(Σ_j ((x_k + δ_k)ᵀu_j)_+ α_j, y_k),
//
// one perturbation per data point: FGSM, one step x̃ = Π(x + ε sgn ∇_x ℓ),
// or PGD, eq. (PGD), T steps x̃ ← Π_{B_ε(x)}(x̃ + γ_p sgn ∇_x ℓ) (for the ℓ₂
// ball the step is γ_p ∇/‖∇‖₂). The hinge loss is attacked through the
// paper's leaky hinge (backprop.PGD).
type Attack struct {
	// Method is FGSM or PGD.
	Method Adversary
	// Eps is the radius ε ≥ 0; Norm the ball, LInf (or "", the paper's
	// box) or L2.
	Eps  float64
	Norm Norm
	// Steps is PGD's T (0: the paper's 40); StepSize its γ_p (0: the
	// paper's ε/30 for the box, 2.5ε/T for L2). FGSM ignores both.
	Steps    int
	StepSize float64
	// Clip, if not nil, is a box [lo, hi] the perturbed inputs stay in
	// (for example [0, 1] for pixels); the clean data must lie in it.
	Clip *[2]float64
	// LastIterate returns PGD's last iterate x̃^T, as eq. (PGD) is printed,
	// instead of the default: per point the iterate x̃^t, t = 0 … T, of
	// largest loss (backprop.AttackOptions.KeepBest), the usual strengthening
	// for evaluation. With the default, an attack on a classification loss
	// (hinge, BCE, logistic) never turns a wrong prediction right, so the
	// attacked accuracy is at most the clean one.
	LastIterate bool
}

func (a Attack) String() string {
	return fmt.Sprintf("%s, ℓ_%s ball of radius %g", strings.ToUpper(string(a.Method)), a.Norm.Canonical(), a.Eps)
}

// attackInputs checks the attack and the data (labels −1/+1) and returns
// the solver's options and labels for the loss (t = (y + 1)/2 for BCE).
func attackInputs(net *Network, x *mat.Dense, y []float64, loss Loss, a Attack) (backprop.AttackOptions, []float64, error) {
	var o backprop.AttackOptions
	if net == nil {
		return o, nil, errors.New("cvx: attack: nil network")
	}
	switch a.Method {
	case FGSM, PGD:
	case NoAdversary:
		return o, nil, errors.New("cvx: Attack{Method: \"\"}: choose \"fgsm\" or \"pgd\" (cvx.FGSM or cvx.PGD)")
	default:
		return o, nil, fmt.Errorf("cvx: Attack{Method: %q}: use cvx.FGSM or cvx.PGD", a.Method)
	}
	if !(a.Eps >= 0) || math.IsInf(a.Eps, 0) {
		return o, nil, fmt.Errorf("cvx: Attack{Eps: %v}: the radius must be finite and ≥ 0", a.Eps)
	}
	switch a.Norm.Canonical() {
	case LInf, L2:
	default:
		return o, nil, fmt.Errorf("cvx: Attack{Norm: %q}: use cvx.LInf or cvx.L2", a.Norm)
	}
	if err := validateData(x, y, true); err != nil {
		return o, nil, err
	}
	sl, err := solvers.ParseLoss(string(loss))
	if err != nil {
		return o, nil, fmt.Errorf("cvx: attack: loss %q: use cvx.Squared, cvx.Hinge, cvx.BCE or cvx.Logistic", loss)
	}
	t := y
	if loss == BCE {
		t = make([]float64, len(y))
		for k, v := range y {
			t[k] = (v + 1) / 2
		}
	}
	o = backprop.AttackOptions{Norm: a.Norm, Eps: a.Eps, Steps: a.Steps, StepSize: a.StepSize, Loss: sl, Clip: a.Clip, KeepBest: !a.LastIterate}
	return o, t, nil
}

// Attacked returns the rows of x (labels y ∈ {−1, +1}) perturbed by the
// attack a on the loss: x̃_k = x_k + δ_k with ‖δ_k‖ ≤ ε.
func Attacked(net *Network, x *mat.Dense, y []float64, loss Loss, a Attack) (*mat.Dense, error) {
	o, t, err := attackInputs(net, x, y, loss, a)
	if err != nil {
		return nil, err
	}
	if a.Method == FGSM {
		return backprop.FGSM(net, x, t, o)
	}
	return backprop.PGD(net, x, t, o)
}

// AttackAccuracy returns the fraction of the rows of x the network still
// classifies as y (f(x̃) ≥ 0 predicts +1) after the attack a on the loss:
// the robust accuracy of the paper's tables.
func AttackAccuracy(net *Network, x *mat.Dense, y []float64, loss Loss, a Attack) (float64, error) {
	o, t, err := attackInputs(net, x, y, loss, a)
	if err != nil {
		return 0, err
	}
	return backprop.RobustAccuracy(net, x, t, a.Method, o)
}

// Certified checks, for every row x_k of x, that no hidden neuron changes
// activation in the ball ‖δ‖ ≤ eps around x_k (norm LInf, L2 or L1), by
// the pattern margin (solvers.CertifiedPoints)
//
//	m_k = min_j ( |x̃_kᵀu_j| − ε‖u_j^f‖_* ),
//
// x̃_k with the bias input 1, u_j^f the weights without the bias entry and
// ‖·‖_* the dual norm. certified[k] = m_k ≥ 0: the network is affine on the
// ball, so its worst case there is the closed form of Theorem inner_max.
func Certified(net *Network, x *mat.Dense, eps float64, norm Norm) (certified []bool, margins []float64, err error) {
	if net == nil {
		return nil, nil, errors.New("cvx: Certified: nil network")
	}
	if x == nil {
		return nil, nil, errors.New("cvx: Certified: data matrix X is nil")
	}
	return solvers.CertifiedPoints(net, x, solvers.Perturbation{Eps: eps, Norm: norm})
}

// maxTableRows bounds the rows CertificateTable lists.
const maxTableRows = 200

// CertificateTable returns an HTML table of the points of x (labels y), one
// row per point (at most 200, then a count of the rest): index, label,
// pattern margin m_k and whether it is certified (see Certified), under a
// line counting the certified points.
func CertificateTable(net *Network, x *mat.Dense, y []float64, eps float64, norm Norm) (string, error) {
	if err := validateData(x, y, true); err != nil {
		return "", err
	}
	cert, margin, err := Certified(net, x, eps, norm)
	if err != nil {
		return "", err
	}
	norm = norm.Canonical()
	var k int
	for _, c := range cert {
		if c {
			k++
		}
	}
	var sb strings.Builder
	fmt.Fprintf(&sb, `<p style="font-family:monospace;font-size:12px">%s</p>`, html.EscapeString(fmt.Sprintf("%d of %d points certified (no activation changes in the ℓ_%s ball of radius %g)", k, len(cert), norm, eps)))
	sb.WriteString(`<table style="border-collapse:collapse;font-family:monospace;font-size:12px"><tr>`)
	for _, h := range []string{"point", "label", "margin", "certified"} {
		sb.WriteString(`<th style="padding:2px 8px;border-bottom:1px solid #999">` + h + `</th>`)
	}
	sb.WriteString("</tr>")
	for i := range cert {
		if i == maxTableRows {
			fmt.Fprintf(&sb, `<tr><td colspan="4" style="padding:2px 8px">… %d more points</td></tr>`, len(cert)-maxTableRows)
			break
		}
		mark := `<span style="color:#b00020">no</span>`
		if cert[i] {
			mark = `<span style="color:#1b7a1b">yes</span>`
		}
		fmt.Fprintf(&sb, `<tr><td style="padding:2px 8px;text-align:right">%d</td><td style="padding:2px 8px;text-align:right">%+g</td><td style="padding:2px 8px;text-align:right">%.4g</td><td style="padding:2px 8px;text-align:center">%s</td></tr>`, i, y[i], margin[i], mark)
	}
	sb.WriteString("</table>")
	return sb.String(), nil
}

// CertifiedScatterFigure draws 2-D labelled data in four groups, certified
// and uncertified points of each label (see Certified), for the ball of
// radius eps in the norm given.
func CertifiedScatterFigure(net *Network, x *mat.Dense, y []float64, eps float64, norm Norm) (*plots.Figure, error) {
	nm := norm.Canonical()
	if _, err := classPoints(x, y); err != nil {
		return nil, err
	}
	cert, _, err := Certified(net, x, eps, nm)
	if err != nil {
		return nil, err
	}
	g := []plots.Points{{Name: "uncertified y = −1"}, {Name: "uncertified y = +1"}, {Name: "certified y = −1"}, {Name: "certified y = +1"}}
	var k int
	for i, v := range y {
		j := 0
		if v > 0 {
			j = 1
		}
		if cert[i] {
			j += 2
			k++
		}
		g[j].X = append(g[j].X, x.At(i, 0))
		g[j].Y = append(g[j].Y, x.At(i, 1))
	}
	title := fmt.Sprintf("Certified points: %d of %d (ℓ_%s, ε = %g)", k, len(y), nm, eps)
	return plots.Scatter(plots.ScatterOptions{Title: title, XLabel: "x₁", YLabel: "x₂"}, g...)
}

// CertifiedScatter displays CertifiedScatterFigure in the notebook.
func CertifiedScatter(net *Network, x *mat.Dense, y []float64, eps float64, norm Norm) error {
	return showFigure(CertifiedScatterFigure(net, x, y, eps, norm))
}

// ShowCertified displays CertificateTable in the notebook and, for 2-D
// data, CertifiedScatterFigure.
func ShowCertified(net *Network, x *mat.Dense, y []float64, eps float64, norm Norm) error {
	t, err := CertificateTable(net, x, y, eps, norm)
	if err != nil {
		report(err)
		return err
	}
	if !InNotebook() {
		return nil
	}
	display(t)
	if _, d := x.Dims(); d == 2 {
		return showFigure(CertifiedScatterFigure(net, x, y, eps, norm))
	}
	return nil
}
