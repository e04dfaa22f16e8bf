package backprop

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/convexnn/convexnn/solvers"
	"github.com/convexnn/convexnn/solvers/ipm"
	"gonum.org/v1/gonum/mat"
)

// TestPGDNeverBeatsTheCertificate trains robust hinge networks by the
// interior-point method and attacks them: at every certified training point
// (no activation changes inside the ε-box) PGD — and FGSM, and every vertex
// of the box — finds a hinge loss at most the convex program's worst-case
// term for that point, which Theorem inner_max says is the exact maximum.
func TestPGDNeverBeatsTheCertificate(t *testing.T) {
	for _, c := range []struct {
		n, P int
		eps  float64
		seed uint64
	}{{24, 10, 0.05, 1}, {30, 12, 0.08, 2}} {
		rng := rand.New(rand.NewPCG(c.seed, 77))
		raw := mat.NewDense(c.n, 2, nil)
		x := mat.NewDense(c.n, 3, nil)
		y := make([]float64, c.n)
		for k := 0; k < c.n; k++ {
			a, b := 2*rng.Float64()-1, 2*rng.Float64()-1
			raw.SetRow(k, []float64{a, b})
			x.SetRow(k, []float64{a, b, 1})
			y[k] = 1
			if a*b+0.1*rng.NormFloat64() < 0 {
				y[k] = -1
			}
		}
		pert := solvers.Perturbation{Eps: c.eps, Norm: "inf"}
		pats, err := solvers.SampleRobustPatterns(x, true, c.P, 4, pert, c.P, c.seed, 0)
		if err != nil {
			t.Fatal(err)
		}
		p := &solvers.Program{X: x, Y: y, Loss: solvers.HingeLoss, Beta: 1e-4, D: pats, Bias: true}
		res, err := ipm.SolveRobust(context.Background(), p, pert, ipm.Options{})
		if err != nil {
			t.Fatal(err)
		}
		terms, err := solvers.RobustPointLosses(p, res.Weights, pert)
		if err != nil {
			t.Fatal(err)
		}
		net, err := p.Recover(res.Weights)
		if err != nil {
			t.Fatal(err)
		}
		cert, _, err := solvers.CertifiedPoints(net, raw, pert)
		if err != nil {
			t.Fatal(err)
		}
		hinge := func(pts *mat.Dense) []float64 {
			f, err := net.Predict(pts)
			if err != nil {
				t.Fatal(err)
			}
			out := make([]float64, len(f))
			for k := range f {
				out[k] = math.Max(0, 1-y[k]*f[k])
			}
			return out
		}
		o := AttackOptions{Eps: c.eps, Loss: solvers.HingeLoss}
		pgd, err := PGD(net, raw, y, o)
		if err != nil {
			t.Fatal(err)
		}
		fgsm, err := FGSM(net, raw, y, o)
		if err != nil {
			t.Fatal(err)
		}
		lp, lf := hinge(pgd), hinge(fgsm)
		certified, tight := 0, 0
		for k, ok := range cert {
			if !ok {
				continue
			}
			certified++
			worst := lp[k]
			for _, dx := range []float64{-c.eps, c.eps} {
				for _, dy := range []float64{-c.eps, c.eps} {
					v := mat.NewDense(1, 2, []float64{raw.At(k, 0) + dx, raw.At(k, 1) + dy})
					f, _ := net.Predict(v)
					worst = math.Max(worst, math.Max(0, 1-y[k]*f[0]))
				}
			}
			tol := 1e-7 * math.Max(1, terms[k])
			if lp[k] > terms[k]+tol || lf[k] > terms[k]+tol || worst > terms[k]+tol {
				t.Errorf("n=%d point %d (certified): PGD loss %.12g, FGSM %.12g, best vertex %.12g exceed the certificate %.12g", c.n, k, lp[k], lf[k], worst, terms[k])
			}
			if math.Abs(worst-terms[k]) <= tol {
				tight++
			}
		}
		t.Logf("n=%d P=%d ε=%g: %d/%d points certified, the box maximum equals the certificate at %d of them", c.n, len(pats), c.eps, certified, c.n, tight)
		if certified < c.n/2 {
			t.Errorf("only %d of %d points certified: the test would not test much", certified, c.n)
		}
		if tight != certified {
			t.Errorf("the box maximum reaches the certificate at %d of %d certified points (Theorem inner_max: all)", tight, certified)
		}
	}
}
