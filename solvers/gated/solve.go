package gated

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/convexnn/convexnn/solvers"
	"gonum.org/v1/gonum/mat"
)

// Options control Solve.
type Options struct {
	// Tol is the certified relative gap at which Solve stops (1e-6 when 0).
	Tol float64
	// MaxIter caps the proximal steps (10 000 when 0).
	MaxIter int
	// CertifyEvery is the number of steps between certificates (10 when 0;
	// each costs one more product with Xᵀ).
	CertifyEvery int
	// Start warm-starts from these weights (nil: zero).
	Start Weights
	// Rank, when in (0, d), restricts every W_i to the span of the top
	// Rank eigenvectors of XᵀX (the principal directions of the
	// uncentered data): each step then costs about Rank/d of a full one.
	// The certificate stays that of the full program: its lower bound is
	// computed with all of X, so the gap includes what the restriction
	// costs.
	Rank int
	// Progress, when set, is called after every certificate.
	Progress func(Iterate)
	// Path, when set, carries the kernel method's state from one solve to
	// the next on the same data (a regularization path); the other
	// methods ignore it. See KernelPath.
	Path *KernelPath
}

// Iterate is one certified step of Solve.
type Iterate struct {
	Iter      int
	Objective float64
	Cert      Certificate
	Active    int // gates with a nonzero weight block
	Elapsed   time.Duration
}

// Result is what Solve returns: the best weights seen, their certificate
// and the history of certified steps.
type Result struct {
	W          Weights
	Objective  float64
	Cert       Certificate
	Iterations int
	History    []Iterate
}

// gateOps applies the program's linear map and its adjoint for data x
// (X, or X in another basis): forward F(W) = Σ_i D_i x W_i, backward
// [xᵀD_iG]_i, with work space for the n×Pc products.
type gateOps struct {
	x        *mat.Dense
	gates    solvers.Patterns
	n, c, np int
	z        *mat.Dense // n×Pc products x·[W_1 … W_P]
	m        *mat.Dense // n×Pc masked gradients [D_1G … D_PG]
}

func newGateOps(x *mat.Dense, gates solvers.Patterns, c int) *gateOps {
	n, _ := x.Dims()
	np := len(gates)
	return &gateOps{x: x, gates: gates, n: n, c: c, np: np, z: mat.NewDense(n, np*c, nil), m: mat.NewDense(n, np*c, nil)}
}

// forward sets f = Σ_i D_i x W_i for W = [W_1 … W_P] (d×Pc).
func (o *gateOps) forward(f, w *mat.Dense) {
	o.z.Mul(o.x, w)
	c := o.c
	for k := 0; k < o.n; k++ {
		row, zr := f.RawRowView(k), o.z.RawRowView(k)
		clear(row)
		for i, g := range o.gates {
			if g[k] {
				for j, v := range zr[i*c : (i+1)*c] {
					row[j] += v
				}
			}
		}
	}
}

// backward sets gh = [xᵀ D_i G]_i (d×Pc) for G (n×c).
func (o *gateOps) backward(gh, g *mat.Dense) {
	maskRows(o.m, g, o.gates)
	gh.Mul(o.x.T(), o.m)
}

// solver holds Solve's state in the eigenbasis Q of A = XᵀX (X̂ = XQ,
// Ŵ_i = QᵀW_i; group norms are the same in both bases).
type solver struct {
	*gateOps // on X̂
	p        *Problem
	d        int        // the working dimension (Rank, or X's columns)
	q        *mat.Dense // eigenvectors of XᵀX kept (columns), d_X×d
	lam      []float64  // their eigenvalues, ≥ 0
	reduced  bool       // d < X's columns: certificates use all of X
}

