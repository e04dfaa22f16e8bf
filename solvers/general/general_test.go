package general_test

import (
	"context"
	"math"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/convexnn/convexnn/solvers"
	"github.com/convexnn/convexnn/solvers/admm"
	"github.com/convexnn/convexnn/solvers/certify"
	"github.com/convexnn/convexnn/solvers/general"
	"github.com/convexnn/convexnn/solvers/internal/testprog"
	"github.com/convexnn/convexnn/solvers/ipm"
	"gonum.org/v1/gonum/floats"
	"gonum.org/v1/gonum/mat"
)

// instance returns a small random two-layer program with the loss's labels.
func instance(t *testing.T, loss solvers.Loss, seed uint64, n, d, np int) *solvers.Program {
	base := solvers.HingeLoss
	if loss == solvers.SquaredLoss {
		base = solvers.SquaredLoss
	}
	p := testprog.Random(t, testprog.Instance{N: n, D: d, P: np, Loss: base, Bias: true, Beta: 1e-2, Seed: seed})
	p.Loss = loss
	if loss == solvers.BCELoss {
		for k, y := range p.Y {
			p.Y[k] = (y + 1) / 2
		}
	}
	if loss == solvers.HingeLoss || loss == solvers.BCELoss || loss == solvers.LogisticLoss {
		p.Beta = 1e-3
	}
	return p
}

func maxRel(a, b []float64) float64 {
	var m, s float64
	for i := range a {
		m = math.Max(m, math.Abs(a[i]-b[i]))
		s = math.Max(s, math.Abs(b[i]))
	}
	return m / math.Max(1, s)
}

// The two-layer program is an instance: the general ADMM takes the same
// steps as the paper's closed-form ADMM (solvers/admm) on it.
func TestTwoLayerIsAnInstance(t *testing.T) {
	for seed := uint64(1); seed <= 4; seed++ {
		p := instance(t, solvers.SquaredLoss, seed, 40, 4, 5)
		gp, err := general.TwoLayer(p)
		if err != nil {
			t.Fatal(err)
		}
		g, err := general.New(gp, general.Options{Rho: 0.1}, nil)
		if err != nil {
			t.Fatal(err)
		}
		cf, err := admm.NewClosedForm(p, admm.Options{Rho: 0.1, Route: admm.RouteDirect}, nil)
		if err != nil {
			t.Fatal(err)
		}
		for it := 0; it < 300; it++ {
			g.Step()
			cf.Step()
		}
		st, ref := g.State, cf.State
		cat := func(a, b []float64) []float64 { return append(append([]float64(nil), a...), b...) }
		for _, c := range []struct {
			name     string
			got, ref []float64
		}{
			{"u", cat(st.U, st.Up), ref.U}, {"w", cat(st.W, st.Wp), ref.V}, {"s", cat(st.S, st.Sp), ref.S},
			{"λ", cat(st.Lam, st.Lamp), ref.Lambda}, {"ν", cat(st.Nu, st.Nup), ref.Nu},
		} {
			if d := maxRel(c.got, c.ref); d > 1e-9 {
				t.Errorf("seed %d: %s differs from the closed-form ADMM's by %.2e after 300 steps", seed, c.name, d)
			}
		}
		obj, err := gp.Objective(st.W, st.Wp)
		if err != nil {
			t.Fatal(err)
		}
		want, err := p.Objective(general.TwoLayerWeights(p, st.W, st.Wp))
		if err != nil {
			t.Fatal(err)
		}
		if math.Abs(obj-want) > 1e-12*math.Max(1, want) {
			t.Errorf("seed %d: objective %v, the two-layer program's %v", seed, obj, want)
		}
	}
}

