package backprop

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/convexnn/convexnn/solvers"
	"github.com/convexnn/convexnn/solvers/batchnorm"
	"github.com/convexnn/convexnn/solvers/cnn"
	"github.com/convexnn/convexnn/solvers/twohidden"
	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/gonum/floats"
	"gonum.org/v1/gonum/mat"
)

// Model is a network of one of the appendix's architectures as back-prop
// sees it: its parameters as one vector, the training objective with its
// gradient (full batch), and a projection onto its constraints.
type Model interface {
	// Params returns the parameter vector; changing it changes the model.
	Params() []float64
	// Objective returns the training objective and sets grad (len(Params()))
	// to its gradient (a subgradient at the ReLUs' and the hinge's kinks).
	Objective(grad []float64) float64
}

// projector is a Model with constraints (twohidden's unit balls).
type projector interface{ project() }

// Minimize trains m by full-batch Adam (learning rate lr) for epochs steps
// and returns the objective before each step and after the last. ctx stops
// it between steps, with the objectives so far.
func Minimize(ctx context.Context, m Model, lr float64, epochs int) ([]float64, error) {
	if !(lr > 0) || epochs < 0 {
		return nil, fmt.Errorf("backprop: Minimize(learning rate %v, %d epochs): need lr > 0 and epochs ≥ 0", lr, epochs)
	}
	a := newAdam(m, lr)
	var hist []float64
	for t := 1; t <= epochs; t++ {
		if err := ctx.Err(); err != nil {
			return hist, err
		}
		hist = append(hist, a.step())
	}
	return append(hist, m.Objective(a.g)), nil
}

// adam is full-batch Adam on a Model: its moments and step count.
type adam struct {
	m        Model
	lr       float64
	t        int
	g, mo, v []float64
}

func newAdam(m Model, lr float64) *adam {
	k := len(m.Params())
	return &adam{m: m, lr: lr, g: make([]float64, k), mo: make([]float64, k), v: make([]float64, k)}
}

// step evaluates the objective and its gradient, takes one Adam step (then
// the model's projection) and returns the objective before the step.
func (a *adam) step() float64 {
	a.t++
	obj := a.m.Objective(a.g)
	adamUpdate(a.m.Params(), a.g, a.mo, a.v, a.lr, 1-math.Pow(adamBeta1, float64(a.t)), 1-math.Pow(adamBeta2, float64(a.t)))
	if p, ok := a.m.(projector); ok {
		p.project()
	}
	return obj
}

// AdversarialCNN trains the CNN by GD-PGD, the paper's adversarial
// training baseline (section "Convex Adversarial Training"), on the images
// x (rows, CHW) of the model: each of epochs steps attacks every image
// with PGD against the current network (cnn.Network.Attack: ‖δ‖_∞ ≤ eps,
// pgdSteps steps), then takes one full-batch Adam step (learning rate lr)
// on the perturbed images. It returns the objective on the perturbed
// images before each step; ctx stops it between steps. The model's images
// are x's perturbations afterwards (SetImages(x) restores them).
func AdversarialCNN(ctx context.Context, c *CNNModel, x *mat.Dense, eps float64, pgdSteps int, lr float64, epochs int) ([]float64, error) {
	if !(lr > 0) || epochs < 0 || !(eps >= 0) || math.IsInf(eps, 0) || pgdSteps < 0 {
		return nil, fmt.Errorf("backprop: AdversarialCNN(ε %v, %d PGD steps, learning rate %v, %d epochs): need ε, steps, epochs ≥ 0 and lr > 0", eps, pgdSteps, lr, epochs)
	}
	n, d := x.Dims()
	adv := mat.NewDense(n, d, nil)
	a := newAdam(c, lr)
	var hist []float64
	for t := 1; t <= epochs; t++ {
		if err := ctx.Err(); err != nil {
			return hist, err
		}
		net := c.Network()
		for i := 0; i < n; i++ {
			z, _, err := net.Attack(x.RawRowView(i), c.Y[i], eps, pgdSteps, c.Loss)
			if err != nil {
				return hist, fmt.Errorf("backprop: AdversarialCNN: image %d: %w", i, err)
			}
			copy(adv.RawRowView(i), z)
		}
		if err := c.SetImages(adv); err != nil {
			return hist, err
		}
		hist = append(hist, a.step())
	}
	return hist, nil
}

