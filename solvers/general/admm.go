package general

import (
	"context"
	"errors"
	"fmt"
	"math"

	"github.com/convexnn/convexnn/solvers"
	"gonum.org/v1/gonum/floats"
	"gonum.org/v1/gonum/mat"
)

// Options configure ADMM.
type Options struct {
	// Rho is the penalty ρ > 0 of the augmented Lagrangian; 0 means 0.1
	// for the squared loss (the paper's) and 0.01 for the others, whose
	// loss is a mean (measured on small random hinge programs, certified
	// gaps after 1000/5000/20000 steps: ρ = 0.1: 0.76/0.092/7e-3, ρ = 0.01:
	// 0.17/0.072/1.3e-3, ρ = 0.001: 0.13/0.070/2.5e-4).
	Rho float64
	// AbsTol and RelTol are the stopping tolerances of Boyd et al. (§3.3.1);
	// 0 means 1e-6 and 1e-5.
	AbsTol, RelTol float64
	// CertSteps is the number of accelerated projected-gradient steps per
	// group on the multipliers α of a certificate (Bound); 0 means 200.
	CertSteps int
	// Equilibrate runs ADMM on the constraints G_g w_g ≥ 0 divided by
	// ‖G_g‖ (the same cones), so that no group's constraint block outweighs
	// the identity of u = w in the u-update. The paper's ADMM does not
	// (false); on CNN programs, whose G_g stack every patch of every image,
	// it converges much faster (measured on 150 MNIST digits at 7×7, 3×3
	// filters, stride 2, 8 patterns, hinge loss: a certified gap of 0.59
	// after 3000 steps without, see the tests and docs/performance.md).
	Equilibrate bool
	// Relax is the over-relaxation α ∈ (0, 2) of Boyd et al. (§3.4.3): the
	// second block and the duals see αu + (1 − α)w (and αGu + (1 − α)s,
	// αFp + (1 − α)ŷ) in place of u (Gu, Fp); 0 means 1, no relaxation,
	// the paper's ADMM.
	Relax float64
}

func (o Options) resolve(loss solvers.Loss) (Options, error) {
	if math.IsNaN(o.Relax) || o.Relax < 0 || o.Relax >= 2 {
		return o, fmt.Errorf("general: ADMM relaxation %v, need 0 < α < 2 (0: 1, none)", o.Relax)
	}
	if o.Relax == 0 {
		o.Relax = 1
	}
	for _, v := range []float64{o.Rho, o.AbsTol, o.RelTol} {
		if math.IsNaN(v) || v < 0 || math.IsInf(v, 0) {
			return o, fmt.Errorf("general: ADMM option %v, need a finite value ≥ 0 (0: default)", v)
		}
	}
	if o.CertSteps < 0 {
		return o, fmt.Errorf("general: certificate steps %d < 0", o.CertSteps)
	}
	if o.Rho == 0 {
		o.Rho = 0.1
		if loss != solvers.SquaredLoss {
			o.Rho = 0.01
		}
	}
	if o.AbsTol == 0 {
		o.AbsTol = 1e-6
	}
	if o.RelTol == 0 {
		o.RelTol = 1e-5
	}
	if o.CertSteps == 0 {
		o.CertSteps = 200
	}
	return o, nil
}

// State is the whole iteration state of ADMM in the scaled form of eq.
// (ct_eq_general): u, u′ (the first block), w, w′, s, s′ (the second), the
// scaled duals λ, λ′ of u = w, u′ = w′ and ν, ν′ of Gu = s, Gu′ = s′; for
// the losses other than the squared one the loss split ŷ = F(u − u′) adds
// Yhat and its scaled dual Mu (nil for the squared loss). A solver made
// from a saved State takes exactly the steps of an uninterrupted run.
type State struct {
	Iter int
	// Rho is the penalty ρ the state's scaled duals belong to
	// (Options.Rho).
	Rho                     float64
	U, Up, W, Wp, Lam, Lamp []float64 // N
	S, Sp, Nu, Nup          []float64 // M
	Yhat, Mu                []float64 // n (loss split only)
}

