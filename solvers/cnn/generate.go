package cnn

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/convexnn/convexnn/solvers"
	"github.com/convexnn/convexnn/solvers/general"
	"github.com/convexnn/convexnn/solvers/ipm"
	"gonum.org/v1/gonum/floats"
	"gonum.org/v1/gonum/mat"
)

// Pattern generation (column generation by the dual).
//
// The program holds only the sampled patterns; the architecture's training
// problem holds every pattern the data can have. At an optimum of the
// program with loss dual θ (θ_n the loss's derivative at image n's
// prediction: ClipDual's convention), every group u of the program meets
// its dual constraint
//
//	|Σ_n θ_n pool_k (x_nkᵀu)_+| ≤ β‖u‖,
//
// the constraint of eq. (ct_general)'s dual for the group's pattern. A
// filter u that violates it has a pattern whose group would lower the
// objective: added to the program, the optimum falls. This is column
// generation, the classic way of training convex neural networks over
// infinitely many hidden units (Bengio et al., "Convex neural networks",
// NIPS 2005; Bach, "Breaking the curse of dimensionality with convex
// neural networks", JMLR 2017), and Price solves its pricing problem
//
//	max_{‖u‖ = 1} ±Σ_n θ_n pool_k (x_nkᵀu)_+
//
// locally, by the ascent u ← ∇/‖∇‖ (the gradient of the positively
// homogeneous objective at u, Σ_n θ_n pool'_k x_nk over the patches where
// x_nkᵀu > 0) from several starts. The pricing problem is not concave, so
// a generated program's optimum is still that of its patterns: its
// certificate bounds the program on the patterns it ends with, not the
// architecture's training problem.

// PriceOptions configure Price.
type PriceOptions struct {
	// Starts is the number of random starts for each sign (16 when 0);
	// the directions in From start too, each for the sign of its value.
	Starts int
	// Steps is the number of ascent steps from each start (40 when 0).
	Steps int
	// Seed seeds the random starts.
	Seed uint64
	// From are filter directions to start from as well (the program's
	// filters, say).
	From [][]float64
}

// Priced is a filter direction u (unit norm) found by Price with its value
// |Σ_n θ_n pool_k (x_nkᵀu)_+|: above β, its pattern's group lowers the
// program's optimum.
type Priced struct {
	U     []float64
	Value float64
}

