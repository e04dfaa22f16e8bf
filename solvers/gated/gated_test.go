package gated

import (
	"context"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/convexnn/convexnn/solvers"
	"github.com/convexnn/convexnn/solvers/general"
	"github.com/convexnn/convexnn/solvers/internal/testprog"
	"gonum.org/v1/gonum/mat"
)

// randomProblem draws n points in d−1 dimensions with a ones column, P
// sampled gates and targets of c outputs (one-hot classes of a random
// two-layer teacher, or ±1 for c = 1).
func randomProblem(t testing.TB, seed uint64, n, d, np, c int, loss Loss, groups Groups, beta float64) *Problem {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 7))
	x := mat.NewDense(n, d, nil)
	for k := 0; k < n; k++ {
		row := x.RawRowView(k)
		for j := 0; j < d-1; j++ {
			row[j] = rng.NormFloat64()
		}
		row[d-1] = 1
	}
	gates, err := solvers.SamplePatterns(x, np, seed, 0)
	if err != nil {
		t.Fatal(err)
	}
	outs := max(c, 2)
	teacher := mat.NewDense(d, outs, nil)
	for i := range teacher.RawMatrix().Data {
		teacher.RawMatrix().Data[i] = rng.NormFloat64()
	}
	var sc mat.Dense
	sc.Mul(x, teacher)
	tg := mat.NewDense(n, c, nil)
	for k := 0; k < n; k++ {
		row := sc.RawRowView(k)
		best := 0
		for j := range row {
			row[j] = math.Abs(row[j]) + 0.3*rng.NormFloat64()
			if row[j] > row[best] {
				best = j
			}
		}
		if c == 1 {
			tg.Set(k, 0, float64(2*best-1))
		} else {
			tg.Set(k, best, 1)
		}
	}
	return &Problem{X: x, Gates: gates, Targets: tg, Loss: loss, Groups: groups, Beta: beta}
}

// The scalar squared program is eq. (ct_general) without constraints:
// CVXOPT's optimum is the reference.
func TestSolveAgainstCVXOPT(t *testing.T) {
	testprog.RequireCVXOPT(t)
	for trial, c := range []struct {
		n, d, np int
		beta     float64
	}{{40, 3, 4, 0.05}, {60, 4, 6, 0.01}, {50, 5, 8, 0.5}, {30, 2, 3, 1e-3}} {
		p := randomProblem(t, uint64(trial+1), c.n, c.d, c.np, 1, Squared, Joint, c.beta)
		res, err := Solve(context.Background(), p, Options{Tol: 1e-9})
		if err != nil {
			t.Fatal(err)
		}
		f := mat.NewDense(c.n, c.np*c.d, nil)
		for i, g := range p.Gates {
			for k, on := range g {
				if on {
					copy(f.RawRowView(k)[i*c.d:(i+1)*c.d], p.X.RawRowView(k))
				}
			}
		}
		sizes := make([]int, c.np)
		for i := range sizes {
			sizes[i] = c.d
		}
		ref := testprog.CVXOPTGeneral[general.Matrix](t, general.Matrix{M: f}, sizes, nil, mat.Col(nil, 0, p.Targets), solvers.SquaredLoss, c.beta)
		rel := math.Abs(res.Objective-ref.Objective) / math.Max(1, ref.Objective)
		t.Logf("trial %d: %.10f (CVXOPT %.10f, %s), certified %.1e in %d steps", trial, res.Objective, ref.Objective, ref.Status, res.Cert.Gap, res.Iterations)
		if rel > 1e-6 {
			t.Errorf("trial %d: optimum %.10g, CVXOPT %.10g", trial, res.Objective, ref.Objective)
		}
		if res.Cert.Lower > ref.Objective+1e-7*math.Max(1, ref.Objective) {
			t.Errorf("trial %d: lower bound %.10g above CVXOPT's optimum %.10g", trial, res.Cert.Lower, ref.Objective)
		}
		if res.Cert.Gap > 1e-9 {
			t.Errorf("trial %d: certified gap %.1e", trial, res.Cert.Gap)
		}
	}
}

