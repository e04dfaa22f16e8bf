package backprop

import (
	"context"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/convexnn/convexnn/solvers"
	"github.com/convexnn/convexnn/solvers/internal/testprog"
	"gonum.org/v1/gonum/mat"
)

// bpLabels maps ±1 labels to the loss's convention.
func bpLabels(y []float64, l solvers.Loss) []float64 {
	out := make([]float64, len(y))
	for k, v := range y {
		out[k] = v
		if l == solvers.BCELoss {
			out[k] = (v + 1) / 2
		}
	}
	return out
}

// bpCircle returns n points uniform in [−1, 1]², labeled +1 outside the
// circle of radius 0.6 and −1 inside, none within 0.05 of the circle.
func bpCircle(n int, seed uint64) (*mat.Dense, []float64) {
	rng := rand.New(rand.NewPCG(seed, 31))
	x := mat.NewDense(n, 2, nil)
	y := make([]float64, n)
	for k := 0; k < n; {
		a, b := 2*rng.Float64()-1, 2*rng.Float64()-1
		r := math.Hypot(a, b)
		if math.Abs(r-0.6) < 0.05 {
			continue
		}
		x.Set(k, 0, a)
		x.Set(k, 1, b)
		y[k] = math.Copysign(1, r-0.6)
		k++
	}
	return x, y
}

// bpFeatures returns the robust/non-robust feature problem of Tsipras et
// al.: x₁ = 0.5y + N(0, 0.5²) predicts y weakly but survives an ε = 0.15
// attack, x₂ = 0.1y + N(0, 0.02²) separates the classes but an ε = 0.15
// attack flips it.
func bpFeatures(n int, seed uint64) (*mat.Dense, []float64) {
	rng := rand.New(rand.NewPCG(seed, 41))
	x := mat.NewDense(n, 2, nil)
	y := make([]float64, n)
	for k := range y {
		y[k] = float64(2*(k%2) - 1)
		x.Set(k, 0, 0.5*y[k]+0.5*rng.NormFloat64())
		x.Set(k, 1, 0.1*y[k]+0.02*rng.NormFloat64())
	}
	return x, y
}

