package cvx

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/convexnn/convexnn/solvers"
	"github.com/convexnn/convexnn/solvers/cnn"
	"gonum.org/v1/gonum/mat"
)

func cnnData(n int, s ImageShape, seed uint64) (*mat.Dense, []float64) {
	rng := rand.New(rand.NewPCG(seed, 5))
	d := s.C * s.H * s.W
	x := mat.NewDense(n, d, nil)
	y := make([]float64, n)
	for k := 0; k < n; k++ {
		row := x.RawRowView(k)
		for l := range row {
			row[l] = rng.Float64()
		}
		y[k] = math.Copysign(1, row[0]+row[d-1]-1)
	}
	return x, y
}

// A Conv problem: the interior-point optimum with its certificate and the
// recovered CNN; an ADMM run that resumes exactly, certifies within the
// optimum's bounds and returns its CNN.
func TestConvProblem(t *testing.T) {
	t.Setenv("CONVEXNN_STATE_DIR", t.TempDir())
	s := ImageShape{C: 1, H: 4, W: 4}
	x, y := cnnData(16, s, 1)
	for _, pool := range []string{"avg", "max"} {
		prob := func() *Problem {
			p := Classify(x, y).Hinge().Beta(1e-2).Conv(s, 2, 2).SamplePatterns(5, 1)
			if pool == "max" {
				p.MaxPool()
			}
			return p
		}
		sol, err := Solve(prob(), IPM{})
		if err != nil {
			t.Fatal(err)
		}
		if sol.CNN == nil || sol.Gap > 1e-6 || math.Abs(sol.Nonconvex-sol.Objective) > 1e-6*math.Max(1, sol.Objective) {
			t.Fatalf("%s: CNN %v, certified gap %.1e, CNN objective %v against %v", pool, sol.CNN, sol.Gap, sol.Nonconvex, sol.Objective)
		}
		if _, err := FiltersFigure(sol.CNN); err != nil {
			t.Fatal(err)
		}
		relaxed := Start("relaxed-"+pool, prob(), ADMM{CertifyEvery: 10, Relax: 1.8})
		relaxed.Quiet = true
		if err := relaxed.Iterate(20); err != nil {
			t.Fatalf("%s: relaxed general ADMM: %v", pool, err)
		}
		for _, pt := range relaxed.History() {
			if pt.Certified && pt.Lower > sol.Upper+1e-9 {
				t.Errorf("%s: relaxed general ADMM's lower bound %v at iteration %d above the optimum %v", pool, pt.Lower, pt.Iter, sol.Upper)
			}
		}
		whole := Start("whole-"+pool, prob(), ADMM{CertifyEvery: 10})
		whole.Quiet = true
		if err := whole.Iterate(40); err != nil {
			t.Fatal(err)
		}
		a := Start("split-"+pool, prob(), ADMM{CertifyEvery: 10})
		a.Quiet = true
		if err := a.Iterate(15); err != nil {
			t.Fatal(err)
		}
		b := Resume("split-"+pool, prob(), ADMM{CertifyEvery: 10})
		b.Quiet = true
		if err := b.Iterate(25); err != nil {
			t.Fatal(err)
		}
		if b.Iter() != 40 || b.Objective() != whole.Objective() {
			t.Fatalf("%s: resumed run at iteration %d objective %v, whole run %d %v", pool, b.Iter(), b.Objective(), whole.Iter(), whole.Objective())
		}
		last := whole.History()[len(whole.History())-1]
		if !last.Certified || last.Lower > sol.Upper+1e-9 || last.Upper < sol.Lower-1e-9 {
			t.Errorf("%s: ADMM's certificate %+v against the optimum in [%v, %v]", pool, last, sol.Lower, sol.Upper)
		}
		net, err := whole.CNN()
		if err != nil || net.Pool.String() != map[string]string{"avg": "average pooling", "max": "max pooling"}[pool] {
			t.Fatalf("%s: run's CNN %v, %v", pool, net, err)
		}
		if _, err := whole.Network(); err == nil || !strings.Contains(err.Error(), "run.CNN()") {
			t.Errorf("%s: run.Network() of a CNN run: %v", pool, err)
		}
	}
	for _, c := range []struct {
		p    *Problem
		want string
	}{
		{Classify(x, y).Conv(ImageShape{C: 1, H: 3, W: 3}, 2, 1), "images of shape 1×3×3 have 9"},
		{Classify(x, y).Conv(s, 5, 1), "do not fit"},
		{Classify(x, y).MaxPool(), "call Conv first"},
		{Classify(x, y).Conv(s, 2, 1), "needs patterns"},
		{Classify(nil, y).Conv(s, 2, 1), "X is nil"},
		{Classify(x, y).Conv(s, 2, 1).Padding(2), "padding must be smaller than the filter"},
	} {
		_, _, err := c.p.ConvProgram()
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("error %v, want one naming %q", err, c.want)
		}
	}
	// Padding after Conv makes a filter larger than the image fit.
	if _, _, err := Classify(x, y).Conv(s, 5, 1).Padding(1).SamplePatterns(2, 1).ConvProgram(); err != nil {
		t.Errorf("5×5 filters on 4×4 images padded by 1: %v", err)
	}
	if _, err := Classify(x, y).Conv(s, 2, 1).SamplePatterns(2, 1).Convex(); err == nil || !strings.Contains(err.Error(), "ConvProgram()") {
		t.Errorf("Convex of a CNN problem: %v", err)
	}
	rob, err := Solve(Classify(x, y).Hinge().Beta(1e-2).Conv(s, 2, 2).Robust(0.03, LInf).SamplePatterns(4, 1), IPM{})
	if err != nil {
		t.Fatal(err)
	}
	if rob.CNN == nil || rob.Clean > rob.Objective+1e-9 || rob.Violation > 0 || !(rob.Lower <= rob.Objective) || rob.Gap > 1e-6 {
		t.Errorf("robust CNN: network %v, robust objective %v, clean %v, violation %v, certificate [%v, %v] gap %v", rob.CNN, rob.Objective, rob.Clean, rob.Violation, rob.Lower, rob.Upper, rob.Gap)
	}
	// The ADMM splitting of the robust CNN across cells: resumed exactly,
	// certified around the interior-point optimum, stopping at its gap.
	robProb := func() *Problem {
		return Classify(x, y).Hinge().Beta(1e-2).Conv(s, 2, 2).Robust(0.03, LInf).SamplePatterns(4, 1)
	}
	whole := Start("robust-cnn-whole", robProb(), ADMM{CertifyEvery: 100})
	whole.Quiet = true
	if err := whole.Iterate(400); err != nil {
		t.Fatal(err)
	}
	first := Start("robust-cnn", robProb(), ADMM{CertifyEvery: 100})
	first.Quiet = true
	if err := first.Iterate(150); err != nil {
		t.Fatal(err)
	}
	rest := Resume("robust-cnn", robProb(), ADMM{CertifyEvery: 100})
	rest.Quiet = true
	if err := rest.Iterate(250); err != nil {
		t.Fatal(err)
	}
	if rest.Iter() != 400 || rest.Objective() != whole.Objective() {
		t.Errorf("robust CNN ADMM resumed at iteration %d objective %v, whole run %d %v", rest.Iter(), rest.Objective(), whole.Iter(), whole.Objective())
	}
	for _, pt := range whole.History() {
		if pt.Certified && (pt.Lower > rob.Upper+1e-9 || pt.Upper < rob.Lower-1e-9) {
			t.Errorf("robust CNN ADMM's certificate [%v, %v] at iteration %d misses the optimum in [%v, %v]", pt.Lower, pt.Upper, pt.Iter, rob.Lower, rob.Upper)
		}
	}
	to := Start("robust-cnn-gap", robProb(), ADMM{CertifyEvery: 100, Gap: 1e-4})
	to.Quiet = true
	if err := to.Iterate(30000); err != nil {
		t.Fatal(err)
	}
	last := to.History()[len(to.History())-1]
	if !last.Certified || last.CertifiedGap > 1e-4 || to.Iter() == 30000 {
		t.Errorf("robust CNN ADMM to a gap of 1e-4: %d iterations, last point %+v", to.Iter(), last)
	}
	if net, err := to.CNN(); err != nil || net.Width() == 0 {
		t.Errorf("robust CNN ADMM's network: %v, %v", net, err)
	}
	if r := Start("robust-cnn-tol", robProb(), ADMM{Tol: 1e-6}); r.Err() == nil || !strings.Contains(r.Err().Error(), "drop Tol") {
		t.Errorf("ADMM with Tol on a robust CNN: %v", r.Err())
	}
	if _, _, err := Classify(x, y).Hinge().Conv(s, 2, 2).MaxPool().Robust(0.03, L2).SamplePatterns(4, 1).ConvProgram(); err == nil || !strings.Contains(err.Error(), "ℓ∞ ball") {
		t.Errorf("robust CNN in the ℓ2 ball: %v", err)
	}
	// Max pooling with the BCE loss: certified, and never below the standard optimum's lower bound.
	mp, err := Solve(Classify(x, y).BCE().Beta(1e-2).Conv(s, 2, 2).MaxPool().Bias().Robust(0.02, LInf).SamplePatterns(2, 1), IPM{})
	if err != nil {
		t.Fatal(err)
	}
	if mp.CNN == nil || mp.Violation > 0 || mp.Gap > 1e-6 || mp.Clean > mp.Objective+1e-9 {
		t.Errorf("robust max-pooling CNN, BCE: network %v, robust objective %v, clean %v, violation %v, certificate [%v, %v] gap %v", mp.CNN, mp.Objective, mp.Clean, mp.Violation, mp.Lower, mp.Upper, mp.Gap)
	}
	r := Start("fista-cnn", Classify(x, y).Conv(s, 2, 1).SampleNeurons(3, 1), FISTA{})
	if err := r.Err(); err == nil || !strings.Contains(err.Error(), "not a CNN") {
		t.Errorf("FISTA on a CNN problem: %v", err)
	}
}

