package general

import (
	"context"
	"errors"
	"fmt"
	"math"

	"github.com/convexnn/convexnn/solvers/ipm"
	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/gonum/mat"
)

// ConeProgram is a convex program in the form the ADMM splitting of the
// appendix's CNN formulations takes (“split into loss function terms,
// regularization terms, and linear inequality constraints”):
//
//	minimize ½xᵀQx + cᵀx + Σ_r φ_r(s_r)   subject to   Gx + s = h,  s_K ∈ K
//
// The first K.Dim() rows of G are the cone's: the orthant's rows are the
// linear inequality constraints (and the epigraphs of piecewise-linear
// losses), its second-order cones the groups' regularization terms. The
// LossRows rows after them carry a separable convex loss φ_r of their
// slack, given by its proximal map (a smooth loss such as BCE, which no
// cone of the interior-point method expresses). Only NewConeADMM reads G
// (the solver keeps its rows compressed), so a caller may release it.
type ConeProgram struct {
	Q *mat.SymDense // n×n positive semidefinite, or nil
	C []float64     // n
	G *mat.Dense    // (K.Dim() + LossRows)×n
	H []float64
	K ipm.Cone
	// LossRows counts the rows after K's; Prox(r, v, ρ) returns
	// argmin_s φ_r(s) + (ρ/2)(s − v)² for such a row r (0-based among them).
	LossRows int
	Prox     func(r int, v, rho float64) float64
}

// ConeOptions configure ConeADMM.
type ConeOptions struct {
	// Rho is the initial penalty ρ (0: 0.1); Sigma the proximal weight σ
	// of the x-update (0: 1e-6); Relax the over-relaxation α ∈ (0, 2) (0:
	// 1.6, the value OSQP and SCS use).
	Rho, Sigma, Relax float64
	// AdaptEvery is the number of steps between adjustments of ρ to the
	// ratio of the residuals (0: 50; −1: never).
	AdaptEvery int
}

// ConeState is ConeADMM's whole iteration state: x, the slacks s and the
// multipliers z of the equilibrated rows, ρ, and the steps taken. A solver
// made from a saved state takes exactly the steps of an uninterrupted run.
type ConeState struct {
	Iter    int
	Rho     float64
	X, S, Z []float64
}

// ConeADMM runs the ADMM splitting on a ConeProgram whose rows are first
// equilibrated (each orthant row and loss row divided by its norm, each
// second-order cone's rows by the largest norm among them, which keeps
// the cone). One step, with Ĝ, ĥ the equilibrated rows and ŝ, ẑ their
// slacks and multipliers (OSQP's splitting with cones, Stellato et al.
// 2020; SCS's projections, O'Donoghue et al. 2016):
//
//	(Q + σI + ρĜᵀĜ) x = σx − c − Ĝᵀ(ẑ + ρ(ŝ − ĥ))
//	ṽ = α(ĥ − Ĝx) + (1 − α)ŝ
//	ŝ = Π(ṽ − ẑ/ρ)   (projection on K; prox of φ_r/ρ on loss rows)
//	ẑ = ẑ + ρ(ŝ − ṽ)
//
// so that ẑ lies in the dual cone K after every step (Moreau's
// decomposition) and Qx + c + Ĝᵀẑ → 0. The x-system is formed once from
// Ĝ's sparse rows and inverted (by its Cholesky factor) again only when ρ
// changes; a step multiplies by the inverse. The multipliers
// of the original rows, Z(), feed the caller's certificate, which must
// hold for any of them.
type ConeADMM struct {
	P       *ConeProgram
	Options ConeOptions
	State   ConeState

	n, m, mk  int
	scale     []float64 // the rows' equilibration factors
	hs        []float64 // ĥ
	rowPtr    []int
	cols      []int32
	vals      []float64 // Ĝ in compressed rows
	gtg       *mat.SymDense
	inv       *mat.SymDense // (Q + σI + ρĜᵀĜ)⁻¹
	factorRho float64
	rhs, gx   []float64
	v, gz     []float64
}

