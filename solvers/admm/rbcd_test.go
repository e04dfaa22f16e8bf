package admm

import (
	"context"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/convexnn/convexnn/solvers"
	"github.com/convexnn/convexnn/solvers/internal/testprog"
	"github.com/convexnn/convexnn/solvers/ipm"
	"gonum.org/v1/gonum/floats"
	"gonum.org/v1/gonum/mat"
)

// rbcdProgram returns a program on Gaussian data (program's planted
// two-layer targets) with patterns from SamplePatterns and the given loss:
// for BCE and logistic the targets are thresholded (and every ninth label
// flipped) to 0/1 or −1/+1.
func rbcdProgram(t testing.TB, n, d, np int, beta float64, seed uint64, loss solvers.Loss) *solvers.Program {
	t.Helper()
	p := program(n, d, np, beta, seed)
	pats, err := solvers.SamplePatterns(p.X, np, seed+100, 0)
	if err != nil {
		t.Fatal(err)
	}
	p.D, p.Loss = pats, loss
	if loss == solvers.BCELoss || loss == solvers.LogisticLoss {
		for k, v := range p.Y {
			lab := 0.0
			if v > 0.2 {
				lab = 1
			}
			if k%9 == 4 {
				lab = 1 - lab
			}
			if loss == solvers.LogisticLoss {
				lab = 2*lab - 1
			}
			p.Y[k] = lab
		}
	}
	return p
}

// rbcdKKT returns the violations of the optimality conditions of the
// convex program (Program) at the weights wt, with multipliers given from
// outside, computed with dense matrices and the program's own Loss.Grad:
// with u_j the 2P groups (v_1 … v_P, w_1 … w_P), σ_j = ±1 their sign in ŷ,
// i = i(j) their pattern, F_i = D_i X, G_i = (2D_i − I) X, z_j ∈ R^d the
// group multipliers and μ_j ∈ R^n the multipliers of G_i u_j ≥ 0,
//
//	stationarity     σ_j F_iᵀ∇ℓ(ŷ) + z_j − G_iᵀ μ_j = 0
//	group            z_j = β u_j/‖u_j‖ (u_j ≠ 0),  ‖z_j‖ ≤ β (u_j = 0)
//	dual feasibility μ ≥ 0
//	complementarity  μ_jk (G_i u_j)_k = 0
//	feasibility      G_i u_j ≥ 0.
//
// Scales: stationarity, dual feasibility and complementarity are divided by
// g0 = max(β, max_i ‖F_iᵀ∇ℓ(0)‖), the size of the loss gradient at zero;
// the group residual by β; complementarity and feasibility also by
// max(1, max |G_i u_j|). All are maxima over entries (∞-norms), except the
// stationarity and group residuals, which are the largest group 2-norms.
func rbcdKKT(p *solvers.Program, wt solvers.Weights, z, mu []float64) (stat, group, dual, comp, feas float64) {
	n, d, np := p.Dims()
	yhat, err := p.Predict(wt)
	if err != nil {
		panic(err)
	}
	grad := make([]float64, n)
	p.Loss.Grad(grad, yhat, p.Y)
	grad0 := make([]float64, n)
	p.Loss.Grad(grad0, make([]float64, n), p.Y)
	g0 := p.Beta
	ftg := func(i int, r []float64) *mat.VecDense {
		m := make([]float64, n)
		for k := range m {
			if p.D[i][k] {
				m[k] = r[k]
			}
		}
		var out mat.VecDense
		out.MulVec(p.X.T(), mat.NewVecDense(n, m))
		return &out
	}
	for i := 0; i < np; i++ {
		g0 = math.Max(g0, ftg(i, grad0).Norm(2))
	}
	gscale := 1.0
	for j := 0; j < 2*np; j++ {
		i := j % np
		uj := make([]float64, d)
		if j < np {
			mat.Row(uj, i, wt.V)
		} else {
			mat.Row(uj, i, wt.W)
		}
		var gu mat.VecDense
		gu.MulVec(p.X, mat.NewVecDense(d, uj))
		for k := 0; k < n; k++ {
			if !p.D[i][k] {
				gu.SetVec(k, -gu.AtVec(k))
			}
			gscale = math.Max(gscale, math.Abs(gu.AtVec(k)))
		}
	}
	for j := 0; j < 2*np; j++ {
		i := j % np
		sigma := 1.0
		uj := make([]float64, d)
		if j < np {
			mat.Row(uj, i, wt.V)
		} else {
			mat.Row(uj, i, wt.W)
			sigma = -1
		}
		zj, mj := z[j*d:(j+1)*d], mu[j*n:(j+1)*n]
		// G_iᵀ μ_j = Xᵀ (2D_i − I) μ_j.
		smu := make([]float64, n)
		for k := range smu {
			smu[k] = mj[k]
			if !p.D[i][k] {
				smu[k] = -mj[k]
			}
		}
		var gtm mat.VecDense
		gtm.MulVec(p.X.T(), mat.NewVecDense(n, smu))
		f := ftg(i, grad)
		r := make([]float64, d)
		for q := range r {
			r[q] = sigma*f.AtVec(q) + zj[q] - gtm.AtVec(q)
		}
		stat = math.Max(stat, floats.Norm(r, 2)/g0)
		if nu := floats.Norm(uj, 2); nu > 0 {
			var e2 float64
			for q := range zj {
				e := zj[q] - p.Beta*uj[q]/nu
				e2 += e * e
			}
			group = math.Max(group, math.Sqrt(e2)/p.Beta)
		} else {
			group = math.Max(group, (floats.Norm(zj, 2)-p.Beta)/p.Beta)
		}
		var gu mat.VecDense
		gu.MulVec(p.X, mat.NewVecDense(d, uj))
		for k := 0; k < n; k++ {
			g := gu.AtVec(k)
			if !p.D[i][k] {
				g = -g
			}
			dual = math.Max(dual, -mj[k]/g0)
			comp = math.Max(comp, math.Abs(mj[k]*g)/(g0*gscale))
			feas = math.Max(feas, -g/gscale)
		}
	}
	return stat, group, dual, comp, feas
}