// lossSlopes sets s = ∂ℓ/∂ŷ (the mean losses' 1/n included; the hinge's
// subgradient 0 at the kink) and returns ℓ(ŷ, y).
func lossSlopes(l solvers.Loss, s, yhat, y []float64) float64 {
	scale := slopeScale(l, len(y))
	for k := range y {
		s[k] = scale * trainSlope(l, yhat[k], y[k])
	}
	return l.Value(yhat, y)
}

// slopeScale is the factor of a loss's slopes on n points: 1/n for the mean
// losses, 1 for the squared loss (a sum).
func slopeScale(l solvers.Loss, n int) float64 {
	if l == solvers.SquaredLoss {
		return 1
	}
	return 1 / float64(n)
}

func gaussian(rng *rand.Rand, x []float64, sd float64) {
	for i := range x {
		x[i] = sd * rng.NormFloat64()
	}
}

// BNModel is a batch-normalized network (batchnorm.Network) trained with
// full-batch BN on X: parameters W (d×m), γ, α and the output weights a;
// objective ℓ(f(X), y) + (β/2)(‖γ‖² + ‖α‖² + ‖a‖²) (batchnorm.Network.Objective).
type BNModel struct {
	X    *mat.Dense
	Y    []float64
	Loss solvers.Loss
	Beta float64
	m    int
	p    []float64 // W (d×m, row-major), γ, α, a
}

// NewBNModel returns a BN network of width m with Gaussian weights (seed).
func NewBNModel(x *mat.Dense, y []float64, loss solvers.Loss, beta float64, m int, seed uint64) (*BNModel, error) {
	if err := checkModelData(x, y, loss, beta, m); err != nil {
		return nil, err
	}
	_, d := x.Dims()
	b := &BNModel{X: x, Y: y, Loss: loss, Beta: beta, m: m, p: make([]float64, d*m+3*m)}
	rng := rand.New(rand.NewPCG(seed, 0xb4))
	gaussian(rng, b.p, 1/math.Sqrt(float64(m)))
	return b, nil
}

func checkModelData(x *mat.Dense, y []float64, loss solvers.Loss, beta float64, m int) error {
	if x == nil {
		return errors.New("backprop: no data matrix")
	}
	n, _ := x.Dims()
	if len(y) != n {
		return fmt.Errorf("backprop: X has %d rows but y has %d entries", n, len(y))
	}
	if err := loss.CheckLabels(y); err != nil {
		return fmt.Errorf("backprop: %w", err)
	}
	if !(beta > 0) || math.IsInf(beta, 0) || m < 1 {
		return fmt.Errorf("backprop: β = %v and width %d, need β > 0 and width ≥ 1", beta, m)
	}
	return nil
}

// Params returns W, γ, α and a as one vector.
func (b *BNModel) Params() []float64 { return b.p }

// Network returns the current network with the training batch statistics.
func (b *BNModel) Network() *batchnorm.Network {
	n, d := b.X.Dims()
	m := b.m
	net := &batchnorm.Network{W: mat.NewDense(d, m, append([]float64(nil), b.p[:d*m]...)), N: n,
		Gamma: append([]float64(nil), b.p[d*m:d*m+m]...), Alpha: append([]float64(nil), b.p[d*m+m:d*m+2*m]...), A: append([]float64(nil), b.p[d*m+2*m:]...)}
	var h mat.Dense
	h.Mul(b.X, net.W)
	col := make([]float64, n)
	for j := 0; j < m; j++ {
		mat.Col(col, j, &h)
		mu := floats.Sum(col) / float64(n)
		var s float64
		for _, v := range col {
			s += (v - mu) * (v - mu)
		}
		net.Mean, net.Scale = append(net.Mean, mu), append(net.Scale, math.Sqrt(s))
	}
	return net
}

