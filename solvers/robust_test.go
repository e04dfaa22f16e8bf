package solvers

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"testing"

	"gonum.org/v1/gonum/mat"
)

var robNorms = []Norm{LInf, L2, L1}

var robLosses = []Loss{HingeLoss, BCELoss, SquaredLoss, LogisticLoss}

// robLabel draws a label the loss accepts.
func robLabel(rng *rand.Rand, loss Loss) float64 {
	switch loss {
	case HingeLoss, LogisticLoss:
		return float64(2*rng.IntN(2) - 1)
	case BCELoss:
		return float64(rng.IntN(2))
	}
	return rng.NormFloat64()
}

// robRaw returns an n×f Gaussian matrix.
func robRaw(rng *rand.Rand, n, f int) *mat.Dense {
	x := mat.NewDense(n, f, nil)
	for k := 0; k < n; k++ {
		for j := 0; j < f; j++ {
			x.Set(k, j, rng.NormFloat64())
		}
	}
	return x
}

// robWithBias returns X itself or [X, 1].
func robWithBias(raw *mat.Dense, bias bool) *mat.Dense {
	if !bias {
		return mat.DenseCopyOf(raw)
	}
	return patWithBias(raw)
}

// robPattern returns diag(1[X a ≥ 0]).
func robPattern(x *mat.Dense, a []float64) Pattern {
	n, d := x.Dims()
	p := make(Pattern, n)
	av := mat.NewVecDense(d, a)
	for k := range p {
		p[k] = mat.Dot(x.RowView(k), av) >= 0
	}
	return p
}

func robGauss(rng *rand.Rand, d int) []float64 {
	a := make([]float64, d)
	for i := range a {
		a[i] = rng.NormFloat64()
	}
	return a
}

// robData returns a program on n Gaussian points with f raw features (plus
// the bias column when bias) and labels for the loss, without patterns,
// zero weights for np patterns, and the raw features.
func robData(rng *rand.Rand, n, f, np int, loss Loss, bias bool) (*Program, Weights, *mat.Dense) {
	raw := robRaw(rng, n, f)
	x := robWithBias(raw, bias)
	_, d := x.Dims()
	y := make([]float64, n)
	for k := range y {
		y[k] = robLabel(rng, loss)
	}
	p := &Program{X: x, Y: y, Loss: loss, Beta: 0.05, Bias: bias}
	return p, Weights{V: mat.NewDense(np, d, nil), W: mat.NewDense(np, d, nil)}, raw
}

// robProgram returns a program on n points with f raw features (plus the
// bias column when bias), np patterns of random directions and random
// weights that ignore the cone constraints (a few groups zero), and the raw
// features.
func robProgram(n, f, np int, loss Loss, bias bool, seed uint64) (*Program, Weights, *mat.Dense) {
	rng := rand.New(rand.NewPCG(seed, 77))
	p, wt, raw := robData(rng, n, f, np, loss, bias)
	x := p.X
	_, d := x.Dims()
	for i := 0; i < np; i++ {
		p.D = append(p.D, robPattern(x, robGauss(rng, d)))
		for j := 0; j < d; j++ {
			if i%3 != 2 {
				wt.V.Set(i, j, 0.5*rng.NormFloat64())
			}
			if i%3 != 1 {
				wt.W.Set(i, j, 0.5*rng.NormFloat64())
			}
		}
	}
	return p, wt, raw
}

// robEval holds the robust quantities of weights for a perturbation set.
type robEval struct {
	obj, viol float64    // RobustObjective, RobustViolation
	terms     []float64  // RobustPointLosses
	delta     *mat.Dense // WorstCase
}

// robEvaluate computes the robust quantities of wt for pt, failing the test
// on an error.
func robEvaluate(t *testing.T, p *Program, wt Weights, pt Perturbation) robEval {
	t.Helper()
	var r robEval
	var err error
	if r.obj, err = RobustObjective(p, wt, pt); err != nil {
		t.Fatal(err)
	}
	if r.viol, err = RobustViolation(p, wt, pt); err != nil {
		t.Fatal(err)
	}
	if r.terms, err = RobustPointLosses(p, wt, pt); err != nil {
		t.Fatal(err)
	}
	if r.delta, err = WorstCase(p, wt, pt); err != nil {
		t.Fatal(err)
	}
	return r
}

// robNormP returns ‖v‖_p for the perturbation's norm (not the dual).
func robNormP(norm Norm, v []float64) float64 {
	var s float64
	for _, x := range v {
		switch norm {
		case "inf":
			s = math.Max(s, math.Abs(x))
		case "2":
			s += x * x
		case "1":
			s += math.Abs(x)
		}
	}
	if norm == "2" {
		return math.Sqrt(s)
	}
	return s
}

