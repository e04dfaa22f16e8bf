package gated

import (
	"context"
	"fmt"
	"math"
	"time"

	"gonum.org/v1/gonum/mat"
)

// SolveNewton solves a gated program with the squared loss by Newton's
// method on its active groups: with r = F(W) − T the residual, the
// objective ½‖r‖² + β Σ_g ‖W[g]‖ is smooth where its groups are nonzero,
// with Hessian FᵀF + B, B = blockdiag(β/‖W[g]‖ (I − ŵŵᵀ)), ŵ = W[g]/‖W[g]‖.
// Each step solves (FᵀF + B)Δ = −∇ inexactly by conjugate gradients,
// preconditioned by the exact diagonal blocks XᵀD_iX + β/‖W_i‖·I (one
// Cholesky factorization per gate and step), then backtracks on the
// objective. A group that shrinks to zero leaves the active set; a zero
// group whose optimality condition ‖(D_iX)ᵀr[g]‖ ≤ β fails re-enters with
// the exact minimizer of the objective along its block, at fixed others.
// Every step is certified as in Solve (the residual scaled to dual
// feasibility). Options: Tol, MaxIter (Newton steps, 200 when 0), Start,
// Progress; CertifyEvery and Rank do not apply.
func SolveNewton(ctx context.Context, p *Problem, opt Options) (*Result, error) {
	opt, err := squaredOptions(p, opt, "SolveNewton", 200)
	if err != nil {
		return nil, err
	}
	start := time.Now()
	n, d, np, c := p.Dims()
	ops := newGateOps(p.X, p.Gates, c)
	nt := &newton{p: p, ops: ops, n: n, d: d, np: np, c: c}
	nt.grams()
	w := mat.NewDense(d, np*c, nil)
	if opt.Start != nil {
		if err := checkWeights(opt.Start, np, d, c); err != nil {
			return nil, fmt.Errorf("gated: warm start: %w", err)
		}
		for i, b := range opt.Start {
			w.Slice(0, d, i*c, (i+1)*c).(*mat.Dense).Copy(b)
		}
	}
	f, r := mat.NewDense(n, c, nil), mat.NewDense(n, c, nil)
	gh := mat.NewDense(d, np*c, nil)
	if opt.Start == nil {
		nt.initial(w, f, r, gh)
	}
	res := &Result{}
	var ctxErr error
	iter := 0
	for {
		ops.forward(f, w)
		r.Sub(f, p.Targets)
		ops.backward(gh, r) // Fᵀr: the loss gradient, and the dual norm's
		obj := 0.5*frob2(r) + p.Beta*nt.regularizer(w)
		cert := p.certificate(obj, f, r, maxBlockNorm(gh, np, c, p.Groups))
		if len(res.History) > 0 {
			if prev := res.History[len(res.History)-1].Cert; prev.Lower > cert.Lower {
				cert.Lower = prev.Lower
				cert.Gap = (cert.Upper - cert.Lower) / math.Max(math.Abs(cert.Upper), 1e-12)
			}
		}
		it := Iterate{Iter: iter, Objective: obj, Cert: cert, Active: activeBlocks(w, np, c), Elapsed: time.Since(start)}
		res.History = append(res.History, it)
		if opt.Progress != nil {
			opt.Progress(it)
		}
		res.Objective, res.Cert, res.Iterations = obj, cert, iter
		if cert.Gap <= opt.Tol || iter >= opt.MaxIter {
			break
		}
		// Newton stalls where groups hover near zero without their
		// optimality settling (its model holds only in a ball of their
		// radius): when the last window of steps took less than a tenth of
		// the certified gap, accelerated proximal gradient finishes from
		// here. Exact (dense) steps get a longer window: groups leave one
		// per step.
		window := 5
		if nt.cross != nil {
			window = 60
		}
		if h := res.History; len(h) > window && h[len(h)-1-window].Objective-obj < 0.1*(obj-cert.Lower) {
			return nt.finish(ctx, w, res, opt, start)
		}
		if err := ctx.Err(); err != nil {
			ctxErr = err
			break
		}
		iter++
		if !nt.leave(w, gh) && !nt.enter(w, gh, r) {
			nt.step(w, gh, obj)
		}
	}
	res.W = make(Weights, np)
	for i := range res.W {
		res.W[i] = mat.DenseCopyOf(w.Slice(0, d, i*c, (i+1)*c))
	}
	return res, ctxErr
}

