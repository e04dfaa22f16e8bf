package gated

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/gonum/lapack/lapack64"
	"gonum.org/v1/gonum/mat"
)

// SolveKernel solves a squared-loss program through its multiple-kernel
// form (per-class groups: one program per class, which they separate
// into). The variational form of the
// group norm (Bach 2008; Rakotomamonjy et al., SimpleMKL, 2008),
//
//	β‖W_i‖_F = min_{t_i ≥ 0} ‖W_i‖²_F/(2t_i) + β²t_i/2,
//
// turns the program into ridge regression inside, with the closed form
//
//	min_{t ≥ 0} F(t) = ½⟨T, M_t⁻¹T⟩ + (β²/2) Σ_i t_i,
//	M_t = I + Σ_i t_i D_iXXᵀD_i = I + (XXᵀ) ∘ (Γ diag(t) Γᵀ),
//
// a convex function of the P kernel weights (Γ is the n×P 0/1 matrix of the
// gates). At t the residual is Λ = M_t⁻¹T, the weights W_i = t_i XᵀD_iΛ,
// and with Z_i = XᵀD_iΛ, a_i = ‖Z_i‖_F, V_i = D_iXZ_i:
//
//	∂F/∂t_i = ½(β² − a_i²),   ∂²F/∂t_i∂t_j = H_ij = ⟨V_i, M_t⁻¹V_j⟩.
//
// At the optimum a_i = β on every active gate and a_i ≤ β elsewhere: the
// dual feasibility of the certificate itself. Each step is Newton's: on
// the equations log(a_i/β) = 0 in log t_i for the gates with a_i ≥ β (the
// step y solves H y = a²∘log(a/β), t_i ← t_i·exp(y_i/t_i): exact where
// a_i ∝ 1/t_i, the regime of small β), on ∂F/∂t_i = 0 in t_i, projected
// on t_i ≥ 0, for the others; quadratic near the optimum. A step that
// does not lower F is replaced by projected Newton's (the exact minimizer
// of F's quadratic model on t ≥ 0, cut back until F falls by a fraction
// of the model's prediction), where gates enter and leave, then by the
// multiplicative step t_i ← t_i·a_i/β of alternating minimization in
// (W, t), which never raises F. The certificate's dual point is Λ scaled
// to feasibility.
// When F no longer falls at working precision (M_t too ill-conditioned,
// as for programs that cannot come near interpolation at a tiny β), or ten
// steps do not halve the gap, SolveNewton finishes from the best weights
// (unless the gap is within 100·Tol and P·d·c too large for its exact
// system: the solve then returns its certificate as it is).
//
// A step factors the n×n matrix M_t (Cholesky, n³/3 flops) unless it
// changes t so little that conjugate gradients preconditioned by the last
// factor solve M_t Λ = T to the certificate's accuracy in a few products
// with X (solveAt: every t_i within a factor reuseKappa of the factor's,
// as in the last steps of a solve); the Hessian is then taken with the
// last factor, corrected to first order in the change of M_t (hessian). The method keeps
// XXᵀ and the factor: 2·8n² bytes, so n is at most KernelMaxRows. The
// cost does not grow with d or P, and programs that nearly interpolate
// (small β), where first-order methods on W stall, are certified in a few
// steps. Options: Tol, MaxIter (steps, 100 when 0), Start (t_i =
// ‖W_i‖_F/β; a start of zeros, or none, is checked first: at β ≥ β_max the
// zero weights are certified optimal without forming XXᵀ; otherwise all
// t_i = (β_max/β)/mean diag(XXᵀ)), Progress; CertifyEvery and Rank do not
// apply.
func SolveKernel(ctx context.Context, p *Problem, opt Options) (*Result, error) {
	opt, err := squaredOptions(p, opt, "the kernel method", 100)
	if err != nil {
		return nil, err
	}
	n, d, np, c := p.Dims()
	if n > KernelMaxRows {
		return nil, fmt.Errorf("gated: the kernel method keeps two %d×%d matrices (%.1f GB); it takes at most %d rows", n, n, 16*float64(n)*float64(n)/1e9, KernelMaxRows)
	}
	if c > 1 && p.Groups == PerClass {
		return solveKernelPerClass(ctx, p, opt)
	}
	t := make([]float64, np)
	if opt.Start != nil {
		if err := checkWeights(opt.Start, np, d, c); err != nil {
			return nil, fmt.Errorf("gated: warm start: %w", err)
		}
		for i, b := range opt.Start {
			t[i] = mat.Norm(b, 2) / p.Beta
		}
	}
	start := time.Now()
	ops := newGateOps(p.X, p.Gates, c)

	res := &Result{}
	var best Weights
	bestCert := Certificate{Upper: math.Inf(1), Lower: math.Inf(-1), Gap: math.Inf(1)}
	lam := mat.NewDense(n, c, nil)
	z := mat.NewDense(d, np*c, nil)
	wz := mat.NewDense(d, np*c, nil)
	f, g := mat.NewDense(n, c, nil), mat.NewDense(n, c, nil)
	a := make([]float64, np)
	var ks *kernelSystem // formed after the zero point: XXᵀ and the factor
	// evaluate solves M_t Λ = T, by conjugate gradients with the factor
	// at hand when t is close to its weights (solveAt), otherwise by
	// factoring M_t, and returns F(t).
	resid := mat.NewDense(n, c, nil)
	evaluate := func(t []float64) (float64, error) {
		if ks.solveAt(lam, resid, p.Targets, t, p.Beta) {
			// F(t) = max_Λ ⟨T, Λ⟩ − ½⟨Λ, M_tΛ⟩ = ½⟨T, Λ⟩ + ½⟨Λ, R⟩ at
			// Λ with residual R = T − M_tΛ, low by ½‖δ‖²_{M_t}.
			return 0.5*inner(p.Targets, lam) + 0.5*inner(lam, resid) + 0.5*p.Beta*p.Beta*sum(t), nil
		}
		if err := ks.factor(t); err != nil {
			return 0, err
		}
		lam.Copy(p.Targets)
		ks.solve(lam)
		return 0.5*inner(p.Targets, lam) + 0.5*p.Beta*p.Beta*sum(t), nil
	}
	certify := func(iter int) {
		ops.backward(z, lam)
		w := make(Weights, np)
		for i := range w {
			zi := z.Slice(0, d, i*c, (i+1)*c).(*mat.Dense)
			a[i] = mat.Norm(zi, 2)
			w[i] = mat.NewDense(d, c, nil)
			w[i].Scale(t[i], zi)
			wz.Slice(0, d, i*c, (i+1)*c).(*mat.Dense).Copy(w[i])
		}
		ops.forward(f, wz)
		up := p.LossValue(f) + p.Beta*p.Regularizer(w)
		// The dual point is Λ itself, scaled to feasibility: the residual
		// F − T of the weights loses Λ's digits to cancellation (F ≈ T
		// when the program nearly interpolates).
		g.Scale(-1, lam)
		cert := p.certificate(up, f, g, maxBlockNorm(z, np, c, p.Groups))
		cert.Lower = math.Max(cert.Lower, bestCert.Lower)
		if up <= bestCert.Upper {
			best = w
		} else {
			cert.Upper = bestCert.Upper
		}
		cert.Gap = (cert.Upper - cert.Lower) / math.Max(math.Abs(cert.Upper), 1e-12)
		bestCert = cert
		active := 0
		for _, v := range t {
			if v > 0 {
				active++
			}
		}
		it := Iterate{Iter: iter, Objective: up, Cert: cert, Active: active, Elapsed: time.Since(start)}
		res.History = append(res.History, it)
		if opt.Progress != nil {
			opt.Progress(it)
		}
	}
	// bmax is β_max = max_i ‖XᵀD_iT‖_F, the products at t = 0 (M_t = I,
	// Λ = T), computed once for the zero point and the start.
	bmax := math.NaN()
	betaMax := func() float64 {
		if math.IsNaN(bmax) {
			lam.Copy(p.Targets)
			ops.backward(z, lam)
			bmax = maxBlockNorm(z, np, c, p.Groups)
		}
		return bmax
	}
	if sum(t) == 0 {
		// At t = 0: when β ≥ β_max the zero weights are optimal,
		// certified without forming XXᵀ.
		if betaMax() <= p.Beta {
			certify(0)
			res.W, res.Objective, res.Cert = best, bestCert.Upper, bestCert
			return res, nil
		}
	}
	if kp := opt.Path.resume(p, opt.Start); kp != nil {
		// The last point's state: its factor and Λ at its kernel
		// weights, from which the first step is Newton's for this β.
		ks, ops = kp.ks, kp.ks.ops
		ks.p = p
		copy(t, kp.t)
		lam.Copy(kp.lam)
	} else {
		ks = newKernelSystem(p, ops)
	}
	if sum(t) == 0 {
		// All t_i = (n/tr XXᵀ)·(β_max/β): the unit of t at β_max, where
		// gates begin to enter, grown as 1/β, the growth of t = ‖W‖/β as
		// the program nears interpolation. On Table 2's gated setting
		// (β_max/β = 2·10⁷) it starts within a factor 4 of the optimum,
		// two factorizations instead of four from the unit alone; on 300
		// random programs 1310 steps in all (at most 17) against 1567 (at
		// most 47).
		bmax := betaMax()
		tr := 0.0
		for k := 0; k < n; k++ {
			tr += ks.k[k*n+k]
		}
		for i := range t {
			t[i] = float64(n) / math.Max(tr, 1e-300) * math.Max(bmax/p.Beta, 1)
		}
	}
	fval, err := evaluate(t)
	if err != nil {
		return nil, err
	}
	certify(0)
	hess := make([]float64, np*np)
	rhs, y, tNew, grad := make([]float64, np), make([]float64, np), make([]float64, np), make([]float64, np)
	logStep := make([]bool, np)
	iter := 0
	var ctxErr error
	stalled := false
	for iter < opt.MaxIter && bestCert.Gap > opt.Tol {
		if err := ctx.Err(); err != nil {
			ctxErr = err
			break
		}
		iter++
		ks.hessian(hess, z, t)
		// The step: Newton's on the equations log(a_i/β) = 0 in log t_i for
		// the gates in logStep (they grow, exactly where a_i ∝ 1/t_i);
		// Newton's on ∂F/∂t_i = 0 in t_i for the others, projected on
		// t_i ≥ 0. First every gate with t_i > 0 in log t_i; if F does not
		// fall, those with a_i < β in t_i (gates leaving reach zero). If F
		// still does not fall: projected Newton, the minimizer y of F's
		// quadratic model on t + y ≥ 0 (boxStep), a descent direction
		// whenever t is not optimal, along which F is cut back until it
		// falls by a fraction of the model's prediction (Armijo), at most
		// boxHalvings times; then the multiplicative step t_i ← t_i·a_i/β
		// of alternating minimization in (W, t), which never raises F. No
		// descent even so: the certificate is as good as working precision
		// allows.
		mixed := false
		for i := range t {
			mixed = mixed || (t[i] > 0 && a[i] < p.Beta)
		}
		const (
			tryBox            = 2
			tryMultiplicative = tryBox + boxHalvings + 1
		)
		scale, slope := 1.0, 0.0
		for try := 0; ; try++ {
			if err := ctx.Err(); err != nil {
				ctxErr = err
				break
			}
			if try == 0 && !mixed {
				try = 1
			}
			if try <= 1 {
				kernelStep(y, rhs, logStep, hess, t, a, p.Beta, try == 1)
			}
			if try == tryBox {
				for i := range grad {
					grad[i] = 0.5 * (p.Beta*p.Beta - a[i]*a[i])
				}
				slope = boxStep(y, grad, hess, t)
				if !(slope < 0) {
					try = tryMultiplicative // t is optimal for the model: no direction left
				}
				scale = 1
			}
			tmax := 0.0
			for i := range t {
				switch {
				case try == tryMultiplicative:
					tNew[i] = t[i] * a[i] / p.Beta
				case try >= tryBox:
					tNew[i] = math.Max(t[i]+scale*y[i], 0)
				case math.IsNaN(rhs[i]):
					tNew[i] = 0
				case logStep[i]:
					tNew[i] = t[i] * math.Exp(math.Min(y[i]/t[i], maxLogStep))
				default:
					tNew[i] = math.Max(t[i]+y[i], 0)
				}
				tmax = math.Max(tmax, tNew[i])
			}
			for i := range tNew {
				if tNew[i] < 1e-14*tmax {
					tNew[i] = 0
				}
			}
			fNew, err := evaluate(tNew)
			if err != nil {
				// M_t not positive definite in working precision at
				// these weights (a step to t_i of 10¹⁶ on a nearly
				// singular K): the trial is rejected like one that does
				// not lower F, and the certified point so far stays.
				fNew = math.Inf(1)
			}
			falls := fNew < fval || (fNew <= fval+1e-13*math.Abs(fval) && !slices.Equal(tNew, t))
			if try >= tryBox && try < tryMultiplicative {
				falls = fNew <= fval+1e-4*scale*slope
			}
			if falls {
				fval = fNew
				break
			}
			if try == tryMultiplicative {
				stalled = true
				break
			}
			if try >= tryBox {
				scale /= 2
			}
		}
		if stalled || ctxErr != nil {
			break
		}
		copy(t, tNew)
		certify(iter)
		// Slow progress (the active set changing back and forth) counts
		// as a stall too: ten steps that do not halve the gap.
		if h := res.History; len(h) > 10 && bestCert.Gap > 0.5*h[len(h)-11].Cert.Gap {
			stalled = true
			break
		}
	}
	res.W, res.Objective, res.Cert, res.Iterations = best, bestCert.Upper, bestCert, iter
	if kp := opt.Path; kp != nil {
		kp.ks, kp.t, kp.w = ks, slices.Clone(t), res.W
		kp.lam = mat.DenseCopyOf(lam)
	}
	if stalled && bestCert.Gap > opt.Tol && iter < opt.MaxIter && (bestCert.Gap > 100*opt.Tol || np*d*c <= denseLimit) {
		// M_t too ill-conditioned for F's descent to show (huge weights
		// of programs that cannot interpolate): Newton's method on the
		// groups finishes from the best weights. Not for a gap within a
		// factor 100 of Tol on a program too large for Newton's exact
		// system: that finish would take far longer than it gains.
		return handOver(ctx, res, Options{Tol: opt.Tol, MaxIter: opt.MaxIter - iter, Progress: opt.Progress}, start, func(ctx context.Context, o Options) (*Result, error) {
			return SolveNewton(ctx, p, o)
		})
	}
	return res, ctxErr
}