// robPointLoss is one point's loss at output yhat, written from the paper's
// definitions (not through Loss): hinge (1 − yŷ)_+, BCE −2ŷy + log(e^{2ŷ}+1),
// squared ½(ŷ − y)², logistic log(1 + e^{−yŷ}).
func robPointLoss(loss Loss, yhat, y float64) float64 {
	switch loss {
	case HingeLoss:
		return math.Max(0, 1-y*yhat)
	case BCELoss:
		return -2*yhat*y + math.Log(math.Exp(2*yhat)+1)
	case SquaredLoss:
		return (yhat - y) * (yhat - y) / 2
	case LogisticLoss:
		return math.Log(1 + math.Exp(-y*yhat))
	}
	panic("loss")
}

// robSurrogate returns Σ_i d_ik (x_k + [δ; 0])ᵀ(v_i − w_i) by plain loops.
func robSurrogate(p *Program, wt Weights, k int, delta []float64) float64 {
	_, d := p.X.Dims()
	var s float64
	for i, di := range p.D {
		if !di[k] {
			continue
		}
		for c := 0; c < d; c++ {
			xc := p.X.At(k, c)
			if c < len(delta) {
				xc += delta[c]
			}
			s += xc * (wt.V.At(i, c) - wt.W.At(i, c))
		}
	}
	return s
}

// robVertices returns the extreme points of the radius-eps ball in R^f for
// "inf" (the 2^f box vertices) and "1" (the 2f points ±eps e_i).
func robVertices(norm Norm, f int, eps float64) [][]float64 {
	var out [][]float64
	switch norm {
	case "inf":
		for s := 0; s < 1<<f; s++ {
			v := make([]float64, f)
			for i := range v {
				v[i] = eps
				if s>>i&1 == 1 {
					v[i] = -eps
				}
			}
			out = append(out, v)
		}
	case "1":
		for i := 0; i < f; i++ {
			for _, sg := range []float64{eps, -eps} {
				v := make([]float64, f)
				v[i] = sg
				out = append(out, v)
			}
		}
	}
	return out
}

func robClose(a, b, tol float64) bool {
	return math.Abs(a-b) <= tol*(1+math.Max(math.Abs(a), math.Abs(b)))
}

func TestRobustPerturbationDualNorm(t *testing.T) {
	v := []float64{3, -4, 1}
	for norm, want := range map[Norm]float64{"inf": 8, "": 8, "2": math.Sqrt(26), "1": 4} {
		pt := Perturbation{Eps: 0.1, Norm: norm}
		if err := pt.Validate(); err != nil {
			t.Fatalf("%q: %v", norm, err)
		}
		if got := pt.DualNorm(v); math.Abs(got-want) > 1e-15 {
			t.Errorf("DualNorm %q = %v, want %v", norm, got, want)
		}
	}
	// Hölder: the maximizer attains ‖g‖_* on the unit ball and no sampled
	// point of the ball exceeds it.
	rng := rand.New(rand.NewPCG(1, 2))
	for _, norm := range robNorms {
		pt := Perturbation{Eps: 1, Norm: norm}
		kind, _ := pt.norm()
		for trial := 0; trial < 50; trial++ {
			g := robGauss(rng, 4)
			m := make([]float64, 4)
			robustMaximizer(kind, m, g)
			dn := pt.DualNorm(g)
			if got := mat.Dot(mat.NewVecDense(4, m), mat.NewVecDense(4, g)); !robClose(got, dn, 1e-14) {
				t.Fatalf("%s: maximizer gives %v, dual norm %v", norm, got, dn)
			}
			if nm := robNormP(norm, m); nm > 1+1e-15 {
				t.Fatalf("%s: maximizer has norm %v > 1", norm, nm)
			}
			for s := 0; s < 20; s++ {
				u := robGauss(rng, 4)
				nu := robNormP(norm, u)
				var dot float64
				for i := range u {
					dot += u[i] / nu * g[i]
				}
				if dot > dn*(1+1e-14) {
					t.Fatalf("%s: a unit-ball point gives %v > ‖g‖_* = %v", norm, dot, dn)
				}
			}
		}
	}
	if !math.IsNaN(Perturbation{Norm: "3"}.DualNorm(v)) {
		t.Error("unknown norm should give NaN")
	}
	for _, c := range []struct {
		pt   Perturbation
		want string
	}{
		{Perturbation{Eps: -0.1}, "ε = -0.1"},
		{Perturbation{Eps: math.NaN()}, "ε = NaN"},
		{Perturbation{Eps: math.Inf(1)}, "ε = +Inf"},
		{Perturbation{Eps: 0.1, Norm: "l2"}, `norm "l2"`},
		{Perturbation{Eps: 0.1, Norm: "3"}, `norm "3"`},
	} {
		if err := c.pt.Validate(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: want error with %q, got %v", c.pt, c.want, err)
		}
	}
}