// finish hands the point over to Solve (proximal gradient, exact on zero
// groups).
func (nt *newton) finish(ctx context.Context, w *mat.Dense, res *Result, opt Options, start time.Time) (*Result, error) {
	d, c := nt.d, nt.c
	ws := make(Weights, nt.np)
	for i := range ws {
		ws[i] = mat.DenseCopyOf(w.Slice(0, d, i*c, (i+1)*c))
	}
	res.W = ws // the Newton point, certified in res
	o := opt
	o.MaxIter = 0
	o.Rank, o.CertifyEvery = 0, 0 // Solve on all of X from the Newton point
	return handOver(ctx, res, o, start, func(ctx context.Context, o Options) (*Result, error) { return Solve(ctx, nt.p, o) })
}

// squaredOptions checks p and opt for a Newton method of the squared loss
// (method names it in errors) and fills in the defaults: Tol 1e-6, MaxIter
// maxIter.
func squaredOptions(p *Problem, opt Options, method string, maxIter int) (Options, error) {
	if err := p.Validate(); err != nil {
		return opt, err
	}
	if p.Loss != Squared {
		return opt, fmt.Errorf("gated: %s solves the squared loss, not %v (use Solve)", method, p.Loss)
	}
	return opt.withDefaults(maxIter)
}

// withDefaults fills in the defaults every method shares (Tol 1e-6,
// MaxIter maxIter, CertifyEvery 10) and checks the options: 0 < Tol < 1
// (a relative gap), non-negative counts and Rank.
func (opt Options) withDefaults(maxIter int) (Options, error) {
	if opt.Tol == 0 {
		opt.Tol = 1e-6
	}
	if opt.MaxIter == 0 {
		opt.MaxIter = maxIter
	}
	if opt.CertifyEvery == 0 {
		opt.CertifyEvery = 10
	}
	if !(opt.Tol > 0 && opt.Tol < 1) || opt.MaxIter < 0 || opt.CertifyEvery < 0 {
		return opt, fmt.Errorf("gated: options Tol %v, MaxIter %d, CertifyEvery %d: need 0 < Tol < 1 and non-negative counts", opt.Tol, opt.MaxIter, opt.CertifyEvery)
	}
	if opt.Rank < 0 {
		return opt, fmt.Errorf("gated: Rank %d: need ≥ 0 (0: all of X's columns)", opt.Rank)
	}
	return opt, nil
}

// continued returns a Progress that reports a later solve's steps after
// the base steps of an earlier one, timed from start (nil for nil).
func continued(progress func(Iterate), base int, start time.Time) func(Iterate) {
	if progress == nil {
		return nil
	}
	return func(it Iterate) {
		it.Iter += base
		it.Elapsed = time.Since(start)
		progress(it)
	}
}

// appendSteps appends a later solve's history to res's, its steps numbered
// after base and its times shifted by offset.
func appendSteps(res *Result, h []Iterate, base int, offset time.Duration) {
	for _, it := range h {
		it.Iter += base
		it.Elapsed += offset
		res.History = append(res.History, it)
	}
}

// handOver continues a solve by another method, warm-started from res.W
// with opt (its Start and Progress set here): the other's certified steps
// follow res's in the history and the progress reports (step numbers and
// times from start go on), and the result keeps the better point and the
// better bound of the two.
func handOver(ctx context.Context, res *Result, opt Options, start time.Time, run func(context.Context, Options) (*Result, error)) (*Result, error) {
	base := res.Iterations
	opt.Start = res.W
	opt.Progress = continued(opt.Progress, base, start)
	offset := time.Since(start)
	fin, err := run(ctx, opt)
	if fin == nil {
		return res, err
	}
	appendSteps(res, fin.History, base, offset)
	if fin.Cert.Upper <= res.Cert.Upper {
		res.W, res.Objective = fin.W, fin.Objective
	}
	res.Cert.Upper = math.Min(res.Cert.Upper, fin.Cert.Upper)
	res.Cert.Lower = math.Max(res.Cert.Lower, fin.Cert.Lower)
	res.Cert.Gap = (res.Cert.Upper - res.Cert.Lower) / math.Max(math.Abs(res.Cert.Upper), 1e-12)
	res.Iterations = base + fin.Iterations
	return res, err
}