// solveKernelPerClass solves a squared-loss program with per-class groups
// as the c one-output programs it separates into, each to the relative gap
// opt.Tol: their lower bounds add up to one of the program (each class's
// optimum is non-negative, so the sum's relative gap is at most opt.Tol
// too, and a class not solved when ctx ends counts 0 and keeps its
// starting weights), and the upper bound is the objective of the weights
// assembled. The history and the progress reports carry the whole
// program's bracket at every step: the classes done at their final bounds,
// the class running at its current ones, and the classes to come at 0
// below and at their starting objective above.
func solveKernelPerClass(ctx context.Context, p *Problem, opt Options) (*Result, error) {
	_, d, np, c := p.Dims()
	res := &Result{W: make(Weights, np)}
	for i := range res.W {
		res.W[i] = mat.NewDense(d, c, nil)
	}
	subs := make([]*Problem, c)
	starts := make([]Weights, c)
	first := make([]float64, c) // each class's objective at its start
	rest := 0.0                 // Σ of the starting objectives of the classes to come
	for j := range subs {
		sub := *p
		sub.Targets = mat.DenseCopyOf(p.Targets.Slice(0, len(p.Gates[0]), j, j+1))
		sub.Groups = Joint
		subs[j] = &sub
		starts[j] = make(Weights, np)
		for i := range starts[j] {
			starts[j][i] = mat.NewDense(d, 1, nil)
			if opt.Start != nil {
				starts[j][i].Copy(opt.Start[i].Slice(0, d, j, j+1))
			}
		}
		for i, b := range starts[j] {
			res.W[i].Slice(0, d, j, j+1).(*mat.Dense).Copy(b)
		}
		var err error
		if first[j], err = sub.Objective(starts[j]); err != nil {
			return nil, err
		}
		rest += first[j]
	}
	start := time.Now()
	var ctxErr error
	var done Certificate // the classes solved: sums of their final bounds
	for j, sub := range subs {
		rest -= first[j]
		// whole lifts an iterate of class j to the program's bracket.
		whole := func(it Iterate) Iterate {
			it.Objective += done.Upper + rest
			it.Cert.Upper += done.Upper + rest
			it.Cert.Lower += done.Lower
			it.Cert.Gap = (it.Cert.Upper - it.Cert.Lower) / math.Max(math.Abs(it.Cert.Upper), 1e-12)
			return it
		}
		o := opt
		o.Path = nil // each class is a program of its own
		if opt.Start != nil {
			o.Start = starts[j]
		}
		base, offset := res.Iterations, time.Since(start)
		if opt.Progress != nil {
			o.Progress = continued(func(it Iterate) { opt.Progress(whole(it)) }, base, start)
		}
		r, err := SolveKernel(ctx, sub, o)
		if r == nil {
			return nil, err
		}
		for i, b := range r.W {
			res.W[i].Slice(0, d, j, j+1).(*mat.Dense).Copy(b)
		}
		for k, it := range r.History {
			r.History[k] = whole(it)
		}
		appendSteps(res, r.History, base, offset)
		res.Iterations += r.Iterations
		done.Lower += r.Cert.Lower
		done.Upper += r.Cert.Upper
		if err != nil {
			ctxErr = err // the classes not solved keep their starting weights and the bound 0
			break
		}
	}
	obj, err := p.Objective(res.W)
	if err != nil {
		return nil, err
	}
	res.Objective, res.Cert.Upper, res.Cert.Lower = obj, obj, done.Lower
	res.Cert.Gap = (res.Cert.Upper - res.Cert.Lower) / math.Max(math.Abs(res.Cert.Upper), 1e-12)
	return res, ctxErr
}

