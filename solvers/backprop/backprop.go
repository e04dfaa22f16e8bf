package backprop

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/convexnn/convexnn/solvers"
	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/gonum/mat"
)

// Options are the parameters of back-propagation training of the
// non-convex two-layer ReLU network of eq. (nonconvex_general), the
// baselines GD-std, GD-FGSM and GD-PGD of the paper's experiments.
type Options struct {
	// Width is the number m ≥ 1 of hidden neurons.
	Width int
	// Beta is the weight decay β ≥ 0 of the objective's (β/2)Σ_j(‖u_j‖² + α_j²)
	// (the hidden biases are in u_j, as in the paper's bias-absorbing X).
	Beta float64
	// Loss is the training loss; the labels must suit it (Loss.Labels).
	Loss solvers.Loss
	// Optimizer is Adam (or "", Kingma and Ba with β₁ = 0.9, β₂ = 0.999,
	// ε = 1e-8) or SGD (plain gradient steps).
	Optimizer Optimizer
	// LearningRate is the step size > 0; 0 means 1e-3 for Adam and 1e-2
	// for SGD. The squared loss is a sum (½Σ_k), so its gradient grows
	// with n: SGD needs a step of order 1/(n‖X‖²) for it.
	LearningRate float64
	// Epochs bounds Train; 0 means 100. Step ignores it.
	Epochs int
	// BatchSize is the minibatch size; 0 (or ≥ n) means full-batch
	// gradient descent.
	BatchSize int
	// Seed seeds the initialization and, with the epoch number, each
	// epoch's shuffle: the same seed gives the same run.
	Seed uint64
	// Adversary is NoAdversary (standard training, GD-std), FGSMAdversary
	// (GD-FGSM) or PGDAdversary (GD-PGD): each minibatch is replaced by its FGSM or PGD
	// perturbation at the current weights before the gradient step, the
	// approximation of eq. (robust_general) of Madry et al.
	Adversary Adversary
	// Attack configures the adversary (and RobustObjective). Its Loss is
	// overwritten with Loss: the adversary increases the training loss.
	Attack AttackOptions
	// Bias appends a constant 1 to every input: U gets a last row of hidden
	// biases, as solvers.Network with Bias.
	Bias bool
}

// Optimizer names the training method of Trainer.
type Optimizer string

// The optimizers.
const (
	Adam Optimizer = "adam" // Kingma and Ba, the default
	SGD  Optimizer = "sgd"  // plain gradient steps
)

// Adversary names the attack that perturbs the training data (Options) or
// the data an accuracy is measured on (RobustAccuracy).
type Adversary string

// The adversaries.
const (
	NoAdversary   Adversary = ""     // none: standard training (GD-std), clean accuracy
	FGSMAdversary Adversary = "fgsm" // FGSM, one signed-gradient step (GD-FGSM)
	PGDAdversary  Adversary = "pgd"  // PGD, eq. (PGD) (GD-PGD)
)

// Step is what one epoch reports, at the weights after the epoch.
type Step struct {
	// Epoch is the number of epochs done.
	Epoch int
	// Objective is l^{u,α} = ℓ(Σ_j (X u_j)_+ α_j, y) + (β/2)Σ_j(‖u_j‖² + α_j²)
	// on the clean training data, eq. (nonconvex_general), as
	// solvers.Program.NonconvexObjective computes it.
	Objective float64
	// RobustObjective is the same on the training data perturbed by the
	// adversary at the new weights, ℓ(Σ_j ((X + Δ)u_j)_+ α_j, y) + (β/2)Σ_j(…),
	// the objective of eq. (robust_general) with the attack's Δ for the inner
	// maximum; 0 without an adversary.
	RobustObjective float64
	// Accuracy and RobustAccuracy are the training accuracies
	// (solvers.Accuracy) on the clean and the perturbed data
	// (RobustAccuracy 0 without an adversary).
	Accuracy, RobustAccuracy float64
	// Seconds is the wall time of the step, EvalSeconds the part of it
	// spent on the reported quantities (one forward pass over the data and,
	// with an adversary, one attack on it). With full batches that work is
	// reused by the next epoch's gradient step, so it is not wasted.
	Seconds, EvalSeconds float64
}

// State is the complete training state. U holds the d×m matrix U of
// Network (d = features, +1 with Bias) row by row, Alpha the m output
// weights; M and V are Adam's first and second moment estimates of the
// parameters in the order (U row by row, α), and AdamStep is Adam's t (the
// number of Adam updates since the moments were zero). Each epoch's shuffle
// is drawn from a generator seeded with (Seed, Epoch), so no generator state
// is stored: a run resumed from a saved state takes exactly, bitwise, the
// steps of an uninterrupted one (within one build, as the admm states).
type State struct {
	Epoch    int
	AdamStep int
	U        []float64
	Alpha    []float64
	M, V     []float64
}