// Objective is BNModel's objective and gradient (see BNModel).
func (b *BNModel) Objective(grad []float64) float64 {
	n, d := b.X.Dims()
	m := b.m
	w := mat.NewDense(d, m, b.p[:d*m])
	gamma, alpha, a := b.p[d*m:d*m+m], b.p[d*m+m:d*m+2*m], b.p[d*m+2*m:]
	var h mat.Dense
	h.Mul(b.X, w)
	sq := 1 / math.Sqrt(float64(n))
	chat, z := mat.NewDense(n, m, nil), mat.NewDense(n, m, nil)
	scale := make([]float64, m)
	out := make([]float64, n)
	col := make([]float64, n)
	for j := 0; j < m; j++ {
		mat.Col(col, j, &h)
		mu := floats.Sum(col) / float64(n)
		for k := range col {
			col[k] -= mu
		}
		s := floats.Norm(col, 2)
		scale[j] = s
		for k, c := range col {
			ch := 0.0
			if s > 0 {
				ch = c / s
			}
			chat.Set(k, j, ch)
			zk := gamma[j]*ch + alpha[j]*sq
			z.Set(k, j, zk)
			if zk > 0 {
				out[k] += a[j] * zk
			}
		}
	}
	slopes := make([]float64, n)
	obj := lossSlopes(b.Loss, slopes, out, b.Y) + b.Beta/2*(floats.Dot(gamma, gamma)+floats.Dot(alpha, alpha)+floats.Dot(a, a))
	clear(grad)
	gw := mat.NewDense(d, m, grad[:d*m])
	gg, ga, gaa := grad[d*m:d*m+m], grad[d*m+m:d*m+2*m], grad[d*m+2*m:]
	dh := mat.NewDense(n, m, nil)
	delta := make([]float64, n)
	for j := 0; j < m; j++ {
		var dc float64
		for k := 0; k < n; k++ {
			zk := z.At(k, j)
			delta[k] = 0
			if zk > 0 {
				gaa[j] += slopes[k] * zk
				delta[k] = a[j] * slopes[k]
			}
			gg[j] += delta[k] * chat.At(k, j)
			ga[j] += delta[k] * sq
			dc += chat.At(k, j) * delta[k]
		}
		gaa[j] += b.Beta * a[j]
		gg[j] += b.Beta * gamma[j]
		ga[j] += b.Beta * alpha[j]
		if scale[j] == 0 {
			continue
		}
		// ∂/∂h = (γ/s)(δ − mean(δ) − ĉ(ĉᵀδ)).
		md := floats.Sum(delta) / float64(n)
		for k := 0; k < n; k++ {
			dh.Set(k, j, gamma[j]/scale[j]*(delta[k]-md-chat.At(k, j)*dc))
		}
	}
	gw.Mul(b.X.T(), dh)
	return obj
}

// CNNModel is a two-layer CNN (cnn.Network) trained by back-prop:
// parameters U (filters, f×m) and α; objective ℓ(f(X), y) + (β/2)(‖U‖_F² +
// ‖α‖²) (cnn.Network.Objective). Its Objective reuses the model's buffers:
// one goroutine at a time.
type CNNModel struct {
	net *cnn.Network
	// stacked holds the K patches of the n images, patch k of image i in
	// row i·K + k (n·K × f): one product with U gives every response, an
	// image's together.
	stacked *mat.Dense
	n, k    int
	Y       []float64
	Loss    solvers.Loss
	Beta    float64
	p       []float64 // U (f×m, row-major), α
	// Buffers of Objective, which runs over blocks of cnnBlock images: the
	// block's responses and their coefficients in the gradient
	// (cnnBlock·K × m), pooled responses and winners (cnnBlock × m), and
	// the outputs (n).
	resp, coef []float64
	pooled     []float64
	arg        []int
	out        []float64
}