func sum(v []float64) float64 {
	s := 0.0
	for _, x := range v {
		s += x
	}
	return s
}

// kernelStep sets y to Newton's step on the kernel weights, in log t_i for
// the gates it marks in logStep and in t_i for the others (rhs: the
// right-hand sides, NaN for gates that stay at zero). In log t_i: every
// gate with t_i > 0, or, when split, only those with a_i ≥ β; the others,
// and gates entering from zero (a_i > β), in t_i, projected on t_i ≥ 0: a
// gate whose step crosses zero is fixed there and the rest solved again.
func kernelStep(y, rhs []float64, logStep []bool, h, t, a []float64, beta float64, split bool) {
	for i := range t {
		logStep[i] = t[i] > 0 && (!split || a[i] >= beta)
		switch {
		case logStep[i]:
			rhs[i] = a[i] * a[i] * math.Log(a[i]/beta)
		case t[i] > 0 || a[i] > beta:
			rhs[i] = 0.5 * (a[i]*a[i] - beta*beta)
		default:
			rhs[i] = math.NaN()
		}
	}
	for fixed := true; fixed; {
		solveFree(y, h, rhs, t)
		fixed = false
		for i := range t {
			if !logStep[i] && !math.IsNaN(rhs[i]) && t[i]+y[i] <= 0 {
				rhs[i], fixed = math.NaN(), true
			}
		}
	}
}