// bpInitStream is the PCG stream of the initialization (epochs use the
// epoch number as stream).
const bpInitStream = 0x6a09e667f3bcc908

const (
	adamBeta1 = 0.9
	adamBeta2 = 0.999
	adamEps   = 1e-8
)

// Trainer trains the two-layer ReLU network f(x) = Σ_j (xᵀu_j)_+ α_j by
// minibatch gradient descent (SGD or Adam) on eq. (nonconvex_general), or,
// with an adversary, on eq. (robust_general) with FGSM or PGD for the inner
// maximum. Per minibatch B of b rows (X_B, y_B), with Z = X_B U₀ + 1 bᵀ and
// r_k = w ℓ'(ŷ_k) (w = n/b for the summed squared loss, 1/b for the mean
// losses, so the step is an unbiased estimate of the full gradient),
//
//	∇_α = (Z)_+ᵀ r + β α,  ∇_{U₀} = X_Bᵀ G + β U₀,  ∇_b = Gᵀ1 + β b,  G_kj = r_k α_j 1[Z_kj > 0],
//
// two matrix products per batch; ℓ' of the hinge loss is the subgradient
// −y 1[yŷ < 1]. The initialization is He et al.'s: U₀ entries N(0, 2/d0),
// biases 0, α_j ∼ N(0, 1/m), from PCG(Seed, bpInitStream).
//
// Trainer is not safe for concurrent use; x and y must not change after
// New, nor State between steps (to start from another state, call
// New with it).
type Trainer struct {
	Options Options
	State   State

	x         blas64.General
	y         []float64
	n, d0, d  int
	m, batch  int
	adam      bool
	adv       bool
	atk       attackParams
	net       reluNet
	pcg       *rand.PCG
	rng       *rand.Rand
	perm      []int
	xb        blas64.General // batch×d0: the gathered minibatch
	yb        []float64
	xa        blas64.General // n×d0: the adversarial inputs
	z         []float64      // n×m: Z, then G
	yhat      []float64
	gu, galph []float64
	att       *attacker
	// fresh: z and yhat hold the forward pass of the next full-batch
	// gradient step (on x, or on xa with an adversary) at the current
	// weights, from the last evaluation.
	fresh bool
}