// step is 1 for v > 0 and 0 otherwise (±0 included), without a branch:
// ReLU slopes of responses whose signs the branch predictor cannot guess.
// A non-NaN float's bits as an int64 are positive exactly when it is, and
// x > 0 exactly when −x and ^x both have the sign bit. (A NaN with a clear
// sign bit gives 1: its gradient is NaN either way.)
func step(v float64) float64 {
	x := int64(math.Float64bits(v))
	return float64(uint64(-x&^x) >> 63)
}

// cnnBlock is the images per block of CNNModel.Objective: a block's
// responses (cnnBlock·K·m numbers) stay in cache between the product that
// makes them and the one that takes the gradient.
const cnnBlock = 32

// NewCNNModel returns a CNN of m filters with Gaussian weights (seed) on the
// images x (rows, CHW).
func NewCNNModel(x *mat.Dense, y []float64, s cnn.Shape, cv cnn.Conv, pool cnn.Pooling, loss solvers.Loss, beta float64, m int, seed uint64) (*CNNModel, error) {
	if err := checkModelData(x, y, loss, beta, m); err != nil {
		return nil, err
	}
	pt, err := cnn.Patches(x, s, cv)
	if err != nil {
		return nil, err
	}
	n, f := pt[0].Dims()
	k := len(pt)
	c := &CNNModel{stacked: mat.NewDense(k*n, f, nil), n: n, k: k, Y: y, Loss: loss, Beta: beta, p: make([]float64, f*m+m),
		resp: make([]float64, cnnBlock*k*m), coef: make([]float64, cnnBlock*k*m), pooled: make([]float64, (cnnBlock+1)*m),
		arg: make([]int, cnnBlock*m), out: make([]float64, n)}
	c.stack(pt)
	rng := rand.New(rand.NewPCG(seed, 0xc4))
	gaussian(rng, c.p, 1/math.Sqrt(float64(f)))
	c.net = &cnn.Network{Shape: s, Conv: cv, Pool: pool, U: mat.NewDense(f, m, c.p[:f*m]), Alpha: c.p[f*m:]}
	return c, nil
}

// stack copies the patches pt (K matrices n×f) into c.stacked.
func (c *CNNModel) stack(pt []*mat.Dense) {
	for k, xk := range pt {
		for i := 0; i < c.n; i++ {
			copy(c.stacked.RawRowView(i*c.k+k), xk.RawRowView(i))
		}
	}
}

// Params returns U and α as one vector.
func (c *CNNModel) Params() []float64 { return c.p }

// SetImages replaces the model's training images by x (as many, of the same
// shape), keeping its labels and weights.
func (c *CNNModel) SetImages(x *mat.Dense) error {
	if r, _ := x.Dims(); r != c.n {
		return fmt.Errorf("backprop: %d images for a CNN model of %d", r, c.n)
	}
	pt, err := cnn.Patches(x, c.net.Shape, c.net.Conv)
	if err != nil {
		return err
	}
	c.stack(pt)
	return nil
}

// Network returns a copy of the current CNN.
func (c *CNNModel) Network() *cnn.Network {
	return &cnn.Network{Shape: c.net.Shape, Conv: c.net.Conv, Pool: c.net.Pool, U: mat.DenseCopyOf(c.net.U), Alpha: append([]float64(nil), c.net.Alpha...)}
}