// Price returns the filter directions that the ascent from every start
// ended at (the best point of each), by decreasing value (see the pattern
// generation comment above). theta is the loss dual per image.
func (p *Problem) Price(theta []float64, o PriceOptions) ([]Priced, error) {
	n, _ := p.X.Dims()
	f := p.Filter()
	if len(theta) != n {
		return nil, fmt.Errorf("cnn: Price: %d dual values for %d images", len(theta), n)
	}
	for k, v := range theta {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return nil, fmt.Errorf("cnn: Price: dual value %d is %v", k, v)
		}
	}
	if o.Starts < 0 || o.Steps < 0 {
		return nil, fmt.Errorf("cnn: Price: %d starts and %d steps, need ≥ 0", o.Starts, o.Steps)
	}
	if o.Starts == 0 {
		o.Starts = 16
	}
	if o.Steps == 0 {
		o.Steps = 40
	}
	o.Steps = max(o.Steps, 2)
	for i, u := range o.From {
		if len(u) != f {
			return nil, fmt.Errorf("cnn: Price: start %d has %d entries, filters have %d", i, len(u), f)
		}
	}
	xs := p.stackedPatches() // row k·n + m: patch k of image m
	nr := n * len(p.Patches)
	kf := 1 / float64(len(p.Patches))
	// Column c ascends σ_c·value, σ_c = ±1: the random starts in pairs of
	// both signs, each direction of From for the sign of its value at the
	// first step (a program's filter meets its dual constraint with the
	// sign of its output weight).
	nf := len(o.From)
	s := 2*o.Starts + nf
	sgn := make([]float64, s)
	rng := rand.New(rand.NewPCG(o.Seed, 0x7072696365))
	u := mat.NewDense(f, s, nil)
	for c := 0; c < s; c++ {
		sgn[c] = float64(1 - 2*(c%2))
		if c >= 2*o.Starts {
			u.SetCol(c, o.From[c-2*o.Starts])
			continue
		}
		for l := 0; l < f; l++ {
			u.Set(l, c, rng.NormFloat64())
		}
	}
	z := mat.NewDense(nr, s, nil)
	coef := mat.NewDense(nr, s, nil)
	grad := mat.NewDense(f, s, nil)
	val := make([]float64, s)
	// The ascent: fixed-point steps u ← ∇/‖∇‖ for the first half (long
	// moves across activation regions), then steps along the projected
	// gradient r = ∇ − (∇ᵀu)u of angle η from the best point so far,
	// η × 1.5 when the value rises and ÷ 2 when it does not (the maximum
	// may lie on a kink, where r does not vanish).
	best := make([]float64, s)
	bestU, bestR := mat.NewDense(f, s, nil), mat.NewDense(f, s, nil)
	eta := make([]float64, s)
	col, r := make([]float64, f), make([]float64, f)
	fixed := o.Steps / 2
	for step := 0; ; step++ {
		for c := 0; c < s; c++ {
			mat.Col(col, c, u)
			nm := floats.Norm(col, 2)
			if !(nm > 0) || math.IsInf(nm, 0) {
				for l := range col {
					col[l] = rng.NormFloat64()
				}
				nm = floats.Norm(col, 2)
			}
			floats.Scale(1/nm, col)
			u.SetCol(c, col)
		}
		z.Mul(xs, u)
		clear(val)
		p.poolGrad(z, coef, theta, kf, val)
		grad.Mul(xs.T(), coef) // ∇ of Σ_n θ_n pool_k (x_nkᵀu)_+ per column
		for c := range val {
			if step == 0 && c >= 2*o.Starts {
				sgn[c] = math.Copysign(1, val[c])
			}
			if sgn[c] < 0 { // ascend −value
				val[c] = -val[c]
				for l := 0; l < f; l++ {
					grad.Set(l, c, -grad.At(l, c))
				}
			}
			if step == 0 || val[c] > best[c] {
				best[c] = val[c]
				bestU.SetCol(c, mat.Col(col, c, u))
				mat.Col(r, c, grad)
				floats.AddScaled(r, -floats.Dot(r, col), col)
				if nr := floats.Norm(r, 2); nr > 0 {
					floats.Scale(1/nr, r)
				}
				bestR.SetCol(c, r)
				eta[c] *= 1.5
			} else {
				eta[c] /= 2
			}
		}
		if step == o.Steps {
			break
		}
		if step < fixed {
			u.Copy(grad)
			continue
		}
		if step == fixed {
			for c := range eta {
				eta[c] = 0.1
			}
		}
		for c := 0; c < s; c++ { // the best point turned by η along r
			mat.Col(col, c, bestU)
			mat.Col(r, c, bestR)
			floats.Scale(math.Cos(eta[c]), col)
			floats.AddScaled(col, math.Sin(eta[c]), r)
			u.SetCol(c, col)
		}
	}
	out := make([]Priced, s)
	for c := range out {
		out[c] = Priced{U: mat.Col(nil, c, bestU), Value: math.Abs(best[c])}
		if best[c] < 0 {
			out[c].Value = 0
		}
	}
	slices.SortStableFunc(out, func(a, b Priced) int {
		switch {
		case a.Value > b.Value:
			return -1
		case a.Value < b.Value:
			return 1
		}
		return 0
	})
	return out, nil
}

// poolGrad adds Σ_n θ_n pool_k (z_nk,c)_+ to val[c] for the responses z
// (row k·n + m) and sets coef to the coefficients of the gradient's patches:
// θ_n/K where the response is positive (average pooling), θ_n on image
// n's largest positive response (max pooling).
func (p *Problem) poolGrad(z, coef *mat.Dense, theta []float64, kf float64, val []float64) {
	n := len(theta)
	nr, s := z.Dims()
	gr := coef.RawMatrix()
	clear(gr.Data)
	if p.Pool == AvgPool {
		for r := 0; r < nr; r++ {
			th := theta[r%n] * kf
			zr, g := z.RawRowView(r), gr.Data[r*gr.Stride:r*gr.Stride+s]
			for c, v := range zr {
				if v > 0 {
					val[c] += th * v
					g[c] = th
				}
			}
		}
		return
	}
	// Image m's patches are rows m, n + m, …: the running maximum of each
	// column is kept over them, a row at a time (z is row-major).
	k := nr / n
	top := make([]float64, s)
	at := make([]int, s)
	for m := 0; m < n; m++ {
		clear(top)
		for c := range at {
			at[c] = -1
		}
		for a := 0; a < k; a++ {
			for c, v := range z.RawRowView(a*n + m) {
				if v > top[c] {
					top[c], at[c] = v, a
				}
			}
		}
		for c, a := range at {
			if a >= 0 {
				val[c] += theta[m] * top[c]
				gr.Data[(a*n+m)*gr.Stride+c] = theta[m]
			}
		}
	}
}