// ADMM solves eq. (ct_general) by the ADMM of eq. (ct_eq_general), the
// paper's Algorithm ADMM for any F and G. One iteration, in scaled form:
//
//	(u, u′) = argmin ℓ(F(u − u′), y) + (ρ/2)(‖u − w + λ‖² + ‖u′ − w′ + λ′‖² + ‖Gu − s + ν‖² + ‖Gu′ − s′ + ν′‖²)
//	w = prox_{(β/ρ)‖·‖_{2,1}}(u + λ),  s = (Gu + ν)_+   (and w′, s′)
//	λ += u − w,  ν += Gu − s                             (and λ′, ν′)
//
// from all variables zero. The u-update splits into q = u + u′ and
// p = u − u′: A q = b + b′ with A = I + GᵀG (block diagonal: one d_g×d_g
// Cholesky factor per group) and b = w − λ + Gᵀ(s − ν), and for the squared
// loss, in closed form as in eq. (uupdate), (A + (2/ρ)FᵀF) p = b − b′ +
// (2/ρ)Fᵀy. The other losses (hinge, BCE, logistic) split the loss off:
// ŷ = F(u − u′) joins the second block with scaled dual μ, so that
// (A + 2FᵀF) p = b − b′ + 2Fᵀ(ŷ − μ) and ŷ = prox_{ℓ/ρ}(Fp + μ), a scalar
// problem per point. Both p-systems are constant: their N×N matrix is
// formed from F and factored once. (Balancing the residuals by changing ρ,
// which the loss split's matrix would allow, made the certificates of
// small hinge programs worse: 0.24 instead of 7e-3 after 20000 steps.)
type ADMM struct {
	Program *Program
	Options Options
	State   State

	n, nv, m int
	lay      layout
	split    bool
	c        float64
	gd       []*mat.Dense    // per group G_g (m_g × d_g), nil when unconstrained
	ga       []*mat.Cholesky // per group I + G_gᵀG_g
	gl       []float64       // per group ‖G_g‖² (the certificate's step)
	gs       []float64       // per group the factor ADMM applies to G_g (Equilibrate: 1/‖G_g‖)
	mf       mat.Cholesky    // A + cFᵀF
	cert     *certifier

	b, bp, q, pv, rhs, fy []float64 // N, N, N, N, N, n
	gu, gup               []float64 // M
	ow, owp, os, osp      []float64 // the second block before the step
	res                   Residuals
	// Scratch of Step, so that it allocates nothing: a group's worth (the
	// largest), N, N, M, n, and vector views of q and rhs per group and of
	// pv and rhs whole.
	tg, ft, dn, dm, fp []float64
	gt                 []float64 // N: Gᵀy whole (Program.BlockG)
	qv, rv             []*mat.VecDense
	pvv, rhsv          *mat.VecDense
}

// Residuals are ADMM's primal and dual residuals after a step and its
// stopping test (Boyd et al. §3.3.1).
type Residuals struct {
	Primal, Dual       float64
	EpsPrimal, EpsDual float64
	Converged          bool
}

// MaxDense is the largest N whose N×N u-update factor ADMM forms
// (8·MaxDense² bytes, 512 MiB).
const MaxDense = 8192

// New returns ADMM for p, from st when not nil (a saved State) or else from
// zero.
func New(p *Program, o Options, st *State) (*ADMM, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	o, err := o.resolve(p.Loss)
	if err != nil {
		return nil, err
	}
	n, nv, m := p.Dims()
	if nv > MaxDense {
		return nil, fmt.Errorf("general: the u-update's %d×%d factor needs %.1f GB; ADMM forms it up to N = %d (fewer groups or smaller ones)", nv, nv, 8*float64(nv)*float64(nv)/1e9, MaxDense)
	}
	a := &ADMM{Program: p, Options: o, n: n, nv: nv, m: m, lay: p.layout(), split: p.Loss != solvers.SquaredLoss}
	a.c = 2 / o.Rho
	if a.split {
		a.c = 2
	}
	v := func(k int) []float64 { return make([]float64, k) }
	a.b, a.bp, a.q, a.pv, a.rhs, a.fy = v(nv), v(nv), v(nv), v(nv), v(nv), v(n)
	a.gu, a.gup = v(m), v(m)
	a.ow, a.owp, a.os, a.osp = v(nv), v(nv), v(m), v(m)
	big := 0
	for _, g := range p.Groups {
		big = max(big, g.Size)
	}
	a.tg, a.ft, a.dn, a.dm, a.fp = v(big), v(nv), v(nv), v(m), v(n)
	if p.BlockG != nil {
		a.gt = v(nv)
	}
	for g := range p.Groups {
		o, e := a.lay.off[g], a.lay.off[g+1]
		a.qv = append(a.qv, mat.NewVecDense(e-o, a.q[o:e]))
		a.rv = append(a.rv, mat.NewVecDense(e-o, a.rhs[o:e]))
	}
	a.pvv, a.rhsv = mat.NewVecDense(nv, a.pv), mat.NewVecDense(nv, a.rhs)
	if err := a.factor(); err != nil {
		return nil, err
	}
	if st != nil {
		if err := a.checkState(st); err != nil {
			return nil, err
		}
		a.State = cloneState(*st)
	} else {
		a.State = State{Rho: o.Rho, U: v(nv), Up: v(nv), W: v(nv), Wp: v(nv), Lam: v(nv), Lamp: v(nv), S: v(m), Sp: v(m), Nu: v(m), Nup: v(m)}
		if a.split {
			a.State.Yhat, a.State.Mu = v(n), v(n)
		}
	}
	return a, nil
}