// BackpropArchitecture on a robust Conv problem trains by GD-PGD: its
// network's mean PGD hinge loss on the training images is below that of
// the standard back-prop network of the same width, seed and steps.
func TestBackpropArchitectureGDPGD(t *testing.T) {
	s := ImageShape{C: 1, H: 4, W: 4}
	x, y := cnnData(16, s, 2)
	const eps = 0.05
	n, _ := x.Dims()
	var means []float64
	for _, p := range []*Problem{
		Classify(x, y).Hinge().Beta(1e-3).Bias().Conv(s, 2, 2),
		Classify(x, y).Hinge().Beta(1e-3).Bias().Conv(s, 2, 2).Robust(eps, LInf),
	} {
		net, _, err := BackpropArchitecture(context.Background(), p, 6, 200, 0, 1)
		if err != nil {
			t.Fatal(err)
		}
		var mean float64
		for m := 0; m < n; m++ {
			l, err := net.(*cnn.Network).PGD(x.RawRowView(m), y[m], eps, 20, solvers.HingeLoss)
			if err != nil {
				t.Fatal(err)
			}
			mean += l / float64(n)
		}
		means = append(means, mean)
	}
	if !(means[1] < means[0]) {
		t.Errorf("mean PGD hinge loss at ε = %g: GD-PGD %.4f, standard back-prop %.4f", eps, means[1], means[0])
	}
	if _, _, err := BackpropArchitecture(context.Background(), Classify(x, y).Hinge().Conv(s, 2, 2).Robust(eps, L2), 3, 10, 0, 1); err == nil || !strings.Contains(err.Error(), "ℓ∞") {
		t.Errorf("GD-PGD in the ℓ2 ball: %v", err)
	}
}