// generateTol is the tolerance of SolveGenerating's solves before its
// last.
const generateTol = 1e-6

// GenerateOptions configure SolveGenerating.
type GenerateOptions struct {
	// Rounds is the most rounds of pricing and solving after the first
	// solve (2 when 0).
	Rounds int
	// PerRound is the most patterns a round adds (the program's patterns
	// when 0).
	PerRound int
	// Tol is the interior-point method's tolerance for the last solve
	// (0: 1e-9); the solves before it, whose duals only guide the
	// pricing, stop at max(Tol, 1e-6).
	Tol float64
	// Separation is the least angle, in radians, between two filters a
	// round adds (0.2 when 0, about 11.5°): the ascents from many starts
	// end at a few maxima, so the best candidates are mostly one filter
	// found again, whose patterns differ on a few images and lower the
	// optimum little more than one of them. In (0, π].
	Separation float64
	// Price configures the pricing; its From is the program's filters.
	Price PriceOptions
	// KeepZero keeps the patterns whose groups are zero at a solve;
	// otherwise a round drops them before it adds patterns (the optimum
	// is the same without them, and each solve is cheaper; a dropped
	// pattern may be generated again).
	KeepZero bool
	// Round, when not nil, is called after every solve.
	Round func(GenerateRound)
}

// GenerateRound is one solve of SolveGenerating.
type GenerateRound struct {
	Round     int
	Patterns  int
	Objective float64
	// Bound is the certificate of the last solve only (the rounds before
	// it are not certified: their duals only guide the pricing).
	Bound general.Bound
	// Violation is the pricing's best value over β after this solve
	// (≤ 1: no filter found that lowers the optimum; 0 after the last
	// round, which is not priced).
	Violation float64
	Result    *general.IPMResult
	// Theta is the loss dual per image at the solve, which the pricing
	// uses (the images that weigh on the next patterns).
	Theta []float64
}