func (a *ADMM) checkState(st *State) error {
	for _, f := range []struct {
		name string
		x    []float64
		want int
	}{{"U", st.U, a.nv}, {"Up", st.Up, a.nv}, {"W", st.W, a.nv}, {"Wp", st.Wp, a.nv}, {"Lam", st.Lam, a.nv}, {"Lamp", st.Lamp, a.nv},
		{"S", st.S, a.m}, {"Sp", st.Sp, a.m}, {"Nu", st.Nu, a.m}, {"Nup", st.Nup, a.m}} {
		if len(f.x) != f.want {
			return fmt.Errorf("general: state field %s has %d entries, the program needs %d", f.name, len(f.x), f.want)
		}
	}
	if a.split != (st.Yhat != nil) || (a.split && (len(st.Yhat) != a.n || len(st.Mu) != a.n)) {
		return fmt.Errorf("general: state's loss split (Yhat, Mu) does not match the %v loss with %d predictions", a.Program.Loss, a.n)
	}
	if st.Iter < 0 {
		return fmt.Errorf("general: state iteration %d < 0", st.Iter)
	}
	if st.Rho != a.Options.Rho {
		return fmt.Errorf("general: state penalty ρ = %v, Options.Rho = %v: the scaled duals belong to their ρ", st.Rho, a.Options.Rho)
	}
	return nil
}

func cloneState(s State) State {
	c := func(x []float64) []float64 {
		if x == nil {
			return nil
		}
		return append([]float64(nil), x...)
	}
	return State{Iter: s.Iter, Rho: s.Rho, U: c(s.U), Up: c(s.Up), W: c(s.W), Wp: c(s.Wp), Lam: c(s.Lam), Lamp: c(s.Lamp),
		S: c(s.S), Sp: c(s.Sp), Nu: c(s.Nu), Nup: c(s.Nup), Yhat: c(s.Yhat), Mu: c(s.Mu)}
}

// Snapshot returns a copy of the state.
func (a *ADMM) Snapshot() State { return cloneState(a.State) }

// dense returns the matrix of op: its own when it has one (Masked, Matrix),
// else by its products with the unit vectors.
func dense(op Operator) *mat.Dense {
	switch o := op.(type) {
	case Matrix:
		return o.M
	case *Masked:
		return o.Dense()
	}
	r, c := op.Dims()
	m := mat.NewDense(r, c, nil)
	e, col := make([]float64, c), make([]float64, r)
	for j := 0; j < c; j++ {
		e[j] = 1
		op.Apply(col, e)
		m.SetCol(j, col)
		e[j] = 0
	}
	return m
}