// reference returns a certified enclosure of p's optimum, 1e-8 wide.
func reference(t *testing.T, p *solvers.Program) certify.Bound {
	ctx := context.Background()
	if p.Loss == solvers.SquaredLoss || p.Loss == solvers.HingeLoss {
		_, b, err := ipm.SolveToGap(ctx, p, solvers.Perturbation{}, 1e-8, ipm.Options{}, nil)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	nt, err := ipm.NewNewton(p, 1e-8, ipm.Options{}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	last, err := nt.Solve(ctx, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	return last.Bound
}

// The certificate encloses the optimum at every point ADMM passes through,
// for every loss, on 100 random programs, and closes as ADMM converges.
func TestBoundEnclosesTheOptimum(t *testing.T) {
	losses := []solvers.Loss{solvers.SquaredLoss, solvers.HingeLoss, solvers.BCELoss, solvers.LogisticLoss}
	finals, starts, subopt := map[solvers.Loss][]float64{}, map[solvers.Loss][]float64{}, map[solvers.Loss][]float64{}
	for trial := 0; trial < 100; trial++ {
		loss := losses[trial%4]
		p := instance(t, loss, uint64(100+trial), 20+trial%17, 2+trial%3, 2+trial%5)
		ref := reference(t, p)
		gp, err := general.TwoLayer(p)
		if err != nil {
			t.Fatal(err)
		}
		// Odd trials run on equilibrated constraints (the same program).
		a, err := general.New(gp, general.Options{Equilibrate: trial%2 == 1, Relax: []float64{0, 1.8}[trial/2%2]}, nil)
		if err != nil {
			t.Fatal(err)
		}
		check := func(b general.Bound, when string) {
			tol := 1e-9 * math.Max(1, math.Abs(ref.Upper))
			if b.Lower > ref.Upper+tol || b.Upper < ref.Lower-tol {
				t.Errorf("trial %d (%v) %s: bound [%.12g, %.12g] misses the optimum in [%.12g, %.12g]", trial, loss, when, b.Lower, b.Upper, ref.Lower, ref.Upper)
			}
			if v, err := gp.Violation(b.W, b.Wp); err != nil || v > 0 {
				t.Errorf("trial %d %s: the upper bound's point violates the constraints by %v (%v)", trial, when, v, err)
			}
		}
		for _, steps := range []int{0, 3, 30, 300, 2000} {
			for a.State.Iter < steps {
				a.Step()
			}
			b, err := a.Bound()
			if err != nil {
				t.Fatal(err)
			}
			check(b, "after "+strconv.Itoa(steps)+" steps")
			switch steps {
			case 30:
				starts[loss] = append(starts[loss], b.Gap)
			case 2000:
				finals[loss] = append(finals[loss], b.Gap)
				subopt[loss] = append(subopt[loss], (b.Upper-ref.Lower)/math.Max(1e-12, math.Abs(ref.Lower)))
			}
		}
		// Any point: the ADMM's u (infeasible), a perturbed one, and u
		// with its first group a numerically zero vector of random
		// direction (restored to zero).
		tiny := append([]float64(nil), a.State.U...)
		big := floats.Norm(tiny, math.Inf(1))
		k := gp.Groups[0].Size
		for l := range k {
			tiny[l] = 1e-12 * big * math.Cos(float64(trial+7*l))
		}
		for i, pt := range [][2][]float64{{a.State.U, a.State.Up}, {scaled(a.State.U, -1), scaled(a.State.Wp, 3)}, {tiny, a.State.Up}} {
			b, err := general.Certify(gp, pt[0], pt[1], 0)
			if err != nil {
				t.Fatal(err)
			}
			check(b, "at point "+strconv.Itoa(i))
		}
	}
	median := func(x []float64) float64 {
		x = append([]float64(nil), x...)
		sort.Float64s(x)
		return x[len(x)/2]
	}
	for _, loss := range losses {
		g0, g, so := median(starts[loss]), median(finals[loss]), median(subopt[loss])
		t.Logf("%v: median certified gap after 30 steps %.1e, after 2000 %.1e; median relative excess of the feasible point over the optimum %.1e", loss, g0, g, so)
		// The squared loss's ADMM (closed form) converges fast; the loss
		// split of the others slowly (the reason for the interior-point
		// and Newton methods), but its certificate must close as it goes.
		if loss == solvers.SquaredLoss && g > 1e-3 {
			t.Errorf("%v: median certified gap after 2000 ADMM steps %.1e > 1e-3: the certificate does not close", loss, g)
		}
		if g > g0/2 || so > 0.05 {
			t.Errorf("%v: median certified gap %.1e after 2000 steps (%.1e after 30), median excess %.1e: ADMM or its certificate does not converge", loss, g, g0, so)
		}
	}
}

func scaled(x []float64, a float64) []float64 {
	out := make([]float64, len(x))
	for i, v := range x {
		out[i] = a * v
	}
	return out
}

// A solver made from a snapshot takes exactly the steps of an
// uninterrupted run, and a cancelled Solve keeps its steps.
func TestResumeIsExact(t *testing.T) {
	for _, loss := range []solvers.Loss{solvers.SquaredLoss, solvers.HingeLoss, solvers.BCELoss} {
		p := instance(t, loss, 7, 30, 3, 4)
		gp, err := general.TwoLayer(p)
		if err != nil {
			t.Fatal(err)
		}
		full, _ := general.New(gp, general.Options{}, nil)
		half, _ := general.New(gp, general.Options{}, nil)
		for i := 0; i < 80; i++ {
			full.Step()
		}
		for i := 0; i < 40; i++ {
			half.Step()
		}
		snap := half.Snapshot()
		res, err := general.New(gp, general.Options{}, &snap)
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 40; i++ {
			res.Step()
		}
		if res.State.Iter != 80 {
			t.Fatalf("resumed at iteration %d", res.State.Iter)
		}
		for i := range full.State.U {
			if full.State.U[i] != res.State.U[i] || full.State.Wp[i] != res.State.Wp[i] || full.State.Lam[i] != res.State.Lam[i] {
				t.Fatalf("%v: resumed run differs at coordinate %d", loss, i)
			}
		}
		ctx, cancel := context.WithCancel(context.Background())
		n := 0
		_, err = res.Solve(ctx, 100, 0, 0, func(general.Record) {
			if n++; n == 5 {
				cancel()
			}
		})
		if err == nil || !strings.Contains(err.Error(), "stopped after 85 iterations") || res.State.Iter != 85 {
			t.Errorf("%v: cancelled Solve: %v at iteration %d", loss, err, res.State.Iter)
		}
	}
}

func TestBadInput(t *testing.T) {
	p := instance(t, solvers.SquaredLoss, 3, 10, 3, 2)
	gp, err := general.TwoLayer(p)
	if err != nil {
		t.Fatal(err)
	}
	bad := func(f func(q *general.Program)) *general.Program {
		q := *gp
		q.Groups = append([]general.Group(nil), gp.Groups...)
		f(&q)
		return &q
	}
	for _, c := range []struct {
		p    *general.Program
		want string
	}{
		{bad(func(q *general.Program) { q.F = nil }), "no operator F"},
		{bad(func(q *general.Program) { q.Groups = nil }), "no groups"},
		{bad(func(q *general.Program) { q.Groups[0].Size = 0 }), "group 0 has size 0"},
		{bad(func(q *general.Program) { q.Groups[1].Size = 2 }), "its constraint block G_g has 3 columns"},
		{bad(func(q *general.Program) { q.Groups = q.Groups[:1] }), "F has 6 columns, the groups 3"},
		{bad(func(q *general.Program) { q.Y = q.Y[:4] }), "y has 4 entries"},
		{bad(func(q *general.Program) { q.Y = append([]float64{math.NaN()}, q.Y[1:]...) }), "y[0] is NaN"},
		{bad(func(q *general.Program) { q.Loss = solvers.HingeLoss }), "needs labels"},
		{bad(func(q *general.Program) { q.Beta = 0 }), "β = 0"},
	} {
		if _, err := general.New(c.p, general.Options{}, nil); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("error %v, want one naming %q", err, c.want)
		}
	}
	if _, err := general.New(gp, general.Options{Relax: 2}, nil); err == nil || !strings.Contains(err.Error(), "0 < α < 2") {
		t.Errorf("relaxation 2: %v", err)
	}
	if _, err := general.New(gp, general.Options{Rho: math.NaN()}, nil); err == nil || !strings.Contains(err.Error(), "NaN") {
		t.Errorf("ρ = NaN: %v", err)
	}
	st := general.State{U: make([]float64, 5)}
	if _, err := general.New(gp, general.Options{}, &st); err == nil || !strings.Contains(err.Error(), "state field U has 5 entries") {
		t.Errorf("short state: %v", err)
	}
	if _, err := general.Certify(gp, make([]float64, 2), make([]float64, 6), 0); err == nil || !strings.Contains(err.Error(), "point has 2 and 6 coordinates") {
		t.Errorf("short point: %v", err)
	}
	big := &general.Program{F: general.Matrix{M: mat.NewDense(2, general.MaxDense+1, nil)}, Groups: []general.Group{{Size: general.MaxDense + 1}}, Y: []float64{1, 2}, Loss: solvers.SquaredLoss, Beta: 1}
	if _, err := general.New(big, general.Options{}, nil); err == nil || !strings.Contains(err.Error(), "GB") {
		t.Errorf("too large: %v", err)
	}
}

// The dense interior-point method on the general form reaches the
// two-layer interior-point optimum, with a certificate that closes.
func TestInteriorPointMatchesTwoLayer(t *testing.T) {
	for trial := 0; trial < 6; trial++ {
		loss := []solvers.Loss{solvers.SquaredLoss, solvers.HingeLoss}[trial%2]
		p := instance(t, loss, uint64(300+trial), 25, 3, 4)
		ref := reference(t, p)
		gp, err := general.TwoLayer(p)
		if err != nil {
			t.Fatal(err)
		}
		res, err := general.SolveInteriorPoint(context.Background(), gp, 1e-10)
		if err != nil {
			t.Fatal(err)
		}
		if rel := math.Abs(res.Objective-ref.Upper) / math.Max(1, ref.Upper); rel > 1e-7 {
			t.Errorf("trial %d (%v): objective %.12g, the two-layer optimum %.12g", trial, loss, res.Objective, ref.Upper)
		}
		if res.Bound.Gap > 1e-6 {
			t.Errorf("trial %d (%v): certified gap %.1e > 1e-6", trial, loss, res.Bound.Gap)
		}
	}
}

// An ADMM step allocates nothing (the house style's allocation-free inner
// loop), for the closed-form squared update and the loss split alike, with
// equilibration, over two-layer programs (F as Blocks, G as Matrix).
func TestStepAllocatesNothing(t *testing.T) {
	for _, loss := range []solvers.Loss{solvers.SquaredLoss, solvers.HingeLoss, solvers.LogisticLoss} {
		p := instance(t, loss, 3, 20, 3, 3)
		gp, err := general.TwoLayer(p)
		if err != nil {
			t.Fatal(err)
		}
		a, err := general.New(gp, general.Options{Equilibrate: true}, nil)
		if err != nil {
			t.Fatal(err)
		}
		a.Step()
		if n := testing.AllocsPerRun(20, a.Step); n != 0 {
			t.Errorf("%v: %v allocations per step", loss, n)
		}
	}
}
