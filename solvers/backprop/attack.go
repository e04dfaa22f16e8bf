package backprop

import (
	"errors"
	"fmt"
	"math"

	"github.com/convexnn/convexnn/solvers"
	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/gonum/mat"
)

// AttackOptions are the parameters of the FGSM and PGD attacks on the inner
// maximization of eq. (robust_general),
//
//	max_{‖δ_k‖ ≤ ε}  ℓ(Σ_j ((x_k + δ_k)ᵀ u_j)_+ α_j, y_k),
//
// one perturbation δ_k per data point.
type AttackOptions struct {
	// Norm is the perturbation set: solvers.LInf (or "", the paper's
	// ‖δ_k‖_∞ ≤ ε, set perturbation_set) or solvers.L2 (‖δ_k‖₂ ≤ ε).
	Norm solvers.Norm
	// Eps is the radius ε ≥ 0.
	Eps float64
	// Steps is the number T ≥ 1 of PGD iterations; 0 means the paper's 40
	// (appendix "FGSM and PGD Details"). FGSM ignores it (T = 1).
	Steps int
	// StepSize is the PGD step γ_p > 0; 0 means the paper's ε/30 for
	// solvers.LInf and 2.5ε/T for solvers.L2 (Madry et al.'s choice). FGSM
	// ignores it (γ_p = ε).
	StepSize float64
	// Loss is the loss ℓ the attack increases. The labels must suit it
	// (Loss.Labels). The hinge loss is attacked through the paper's leaky
	// hinge (see PGD).
	Loss solvers.Loss
	// Clip, if not nil, is a box [lo, hi] every perturbed input value must
	// also stay in (for example [0, 1] for pixels); the clean data must lie
	// in it.
	Clip *[2]float64
	// KeepBest makes PGD (and FGSM) return, per data point, the iterate
	// x̃^t, t = 0 … T, of largest loss instead of the last one x̃^T, the usual
	// strengthening for evaluation: the returned loss is then never below
	// the clean loss, so for the classification losses an attack never
	// turns a wrong prediction into a right one. The default false is the
	// paper's eq. (PGD).
	KeepBest bool
}

// attackParams are AttackOptions resolved for one attack.
type attackParams struct {
	l2       bool
	eps      float64
	step     float64
	steps    int
	loss     solvers.Loss
	clip     bool
	lo, hi   float64
	keepBest bool
}

// resolve validates o and fills in the defaults; fgsm selects T = 1 and
// γ_p = ε.
func (o AttackOptions) resolve(fgsm bool) (attackParams, error) {
	p := attackParams{loss: o.Loss, keepBest: o.KeepBest}
	switch o.Norm.Canonical() {
	case solvers.LInf:
	case solvers.L2:
		p.l2 = true
	default:
		return p, fmt.Errorf("backprop: attack: unknown norm %q (want \"inf\" or \"2\")", o.Norm)
	}
	if !(o.Eps >= 0) || math.IsInf(o.Eps, 0) {
		return p, fmt.Errorf("backprop: attack: radius ε = %v, need 0 ≤ ε < ∞", o.Eps)
	}
	p.eps = o.Eps
	switch o.Loss {
	case solvers.SquaredLoss, solvers.HingeLoss, solvers.BCELoss, solvers.LogisticLoss:
	default:
		return p, fmt.Errorf("backprop: attack: unknown loss %v", o.Loss)
	}
	if o.Clip != nil {
		p.clip, p.lo, p.hi = true, o.Clip[0], o.Clip[1]
		if math.IsNaN(p.lo) || math.IsNaN(p.hi) || math.IsInf(p.lo, 0) || math.IsInf(p.hi, 0) || p.lo > p.hi {
			return p, fmt.Errorf("backprop: attack: clip box [%v, %v], need finite lo ≤ hi", p.lo, p.hi)
		}
	}
	if fgsm {
		p.steps, p.step = 1, p.eps
		return p, nil
	}
	if o.Steps < 0 {
		return p, fmt.Errorf("backprop: attack: PGD Steps = %d, need T ≥ 1 (0 for the default 40)", o.Steps)
	}
	p.steps = o.Steps
	if p.steps == 0 {
		p.steps = 40
	}
	if !(o.StepSize >= 0) || math.IsInf(o.StepSize, 0) {
		return p, fmt.Errorf("backprop: attack: PGD step size γ_p = %v, need 0 < γ_p < ∞ (0 for the default)", o.StepSize)
	}
	p.step = o.StepSize
	if p.step == 0 {
		if p.l2 {
			p.step = 2.5 * p.eps / float64(p.steps)
		} else {
			p.step = p.eps / 30
		}
	}
	return p, nil
}