// At ε = 0 the robust quantities are the standard ones, bit for bit.
func TestRobustZeroEpsReducesExactly(t *testing.T) {
	for _, loss := range robLosses {
		for _, bias := range []bool{false, true} {
			p, wt, _ := robProgram(25, 3, 7, loss, bias, uint64(loss)*10+3)
			obj, err := p.Objective(wt)
			if err != nil {
				t.Fatal(err)
			}
			viol, _ := p.Violation(wt)
			for _, norm := range robNorms {
				pt := Perturbation{Eps: 0, Norm: norm}
				r := robEvaluate(t, p, wt, pt)
				robj, rviol, delta := r.obj, r.viol, r.delta
				if robj != obj || rviol != viol {
					t.Errorf("%v bias=%v %s: ε = 0 gives objective %v (standard %v), violation %v (standard %v)",
						loss, bias, norm, robj, obj, rviol, viol)
				}
				if mat.Norm(delta, math.Inf(1)) != 0 {
					t.Errorf("%v %s: ε = 0 worst case is not zero", loss, norm)
				}
			}
		}
	}
}

// The robust objective is at least the standard one and nondecreasing in ε,
// strictly increasing for the squared and BCE losses (strictly increasing in
// the radius term) when some g_k ≠ 0; the robust violation is nondecreasing.
func TestRobustObjectiveMonotoneInEps(t *testing.T) {
	epss := []float64{0, 1e-3, 0.01, 0.05, 0.1, 0.3, 1, 3}
	for trial := 0; trial < 6; trial++ {
		for _, loss := range robLosses {
			bias := trial%2 == 1
			p, wt, _ := robProgram(20, 2+trial%3, 5, loss, bias, uint64(100+trial))
			std, _ := p.Objective(wt)
			for _, norm := range robNorms {
				prevObj, prevViol := math.Inf(-1), math.Inf(-1)
				for _, eps := range epss {
					pt := Perturbation{Eps: eps, Norm: norm}
					r := robEvaluate(t, p, wt, pt)
					obj, viol := r.obj, r.viol
					if obj < std || obj < prevObj || viol < prevViol {
						t.Fatalf("trial %d %v %s ε=%v: objective %v (previous %v, standard %v), violation %v (previous %v)",
							trial, loss, norm, eps, obj, prevObj, std, viol, prevViol)
					}
					strict := loss == SquaredLoss || loss == BCELoss
					if strict && eps > 0 && !(obj > prevObj) {
						t.Fatalf("trial %d %v %s: objective did not increase at ε=%v (%v)", trial, loss, norm, eps, obj)
					}
					prevObj, prevViol = obj, viol
				}
			}
		}
	}
}

// The closed-form Δ* attains the maximum of each point's surrogate loss over
// the extreme points of the ball (all 2^f box vertices, the 2f vertices of
// the ℓ₁ ball, random points of the ℓ₂ sphere), and that maximum is the term
// of RobustPointLosses; the robust objective is the loss at X + Δ*.
func TestWorstCaseAttainsBruteForceMaximum(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 9))
	for _, f := range []int{2, 3} {
		for _, bias := range []bool{false, true} {
			for _, loss := range robLosses {
				p, wt, _ := robProgram(12, f, 5, loss, bias, uint64(31*f+int(loss)))
				n := len(p.Y)
				for _, norm := range robNorms {
					pt := Perturbation{Eps: 0.2, Norm: norm}
					r := robEvaluate(t, p, wt, pt)
					terms, delta := r.terms, r.delta
					if r, c := delta.Dims(); r != n || c != f {
						t.Fatalf("Δ* is %d×%d, want %d×%d (bias column left out)", r, c, n, f)
					}
					var atStar float64
					for k := 0; k < n; k++ {
						dk := delta.RawRowView(k)
						if nm := robNormP(norm, dk); nm > pt.Eps*(1+1e-14) {
							t.Fatalf("‖δ_%d*‖ = %v > ε", k, nm)
						}
						star := robPointLoss(loss, robSurrogate(p, wt, k, dk), p.Y[k])
						atStar += star
						if !robClose(star, terms[k], 1e-11) {
							t.Fatalf("f=%d bias=%v %v %s point %d: loss at Δ* %v, robust term %v", f, bias, loss, norm, k, star, terms[k])
						}
						var best float64
						if norm == "2" {
							best = math.Inf(-1)
							for s := 0; s < 400; s++ {
								u := robGauss(rng, f)
								nu := robNormP("2", u)
								for i := range u {
									u[i] *= pt.Eps / nu
								}
								if l := robPointLoss(loss, robSurrogate(p, wt, k, u), p.Y[k]); l > best {
									best = l
								}
							}
							if best > terms[k]*(1+1e-12)+1e-14 {
								t.Fatalf("%v ℓ₂ point %d: a sphere point gives %v > robust term %v", loss, k, best, terms[k])
							}
							continue
						}
						best = math.Inf(-1)
						for _, v := range robVertices(norm, f, pt.Eps) {
							best = math.Max(best, robPointLoss(loss, robSurrogate(p, wt, k, v), p.Y[k]))
						}
						if !robClose(best, terms[k], 1e-11) {
							t.Fatalf("f=%d bias=%v %v %s point %d: vertex maximum %v, robust term %v", f, bias, loss, norm, k, best, terms[k])
						}
					}
					obj, _ := RobustObjective(p, wt, pt)
					if loss != SquaredLoss {
						atStar /= float64(n)
					}
					if want := atStar + p.Beta*groupNorms(wt); !robClose(obj, want, 1e-12) {
						t.Fatalf("%v %s: robust objective %v, loss at X+Δ* plus regularizer %v", loss, norm, obj, want)
					}
				}
			}
		}
	}
}

