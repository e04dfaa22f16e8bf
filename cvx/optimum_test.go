package cvx

import (
	"context"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/convexnn/convexnn/data"
	"github.com/convexnn/convexnn/solvers/ipm"
	"gonum.org/v1/gonum/mat"
)

// TestOptimumReachesTheCertifiedGap checks cvx.Optimum on its four paths:
// the interior-point method for a squared-loss problem and the proximal
// Newton method for BCE and the interior-point method for robust BCE (all
// certified to 1e-6), ADMM (the path of programs too large for those) on
// robust BCE, certified to 5e-2 within the iteration cap, its bounds
// enclosing the interior point's, the working set over patterns on robust
// hinge (1e-6, enclosing the interior point's optimum); and its refusals.
func TestOptimumReachesTheCertifiedGap(t *testing.T) {
	x, y, _ := data.Disk2D(40, 4)
	sq, err := Optimum(Classify(x, y).Beta(0.05).Bias().SamplePatterns(6, 3), 1e-6, 0)
	if err != nil || sq.Status != "gap reached" || sq.Gap > 1e-6 || sq.Lower > sq.Objective {
		t.Fatalf("squared: %v, status %s, objective %.10g, certified [%.10g, %.10g]", err, sq.Status, sq.Objective, sq.Lower, sq.Upper)
	}
	bce, err := Optimum(Classify(x, y).BCE().Beta(0.01).Bias().SamplePatterns(6, 3), 1e-6, 0)
	if err != nil || bce.Status != "gap reached" || bce.Gap > 1e-6 || bce.Lower > bce.Upper || bce.Iterations > 30 {
		t.Fatalf("BCE: %v, status %s after %d Newton steps, certified [%.10g, %.10g] gap %.3g", err, bce.Status, bce.Iterations, bce.Lower, bce.Upper, bce.Gap)
	}
	t.Logf("BCE by proximal Newton: certified gap %.3g after %d steps", bce.Gap, bce.Iterations)
	robProb := Classify(x, y).BCE().Beta(0.01).Bias().SamplePatterns(6, 3).Robust(0.02, LInf)
	rob, err := Optimum(robProb, 1e-6, 0)
	if err != nil || rob.Status != "gap reached" || rob.Gap > 1e-6 || rob.Lower > rob.Upper {
		t.Fatalf("robust BCE: %v, status %s after %d iterations, certified [%.10g, %.10g] gap %.3g", err, rob.Status, rob.Iterations, rob.Lower, rob.Upper, rob.Gap)
	}
	t.Logf("robust BCE by the interior-point method: certified gap %.3g after %d iterations", rob.Gap, rob.Iterations)
	// ADMM, the path of programs too large for the interior-point method.
	prog, err := robProb.Convex()
	if err != nil {
		t.Fatal(err)
	}
	admmSol, err := optimum(context.Background(), prog, robProb.Perturbation(), 5e-2, 20000, ipm.NoMethod)
	if err != nil || admmSol.Status != "gap reached" || admmSol.Gap > 5e-2 || admmSol.Lower > admmSol.Upper || admmSol.Iterations%25 != 0 || admmSol.Lower > rob.Upper || admmSol.Upper < rob.Lower {
		t.Fatalf("robust BCE by ADMM: %v, status %s after %d iterations, certified [%.10g, %.10g] gap %.3g (interior point [%.10g, %.10g])", err, admmSol.Status, admmSol.Iterations, admmSol.Lower, admmSol.Upper, admmSol.Gap, rob.Lower, rob.Upper)
	}
	t.Logf("robust BCE by ADMM: certified gap %.3g after %d iterations", admmSol.Gap, admmSol.Iterations)
	// The working set over patterns, the path of large robust programs
	// with the ℓ∞ set: the same optimum as the interior-point method.
	hingeProb := Classify(x, y).Beta(1e-3).Bias().SamplePatterns(12, 3).Robust(0.05, LInf)
	hingeProg, err := hingeProb.Convex()
	if err != nil {
		t.Fatal(err)
	}
	full, err := optimum(context.Background(), hingeProg, hingeProb.Perturbation(), 1e-8, 0, ipm.InteriorPoint)
	if err != nil {
		t.Fatal(err)
	}
	ws, err := optimum(context.Background(), hingeProg, hingeProb.Perturbation(), 1e-6, 0, ipm.PatternWorkingSet)
	if err != nil || ws.Status != "gap reached" || ws.Gap > 1e-6 || ws.Lower > full.Upper || ws.Upper < full.Lower || ws.Network == nil {
		t.Fatalf("robust hinge by the working set: %v, status %s after %d rounds, certified [%.10g, %.10g] gap %.3g (interior point [%.10g, %.10g])", err, ws.Status, ws.Iterations, ws.Lower, ws.Upper, ws.Gap, full.Lower, full.Upper)
	}
	t.Logf("robust hinge by the working set: certified gap %.3g after %d rounds", ws.Gap, ws.Iterations)
	for _, g := range []float64{0, 1, math.NaN()} {
		if _, err := Optimum(Classify(x, y).Bias().SamplePatterns(6, 3), g, 0); err == nil || !strings.Contains(err.Error(), "certified gap") {
			t.Errorf("gap %v: %v", g, err)
		}
	}
}