// boxRidge is the ridge of boxStep's scaled model.
const boxRidge = 1e-10

// boxHalvings bounds the cuts of a projected Newton step (boxStep).
const boxHalvings = 6

// boxStep sets y to the minimizer of Newton's model of F on t ≥ 0,
//
//	min gᵀy + ½yᵀHy  subject to  t + y ≥ 0,
//
// and returns the slope gᵀy (negative unless t is optimal for the model).
// It works on u = y/s with s_i = 1/√H_ii (Jacobi's scaling; 1 where H_ii
// = 0), where the bounds are u_i ≥ −t_i/s_i, by the primal active-set method: the
// equality-constrained model on the free gates, a ratio test where it
// leaves the bounds, and the most negative multiplier of a bound released
// (Nocedal and Wright, Numerical Optimization, Algorithm 16.3). H is a
// Gram matrix, positive semidefinite, and g need not lie in its range: the
// model is made strictly convex by boxRidge on the scaled diagonal (H_ii
// grows by the factor 1 + boxRidge; boxRidge where H_ii = 0), so that it
// has one minimizer and the method ends; a step along a direction of H's
// null space is long, and the line search cuts it (factorRidged adds more
// where rounding still leaves the free block indefinite).
func boxStep(y, g, h, t []float64) float64 {
	np := len(t)
	sc, lo, u, cand := make([]float64, np), make([]float64, np), make([]float64, np), make([]float64, np)
	bound := make([]bool, np)
	for i := range t {
		sc[i] = 1
		if d := h[i*np+i]; d > 0 {
			sc[i] = 1 / math.Sqrt(d)
		}
		lo[i] = -t[i] / sc[i]
		bound[i] = lo[i] == 0 // u = 0 starts feasible, on these bounds
	}
	hs := func(i, j int) float64 {
		if i == j {
			return sc[i]*h[i*np+i]*sc[i] + boxRidge
		}
		return sc[i] * h[i*np+j] * sc[j]
	}
	for it := 0; it < 10*np; it++ {
		var free []int
		for i := range t {
			if !bound[i] {
				free = append(free, i)
			}
		}
		copy(cand, u)
		if m := len(free); m > 0 {
			hf := mat.NewSymDense(m, nil)
			b := mat.NewVecDense(m, nil)
			for a, i := range free {
				r := -sc[i] * g[i]
				for j := range t {
					if bound[j] {
						r -= hs(i, j) * lo[j]
					}
				}
				b.SetVec(a, r)
				for bb, j := range free[:a+1] {
					hf.SetSym(a, bb, hs(i, j))
				}
			}
			var ch mat.Cholesky
			if !factorRidged(&ch, hf) {
				clear(y)
				return 0
			}
			var v mat.VecDense
			if err := ch.SolveVecTo(&v, b); err != nil && !errors.As(err, new(mat.Condition)) {
				clear(y)
				return 0
			}
			for a, i := range free {
				cand[i] = v.AtVec(a)
			}
		}
		// Ratio test: the longest move toward cand that stays feasible.
		step, block := 1.0, -1
		for _, i := range free {
			if cand[i] < lo[i] {
				if r := (u[i] - lo[i]) / (u[i] - cand[i]); r < step {
					step, block = r, i
				}
			}
		}
		for _, i := range free {
			u[i] += step * (cand[i] - u[i])
		}
		if block >= 0 {
			u[block], bound[block] = lo[block], true
			continue
		}
		// At the free minimizer: release the bound with the most negative
		// multiplier, or stop.
		worst, release := -1e-14, -1
		for i := range t {
			if !bound[i] {
				continue
			}
			mu := sc[i] * g[i]
			for j := range t {
				mu += hs(i, j) * u[j]
			}
			if mu < worst {
				worst, release = mu, i
			}
		}
		if release < 0 {
			break
		}
		bound[release] = false
	}
	slope := 0.0
	for i := range y {
		y[i] = sc[i] * u[i]
		if t[i]+y[i] < 0 {
			y[i] = -t[i]
		}
		slope += g[i] * y[i]
	}
	return slope
}