// SolveGenerating solves the program (squared or hinge loss, either
// pooling) by the interior-point method (SolveInteriorPoint), then, for up to Rounds
// rounds, prices (Price from the loss dual at the optimum and from the
// program's filters), adds the patterns of the best filters whose value
// exceeds β (at most PerRound new ones, Separation apart; each new
// pattern's working set of rows starts from the rows nearest its filter,
// the others' from the rows they ended with) and solves again; it stops
// early when the pricing finds none. It returns the last solve, certified for
// the program on the patterns it ends with (p holds them).
func (p *Problem) SolveGenerating(ctx context.Context, o GenerateOptions) (*general.IPMResult, error) {
	if o.Rounds < 0 || o.PerRound < 0 {
		return nil, fmt.Errorf("cnn: pattern generation: %d rounds of %d patterns, need ≥ 0", o.Rounds, o.PerRound)
	}
	if !(o.Separation >= 0 && o.Separation <= math.Pi) {
		return nil, fmt.Errorf("cnn: pattern generation: separation %v rad, need 0 < angle ≤ π (0: the default)", o.Separation)
	}
	if o.Separation == 0 {
		o.Separation = 0.2
	}
	minCos := math.Cos(o.Separation)
	if o.Rounds == 0 {
		o.Rounds = 2
	}
	if o.PerRound == 0 {
		o.PerRound = max(1, len(p.Signs))
	}
	var starts []ipm.RowStart
	for round := 0; ; round++ {
		tol := o.Tol
		if round < o.Rounds {
			tol = max(tol, generateTol)
		}
		sol, err := p.solvePooled(ctx, tol, starts)
		if sol == nil {
			return nil, err
		}
		res := sol.res
		r := GenerateRound{Round: round, Patterns: len(p.Signs), Objective: res.Objective, Result: res, Theta: sol.theta}
		// The last solve is certified: after the last round, on an error
		// (ctx's, with the iterate so far), or when the pricing adds no
		// pattern.
		reported := false
		last := func() (*general.IPMResult, error) {
			if cerr := sol.certify(); cerr != nil {
				return nil, cerr
			}
			r.Bound = res.Bound
			if o.Round != nil && !reported {
				o.Round(r)
			}
			return res, err
		}
		if err != nil || round == o.Rounds {
			return last()
		}
		// The program's patterns start from the rows their sets ended
		// with, the new ones from the rows nearest their filters.
		starts = make([]ipm.RowStart, len(sol.rows))
		for i, r := range sol.rows {
			starts[i].Rows = r
		}
		po := o.Price
		po.Seed += uint64(round)
		po.From = append(slices.Clip(po.From), p.filters(res.W, res.Wp)...)
		cands, perr := p.Price(sol.theta, po)
		if perr != nil {
			return nil, perr
		}
		if len(cands) > 0 {
			r.Violation = cands[0].Value / p.Beta
		}
		if o.Round != nil && r.Violation > 1 {
			o.Round(r) // before p's patterns change: r's weights are on them
			reported = true
		}
		if !o.KeepZero && r.Violation > 1 {
			starts = p.dropZero(res.W, res.Wp, starts, max(solvers.RecoveryTol, 100*tol))
		}
		// The best candidates above β, each at least o.Separation from
		// those taken before it (Price's directions are unit vectors).
		added := 0
		var picked [][]float64
	cand:
		for _, c := range cands {
			if added == o.PerRound || c.Value <= p.Beta {
				break
			}
			for _, q := range picked {
				if floats.Dot(q, c.U) > minCos {
					continue cand
				}
			}
			picked = append(picked, c.U)
			ok, aerr := p.AddPattern(c.U)
			if aerr != nil {
				return nil, aerr
			}
			if ok {
				added++
				starts = append(starts, ipm.RowStart{Dir: c.U})
			}
		}
		if added == 0 {
			return last()
		}
	}
}

// dropZero removes the patterns whose groups in (w, w′) are both zero
// (at most rel of the largest group: solvers.RecoveryTol, the rule of
// recovery, after a solve to 10⁻⁹; more after a looser one, whose zeros
// are that much less exact), keeping at least one, and returns starts
// without them.
func (p *Problem) dropZero(w, wp []float64, starts []ipm.RowStart, rel float64) []ipm.RowStart {
	f := p.Filter()
	norms := make([]float64, len(p.Signs))
	big := 0.0
	for i := range norms {
		norms[i] = math.Max(floats.Norm(w[i*f:(i+1)*f], 2), floats.Norm(wp[i*f:(i+1)*f], 2))
		big = math.Max(big, norms[i])
	}
	var signs [][]solvers.Pattern
	var arg [][]int
	var kept []ipm.RowStart
	for i, nm := range norms {
		if nm > rel*big || (len(signs) == 0 && i == len(norms)-1) {
			signs = append(signs, p.Signs[i])
			if p.Argmax != nil {
				arg = append(arg, p.Argmax[i])
			}
			if i < len(starts) {
				kept = append(kept, starts[i])
			}
		}
	}
	p.Signs, p.Argmax = signs, arg
	return kept
}

// filters returns the nonzero groups of (w, w′) as filter directions.
func (p *Problem) filters(w, wp []float64) [][]float64 {
	f := p.Filter()
	var out [][]float64
	for _, x := range [][]float64{w, wp} {
		for i := 0; i+f <= len(x); i += f {
			if floats.Norm(x[i:i+f], 2) > 0 {
				out = append(out, slices.Clone(x[i:i+f]))
			}
		}
	}
	return out
}

// lossDual returns the loss dual θ at the point's predictions for a
// smooth loss (the loss's derivative, clipped to its domain).
func lossDual(gp *general.Program, loss solvers.Loss, w, wp []float64) []float64 {
	n := len(gp.Y)
	diff := make([]float64, len(w))
	floats.SubTo(diff, w, wp)
	yhat := make([]float64, n)
	gp.F.Apply(yhat, diff)
	th := make([]float64, n)
	loss.Grad(th, yhat, gp.Y)
	loss.ClipDual(th, gp.Y)
	return th
}