func newSolver(p *Problem, rank int) (*solver, error) {
	n, d, _, c := p.Dims()
	s := &solver{p: p, d: d}
	var a mat.SymDense
	a.SymOuterK(1, p.X.T())
	var eig mat.EigenSym
	if !eig.Factorize(&a, true) {
		return nil, errors.New("gated: the eigendecomposition of XᵀX failed")
	}
	s.lam = eig.Values(nil)
	// A metric above XᵀX still majorizes; a floor keeps every secular
	// equation solvable.
	floor := 1e-12 * math.Max(s.lam[len(s.lam)-1], 1e-300)
	for j, v := range s.lam {
		s.lam[j] = math.Max(v, floor)
	}
	s.q = mat.NewDense(d, d, nil)
	eig.VectorsTo(s.q)
	if rank > 0 && rank < d {
		// EigenSym orders the eigenvalues ascending: keep the last rank.
		s.q = mat.DenseCopyOf(s.q.Slice(0, d, d-rank, d))
		s.lam = s.lam[d-rank:]
		s.d, s.reduced = rank, true
		d = rank
	}
	xh := mat.NewDense(n, d, nil)
	xh.Mul(p.X, s.q)
	s.gateOps = newGateOps(xh, p.Gates, c)
	return s, nil
}

// dualNorm returns max_{i,g} ‖(D_iX)ᵀG[g]‖ over all of X (the rotation
// keeps norms; a reduced basis does not, so it takes X itself).
func (s *solver) dualNorm(g, gh *mat.Dense) float64 {
	maskRows(s.m, g, s.gates)
	h := gh
	if s.reduced {
		_, dx := s.p.X.Dims()
		h = mat.NewDense(dx, s.np*s.c, nil)
		h.Mul(s.p.X.T(), s.m)
	} else {
		h.Mul(s.x.T(), s.m)
	}
	return maxBlockNorm(h, s.np, s.c, s.p.Groups)
}

// prox sets w = argmin_W ⟨Ĝ, W − Ŷ⟩ + (ρ/2)Σ_i ‖W_i − Ŷ_i‖²_Λ + β Σ R(W_i):
// per group, W_j = b_j/(ρλ_j + μ) with b = ρΛŶ − Ĝ and μ = β/‖W_group‖
// from the secular equation μ‖(b_j/(ρλ_j + μ))_j‖ = β (zero when ‖b‖ ≤ β).
func (s *solver) prox(w, y, gh *mat.Dense, rho float64, sq []float64) {
	d, c := s.d, s.c
	b := w.RawMatrix()
	yr, gr := y.RawMatrix(), gh.RawMatrix()
	for r := 0; r < d; r++ {
		a := rho * s.lam[r]
		for col := 0; col < s.np*c; col++ {
			b.Data[r*b.Stride+col] = a*yr.Data[r*yr.Stride+col] - gr.Data[r*gr.Stride+col]
		}
	}
	beta := s.p.Beta
	for i := 0; i < s.np; i++ {
		if s.p.Groups == Joint {
			for r := 0; r < d; r++ {
				var t float64
				for _, v := range b.Data[r*b.Stride+i*c : r*b.Stride+(i+1)*c] {
					t += v * v
				}
				sq[r] = t
			}
			mu := secular(sq, s.lam, rho, beta)
			for r := 0; r < d; r++ {
				den := rho*s.lam[r] + mu
				row := b.Data[r*b.Stride+i*c : r*b.Stride+(i+1)*c]
				for j := range row {
					if math.IsInf(mu, 1) || den == 0 {
						row[j] = 0
					} else {
						row[j] /= den
					}
				}
			}
			continue
		}
		for j := 0; j < c; j++ {
			col := i*c + j
			for r := 0; r < d; r++ {
				v := b.Data[r*b.Stride+col]
				sq[r] = v * v
			}
			mu := secular(sq, s.lam, rho, beta)
			for r := 0; r < d; r++ {
				den := rho*s.lam[r] + mu
				if math.IsInf(mu, 1) || den == 0 {
					b.Data[r*b.Stride+col] = 0
				} else {
					b.Data[r*b.Stride+col] /= den
				}
			}
		}
	}
}