// newton holds SolveNewton's data: the gates' Gram matrices and work space.
type newton struct {
	p           *Problem
	ops         *gateOps
	n, d, np, c int
	gram        []*mat.SymDense // XᵀD_iX
	// chol[i][k] factors XᵀD_iX + s·I for the shift s of gate i's group k
	// (one group per gate for Joint, one per output for PerClass).
	chol [][]mat.Cholesky
	// cross[i][k] = XᵀD_iD_kX for i ≤ k when the program is small enough
	// for Newton's system to be formed and factored (denseLimit): the
	// steps are then exact.
	cross [][]*mat.Dense
}

// denseLimit bounds the unknowns P·d·c, and crossWork the flops n·d²·P²/2,
// of a program whose Newton system is formed and factored.
const (
	denseLimit = 2000
	crossWork  = 2e9
)

// denseDirection solves (FᵀF + B)Δ = −∇ on the active groups exactly by a
// Cholesky factorization of the assembled system and reports whether it
// did.
func (nt *newton) denseDirection(delta, w, grad *mat.Dense, sh [][]float64, active []bool) bool {
	d, c := nt.d, nt.c
	type v struct{ i, l, j int }
	var idx []v
	for i := 0; i < nt.np; i++ {
		if !active[i] {
			continue
		}
		for l := 0; l < d; l++ {
			for j := 0; j < c; j++ {
				if sh[i][j] > 0 {
					idx = append(idx, v{i, l, j})
				}
			}
		}
	}
	m := len(idx)
	if m == 0 {
		return false
	}
	h := mat.NewSymDense(m, nil)
	for a := 0; a < m; a++ {
		va := idx[a]
		for b := a; b < m; b++ {
			vb := idx[b]
			var x float64
			if va.j == vb.j {
				if va.i <= vb.i {
					x = nt.cross[va.i][vb.i].At(va.l, vb.l)
				} else {
					x = nt.cross[vb.i][va.i].At(vb.l, va.l)
				}
			}
			if va.i == vb.i {
				wb := nt.block(w, va.i)
				switch nt.p.Groups {
				case Joint:
					nr2 := frob2(wb)
					x -= sh[va.i][0] * wb.At(va.l, va.j) * wb.At(vb.l, vb.j) / nr2
					if va.l == vb.l && va.j == vb.j {
						x += sh[va.i][0]
					}
				case PerClass:
					if va.j == vb.j {
						var nr2 float64
						for l := 0; l < d; l++ {
							nr2 += wb.At(l, va.j) * wb.At(l, va.j)
						}
						x -= sh[va.i][va.j] * wb.At(va.l, va.j) * wb.At(vb.l, va.j) / nr2
						if va.l == vb.l {
							x += sh[va.i][va.j]
						}
					}
				}
			}
			h.SetSym(a, b, x)
		}
	}
	// Directions X does not see (zero columns) get a tiny ridge.
	ridge := 1e-12 * math.Max(mat.Trace(h)/float64(m), 1e-300)
	for a := 0; a < m; a++ {
		h.SetSym(a, a, h.At(a, a)+ridge)
	}
	var ch mat.Cholesky
	if !ch.Factorize(h) {
		return false
	}
	rhs := mat.NewVecDense(m, nil)
	for a, va := range idx {
		rhs.SetVec(a, -grad.At(va.l, va.i*c+va.j))
	}
	var sol mat.VecDense
	if err := ch.SolveVecTo(&sol, rhs); err != nil {
		return false
	}
	delta.Zero()
	for a, va := range idx {
		delta.Set(va.l, va.i*c+va.j, sol.AtVec(a))
	}
	return true
}

func frob2(m *mat.Dense) float64 {
	var s float64
	r, _ := m.Dims()
	for k := 0; k < r; k++ {
		for _, v := range m.RawRowView(k) {
			s += v * v
		}
	}
	return s
}