// checkData validates the clean inputs (rows×d0, finite, inside the clip
// box) and their labels against the attack's loss.
func (p *attackParams) checkData(x blas64.General, y []float64) error {
	if len(y) != x.Rows {
		return fmt.Errorf("backprop: attack: x has %d rows but y has %d labels", x.Rows, len(y))
	}
	for k, v := range y {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return fmt.Errorf("backprop: attack: y[%d] is %v", k, v)
		}
		if !p.loss.ValidLabel(v) {
			return fmt.Errorf("backprop: attack: y[%d] = %v: the %v loss needs labels %s", k, v, p.loss, p.loss.Labels())
		}
	}
	if p.clip {
		for k := 0; k < x.Rows; k++ {
			for i, v := range x.Data[k*x.Stride : k*x.Stride+x.Cols] {
				if v < p.lo || v > p.hi {
					return fmt.Errorf("backprop: attack: x[%d,%d] = %v lies outside the clip box [%v, %v]", k, i, v, p.lo, p.hi)
				}
			}
		}
	}
	return nil
}

// reluNet is a two-layer ReLU network laid out for matrix products: U₀ is
// the d0×m block of U acting on the raw features, b (nil without bias) the
// row of hidden biases, so the hidden pre-activations of the rows of X are
// Z = X U₀ + 1 bᵀ and f(x_k) = Σ_j (Z_kj)_+ α_j.
type reluNet struct {
	u0    blas64.General
	bias  []float64
	alpha []float64
}

// newReluNet views U (d×m, row stride stride) with or without its bias row.
func newReluNet(u []float64, d, m, stride int, bias bool, alpha []float64) reluNet {
	d0 := d
	v := reluNet{alpha: alpha}
	if bias {
		d0 = d - 1
		v.bias = u[d0*stride : d0*stride+m]
	}
	v.u0 = blas64.General{Rows: d0, Cols: m, Stride: stride, Data: u}
	return v
}

func netView(n *solvers.Network) reluNet {
	raw := n.U.RawMatrix()
	return newReluNet(raw.Data, raw.Rows, raw.Cols, raw.Stride, n.Bias, n.Alpha)
}

// forward sets Z = X U₀ + 1 bᵀ in z (x.Rows×m, stride m) and
// ŷ_k = Σ_j (Z_kj)_+ α_j.
func (v *reluNet) forward(x blas64.General, z, yhat []float64) {
	rows, m := x.Rows, len(v.alpha)
	blas64.Gemm(blas.NoTrans, blas.NoTrans, 1, x, v.u0, 0, blas64.General{Rows: rows, Cols: m, Stride: m, Data: z[:rows*m]})
	for k := 0; k < rows; k++ {
		zk := z[k*m : (k+1)*m]
		if v.bias != nil {
			for j, b := range v.bias {
				zk[j] += b
			}
		}
		var f float64
		for j, a := range v.alpha {
			if zk[j] > 0 {
				f += zk[j] * a
			}
		}
		yhat[k] = f
	}
}

// attackSlope returns the sign-carrying factor s_k of the input gradient
// ∇_x ℓ_k = s_k ∂ŷ_k/∂x, up to the loss's positive normalization (1 or 1/n):
// ŷ − y (squared), c σ(c ŷ) with c from Loss.MarginScale (BCE, logistic), and
// −y for the hinge loss through the paper's leaky hinge
// max{ζ(1 − yŷ), 1 − yŷ}, ζ → 0+, whose direction is −y ∂ŷ/∂x everywhere.
func attackSlope(l solvers.Loss, yhat, y float64) float64 {
	switch l {
	case solvers.SquaredLoss:
		return yhat - y
	case solvers.HingeLoss:
		return -y
	}
	c := l.MarginScale(y)
	return c * solvers.Logistic(c*yhat)
}