// secular returns μ > 0 with Σ_j sq_j μ²/(ρλ_j + μ)² = β², or +Inf when
// Σ sq_j ≤ β² (the group is zero). The left side increases with μ from 0 to
// Σ sq_j; safeguarded Newton steps inside the bracket
// [β a_min/(‖b‖ − β), β a_max/(‖b‖ − β)].
func secular(sq, lam []float64, rho, beta float64) float64 {
	var tot float64
	amin, amax := math.Inf(1), 0.0
	for j, v := range sq {
		if v == 0 {
			continue
		}
		tot += v
		a := rho * lam[j]
		amin, amax = math.Min(amin, a), math.Max(amax, a)
	}
	nb := math.Sqrt(tot)
	if nb <= beta {
		return math.Inf(1)
	}
	lo, hi := beta*amin/(nb-beta), beta*amax/(nb-beta)
	mu := 0.5 * (lo + hi)
	b2 := beta * beta
	for it := 0; it < 60; it++ {
		var r, dr float64
		for j, v := range sq {
			if v == 0 {
				continue
			}
			a := rho * lam[j]
			den := a + mu
			r += v * mu * mu / (den * den)
			dr += v * 2 * mu * a / (den * den * den)
		}
		if r > b2 {
			hi = mu
		} else {
			lo = mu
		}
		if math.Abs(r-b2) <= 1e-14*b2 || hi-lo <= 1e-15*hi {
			break
		}
		next := mu - (r-b2)/dr
		if !(dr > 0) || !(next > lo && next < hi) {
			next = 0.5 * (lo + hi)
		}
		mu = next
	}
	return mu
}

// Solve runs accelerated proximal gradient on the gated program until the
// certified relative gap reaches opt.Tol, the step budget is spent or ctx
// is done; it returns the best certified weights (and ctx's error when
// interrupted, with the result so far).
func Solve(ctx context.Context, p *Problem, opt Options) (*Result, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	opt, err := opt.withDefaults(10000)
	if err != nil {
		return nil, err
	}
	n, dx, np, c := p.Dims()
	start := time.Now()
	s, err := newSolver(p, opt.Rank)
	if err != nil {
		return nil, err
	}
	d := s.d
	pc := np * c
	w := mat.NewDense(d, pc, nil) // Ŵ (current)
	if opt.Start != nil {
		if err := checkWeights(opt.Start, np, dx, c); err != nil {
			return nil, fmt.Errorf("gated: warm start: %w", err)
		}
		for i, b := range opt.Start {
			w.Slice(0, d, i*c, (i+1)*c).(*mat.Dense).Mul(s.q.T(), b)
		}
	}
	wPrev, y, wNew := mat.DenseCopyOf(w), mat.DenseCopyOf(w), mat.NewDense(d, pc, nil)
	gh := mat.NewDense(d, pc, nil)
	f, fPrev, fy, fNew := mat.NewDense(n, c, nil), mat.NewDense(n, c, nil), mat.NewDense(n, c, nil), mat.NewDense(n, c, nil)
	g := mat.NewDense(n, c, nil)
	s.forward(f, w)
	fPrev.Copy(f)
	fy.Copy(f)
	sq := make([]float64, d)

	res := &Result{}
	bestObj := math.Inf(1)
	best := mat.NewDense(d, pc, nil)
	var bestCert Certificate
	haveCert := false
	certify := func(iter int, wc, fc *mat.Dense) {
		p.lossGrad(g, fc)
		dn := s.dualNorm(g, gh)
		obj := p.LossValue(fc) + p.Beta*s.regularizer(wc)
		cert := p.certificate(obj, fc, g, dn)
		if haveCert && cert.Lower < bestCert.Lower {
			cert.Lower = bestCert.Lower // every dual value is a valid bound: keep the best
			cert.Gap = (cert.Upper - cert.Lower) / math.Max(math.Abs(cert.Upper), 1e-12)
		}
		if obj <= bestObj || !haveCert {
			bestObj = obj
			best.Copy(wc)
		} else {
			cert.Upper = bestObj
			cert.Gap = (cert.Upper - cert.Lower) / math.Max(math.Abs(cert.Upper), 1e-12)
		}
		bestCert, haveCert = cert, true
		it := Iterate{Iter: iter, Objective: obj, Cert: cert, Active: s.active(wc), Elapsed: time.Since(start)}
		res.History = append(res.History, it)
		if opt.Progress != nil {
			opt.Progress(it)
		}
	}
	certify(0, w, f)

	// ρ is the metric's multiplier, doubled until the step majorizes:
	// Lipschitz·P always does.
	rho := p.curvature()
	t := 1.0
	iter := 0
	var ctxErr error
	for iter < opt.MaxIter && bestCert.Gap > opt.Tol {
		if err := ctx.Err(); err != nil {
			ctxErr = err
			break
		}
		iter++
		p.lossGrad(g, fy)
		s.backward(gh, g)
		ly := p.LossValue(fy)
		for {
			s.prox(wNew, y, gh, rho, sq)
			s.forward(fNew, wNew)
			// Majorization: L(F⁺) ≤ L(F_y) + ⟨G, F⁺ − F_y⟩ + (ρ/2)‖Ŵ⁺ − Ŷ‖²_Λ.
			lin := inner(g, fNew) - inner(g, fy)
			quad := s.metricDist(wNew, y)
			if p.LossValue(fNew) <= ly+lin+0.5*rho*quad+1e-12*math.Abs(ly) || rho > 1e300 {
				break
			}
			rho *= 2
		}
		// Adaptive restart when the step goes against the momentum.
		restart := false
		if dirDot(y, wNew, w) > 0 {
			restart = true
		}
		tNext := (1 + math.Sqrt(1+4*t*t)) / 2
		mom := (t - 1) / tNext
		if restart {
			tNext, mom = 1, 0
		}
		wPrev.Copy(w)
		w.Copy(wNew)
		fPrev.Copy(f)
		f.Copy(fNew)
		// Ŷ = Ŵ + mom (Ŵ − Ŵ_prev), F_y likewise (F is linear in Ŵ).
		y.Sub(w, wPrev)
		y.Scale(mom, y)
		y.Add(y, w)
		fy.Sub(f, fPrev)
		fy.Scale(mom, fy)
		fy.Add(fy, f)
		t = tNext
		if iter%opt.CertifyEvery == 0 || iter == opt.MaxIter {
			certify(iter, w, f)
		}
	}
	if iter%opt.CertifyEvery != 0 && iter != opt.MaxIter && iter > 0 {
		certify(iter, w, f)
	}
	res.W = make(Weights, np)
	for i := range res.W {
		res.W[i] = mat.NewDense(dx, c, nil)
		res.W[i].Mul(s.q, best.Slice(0, d, i*c, (i+1)*c))
	}
	res.Objective, res.Cert, res.Iterations = bestObj, bestCert, iter
	return res, ctxErr
}