// The theorems' matrix formulas, literally: Δ*_hinge = −ε sgn(Σ_i D_i y (v_i −
// w_i)ᵀ) (Theorem inner_max) and Δ*_BCE = −ε sgn((2y − 1) Σ_i D_i (v_i −
// w_i)ᵀ) (Theorem CEadv), bias column dropped; and the named functions refuse
// other losses.
func TestWorstCaseMatchesTheoremFormulas(t *testing.T) {
	for _, bias := range []bool{false, true} {
		for _, loss := range []Loss{HingeLoss, BCELoss} {
			p, wt, _ := robProgram(15, 3, 6, loss, bias, 5)
			pt := Perturbation{Eps: 0.3}
			fn := WorstCaseHinge
			if loss == BCELoss {
				fn = WorstCaseBCE
			}
			got, err := fn(p, wt, pt)
			if err != nil {
				t.Fatal(err)
			}
			for k := range p.Y {
				c := p.Y[k]
				if loss == BCELoss {
					c = 2*p.Y[k] - 1
				}
				for j := 0; j < 3; j++ {
					var s float64
					for i, di := range p.D {
						if di[k] {
							s += c * (wt.V.At(i, j) - wt.W.At(i, j))
						}
					}
					want := -pt.Eps * math.Copysign(1, s)
					if s == 0 {
						want = 0
					}
					if got.At(k, j) != want {
						t.Fatalf("%v bias=%v: Δ*[%d,%d] = %v, theorem gives %v", loss, bias, k, j, got.At(k, j), want)
					}
				}
			}
		}
	}
	p, wt, _ := robProgram(10, 2, 3, SquaredLoss, false, 6)
	if _, err := WorstCaseHinge(p, wt, Perturbation{Eps: 0.1}); err == nil || !strings.Contains(err.Error(), "needs a hinge-loss program") {
		t.Errorf("WorstCaseHinge on a squared program: %v", err)
	}
	if _, err := WorstCaseBCE(p, wt, Perturbation{Eps: 0.1}); err == nil || !strings.Contains(err.Error(), "needs a bce-loss program") {
		t.Errorf("WorstCaseBCE on a squared program: %v", err)
	}
	if _, err := WorstCaseSquared(p, wt, Perturbation{Eps: 0.1}); err != nil {
		t.Errorf("WorstCaseSquared: %v", err)
	}
}

// robFeasible returns a program with weights v_i = c_i a_i, w_i = c'_i a_i
// along the pattern directions a_i, and the largest radius at which they
// satisfy the robust constraints, min over i, k of |x_kᵀa_i|/‖a_i^f‖_*.
func robFeasible(n, f, np int, loss Loss, bias bool, norm Norm, seed uint64) (*Program, Weights, *mat.Dense, float64) {
	rng := rand.New(rand.NewPCG(seed, 78))
	p, wt, raw := robData(rng, n, f, np, loss, bias)
	x := p.X
	_, d := x.Dims()
	pt := Perturbation{Norm: norm}
	epsMax := math.Inf(1)
	for i := 0; i < np; i++ {
		a := robGauss(rng, d)
		p.D = append(p.D, robPattern(x, a))
		dn := pt.DualNorm(a[:f])
		for k := 0; k < n; k++ {
			epsMax = math.Min(epsMax, math.Abs(mat.Dot(x.RowView(k), mat.NewVecDense(d, a)))/dn)
		}
		cv, cw := 0.2+rng.Float64(), 0.2+rng.Float64()
		switch i % 3 {
		case 1:
			cw = 0
		case 2:
			cv = 0
		}
		for j := range a {
			wt.V.Set(i, j, cv*a[j])
			wt.W.Set(i, j, cw*a[j])
		}
	}
	return p, wt, raw, epsMax
}