// factor forms and factors the per-group blocks I + G_gᵀG_g and the
// p-system A + cFᵀF.
func (a *ADMM) factor() error {
	p := a.Program
	ng := len(p.Groups)
	a.gd, a.ga, a.gl, a.gs = make([]*mat.Dense, ng), make([]*mat.Cholesky, ng), make([]float64, ng), make([]float64, ng)
	big := mat.NewSymDense(a.nv, nil)
	fd := dense(p.F)
	big.SymOuterK(a.c, fd.T())
	for g, gr := range p.Groups {
		k := gr.Size
		gtg := mat.NewSymDense(k, nil)
		if gr.G != nil {
			a.gd[g] = dense(gr.G)
			gtg.SymOuterK(1, a.gd[g].T())
		}
		var eig mat.EigenSym
		if eig.Factorize(gtg, false) {
			vals := eig.Values(nil)
			a.gl[g] = math.Max(vals[len(vals)-1], 0)
		}
		a.gs[g] = 1
		if a.Options.Equilibrate && a.gl[g] > 0 {
			a.gs[g] = 1 / math.Sqrt(a.gl[g])
		}
		blk := mat.NewSymDense(k, nil)
		blk.ScaleSym(a.gs[g]*a.gs[g], gtg)
		for i := 0; i < k; i++ {
			blk.SetSym(i, i, blk.At(i, i)+1)
		}
		var ch mat.Cholesky
		if !ch.Factorize(blk) {
			return fmt.Errorf("general: the block I + G_gᵀG_g of group %d is not positive definite (non-finite G?)", g)
		}
		a.ga[g] = &ch
		o := a.lay.off[g]
		for i := 0; i < k; i++ {
			for j := i; j < k; j++ {
				big.SetSym(o+i, o+j, big.At(o+i, o+j)+blk.At(i, j))
			}
		}
	}
	if !a.mf.Factorize(big) {
		return errors.New("general: the u-update matrix A + cFᵀF is not positive definite (non-finite F?)")
	}
	a.cert = newCertifier(p, fd, a.gd, a.gl, a.Options.CertSteps)
	return nil
}

// applyG sets out = G x (block by block, each scaled by gs) for x in ℝ^N.
func (a *ADMM) applyG(out, x []float64) {
	if bg := a.Program.BlockG; bg != nil {
		bg.Apply(out, x)
		for g := range a.Program.Groups {
			if a.gs[g] != 1 {
				floats.Scale(a.gs[g], out[a.lay.roff[g]:a.lay.roff[g+1]])
			}
		}
		return
	}
	for g, gr := range a.Program.Groups {
		if gr.G != nil {
			o := out[a.lay.roff[g]:a.lay.roff[g+1]]
			gr.G.Apply(o, x[a.lay.off[g]:a.lay.off[g+1]])
			if a.gs[g] != 1 {
				floats.Scale(a.gs[g], o)
			}
		}
	}
}

// addGT sets out += Gᵀ y (block by block, each scaled by gs).
func (a *ADMM) addGT(out, y []float64) {
	if bg := a.Program.BlockG; bg != nil {
		bg.ApplyT(a.gt, y)
		for g := range a.Program.Groups {
			o, e := a.lay.off[g], a.lay.off[g+1]
			floats.AddScaled(out[o:e], a.gs[g], a.gt[o:e])
		}
		return
	}
	for g, gr := range a.Program.Groups {
		if gr.G == nil {
			continue
		}
		o := out[a.lay.off[g]:a.lay.off[g+1]]
		t := a.tg[:len(o)]
		gr.G.ApplyT(t, y[a.lay.roff[g]:a.lay.roff[g+1]])
		floats.AddScaled(o, a.gs[g], t)
	}
}

// rhsOf sets b = w − λ + Gᵀ(s − ν).
func (a *ADMM) rhsOf(b, w, lam, s, nu []float64) {
	floats.SubTo(b, w, lam)
	d := a.dm[:len(s)]
	floats.SubTo(d, s, nu)
	a.addGT(b, d)
}