// NewConeADMM checks p and prepares its equilibrated rows; st, when not
// nil, is a saved state to continue from.
func NewConeADMM(p *ConeProgram, o ConeOptions, st *ConeState) (*ConeADMM, error) {
	if p == nil || p.G == nil {
		return nil, errors.New("general: ConeADMM needs a program with G")
	}
	if err := p.K.Validate(); err != nil {
		return nil, fmt.Errorf("general: %w", err)
	}
	m, n := p.G.Dims()
	if n > math.MaxInt32 {
		return nil, fmt.Errorf("general: cone program with %d variables, more than ConeADMM indexes", n)
	}
	mk := p.K.Dim()
	switch {
	case len(p.C) != n || len(p.H) != m:
		return nil, fmt.Errorf("general: cone program with G %d×%d, c of %d, h of %d", m, n, len(p.C), len(p.H))
	case mk+p.LossRows != m || p.LossRows < 0:
		return nil, fmt.Errorf("general: cone program with %d rows, %d in the cone and %d loss rows", m, mk, p.LossRows)
	case p.LossRows > 0 && p.Prox == nil:
		return nil, errors.New("general: cone program with loss rows and no Prox")
	}
	if p.Q != nil {
		if q := p.Q.SymmetricDim(); q != n {
			return nil, fmt.Errorf("general: cone program with Q %d×%d for %d variables", q, q, n)
		}
	}
	for _, v := range append(append([]float64(nil), p.C...), p.H...) {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return nil, errors.New("general: cone program with a non-finite c or h")
		}
	}
	if o.Rho == 0 {
		o.Rho = 0.1
	}
	if o.Sigma == 0 {
		o.Sigma = 1e-6
	}
	if o.Relax == 0 {
		o.Relax = 1.6
	}
	if o.AdaptEvery == 0 {
		o.AdaptEvery = 50
	}
	switch {
	case !(o.Rho > 0) || math.IsInf(o.Rho, 0) || !(o.Sigma > 0) || math.IsInf(o.Sigma, 0):
		return nil, fmt.Errorf("general: ConeADMM ρ = %v, σ = %v: need finite values > 0", o.Rho, o.Sigma)
	case !(o.Relax > 0 && o.Relax < 2):
		return nil, fmt.Errorf("general: ConeADMM relaxation %v, need 0 < α < 2", o.Relax)
	case o.AdaptEvery < -1:
		return nil, fmt.Errorf("general: ConeADMM AdaptEvery %d, need ≥ −1", o.AdaptEvery)
	}
	for r := 0; r < m; r++ {
		for _, v := range p.G.RawRowView(r) {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return nil, fmt.Errorf("general: cone program with a non-finite entry in row %d of G", r)
			}
		}
	}
	a := &ConeADMM{P: p, Options: o, n: n, m: m, mk: mk, scale: make([]float64, m), hs: make([]float64, m),
		rhs: make([]float64, n), gx: make([]float64, m), v: make([]float64, m), gz: make([]float64, n)}
	a.equilibrate()
	if st != nil {
		if len(st.X) != n || len(st.S) != m || len(st.Z) != m || !(st.Rho > 0) || math.IsInf(st.Rho, 0) || st.Iter < 0 {
			return nil, fmt.Errorf("general: saved cone ADMM state does not fit the program (%d variables, %d rows)", n, m)
		}
		for name, v := range map[string][]float64{"x": st.X, "s": st.S, "z": st.Z} {
			for i, e := range v {
				if math.IsNaN(e) || math.IsInf(e, 0) {
					return nil, fmt.Errorf("general: saved cone ADMM state: %s[%d] is %v", name, i, e)
				}
			}
		}
		a.State = ConeState{Iter: st.Iter, Rho: st.Rho, X: append([]float64(nil), st.X...), S: append([]float64(nil), st.S...), Z: append([]float64(nil), st.Z...)}
	} else {
		a.State = ConeState{Rho: o.Rho, X: make([]float64, n), S: make([]float64, m), Z: make([]float64, m)}
		// s starts at the projection of h (x = 0): feasible for x = 0
		// when h is in K.
		copy(a.State.S, a.hs)
		a.project(a.State.S, a.State.Rho)
	}
	if err := a.factor(); err != nil {
		return nil, err
	}
	return a, nil
}