// Optimum on the appendix's models: a CNN and a robust CNN by the
// interior-point method, and by their ADMM splittings (the path of programs
// the interior-point method does not take), each bracket holding the
// interior-point optimum; two-hidden-layer sub-networks with the BCE loss,
// which only the general ADMM solves.
func TestOptimumOfAppendixModels(t *testing.T) {
	s := ImageShape{C: 1, H: 4, W: 4}
	x, y := cnnData(12, s, 2)
	for _, robust := range []bool{false, true} {
		p := func() *Problem {
			p := Classify(x, y).Hinge().Beta(1e-2).Bias().Conv(s, 2, 2).SamplePatterns(3, 1)
			if robust {
				p.Robust(0.02, LInf)
			}
			return p
		}
		ref, err := Optimum(p(), 1e-7, 0)
		if err != nil || ref.Status != "gap reached" || ref.Gap > 1e-7 || ref.CNN == nil {
			t.Fatalf("robust %v: %v, status %q, certified gap %v", robust, err, ref.Status, ref.Gap)
		}
		gm, err := p().model()
		if err != nil {
			t.Fatal(err)
		}
		t0 := time.Now()
		ad, err := optimumGeneralBy(context.Background(), p(), gm, 1e-2, 50000, false)
		if err != nil || ad.Status != "gap reached" || ad.Gap > 1e-2 || ad.Lower > ref.Upper+1e-9 || ad.Upper < ref.Lower-1e-9 || ad.CNN == nil || ad.Violation > 0 {
			t.Errorf("robust %v by ADMM: %v, status %q after %d iterations, certified [%v, %v] gap %v, violation %v; interior point [%v, %v]", robust, err, ad.Status, ad.Iterations, ad.Lower, ad.Upper, ad.Gap, ad.Violation, ref.Lower, ref.Upper)
		}
		if robust && ad.Clean > ad.Objective+1e-9 {
			t.Errorf("robust CNN by ADMM: clean objective %v above the robust %v", ad.Clean, ad.Objective)
		}
		t.Logf("robust %v: interior point %.8g (gap %.1e); ADMM [%.8g, %.8g] after %d iterations, %.1f s", robust, ref.Objective, ref.Gap, ad.Lower, ad.Upper, ad.Iterations, time.Since(t0).Seconds())
	}
	xh, yh, _ := data.Disk2D(40, 4)
	t0 := time.Now()
	th, err := Optimum(Classify(xh, yh).BCE().Beta(1e-2).Bias().TwoHidden(2).SamplePatterns(3, 1), 0.05, 20000)
	if err != nil || th.Status != "gap reached" || th.Gap > 0.05 || th.Lower > th.Upper || th.TwoHidden == nil {
		t.Errorf("two-hidden-layer BCE: %v, status %q after %d iterations, certified [%v, %v] gap %v", err, th.Status, th.Iterations, th.Lower, th.Upper, th.Gap)
	}
	t.Logf("two-hidden-layer BCE: gap %.2g after %d iterations, %.1f s", th.Gap, th.Iterations, time.Since(t0).Seconds())
}

// A β far beyond the largest useful one leaves the interior-point method
// inaccurate at a point worth 10³⁰⁰; the certificate's feasible point, the
// zero network, is returned in its place, with its objective (the loss at
// zero) and a tight certificate, for the two-layer and the CNN programs.
func TestSolveBeyondBetaMax(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 1))
	x := mat.NewDense(12, 3, nil)
	y := make([]float64, 12)
	for k := range y {
		for j := 0; j < 3; j++ {
			x.Set(k, j, r.NormFloat64())
		}
		y[k] = 1
		if x.At(k, 0) < 0 {
			y[k] = -1
		}
	}
	for name, p := range map[string]*Problem{
		"relu": Classify(x, y).Hinge().Beta(1e300).SamplePatterns(4, 1),
		"cnn":  Classify(x, y).Hinge().Beta(1e300).Conv(ImageShape{C: 1, H: 1, W: 3}, 1, 1).SamplePatterns(3, 1),
	} {
		s, _ := Solve(p, IPM{})
		if s == nil {
			t.Fatalf("%s: no solution", name)
		}
		if s.Objective != 1 || s.Upper < 1 || s.Lower > 1 || s.Gap > 1e-12 || s.Violation > 0 {
			t.Errorf("%s: objective %v, certificate [%v, %v] gap %v, violation %v; want the zero network's 1", name, s.Objective, s.Lower, s.Upper, s.Gap, s.Violation)
		}
	}
}