// factorRidged factors h, adding to its diagonal a ridge that starts at
// 10⁻¹⁴ of its largest diagonal entry (at least the smallest float) and
// grows fourfold until the Cholesky factorization succeeds. It reports
// false, with no factor, when the ridge would pass the largest diagonal
// entry or h has no positive finite diagonal (no usable curvature).
func factorRidged(ch *mat.Cholesky, h *mat.SymDense) bool {
	m := h.SymmetricDim()
	diag := 0.0
	for a := 0; a < m; a++ {
		diag = math.Max(diag, h.At(a, a))
	}
	if !(diag > 0) || math.IsInf(diag, 0) {
		return false
	}
	for ridge := math.Max(1e-14*diag, math.SmallestNonzeroFloat64); !ch.Factorize(h); ridge *= 4 {
		if !(ridge <= diag) {
			return false
		}
		for a := 0; a < m; a++ {
			h.SetSym(a, a, h.At(a, a)+ridge)
		}
	}
	return true
}

// maxLogStep bounds a step's change of log t_i.
const maxLogStep = 12

// solveFree sets y to the solution of H_FF y_F = rhs_F on the gates F with
// a finite rhs (y = 0 elsewhere). It solves the system scaled by the
// kernel weights, diag(s) H diag(s) u = s∘rhs with s_i = t_i (1 for an
// entering gate), y = s∘u, which is about as well conditioned as the
// equations in log t; a ridge grows until the Cholesky factorization
// succeeds.
func solveFree(y, h, rhs, t []float64) {
	np := len(y)
	var free []int
	for i, v := range rhs {
		y[i] = 0
		if !math.IsNaN(v) {
			free = append(free, i)
		}
	}
	m := len(free)
	if m == 0 {
		return
	}
	sc := make([]float64, m)
	for a, i := range free {
		sc[a] = 1
		if t[i] > 0 {
			sc[a] = t[i]
		}
	}
	hf := mat.NewSymDense(m, nil)
	b := mat.NewVecDense(m, nil)
	for a, i := range free {
		b.SetVec(a, sc[a]*rhs[i])
		for bb, j := range free {
			hf.SetSym(a, bb, sc[a]*h[i*np+j]*sc[bb])
		}
	}
	var ch mat.Cholesky
	if !factorRidged(&ch, hf) {
		return // no usable curvature: no step
	}
	var u mat.VecDense
	if err := ch.SolveVecTo(&u, b); err != nil {
		return
	}
	for a, i := range free {
		if v := sc[a] * u.AtVec(a); !math.IsNaN(v) {
			y[i] = v
		}
	}
}