// equilibrate scales the rows and stores Ĝ in compressed rows and ĜᵀĜ.
func (a *ConeADMM) equilibrate() {
	p := a.P
	norm := make([]float64, a.m)
	for r := 0; r < a.m; r++ {
		s := 0.0
		for _, v := range p.G.RawRowView(r) {
			s += v * v
		}
		norm[r] = math.Sqrt(s)
	}
	for r := range a.scale {
		a.scale[r] = 1
		if r < p.K.Orthant && norm[r] > 0 {
			a.scale[r] = 1 / norm[r]
		}
	}
	off := p.K.Orthant
	for _, q := range p.K.SOC {
		big := 0.0
		for r := off; r < off+q; r++ {
			big = math.Max(big, norm[r])
		}
		if big > 0 {
			for r := off; r < off+q; r++ {
				a.scale[r] = 1 / big
			}
		}
		off += q
	}
	// Loss rows keep their scale: Prox is of the original slack.
	a.rowPtr = make([]int, a.m+1)
	a.gtg = mat.NewSymDense(a.n, nil)
	raw := a.gtg.RawSymmetric()
	for r := 0; r < a.m; r++ {
		start := len(a.cols)
		for j, v := range p.G.RawRowView(r) {
			if v != 0 {
				a.cols = append(a.cols, int32(j))
				a.vals = append(a.vals, v*a.scale[r])
			}
		}
		a.rowPtr[r+1] = len(a.cols)
		a.hs[r] = p.H[r] * a.scale[r]
		cs, vs := a.cols[start:], a.vals[start:]
		for i, ci := range cs {
			row := raw.Data[int(ci)*raw.Stride:]
			for k := i; k < len(cs); k++ { // upper triangle: cs ascending
				row[cs[k]] += vs[i] * vs[k]
			}
		}
	}
}

// factor factors Q + σI + ρĜᵀĜ at the state's ρ.
func (a *ConeADMM) factor() error {
	rho := a.State.Rho
	k := mat.NewSymDense(a.n, nil)
	k.ScaleSym(rho, a.gtg)
	if a.P.Q != nil {
		k.AddSym(k, a.P.Q)
	}
	for i := 0; i < a.n; i++ {
		k.SetSym(i, i, k.At(i, i)+a.Options.Sigma)
	}
	var ch mat.Cholesky
	if !ch.Factorize(k) {
		return errors.New("general: ConeADMM's x-system is not positive definite (Q not semidefinite?)")
	}
	// The explicit inverse: one pass over n²/2 numbers per step, where the
	// two triangular solves read the factor twice (the step is bound by
	// memory traffic).
	if a.inv == nil {
		a.inv = mat.NewSymDense(a.n, nil)
	}
	if err := ch.InverseTo(a.inv); err != nil {
		return fmt.Errorf("general: ConeADMM's x-system: %w", err)
	}
	a.factorRho = rho
	return nil
}

// mulG sets out = Ĝx.
func (a *ConeADMM) mulG(out, x []float64) {
	for r := 0; r < a.m; r++ {
		lo, hi := a.rowPtr[r], a.rowPtr[r+1]
		cs, vs := a.cols[lo:hi], a.vals[lo:hi]
		s := 0.0
		for k, c := range cs {
			s += vs[k] * x[c]
		}
		out[r] = s
	}
}

// mulGT sets out = Ĝᵀy.
func (a *ConeADMM) mulGT(out, y []float64) {
	clear(out)
	for r := 0; r < a.m; r++ {
		if y[r] == 0 {
			continue
		}
		lo, hi, yr := a.rowPtr[r], a.rowPtr[r+1], y[r]
		cs, vs := a.cols[lo:hi], a.vals[lo:hi]
		for k, c := range cs {
			out[c] += vs[k] * yr
		}
	}
}

// project sets v to its projection on K (cone rows) and to the prox of
// φ_r/ρ (loss rows).
func (a *ConeADMM) project(v []float64, rho float64) {
	p := a.P
	for r := 0; r < p.K.Orthant; r++ {
		v[r] = math.Max(v[r], 0)
	}
	off := p.K.Orthant
	for _, q := range p.K.SOC {
		projectSOC(v[off : off+q])
		off += q
	}
	for r := 0; r < p.LossRows; r++ {
		v[a.mk+r] = p.Prox(r, v[a.mk+r], rho)
	}
}

// projectSOC projects (t, u) on the second-order cone ‖u‖ ≤ t.
func projectSOC(v []float64) {
	t, u := v[0], v[1:]
	nu := 0.0
	for _, x := range u {
		nu += x * x
	}
	nu = math.Sqrt(nu)
	switch {
	case nu <= t:
	case nu <= -t:
		clear(v)
	default:
		a := (t + nu) / 2
		v[0] = a
		for i := range u {
			u[i] *= a / nu
		}
	}
}