// Objective is CNNModel's objective and gradient (see CNNModel). Each
// image's output and loss slope need only its own responses, so it runs
// block by block: the responses, their pooling, the outputs and slopes, the
// coefficients of the patches in ∂/∂U, and their product with the patches.
func (c *CNNModel) Objective(grad []float64) float64 {
	u, alpha := c.net.U, c.net.Alpha
	f, m := u.Dims()
	n, nk := c.n, c.k
	avg := c.net.Pool == cnn.AvgPool
	scale := slopeScale(c.Loss, n)
	clear(grad)
	gu, ga := grad[:f*m], grad[f*m:]
	ur, st := u.RawMatrix(), c.stacked.RawMatrix()
	for i0 := 0; i0 < n; i0 += cnnBlock {
		b := min(cnnBlock, n-i0)
		rows := blas64.General{Rows: b * nk, Cols: f, Stride: st.Stride, Data: st.Data[i0*nk*st.Stride:]}
		resp := blas64.General{Rows: b * nk, Cols: m, Stride: m, Data: c.resp[:b*nk*m]}
		coef := blas64.General{Rows: b * nk, Cols: m, Stride: m, Data: c.coef[:b*nk*m]}
		blas64.Gemm(blas.NoTrans, blas.NoTrans, 1, rows, ur, 0, resp)
		for i := 0; i < b; i++ {
			row, arg := c.pooled[i*m:(i+1)*m], c.arg[i*m:(i+1)*m]
			img := resp.Data[i*nk*m : (i+1)*nk*m] // the image's K responses, m each
			if avg {
				clear(row)
				for k := 0; k < nk; k++ {
					for j, v := range img[k*m : (k+1)*m] {
						row[j] += max(0, v)
					}
				}
				floats.Scale(1/float64(nk), row)
			} else {
				copy(row, img[:m])
				clear(arg)
				for k := 1; k < nk; k++ {
					for j, v := range img[k*m : (k+1)*m] {
						if v > row[j] {
							row[j], arg[j] = v, k
						}
					}
				}
				for j, v := range row {
					row[j] = max(0, v)
				}
			}
			out := floats.Dot(row, alpha)
			c.out[i0+i] = out
			slope := scale * trainSlope(c.Loss, out, c.Y[i0+i])
			floats.AddScaled(ga, slope, row)
			// ∂/∂u_j = Σ_i slope_i α_j ∂pool_ij/∂u_j: the coefficients
			// of the image's patches, slope·α_j/K on every patch where
			// filter j is active (average pooling), slope·α_j on its
			// winning patch if active (max pooling).
			cf := coef.Data[i*nk*m : (i+1)*nk*m]
			if avg {
				w := c.pooled[cnnBlock*m : cnnBlock*m+m] // scratch row
				for j := range w {
					w[j] = slope * alpha[j] / float64(nk)
				}
				for k := 0; k < nk; k++ {
					for j, v := range img[k*m : (k+1)*m] {
						cf[k*m+j] = w[j] * step(v)
					}
				}
			} else {
				clear(cf)
				for j, v := range row {
					if v > 0 {
						cf[arg[j]*m+j] = slope * alpha[j]
					}
				}
			}
		}
		blas64.Gemm(blas.Trans, blas.NoTrans, 1, rows, coef, 1, blas64.General{Rows: f, Cols: m, Stride: m, Data: gu})
	}
	obj := c.Loss.Value(c.out, c.Y) + c.Beta/2*(floats.Dot(c.p, c.p))
	floats.AddScaled(ga, c.Beta, alpha)
	floats.AddScaled(gu, c.Beta, c.p[:f*m])
	return obj
}

// TwoHiddenModel is K two-hidden-layer sub-networks (twohidden.Network)
// trained by projected back-prop: parameters W1 (d×m1 each), w2, w3;
// objective ℓ(f(X), y) + (β/2) Σ_k (‖w_2k‖² + w_3k²) with every
// first-layer neuron projected onto the unit ball after each step.
type TwoHiddenModel struct {
	X        *mat.Dense
	Y        []float64
	Loss     solvers.Loss
	Beta     float64
	k, d, m1 int
	p        []float64 // per sub-network: W1 (d×m1 row-major), w2 (m1), w3
}

// NewTwoHiddenModel returns k sub-networks of m1 first-layer neurons with
// Gaussian weights (seed), first-layer neurons in the unit ball. X holds the
// bias column if the first layer is to have biases.
func NewTwoHiddenModel(x *mat.Dense, y []float64, loss solvers.Loss, beta float64, k, m1 int, seed uint64) (*TwoHiddenModel, error) {
	if err := checkModelData(x, y, loss, beta, k); err != nil {
		return nil, err
	}
	if m1 < 1 {
		return nil, fmt.Errorf("backprop: %d first-layer neurons per sub-network, need ≥ 1", m1)
	}
	_, d := x.Dims()
	t := &TwoHiddenModel{X: x, Y: y, Loss: loss, Beta: beta, k: k, d: d, m1: m1, p: make([]float64, k*(d*m1+m1+1))}
	rng := rand.New(rand.NewPCG(seed, 0x2b))
	gaussian(rng, t.p, 1/math.Sqrt(float64(m1)))
	t.project()
	return t, nil
}