// rbcdMultipliers returns the multipliers of the program read off the
// ADMM-RBCD duals: z = ρλ for the groups, μ = −ρν for the cones.
func rbcdMultipliers(a *RBCD) (z, mu []float64) {
	rho := a.Options.Rho
	z = make([]float64, len(a.State.Lambda))
	for q, v := range a.State.Lambda {
		z[q] = rho * v
	}
	mu = make([]float64, len(a.State.Nu))
	for q, v := range a.State.Nu {
		mu[q] = -rho * v
	}
	return z, mu
}

// TestADMMRBCDSquaredMatchesClosedForm solves squared-loss programs with
// ADMM-RBCD, the closed-form ADMM and the interior-point method.
func TestADMMRBCDSquaredMatchesClosedForm(t *testing.T) {
	for _, seed := range []uint64{4} {
		p := rbcdProgram(t, 40, 4, 6, 0.2, seed, solvers.SquaredLoss)
		ref, err := ipm.Solve(context.Background(), p, ipm.Options{Tol: 1e-10})
		if err != nil {
			t.Fatal(err)
		}
		o := Options{Rho: 0.3, MaxIter: 20000, AbsTol: 1e-8, RelTol: 1e-8}
		o.Seed = seed
		a, hist, err := solveRBCD(context.Background(), p, o, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		// The same outer ADMM in closed form (the RBCD-only seed left out).
		oc := o
		oc.Seed = 0
		_, hc, err := solveClosedForm(context.Background(), p, oc, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		last := hist[len(hist)-1]
		got, cf := last.ConvexObjective, hc[len(hc)-1].ConvexObjective
		inner := 0
		for _, s := range hist {
			inner += s.InnerSteps
		}
		t.Logf("seed %d: ADMM-RBCD %.12g (%d iterations, %d RBCD steps), closed-form ADMM %.12g (%d iterations), interior point %.12g",
			seed, got, len(hist), inner, cf, len(hc), ref.Objective)
		if !a.Converged(last) {
			t.Errorf("seed %d: no convergence in %d iterations", seed, len(hist))
		}
		for _, c := range []struct {
			name string
			v    float64
		}{{"interior point", ref.Objective}, {"closed-form ADMM", cf}} {
			if rel := math.Abs(got-c.v) / c.v; !(rel <= 1e-6) {
				t.Errorf("seed %d: ADMM-RBCD %.12g, %s %.12g: relative difference %.2e", seed, got, c.name, c.v, rel)
			}
		}
	}
}

// TestADMMRBCDInnerSolve checks one u-update (eq. ADMM1), run to high
// accuracy from a random state, against the closed form of the squared
// loss (eq. uupdate, dense), and for BCE against the dense gradient of L.
func TestADMMRBCDInnerSolve(t *testing.T) {
	for _, loss := range []solvers.Loss{solvers.SquaredLoss, solvers.BCELoss} {
		for _, blocks := range []int{1, 3} {
			p := rbcdProgram(t, 30, 3, 5, 0.05, 6, loss)
			n, d, np := p.Dims()
			rho := 0.1
			if loss == solvers.BCELoss {
				rho = 0.003
			}
			rng := rand.New(rand.NewPCG(1, 2))
			st := &RBCDState{ClosedFormState: ClosedFormState{Iter: 3, U: make([]float64, 2*np*d), V: make([]float64, 2*np*d),
				Lambda: make([]float64, 2*np*d), S: make([]float64, 2*np*n), Nu: make([]float64, 2*np*n)}, Lipschitz: make([]float64, np)}
			for _, f := range [][]float64{st.U, st.V, st.Lambda, st.Nu} {
				for q := range f {
					f[q] = 0.3 * rng.NormFloat64()
				}
			}
			for q := range st.S {
				st.S[q] = math.Max(0, rng.NormFloat64())
			}
			for i := range st.Lipschitz {
				st.Lipschitz[i] = 1
			}
			o := Options{Rho: rho, AbsTol: 1e-300, RelTol: 1e-300, Blocks: blocks, InnerMax: 20000, Phi0: 1e-300}
			a, err := NewRBCD(p, o, st)
			if err != nil {
				t.Fatal(err)
			}
			steps, res := a.uUpdate()
			u := mat.NewVecDense(2*np*d, slices.Clone(a.State.U))

			// Dense gradient of L(u) = ℓ(Fu) + (ρ/2)‖u − v + λ‖² + (ρ/2)‖Gu − s + ν‖².
			f, g := dense(p)
			var yhat, gu, fg, gtr mat.VecDense
			yhat.MulVec(f, u)
			lg := make([]float64, n)
			p.Loss.Grad(lg, yhat.RawVector().Data, p.Y)
			fg.MulVec(f.T(), mat.NewVecDense(n, lg))
			gu.MulVec(g, u)
			r := make([]float64, 2*np*n)
			for q := range r {
				r[q] = gu.AtVec(q) - st.S[q] + st.Nu[q]
			}
			gtr.MulVec(g.T(), mat.NewVecDense(len(r), r))
			var g2 float64
			for q := 0; q < 2*np*d; q++ {
				e := fg.AtVec(q) + rho*(u.AtVec(q)-st.V[q]+st.Lambda[q]) + rho*gtr.AtVec(q)
				g2 += e * e
			}
			grad := math.Sqrt(g2)
			t.Logf("%v, %d blocks per step: %d RBCD steps, reported ‖∇L‖ %.2e, dense ‖∇L‖ %.2e", loss, blocks, steps, res, grad)
			if !(grad <= 1e-9) || math.Abs(grad-res) > 1e-9 {
				t.Errorf("%v, %d blocks: ‖∇L‖ = %.3e (reported %.3e) after %d steps", loss, blocks, grad, res, steps)
			}
			if loss != solvers.SquaredLoss {
				continue
			}
			// (I + (1/ρ)FᵀF + GᵀG) u = (1/ρ)Fᵀy + v − λ + Gᵀ(s − ν).
			var am, ftf, gtg mat.Dense
			ftf.Mul(f.T(), f)
			gtg.Mul(g.T(), g)
			am.Scale(1/rho, &ftf)
			am.Add(&am, &gtg)
			for q := 0; q < 2*np*d; q++ {
				am.Set(q, q, am.At(q, q)+1)
			}
			sn := make([]float64, 2*np*n)
			for q := range sn {
				sn[q] = st.S[q] - st.Nu[q]
			}
			var rhs, gsn, want mat.VecDense
			rhs.MulVec(f.T(), mat.NewVecDense(n, p.Y))
			rhs.ScaleVec(1/rho, &rhs)
			gsn.MulVec(g.T(), mat.NewVecDense(len(sn), sn))
			rhs.AddVec(&rhs, &gsn)
			for q := 0; q < 2*np*d; q++ {
				rhs.SetVec(q, rhs.AtVec(q)+st.V[q]-st.Lambda[q])
			}
			if err := want.SolveVec(&am, &rhs); err != nil {
				t.Fatal(err)
			}
			if e := testprog.RelDiff(u.RawVector().Data, want.RawVector().Data); !(e <= 1e-9) {
				t.Errorf("%d blocks: RBCD u differs from the closed form by %.2e (relative)", blocks, e)
			}
		}
	}
}

// TestADMMRBCDKKT solves BCE and logistic programs and checks the KKT
// conditions of the convex program at the returned v, with the multipliers
// ρλ (groups) and −ρν (cones) from the ADMM duals (rbcdKKT states the
// scales). It also checks that the checker sees a run stopped early, and
// that the reported objectives are the program's.
func TestADMMRBCDKKT(t *testing.T) {
	for _, c := range []struct {
		loss      solvers.Loss
		beta, rho float64
		seed      uint64
	}{
		{solvers.BCELoss, 0.03, 0.03, 3},
		{solvers.LogisticLoss, 0.03, 0.01, 3},
	} {
		p := rbcdProgram(t, 40, 4, 6, c.beta, c.seed, c.loss)
		o := Options{Rho: c.rho, MaxIter: 5000, AbsTol: 1e-9, RelTol: 1e-9}
		a, hist, err := solveRBCD(context.Background(), p, o, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		last := hist[len(hist)-1]
		wt := a.Weights()
		z, mu := rbcdMultipliers(a)
		stat, group, dual, comp, feas := rbcdKKT(p, wt, z, mu)
		inner := 0
		for _, s := range hist {
			inner += s.InnerSteps
		}
		nz := 0
		for _, v := range a.vNorm {
			if v > 0 {
				nz++
			}
		}
		t.Logf("%v: %d iterations (%d RBCD steps), objective %.12g, %d of %d groups active; KKT: stationarity %.1e, groups %.1e, dual feasibility %.1e, complementarity %.1e, feasibility %.1e",
			c.loss, len(hist), inner, last.ConvexObjective, nz, len(a.vNorm), stat, group, dual, comp, feas)
		if !a.Converged(last) {
			t.Errorf("%v: no convergence in %d iterations", c.loss, len(hist))
		}
		if stat > 1e-6 || group > 1e-6 || dual > 1e-6 || comp > 1e-6 || feas > 1e-6 {
			t.Errorf("%v: KKT residuals above 1e-6", c.loss)
		}
		if nz == 0 || nz == len(a.vNorm) {
			t.Errorf("%v: %d of %d groups active: the instance does not exercise the group threshold", c.loss, nz, len(a.vNorm))
		}
		obj, _ := p.Objective(wt)
		viol, _ := p.Violation(wt)
		net, err := a.Network()
		if err != nil {
			t.Fatal(err)
		}
		nobj, _ := p.NonconvexObjective(net)
		if math.Abs(obj-last.ConvexObjective) > 1e-12*obj || math.Abs(nobj-last.NonconvexObjective) > 1e-12*nobj || math.Abs(viol-last.Violation) > 1e-15 {
			t.Errorf("%v: reported objectives %v, %v, violation %v; program's %v, %v, %v", c.loss, last.ConvexObjective, last.NonconvexObjective, last.Violation, obj, nobj, viol)
		}

		// A run stopped after 5 iterations is far from optimal.
		early, _, err := solveRBCD(context.Background(), p, Options{Rho: c.rho, MaxIter: 5}, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		z, mu = rbcdMultipliers(early)
		s, g, df, cp, fs := rbcdKKT(p, early.Weights(), z, mu)
		if math.Max(math.Max(s, g), math.Max(df, math.Max(cp, fs))) < 1e-3 {
			t.Errorf("%v: the KKT check passes after 5 iterations: %.1e %.1e %.1e %.1e %.1e", c.loss, s, g, df, cp, fs)
		}
	}
}

// TestADMMRBCDExactResume checks that k steps, a JSON round trip of the
// state and more steps repeat an uninterrupted run bit for bit, with one
// and with several blocks per RBCD step, and that the seed matters.
func TestADMMRBCDExactResume(t *testing.T) {
	p := rbcdProgram(t, 30, 3, 5, 0.01, 7, solvers.BCELoss)
	run := func(o Options, st *RBCDState, k int) (*RBCD, Step) {
		a, err := NewRBCD(p, o, st)
		if err != nil {
			t.Fatal(err)
		}
		var s Step
		for i := 0; i < k; i++ {
			s = a.Step()
		}
		s.Seconds = 0
		return a, s
	}
	for _, blocks := range []int{1, 3} {
		o := Options{Rho: 0.01, Blocks: blocks, InnerMax: 7, Seed: 11}
		whole, sw := run(o, nil, 40)
		part, _ := run(o, nil, 25)
		st := savedState(t, part).(*RBCDState)
		rest, sr := run(o, st, 15)
		for _, f := range []struct {
			name string
			a, b []float64
		}{{"U", whole.State.U, rest.State.U}, {"V", whole.State.V, rest.State.V}, {"S", whole.State.S, rest.State.S},
			{"Lambda", whole.State.Lambda, rest.State.Lambda}, {"Nu", whole.State.Nu, rest.State.Nu},
			{"Lipschitz", whole.State.Lipschitz, rest.State.Lipschitz}} {
			for q := range f.a {
				if math.Float64bits(f.a[q]) != math.Float64bits(f.b[q]) {
					t.Fatalf("%d blocks: resumed %s[%d] = %v, uninterrupted %v", blocks, f.name, q, f.b[q], f.a[q])
				}
			}
		}
		if sw != sr || rest.State.Iter != 40 {
			t.Fatalf("%d blocks: resumed step %+v, uninterrupted %+v", blocks, sr, sw)
		}
		o.Seed = 12
		other, _ := run(o, nil, 40)
		if testprog.RelDiff(other.State.U, whole.State.U) == 0 {
			t.Errorf("%d blocks: seeds 11 and 12 took the same steps", blocks)
		}
	}
}

func TestADMMRBCDBadInput(t *testing.T) {
	p := rbcdProgram(t, 12, 2, 3, 0.01, 1, solvers.BCELoss)
	hinge := *p
	hinge.Loss = solvers.HingeLoss
	hinge.Y = make([]float64, 12)
	for k := range hinge.Y {
		hinge.Y[k] = 1
	}
	pm := *p
	pm.Y = append([]float64(nil), p.Y...)
	pm.Y[4] = -1
	okState := func() *RBCDState {
		return &RBCDState{ClosedFormState: ClosedFormState{U: make([]float64, 12), V: make([]float64, 12), Lambda: make([]float64, 12),
			S: make([]float64, 72), Nu: make([]float64, 72)}, Lipschitz: []float64{1, 1, 1}}
	}
	short := okState()
	short.Lipschitz = short.Lipschitz[:2]
	zeroL := okState()
	zeroL.Lipschitz[1] = 0
	nanU := okState()
	nanU.U[5] = math.NaN()
	shortS := okState()
	shortS.S = shortS.S[:71]
	nan := math.NaN()
	o := func(f func(*Options)) Options {
		var r Options
		f(&r)
		return r
	}
	cases := []struct {
		p    *solvers.Program
		o    Options
		st   *RBCDState
		want string
	}{
		{nil, Options{}, nil, "no program"},
		{&hinge, Options{}, nil, "use the split variant"},
		{&pm, Options{}, nil, "y[4] = -1: the bce loss needs labels 0 or 1"},
		{p, o(func(r *Options) { r.Rho = nan }), nil, "penalty ρ = NaN"},
		{p, o(func(r *Options) { r.Rho = -1 }), nil, "penalty ρ = -1"},
		{p, o(func(r *Options) { r.Gamma = nan }), nil, "γ_a = NaN"},
		{p, o(func(r *Options) { r.Rho, r.Gamma = 0.1, 1 }), nil, "need not converge"},
		{p, o(func(r *Options) { r.AbsTol = nan }), nil, "AbsTol = NaN"},
		{p, o(func(r *Options) { r.RelTol = -1 }), nil, "RelTol = -1"},
		{p, o(func(r *Options) { r.MaxIter = -1 }), nil, "MaxIter = -1"},
		{p, o(func(r *Options) { r.Route = "direct" }), nil, `Route = "direct"`},
		{p, o(func(r *Options) { r.Blocks = 4 }), nil, "Blocks = 4, need 0 ≤ Blocks ≤ P = 3"},
		{p, o(func(r *Options) { r.Blocks = -1 }), nil, "Blocks = -1"},
		{p, o(func(r *Options) { r.InnerMax = -2 }), nil, "InnerMax = -2"},
		{p, o(func(r *Options) { r.Phi0 = nan }), nil, "Phi0 = NaN"},
		{p, o(func(r *Options) { r.Phi0 = math.Inf(1) }), nil, "Phi0 = +Inf"},
		{p, Options{}, short, "2 Lipschitz estimates, the program has P = 3"},
		{p, Options{}, zeroL, "Lipschitz[1] = 0"},
		{p, Options{}, nanU, "U[5] = NaN"},
		{p, Options{}, shortS, "71 entries in S"},
	}
	for _, c := range cases {
		_, err := NewRBCD(c.p, c.o, c.st)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: error %v, want one containing %q", c.o, err, c.want)
		}
	}
	if _, err := NewRBCD(p, Options{Blocks: 3}, okState()); err != nil {
		t.Fatalf("good options and state rejected: %v", err)
	}
	if _, _, err := solveRBCD(context.Background(), &hinge, Options{}, nil, nil); err == nil {
		t.Fatal("NewRBCD accepted the hinge loss")
	}
}

// TestADMMRBCDBregman compares the line search's loss divergence with the
// difference of loss values where that difference is accurate.
func TestADMMRBCDBregman(t *testing.T) {
	for _, loss := range []solvers.Loss{solvers.SquaredLoss, solvers.BCELoss, solvers.LogisticLoss} {
		p := rbcdProgram(t, 30, 3, 4, 0.02, 2, loss)
		a, err := NewRBCD(p, Options{}, nil)
		if err != nil {
			t.Fatal(err)
		}
		rng := rand.New(rand.NewPCG(3, 4))
		for k := range a.yhat {
			a.yhat[k] = 3 * rng.NormFloat64()
			a.dy[k] = 0.5 * rng.NormFloat64()
		}
		a.ytilOK = false
		a.lossGrad()
		yn := make([]float64, len(a.yhat))
		floats.AddTo(yn, a.yhat, a.dy)
		want := loss.Value(yn, p.Y) - loss.Value(a.yhat, p.Y) - floats.Dot(a.ytil, a.dy)
		if got := a.bregman(nil); math.Abs(got-want) > 1e-12*math.Abs(want) || !(want > 0) {
			t.Errorf("%v: divergence %.15g, from loss values %.15g", loss, got, want)
		}
		if loss == solvers.SquaredLoss {
			continue
		}
		// Saturated margins, moved far: c ŷ = ±40, c Δ = ∓80; tiny moves;
		// a move just inside the Taylor branch.
		for _, c := range [][2]float64{{40, -80}, {-40, 80}, {40, 1e-9}, {-40, -1e-9}, {3, -1e-9}, {1, 9e-4}, {-2, -9.9e-4}} {
			for k := range a.yhat {
				a.yhat[k] = c[0] / a.cm[k]
				a.dy[k] = 0
			}
			a.dy[0] = c[1] / a.cm[0]
			a.ytilOK = false
			a.lossGrad()
			b, tt, s := c[0], c[1], solvers.Logistic(c[0])
			// Accurate in each case: the plain difference where it is
			// large, log(1 + σ(eᵗ − 1)) − σt for small moves, the
			// second-order term for tiny ones.
			want := (solvers.Softplus(b+tt) - solvers.Softplus(b) - s*tt) / float64(len(a.yhat))
			switch {
			case math.Abs(tt) < 1e-6:
				want = s * (1 - s) * tt * tt / 2 / float64(len(a.yhat))
			case math.Abs(tt) < 0.1:
				want = (math.Log1p(s*math.Expm1(tt)) - s*tt) / float64(len(a.yhat))
			}
			if got := a.bregman(nil); math.Abs(got-want) > 1e-9*math.Abs(want) {
				t.Errorf("%v: c ŷ = %v, c Δ = %v: divergence %.15g, want %.15g", loss, b, tt, got, want)
			}
		}
	}
}

// TestADMMRBCDStepAllocatesNothing runs steps on an instance small enough
// that gonum's products stay serial.
func TestADMMRBCDStepAllocatesNothing(t *testing.T) {
	p := rbcdProgram(t, 40, 3, 5, 0.02, 3, solvers.BCELoss)
	for _, blocks := range []int{1, 2} {
		a, err := NewRBCD(p, Options{Blocks: blocks, InnerMax: 10}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if n := testing.AllocsPerRun(20, func() { a.Step() }); n != 0 {
			t.Errorf("%d blocks: Step allocates %v times", blocks, n)
		}
	}
}

// rbcdBenchProgram is a BCE program on Gaussian data with labels
// 1[x_1 x_2 ≥ 0] and sampled patterns.
func rbcdBenchProgram(b *testing.B, n, d, np int) *solvers.Program {
	rng := rand.New(rand.NewPCG(uint64(n), uint64(d)))
	x := mat.NewDense(n, d, nil)
	y := make([]float64, n)
	for k := 0; k < n; k++ {
		for j := 0; j < d; j++ {
			x.Set(k, j, rng.NormFloat64())
		}
		if x.At(k, 0)*x.At(k, 1) >= 0 {
			y[k] = 1
		}
	}
	pats, err := solvers.SamplePatterns(x, np, 1, 0)
	if err != nil {
		b.Fatal(err)
	}
	return &solvers.Program{X: x, Y: y, Loss: solvers.BCELoss, Beta: 1e-4, D: pats}
}

// BenchmarkADMMRBCD times ADMM-RBCD iterations (default ρ, InnerMax: 20
// sweeps over the patterns) at n = 2000, d = 100, P = 24 with the BCE loss,
// with one block and with all P blocks per RBCD step.
func BenchmarkADMMRBCD(b *testing.B) {
	p := rbcdBenchProgram(b, 2000, 100, 24)
	for _, blocks := range []int{1, 24} {
		b.Run("blocks="+map[int]string{1: "1", 24: "24"}[blocks], func(b *testing.B) {
			a, err := NewRBCD(p, Options{Blocks: blocks}, nil)
			if err != nil {
				b.Fatal(err)
			}
			var inner int
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				inner += a.Step().InnerSteps
			}
			b.StopTimer()
			b.ReportMetric(b.Elapsed().Seconds()/float64(b.N), "s/iter")
			b.ReportMetric(float64(inner)/float64(b.N), "steps/iter")
		})
	}
}