// SolveContext's contract on CNN and two-hidden problems: a cancelled
// context returns the best iterate so far, certified, with an error
// wrapping the context's (average pooling used to drop the error, max
// pooling and the robust program the solution).
func TestSolveContextCancelledCNN(t *testing.T) {
	s := ImageShape{C: 1, H: 4, W: 4}
	x, y := cnnData(16, s, 3)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for name, p := range map[string]*Problem{
		"average":    Classify(x, y).Hinge().Beta(1e-2).Conv(s, 2, 2).SamplePatterns(4, 1),
		"max":        Classify(x, y).Hinge().Beta(1e-2).Conv(s, 2, 2).MaxPool().SamplePatterns(4, 1),
		"robust":     Classify(x, y).Hinge().Beta(1e-2).Conv(s, 2, 2).Robust(0.03, LInf).SamplePatterns(4, 1),
		"two-hidden": Classify(x, y).Hinge().Beta(1e-2).TwoHidden(2).SamplePatterns(3, 1),
	} {
		sol, err := SolveContext(ctx, p, IPM{})
		if !errors.Is(err, context.Canceled) || sol == nil {
			t.Errorf("%s: solution %v, error %v; want the point so far and context.Canceled", name, sol != nil, err)
			continue
		}
		if !(sol.Lower <= sol.Upper) || sol.Violation > 0 {
			t.Errorf("%s: certificate [%v, %v], violation %v", name, sol.Lower, sol.Upper, sol.Violation)
		}
	}
}

