package backprop_test

import (
	"context"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/convexnn/convexnn/solvers"
	"github.com/convexnn/convexnn/solvers/backprop"
	"github.com/convexnn/convexnn/solvers/batchnorm"
	"github.com/convexnn/convexnn/solvers/cnn"
	"github.com/convexnn/convexnn/solvers/general"
	"github.com/convexnn/convexnn/solvers/ipm"
	"github.com/convexnn/convexnn/solvers/twohidden"
	"gonum.org/v1/gonum/mat"
)

func points(rng *rand.Rand, n, d int, loss solvers.Loss) (*mat.Dense, []float64) {
	x := mat.NewDense(n, d, nil)
	y := make([]float64, n)
	for k := 0; k < n; k++ {
		for l := 0; l < d; l++ {
			x.Set(k, l, rng.NormFloat64())
		}
		f := x.At(k, 0)*x.At(k, 1) + 0.2*rng.NormFloat64()
		if loss == solvers.SquaredLoss {
			y[k] = f
		} else {
			y[k] = math.Copysign(1, f)
		}
	}
	return x, y
}

// checkGradient compares the model's gradient with central differences.
func checkGradient(t *testing.T, name string, m backprop.Model) {
	t.Helper()
	p := m.Params()
	g := make([]float64, len(p))
	m.Objective(g)
	tmp := make([]float64, len(p))
	for q := 0; q < len(p); q++ {
		old := p[q]
		h := 1e-6 * math.Max(1, math.Abs(old))
		p[q] = old + h
		fp := m.Objective(tmp)
		p[q] = old - h
		fm := m.Objective(tmp)
		p[q] = old
		num := (fp - fm) / (2 * h)
		if math.Abs(num-g[q]) > 1e-5*math.Max(1, math.Abs(num)) {
			t.Errorf("%s: ∂/∂θ_%d = %.9g, central difference %.9g", name, q, g[q], num)
		}
	}
}

// The gradients of the architectures' back-prop models match central
// differences (smooth losses: no kink of the loss in the way).
func TestArchitectureGradients(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, loss := range []solvers.Loss{solvers.SquaredLoss, solvers.LogisticLoss} {
		x, y := points(rng, 12, 3, loss)
		bn, err := backprop.NewBNModel(x, y, loss, 0.1, 4, 1)
		if err != nil {
			t.Fatal(err)
		}
		checkGradient(t, "BN "+loss.String(), bn)
		th, err := backprop.NewTwoHiddenModel(x, y, loss, 0.1, 3, 2, 1)
		if err != nil {
			t.Fatal(err)
		}
		checkGradient(t, "two-hidden "+loss.String(), th)
		// 70 images: blocks of CNNModel's objective, the last one partial;
		// a quarter of the pixels zero, so that some patches are (their
		// responses 0, their ReLU slope 0).
		img, yi := points(rng, 70, 12, loss)
		for k := 0; k < 70; k++ {
			for l := 0; l < 12; l++ {
				if rng.IntN(4) == 0 {
					img.Set(k, l, 0)
				}
			}
		}
		for _, pool := range []cnn.Pooling{cnn.AvgPool, cnn.MaxPool} {
			c, err := backprop.NewCNNModel(img, yi, cnn.Shape{C: 1, H: 3, W: 4}, cnn.Conv{Size: 2, Stride: 1}, pool, loss, 0.1, 3, 1)
			if err != nil {
				t.Fatal(err)
			}
			checkGradient(t, "CNN "+pool.String()+" "+loss.String(), c)
			got := c.Objective(make([]float64, len(c.Params())))
			want, err := c.Network().Objective(img, yi, loss, 0.1)
			if err != nil {
				t.Fatal(err)
			}
			if math.Abs(got-want) > 1e-12*math.Max(1, math.Abs(want)) {
				t.Errorf("CNN %v %v: model objective %.15g, the network's %.15g", pool, loss, got, want)
			}
		}
	}
}

// minimize runs back-prop from several seeds and returns the smallest
// training objective reached.
func minimize(t *testing.T, newModel func(seed uint64) (backprop.Model, error), objective func(backprop.Model) float64) float64 {
	best := math.Inf(1)
	for seed := uint64(1); seed <= 3; seed++ {
		m, err := newModel(seed)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := backprop.Minimize(context.Background(), m, 0.02, 2000); err != nil {
			t.Fatal(err)
		}
		best = math.Min(best, objective(m))
	}
	return best
}