// referenceISTA minimizes the program by plain proximal gradient in the
// Euclidean metric (independent of Solve's eigenbasis and secular
// equation), for a fixed number of steps.
func referenceISTA(p *Problem, steps int) float64 {
	n, d, np, c := p.Dims()
	w := make(Weights, np)
	for i := range w {
		w[i] = mat.NewDense(d, c, nil)
	}
	var xs mat.SymDense
	xs.SymOuterK(1, p.X.T())
	var ev mat.EigenSym
	ev.Factorize(&xs, false)
	vals := ev.Values(nil)
	step := 1 / (p.curvature() * float64(np) * vals[len(vals)-1])
	f := mat.NewDense(n, c, nil)
	g := mat.NewDense(n, c, nil)
	masked := mat.NewDense(n, c, nil)
	grad := mat.NewDense(d, c, nil)
	for it := 0; it < steps; it++ {
		f, _ = p.Predict(w)
		p.lossGrad(g, f)
		for i, gate := range p.Gates {
			for k := 0; k < n; k++ {
				row := masked.RawRowView(k)
				if gate[k] {
					copy(row, g.RawRowView(k))
				} else {
					clear(row)
				}
			}
			grad.Mul(p.X.T(), masked)
			w[i].Add(w[i], scaled(-step, grad))
			shrinkGroups(w[i], step*p.Beta, p.Groups)
		}
	}
	obj, _ := p.Objective(w)
	return obj
}

func scaled(a float64, m *mat.Dense) *mat.Dense {
	var s mat.Dense
	s.Scale(a, m)
	return &s
}

func shrinkGroups(b *mat.Dense, tau float64, g Groups) {
	r, c := b.Dims()
	if g == Joint {
		nrm := mat.Norm(b, 2)
		b.Scale(math.Max(0, 1-tau/math.Max(nrm, 1e-300)), b)
		return
	}
	for j := 0; j < c; j++ {
		col := b.Slice(0, r, j, j+1).(*mat.Dense)
		nrm := mat.Norm(col, 2)
		col.Scale(math.Max(0, 1-tau/math.Max(nrm, 1e-300)), col)
	}
}

// On small programs of every loss and grouping Solve certifies 1e-7 and its
// optimum is at or below a long independent proximal-gradient run.
func TestSolveConverges(t *testing.T) {
	for trial, c := range []struct {
		loss   Loss
		groups Groups
		c      int
		beta   float64
	}{{Squared, Joint, 3, 0.1}, {Squared, PerClass, 3, 0.05}, {Softmax, Joint, 3, 1e-3}, {Softmax, PerClass, 4, 3e-3}, {Squared, Joint, 1, 0.02}} {
		p := randomProblem(t, uint64(10+trial), 50, 4, 5, c.c, c.loss, c.groups, c.beta)
		res, err := Solve(context.Background(), p, Options{Tol: 1e-7})
		if err != nil {
			t.Fatal(err)
		}
		ref := referenceISTA(p, 20000)
		t.Logf("%v %v c=%d: %.9f certified %.1e in %d steps; ISTA %.9f", c.loss, c.groups, c.c, res.Objective, res.Cert.Gap, res.Iterations, ref)
		if res.Cert.Gap > 1e-7 {
			t.Errorf("trial %d: certified gap %.1e", trial, res.Cert.Gap)
		}
		if res.Objective > ref+1e-7*math.Max(1, math.Abs(ref)) {
			t.Errorf("trial %d: objective %.10g above ISTA's %.10g", trial, res.Objective, ref)
		}
		if res.Cert.Lower > ref+1e-9 {
			t.Errorf("trial %d: lower bound %.10g above a feasible objective %.10g", trial, res.Cert.Lower, ref)
		}
		obj, _ := p.Objective(res.W)
		if math.Abs(obj-res.Objective) > 1e-9*math.Max(1, math.Abs(obj)) {
			t.Errorf("trial %d: returned objective %.12g, recomputed %.12g", trial, res.Objective, obj)
		}
	}
}