func bpNew(t *testing.T, x *mat.Dense, y []float64, o Options, st *State) *Trainer {
	t.Helper()
	b, err := New(x, y, o, st)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// bpObjective evaluates the clean objective at b's current weights.
func bpObjective(b *Trainer) float64 {
	b.net.forward(b.x, b.z, b.yhat)
	return b.Options.Loss.Value(b.yhat, b.y) + b.regularizer()
}

// TestBackpropGradient checks the full-batch gradient of eq.
// (nonconvex_general) against central differences, at random weights with
// no ReLU (or hinge) kink within 1e-4 of any point, and that minibatch
// gradients average (weighted by batch size) to the full one.
func TestBackpropGradient(t *testing.T) {
	const n, d0, m = 15, 3, 6
	for _, l := range []solvers.Loss{solvers.SquaredLoss, solvers.HingeLoss, solvers.LogisticLoss, solvers.BCELoss} {
		for _, bias := range []bool{false, true} {
			var b *Trainer
			for seed := uint64(0); ; seed++ {
				rng := rand.New(rand.NewPCG(seed, uint64(l)))
				net := attackNet(rng, d0, m, bias)
				x, y := attackData(rng, net, n, d0, -1, 1, l)
				b = bpNew(t, x, y, Options{Width: m, Beta: 0.03, Loss: l, Bias: bias, Seed: seed}, nil)
				for q := range b.State.U {
					b.State.U[q] = rng.NormFloat64()
				}
				for j := range b.State.Alpha {
					b.State.Alpha[j] = rng.NormFloat64()
				}
				b.net.forward(b.x, b.z, b.yhat)
				near := false
				for _, z := range b.z {
					near = near || math.Abs(z) < 1e-4
				}
				for k, f := range b.yhat {
					near = near || (l == solvers.HingeLoss && math.Abs(1-b.y[k]*f) < 1e-4)
				}
				if !near {
					break
				}
			}
			b.gradient(b.x, b.y)
			grad := append(append([]float64(nil), b.gu...), b.galph...)
			params := [][]float64{b.State.U, b.State.Alpha}
			const h = 1e-6
			var worst float64
			q := 0
			for _, p := range params {
				for i := range p {
					v := p[i]
					p[i] = v + h
					fp := bpObjective(b)
					p[i] = v - h
					fm := bpObjective(b)
					p[i] = v
					fd := (fp - fm) / (2 * h)
					e := math.Abs(grad[q]-fd) / (1 + math.Abs(fd))
					worst = math.Max(worst, e)
					if e > 1e-7 {
						t.Errorf("%v bias=%v: ∂/∂θ_%d = %v, finite difference %v", l, bias, q, grad[q], fd)
					}
					q++
				}
			}
			// Minibatch estimates: Σ_B (|B|/n) g_B = g.
			sum := make([]float64, len(grad))
			for lo := 0; lo < n; lo += 4 {
				rows := min(4, n-lo)
				in := b.x
				in.Rows, in.Data = rows, b.x.Data[lo*b.x.Stride:]
				b.net.forward(in, b.z, b.yhat)
				b.gradient(in, b.y[lo:lo+rows])
				for q, g := range append(append([]float64(nil), b.gu...), b.galph...) {
					sum[q] += float64(rows) / n * g
				}
			}
			if e := testprog.RelDiff(sum, grad); e > 1e-12 {
				t.Errorf("%v bias=%v: minibatch gradients average to %v relative off the full gradient", l, bias, e)
			}
			t.Logf("%v bias=%v: largest relative gradient error %.1e", l, bias, worst)
		}
	}
}

// TestBackpropFitsSeparable trains GD-std on a separable 2-D problem (a
// circle, which needs the biases). Back-prop is not global: from some
// initializations (Seed 3 here, with Adam and the hinge or logistic loss)
// every bias turns negative, the ReLUs die and the network predicts one
// class (72.5%); seeds 1 and 2 are not such.
func TestBackpropFitsSeparable(t *testing.T) {
	x, y := bpCircle(200, 1)
	for _, c := range []struct {
		loss  solvers.Loss
		opt   Optimizer
		batch int
		lr    float64
		seed  uint64
	}{{solvers.HingeLoss, "adam", 0, 0.03, 1}, {solvers.HingeLoss, "adam", 0, 0.03, 2}, {solvers.LogisticLoss, "adam", 32, 0.01, 1}, {solvers.LogisticLoss, "adam", 32, 0.01, 2},
		{solvers.BCELoss, "sgd", 0, 0.5, 1}, {solvers.BCELoss, "sgd", 0, 0.5, 2}, {solvers.SquaredLoss, "adam", 50, 0.01, 1}, {solvers.SquaredLoss, "adam", 50, 0.01, 2}} {
		o := Options{Width: 24, Beta: 1e-4, Loss: c.loss, Optimizer: c.opt, LearningRate: c.lr, Epochs: 400, BatchSize: c.batch, Seed: c.seed, Bias: true}
		b, hist, err := Train(context.Background(), x, bpLabels(y, c.loss), o, nil)
		if err != nil {
			t.Fatal(err)
		}
		last := hist[len(hist)-1]
		t.Logf("%v %s batch %d seed %d: objective %.4g → %.4g, training accuracy %.3f after %d epochs (%.2g s)", c.loss, c.opt, c.batch, c.seed, hist[0].Objective, last.Objective, last.Accuracy, last.Epoch, sumSeconds(hist))
		if last.Accuracy < 0.95 || last.Objective >= hist[0].Objective {
			t.Errorf("%v %s: training accuracy %.3f, objective %v → %v", c.loss, c.opt, last.Accuracy, hist[0].Objective, last.Objective)
		}
		pred, err := b.Network().Predict(x)
		if err != nil {
			t.Fatal(err)
		}
		if acc, _ := solvers.Accuracy(pred, y); acc != last.Accuracy {
			t.Errorf("%v: Network().Predict accuracy %v, step reported %v", c.loss, acc, last.Accuracy)
		}
	}
}

func sumSeconds(h []Step) float64 {
	var s float64
	for _, st := range h {
		s += st.Seconds
	}
	return s
}

// TestBackpropAdversarial trains GD-std, GD-FGSM and GD-PGD on the
// robust/non-robust feature problem: the adversarially trained networks
// must be far more accurate under PGD, on the training data and on fresh
// test data, and GD-PGD's robust objective must decrease.
func TestBackpropAdversarial(t *testing.T) {
	x, y := bpFeatures(300, 1)
	xt, yt := bpFeatures(1000, 2)
	// Training uses a 10-step PGD (γ_p = ε/5), evaluation the paper's
	// T = 40, γ_p = ε/30.
	atk := AttackOptions{Eps: 0.15}
	train := AttackOptions{Eps: 0.15, Steps: 10, StepSize: 0.03}
	pgdAcc := map[string]float64{}
	for _, adv := range []Adversary{NoAdversary, FGSMAdversary, PGDAdversary} {
		o := Options{Width: 16, Beta: 1e-3, Loss: solvers.LogisticLoss, LearningRate: 0.01, Epochs: 150, Seed: 5, Adversary: adv, Attack: train, Bias: true}
		b, hist, err := Train(context.Background(), x, y, o, nil)
		if err != nil {
			t.Fatal(err)
		}
		net := b.Network()
		ao := atk
		ao.Loss = solvers.LogisticLoss
		clean, err := RobustAccuracy(net, xt, yt, NoAdversary, ao)
		if err != nil {
			t.Fatal(err)
		}
		trainPGD, _ := RobustAccuracy(net, x, y, "pgd", ao)
		testFGSM, _ := RobustAccuracy(net, xt, yt, "fgsm", ao)
		testPGD, _ := RobustAccuracy(net, xt, yt, "pgd", ao)
		first, last := hist[0], hist[len(hist)-1]
		name := "GD-std"
		if adv != "" {
			name = "GD-" + strings.ToUpper(string(adv))
		}
		pgdAcc[name] = testPGD
		t.Logf("%s: train clean %.3f PGD %.3f; test clean %.3f FGSM %.3f PGD %.3f; objective %.4f, robust objective %.4f → %.4f; %.2g s",
			name, last.Accuracy, trainPGD, clean, testFGSM, testPGD, last.Objective, first.RobustObjective, last.RobustObjective, sumSeconds(hist))
		if adv != "" && !(last.RobustObjective < first.RobustObjective) {
			t.Errorf("%s: robust objective %v → %v did not decrease", name, first.RobustObjective, last.RobustObjective)
		}
		if adv == "pgd" {
			to := train
			to.Loss = solvers.LogisticLoss
			if want, _ := RobustAccuracy(net, x, y, "pgd", to); last.RobustAccuracy != want {
				t.Errorf("%s: step's robust accuracy %v, RobustAccuracy %v", name, last.RobustAccuracy, want)
			}
		}
	}
	if pgdAcc["GD-PGD"] < pgdAcc["GD-std"]+0.2 || pgdAcc["GD-FGSM"] < pgdAcc["GD-std"]+0.2 {
		t.Errorf("PGD test accuracy: %v, want GD-PGD and GD-FGSM ≥ GD-std + 0.2", pgdAcc)
	}
}

// TestBackpropReportsNetworkQuantities checks Objective against
// Program.NonconvexObjective and RobustObjective against PGD.
func TestBackpropReportsNetworkQuantities(t *testing.T) {
	x, y := bpFeatures(80, 3)
	for _, bias := range []bool{false, true} {
		for _, batch := range []int{0, 16} {
			atk := AttackOptions{Eps: 0.1, Steps: 10, Norm: "2"}
			o := Options{Width: 7, Beta: 0.01, Loss: solvers.HingeLoss, LearningRate: 0.01, BatchSize: batch, Seed: 9, Adversary: "pgd", Attack: atk, Bias: bias}
			b := bpNew(t, x, y, o, nil)
			var s Step
			for k := 0; k < 5; k++ {
				s = b.Step()
			}
			net := b.Network()
			aug := func(a *mat.Dense) *mat.Dense {
				if !bias {
					return a
				}
				r, c := a.Dims()
				out := mat.NewDense(r, c+1, nil)
				out.Slice(0, r, 0, c).(*mat.Dense).Copy(a)
				for k := 0; k < r; k++ {
					out.Set(k, c, 1)
				}
				return out
			}
			p := &solvers.Program{X: aug(x), Y: y, Loss: solvers.HingeLoss, Beta: 0.01, Bias: bias}
			want, err := p.NonconvexObjective(net)
			if err != nil {
				t.Fatal(err)
			}
			atk.Loss = solvers.HingeLoss
			adv, err := PGD(net, x, y, atk)
			if err != nil {
				t.Fatal(err)
			}
			p.X = aug(adv)
			wantR, err := p.NonconvexObjective(net)
			if err != nil {
				t.Fatal(err)
			}
			racc, _ := RobustAccuracy(net, x, y, "pgd", atk)
			if math.Abs(s.Objective-want) > 1e-12*want || math.Abs(s.RobustObjective-wantR) > 1e-12*wantR || s.RobustAccuracy != racc || s.Epoch != 5 {
				t.Errorf("bias=%v batch %d: step %+v; NonconvexObjective %v, robust %v, PGD accuracy %v", bias, batch, s, want, wantR, racc)
			}
		}
	}
}

// TestBackpropExactResume checks that 4 epochs, a JSON round trip of the
// state and 3 more equal 7 uninterrupted epochs bit for bit.
func TestBackpropExactResume(t *testing.T) {
	x, y := bpFeatures(90, 4)
	for _, o := range []Options{
		{Width: 8, Beta: 1e-3, Loss: solvers.LogisticLoss, LearningRate: 0.01, BatchSize: 20, Seed: 2, Adversary: "pgd", Attack: AttackOptions{Eps: 0.05, Steps: 5}, Bias: true},
		{Width: 8, Beta: 1e-3, Loss: solvers.HingeLoss, LearningRate: 0.01, Seed: 2, Adversary: "fgsm", Attack: AttackOptions{Eps: 0.05}, Bias: true},
		{Width: 5, Beta: 1e-2, Loss: solvers.SquaredLoss, Optimizer: "sgd", LearningRate: 1e-3, BatchSize: 7, Seed: 8},
	} {
		whole := bpNew(t, x, y, o, nil)
		var hw Step
		for k := 0; k < 7; k++ {
			hw = whole.Step()
		}
		part := bpNew(t, x, y, o, nil)
		for k := 0; k < 4; k++ {
			part.Step()
		}
		st := testprog.Saved(t, part.State)
		rest := bpNew(t, x, y, o, &st)
		var hr Step
		for k := 0; k < 3; k++ {
			hr = rest.Step()
		}
		for _, f := range []struct {
			name string
			a, b []float64
		}{{"U", whole.State.U, rest.State.U}, {"Alpha", whole.State.Alpha, rest.State.Alpha}, {"M", whole.State.M, rest.State.M}, {"V", whole.State.V, rest.State.V}} {
			if len(f.a) != len(f.b) {
				t.Fatalf("%s: %d entries resumed, %d uninterrupted", f.name, len(f.b), len(f.a))
			}
			for q := range f.a {
				if math.Float64bits(f.a[q]) != math.Float64bits(f.b[q]) {
					t.Fatalf("%+v: resumed %s[%d] = %v, uninterrupted %v", o, f.name, q, f.b[q], f.a[q])
				}
			}
		}
		hw.Seconds, hw.EvalSeconds, hr.Seconds, hr.EvalSeconds = 0, 0, 0, 0
		if hw != hr || rest.State.Epoch != 7 || rest.State.AdamStep != whole.State.AdamStep {
			t.Fatalf("resumed step %+v, uninterrupted %+v", hr, hw)
		}
	}
}

func TestBackpropBadInput(t *testing.T) {
	x, y := bpFeatures(10, 1)
	ok := Options{Width: 3, Loss: solvers.HingeLoss}
	with := func(f func(*Options)) Options { o := ok; f(&o); return o }
	nanX := mat.DenseCopyOf(x)
	nanX.Set(3, 0, math.Inf(-1))
	good := func() *State {
		return &State{U: make([]float64, 6), Alpha: make([]float64, 3), M: make([]float64, 9), V: make([]float64, 9)}
	}
	short, negV, nanU, negE := good(), good(), good(), good()
	short.Alpha = short.Alpha[:2]
	negV.V[4] = -1
	nanU.U[2] = math.NaN()
	negE.Epoch = -2
	cases := []struct {
		x    *mat.Dense
		y    []float64
		o    Options
		st   *State
		want string
	}{
		{nil, y, ok, nil, "no data"},
		{x, y[:9], ok, nil, "10 rows but y has 9 labels"},
		{nanX, y, ok, nil, "x[3,0] is -Inf"},
		{x, bpLabels(y, solvers.BCELoss), ok, nil, "needs labels −1 or +1"},
		{x, y, with(func(o *Options) { o.Loss = solvers.BCELoss }), nil, "needs labels 0 or 1"},
		{x, y, with(func(o *Options) { o.Loss = solvers.Loss(7) }), nil, "unknown loss"},
		{x, y, with(func(o *Options) { o.Width = 0 }), nil, "Width = 0"},
		{x, y, with(func(o *Options) { o.Beta = -1 }), nil, "β = -1"},
		{x, y, with(func(o *Options) { o.Beta = math.NaN() }), nil, "β = NaN"},
		{x, y, with(func(o *Options) { o.Optimizer = "lbfgs" }), nil, `unknown optimizer "lbfgs"`},
		{x, y, with(func(o *Options) { o.LearningRate = -0.1 }), nil, "learning rate -0.1"},
		{x, y, with(func(o *Options) { o.Epochs = -1 }), nil, "Epochs = -1"},
		{x, y, with(func(o *Options) { o.BatchSize = -1 }), nil, "BatchSize = -1"},
		{x, y, with(func(o *Options) { o.Adversary = "cw" }), nil, `unknown adversary "cw"`},
		{x, y, with(func(o *Options) { o.Adversary, o.Attack.Eps = "pgd", -1 }), nil, "radius ε = -1"},
		{x, y, with(func(o *Options) { o.Adversary, o.Attack.Norm = "fgsm", "1" }), nil, `unknown norm "1"`},
		{x, y, with(func(o *Options) { o.Adversary, o.Attack.Clip = "pgd", &[2]float64{0, 1} }), nil, "outside the clip box"},
		{x, y, ok, short, "2 entries in Alpha"},
		{x, y, ok, negV, "V[4] = -1"},
		{x, y, ok, nanU, "U[2] = NaN"},
		{x, y, ok, negE, "epoch -2"},
		{x, y, with(func(o *Options) { o.Bias = true }), good(), "6 entries in U"},
	}
	for _, c := range cases {
		_, err := New(c.x, c.y, c.o, c.st)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: error %v", c.want, err)
		}
	}
	if _, err := New(x, y, ok, good()); err != nil {
		t.Errorf("a good state was rejected: %v", err)
	}
	noMoments := good()
	noMoments.M, noMoments.V = nil, nil
	if _, err := New(x, y, with(func(o *Options) { o.Optimizer = "sgd" }), noMoments); err != nil {
		t.Errorf("SGD needs no moments: %v", err)
	}
	if _, _, err := Train(context.Background(), x, y, with(func(o *Options) { o.Width = -1 }), nil); err == nil {
		t.Error("Train accepted Width = -1")
	}
}