// Weights that satisfy the robust constraints give a network that is certified
// at every training point, and there its exact worst-case loss (brute force
// over the extreme points of the ball, the network evaluated directly) is
// the robust convex term. Beyond the feasible radius the constraints are
// violated and no point is certified.
func TestRobustFeasibleNetworkIsCertifiedAndExact(t *testing.T) {
	for _, norm := range []Norm{LInf, L1} {
		for _, bias := range []bool{false, true} {
			for _, loss := range robLosses {
				p, wt, raw, epsMax := robFeasible(8, 3, 4, loss, bias, norm, uint64(7+int(loss)))
				pt := Perturbation{Eps: epsMax / 2, Norm: norm}
				if viol, err := RobustViolation(p, wt, pt); err != nil || viol != 0 {
					t.Fatalf("%v %s: robust violation %v (%v) at ε = ε_max/2", loss, norm, viol, err)
				}
				net, err := p.Recover(wt)
				if err != nil {
					t.Fatal(err)
				}
				cert, margin, err := CertifiedPoints(net, raw, pt)
				if err != nil {
					t.Fatal(err)
				}
				terms, err := RobustPointLosses(p, wt, pt)
				if err != nil {
					t.Fatal(err)
				}
				n, f := raw.Dims()
				xk := make([]float64, f)
				for k := 0; k < n; k++ {
					if !cert[k] || margin[k] < 0 {
						t.Fatalf("%v %s bias=%v: feasible weights leave point %d uncertified (margin %v)", loss, norm, bias, k, margin[k])
					}
					best := math.Inf(-1)
					for _, v := range robVertices(norm, f, pt.Eps) {
						for j := range xk {
							xk[j] = raw.At(k, j) + v[j]
						}
						out, err := net.Eval(xk)
						if err != nil {
							t.Fatal(err)
						}
						best = math.Max(best, robPointLoss(loss, out, p.Y[k]))
					}
					if !robClose(best, terms[k], 1e-10) {
						t.Fatalf("%v %s bias=%v point %d: network's worst case %v, robust convex term %v", loss, norm, bias, k, best, terms[k])
					}
				}
				// Past every point's radius nothing is certified.
				big := Perturbation{Eps: 1e3 * epsMax, Norm: norm}
				cert, _, _ = CertifiedPoints(net, raw, big)
				if slices.Contains(cert, true) {
					t.Errorf("%v %s: a point is certified at ε = 1000 ε_max", loss, norm)
				}
				if viol, _ := RobustViolation(p, wt, big); !(viol > 0) {
					t.Errorf("%v %s: no robust violation at ε = 1000 ε_max", loss, norm)
				}
			}
		}
	}
}

// robNetwork returns a random network with m neurons on f features.
func robNetwork(rng *rand.Rand, f, m int, bias bool) *Network {
	d := f
	if bias {
		d++
	}
	u := mat.NewDense(d, m, nil)
	alpha := make([]float64, m)
	for j := 0; j < m; j++ {
		for i := 0; i < d; i++ {
			u.Set(i, j, rng.NormFloat64())
		}
		alpha[j] = rng.NormFloat64()
	}
	return &Network{U: u, Alpha: alpha, Bias: bias}
}

// robGrid returns perturbations covering the ball: a full grid of the box
// (vertices included) for "inf"; four radii × 720 angles for "2" (f = 2);
// the ℓ₁ sphere's edges, vertices included, for "1" (f = 2).
func robGrid(norm Norm, f int, eps float64) [][]float64 {
	var out [][]float64
	switch norm {
	case "inf":
		steps := 21
		if f == 3 {
			steps = 11
		}
		idx := make([]int, f)
		for {
			v := make([]float64, f)
			for i, c := range idx {
				v[i] = -eps + 2*eps*float64(c)/float64(steps-1)
			}
			out = append(out, v)
			i := 0
			for ; i < f; i++ {
				idx[i]++
				if idx[i] < steps {
					break
				}
				idx[i] = 0
			}
			if i == f {
				return out
			}
		}
	case "2":
		for _, r := range []float64{0.25, 0.5, 0.75, 1} {
			for a := 0; a < 720; a++ {
				th := 2 * math.Pi * float64(a) / 720
				out = append(out, []float64{r * eps * math.Cos(th), r * eps * math.Sin(th)})
			}
		}
	case "1":
		for a := 0; a <= 400; a++ {
			s := float64(a) / 400
			for _, sx := range []float64{1, -1} {
				for _, sy := range []float64{1, -1} {
					out = append(out, []float64{sx * eps * s, sy * eps * (1 - s)})
				}
			}
		}
	}
	return out
}