func activeBlocks(w *mat.Dense, np, c int) int {
	d, _ := w.Dims()
	k := 0
	for i := 0; i < np; i++ {
		if mat.Norm(w.Slice(0, d, i*c, (i+1)*c), 2) > 0 {
			k++
		}
	}
	return k
}

func (nt *newton) regularizer(w *mat.Dense) float64 {
	var s float64
	for i := 0; i < nt.np; i++ {
		s += groupNorms(nt.block(w, i).RawMatrix(), nt.p.Groups)
	}
	return s
}

func (nt *newton) block(w *mat.Dense, i int) *mat.Dense {
	return w.Slice(0, nt.d, i*nt.c, (i+1)*nt.c).(*mat.Dense)
}

// grams forms XᵀD_iX for every gate from the rows the gate keeps.
func (nt *newton) grams() {
	nt.gram = make([]*mat.SymDense, nt.np)
	nt.chol = make([][]mat.Cholesky, nt.np)
	groups := 1
	if nt.p.Groups == PerClass {
		groups = nt.c
	}
	for i := range nt.chol {
		nt.chol[i] = make([]mat.Cholesky, groups)
	}
	x := nt.p.X
	for i, g := range nt.p.Gates {
		on := 0
		for _, b := range g {
			if b {
				on++
			}
		}
		xi := mat.NewDense(max(on, 1), nt.d, nil)
		r := 0
		for k, b := range g {
			if b {
				copy(xi.RawRowView(r), x.RawRowView(k))
				r++
			}
		}
		nt.gram[i] = mat.NewSymDense(nt.d, nil)
		nt.gram[i].SymOuterK(1, xi.T())
	}
	if nt.np*nt.d*nt.c <= denseLimit && float64(nt.n)*float64(nt.d*nt.d)*float64(nt.np*nt.np)/2 <= crossWork {
		nt.cross = make([][]*mat.Dense, nt.np)
		xi := mat.NewDense(nt.n, nt.d, nil)
		for i := 0; i < nt.np; i++ {
			nt.cross[i] = make([]*mat.Dense, nt.np)
			for k := i; k < nt.np; k++ {
				// Rows both gates keep.
				for r := 0; r < nt.n; r++ {
					row := xi.RawRowView(r)
					if nt.p.Gates[i][r] && nt.p.Gates[k][r] {
						copy(row, x.RawRowView(r))
					} else {
						clear(row)
					}
				}
				nt.cross[i][k] = mat.NewDense(nt.d, nt.d, nil)
				nt.cross[i][k].Mul(xi.T(), xi)
			}
		}
	}
}

// initial sets every block to its regularized least-squares step from zero,
// W_i = −(1 − β/‖h_i‖)₊ (XᵀD_iX + εI)⁻¹h_i / P with h_i = (D_iX)ᵀ(−T): a
// start with every useful group nonzero, where Newton's steps apply.
func (nt *newton) initial(w, f, r, gh *mat.Dense) {
	r.Scale(-1, nt.p.Targets)
	nt.ops.backward(gh, r)
	for i := 0; i < nt.np; i++ {
		h := nt.block(gh, i)
		hn := mat.Norm(h, 2)
		if hn <= nt.p.Beta {
			continue
		}
		g := mat.NewSymDense(nt.d, nil)
		g.CopySym(nt.gram[i])
		eps := 1e-6 * math.Max(mat.Trace(g)/float64(nt.d), 1e-300)
		for l := 0; l < nt.d; l++ {
			g.SetSym(l, l, g.At(l, l)+eps)
		}
		var ch mat.Cholesky
		if !ch.Factorize(g) {
			continue
		}
		b := nt.block(w, i)
		if err := ch.SolveTo(b, h); err != nil {
			b.Zero()
			continue
		}
		b.Scale(-(1-nt.p.Beta/hn)/float64(nt.np), b)
	}
}