// KernelMaxRows is the most rows SolveKernel takes (2·8n² bytes: 6.4 GB).
const KernelMaxRows = 20000

// kernelSystem holds K = XXᵀ and the Cholesky factor of M_t at the last
// t factored, with work space.
type kernelSystem struct {
	p              *Problem
	ops            *gateOps
	n, c           int
	k              []float64  // lower triangle of XXᵀ, n×n row-major
	chol           []float64  // Cholesky factor (lower) of M_t
	gam            []float64  // n×P, √t_i on gate i
	u, v           *mat.Dense // n×Pc: V = [D_iXZ_i] and M_t⁻¹V
	ref            []float64  // the kernel weights of chol (nil: none yet)
	factorizations int        // of M_t so far

	g              *mat.Dense // hessian's Pc×Pc products
	eu, em, ey, ez *mat.Dense // hessian's correction: n×Pc; n×b, n×b, d×b (b ≤ correctionColumns, or Pc)

	pr, pz, pp, pq *mat.Dense // solveAt's n×c work space
	pw             *mat.Dense // and its d×Pc
}

func newKernelSystem(p *Problem, ops *gateOps) *kernelSystem {
	n, _, np, c := p.Dims()
	ks := &kernelSystem{p: p, ops: ops, n: n, c: c,
		k: make([]float64, n*n), chol: make([]float64, n*n), gam: make([]float64, n*np),
		u: mat.NewDense(n, np*c, nil), v: mat.NewDense(n, np*c, nil)}
	blas64.Syrk(blas.NoTrans, 1, p.X.RawMatrix(), 0, blas64.Symmetric{N: n, Stride: n, Data: ks.k, Uplo: blas.Lower})
	return ks
}