func (s *solver) regularizer(w *mat.Dense) float64 {
	var r float64
	for i := 0; i < s.np; i++ {
		r += groupNorms(w.Slice(0, s.d, i*s.c, (i+1)*s.c).(*mat.Dense).RawMatrix(), s.p.Groups)
	}
	return r
}

func (s *solver) active(w *mat.Dense) int {
	k := 0
	for i := 0; i < s.np; i++ {
		if groupNorms(w.Slice(0, s.d, i*s.c, (i+1)*s.c).(*mat.Dense).RawMatrix(), Joint) > 0 {
			k++
		}
	}
	return k
}

// metricDist returns Σ_r λ_r ‖a_r − b_r‖² over the rows r of Ŵ.
func (s *solver) metricDist(a, b *mat.Dense) float64 {
	ar, br := a.RawMatrix(), b.RawMatrix()
	var t float64
	for r := 0; r < s.d; r++ {
		var rs float64
		x, y := ar.Data[r*ar.Stride:r*ar.Stride+ar.Cols], br.Data[r*br.Stride:r*br.Stride+br.Cols]
		for j, v := range x {
			e := v - y[j]
			rs += e * e
		}
		t += s.lam[r] * rs
	}
	return t
}

func inner(a, b *mat.Dense) float64 {
	ar, br := a.RawMatrix(), b.RawMatrix()
	var t float64
	for r := 0; r < ar.Rows; r++ {
		x, y := ar.Data[r*ar.Stride:r*ar.Stride+ar.Cols], br.Data[r*br.Stride:r*br.Stride+br.Cols]
		for j, v := range x {
			t += v * y[j]
		}
	}
	return t
}

// dirDot returns ⟨y − w⁺, w⁺ − w⟩ (O'Donoghue and Candès' restart test).
func dirDot(y, wNew, w *mat.Dense) float64 {
	yr, nr, wr := y.RawMatrix(), wNew.RawMatrix(), w.RawMatrix()
	var t float64
	for r := 0; r < yr.Rows; r++ {
		a := yr.Data[r*yr.Stride : r*yr.Stride+yr.Cols]
		b := nr.Data[r*nr.Stride : r*nr.Stride+nr.Cols]
		c := wr.Data[r*wr.Stride : r*wr.Stride+wr.Cols]
		for j := range a {
			t += (a[j] - b[j]) * (b[j] - c[j])
		}
	}
	return t
}