// Step takes one ADMM iteration.
func (a *ADMM) Step() {
	st := &a.State
	p := a.Program
	rho := st.Rho
	a.rhsOf(a.b, st.W, st.Lam, st.S, st.Nu)
	a.rhsOf(a.bp, st.Wp, st.Lamp, st.Sp, st.Nup)
	// q = A⁻¹(b + b′), block by block.
	floats.AddTo(a.rhs, a.b, a.bp)
	for g := range p.Groups {
		if err := a.ga[g].SolveVecTo(a.qv[g], a.rv[g]); err != nil {
			panic(err) // the factor is positive definite
		}
	}
	// p = (A + cFᵀF)⁻¹(b − b′ + cFᵀt), t = y or ŷ − μ.
	if a.split {
		floats.SubTo(a.fy, st.Yhat, st.Mu)
	} else {
		copy(a.fy, p.Y)
	}
	p.F.ApplyT(a.ft, a.fy)
	floats.SubTo(a.rhs, a.b, a.bp)
	floats.AddScaled(a.rhs, a.c, a.ft)
	if err := a.mf.SolveVecTo(a.pvv, a.rhsv); err != nil {
		panic(err)
	}
	for i := range st.U {
		st.U[i] = (a.q[i] + a.pv[i]) / 2
		st.Up[i] = (a.q[i] - a.pv[i]) / 2
	}
	copy(a.ow, st.W)
	copy(a.owp, st.Wp)
	copy(a.os, st.S)
	copy(a.osp, st.Sp)
	a.applyG(a.gu, st.U)
	a.applyG(a.gup, st.Up)
	beta := p.Beta / rho
	al := a.Options.Relax
	for _, t := range []struct{ u, w, lam, gu, s, nu, uh []float64 }{{st.U, st.W, st.Lam, a.gu, st.S, st.Nu, a.dn}, {st.Up, st.Wp, st.Lamp, a.gup, st.Sp, st.Nup, a.dn}} {
		// û = αu + (1 − α)w and ĝ = αGu + (1 − α)s from the old w, s.
		uh := t.uh
		for i := range uh {
			uh[i] = al*t.u[i] + (1-al)*t.w[i]
		}
		floats.AddTo(t.w, uh, t.lam)
		for g := range p.Groups {
			shrink(t.w[a.lay.off[g]:a.lay.off[g+1]], beta)
		}
		for i := range t.s {
			gh := al*t.gu[i] + (1-al)*t.s[i]
			t.s[i] = math.Max(0, gh+t.nu[i])
			t.nu[i] += gh - t.s[i]
		}
		for i := range t.lam {
			t.lam[i] += uh[i] - t.w[i]
		}
	}
	var splitR float64
	if a.split {
		fp := a.fp
		p.F.Apply(fp, a.pv)
		for k := range fp {
			fh := al*fp[k] + (1-al)*st.Yhat[k]
			st.Yhat[k] = prox(p.Loss, p.Y[k], fh+st.Mu[k], rho, a.n)
			st.Mu[k] += fh - st.Yhat[k]
			r := fp[k] - st.Yhat[k]
			splitR += r * r
		}
	}
	st.Iter++
	a.residuals(splitR)
}

// shrink applies the group soft threshold x ← (1 − t/‖x‖)_+ x.
func shrink(x []float64, t float64) {
	nx := floats.Norm(x, 2)
	if nx <= t {
		clear(x)
		return
	}
	floats.Scale(1-t/nx, x)
}

// prox returns argmin_z ℓ_k(z) + (ρ/2)(z − v)² for point k's term of the
// loss (the hinge, BCE and logistic terms carry the factor 1/n).
func prox(l solvers.Loss, y, v, rho float64, n int) float64 {
	switch l {
	case solvers.SquaredLoss:
		return (y + rho*v) / (1 + rho)
	case solvers.HingeLoss:
		// ℓ_k(z) = max(0, 1 − yz)/n, y = ±1.
		t := y * v
		step := 1 / (float64(n) * rho)
		switch {
		case t >= 1:
			return v
		case t <= 1-step:
			return v + y*step
		}
		return y
	}
	// ℓ_k(z) = softplus(cz)/n.
	return SoftplusProx(v, l.MarginScale(y), 1/float64(n), rho)
}

// SoftplusProx returns argmin_z w·softplus(cz) + (ρ/2)(z − v)² (w > 0): Newton's method on the
// monotone c w σ(cz) + ρ(z − v) = 0, safeguarded by bisection in its
// bracket [v − |c|w/ρ, v + |c|w/ρ].
func SoftplusProx(v, c, w, rho float64) float64 {
	lo, hi := v-math.Abs(c)*w/rho, v+math.Abs(c)*w/rho
	z := v
	for it := 0; it < 100; it++ {
		s := solvers.Logistic(c * z)
		f := c*s*w + rho*(z-v)
		if f > 0 {
			hi = z
		} else {
			lo = z
		}
		df := c*c*s*(1-s)*w + rho
		nz := z - f/df
		if !(nz > lo && nz < hi) {
			nz = (lo + hi) / 2
		}
		if math.Abs(nz-z) <= 1e-15*math.Max(1, math.Abs(z)) {
			return nz
		}
		z = nz
	}
	return z
}