// Every lower bound of every certificate on 400 random programs (100 per
// loss and grouping, many βs) stays below the certified optimum.
func TestCertificateValid(t *testing.T) {
	trials := 100
	if testing.Short() {
		trials = 20
	}
	for _, loss := range []Loss{Squared, Softmax} {
		for _, groups := range []Groups{Joint, PerClass} {
			bad := 0
			for trial := 0; trial < trials; trial++ {
				rng := rand.New(rand.NewPCG(uint64(trial), 99))
				c := 2 + rng.IntN(3)
				beta := math.Pow(10, -3+3*rng.Float64())
				if loss == Softmax {
					beta /= 50
				}
				p := randomProblem(t, uint64(1000+trial), 10+rng.IntN(30), 2+rng.IntN(4), 1+rng.IntN(6), c, loss, groups, beta)
				tight, err := Solve(context.Background(), p, Options{Tol: 1e-10, MaxIter: 50000})
				if err != nil {
					t.Fatal(err)
				}
				loose, err := Solve(context.Background(), p, Options{Tol: 1e-2, CertifyEvery: 1})
				if err != nil {
					t.Fatal(err)
				}
				opt := tight.Objective
				for _, it := range append(loose.History, tight.History...) {
					if it.Cert.Lower > opt+1e-10*math.Max(1, math.Abs(opt)) || it.Cert.Lower > it.Cert.Upper+1e-12 {
						bad++
						t.Errorf("%v %v trial %d step %d: lower bound %.12g, optimum %.12g, upper %.12g", loss, groups, trial, it.Iter, it.Cert.Lower, opt, it.Cert.Upper)
						break
					}
				}
			}
			if bad > 0 {
				t.Errorf("%v %v: %d of %d programs with an invalid bound", loss, groups, bad, trials)
			}
		}
	}
}