// With every pattern, the convex programs of batch normalization and of
// average-pooling CNNs are exact: their certified lower bounds are below
// every back-prop run of the same architecture, and their recovered
// networks at least as good as the best. For two-hidden-layer
// sub-networks, the program that holds a trained network's patterns has a
// certified lower bound below that network's objective.
func TestConvexBelowBackprop(t *testing.T) {
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(3, 4))
	for _, loss := range []solvers.Loss{solvers.SquaredLoss, solvers.HingeLoss} {
		// Batch normalization: all patterns of U′.
		x, y := points(rng, 10, 2, loss)
		bp, err := batchnorm.New(x, y, loss, 0.05)
		if err != nil {
			t.Fatal(err)
		}
		if bp.Program.D, err = solvers.ExactPatterns(bp.Program.X, 0); err != nil {
			t.Fatal(err)
		}
		_, b, err := ipm.SolveToGap(ctx, bp.Program, solvers.Perturbation{}, 1e-8, ipm.Options{}, nil)
		if err != nil {
			t.Fatal(err)
		}
		bestBN := minimize(t, func(seed uint64) (backprop.Model, error) { return backprop.NewBNModel(x, y, loss, 0.05, 8, seed) },
			func(m backprop.Model) float64 {
				o, err := m.(*backprop.BNModel).Network().Objective(x, y, loss, 0.05)
				if err != nil {
					t.Fatal(err)
				}
				return o
			})
		t.Logf("BN %v: certified optimum in [%.8f, %.8f] with %d patterns; best back-prop %.8f", loss, b.Lower, b.Upper, len(bp.Program.D), bestBN)
		if b.Lower > bestBN+1e-9 {
			t.Errorf("BN %v: certified lower bound %.10g above a back-prop network's objective %.10g", loss, b.Lower, bestBN)
		}

		// Average-pooling CNN: every sign pattern of the stacked patches.
		shape, conv := cnn.Shape{C: 1, H: 2, W: 3}, cnn.Conv{Size: 2, Stride: 1}
		img, yi := points(rng, 3, 6, loss)
		cp, err := cnn.New(img, shape, conv, cnn.AvgPool, yi, loss, 0.05)
		if err != nil {
			t.Fatal(err)
		}
		n := len(yi)
		stacked := mat.NewDense(n*len(cp.Patches), cp.Filter(), nil)
		for k, xk := range cp.Patches {
			stacked.Slice(k*n, (k+1)*n, 0, cp.Filter()).(*mat.Dense).Copy(xk)
		}
		all, err := solvers.ExactPatterns(stacked, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, pat := range all {
			signs := make([]solvers.Pattern, len(cp.Patches))
			for k := range signs {
				signs[k] = pat[k*n : (k+1)*n]
			}
			if _, err := cp.AddSigns(signs); err != nil {
				t.Fatal(err)
			}
		}
		gp, err := cp.Program()
		if err != nil {
			t.Fatal(err)
		}
		res, err := general.SolveInteriorPoint(ctx, gp, 1e-10)
		if err != nil {
			t.Fatal(err)
		}
		bestCNN := minimize(t, func(seed uint64) (backprop.Model, error) {
			return backprop.NewCNNModel(img, yi, shape, conv, cnn.AvgPool, loss, 0.05, 8, seed)
		}, func(m backprop.Model) float64 {
			o, err := m.(*backprop.CNNModel).Network().Objective(img, yi, loss, 0.05)
			if err != nil {
				t.Fatal(err)
			}
			return o
		})
		t.Logf("CNN %v: certified optimum in [%.8f, %.8f] with %d patterns; best back-prop %.8f", loss, res.Bound.Lower, res.Bound.Upper, len(cp.Signs), bestCNN)
		if res.Bound.Lower > bestCNN+1e-9 {
			t.Errorf("CNN %v: certified lower bound %.10g above a back-prop network's objective %.10g", loss, res.Bound.Lower, bestCNN)
		}

		// Two hidden layers: the trained network's patterns in the program.
		xb := mat.NewDense(10, 3, nil)
		for k := 0; k < 10; k++ {
			xb.SetRow(k, []float64{x.At(k, 0), x.At(k, 1), 1})
		}
		th, err := backprop.NewTwoHiddenModel(xb, y, loss, 0.05, 4, 2, 1)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := backprop.Minimize(ctx, th, 0.02, 3000); err != nil {
			t.Fatal(err)
		}
		net := th.Network()
		nobj, err := net.Objective(xb, y, loss, 0.05)
		if err != nil {
			t.Fatal(err)
		}
		tp, err := twohidden.New(xb, y, 2, loss, 0.05)
		if err != nil {
			t.Fatal(err)
		}
		for i := range net.Subs {
			if _, err := tp.AddTuple(twohidden.TupleOf(xb, &net.Subs[i])); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := tp.SamplePatterns(10, 1); err != nil {
			t.Fatal(err)
		}
		tgp, err := tp.Program()
		if err != nil {
			t.Fatal(err)
		}
		tres, err := general.SolveInteriorPoint(ctx, tgp, 1e-10)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("two-hidden %v: certified optimum in [%.8f, %.8f]; the back-prop network %.8f", loss, tres.Bound.Lower, tres.Bound.Upper, nobj)
		if tres.Bound.Lower > nobj+1e-9 {
			t.Errorf("two-hidden %v: certified lower bound %.10g above the back-prop network's objective %.10g", loss, tres.Bound.Lower, nobj)
		}
	}
}

// With every pattern tuple (m1 = 1 keeps their number small), the
// two-hidden-layer program is exact: its certified lower bound lies below
// every back-prop run of the same architecture.
func TestTwoHiddenExactBelowBackprop(t *testing.T) {
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(5, 6))
	for _, loss := range []solvers.Loss{solvers.SquaredLoss, solvers.HingeLoss} {
		n := 5
		x := mat.NewDense(n, 2, nil)
		y := make([]float64, n)
		for k := 0; k < n; k++ {
			a := rng.NormFloat64()
			x.SetRow(k, []float64{a, 1})
			y[k] = math.Abs(a) - 0.7 + 0.1*rng.NormFloat64()
			if loss == solvers.HingeLoss {
				y[k] = math.Copysign(1, y[k])
			}
		}
		tp, err := twohidden.New(x, y, 1, loss, 0.05)
		if err != nil {
			t.Fatal(err)
		}
		if err := tp.ExactPatterns(0); err != nil {
			t.Fatal(err)
		}
		gp, err := tp.Program()
		if err != nil {
			t.Fatal(err)
		}
		res, err := general.SolveInteriorPoint(ctx, gp, 1e-10)
		if err != nil {
			t.Fatal(err)
		}
		best := minimize(t, func(seed uint64) (backprop.Model, error) {
			return backprop.NewTwoHiddenModel(x, y, loss, 0.05, 6, 1, seed)
		}, func(m backprop.Model) float64 {
			o, err := m.(*backprop.TwoHiddenModel).Network().Objective(x, y, loss, 0.05)
			if err != nil {
				t.Fatal(err)
			}
			return o
		})
		t.Logf("two-hidden %v, every tuple (%d): certified optimum in [%.8f, %.8f]; best back-prop %.8f", loss, len(tp.Tuples), res.Bound.Lower, res.Bound.Upper, best)
		if res.Bound.Lower > best+1e-9 {
			t.Errorf("two-hidden %v: certified lower bound %.10g above a back-prop network's objective %.10g", loss, res.Bound.Lower, best)
		}
	}
	big, err := twohidden.New(mat.NewDense(30, 3, nil), make([]float64, 30), 3, solvers.SquaredLoss, 0.1)
	if err != nil {
		t.Fatal(err)
	}
	for k := 0; k < 30; k++ {
		big.X.SetRow(k, []float64{rng.NormFloat64(), rng.NormFloat64(), 1})
	}
	if err := big.ExactPatterns(0); err == nil || !strings.Contains(err.Error(), "over the limit") {
		t.Errorf("30 points, m1 = 3: %v", err)
	}
}