// residuals sets the primal and dual residuals of the step just taken and
// the stopping test, with the constraint [u; u′; Gu; Gu′(; F(u − u′))] =
// [w; w′; s; s′(; ŷ)].
func (a *ADMM) residuals(splitR float64) {
	st := &a.State
	rho := st.Rho
	var r2, ax, bz float64
	for _, t := range []struct{ u, w, gu, s []float64 }{{st.U, st.W, a.gu, st.S}, {st.Up, st.Wp, a.gup, st.Sp}} {
		for i := range t.u {
			d := t.u[i] - t.w[i]
			r2 += d * d
			ax += t.u[i] * t.u[i]
			bz += t.w[i] * t.w[i]
		}
		for i := range t.gu {
			d := t.gu[i] - t.s[i]
			r2 += d * d
			ax += t.gu[i] * t.gu[i]
			bz += t.s[i] * t.s[i]
		}
	}
	r2 += splitR
	// Dual residual ρ·(Δw + GᵀΔs) for both halves; dual scale ρ(λ + Gᵀν).
	var s2, y2 float64
	dw, ds := a.dn, a.dm
	for _, t := range []struct{ w, ow, s, os, lam, nu []float64 }{{st.W, a.ow, st.S, a.os, st.Lam, st.Nu}, {st.Wp, a.owp, st.Sp, a.osp, st.Lamp, st.Nup}} {
		floats.SubTo(dw, t.w, t.ow)
		floats.SubTo(ds, t.s, t.os)
		a.addGT(dw, ds)
		s2 += floats.Dot(dw, dw)
		copy(dw, t.lam)
		a.addGT(dw, t.nu)
		y2 += floats.Dot(dw, dw)
	}
	pdim := float64(2 * (a.nv + a.m))
	r := &a.res
	r.Primal, r.Dual = math.Sqrt(r2), rho*math.Sqrt(s2)
	r.EpsPrimal = math.Sqrt(pdim)*a.Options.AbsTol + a.Options.RelTol*math.Sqrt(math.Max(ax, bz))
	r.EpsDual = math.Sqrt(float64(2*a.nv))*a.Options.AbsTol + a.Options.RelTol*rho*math.Sqrt(y2)
	r.Converged = r.Primal <= r.EpsPrimal && r.Dual <= r.EpsDual
}

// Residuals returns the residuals of the last step.
func (a *ADMM) Residuals() Residuals { return a.res }

// Record is one iteration of a run: the objective and constraint violation
// at (w, w′), the residuals, and the certificate when one was computed.
type Record struct {
	Iter                 int
	Objective, Violation float64
	Residuals            Residuals
	Bound                *Bound
}

// Solve runs at most maxIter steps, until the stopping test holds, the
// certified gap reaches gap (> 0; certified every certEvery steps and at the
// end), or ctx is done (the steps taken are kept in State). record, when
// not nil, receives every step's Record.
func (a *ADMM) Solve(ctx context.Context, maxIter int, gap float64, certEvery int, record func(Record)) (Record, error) {
	if maxIter < 0 || certEvery < 0 || math.IsNaN(gap) || gap < 0 {
		return Record{}, fmt.Errorf("general: Solve(maxIter %d, gap %v, certEvery %d): need values ≥ 0", maxIter, gap, certEvery)
	}
	var last Record
	for it := 0; it < maxIter; it++ {
		if err := ctx.Err(); err != nil {
			return last, fmt.Errorf("general: ADMM stopped after %d iterations: %w", a.State.Iter, err)
		}
		a.Step()
		rec, err := a.record(false)
		if err != nil {
			return last, err
		}
		done := a.res.Converged || it == maxIter-1
		if gap > 0 && (done || (certEvery > 0 && a.State.Iter%certEvery == 0)) {
			b, err := a.Bound()
			if err != nil {
				return last, err
			}
			rec.Bound = &b
			if b.Gap <= gap {
				done = true
			}
		}
		last = rec
		if record != nil {
			record(rec)
		}
		if done {
			break
		}
	}
	return last, nil
}

func (a *ADMM) record(bool) (Record, error) {
	obj, err := a.Program.Objective(a.State.W, a.State.Wp)
	if err != nil {
		return Record{}, err
	}
	viol, err := a.Program.Violation(a.State.W, a.State.Wp)
	if err != nil {
		return Record{}, err
	}
	return Record{Iter: a.State.Iter, Objective: obj, Violation: viol, Residuals: a.res}, nil
}