// An iteration whose validation fails (a CNN run has no two-layer network
// to validate) is still recorded and saved: the history has no gap and
// the run resumes after it.
func TestIterateKeepsAStepWhoseValidationFails(t *testing.T) {
	s := ImageShape{C: 1, H: 4, W: 4}
	x, y := cnnData(16, s, 3)
	prob := func() *Problem { return Classify(x, y).Hinge().Beta(1e-2).Conv(s, 2, 2).SamplePatterns(4, 1) }
	dir := RunDir(t.TempDir())
	r := dir.Start("v", prob(), ADMM{CertifyEvery: -1})
	r.Quiet = true
	if err := r.Iterate(3); err != nil {
		t.Fatal(err)
	}
	r.Validate = func(*Network) (float64, bool) { return 0, false }
	if err := r.Iterate(5); err == nil {
		t.Fatal("validating a CNN run: no error")
	}
	if r.Iter() != 4 || len(r.History()) != 4 {
		t.Errorf("after the failed validation: iteration %d, %d points; want 4 and 4", r.Iter(), len(r.History()))
	}
	again := dir.Resume("v", prob(), ADMM{CertifyEvery: -1})
	again.Quiet = true
	if again.Iter() != 4 || len(again.History()) != 4 {
		t.Errorf("resumed: iteration %d, %d points; want 4 and 4", again.Iter(), len(again.History()))
	}
}