// GD-PGD for CNNs: at ε = 0 it takes exactly Minimize's steps; at ε > 0 its
// network's mean PGD loss on the training images ends below that of the
// same CNN trained without attacks, for both poolings; bad input is refused.
func TestAdversarialCNN(t *testing.T) {
	rng := rand.New(rand.NewPCG(31, 32))
	shape := cnn.Shape{C: 1, H: 4, W: 4}
	n := 16
	x := mat.NewDense(n, 16, nil)
	y := make([]float64, n)
	for k := 0; k < n; k++ {
		row := x.RawRowView(k)
		for l := range row {
			row[l] = rng.Float64()
		}
		y[k] = math.Copysign(1, row[0]+row[15]-1+0.1*rng.NormFloat64())
	}
	conv := cnn.Conv{Size: 2, Stride: 2, Bias: true}
	for _, pool := range []cnn.Pooling{cnn.AvgPool, cnn.MaxPool} {
		std, _ := backprop.NewCNNModel(x, y, shape, conv, pool, solvers.HingeLoss, 1e-3, 6, 1)
		zero, _ := backprop.NewCNNModel(x, y, shape, conv, pool, solvers.HingeLoss, 1e-3, 6, 1)
		hs, err := backprop.Minimize(context.Background(), std, 0.02, 60)
		if err != nil {
			t.Fatal(err)
		}
		hz, err := backprop.AdversarialCNN(context.Background(), zero, x, 0, 5, 0.02, 60)
		if err != nil {
			t.Fatal(err)
		}
		for i := range hz {
			if hz[i] != hs[i] {
				t.Fatalf("%v: at ε = 0 step %d has objective %v, Minimize %v", pool, i, hz[i], hs[i])
			}
		}
		const eps = 0.05
		adv, _ := backprop.NewCNNModel(x, y, shape, conv, pool, solvers.HingeLoss, 1e-3, 6, 1)
		std, _ = backprop.NewCNNModel(x, y, shape, conv, pool, solvers.HingeLoss, 1e-3, 6, 1)
		if _, err := backprop.Minimize(context.Background(), std, 0.02, 300); err != nil {
			t.Fatal(err)
		}
		ha, err := backprop.AdversarialCNN(context.Background(), adv, x, eps, 5, 0.02, 300)
		if err != nil {
			t.Fatal(err)
		}
		mean := func(net *cnn.Network) float64 {
			var s float64
			for k := 0; k < n; k++ {
				l, err := net.PGD(x.RawRowView(k), y[k], eps, 20, solvers.HingeLoss)
				if err != nil {
					t.Fatal(err)
				}
				s += l / float64(n)
			}
			return s
		}
		ms, ma := mean(std.Network()), mean(adv.Network())
		if !(ma < ms) || !(ha[len(ha)-1] < ha[0]) {
			t.Errorf("%v: mean PGD hinge loss %.4f after GD-PGD, %.4f after standard training; GD-PGD objective %.4f → %.4f", pool, ma, ms, ha[0], ha[len(ha)-1])
		}
		t.Logf("%v: mean PGD hinge loss at ε = %g: GD-PGD %.4f, standard %.4f", pool, eps, ma, ms)
	}
	m, _ := backprop.NewCNNModel(x, y, shape, conv, cnn.AvgPool, solvers.HingeLoss, 1e-3, 6, 1)
	if _, err := backprop.AdversarialCNN(context.Background(), m, x, math.NaN(), 5, 0.02, 10); err == nil || !strings.Contains(err.Error(), "need ε") {
		t.Errorf("ε = NaN: %v", err)
	}
	if err := m.SetImages(mat.NewDense(3, 16, nil)); err == nil || !strings.Contains(err.Error(), "3 images") {
		t.Errorf("SetImages with 3 images: %v", err)
	}
}

// BenchmarkCNNModelObjective times one objective and gradient of a
// back-prop CNN on issue 19's setting: 2000 images at 14×14, 3×3 filters
// with bias, stride 2 (36 patches), 32 filters.
func BenchmarkCNNModelObjective(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 2))
	x, y := points(rng, 2000, 196, solvers.HingeLoss)
	for _, pool := range []cnn.Pooling{cnn.AvgPool, cnn.MaxPool} {
		m, err := backprop.NewCNNModel(x, y, cnn.Shape{C: 1, H: 14, W: 14}, cnn.Conv{Size: 3, Stride: 2, Bias: true}, pool, solvers.HingeLoss, 1e-4, 32, 1)
		if err != nil {
			b.Fatal(err)
		}
		g := make([]float64, len(m.Params()))
		b.Run(pool.String(), func(b *testing.B) {
			for range b.N {
				m.Objective(g)
			}
		})
	}
}