func TestTrainBackpropStops(t *testing.T) {
	x, y := bpCircle(40, 2)
	o := Options{Width: 4, Loss: solvers.LogisticLoss, Epochs: 20, Bias: true}
	calls := 0
	b, hist, err := Train(context.Background(), x, y, o, func(s Step) bool { calls++; return s.Epoch < 6 })
	if err != nil || len(hist) != 6 || calls != 6 || b.State.Epoch != 6 {
		t.Fatalf("early stop: %d steps, %d calls, err %v", len(hist), calls, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	b, hist, err = Train(ctx, x, y, o, func(s Step) bool {
		if s.Epoch == 3 {
			cancel()
		}
		return true
	})
	if err != context.Canceled || len(hist) != 3 || b == nil || b.State.Epoch != 3 {
		t.Fatalf("canceled run: %d steps, err %v", len(hist), err)
	}
	if _, hist, err = Train(context.Background(), x, y, o, nil); err != nil || len(hist) != 20 {
		t.Fatalf("full run: %d steps, err %v", len(hist), err)
	}
	// Without bias the ReLUs are homogeneous and cannot all die on data
	// around the origin, so a huge step overflows the output.
	huge := Options{Width: 4, Loss: solvers.SquaredLoss, Optimizer: "sgd", LearningRate: 1e200, Epochs: 50}
	_, hist, err = Train(context.Background(), x, y, huge, nil)
	if err == nil || !strings.Contains(err.Error(), "diverged") {
		t.Fatalf("divergent run: %d steps, err %v", len(hist), err)
	}
}

// TestBackpropStepAllocatesNothing runs epochs on an instance small enough
// that gonum's products stay serial.
func TestBackpropStepAllocatesNothing(t *testing.T) {
	x, y := bpFeatures(60, 5)
	for _, o := range []Options{
		{Width: 6, Loss: solvers.LogisticLoss, BatchSize: 16, Adversary: "pgd", Attack: AttackOptions{Eps: 0.05, Steps: 3, KeepBest: true}, Bias: true},
		{Width: 6, Loss: solvers.HingeLoss, Adversary: "fgsm", Attack: AttackOptions{Eps: 0.05, Norm: "2"}},
		{Width: 6, Loss: solvers.SquaredLoss, Optimizer: "sgd", LearningRate: 1e-3, BatchSize: 7},
	} {
		b := bpNew(t, x, y, o, nil)
		if n := testing.AllocsPerRun(10, func() { b.Step() }); n != 0 {
			t.Errorf("%+v: Step allocates %v times", o, n)
		}
	}
}

// TestBackpropStridedX trains on a submatrix view and on its copy.
func TestBackpropStridedX(t *testing.T) {
	x, y := bpFeatures(50, 6)
	wide := mat.NewDense(50, 4, nil)
	wide.Slice(0, 50, 1, 3).(*mat.Dense).Copy(x)
	view := wide.Slice(0, 50, 1, 3).(*mat.Dense)
	for _, batch := range []int{0, 8} {
		o := Options{Width: 5, Loss: solvers.LogisticLoss, BatchSize: batch, Adversary: "pgd", Attack: AttackOptions{Eps: 0.05, Steps: 3}, Bias: true}
		a, b := bpNew(t, view, y, o, nil), bpNew(t, x, y, o, nil)
		for k := 0; k < 3; k++ {
			sa, sb := a.Step(), b.Step()
			sa.Seconds, sa.EvalSeconds, sb.Seconds, sb.EvalSeconds = 0, 0, 0, 0
			if sa != sb {
				t.Fatalf("batch %d: strided view %+v, copy %+v", batch, sa, sb)
			}
		}
		if testprog.RelDiff(a.State.U, b.State.U) != 0 || testprog.RelDiff(a.State.Alpha, b.State.Alpha) != 0 {
			t.Fatalf("batch %d: weights differ", batch)
		}
	}
}