// attackScore is a strictly increasing function of the per-point loss (of
// the leaky hinge for the hinge loss), for KeepBest: |ŷ − y| (squared),
// −yŷ (hinge), c ŷ (BCE, logistic).
func attackScore(l solvers.Loss, yhat, y float64) float64 {
	switch l {
	case solvers.SquaredLoss:
		return math.Abs(yhat - y)
	case solvers.HingeLoss:
		return -y * yhat
	}
	return l.MarginScale(y) * yhat
}

// attacker is the work space of attacks on up to rows inputs of d0
// features against a network of width m; it allocates nothing per attack.
type attacker struct {
	z    []float64 // rows×m: Z, then the weights G of the input gradient
	g    []float64 // rows×d0: ∇_x
	yhat []float64 // rows
	best []float64 // rows: the best score so far (KeepBest)
	xb   []float64 // rows×d0: the best iterate so far (KeepBest)
}

func newAttacker(rows, d0, m int, keepBest bool) *attacker {
	a := &attacker{z: make([]float64, rows*m), g: make([]float64, rows*d0), yhat: make([]float64, rows)}
	if keepBest {
		a.best = make([]float64, rows)
		a.xb = make([]float64, rows*d0)
	}
	return a
}

// run writes into xt (x.Rows×d0) the attack of p on the clean inputs x with
// labels y:
//
//	x̃^0 = x,  x̃^{t+1} = Π(x̃^t + γ_p · dir(∇_x ℓ(f(x̃^t), y))),  t = 0 … T−1,
//
// with dir = sgn (entrywise, sgn 0 = 0) and Π the projection onto
// {‖x̃ − x‖_∞ ≤ ε} by clipping for solvers.LInf, dir(g) = g/‖g‖₂ (no move
// where g = 0) and Π the radial projection onto {‖x̃ − x‖₂ ≤ ε} for
// solvers.L2, each followed by clipping to the Clip box. The gradients of
// all rows come from two matrix products per step: Z = X̃U₀ + 1bᵀ, then
// ∇ = G U₀ᵀ with G_kj = s_k α_j 1[Z_kj > 0] (s_k from attackSlope).
func (a *attacker) run(v *reluNet, x blas64.General, y []float64, p *attackParams, xt blas64.General) {
	rows, d0, m := x.Rows, x.Cols, len(v.alpha)
	for k := 0; k < rows; k++ {
		copy(xt.Data[k*xt.Stride:k*xt.Stride+d0], x.Data[k*x.Stride:k*x.Stride+d0])
	}
	if p.eps == 0 {
		return
	}
	zg := blas64.General{Rows: rows, Cols: m, Stride: m, Data: a.z[:rows*m]}
	gg := blas64.General{Rows: rows, Cols: d0, Stride: d0, Data: a.g[:rows*d0]}
	yhat := a.yhat[:rows]
	for t := 0; t < p.steps; t++ {
		v.forward(xt, a.z, yhat)
		if p.keepBest {
			a.keep(xt, y, p, t == 0)
		}
		for k := 0; k < rows; k++ {
			s := attackSlope(p.loss, yhat[k], y[k])
			zk := a.z[k*m : (k+1)*m]
			for j, al := range v.alpha {
				if zk[j] > 0 {
					zk[j] = s * al
				} else {
					zk[j] = 0
				}
			}
		}
		blas64.Gemm(blas.NoTrans, blas.Trans, 1, zg, v.u0, 0, gg)
		for k := 0; k < rows; k++ {
			xk := x.Data[k*x.Stride : k*x.Stride+d0]
			tk := xt.Data[k*xt.Stride : k*xt.Stride+d0]
			gk := a.g[k*d0 : (k+1)*d0]
			if p.l2 {
				stepL2(xk, tk, gk, p)
			} else {
				stepInf(xk, tk, gk, p)
			}
		}
	}
	if p.keepBest {
		v.forward(xt, a.z, yhat)
		a.keep(xt, y, p, false)
		for k := 0; k < rows; k++ {
			copy(xt.Data[k*xt.Stride:k*xt.Stride+d0], a.xb[k*d0:(k+1)*d0])
		}
	}
}