// factor sets chol to the Cholesky factor of M_t = I + K∘(Γ diag(t) Γᵀ):
// ΓΓᵀ scaled by t in one rank-P product, then the Hadamard product with
// XXᵀ.
func (ks *kernelSystem) factor(t []float64) error {
	n, np := ks.n, len(t)
	for k := 0; k < n; k++ {
		for i, g := range ks.p.Gates {
			v := 0.0
			if g[k] {
				v = math.Sqrt(t[i])
			}
			ks.gam[k*np+i] = v
		}
	}
	blas64.Syrk(blas.NoTrans, 1, blas64.General{Rows: n, Cols: np, Stride: np, Data: ks.gam}, 0,
		blas64.Symmetric{N: n, Stride: n, Data: ks.chol, Uplo: blas.Lower})
	for k := 0; k < n; k++ {
		row, kr := ks.chol[k*n:k*n+k+1], ks.k[k*n:k*n+k+1]
		for l := range row {
			row[l] *= kr[l]
		}
		row[k]++
	}
	ks.ref = nil
	if _, ok := lapack64.Potrf(blas64.Symmetric{N: n, Stride: n, Data: ks.chol, Uplo: blas.Lower}); !ok {
		return errors.New("gated: the Cholesky factorization of I + K_t failed (non-finite kernel weights?)")
	}
	ks.ref = append(ks.ref[:0], t...)
	ks.factorizations++
	return nil
}

// solve solves M_t x = b in place (b n×c) with the factor.
func (ks *kernelSystem) solve(b *mat.Dense) {
	raw := b.RawMatrix()
	lapack64.Potrs(blas64.Triangular{N: ks.n, Stride: ks.n, Data: ks.chol, Uplo: blas.Lower, Diag: blas.NonUnit}, raw)
}

// correctionColumns bounds the columns of hessian's products with X (the
// gates that moved, Pc columns each): 1024 columns of n ≤ KernelMaxRows
// rows are at most 164 MB.
const correctionColumns = 1024

