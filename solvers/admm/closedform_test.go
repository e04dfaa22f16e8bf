package admm

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/convexnn/convexnn/internal/testenv"
	"github.com/convexnn/convexnn/solvers"
	"github.com/convexnn/convexnn/solvers/internal/testprog"
	"github.com/convexnn/convexnn/solvers/ipm"
	"gonum.org/v1/gonum/floats"
	"gonum.org/v1/gonum/mat"
)

// program returns a squared-loss program on Gaussian data whose
// patterns come from random directions, D_i = 1[X a_i ≥ 0], with labels of a
// planted two-layer network plus noise.
func program(n, d, np int, beta float64, seed uint64) *solvers.Program {
	return programBias(n, d, np, beta, seed, false)
}

// programBias is program, with a last column of ones in X (before
// the patterns are computed) when bias is set.
func programBias(n, d, np int, beta float64, seed uint64, bias bool) *solvers.Program {
	rng := rand.New(rand.NewPCG(seed, 17))
	x := mat.NewDense(n, d, nil)
	for i := 0; i < n; i++ {
		for j := 0; j < d; j++ {
			x.Set(i, j, rng.NormFloat64())
			if bias && j == d-1 {
				x.Set(i, j, 1)
			}
		}
	}
	p := &solvers.Program{X: x, Y: make([]float64, n), Loss: solvers.SquaredLoss, Beta: beta, Bias: bias}
	a := make([]float64, d)
	for i := 0; i < np; i++ {
		for j := range a {
			a[j] = rng.NormFloat64()
		}
		pat := make(solvers.Pattern, n)
		for k := 0; k < n; k++ {
			pat[k] = mat.Dot(x.RowView(k), mat.NewVecDense(d, a)) >= 0
		}
		p.D = append(p.D, pat)
	}
	for k := range p.Y {
		var f float64
		for j := 0; j < 3; j++ {
			z := x.At(k, j%d) - 0.5*x.At(k, (j+1)%d)
			f += math.Max(z, 0) * float64(1-j)
		}
		p.Y[k] = f + 0.1*rng.NormFloat64()
	}
	return p
}

// dense returns F (n×2dP) and G (2nP×2dP) of eq. (4) as dense matrices.
func dense(p *solvers.Program) (f, g *mat.Dense) {
	n, d, np := p.Dims()
	f = mat.NewDense(n, 2*d*np, nil)
	g = mat.NewDense(2*n*np, 2*d*np, nil)
	for j := 0; j < 2*np; j++ {
		i := j % np
		sign := 1.0
		if j >= np {
			sign = -1
		}
		for k := 0; k < n; k++ {
			sk := -1.0
			if p.D[i][k] {
				sk = 1
			}
			for q := 0; q < d; q++ {
				x := p.X.At(k, q)
				if p.D[i][k] {
					f.Set(k, j*d+q, sign*x)
				}
				g.Set(j*n+k, j*d+q, sk*x)
			}
		}
	}
	return f, g
}