// GeneratePatterns: the generated program's optimum lies below the sampled
// one's, its certificate and CNN are those of the program it ends with,
// and the combinations it does not run are refused.
func TestGeneratePatterns(t *testing.T) {
	t.Setenv("CONVEXNN_STATE_DIR", t.TempDir())
	s := ImageShape{C: 1, H: 5, W: 5}
	x, y := cnnData(30, s, 3)
	prob := func() *Problem { return Classify(x, y).Hinge().Beta(1e-3).Bias().Conv(s, 3, 2).SamplePatterns(3, 1) }
	sampled, err := Solve(prob(), IPM{})
	if err != nil {
		t.Fatal(err)
	}
	gen, err := Solve(prob().GeneratePatterns(2, 3), IPM{})
	if err != nil {
		t.Fatal(err)
	}
	if !(gen.Objective < sampled.Objective*(1-1e-3)) {
		t.Errorf("generated patterns' optimum %.9g, the sampled ones' %.9g", gen.Objective, sampled.Objective)
	}
	// The rounds before the last are solved to 10⁻⁶ (their duals only
	// guide the pricing), the last to the solve's tolerance.
	if len(gen.Generated) < 2 || math.Abs(gen.Generated[0].Objective-sampled.Objective) > 1e-5*sampled.Objective || gen.Generated[len(gen.Generated)-1].Objective != gen.Objective {
		t.Errorf("generation's rounds %+v: the first should be the sampled optimum %.9g, the last the solution's %.9g", gen.Generated, sampled.Objective, gen.Objective)
	}
	if gen.CNN == nil || gen.Gap > 1e-6 || math.Abs(gen.Nonconvex-gen.Objective) > 1e-6*math.Max(1, gen.Objective) {
		t.Fatalf("generated: CNN %v, certified gap %.1e, CNN objective %v against %v", gen.CNN, gen.Gap, gen.Nonconvex, gen.Objective)
	}
	opt, err := Optimum(prob().GeneratePatterns(2, 3), 1e-6, 0)
	if err != nil {
		t.Fatal(err)
	}
	if !(opt.Objective < sampled.Objective*(1-1e-3)) || opt.Gap > 1e-6 {
		t.Errorf("Optimum with generation %.9g (certified gap %.1e), the sampled patterns' optimum %.9g", opt.Objective, opt.Gap, sampled.Objective)
	}
	for _, c := range []struct {
		p    *Problem
		want string
	}{
		{Classify(x, y).GeneratePatterns(2, 3), "call Conv first"},
		{prob().GeneratePatterns(0, 3), "need ≥ 1 round"},
		{prob().GeneratePatterns(2, -1), "need ≥ 1 round"},
		{prob().Robust(0.01, LInf).GeneratePatterns(2, 3), "standard (not robust) CNNs"},
		{prob().Logistic().GeneratePatterns(2, 3), "squared and hinge"},
	} {
		if _, err := Solve(c.p, IPM{}); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("error %v, want one naming %q", err, c.want)
		}
	}
	run := Start("generated", prob().GeneratePatterns(2, 3), ADMM{})
	run.Quiet = true
	if err := run.Iterate(5); err == nil || !strings.Contains(err.Error(), "interior-point method") {
		t.Errorf("ADMM with pattern generation: %v", err)
	}
}

// The winner bound from the cvx builder: with patterns from back-prop on
// the bound (BoundPatterns) the certified optimum is below the appendix's
// program on sampled patterns, and its network's mean PGD loss is below
// the certified robust objective's loss part; misuse is refused.
func TestWinnerBound(t *testing.T) {
	s := ImageShape{C: 1, H: 4, W: 4}
	x, y := cnnData(24, s, 3)
	const eps = 0.03
	rows, err := Solve(Classify(x, y).Hinge().Beta(1e-3).Bias().Conv(s, 2, 2).MaxPool().Robust(eps, LInf).SamplePatterns(4, 1), IPM{})
	if err != nil {
		t.Fatal(err)
	}
	bound, err := Solve(Classify(x, y).Hinge().Beta(1e-3).Bias().Conv(s, 2, 2).MaxPool().Robust(eps, LInf).BoundPatterns(4, 1), IPM{})
	if err != nil {
		t.Fatal(err)
	}
	if bound.CNN == nil || bound.Gap > 1e-6 || bound.Violation != 0 || !(bound.Objective < rows.Objective) {
		t.Errorf("winner bound: network %v, certified gap %.2g, violation %v, objective %.6f (the appendix's program on sampled patterns %.6f)", bound.CNN, bound.Gap, bound.Violation, bound.Objective, rows.Objective)
	}
	n, _ := x.Dims()
	var mean float64
	for m := 0; m < n; m++ {
		l, err := bound.CNN.PGD(x.RawRowView(m), y[m], eps, 20, solvers.HingeLoss)
		if err != nil {
			t.Fatal(err)
		}
		mean += l / float64(n)
	}
	if mean > bound.Objective {
		t.Errorf("winner bound: mean PGD loss %.6f above the certified robust objective %.6f", mean, bound.Objective)
	}
	for _, c := range []struct {
		p    *Problem
		want string
	}{
		{Classify(x, y).Hinge().Conv(s, 2, 2).Robust(eps, LInf).SamplePatterns(2, 1).WinnerBound(), "call MaxPool"},
		{Classify(x, y).Hinge().Conv(s, 2, 2).MaxPool().SamplePatterns(2, 1).WinnerBound(), "Robust(ε, cvx.LInf)"},
		{Classify(x, y).Hinge().Conv(s, 2, 2).MaxPool().Robust(eps, LInf).BoundPatterns(0, 1), "BoundPatterns(0, 1)"},
		{Classify(x, y).Hinge().WinnerBound(), "call Conv first"},
	} {
		if _, err := Solve(c.p, IPM{}); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("error %v, want one naming %q", err, c.want)
		}
	}
	r := Start("winner-bound-admm", Classify(x, y).Hinge().Conv(s, 2, 2).MaxPool().Robust(eps, LInf).SamplePatterns(2, 1).WinnerBound(), ADMM{})
	if err := r.Err(); err == nil || !strings.Contains(err.Error(), "interior-point method") {
		t.Errorf("ADMM on the winner bound: %v", err)
	}
}