// CertifiedPoints agrees with a brute-force check of every neuron's activation
// on a grid of the ball; the radius is the median point's so that both
// outcomes occur.
func TestCertifiedPointsMatchesGrid(t *testing.T) {
	rng := rand.New(rand.NewPCG(4, 4))
	cases := []struct {
		norm Norm
		f    int
	}{{"inf", 2}, {"inf", 3}, {"2", 2}, {"1", 2}}
	for _, c := range cases {
		for _, bias := range []bool{false, true} {
			net := robNetwork(rng, c.f, 4, bias)
			n := 60
			x := robRaw(rng, n, c.f)
			d, m := net.U.Dims()
			pt0 := Perturbation{Norm: c.norm}
			// ε = median over points of min_j |x̃_kᵀu_j|/‖u_j^f‖_*.
			ratios := make([]float64, n)
			pre := make([][]float64, n)
			for k := 0; k < n; k++ {
				ratios[k] = math.Inf(1)
				pre[k] = make([]float64, m)
				for j := 0; j < m; j++ {
					var z float64
					for i := 0; i < c.f; i++ {
						z += x.At(k, i) * net.U.At(i, j)
					}
					if bias {
						z += net.U.At(d-1, j)
					}
					pre[k][j] = z
					col := mat.Col(nil, j, net.U)[:c.f]
					ratios[k] = math.Min(ratios[k], math.Abs(z)/pt0.DualNorm(col))
				}
			}
			sorted := slices.Clone(ratios)
			sort.Float64s(sorted)
			pt := Perturbation{Eps: sorted[n/2], Norm: c.norm}
			cert, margin, err := CertifiedPoints(net, x, pt)
			if err != nil {
				t.Fatal(err)
			}
			grid := robGrid(c.norm, c.f, pt.Eps)
			var nc, nu int
			for k := 0; k < n; k++ {
				if math.Abs(margin[k]) < 1e-3*pt.Eps {
					continue // within the grid's resolution of the boundary
				}
				changed := false
				for _, dl := range grid {
					for j := 0; j < m && !changed; j++ {
						z := pre[k][j]
						for i, v := range dl {
							z += v * net.U.At(i, j)
						}
						changed = (z >= 0) != (pre[k][j] >= 0)
					}
				}
				if changed == cert[k] {
					t.Fatalf("%s f=%d bias=%v point %d: certified %v (margin %v), grid finds an activation change: %v",
						c.norm, c.f, bias, k, cert[k], margin[k], changed)
				}
				if cert[k] {
					nc++
				} else {
					nu++
				}
			}
			if nc < 5 || nu < 5 {
				t.Fatalf("%s f=%d: only %d certified and %d uncertified points checked", c.norm, c.f, nc, nu)
			}
		}
	}
}

// robReplayA returns a_h, the h-th direction of SamplePatterns' stream.
func robReplayA(seed uint64, d, h int) []float64 {
	rng := rand.New(rand.NewPCG(seed, patSampleStream))
	var a []float64
	for i := 0; i < h; i++ {
		a = robGauss(rng, d)
	}
	return a
}

// robCheckDraws regenerates the draw behind every pattern and checks the
// perturbation's shape (every row on the ball's boundary as documented, bias
// column untouched) and that the pattern is 1[(X + Δ_hj) a_h ≥ 0].
func robCheckDraws(t *testing.T, x *mat.Dense, bias bool, pt Perturbation, seed uint64, pats Patterns, from []robustDraw) {
	t.Helper()
	n, d := x.Dims()
	f := PerturbedFeatures(d, bias)
	kind, _ := pt.norm()
	pr := newRobustPerturber(seed, kind)
	for idx, pat := range pats {
		h, j := from[idx].h, from[idx].j
		a := robReplayA(seed, d, h)
		xbar := mat.DenseCopyOf(x)
		if j > 1 {
			pr.reset(h, j)
			row := make([]float64, f)
			for k := 0; k < n; k++ {
				pr.next(row)
				for i, v := range row {
					dv := pt.Eps * v
					switch pt.Norm {
					case "inf":
						if math.Abs(dv) != pt.Eps {
							t.Fatalf("draw (%d,%d) δ[%d,%d] = %v, not ±ε", h, j, k, i, dv)
						}
					}
					xbar.Set(k, i, x.At(k, i)+dv)
				}
				if nm := robNormP(pt.Norm, row); math.Abs(nm-1) > 1e-14 {
					t.Fatalf("draw (%d,%d) row %d: ‖δ_k‖/ε = %v, want 1", h, j, k, nm)
				}
			}
		}
		if bias {
			for k := 0; k < n; k++ {
				if xbar.At(k, d-1) != 1 {
					t.Fatal("bias column perturbed")
				}
			}
		}
		var z mat.VecDense
		z.MulVec(xbar, mat.NewVecDense(d, a))
		for k := 0; k < n; k++ {
			if (z.AtVec(k) >= 0) != pat[k] && math.Abs(z.AtVec(k)) > 1e-9 {
				t.Fatalf("pattern %d from draw (%d,%d): entry %d is %v but (X̄ a)_k = %v", idx, h, j, k, pat[k], z.AtVec(k))
			}
		}
	}
}