// A warm start from a solution is certified at once; BetaMax gives the zero
// network.
func TestWarmStartAndBetaMax(t *testing.T) {
	p := randomProblem(t, 5, 40, 3, 4, 3, Softmax, Joint, 1e-3)
	res, err := Solve(context.Background(), p, Options{Tol: 1e-8})
	if err != nil {
		t.Fatal(err)
	}
	again, err := Solve(context.Background(), p, Options{Tol: 1e-8, Start: res.W})
	if err != nil {
		t.Fatal(err)
	}
	if again.Iterations > 1 || again.Objective > res.Objective*(1+1e-12) {
		t.Errorf("warm start took %d steps to %.12g (was %.12g)", again.Iterations, again.Objective, res.Objective)
	}
	bm, err := p.BetaMax()
	if err != nil {
		t.Fatal(err)
	}
	p.Beta = bm * 1.0001
	zero, err := Solve(context.Background(), p, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if zero.Cert.Gap > 1e-12 || zero.History[len(zero.History)-1].Active != 0 {
		t.Errorf("above β_max: gap %v, %d active gates", zero.Cert.Gap, zero.History[len(zero.History)-1].Active)
	}
	p.Beta = bm * 0.9
	some, err := Solve(context.Background(), p, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if some.History[len(some.History)-1].Active == 0 {
		t.Error("below β_max the solution is zero")
	}
}

func TestBadInput(t *testing.T) {
	good := func() *Problem { return randomProblem(t, 3, 20, 3, 2, 3, Softmax, Joint, 0.01) }
	for _, c := range []struct {
		edit func(p *Problem)
		want string
	}{
		{func(p *Problem) { p.Beta = 0 }, "β = 0"},
		{func(p *Problem) { p.Beta = math.NaN() }, "β = NaN"},
		{func(p *Problem) { p.X.Set(1, 1, math.Inf(1)) }, "X"},
		{func(p *Problem) { p.Targets.Set(0, 0, 0.5) }, "sums to"},
		{func(p *Problem) { p.Gates[1] = p.Gates[1][:5] }, "gate 1 has 5 entries"},
		{func(p *Problem) { p.Gates = nil }, "no gates"},
		{func(p *Problem) { p.Loss = 7 }, "unknown loss"},
		{func(p *Problem) { p.Groups = 9 }, "unknown grouping"},
		{func(p *Problem) { p.Targets = mat.NewDense(3, 3, nil) }, "X has 20 rows, the targets 3"},
	} {
		p := good()
		c.edit(p)
		_, err := Solve(context.Background(), p, Options{})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("error %v, want one containing %q", err, c.want)
		}
	}
	p := good()
	if _, err := Solve(context.Background(), p, Options{Start: Weights{mat.NewDense(2, 2, nil)}}); err == nil || !strings.Contains(err.Error(), "warm start") {
		t.Errorf("bad warm start: %v", err)
	}
	// Options out of range, for every method and Auto's choice.
	for _, o := range []Options{{Tol: math.Inf(1)}, {Tol: 1}, {Tol: -1e-3}, {Rank: -2}, {MaxIter: -1}} {
		for _, m := range []Method{Auto, ProxGradient, Newton, Kernel} {
			sq := randomProblem(t, 3, 20, 3, 2, 1, Squared, Joint, 0.01)
			if _, err := SolveWith(context.Background(), sq, m, o); err == nil || !strings.Contains(err.Error(), "need") {
				t.Errorf("%v with %+v: %v", m, o, err)
			}
		}
	}
	// A warm start with a NaN is refused by every method.
	sq := randomProblem(t, 3, 20, 3, 2, 1, Squared, Joint, 0.01)
	nanStart := Weights{mat.NewDense(3, 1, nil), mat.NewDense(3, 1, []float64{0, math.NaN(), 0})}
	for _, m := range []Method{ProxGradient, Newton, Kernel} {
		if _, err := SolveWith(context.Background(), sq, m, Options{Start: nanStart}); err == nil || !strings.Contains(err.Error(), "warm start") || !strings.Contains(err.Error(), "NaN") {
			t.Errorf("%v: warm start with a NaN: %v", m, err)
		}
	}
	if _, err := OneHot([]float64{0, 1, 3}, 3); err == nil || !strings.Contains(err.Error(), "label 2 is 3") {
		t.Errorf("OneHot: %v", err)
	}
	if _, err := OneHot([]float64{0, 1, 1}, 1<<45); err == nil || !strings.Contains(err.Error(), "classes for 3 labels") {
		t.Errorf("OneHot with 2⁴⁵ classes: %v", err)
	}
}

// Cancelling returns the certified result so far with the context's error.
func TestCancel(t *testing.T) {
	p := randomProblem(t, 8, 60, 4, 6, 3, Squared, Joint, 1e-4)
	ctx, cancel := context.WithCancel(context.Background())
	steps := 0
	res, err := Solve(ctx, p, Options{Tol: 1e-14, CertifyEvery: 5, Progress: func(it Iterate) {
		if steps++; steps == 3 {
			cancel()
		}
	}})
	if err != context.Canceled || res == nil || res.Iterations == 0 || len(res.W) != 6 {
		t.Fatalf("cancel: err %v, result %+v", err, res)
	}
	obj, _ := p.Objective(res.W)
	if math.Abs(obj-res.Objective) > 1e-9*obj || res.Cert.Lower > obj {
		t.Fatalf("result after cancel: objective %v recomputed %v, lower %v", res.Objective, obj, res.Cert.Lower)
	}
}

// The network of a solution predicts on the training rows what the program
// does, through its gate vectors.
func TestNetworkMatchesProgram(t *testing.T) {
	for _, bias := range []bool{false, true} {
		p := randomProblem(t, 21, 40, 4, 5, 3, Softmax, Joint, 1e-3)
		raw := p.X
		if !bias {
			raw = mat.DenseCopyOf(p.X.Slice(0, 40, 0, 3))
			p.X = raw
		}
		gates, gv, err := solvers.SampleGates(p.X, 5, 3, 0)
		if err != nil {
			t.Fatal(err)
		}
		p.Gates = gates
		res, err := Solve(context.Background(), p, Options{Tol: 1e-6})
		if err != nil {
			t.Fatal(err)
		}
		in := p.X
		if bias {
			in = mat.DenseCopyOf(p.X.Slice(0, 40, 0, 3))
		}
		net, err := NewNetwork(gv, res.W, bias)
		if err != nil {
			t.Fatal(err)
		}
		got, err := net.Scores(in)
		if err != nil {
			t.Fatal(err)
		}
		want, _ := p.Predict(res.W)
		if !mat.EqualApprox(got, want, 1e-10) {
			t.Fatalf("bias %v: network scores differ from the program's predictions", bias)
		}
		cls, _ := net.Predict(in)
		if len(cls) != 40 || cls[0] != Decide(want)[0] {
			t.Fatalf("classes %v", cls[:3])
		}
		if _, err := net.Scores(mat.NewDense(2, 7, nil)); err == nil || !strings.Contains(err.Error(), "7 features") {
			t.Fatalf("wrong width: %v", err)
		}
	}
}

// A reduced basis keeps the certificate of the full program: its lower
// bound stays below the full optimum, and the full rank gives the full
// optimum.
func TestRank(t *testing.T) {
	p := randomProblem(t, 31, 60, 6, 5, 3, Softmax, Joint, 1e-3)
	full, err := Solve(context.Background(), p, Options{Tol: 1e-8})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range []int{2, 4, 6} {
		res, err := Solve(context.Background(), p, Options{Tol: 1e-8, Rank: r, MaxIter: 20000})
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("rank %d: objective %.9f (full %.9f), lower %.9f, gap %.1e", r, res.Objective, full.Objective, res.Cert.Lower, res.Cert.Gap)
		if res.Cert.Lower > full.Objective+1e-9 || res.Objective < full.Objective-1e-9 {
			t.Errorf("rank %d: bracket [%v, %v] excludes the optimum %v", r, res.Cert.Lower, res.Objective, full.Objective)
		}
		if obj, _ := p.Objective(res.W); math.Abs(obj-res.Objective) > 1e-9*obj {
			t.Errorf("rank %d: weights' objective %v, reported %v", r, obj, res.Objective)
		}
	}
	if _, err := Solve(context.Background(), p, Options{Rank: -1}); err == nil {
		t.Error("negative rank accepted")
	}
}

// The cone decomposition gives a ReLU network with the gated solution's
// outputs on the training rows and an objective at or above the gated
// optimum.
func TestDecompose(t *testing.T) {
	for trial, c := range []struct {
		loss   Loss
		groups Groups
		c      int
	}{{Squared, Joint, 1}, {Softmax, Joint, 3}, {Squared, PerClass, 3}, {Softmax, PerClass, 4}} {
		p := randomProblem(t, uint64(40+trial), 50, 4, 6, c.c, c.loss, c.groups, 1e-2)
		gates, gv, err := solvers.SampleGates(p.X, 6, uint64(trial), 0)
		if err != nil {
			t.Fatal(err)
		}
		p.Gates = gates
		res, err := Solve(context.Background(), p, Options{Tol: 1e-8})
		if err != nil {
			t.Fatal(err)
		}
		dec, err := Decompose(p, gv, res.W, true)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%v %v c=%d: gated %.8f, ReLU network %.8f (gap %.2e), %d neurons, mismatch %.1e", c.loss, c.groups, c.c, dec.GatedObjective, dec.Objective, dec.Gap, dec.Network.Width(), dec.Mismatch)
		if dec.Mismatch > 1e-9 || dec.Objective < res.Cert.Lower-1e-9 || math.Abs(dec.GatedObjective-res.Objective) > 1e-9 {
			t.Errorf("trial %d: mismatch %v, ReLU objective %v below the certified lower bound %v", trial, dec.Mismatch, dec.Objective, res.Cert.Lower)
		}
		raw := mat.DenseCopyOf(p.X.Slice(0, 50, 0, 3))
		got, err := dec.Network.Scores(raw)
		if err != nil {
			t.Fatal(err)
		}
		want, _ := p.Predict(res.W)
		if !mat.EqualApprox(got, want, 1e-9) {
			t.Errorf("trial %d: the ReLU network's outputs on raw rows differ", trial)
		}
	}
}

// Newton's method reaches the proximal-gradient optimum of squared-loss
// programs (1 and 3 outputs, both groupings, βs where groups vanish),
// certified.
func TestSolveNewton(t *testing.T) {
	for trial, c := range []struct {
		c      int
		groups Groups
		beta   float64
	}{{1, Joint, 0.02}, {3, Joint, 0.1}, {3, PerClass, 0.05}, {1, Joint, 3}, {3, PerClass, 2}} {
		p := randomProblem(t, uint64(60+trial), 60, 4, 6, c.c, Squared, c.groups, c.beta)
		ref, err := Solve(context.Background(), p, Options{Tol: 1e-9, MaxIter: 50000})
		if err != nil {
			t.Fatal(err)
		}
		res, err := SolveNewton(context.Background(), p, Options{Tol: 1e-9})
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("c=%d %v β=%v: Newton %.10f certified %.1e in %d steps (%d active); FISTA %.10f in %d", c.c, c.groups, c.beta, res.Objective, res.Cert.Gap, res.Iterations, res.History[len(res.History)-1].Active, ref.Objective, ref.Iterations)
		if res.Cert.Gap > 1e-9 || math.Abs(res.Objective-ref.Objective) > 1e-8*math.Max(1, ref.Objective) {
			t.Errorf("trial %d: Newton %.12g (gap %.1e), FISTA %.12g", trial, res.Objective, res.Cert.Gap, ref.Objective)
		}
	}
	p := randomProblem(t, 1, 20, 3, 2, 3, Softmax, Joint, 0.01)
	if _, err := SolveNewton(context.Background(), p, Options{}); err == nil || !strings.Contains(err.Error(), "squared") {
		t.Errorf("softmax: %v", err)
	}
}