// BackpropPatterns: the certified optimum over a back-prop CNN's patterns
// is at most that network's objective (BackpropArchitecture with the same
// width, steps and seed trains the same network) and below the sampled
// patterns' optimum, for both poolings; generation continues from it.
func TestBackpropPatterns(t *testing.T) {
	s := ImageShape{C: 1, H: 4, W: 4}
	x, y := cnnData(24, s, 5)
	for _, pool := range []string{"avg", "max"} {
		prob := func() *Problem {
			p := Classify(x, y).Hinge().Beta(1e-3).Bias().Conv(s, 2, 2)
			if pool == "max" {
				p.MaxPool()
			}
			return p
		}
		sampled, err := Solve(prob().SamplePatterns(3, 1), IPM{})
		if err != nil {
			t.Fatal(err)
		}
		trained, err := Solve(prob().BackpropPatterns(3, 1), IPM{})
		if err != nil {
			t.Fatal(err)
		}
		_, bobj, err := BackpropArchitecture(context.Background(), prob(), 3, 1000, 0.02, 1)
		if err != nil {
			t.Fatal(err)
		}
		if trained.Gap > 1e-6 || trained.Objective > bobj*(1+1e-8) || !(trained.Objective < sampled.Objective) {
			t.Errorf("%s: optimum over back-prop's patterns %.8f (certified gap %.2g), back-prop %.8f, sampled patterns %.8f", pool, trained.Objective, trained.Gap, bobj, sampled.Objective)
		}
		gen, err := Solve(prob().BackpropPatterns(3, 1).GeneratePatterns(1, 2), IPM{})
		if err != nil {
			t.Fatal(err)
		}
		if gen.Objective > trained.Objective*(1+1e-8) {
			t.Errorf("%s: generation from back-prop's patterns rose to %.8f from %.8f", pool, gen.Objective, trained.Objective)
		}
	}
	for _, c := range []struct {
		p    *Problem
		want string
	}{
		{Classify(x, y).Hinge().BackpropPatterns(2, 1), "call Conv first"},
		{Classify(x, y).Hinge().Conv(s, 2, 2).BackpropPatterns(0, 1), "BackpropPatterns(0, 1)"},
		{Classify(x, y).Hinge().Conv(s, 2, 2).MaxPool().Robust(0.03, LInf).BackpropPatterns(2, 1), "BoundPatterns"},
	} {
		if _, err := Solve(c.p, IPM{}); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("error %v, want one naming %q", err, c.want)
		}
	}
}