// New validates the data (x raw features, n×d0, without a bias
// column) and the options, and starts from the seeded initialization or
// continues from the saved state st (which is copied).
func New(x *mat.Dense, y []float64, o Options, st *State) (*Trainer, error) {
	if x == nil {
		return nil, errors.New("backprop: no data x")
	}
	n, d0 := x.Dims()
	if n == 0 || d0 == 0 {
		return nil, fmt.Errorf("backprop: x is empty (%d×%d)", n, d0)
	}
	if len(y) != n {
		return nil, fmt.Errorf("backprop: x has %d rows but y has %d labels", n, len(y))
	}
	if err := solvers.CheckFinite("backprop: x", x); err != nil {
		return nil, err
	}
	switch o.Loss {
	case solvers.SquaredLoss, solvers.HingeLoss, solvers.BCELoss, solvers.LogisticLoss:
	default:
		return nil, fmt.Errorf("backprop: unknown loss %v", o.Loss)
	}
	for k, v := range y {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return nil, fmt.Errorf("backprop: y[%d] is %v", k, v)
		}
		if !o.Loss.ValidLabel(v) {
			return nil, fmt.Errorf("backprop: y[%d] = %v: the %v loss needs labels %s", k, v, o.Loss, o.Loss.Labels())
		}
	}
	if o.Width < 1 {
		return nil, fmt.Errorf("backprop: Width = %d, need m ≥ 1 hidden neurons", o.Width)
	}
	if !(o.Beta >= 0) || math.IsInf(o.Beta, 0) {
		return nil, fmt.Errorf("backprop: β = %v, need 0 ≤ β < ∞", o.Beta)
	}
	b := &Trainer{x: x.RawMatrix(), y: y, n: n, d0: d0, d: d0, m: o.Width}
	if o.Bias {
		b.d++
	}
	switch o.Optimizer {
	case "", Adam:
		o.Optimizer, b.adam = Adam, true
	case SGD:
	default:
		return nil, fmt.Errorf("backprop: unknown optimizer %q (want \"adam\" or \"sgd\")", o.Optimizer)
	}
	if !(o.LearningRate >= 0) || math.IsInf(o.LearningRate, 0) {
		return nil, fmt.Errorf("backprop: learning rate %v, need 0 < rate < ∞ (0 for the default)", o.LearningRate)
	}
	if o.LearningRate == 0 {
		o.LearningRate = 1e-2
		if b.adam {
			o.LearningRate = 1e-3
		}
	}
	if o.Epochs < 0 {
		return nil, fmt.Errorf("backprop: Epochs = %d < 0", o.Epochs)
	}
	if o.Epochs == 0 {
		o.Epochs = 100
	}
	if o.BatchSize < 0 {
		return nil, fmt.Errorf("backprop: BatchSize = %d < 0", o.BatchSize)
	}
	b.batch = o.BatchSize
	if b.batch == 0 || b.batch > n {
		b.batch = n
	}
	o.Attack.Loss = o.Loss
	switch o.Adversary {
	case "":
	case FGSMAdversary, PGDAdversary:
		p, err := o.Attack.resolve(o.Adversary == FGSMAdversary)
		if err != nil {
			return nil, fmt.Errorf("backprop: adversary: %w", err)
		}
		if err := p.checkData(b.x, y); err != nil {
			return nil, fmt.Errorf("backprop: adversary: %w", err)
		}
		b.adv, b.atk = true, p
	default:
		return nil, fmt.Errorf("backprop: unknown adversary %q (want \"\", \"fgsm\" or \"pgd\")", o.Adversary)
	}
	b.Options = o
	np := b.d*b.m + b.m
	if st != nil {
		if err := st.check(b.d, b.m, b.adam); err != nil {
			return nil, err
		}
		b.State = State{Epoch: st.Epoch, AdamStep: st.AdamStep, U: slices.Clone(st.U), Alpha: slices.Clone(st.Alpha), M: slices.Clone(st.M), V: slices.Clone(st.V)}
	} else {
		b.State = b.initial()
	}
	if b.adam && len(b.State.M) == 0 {
		b.State.M, b.State.V, b.State.AdamStep = make([]float64, np), make([]float64, np), 0
	}
	b.net = newReluNet(b.State.U, b.d, b.m, b.m, o.Bias, b.State.Alpha)
	b.pcg = rand.NewPCG(0, 0)
	b.rng = rand.New(b.pcg)
	b.perm = make([]int, n)
	b.xb = blas64.General{Rows: b.batch, Cols: d0, Stride: d0, Data: make([]float64, b.batch*d0)}
	b.yb = make([]float64, b.batch)
	b.z = make([]float64, n*b.m)
	b.yhat = make([]float64, n)
	b.gu = make([]float64, b.d*b.m)
	b.galph = make([]float64, b.m)
	if b.adv {
		b.xa = blas64.General{Rows: n, Cols: d0, Stride: d0, Data: make([]float64, n*d0)}
		b.att = newAttacker(n, d0, b.m, b.atk.keepBest)
	}
	return b, nil
}

// initial draws the He initialization from PCG(Seed, bpInitStream).
func (b *Trainer) initial() State {
	rng := rand.New(rand.NewPCG(b.Options.Seed, bpInitStream))
	st := State{U: make([]float64, b.d*b.m), Alpha: make([]float64, b.m)}
	su := math.Sqrt(2 / float64(b.d0))
	for q := range st.U[:b.d0*b.m] {
		st.U[q] = su * rng.NormFloat64()
	}
	sa := math.Sqrt(1 / float64(b.m))
	for j := range st.Alpha {
		st.Alpha[j] = sa * rng.NormFloat64()
	}
	return st
}

// check validates a saved state for d×m weights.
func (st *State) check(d, m int, adam bool) error {
	if st.Epoch < 0 || st.AdamStep < 0 {
		return fmt.Errorf("backprop: saved state at epoch %d, Adam step %d, need ≥ 0", st.Epoch, st.AdamStep)
	}
	np := d*m + m
	for _, f := range []struct {
		name string
		v    []float64
		want int
	}{{"U", st.U, d * m}, {"Alpha", st.Alpha, m}, {"M", st.M, np}, {"V", st.V, np}} {
		if (f.name == "M" || f.name == "V") && (!adam || (len(st.M) == 0 && len(st.V) == 0)) {
			continue // SGD ignores the moments; Adam starts empty moments at zero
		}
		if len(f.v) != f.want {
			return fmt.Errorf("backprop: saved state has %d entries in %s, the network (d=%d with bias, m=%d) needs %d", len(f.v), f.name, d, m, f.want)
		}
		for q, v := range f.v {
			if math.IsNaN(v) || math.IsInf(v, 0) || (f.name == "V" && v < 0) {
				return fmt.Errorf("backprop: saved state has %s[%d] = %v", f.name, q, v)
			}
		}
	}
	return nil
}