func (t *TwoHiddenModel) size() int { return t.d*t.m1 + t.m1 + 1 }

// Params returns the sub-networks' weights as one vector.
func (t *TwoHiddenModel) Params() []float64 { return t.p }

func (t *TwoHiddenModel) project() {
	for s := 0; s < t.k; s++ {
		w1 := mat.NewDense(t.d, t.m1, t.p[s*t.size():s*t.size()+t.d*t.m1])
		col := make([]float64, t.d)
		for j := 0; j < t.m1; j++ {
			mat.Col(col, j, w1)
			if nc := floats.Norm(col, 2); nc > 1 {
				floats.Scale(1/nc, col)
				w1.SetCol(j, col)
			}
		}
	}
}

// Network returns a copy of the current network.
func (t *TwoHiddenModel) Network() *twohidden.Network {
	net := &twohidden.Network{}
	for s := 0; s < t.k; s++ {
		q := t.p[s*t.size() : (s+1)*t.size()]
		net.Subs = append(net.Subs, twohidden.SubNetwork{W1: mat.NewDense(t.d, t.m1, append([]float64(nil), q[:t.d*t.m1]...)),
			W2: append([]float64(nil), q[t.d*t.m1:t.d*t.m1+t.m1]...), W3: q[len(q)-1]})
	}
	return net
}

// Objective is TwoHiddenModel's objective and gradient (see
// TwoHiddenModel).
func (t *TwoHiddenModel) Objective(grad []float64) float64 {
	n, _ := t.X.Dims()
	type fwd struct {
		h1 mat.Dense
		z  []float64
	}
	fs := make([]fwd, t.k)
	out := make([]float64, n)
	var reg float64
	for s := 0; s < t.k; s++ {
		q := t.p[s*t.size() : (s+1)*t.size()]
		w2, w3 := q[t.d*t.m1:t.d*t.m1+t.m1], q[len(q)-1]
		fs[s].h1.Mul(t.X, mat.NewDense(t.d, t.m1, q[:t.d*t.m1]))
		fs[s].z = make([]float64, n)
		for i := 0; i < n; i++ {
			for j, w := range w2 {
				if v := fs[s].h1.At(i, j); v > 0 {
					fs[s].z[i] += w * v
				}
			}
			if fs[s].z[i] > 0 {
				out[i] += w3 * fs[s].z[i]
			}
		}
		reg += floats.Dot(w2, w2) + w3*w3
	}
	slopes := make([]float64, n)
	obj := lossSlopes(t.Loss, slopes, out, t.Y) + t.Beta/2*reg
	clear(grad)
	d2 := make([]float64, n)
	for s := 0; s < t.k; s++ {
		q := t.p[s*t.size() : (s+1)*t.size()]
		g := grad[s*t.size() : (s+1)*t.size()]
		w2, w3 := q[t.d*t.m1:t.d*t.m1+t.m1], q[len(q)-1]
		gw2 := g[t.d*t.m1 : t.d*t.m1+t.m1]
		for i := 0; i < n; i++ {
			d2[i] = 0
			if fs[s].z[i] > 0 {
				g[len(g)-1] += slopes[i] * fs[s].z[i]
				d2[i] = w3 * slopes[i]
			}
		}
		g[len(g)-1] += t.Beta * w3
		d1 := mat.NewDense(n, t.m1, nil)
		for i := 0; i < n; i++ {
			if d2[i] == 0 {
				continue
			}
			for j := range w2 {
				if v := fs[s].h1.At(i, j); v > 0 {
					gw2[j] += d2[i] * v
					d1.Set(i, j, d2[i]*w2[j])
				}
			}
		}
		floats.AddScaled(gw2, t.Beta, w2)
		gw1 := mat.NewDense(t.d, t.m1, g[:t.d*t.m1])
		gw1.Mul(t.X.T(), d1)
	}
	return obj
}