// keep records, per row, x̃ if its score (at a.yhat) beats the best so far;
// first starts the record.
func (a *attacker) keep(xt blas64.General, y []float64, p *attackParams, first bool) {
	d0 := xt.Cols
	for k, yk := range y {
		s := attackScore(p.loss, a.yhat[k], yk)
		if first || s > a.best[k] {
			a.best[k] = s
			copy(a.xb[k*d0:(k+1)*d0], xt.Data[k*xt.Stride:k*xt.Stride+d0])
		}
	}
}

// stepInf is x̃ ← clip(x̃ + γ_p sgn(∇), [max(x − ε, lo), min(x + ε, hi)]).
// x, xt and g are one row of the data, the attack and the gradient.
func stepInf(x, xt, g []float64, p *attackParams) {
	for i, xi := range x {
		w := xt[i]
		if g[i] > 0 {
			w += p.step
		} else if g[i] < 0 {
			w -= p.step
		}
		lo, hi := xi-p.eps, xi+p.eps
		if p.clip {
			lo, hi = math.Max(lo, p.lo), math.Min(hi, p.hi)
		}
		xt[i] = math.Min(math.Max(w, lo), hi)
	}
}

// stepL2 is x̃ ← x̃ + γ_p ∇/‖∇‖₂, then δ = x̃ − x ← δ min(1, ε/‖δ‖₂), then
// clipping to the box. Clipping moves each coordinate toward x's (which is
// in the box), so the result stays in the ε-ball.
// x, xt and g are one row of the data, the attack and the gradient.
func stepL2(x, xt, g []float64, p *attackParams) {
	if gn := blas64.Nrm2(vec(g)); gn > 0 {
		blas64.Axpy(p.step/gn, vec(g), vec(xt))
	}
	var dn float64
	for i, xi := range x {
		e := xt[i] - xi
		dn += e * e
	}
	if dn = math.Sqrt(dn); dn > p.eps {
		c := p.eps / dn
		for i, xi := range x {
			xt[i] = xi + c*(xt[i]-xi)
		}
	}
	if p.clip {
		for i := range xt {
			xt[i] = math.Min(math.Max(xt[i], p.lo), p.hi)
		}
	}
}

// attackSetup validates the network, the data and the options of a public
// attack call.
func attackSetup(net *solvers.Network, x *mat.Dense, y []float64, o AttackOptions, fgsm bool) (reluNet, blas64.General, attackParams, error) {
	p, err := o.resolve(fgsm)
	if err != nil {
		return reluNet{}, blas64.General{}, p, err
	}
	v, raw, err := evalSetup(net, x, y)
	if err != nil {
		return v, raw, p, err
	}
	return v, raw, p, p.checkData(raw, y)
}

// evalSetup validates a network and finite data x (rows × the network's
// input dimension) with len(y) = rows finite labels.
func evalSetup(net *solvers.Network, x *mat.Dense, y []float64) (reluNet, blas64.General, error) {
	if err := net.Validate(); err != nil {
		return reluNet{}, blas64.General{}, err
	}
	if err := solvers.CheckFinite("backprop: network U", net.U); err != nil {
		return reluNet{}, blas64.General{}, err
	}
	for j, a := range net.Alpha {
		if math.IsNaN(a) || math.IsInf(a, 0) {
			return reluNet{}, blas64.General{}, fmt.Errorf("backprop: network α[%d] is %v", j, a)
		}
	}
	if x == nil {
		return reluNet{}, blas64.General{}, errors.New("backprop: no data x")
	}
	rows, cols := x.Dims()
	if cols != net.InputDim() {
		return reluNet{}, blas64.General{}, fmt.Errorf("backprop: data has %d features, network expects %d", cols, net.InputDim())
	}
	if len(y) != rows {
		return reluNet{}, blas64.General{}, fmt.Errorf("backprop: x has %d rows but y has %d labels", rows, len(y))
	}
	if err := solvers.CheckFinite("backprop: x", x); err != nil {
		return reluNet{}, blas64.General{}, err
	}
	for k, v := range y {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return reluNet{}, blas64.General{}, fmt.Errorf("backprop: y[%d] is %v", k, v)
		}
	}
	return netView(net), x.RawMatrix(), nil
}