// shifts returns, per gate and group column, β/‖W[g]‖ (0 for a zero group),
// as a P×c table (Joint: every column of a gate holds the gate's shift).
func (nt *newton) shifts(w *mat.Dense) [][]float64 {
	s := make([][]float64, nt.np)
	for i := range s {
		s[i] = make([]float64, nt.c)
		b := nt.block(w, i)
		if nt.p.Groups == Joint {
			if nr := mat.Norm(b, 2); nr > 0 {
				for j := range s[i] {
					s[i][j] = nt.p.Beta / nr
				}
			}
			continue
		}
		for j := 0; j < nt.c; j++ {
			if nr := mat.Norm(b.ColView(j), 2); nr > 0 {
				s[i][j] = nt.p.Beta / nr
			}
		}
	}
	return s
}

// leave zeroes the nonzero groups whose best value, the others fixed, is
// zero: ‖(D_iX)ᵀr₋ᵢ[g]‖ ≤ β with r₋ᵢ = r − D_iXW_i the residual without the
// block, (D_iX)ᵀr₋ᵢ = (D_iX)ᵀr − G_iW_i. It reports whether w changed.
func (nt *newton) leave(w, gh *mat.Dense) bool {
	changed := false
	var gw mat.Dense
	for i := 0; i < nt.np; i++ {
		b := nt.block(w, i)
		if mat.Norm(b, 2) == 0 {
			continue
		}
		gw.Reset()
		gw.Mul(nt.gram[i], b)
		gw.Sub(nt.block(gh, i), &gw)
		if nt.p.Groups == Joint {
			if mat.Norm(&gw, 2) <= nt.p.Beta {
				b.Zero()
				changed = true
			}
		} else {
			// The squared loss separates over the outputs: a gate's
			// columns are independent of each other.
			for j := 0; j < nt.c; j++ {
				if mat.Norm(b.ColView(j), 2) > 0 && mat.Norm(gw.ColView(j), 2) <= nt.p.Beta {
					for l := 0; l < nt.d; l++ {
						b.Set(l, j, 0)
					}
					changed = true
				}
			}
		}
		if changed {
			// The residual moved: other gates are tested at the next step.
			return true
		}
	}
	return false
}

// enter gives every zero group that violates its optimality condition the
// minimizer of the objective along that group with the others fixed,
// and reports whether it changed w. The block problem
// min_V ½VᵀG_iV + ⟨h, V⟩ + β‖V‖ (h = (D_iX)ᵀr) is solved by the secular
// equation of Solve's prox in G_i's eigenbasis.
func (nt *newton) enter(w, gh, r *mat.Dense) bool {
	changed := false
	for i := 0; i < nt.np; i++ {
		b := nt.block(w, i)
		h := nt.block(gh, i)
		switch nt.p.Groups {
		case Joint:
			if mat.Norm(b, 2) > 0 || mat.Norm(h, 2) <= nt.p.Beta*(1+1e-9) {
				continue
			}
		case PerClass:
			viol := false
			for j := 0; j < nt.c; j++ {
				if mat.Norm(b.ColView(j), 2) == 0 && mat.Norm(h.ColView(j), 2) > nt.p.Beta*(1+1e-9) {
					viol = true
				}
			}
			if !viol {
				continue
			}
		}
		var eig mat.EigenSym
		if !eig.Factorize(nt.gram[i], true) {
			continue
		}
		lam := eig.Values(nil)
		floor := 1e-12 * math.Max(lam[len(lam)-1], 1e-300)
		for j := range lam {
			lam[j] = math.Max(lam[j], floor)
		}
		var q mat.Dense
		eig.VectorsTo(&q)
		var hh mat.Dense
		hh.Mul(q.T(), h) // in the eigenbasis
		sq := make([]float64, nt.d)
		fill := func(cols []int) {
			for l := 0; l < nt.d; l++ {
				var t float64
				for _, j := range cols {
					t += hh.At(l, j) * hh.At(l, j)
				}
				sq[l] = t
			}
			mu := secular(sq, lam, 1, nt.p.Beta)
			for _, j := range cols {
				for l := 0; l < nt.d; l++ {
					if math.IsInf(mu, 1) {
						hh.Set(l, j, 0) // zero is this group's best value
					} else {
						hh.Set(l, j, -hh.At(l, j)/(lam[l]+mu))
					}
				}
			}
		}
		if nt.p.Groups == Joint {
			cols := make([]int, nt.c)
			for j := range cols {
				cols[j] = j
			}
			fill(cols)
		} else {
			for j := 0; j < nt.c; j++ {
				if mat.Norm(b.ColView(j), 2) == 0 {
					fill([]int{j})
				} else {
					for l := 0; l < nt.d; l++ {
						hh.Set(l, j, 0)
					}
				}
			}
		}
		var v mat.Dense
		v.Mul(&q, &hh)
		if mat.Norm(&v, 2) > 0 {
			b.Add(b, &v)
			changed = true
		}
		// The residual changes with w: later gates see it at the next step.
		break
	}
	return changed
}