func TestSampleRobustPatterns(t *testing.T) {
	rng := rand.New(rand.NewPCG(12, 12))
	for _, bias := range []bool{false, true} {
		raw := robRaw(rng, 20, 2)
		x := robWithBias(raw, bias)
		exact, err := ExactPatterns(x, 0)
		if err != nil {
			t.Fatal(err)
		}
		clean := patSetOf(t, exact, 20)
		for _, norm := range robNorms {
			pt := Perturbation{Eps: 0.4, Norm: norm}
			const pa, s, seed = 40, 8, 99
			// An unreachable target: everything the P_a·S draws give.
			all, from, err := sampleRobust(x, bias, pa, s, pt, pa*s, seed, 0)
			var few *FewPatternsError
			if !errors.As(err, &few) || few.Found != len(all) || few.Asked != pa*s || few.Draws != pa*s {
				t.Fatalf("%s: want a FewPatternsError after %d draws, got %v", norm, pa*s, err)
			}
			patSetOf(t, all, 20) // distinct
			robCheckDraws(t, x, bias, pt, seed, all, from)
			// The clean patterns D_h1 are SamplePatterns' own.
			std, _ := SamplePatterns(x, 10000, seed, pa)
			robSet := patSetOf(t, all, 20)
			for _, q := range std {
				if !robSet[patString(q)] {
					t.Fatalf("%s: clean pattern %s missing from the robust sample", norm, patString(q))
				}
			}
			var dirty int
			for _, q := range all {
				if !clean[patString(q)] {
					dirty++
				}
			}
			if len(all) <= len(std) || dirty == 0 {
				t.Fatalf("%s bias=%v: %d robust patterns (%d not patterns of X) vs %d clean: the perturbation had no effect",
					norm, bias, len(all), dirty, len(std))
			}
			// Reachable targets: prefixes of the sequence, deterministic.
			for _, target := range []int{1, 7, len(all)} {
				got, err := SampleRobustPatterns(x, bias, pa, s, pt, target, seed, 0)
				if err != nil {
					t.Fatal(err)
				}
				again, _ := SampleRobustPatterns(x, bias, pa, s, pt, target, seed, 0)
				if !slices.EqualFunc(got, all[:target], slices.Equal) || !slices.EqualFunc(got, again, slices.Equal) {
					t.Fatalf("%s target %d: not the deterministic prefix", norm, target)
				}
			}
			other, _ := SampleRobustPatterns(x, bias, pa, s, pt, 10, seed+1, 0)
			if slices.EqualFunc(other, all[:10], slices.Equal) {
				t.Errorf("%s: seeds %d and %d give the same patterns", norm, seed, seed+1)
			}
			// maxDraws caps the draws.
			_, err = SampleRobustPatterns(x, bias, pa, s, pt, 60, seed, 50)
			if !errors.As(err, &few) || few.Draws != 50 {
				t.Errorf("%s: maxDraws 50: %v", norm, err)
			}
		}
		// ε = 0: exactly SamplePatterns, and every pattern a pattern of X.
		const pa, s, seed = 60, 5, 3
		for _, target := range []int{5, pa * s} {
			got, err0 := SampleRobustPatterns(x, bias, pa, s, Perturbation{}, target, seed, 0)
			want, err1 := SamplePatterns(x, target, seed, pa)
			if (err0 == nil) != (err1 == nil) || !slices.EqualFunc(got, want, slices.Equal) {
				t.Fatalf("ε = 0, target %d: %d patterns (%v) vs SamplePatterns' %d (%v)", target, len(got), err0, len(want), err1)
			}
			for _, q := range got {
				if !clean[patString(q)] {
					t.Fatalf("ε = 0 pattern %s is not a pattern of X", patString(q))
				}
			}
		}
	}
	// The sign draws are fair and the ℓ₁ coordinates uniform.
	for _, norm := range []Norm{LInf, L1} {
		kind, _ := Perturbation{Norm: norm}.norm()
		pr := newRobustPerturber(5, kind)
		row := make([]float64, 70)
		var pos, count int
		perCoord := make([]int, 70)
		for h := 1; h <= 200; h++ {
			pr.reset(h, 2)
			for k := 0; k < 10; k++ {
				pr.next(row)
				for i, v := range row {
					if v > 0 {
						pos++
					}
					if v != 0 {
						count++
						perCoord[i]++
					}
				}
			}
		}
		if fr := float64(pos) / float64(count); math.Abs(fr-0.5) > 0.02 {
			t.Errorf("%s: %.3f of the signs are positive", norm, fr)
		}
		if norm == "1" && (slices.Min(perCoord) < 10 || slices.Max(perCoord) > 60) {
			t.Errorf("ℓ₁ coordinates are not uniform: counts %d … %d for 2000 rows over 70 coordinates", slices.Min(perCoord), slices.Max(perCoord))
		}
	}
}