func attack(net *solvers.Network, x *mat.Dense, y []float64, o AttackOptions, fgsm bool) (*mat.Dense, error) {
	v, raw, p, err := attackSetup(net, x, y, o, fgsm)
	if err != nil {
		return nil, err
	}
	out := mat.NewDense(raw.Rows, raw.Cols, nil)
	newAttacker(raw.Rows, raw.Cols, len(v.alpha), p.keepBest).run(&v, raw, y, &p, out.RawMatrix())
	return out, nil
}

// FGSM returns the fast-gradient-sign perturbation of the rows of x (raw
// features; with net.Bias the network appends the 1 itself, as
// Network.Predict does): one step of size ε from x,
//
//	x̃ = Π(x + ε sgn(∇_x ℓ(f(x), y))),
//
// the special case T = 1, γ_p = ε of eq. (PGD) (solvers.L2 steps
// ε ∇/‖∇‖₂). Steps and StepSize are ignored. See PGD for the gradient.
func FGSM(net *solvers.Network, x *mat.Dense, y []float64, o AttackOptions) (*mat.Dense, error) {
	return attack(net, x, y, o, true)
}

// PGD returns the projected-gradient-ascent perturbation of the rows of x
// (raw features, as for Network.Predict) of eq. (PGD):
//
//	x̃^0 = x,  x̃^{t+1} = Π_{B_ε(x)}(x̃^t + γ_p sgn(∇_x ℓ(Σ_j (x̃^tᵀ u_j)_+ α_j, y))),  t = 0 … T−1,
//
// returning x̃^T (or the best iterate with KeepBest). For solvers.L2 the
// step is γ_p ∇/‖∇‖₂ and Π scales δ = x̃ − x back to ‖δ‖₂ = ε when longer;
// for solvers.LInf Π clips each coordinate to [x_i − ε, x_i + ε]. The Clip
// box is applied after Π. The gradient through the ReLU takes the subgradient
// 1[x̃ᵀu_j > 0]: ∇_x ℓ_k = s_k Σ_{j: x̃_kᵀu_j > 0} α_j u_j (without the bias
// entry), s_k = ℓ'(ŷ_k). For the hinge loss s_k = −y_k, the direction of the
// leaky hinge max{ζ(1 − yŷ), 1 − yŷ}, ζ → 0+ (appendix "FGSM and PGD
// Details", eq. PGD_hinge), so points already beyond the margin are still
// pushed toward the boundary. All rows are attacked at once with two
// matrix products per step.
func PGD(net *solvers.Network, x *mat.Dense, y []float64, o AttackOptions) (*mat.Dense, error) {
	return attack(net, x, y, o, false)
}

// RobustAccuracy returns the accuracy (solvers.Accuracy: f ≥ 0 predicts
// y > 0) of net on x: for NoAdversary on x itself (the clean accuracy), for
// FGSMAdversary and PGDAdversary on the perturbed inputs FGSM(net, x, y, o)
// and PGD(net, x, y, o). The options are not read for NoAdversary.
func RobustAccuracy(net *solvers.Network, x *mat.Dense, y []float64, adv Adversary, o AttackOptions) (float64, error) {
	var fgsm bool
	switch adv {
	case NoAdversary:
	case FGSMAdversary:
		fgsm = true
	case PGDAdversary:
	default:
		return 0, fmt.Errorf("backprop: unknown attack method %q (want \"\" for none, \"fgsm\" or \"pgd\")", adv)
	}
	var (
		v   reluNet
		raw blas64.General
		err error
	)
	if adv == NoAdversary {
		v, raw, err = evalSetup(net, x, y)
		if err != nil {
			return 0, err
		}
	} else {
		adv, err := attack(net, x, y, o, fgsm)
		if err != nil {
			return 0, err
		}
		v, raw = netView(net), adv.RawMatrix()
	}
	yhat := make([]float64, raw.Rows)
	v.forward(raw, make([]float64, raw.Rows*len(v.alpha)), yhat)
	return solvers.Accuracy(yhat, y)
}