// Step runs one epoch: a shuffle drawn from PCG(Seed, Epoch) (none for full
// batches), then per minibatch the adversary (if any), the gradient and
// the optimizer update. It reports the objectives at the new weights.
func (b *Trainer) Step() Step {
	t0 := time.Now()
	if b.batch == b.n {
		b.fullBatch()
	} else {
		b.miniBatches()
	}
	b.State.Epoch++
	t1 := time.Now()
	s := b.evaluate()
	s.Epoch = b.State.Epoch
	s.EvalSeconds = time.Since(t1).Seconds()
	s.Seconds = time.Since(t0).Seconds()
	return s
}

func (b *Trainer) fullBatch() {
	in := b.x
	if b.adv {
		in = b.xa
		if !b.fresh {
			b.att.run(&b.net, b.x, b.y, &b.atk, b.xa)
		}
	}
	if !b.fresh {
		b.net.forward(in, b.z, b.yhat)
	}
	b.fresh = false
	b.gradient(in, b.y)
	b.update()
}

func (b *Trainer) miniBatches() {
	n, d0 := b.n, b.d0
	b.fresh = false
	b.pcg.Seed(b.Options.Seed, uint64(b.State.Epoch))
	for i := range b.perm {
		b.perm[i] = i
	}
	for i := n - 1; i > 0; i-- {
		j := b.rng.IntN(i + 1)
		b.perm[i], b.perm[j] = b.perm[j], b.perm[i]
	}
	for lo := 0; lo < n; lo += b.batch {
		rows := min(b.batch, n-lo)
		for r, k := range b.perm[lo : lo+rows] {
			copy(b.xb.Data[r*d0:(r+1)*d0], b.x.Data[k*b.x.Stride:k*b.x.Stride+d0])
			b.yb[r] = b.y[k]
		}
		in := blas64.General{Rows: rows, Cols: d0, Stride: d0, Data: b.xb.Data[:rows*d0]}
		yb := b.yb[:rows]
		if b.adv {
			xa := blas64.General{Rows: rows, Cols: d0, Stride: d0, Data: b.xa.Data[:rows*d0]}
			b.att.run(&b.net, in, yb, &b.atk, xa)
			in = xa
		}
		b.net.forward(in, b.z, b.yhat)
		b.gradient(in, yb)
		b.update()
	}
}

// gradient sets (gu, galph) to the minibatch estimate of the objective's
// gradient at the current weights, from the forward pass (Z, ŷ) of the
// rows of in held in b.z and b.yhat (Z is overwritten with G).
func (b *Trainer) gradient(in blas64.General, y []float64) {
	rows, m, d0 := in.Rows, b.m, b.d0
	w := 1 / float64(rows)
	if b.Options.Loss == solvers.SquaredLoss {
		w = float64(b.n) / float64(rows)
	}
	alpha := b.State.Alpha
	ga := b.galph
	clear(ga)
	for k, yk := range y {
		r := w * trainSlope(b.Options.Loss, b.yhat[k], yk)
		zk := b.z[k*m : (k+1)*m]
		for j, al := range alpha {
			if h := zk[j]; h > 0 {
				ga[j] += r * h
				zk[j] = r * al
			} else {
				zk[j] = 0
			}
		}
	}
	g := blas64.General{Rows: rows, Cols: m, Stride: m, Data: b.z[:rows*m]}
	blas64.Gemm(blas.Trans, blas.NoTrans, 1, in, g, 0, blas64.General{Rows: d0, Cols: m, Stride: m, Data: b.gu[:d0*m]})
	if b.Options.Bias {
		gb := b.gu[d0*m:]
		clear(gb)
		for k := 0; k < rows; k++ {
			for j, v := range b.z[k*m : (k+1)*m] {
				gb[j] += v
			}
		}
	}
	if beta := b.Options.Beta; beta != 0 {
		for q, u := range b.State.U {
			b.gu[q] += beta * u
		}
		for j, a := range alpha {
			ga[j] += beta * a
		}
	}
}

// trainSlope is ℓ'(ŷ_k) without the loss's normalization: ŷ − y (squared),
// −y 1[yŷ < 1] (hinge subgradient), c σ(cŷ) (BCE, logistic; Loss.MarginScale).
func trainSlope(l solvers.Loss, yhat, y float64) float64 {
	switch l {
	case solvers.SquaredLoss:
		return yhat - y
	case solvers.HingeLoss:
		if y*yhat < 1 {
			return -y
		}
		return 0
	}
	c := l.MarginScale(y)
	return c * solvers.Logistic(c*yhat)
}