// Step takes one step (see ConeADMM).
func (a *ConeADMM) Step() {
	st, p, o := &a.State, a.P, a.Options
	rho := st.Rho
	for r := range a.v {
		a.v[r] = st.Z[r] + rho*(st.S[r]-a.hs[r])
	}
	a.mulGT(a.gz, a.v)
	for j := range a.rhs {
		a.rhs[j] = o.Sigma*st.X[j] - p.C[j] - a.gz[j]
	}
	blas64.Symv(1, a.inv.RawSymmetric(), blas64.Vector{N: a.n, Inc: 1, Data: a.rhs}, 0, blas64.Vector{N: a.n, Inc: 1, Data: st.X})
	a.mulG(a.gx, st.X)
	for r := range a.v {
		vt := o.Relax*(a.hs[r]-a.gx[r]) + (1-o.Relax)*st.S[r]
		a.v[r] = vt - st.Z[r]/rho
	}
	copy(st.S, a.v)
	a.project(st.S, rho)
	for r := range st.Z { // ẑ + ρ(ŝ − ṽ), as ρ(Π(v) − v): ≥ 0 exactly on the orthant
		st.Z[r] = rho * (st.S[r] - a.v[r])
	}
	st.Iter++
	if o.AdaptEvery > 0 && st.Iter%o.AdaptEvery == 0 {
		a.adapt()
	}
}

// adapt moves ρ to balance the relative primal and dual residuals
// (OSQP's rule), refactoring when it changes more than fivefold.
func (a *ConeADMM) adapt() {
	st, p := &a.State, a.P
	a.mulG(a.gx, st.X)
	var rp, gxMax, sMax, hMax float64
	for r := range a.gx {
		rp = math.Max(rp, math.Abs(a.gx[r]+st.S[r]-a.hs[r]))
		gxMax = math.Max(gxMax, math.Abs(a.gx[r]))
		sMax = math.Max(sMax, math.Abs(st.S[r]))
		hMax = math.Max(hMax, math.Abs(a.hs[r]))
	}
	a.mulGT(a.gz, st.Z)
	qx := make([]float64, a.n)
	if p.Q != nil {
		mat.NewVecDense(a.n, qx).MulVec(p.Q, mat.NewVecDense(a.n, st.X))
	}
	var rd, qMax, gzMax, cMax float64
	for j := range qx {
		rd = math.Max(rd, math.Abs(qx[j]+p.C[j]+a.gz[j]))
		qMax = math.Max(qMax, math.Abs(qx[j]))
		gzMax = math.Max(gzMax, math.Abs(a.gz[j]))
		cMax = math.Max(cMax, math.Abs(p.C[j]))
	}
	prel := rp / math.Max(1e-300, math.Max(gxMax, math.Max(sMax, hMax)))
	drel := rd / math.Max(1e-300, math.Max(qMax, math.Max(gzMax, cMax)))
	if !(prel > 0 && drel > 0) {
		return
	}
	rho := st.Rho * math.Sqrt(prel/drel)
	rho = math.Min(math.Max(rho, 1e-6), 1e6)
	if rho > 5*a.factorRho || rho < a.factorRho/5 {
		old := st.Rho
		st.Rho = rho
		if a.factor() != nil {
			st.Rho = old
			_ = a.factor()
		}
	}
}

// Z returns the multipliers of the original rows (ẑ times each row's
// equilibration factor), in the dual cone.
func (a *ConeADMM) Z() []float64 {
	z := make([]float64, a.m)
	for r, v := range a.State.Z {
		z[r] = v * a.scale[r]
	}
	return z
}

// Snapshot returns a copy of the state, for saving.
func (a *ConeADMM) Snapshot() ConeState {
	s := a.State
	s.X = append([]float64(nil), s.X...)
	s.S = append([]float64(nil), s.S...)
	s.Z = append([]float64(nil), s.Z...)
	return s
}

// Run takes at most maxIter steps, calling check (when not nil) every
// every steps (every > 0) and after the last, with the state's x and the
// original rows' multipliers; it stops when check returns true or ctx is
// done (the steps taken are kept in State).
func (a *ConeADMM) Run(ctx context.Context, maxIter, every int, check func(x, z []float64) bool) error {
	if maxIter < 0 || every < 0 {
		return fmt.Errorf("general: ConeADMM.Run(maxIter %d, every %d): need values ≥ 0", maxIter, every)
	}
	for it := 0; it < maxIter; it++ {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("general: cone ADMM stopped after %d steps: %w", a.State.Iter, err)
		}
		a.Step()
		if check != nil && ((every > 0 && a.State.Iter%every == 0) || it == maxIter-1) {
			if check(a.State.X, a.Z()) {
				return nil
			}
		}
	}
	return nil
}