// step takes one Newton step on the active groups: PCG on
// (FᵀF + B)Δ = −∇φ, then backtracking on φ from the full step.
func (nt *newton) step(w, gh *mat.Dense, obj float64) {
	d, np, c := nt.d, nt.np, nt.c
	sh := nt.shifts(w)
	// The Hessian of β‖W[g]‖ grows like β/‖W[g]‖ as a group nears zero,
	// where its quadratic model holds only in a ball of radius ‖W[g]‖: the
	// model's curvature is capped at β/τ, τ a hundredth of the largest
	// group's norm, so that small groups move freely (the gradient stays
	// exact, the line search keeps every step a descent; leave removes the
	// groups whose best value is zero).
	big := 0.0
	for i := range sh {
		for j := range sh[i] {
			if sh[i][j] > 0 {
				big = math.Max(big, nt.p.Beta/sh[i][j])
			}
		}
	}
	hs := make([][]float64, np)
	for i := range sh {
		hs[i] = make([]float64, c)
		for j, v := range sh[i] {
			if v > 0 {
				hs[i][j] = math.Min(v, nt.p.Beta/(0.01*big))
			}
		}
	}
	active := make([]bool, np)
	for i := range active {
		for j := 0; j < c; j++ {
			active[i] = active[i] || sh[i][j] > 0
		}
		for k := range nt.chol[i] {
			if !active[i] || sh[i][k] == 0 {
				continue
			}
			g := mat.NewSymDense(d, nil)
			g.CopySym(nt.gram[i])
			for l := 0; l < d; l++ {
				g.SetSym(l, l, g.At(l, l)+hs[i][k])
			}
			if !nt.chol[i][k].Factorize(g) {
				active[i] = false
			}
		}
	}
	// ∇φ = Fᵀr + β W[g]/‖W[g]‖ on active groups (gh holds Fᵀr).
	grad := mat.DenseCopyOf(gh)
	for i := 0; i < np; i++ {
		gb, wb := nt.block(grad, i), nt.block(w, i)
		if !active[i] {
			gb.Zero()
			continue
		}
		for j := 0; j < c; j++ {
			if sh[i][j] == 0 {
				for l := 0; l < d; l++ {
					gb.Set(l, j, 0)
				}
				continue
			}
			for l := 0; l < d; l++ {
				gb.Set(l, j, gb.At(l, j)+sh[i][j]*wb.At(l, j))
			}
		}
	}
	gnorm := math.Sqrt(frob2(grad))
	if gnorm == 0 {
		return
	}
	// PCG: A(V) = FᵀF V + B V on active groups.
	fv := mat.NewDense(nt.n, c, nil)
	// Only active groups move: zero groups' columns stay zero.
	restrict := func(db *mat.Dense, i int) {
		for j := 0; j < c; j++ {
			if !active[i] || sh[i][j] == 0 {
				for l := 0; l < d; l++ {
					db.Set(l, j, 0)
				}
			}
		}
	}
	apply := func(dst, v *mat.Dense) {
		nt.ops.forward(fv, v)
		nt.ops.backward(dst, fv)
		for i := 0; i < np; i++ {
			db, vb, wb := nt.block(dst, i), nt.block(v, i), nt.block(w, i)
			if active[i] {
				nt.addB(db, vb, wb, hs[i])
			}
			restrict(db, i)
		}
	}
	precond := func(dst, v *mat.Dense) {
		for i := 0; i < np; i++ {
			db := nt.block(dst, i)
			if active[i] {
				vb := nt.block(v, i)
				if len(nt.chol[i]) == 1 {
					nt.chol[i][0].SolveTo(db, vb)
				} else {
					for j := 0; j < c; j++ {
						if sh[i][j] > 0 {
							nt.chol[i][j].SolveVecTo(db.ColView(j).(*mat.VecDense), vb.ColView(j))
						}
					}
				}
			}
			restrict(db, i)
		}
	}
	delta := mat.NewDense(d, np*c, nil)
	if nt.cross != nil && nt.denseDirection(delta, w, grad, sh, active) {
		nt.lineSearch(w, grad, delta, obj)
		return
	}
	rr := mat.DenseCopyOf(grad)
	rr.Scale(-1, rr)
	z := mat.NewDense(d, np*c, nil)
	precond(z, rr)
	pd := mat.DenseCopyOf(z)
	ap := mat.NewDense(d, np*c, nil)
	rz := inner(rr, z)
	tol := math.Min(0.1, math.Sqrt(gnorm/math.Max(1, math.Abs(obj)))) * gnorm
	for k := 0; k < 200; k++ {
		apply(ap, pd)
		pap := inner(pd, ap)
		if !(pap > 0) {
			break
		}
		alpha := rz / pap
		delta.Add(delta, scaledCopy(alpha, pd))
		rr.Sub(rr, scaledCopy(alpha, ap))
		if math.Sqrt(frob2(rr)) <= tol {
			break
		}
		precond(z, rr)
		rzNew := inner(rr, z)
		pd.Scale(rzNew/rz, pd)
		pd.Add(pd, z)
		rz = rzNew
	}
	nt.lineSearch(w, grad, delta, obj)
}