// update takes one optimizer step with the gradient in (gu, galph).
func (b *Trainer) update() {
	lr := b.Options.LearningRate
	st := &b.State
	if !b.adam {
		for q, g := range b.gu {
			st.U[q] -= lr * g
		}
		for j, g := range b.galph {
			st.Alpha[j] -= lr * g
		}
		return
	}
	st.AdamStep++
	t := float64(st.AdamStep)
	c1, c2 := 1-math.Pow(adamBeta1, t), 1-math.Pow(adamBeta2, t)
	du := len(st.U)
	adamUpdate(st.U, b.gu, st.M[:du], st.V[:du], lr, c1, c2)
	adamUpdate(st.Alpha, b.galph, st.M[du:], st.V[du:], lr, c1, c2)
}

// adamUpdate is m ← β₁m + (1−β₁)g, v ← β₂v + (1−β₂)g²,
// θ ← θ − lr (m/c1)/(√(v/c2) + ε) with the bias corrections c1 = 1 − β₁ᵗ,
// c2 = 1 − β₂ᵗ.
func adamUpdate(theta, g, m, v []float64, lr, c1, c2 float64) {
	m, v = m[:len(theta)], v[:len(theta)]
	g = g[:len(theta)]
	for q := range theta {
		m[q] = adamBeta1*m[q] + (1-adamBeta1)*g[q]
		v[q] = adamBeta2*v[q] + (1-adamBeta2)*g[q]*g[q]
		theta[q] -= lr * (m[q] / c1) / (math.Sqrt(v[q]/c2) + adamEps)
	}
}

// evaluate computes the reported objectives and accuracies at the current
// weights; with full batches it leaves in z, yhat (and xa) the forward pass
// of the next gradient step.
func (b *Trainer) evaluate() Step {
	var s Step
	reg := b.regularizer()
	b.net.forward(b.x, b.z, b.yhat)
	s.Objective = b.Options.Loss.Value(b.yhat, b.y) + reg
	s.Accuracy, _ = solvers.Accuracy(b.yhat, b.y)
	if b.adv {
		b.att.run(&b.net, b.x, b.y, &b.atk, b.xa)
		b.net.forward(b.xa, b.z, b.yhat)
		s.RobustObjective = b.Options.Loss.Value(b.yhat, b.y) + reg
		s.RobustAccuracy, _ = solvers.Accuracy(b.yhat, b.y)
	}
	b.fresh = b.batch == b.n
	return s
}

// regularizer returns (β/2)Σ_j(‖u_j‖² + α_j²).
func (b *Trainer) regularizer() float64 {
	var s float64
	for _, u := range b.State.U {
		s += u * u
	}
	for _, a := range b.State.Alpha {
		s += a * a
	}
	return b.Options.Beta / 2 * s
}

// Network returns a copy of the current weights as a solvers.Network (Bias
// as in the options), the type the convex methods recover, so
// Network.Predict, solvers.Accuracy, FGSM, PGD, RobustAccuracy and
// solvers.Program.NonconvexObjective apply to it.
func (b *Trainer) Network() *solvers.Network {
	return &solvers.Network{U: mat.NewDense(b.d, b.m, slices.Clone(b.State.U)), Alpha: slices.Clone(b.State.Alpha), Bias: b.Options.Bias}
}

// Train trains from the seeded initialization for Epochs epochs or
// until ctx is canceled, calling onStep (if not nil) after every epoch;
// onStep returning false stops early. It returns the trainer, whose State
// can be saved and resumed with New, and the steps taken. On
// cancellation, or when the objective stops being finite (the learning rate
// is too large), the trainer and the steps so far are returned with an
// error.
func Train(ctx context.Context, x *mat.Dense, y []float64, o Options, onStep func(Step) bool) (*Trainer, []Step, error) {
	b, err := New(x, y, o, nil)
	if err != nil {
		return nil, nil, err
	}
	var hist []Step
	for len(hist) < b.Options.Epochs {
		if err := ctx.Err(); err != nil {
			return b, hist, err
		}
		s := b.Step()
		hist = append(hist, s)
		if math.IsNaN(s.Objective) || math.IsInf(s.Objective, 0) {
			return b, hist, fmt.Errorf("backprop: the objective is %v after epoch %d: training diverged, lower the learning rate (%v)", s.Objective, s.Epoch, b.Options.LearningRate)
		}
		if onStep != nil && !onStep(s) {
			break
		}
	}
	return b, hist, nil
}