// hessian sets h to H_ij = ⟨V_i, M_t⁻¹V_j⟩ with V_i = D_iXZ_i (z = [Z_i]).
// When the factor at hand is of M at other weights r (solveAt's reuse,
// M_t ⪯ reuseKappa·M_r), M_t⁻¹ is taken to first order about M_r:
// M_t⁻¹ ≈ M_r⁻¹ − M_r⁻¹EM_r⁻¹ with E = M_t − M_r = Σ_k (t_k − r_k)K_k, so
// H ≈ VᵀM_r⁻¹V − UᵀEU with U = M_r⁻¹V: an error of order (κ − 1)² instead
// of κ − 1 (the matrix M_r⁻¹(2M_r − M_t)M_r⁻¹ stays positive definite for
// κ < 2), at P products of X with U.
func (ks *kernelSystem) hessian(h []float64, z *mat.Dense, t []float64) {
	np, c, n := len(t), ks.c, ks.n
	ks.u.Mul(ks.p.X, z)
	raw := ks.u.RawMatrix()
	for k := 0; k < n; k++ {
		row := raw.Data[k*raw.Stride : k*raw.Stride+np*c]
		for i, g := range ks.p.Gates {
			if !g[k] {
				clear(row[i*c : (i+1)*c])
			}
		}
	}
	v := ks.v
	v.Copy(ks.u)
	ks.solve(ks.u)
	// gram adds sign·Σ_q ⟨a_iq, b_jq⟩ to h_ij (a_iq: column q of block i),
	// from one product aᵀb, symmetrized (the sums are symmetric in exact
	// arithmetic).
	gram := func(a, b *mat.Dense, sign float64) {
		if ks.g == nil {
			ks.g = mat.NewDense(np*c, np*c, nil)
		}
		ks.g.Mul(a.T(), b)
		gr := ks.g.RawMatrix()
		for i := 0; i < np; i++ {
			for j := 0; j <= i; j++ {
				s := 0.0
				for q := 0; q < c; q++ {
					s += gr.Data[(i*c+q)*gr.Stride+j*c+q] + gr.Data[(j*c+q)*gr.Stride+i*c+q]
				}
				h[i*np+j] += sign * s / 2
				if j != i {
					h[j*np+i] += sign * s / 2
				}
			}
		}
	}
	clear(h)
	gram(v, ks.u, 1)
	if ks.ref == nil || slices.Equal(ks.ref, t) {
		return
	}
	// E·U = Σ_k (t_k − r_k)·D_kX(XᵀD_kU), the gates that moved side by
	// side (their Pc columns each) in products with X of at most
	// correctionColumns columns.
	var moved []int
	for g := range ks.p.Gates {
		if t[g] != ks.ref[g] {
			moved = append(moved, g)
		}
	}
	w := np * c
	batch := max(1, correctionColumns/w)
	_, d, _, _ := ks.p.Dims()
	if ks.eu == nil {
		cols := min(batch, np) * w
		ks.eu = mat.NewDense(n, w, nil)
		ks.em, ks.ey = mat.NewDense(n, cols, nil), mat.NewDense(n, cols, nil)
		ks.ez = mat.NewDense(d, cols, nil)
	}
	eu := ks.eu
	eu.Zero()
	for len(moved) > 0 {
		part := moved[:min(batch, len(moved))]
		moved = moved[len(part):]
		cols := len(part) * w
		em := ks.em.Slice(0, n, 0, cols).(*mat.Dense)
		ez := ks.ez.Slice(0, d, 0, cols).(*mat.Dense)
		ey := ks.ey.Slice(0, n, 0, cols).(*mat.Dense)
		mr, ur := em.RawMatrix(), ks.u.RawMatrix()
		for k := 0; k < n; k++ {
			urow := ur.Data[k*ur.Stride : k*ur.Stride+w]
			mrow := mr.Data[k*mr.Stride : k*mr.Stride+cols]
			for b, g := range part {
				if ks.p.Gates[g][k] {
					copy(mrow[b*w:(b+1)*w], urow)
				} else {
					clear(mrow[b*w : (b+1)*w])
				}
			}
		}
		ez.Mul(ks.p.X.T(), em)
		ey.Mul(ks.p.X, ez)
		yr, er := ey.RawMatrix(), eu.RawMatrix()
		for k := 0; k < n; k++ {
			e := er.Data[k*er.Stride : k*er.Stride+w]
			yrow := yr.Data[k*yr.Stride : k*yr.Stride+cols]
			for b, g := range part {
				if !ks.p.Gates[g][k] {
					continue
				}
				delta := t[g] - ks.ref[g]
				for q, val := range yrow[b*w : (b+1)*w] {
					e[q] += delta * val
				}
			}
		}
	}
	gram(ks.u, eu, -1)
}