func TestRobustBadInput(t *testing.T) {
	p, wt, raw := robProgram(10, 2, 3, HingeLoss, true, 1)
	good := Perturbation{Eps: 0.1}
	bad := []struct {
		name string
		p    *Program
		wt   Weights
		pt   Perturbation
		want string
	}{
		{"nil program", nil, wt, good, "program is nil"},
		{"bad label", func() *Program { q := *p; q.Y = slices.Clone(p.Y); q.Y[2] = 0.5; return &q }(), wt, good, "y[2] = 0.5"},
		{"V shape", p, Weights{V: mat.NewDense(2, 3, nil), W: wt.W}, good, "V is 2×3"},
		{"W NaN", p, Weights{V: wt.V, W: func() *mat.Dense { w := mat.DenseCopyOf(wt.W); w.Set(1, 0, math.NaN()); return w }()}, good, "W[1,0] is NaN"},
		{"ε < 0", p, wt, Perturbation{Eps: -1}, "ε = -1"},
		{"ε NaN", p, wt, Perturbation{Eps: math.NaN()}, "ε = NaN"},
		{"norm", p, wt, Perturbation{Eps: 0.1, Norm: "4"}, `norm "4"`},
	}
	for _, c := range bad {
		calls := map[string]func() error{
			"RobustObjective":   func() error { _, err := RobustObjective(c.p, c.wt, c.pt); return err },
			"RobustViolation":   func() error { _, err := RobustViolation(c.p, c.wt, c.pt); return err },
			"RobustPointLosses": func() error { _, err := RobustPointLosses(c.p, c.wt, c.pt); return err },
			"WorstCase":         func() error { _, err := WorstCase(c.p, c.wt, c.pt); return err },
			"WorstCaseHinge":    func() error { _, err := WorstCaseHinge(c.p, c.wt, c.pt); return err },
		}
		for name, call := range calls {
			if err := call(); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("%s with %s: want error with %q, got %v", name, c.name, c.want, err)
			}
		}
	}

	net, err := p.Recover(wt)
	if err != nil {
		t.Fatal(err)
	}
	nanX := mat.DenseCopyOf(raw)
	nanX.Set(3, 1, math.Inf(1))
	for _, c := range []struct {
		net  *Network
		x    *mat.Dense
		pt   Perturbation
		want string
	}{
		{nil, raw, good, "no hidden layer"},
		{net, p.X, good, "data has 3 features, network expects 2"},
		{net, nanX, good, "X[3,1] is +Inf"},
		{net, nil, good, "X is nil"},
		{net, raw, Perturbation{Eps: math.Inf(1)}, "ε = +Inf"},
		{&Network{U: net.U, Alpha: net.Alpha[:1], Bias: true}, raw, good, "output weights"},
	} {
		if _, _, err := CertifiedPoints(c.net, c.x, c.pt); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("CertifiedPoints: want error with %q, got %v", c.want, err)
		}
	}

	x := p.X
	notOnes := mat.DenseCopyOf(x)
	notOnes.Set(4, 2, 0.5)
	nanData := mat.DenseCopyOf(x)
	nanData.Set(0, 0, math.NaN())
	for _, c := range []struct {
		x                       *mat.Dense
		bias                    bool
		pa, s, target, maxDraws int
		pt                      Perturbation
		want                    string
	}{
		{x, true, 0, 2, 1, 0, good, "P_a = 0"},
		{x, true, 2, 0, 1, 0, good, "S = 0"},
		{x, true, 2, 2, 0, 0, good, "P_s = 0"},
		{x, true, 2, 2, 1, -1, good, "maxDraws = -1"},
		{x, true, 2, 3, 7, 0, good, "2·3 = 6 draws cannot give P_s = 7"},
		{x, true, 2, 2, 1, 0, Perturbation{Eps: -0.5}, "ε = -0.5"},
		{notOnes, true, 2, 2, 1, 0, good, "X[4,2] = 0.5 is not 1"},
		{mat.NewDense(3, 1, []float64{1, 1, 1}), true, 2, 2, 1, 0, good, "at least one feature"},
		{nanData, false, 2, 2, 1, 0, good, "X[0,0] is NaN"},
		{nil, false, 2, 2, 1, 0, good, "X is nil"},
	} {
		_, err := SampleRobustPatterns(c.x, c.bias, c.pa, c.s, c.pt, c.target, 1, c.maxDraws)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("SampleRobustPatterns: want error with %q, got %v", c.want, err)
		}
	}
	// A perturbation name in messages.
	if s := fmt.Sprint(Perturbation{Eps: 0.1}); s != "ℓ_inf ball of radius 0.1" {
		t.Errorf("String() = %q", s)
	}
}

// G = [d_ik](V − W) is multiplied in blocks of rows when n·P is large; the
// blocks must agree with the plain sum g_k = Σ_i d_ik (v_i − w_i).
func TestRobustGBlocks(t *testing.T) {
	const n, np = 13, 150000 // 2^20/P = 6 rows per block: blocks of 6, 6 and 1
	rng := rand.New(rand.NewPCG(8, 8))
	x := robRaw(rng, n, 2)
	p := &Program{X: x, Y: make([]float64, n), Loss: SquaredLoss, Beta: 1}
	wt := Weights{V: mat.NewDense(np, 2, nil), W: mat.NewDense(np, 2, nil)}
	bits := make([]bool, n*np)
	for i := 0; i < np; i++ {
		pat := Pattern(bits[i*n : (i+1)*n : (i+1)*n])
		for k := range pat {
			pat[k] = rng.IntN(2) == 1
		}
		p.D = append(p.D, pat)
		wt.V.Set(i, 0, rng.NormFloat64())
		wt.W.Set(i, 1, rng.NormFloat64())
	}
	g := p.robustG(wt)
	for k := 0; k < n; k++ {
		for c := 0; c < 2; c++ {
			var s float64
			for i := 0; i < np; i++ {
				if p.D[i][k] {
					s += wt.V.At(i, c) - wt.W.At(i, c)
				}
			}
			if !robClose(g.At(k, c), s, 1e-9) {
				t.Fatalf("G[%d,%d] = %v, plain sum %v", k, c, g.At(k, c), s)
			}
		}
	}
}