// lineSearch backtracks on φ from the full step w + delta.
func (nt *newton) lineSearch(w, grad, delta *mat.Dense, obj float64) {
	d, np, c := nt.d, nt.np, nt.c
	f := mat.NewDense(nt.n, c, nil)
	trial := mat.NewDense(d, np*c, nil)
	slope := inner(grad, delta)
	for a := 1.0; a > 1e-10; a /= 2 {
		trial.Copy(delta)
		trial.Scale(a, trial)
		trial.Add(trial, w)
		nt.ops.forward(f, trial)
		f.Sub(f, nt.p.Targets)
		val := 0.5*frob2(f) + nt.p.Beta*nt.regularizer(trial)
		if val <= obj+1e-4*a*slope || (val < obj && a < 1e-3) {
			// Groups that nearly vanished leave the active set.
			for i := 0; i < np; i++ {
				b := nt.block(trial, i)
				if nr := mat.Norm(b, 2); nr > 0 && nr < 1e-12*math.Sqrt(frob2(trial)) {
					b.Zero()
				}
			}
			w.Copy(trial)
			return
		}
	}
}

// addB adds B_i V to dst: s(V − ŵ⟨ŵ, V⟩) per group (ŵ the unit W[g]).
func (nt *newton) addB(dst, v, wb *mat.Dense, sh []float64) {
	d, c := nt.d, nt.c
	if nt.p.Groups == Joint {
		s := sh[0]
		if s == 0 {
			return
		}
		nr := mat.Norm(wb, 2)
		dot := 0.0
		for l := 0; l < d; l++ {
			for j := 0; j < c; j++ {
				dot += wb.At(l, j) * v.At(l, j)
			}
		}
		dot /= nr * nr
		for l := 0; l < d; l++ {
			for j := 0; j < c; j++ {
				dst.Set(l, j, dst.At(l, j)+s*(v.At(l, j)-dot*wb.At(l, j)))
			}
		}
		return
	}
	for j := 0; j < c; j++ {
		s := sh[j]
		if s == 0 {
			continue
		}
		var nr2, dot float64
		for l := 0; l < d; l++ {
			nr2 += wb.At(l, j) * wb.At(l, j)
			dot += wb.At(l, j) * v.At(l, j)
		}
		dot /= nr2
		for l := 0; l < d; l++ {
			dst.Set(l, j, dst.At(l, j)+s*(v.At(l, j)-dot*wb.At(l, j)))
		}
	}
}

func scaledCopy(a float64, m *mat.Dense) *mat.Dense {
	var s mat.Dense
	s.Scale(a, m)
	return &s
}