// TestADMMRoutesMatchDenseSolve solves the u-update system (eq. uupdate)
// by the three routes and by a dense Cholesky factorization of the full
// 2dP×2dP matrix I + (1/ρ)FᵀF + GᵀG.
func TestADMMRoutesMatchDenseSolve(t *testing.T) {
	for _, c := range []struct {
		n, d, np int
		rho      float64
	}{{20, 3, 4, 0.1}, {20, 3, 4, 7}, {12, 2, 70, 0.5}, {9, 6, 3, 1e-3}} {
		p := program(c.n, c.d, c.np, 0.1, 5)
		x := p.X.RawMatrix()
		wood, err := newSystem(x, p.D, c.rho, "woodbury", 0, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		cg, err := newSystem(x, p.D, c.rho, "cg", 0, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		dir, err := newSystem(x, p.D, c.rho, "direct", 0, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		f, g := dense(p)
		m := 2 * c.d * c.np
		a := mat.NewSymDense(m, nil)
		var ftf, gtg mat.Dense
		ftf.Mul(f.T(), f)
		gtg.Mul(g.T(), g)
		for r := 0; r < m; r++ {
			for q := r; q < m; q++ {
				v := ftf.At(r, q)/c.rho + gtg.At(r, q)
				if r == q {
					v++
				}
				a.SetSym(r, q, v)
			}
		}
		var chol mat.Cholesky
		if !chol.Factorize(a) {
			t.Fatal("dense matrix not positive definite")
		}
		rng := rand.New(rand.NewPCG(uint64(c.np), 2))
		for trial := 0; trial < 3; trial++ {
			b := make([]float64, m)
			for q := range b {
				b[q] = rng.NormFloat64() * math.Pow(10, float64(rng.IntN(5)-2))
			}
			var ref mat.VecDense
			if err := chol.SolveVecTo(&ref, mat.NewVecDense(m, append([]float64(nil), b...))); err != nil {
				t.Fatal(err)
			}
			uw := append([]float64(nil), b...)
			wood.solve(uw, nil, 0)
			ud := append([]float64(nil), b...)
			dir.solve(ud, nil, 0)
			// CG from a random start, at the tolerance of a late ADMM
			// iteration (10⁻¹²).
			warm := make([]float64, m)
			for q := range warm {
				warm[q] = rng.NormFloat64()
			}
			uc := append([]float64(nil), b...)
			cg.solve(uc, warm, 1e7)
			if e := testprog.RelDiff(uc, ref.RawVector().Data); e > 1e-8 || cg.cgIters == 0 {
				t.Errorf("n=%d d=%d P=%d ρ=%v: cg and dense differ by %.2e after %d CG steps", c.n, c.d, c.np, c.rho, e, cg.cgIters)
			}
			if e := testprog.RelDiff(uw, ud); e > 1e-10 {
				t.Errorf("n=%d d=%d P=%d ρ=%v: woodbury and direct differ by %.2e", c.n, c.d, c.np, c.rho, e)
			}
			if e := testprog.RelDiff(ud, ref.RawVector().Data); e > 1e-10 {
				t.Errorf("n=%d d=%d P=%d ρ=%v: direct and dense differ by %.2e", c.n, c.d, c.np, c.rho, e)
			}
			if e := testprog.RelDiff(uw, ref.RawVector().Data); e > 1e-10 {
				t.Errorf("n=%d d=%d P=%d ρ=%v: woodbury and dense differ by %.2e", c.n, c.d, c.np, c.rho, e)
			}
		}
	}
}

// TestADMMSplitKProduct checks the chunked product against a plain one.
func TestADMMSplitKProduct(t *testing.T) {
	if solvers.BLAS() != solvers.GonumBLAS {
		t.Skipf("products are not split with %s", solvers.BLAS())
	}
	p := program(3*splitK+17, 5, 2, 0.1, 3)
	a, err := NewClosedForm(p, Options{Route: "direct"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(a.gw) == 0 {
		t.Fatal("the Gᵀ[s; ν] product was not split")
	}
	for q := range a.stk {
		a.stk[q] = math.Sin(float64(q))
	}
	got := make([]float64, len(a.gsn))
	a.gtStack(got)
	var want mat.Dense
	want.Mul(mat.NewDense(4*a.np, a.n, a.stk), p.X)
	if e := testprog.RelDiff(got, want.RawMatrix().Data); e > 1e-13 {
		t.Fatalf("split product differs by %.2e", e)
	}
}

// TestADMMStepReportsProgramQuantities compares a step's report with
// Program.Objective, Program.Violation and the non-convex objective of the
// network Program.Recover returns.
func TestADMMStepReportsProgramQuantities(t *testing.T) {
	p := programBias(40, 3, 6, 0.05, 4, true)
	a, err := NewClosedForm(p, Options{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k := 0; k < 25; k++ {
		s := a.Step()
		if k%8 != 0 {
			continue
		}
		wt := a.Weights()
		cv, _ := p.Objective(wt)
		viol, _ := p.Violation(wt)
		net, err := a.Network()
		if err != nil {
			t.Fatal(err)
		}
		nc, err := p.NonconvexObjective(net)
		if err != nil {
			t.Fatal(err)
		}
		if math.Abs(cv-s.ConvexObjective) > 1e-12*cv || math.Abs(nc-s.NonconvexObjective) > 1e-12*nc ||
			math.Abs(viol-s.Violation) > 1e-12*math.Max(1, viol) || math.Abs(s.Gap-math.Abs(nc-cv)) > 1e-12*cv {
			t.Fatalf("step %d reports l^{v,w}=%v l^{u,α}=%v viol=%v gap=%v; program gives %v, %v, %v", s.Iter, s.ConvexObjective, s.NonconvexObjective, s.Violation, s.Gap, cv, nc, viol)
		}
		// Residuals from the state, independently of the step's bookkeeping.
		f, g := dense(p)
		_ = f
		var gu mat.VecDense
		gu.MulVec(g, mat.NewVecDense(len(a.State.U), a.State.U))
		var r2 float64
		for q := range a.State.U {
			r2 += (a.State.U[q] - a.State.V[q]) * (a.State.U[q] - a.State.V[q])
		}
		for q, v := range a.State.S {
			r2 += (gu.AtVec(q) - v) * (gu.AtVec(q) - v)
		}
		if math.Abs(math.Sqrt(r2)-s.PrimalResidual) > 1e-10*math.Max(1, s.PrimalResidual) {
			t.Fatalf("primal residual %v, recomputed %v", s.PrimalResidual, math.Sqrt(r2))
		}
	}
}

// TestADMMStridedX checks that a data matrix that is a view into a wider
// one gives bit for bit the steps of a compact copy.
func TestADMMStridedX(t *testing.T) {
	p := program(25, 3, 4, 0.05, 6)
	wide := mat.NewDense(25, 7, nil)
	wide.Slice(0, 25, 2, 5).(*mat.Dense).Copy(p.X)
	q := *p
	q.X = wide.Slice(0, 25, 2, 5).(*mat.Dense)
	for _, route := range []Route{RouteWoodbury, RouteDirect, RouteCG} {
		_, h1 := run(t, p, Options{Route: route}, 10)
		_, h2 := run(t, &q, Options{Route: route}, 10)
		a, b := h1[9], h2[9]
		a.Seconds, b.Seconds = 0, 0
		if a != b {
			t.Fatalf("%s: strided X gives %+v, compact %+v", route, b, a)
		}
	}
}

// run takes k steps and returns them.
func run(t *testing.T, p *solvers.Program, o Options, k int) (*ClosedForm, []Step) {
	t.Helper()
	a, err := NewClosedForm(p, o, nil)
	if err != nil {
		t.Fatal(err)
	}
	hist := make([]Step, k)
	for i := range hist {
		hist[i] = a.Step()
	}
	return a, hist
}

// admmKKT returns the relative violations of the optimality conditions of
// eq. (4) at the ADMM state, with the unscaled multipliers ρλ (for u = v)
// and ρν (for G u = s), computed with dense F and G:
//
//	stationarity in u:  Fᵀ(Fu − y) + ρλ + ρGᵀν = 0
//	in v:               ρλ_j = β v_j/‖v_j‖ (v_j ≠ 0),  ‖ρλ_j‖ ≤ β (v_j = 0)
//	in s:               ρν ≤ 0,  ρν_k s_k = 0
//	feasibility:        u = v,  G u = s ≥ 0.
func admmKKT(p *solvers.Program, rho float64, st ClosedFormState) (stat, group, comp, feas float64) {
	f, g := dense(p)
	u := mat.NewVecDense(len(st.U), st.U)
	var r, grad, gtn, gu mat.VecDense
	r.MulVec(f, u)
	r.SubVec(&r, mat.NewVecDense(len(p.Y), p.Y))
	grad.MulVec(f.T(), &r)
	gtn.MulVec(g.T(), mat.NewVecDense(len(st.Nu), st.Nu))
	var fty mat.VecDense
	fty.MulVec(f.T(), mat.NewVecDense(len(p.Y), p.Y))
	scale := math.Max(fty.Norm(2), p.Beta)
	var s2 float64
	for q := range st.U {
		v := grad.AtVec(q) + rho*st.Lambda[q] + rho*gtn.AtVec(q)
		s2 += v * v
	}
	stat = math.Sqrt(s2) / scale
	_, d, _ := p.Dims()
	for j := 0; j < len(st.V)/d; j++ {
		vj, lj := st.V[j*d:(j+1)*d], st.Lambda[j*d:(j+1)*d]
		nv := floats.Norm(vj, 2)
		if nv > 0 {
			for q := range vj {
				group = math.Max(group, math.Abs(rho*lj[q]-p.Beta*vj[q]/nv)/p.Beta)
			}
		} else {
			group = math.Max(group, (rho*floats.Norm(lj, 2)-p.Beta)/p.Beta)
		}
	}
	var smax float64
	for _, v := range st.S {
		smax = math.Max(smax, v)
	}
	for q, nu := range st.Nu {
		comp = math.Max(comp, math.Max(rho*nu, 0)/scale)
		comp = math.Max(comp, math.Abs(rho*nu*st.S[q])/(scale*math.Max(smax, 1)))
	}
	gu.MulVec(g, u)
	for q := range st.U {
		feas = math.Max(feas, math.Abs(st.U[q]-st.V[q]))
	}
	for q, v := range st.S {
		feas = math.Max(feas, math.Abs(gu.AtVec(q)-v))
	}
	feas /= math.Max(1, floats.Norm(st.U, math.Inf(1)))
	return stat, group, comp, feas
}

// TestADMMConvergesToOptimum runs ADMM with two very different penalties ρ
// to tight accuracy, checks that they reach the same objective, that the
// KKT conditions hold at the end, that the gap l^{u,α} − l^{v,w} and the
// constraint violation vanish, that the error falls linearly (on a log
// scale), and that Solve with the default tolerances is within 1e-5.
func TestADMMConvergesToOptimum(t *testing.T) {
	testenv.SkipUnderRace(t, "32 000 iterations on two programs (13 s under -race); TestADMMMatchesInteriorPoint runs the same solver under it")
	p1 := program(60, 4, 10, 0.05, 1)
	p2 := programBias(40, 3, 7, 0.02, 2, true)
	for _, p := range []*solvers.Program{p1, p2} {
		converges(t, p)
	}
}

func converges(t *testing.T, p *solvers.Program) {
	const iters = 8000
	a1, h1 := run(t, p, Options{Rho: 0.1}, iters)
	a2, h2 := run(t, p, Options{Rho: 0.4, Gamma: 0.3}, 3*iters)
	f1, f2 := h1[len(h1)-1].ConvexObjective, h2[len(h2)-1].ConvexObjective
	if math.Abs(f1-f2) > 1e-7*f1 {
		t.Fatalf("ρ=0.1 reached %.12g, ρ=0.4 reached %.12g", f1, f2)
	}
	for _, c := range []struct {
		a   *ClosedForm
		rho float64
	}{{a1, 0.1}, {a2, 0.4}} {
		stat, group, comp, feas := admmKKT(p, c.rho, c.a.State)
		if stat > 1e-7 || group > 1e-7 || comp > 1e-7 || feas > 1e-7 {
			t.Fatalf("ρ=%v: KKT residuals: stationarity %.1e, groups %.1e, complementarity %.1e, feasibility %.1e", c.rho, stat, group, comp, feas)
		}
	}
	last := h1[len(h1)-1]
	if last.Gap > 1e-6*f1 || last.Violation > 1e-6 {
		t.Fatalf("final gap %.2e, violation %.2e", last.Gap, last.Violation)
	}
	nz := 0
	for _, v := range a1.vNorm {
		if v > 0 {
			nz++
		}
	}
	if nz == 0 || nz == len(a1.vNorm) {
		t.Fatalf("%d of %d groups active: the instance does not exercise the group threshold", nz, len(a1.vNorm))
	}

	// Linear convergence: least-squares slope of log10 error over the
	// part of the run above the rounding floor.
	fstar := f2
	var ks, ls []float64
	first := math.Abs(h1[9].ConvexObjective-fstar) / fstar
	lastErr := first
	for k, s := range h1 {
		e := math.Abs(s.ConvexObjective-fstar)/fstar + s.Violation
		if k >= iters/4 && e > 1e-11 {
			ks = append(ks, float64(k))
			ls = append(ls, math.Log10(e))
		}
		if k == 3*iters/4 {
			lastErr = e
		}
	}
	if len(ks) < iters/8 {
		t.Fatalf("only %d iterations above the rounding floor", len(ks))
	}
	_, slope := linearFit(ks, ls)
	t.Logf("ρ=0.1: error %.1e at step 10, %.1e at step %d; tail slope %.2e decades/step; %d active groups of %d", first, lastErr, 3*iters/4, slope, nz, len(a1.vNorm))
	if !(slope < 0) || lastErr > first/1e3 {
		t.Fatalf("no linear convergence: slope %v, error %.2e → %.2e", slope, first, lastErr)
	}

	// The residual test stops at an objective error of the order of
	// RelTol: 1e-7 is enough for 1e-5.
	for _, tol := range []float64{0, 1e-7} {
		sol, hist, err := solveClosedForm(context.Background(), p, Options{MaxIter: 20000, AbsTol: tol, RelTol: tol}, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		end := hist[len(hist)-1]
		if !sol.Converged(end) {
			t.Fatalf("tolerance %v: ClosedForm did not converge in %d steps", tol, len(hist))
		}
		e := math.Abs(end.ConvexObjective-fstar) / fstar
		t.Logf("ClosedForm with tolerances %v converged in %d steps to relative error %.1e", tol, len(hist), e)
		if tol != 0 && e > 1e-5 {
			t.Fatalf("ClosedForm stopped after %d steps at relative error %.2e", len(hist), e)
		}
	}
}

// linearFit returns the intercept and slope of the least-squares line.
func linearFit(x, y []float64) (c, m float64) {
	var mx, my float64
	for i := range x {
		mx += x[i]
		my += y[i]
	}
	mx /= float64(len(x))
	my /= float64(len(x))
	var sxy, sxx float64
	for i := range x {
		sxy += (x[i] - mx) * (y[i] - my)
		sxx += (x[i] - mx) * (x[i] - mx)
	}
	m = sxy / sxx
	return my - m*mx, m
}

// TestADMMMatchesInteriorPoint compares with ipm.Solve.
func TestADMMMatchesInteriorPoint(t *testing.T) {
	p := program(50, 3, 8, 0.05, 9)
	res, err := ipm.Solve(context.Background(), p, ipm.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, route := range []Route{RouteAuto, RouteCG} {
		_, hist, err := solveClosedForm(context.Background(), p, Options{MaxIter: 20000, AbsTol: 1e-9, RelTol: 1e-9, Route: route}, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		got := hist[len(hist)-1].ConvexObjective
		if math.Abs(got-res.Objective) > 1e-5*res.Objective {
			t.Fatalf("route %q: ADMM %.10g after %d steps, interior point %.10g", route, got, len(hist), res.Objective)
		}
		t.Logf("route %q: ADMM %.10g after %d steps, interior point %.10g", route, got, len(hist), res.Objective)
	}
	_, hist, err := solveClosedForm(context.Background(), p, Options{MaxIter: 20000, AbsTol: 1e-9, RelTol: 1e-9}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	got := hist[len(hist)-1].ConvexObjective
	t.Logf("ADMM %.10g (%d steps), interior point %.10g: relative difference %.1e", got, len(hist), res.Objective, math.Abs(got-res.Objective)/res.Objective)
}

// TestADMMRelaxed checks the over-relaxed ADMM (Options.Relax): it
// converges to the interior-point optimum, and on this program it meets
// the residual test in fewer steps than the paper's unrelaxed ADMM; the
// other ADMM variants refuse the option.
func TestADMMRelaxed(t *testing.T) {
	p := program(50, 3, 8, 0.05, 9)
	res, err := ipm.Solve(context.Background(), p, ipm.Options{})
	if err != nil {
		t.Fatal(err)
	}
	steps := map[float64]int{}
	for _, alpha := range []float64{1, 1.5, 1.8} {
		_, hist, err := solveClosedForm(context.Background(), p, Options{MaxIter: 20000, AbsTol: 1e-9, RelTol: 1e-9, Relax: alpha}, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		last := hist[len(hist)-1]
		if got := last.ConvexObjective; math.Abs(got-res.Objective) > 1e-5*res.Objective || last.Violation > 1e-6 {
			t.Fatalf("α = %g: ADMM %.10g (violation %.1e) after %d steps, interior point %.10g", alpha, got, last.Violation, len(hist), res.Objective)
		}
		steps[alpha] = len(hist)
		t.Logf("α = %g: %d steps to the residual tolerance 1e-9, objective %.10g (interior point %.10g)", alpha, len(hist), last.ConvexObjective, res.Objective)
	}
	if !(steps[1.8] < steps[1]) {
		t.Errorf("over-relaxation α = 1.8 took %d steps, the unrelaxed ADMM %d", steps[1.8], steps[1])
	}
	hinge := *p
	hinge.Loss, hinge.Y = solvers.HingeLoss, make([]float64, len(p.Y))
	for k, v := range p.Y {
		hinge.Y[k] = math.Copysign(1, v)
	}
	if _, err := NewSplit(&hinge, Options{Relax: 1.5}, nil); err == nil || !strings.Contains(err.Error(), "always over-relaxes with its own α = 1.6") {
		t.Errorf("Split with Relax: error %v", err)
	}
	if _, err := NewRBCD(p, Options{Relax: 1.5}, nil); err == nil || !strings.Contains(err.Error(), "no over-relaxation") {
		t.Errorf("ADMM-RBCD with Relax: error %v", err)
	}
	if _, err := NewRobust(&hinge, solvers.Perturbation{Eps: 0.01}, Options{Relax: 1.5}, nil); err == nil || !strings.Contains(err.Error(), "always over-relaxes with its own α = 1.6") {
		t.Errorf("Robust with Relax: error %v", err)
	}
}

// TestADMMExactResume checks that 30 steps, a JSON round trip of the state
// and 20 more steps equal 50 uninterrupted steps bit for bit, on both routes.
func TestADMMExactResume(t *testing.T) {
	p := program(30, 3, 5, 0.05, 7)
	for _, o := range []Options{{Route: "woodbury"}, {Route: "direct"}, {Route: "cg"}, {Route: "direct", Relax: 1.8}} {
		route := fmt.Sprintf("%s, α = %g", o.Route, o.Relax)
		whole, hw := run(t, p, o, 50)
		part, _ := run(t, p, o, 30)
		st := savedState(t, part).(*ClosedFormState)
		rest, err := NewClosedForm(p, o, st)
		if err != nil {
			t.Fatal(err)
		}
		var hr Step
		for k := 0; k < 20; k++ {
			hr = rest.Step()
		}
		for _, f := range []struct {
			name string
			a, b []float64
		}{{"U", whole.State.U, rest.State.U}, {"V", whole.State.V, rest.State.V}, {"S", whole.State.S, rest.State.S},
			{"Lambda", whole.State.Lambda, rest.State.Lambda}, {"Nu", whole.State.Nu, rest.State.Nu}} {
			for q := range f.a {
				if math.Float64bits(f.a[q]) != math.Float64bits(f.b[q]) {
					t.Fatalf("%s: resumed %s[%d] = %v, uninterrupted %v", route, f.name, q, f.b[q], f.a[q])
				}
			}
		}
		hw50 := hw[49]
		hw50.Seconds, hr.Seconds = 0, 0
		if hw50 != hr || rest.State.Iter != 50 {
			t.Fatalf("%s: resumed step %+v, uninterrupted %+v", route, hr, hw50)
		}
	}
}

func TestADMMBadInput(t *testing.T) {
	p := program(10, 2, 3, 0.1, 1)
	hinge := *p
	hinge.Loss = solvers.HingeLoss
	hinge.Y = make([]float64, 10)
	for k := range hinge.Y {
		hinge.Y[k] = 1
	}
	okState := func() *ClosedFormState {
		return &ClosedFormState{U: make([]float64, 12), V: make([]float64, 12), Lambda: make([]float64, 12), S: make([]float64, 60), Nu: make([]float64, 60)}
	}
	short := okState()
	short.S = short.S[:59]
	nan := okState()
	nan.V[3] = math.NaN()
	neg := okState()
	neg.Iter = -1
	cases := []struct {
		p    *solvers.Program
		o    Options
		st   *ClosedFormState
		want string
	}{
		{&hinge, Options{}, nil, "squared loss only"},
		{p, Options{Rho: -1}, nil, "penalty ρ = -1"},
		{p, Options{Rho: math.NaN()}, nil, "penalty ρ"},
		{p, Options{Gamma: -0.5}, nil, "dual step γ_a = -0.5"},
		{p, Options{Rho: 0.1, Gamma: 1}, nil, "need not converge"},
		{p, Options{MaxIter: -3}, nil, "MaxIter"},
		{p, Options{AbsTol: -1}, nil, "tolerances"},
		{p, Options{Route: "cholesky"}, nil, `route "cholesky"`},
		{p, Options{Relax: 2}, nil, "over-relaxation α = 2, need 0 < α < 2"},
		{p, Options{Relax: -0.5}, nil, "over-relaxation α = -0.5"},
		{p, Options{Relax: math.NaN()}, nil, "over-relaxation α = NaN"},
		{p, Options{Relax: 1.5, Rho: 0.1, Gamma: 0.05}, nil, "needs the unit dual step"},
		{p, Options{}, short, "59 entries in S, the program (n=10, d=2, P=3) needs 60"},
		{p, Options{}, nan, "V[3] = NaN"},
		{p, Options{}, neg, "iteration -1"},
		{nil, Options{}, nil, "no program"},
		{&solvers.Program{X: p.X, Y: p.Y, Beta: 0.1}, Options{}, nil, "no activation patterns"},
	}
	for _, c := range cases {
		_, err := NewClosedForm(c.p, c.o, c.st)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: error %v, want one containing %q", c.o, err, c.want)
		}
	}
	if _, err := NewClosedForm(p, Options{}, okState()); err != nil {
		t.Fatalf("a good warm start was rejected: %v", err)
	}
	if _, _, err := solveClosedForm(context.Background(), &hinge, Options{}, nil, nil); err == nil {
		t.Fatal("NewClosedForm accepted the hinge loss")
	}
}

// TestADMMStepAllocatesNothing runs steps on an instance small enough that
// gonum's products stay serial.
func TestADMMStepAllocatesNothing(t *testing.T) {
	p := program(40, 3, 5, 0.05, 3)
	for _, route := range []Route{RouteWoodbury, RouteDirect, RouteCG} {
		a, err := NewClosedForm(p, Options{Route: route, Relax: 1.6}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if n := testing.AllocsPerRun(20, func() { a.Step() }); n != 0 {
			t.Errorf("%s: Step allocates %v times", route, n)
		}
	}
}

// TestADMMRouteChoice checks the cost model's choice on clear-cut shapes.
func TestADMMRouteChoice(t *testing.T) {
	for _, c := range []struct {
		n, d, np, horizon int
		want              Route
	}{{11809, 100, 8, 1000, "direct"}, {1000, 100, 8, 1000, "direct"}, {1000, 100, 50, 1000, "woodbury"}, {11809, 784, 24, 1000, "woodbury"},
		{100, 3, 60, 1000, "woodbury"}, {5000, 3, 30, 1000, "direct"},
		// Table 2's 10 iterations: factoring the n×n matrix costs more than
		// all the CG steps.
		{11809, 784, 24, 10, "cg"}, {11809, 100, 8, 10, "direct"}, {100, 3, 60, 10, "woodbury"}} {
		counts := make([]int, c.n)
		for k := range counts {
			counts[k] = c.np / 2
		}
		w, d := routeCosts(c.n, c.d, c.np, counts)
		if got := chooseRoute(w, d, cgCost(c.n, c.d, c.np), c.horizon); got != c.want {
			t.Errorf("n=%d d=%d P=%d, %d iterations: chose %s (woodbury %.2g + %.2g/iter, direct %.2g + %.2g/iter), want %s", c.n, c.d, c.np, c.horizon, got, w.setup, w.iter, d.setup, d.iter, c.want)
		}
	}
}

// TestADMMKeptGramIsUsedOnlyForItsData: a saved state's Gram matrix M =
// I + XᵀX is used when its digest is that of the program's X (a forged M
// then changes the iterates, so the product was skipped), and ignored for
// other data of the same shape, where the run equals one without it.
func TestADMMKeptGramIsUsedOnlyForItsData(t *testing.T) {
	a, b := program(30, 3, 5, 0.05, 7), program(30, 3, 5, 0.05, 8)
	for _, o := range []Options{{Route: "direct"}, {Route: "cg"}, {Route: "woodbury"}} {
		part, _ := run(t, b, o, 10)
		st := savedState(t, part).(*ClosedFormState)
		_, d := b.X.Dims()
		if st.Gram == nil || st.Gram.Data == 0 || len(st.Gram.M) != d*d {
			t.Fatalf("%s: the state keeps no Gram matrix: %+v", o.Route, st.Gram)
		}
		steps := func(st *ClosedFormState) []float64 {
			s, err := NewClosedForm(b, o, st)
			if err != nil {
				t.Fatal(err)
			}
			for k := 0; k < 5; k++ {
				s.Step()
			}
			return slices.Clone(s.State.V)
		}
		clone := func(g *Gram) *ClosedFormState {
			c := *st
			c.Gram = g
			return &c
		}
		without := steps(clone(nil))
		if got := steps(st); !slices.Equal(got, without) {
			t.Fatalf("%s: resuming with the kept Gram matrix changed the iterates", o.Route)
		}
		other, _ := run(t, a, o, 1)
		foreign := savedState(t, other).(*ClosedFormState).Gram
		if foreign.Data == st.Gram.Data {
			t.Fatal("two data sets share a digest")
		}
		if got := steps(clone(foreign)); !slices.Equal(got, without) {
			t.Fatalf("%s: another data set's Gram matrix was used", o.Route)
		}
		forged := &Gram{Data: st.Gram.Data, M: slices.Clone(st.Gram.M)}
		for j := 0; j < d; j++ {
			forged.M[j*d+j] *= 2
		}
		if got := steps(clone(forged)); slices.Equal(got, without) {
			t.Fatalf("%s: a Gram matrix with the data's digest was not used", o.Route)
		}
	}
}
