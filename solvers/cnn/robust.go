package cnn

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"

	"github.com/convexnn/convexnn/solvers"
	"github.com/convexnn/convexnn/solvers/general"
	"github.com/convexnn/convexnn/solvers/ipm"
	"gonum.org/v1/gonum/floats"
	"gonum.org/v1/gonum/mat"
)

// RobustResult is the outcome of SolveRobust.
type RobustResult struct {
	W, Wp []float64 // v_i and w_i stacked, as Program's points
	// Objective is the robust objective at (W, Wp), a feasible point;
	// PointLoss[m] is image m's worst-case loss term (hinge
	// max(0, 1 − y_m f_m + ε‖g_m‖₁), before the 1/n; with the winner bound
	// (WinnerBound) f_m and g_m are the favourable filters' lower bound and
	// the other filters enter by their epigraphs s_mi; see SolveRobust for
	// the others), which the recovered network's loss on the ℓ∞ ball around
	// image m never exceeds.
	Objective float64
	PointLoss []float64
	// Lower ≤ optimum ≤ Upper = Objective is the certificate, CertifiedGap
	// = (Upper − Lower)/|Upper| (robustForm.bound).
	Lower, Upper, CertifiedGap float64
	Status                     ipm.Status
	// Gap is the (last) interior-point solve's relative duality gap.
	Gap float64
	// Iterations counts the interior-point iterations (of every proximal
	// Newton step for BCE and logistic); for SolveRobustADMM, its steps.
	Iterations int
	// State is SolveRobustADMM's state, to continue from (nil for
	// SolveRobust).
	State *general.ConeState
}

// masks returns, per patch position, which entries of a patch are image
// pixels (not padding), as 1/0.
func (p *Problem) masks() [][]float64 {
	s, cv := p.Shape, p.Conv
	pr, pc := cv.Positions(s)
	f := p.Filter()
	out := make([][]float64, 0, pr*pc)
	for a := 0; a < pr; a++ {
		for b := 0; b < pc; b++ {
			m := make([]float64, f)
			e := 0
			for c := 0; c < s.C; c++ {
				for i := 0; i < cv.Size; i++ {
					for j := 0; j < cv.Size; j++ {
						h, w := a*cv.Stride+i-cv.Pad, b*cv.Stride+j-cv.Pad
						if h >= 0 && h < s.H && w >= 0 && w < s.W {
							m[e] = 1
						}
						e++
					}
				}
			}
			out = append(out, m) // the bias entry, if any, stays 0
		}
	}
	return out
}

// pixelOf returns, per patch position and patch entry, the pixel index
// (CHW) it reads, −1 for padding and the bias entry.
func (p *Problem) pixelOf() [][]int {
	s, cv := p.Shape, p.Conv
	pr, pc := cv.Positions(s)
	out := make([][]int, 0, pr*pc)
	for a := 0; a < pr; a++ {
		for b := 0; b < pc; b++ {
			idx := make([]int, 0, p.Filter())
			for c := 0; c < s.C; c++ {
				for i := 0; i < cv.Size; i++ {
					for j := 0; j < cv.Size; j++ {
						h, w := a*cv.Stride+i-cv.Pad, b*cv.Stride+j-cv.Pad
						if h >= 0 && h < s.H && w >= 0 && w < s.W {
							idx = append(idx, (c*s.H+h)*s.W+w)
						} else {
							idx = append(idx, -1)
						}
					}
				}
			}
			if cv.Bias {
				idx = append(idx, -1)
			}
			out = append(out, idx)
		}
	}
	return out
}

// MaxRobustVariables bounds SolveRobust's variables: its normal matrix,
// formed from G's nonzeros (ipm.ConeQP.SparseG), is factored dense (10 000
// variables: 0.8 GB and 3·10¹¹ flops per iteration). MaxRobustBytes bounds
// what it holds: G, built dense (rows × variables), and the normal matrix
// with its factor (robustIPMBytes).
const (
	MaxRobustVariables = 10000
	MaxRobustBytes     = 6e9
)

// robustIPMBytes is what SolveRobust holds at its largest: the dense G
// (rows × nx) and three nx² matrices (the normal matrix, its factor, and
// the previous iterate's while it is formed).
func robustIPMBytes(rows, nx int) float64 {
	return 8 * (float64(rows)*float64(nx) + 3*float64(nx)*float64(nx))
}

// RobustInteriorPointFits reports whether SolveRobust takes p's robust
// program at radius eps (at most MaxRobustVariables variables and
// MaxRobustBytes).
func (p *Problem) RobustInteriorPointFits(eps float64) bool {
	if len(p.Signs) == 0 {
		return false
	}
	fm := p.layout(eps)
	fm.placeEpigraphs()
	return fm.nx <= MaxRobustVariables && robustIPMBytes(fm.rows(0), fm.nx) <= MaxRobustBytes
}

// rows is the number of rows of the robust program's G with extra rows
// after the cone's.
func (fm *robustForm) rows(extra int) int { return fm.orth + 2*fm.np*(fm.f+1) + extra }

// MaxRobustADMMBytes bounds what RobustADMM holds: its program's G, built
// dense, and its x-system's matrices (robustADMMBytes).
const MaxRobustADMMBytes = 6e9

// robustADMMBytes is what RobustADMM holds at its largest: the dense G
// (rows × nx) and four nx² matrices (ĜᵀĜ, the x-system, its factor and its
// inverse, while they are formed).
func robustADMMBytes(rows, nx int) float64 {
	return 8 * (float64(rows)*float64(nx) + 4*float64(nx)*float64(nx))
}

// robustTightening is the relative margin by which SolveRobust tightens the
// robust constraints (radius ε(1 + robustTightening)), so that the
// interior-point method's residuals leave its solution feasible for ε.
const robustTightening = 1e-8

// term is one patch through which a group answers on an image, with its
// weight in f: 1/K for average pooling, 1 for the winner of max pooling.
type term struct {
	k int
	w float64
}

// signRow is the robust sign constraint s·x_kmᵀu ≥ ε‖u‖_{1,k} of a group on
// patch k of image m.
type signRow struct {
	k, m int
	s    float64
}

// winRow is max pooling's robust winner constraint
// (x_am − x_km)ᵀu ≥ ε‖P_aᵀu − P_kᵀu‖₁ of a group on image m (P_kᵀu lays the
// filter on patch k's pixels); pair indexes its overlap.
type winRow struct{ a, k, m, pair int }

// overlap lists the pixels that patches a and k of a winner row share: the
// entries la[t], lk[t] of the filter that read pixel t of the overlap in
// patch a and patch k. Its epigraph variables o_t ≥ |u_la − u_lk| start at
// off within a half's block.
type overlap struct {
	la, lk []int
	off    int
	// excl lists the filter entries of the pixels only one of the two
	// patches reads (an entry twice if it reads such a pixel in both).
	excl []int
}

// robustForm is SolveRobust's cone program and the bookkeeping that reads
// its multipliers for the certificate. Variables: v (np·f), w (np·f),
// t (2np), a = |v| and b = |w| (np·f each), ζ (n: the worst-case margin or
// loss epigraphs), e (|g_m|, shared: see gradKeys), o (2·no: the overlaps'
// epigraphs).
// Rows: the robust sign rows and winner rows of both halves, |u| ≤ a, the
// overlaps' epigraphs, the loss rows, |g_m| ≤ e_m, then one second-order
// cone per group.
type robustForm struct {
	p                  *Problem
	eps                float64
	n, f, np, nk, npix int
	pix                [][]int
	masks              [][]float64
	terms              [][][]term  // [i][m]
	signs              [][]signRow // [i]
	wins               [][]winRow  // [i]
	pairs              []overlap
	no                 int // overlap variables per half
	// eOf[m][q] is the epigraph variable of |g_mq| (−1: g_mq is 0 for every
	// filter), erep[j] an image whose g reads like variable j's, epix[j] its
	// pixel (gradKeys).
	eOf                [][]int
	erep, epix         []int
	ov, ow, ot, oa, ob int
	oz, oe, oo, nx     int
	rWin, rAbs, rOver  int
	rLoss, rGrad, orth int
	extra              int // zero rows after the cone's
	lossRows           int // per image: hinge 2, squared 2, BCE and logistic 1
	// free is max pooling's WinnerBound program: no sign or winner rows.
	// low[m] is the half (0: v, 1: w) whose terms bound image m's margin
	// from the favourable side; the other half enters through the upper
	// epigraphs s_mi ≥ (x_kmᵀu_i + ε‖P_kᵀu_i‖₁)_+ (variables from os, 1 + nk
	// rows per (m, i) from rUp).
	free    bool
	low     []int
	os, rUp int
	g       *mat.Dense
	h, c    []float64
	cone    ipm.Cone
}

// newRobustForm returns the robust program of p at radius eps, with
// extra zero rows after the cone's (for RobustADMM's loss rows); admm
// selects RobustADMM's size limits (MaxRobustADMMBytes for its dense G)
// instead of the interior-point method's (MaxRobustVariables).
func newRobustForm(p *Problem, eps float64, extra int, admm bool) (*robustForm, error) {
	fm := p.layout(eps)
	fm.placeEpigraphs()
	rows := fm.rows(extra)
	switch {
	case !admm && fm.nx > MaxRobustVariables:
		return nil, fmt.Errorf("cnn: the robust program has %d variables, the dense interior-point method takes up to %d (fewer images, patterns or pixels; or its ADMM splitting, NewRobustADMM)", fm.nx, MaxRobustVariables)
	case !admm && robustIPMBytes(rows, fm.nx) > MaxRobustBytes:
		return nil, fmt.Errorf("cnn: the robust program's interior-point method would hold %.1f GB (%d rows × %d variables, and three %d² matrices), more than its limit of %.1f GB: fewer images, patterns or pixels", robustIPMBytes(rows, fm.nx)/1e9, rows, fm.nx, fm.nx, MaxRobustBytes/1e9)
	case admm && robustADMMBytes(rows, fm.nx) > MaxRobustADMMBytes:
		return nil, fmt.Errorf("cnn: the robust program's ADMM splitting would hold %.1f GB (%d rows × %d variables, and four %d² matrices of its x-system), more than its limit of %.1f GB: fewer images, patterns or pixels", robustADMMBytes(rows, fm.nx)/1e9, rows, fm.nx, fm.nx, MaxRobustADMMBytes/1e9)
	}
	fm.extra = extra
	fm.build()
	return fm, nil
}

// layout returns the robust program's terms, constraints, and variables
// and rows up to the gradient epigraphs (placeEpigraphs places the rest),
// without its matrices.
func (p *Problem) layout(eps float64) *robustForm {
	n, _ := p.X.Dims()
	fm := &robustForm{p: p, eps: eps, n: n, f: p.Filter(), np: len(p.Signs), nk: len(p.Patches),
		npix: p.Shape.C * p.Shape.H * p.Shape.W, pix: p.pixelOf(), masks: p.masks()}
	if p.Pool == MaxPool && p.MaxRobust == WinnerBound {
		fm.free = true
		fm.low = make([]int, n)
		for m := range fm.low {
			if p.Loss.MarginScale(p.Y[m]) > 0 { // f must stay low: the w half's terms
				fm.low[m] = 1
			}
		}
	}
	fm.terms = make([][][]term, fm.np)
	fm.signs = make([][]signRow, fm.np)
	fm.wins = make([][]winRow, fm.np)
	pairOf := map[[3]int]int{}
	sign := func(b bool) float64 {
		if b {
			return 1
		}
		return -1
	}
	for i := range p.Signs {
		fm.terms[i] = make([][]term, n)
		for m := 0; m < n; m++ {
			if p.Pool == AvgPool {
				for k := range p.Patches {
					fm.signs[i] = append(fm.signs[i], signRow{k, m, sign(p.Signs[i][k][m])})
					if p.Signs[i][k][m] {
						fm.terms[i][m] = append(fm.terms[i][m], term{k, 1 / float64(fm.nk)})
					}
				}
				continue
			}
			a, on := p.Argmax[i][m], p.Signs[i][0][m]
			if fm.free {
				if on {
					fm.terms[i][m] = []term{{a, 1}}
				}
				continue
			}
			fm.signs[i] = append(fm.signs[i], signRow{a, m, sign(on)})
			if on {
				fm.terms[i][m] = []term{{a, 1}}
			}
			for k := range p.Patches {
				if k == a {
					continue
				}
				key := [3]int{i, a, k}
				id, ok := pairOf[key]
				if !ok {
					id = len(fm.pairs)
					pairOf[key] = id
					fm.pairs = append(fm.pairs, fm.overlapOf(a, k))
				}
				fm.wins[i] = append(fm.wins[i], winRow{a, k, m, id})
			}
		}
	}
	for j := range fm.pairs {
		fm.pairs[j].off = fm.no
		fm.no += len(fm.pairs[j].la)
	}
	np, f := fm.np, fm.f
	fm.ov, fm.ow, fm.ot = 0, np*f, 2*np*f
	fm.oa, fm.ob = fm.ot+2*np, 3*np*f+2*np
	fm.oz = 4*np*f + 2*np
	fm.oe = fm.oz + n
	var nsign, nwin int
	for i := range fm.signs {
		nsign += len(fm.signs[i])
		nwin += len(fm.wins[i])
	}
	switch p.Loss {
	case solvers.BCELoss, solvers.LogisticLoss:
		fm.lossRows = 1
	default:
		fm.lossRows = 2
	}
	fm.rWin = 2 * nsign
	fm.rAbs = fm.rWin + 2*nwin
	fm.rOver = fm.rAbs + 4*np*f
	fm.rLoss = fm.rOver + 4*fm.no
	fm.rGrad = fm.rLoss + fm.lossRows*n
	return fm
}

// placeEpigraphs shares the gradient epigraphs (gradKeys) and places what
// follows them: the overlaps' variables and the second-order cones' rows.
// Only the program needs them (RobustObjective and RobustViolation do not).
func (fm *robustForm) placeEpigraphs() {
	fm.gradKeys()
	fm.oo = fm.oe + len(fm.erep)
	fm.os = fm.oo + 2*fm.no
	fm.nx = fm.os
	fm.rUp = fm.rGrad + 2*len(fm.erep)
	fm.orth = fm.rUp
	if fm.free {
		fm.nx += fm.n * fm.np
		fm.orth += fm.n * fm.np * (1 + fm.nk)
	}
}

// gradKeys shares the epigraph variables of the |g_mq|: g_mq depends on the
// image m only through which terms (group i, patch k, filter entry l) read
// pixel q, so images with the same terms at q share one variable e ≥ |g_mq|
// and one pair of rows, exactly (each image's margin row still adds its
// own e's). With P patterns there are at most 2^P such term lists per pixel
// and patch covering it, so the variables stop growing with n: at most
// Σ_q min(n, distinct lists at q) instead of n·C·H·W.
func (fm *robustForm) gradKeys() {
	type entry struct{ i, k, l int }
	at := make([][]entry, fm.npix) // scratch: the terms reading each pixel
	seen := make([]map[string]int, fm.npix)
	fm.eOf = make([][]int, fm.n)
	var key []byte
	for m := 0; m < fm.n; m++ {
		for q := range at {
			at[q] = at[q][:0]
		}
		for i := range fm.terms {
			for _, tm := range fm.terms[i][m] {
				for l, q := range fm.pix[tm.k] {
					if q >= 0 {
						at[q] = append(at[q], entry{i, tm.k, l})
					}
				}
			}
		}
		fm.eOf[m] = make([]int, fm.npix)
		for q, es := range at {
			if len(es) == 0 {
				fm.eOf[m][q] = -1
				continue
			}
			key = key[:0]
			if fm.free { // the terms read one half, which the key must name
				key = append(strconv.AppendInt(key, int64(fm.low[m]), 10), '|')
			}
			for _, e := range es {
				key = strconv.AppendInt(key, int64(e.i), 10)
				key = strconv.AppendInt(append(key, ','), int64(e.k), 10)
				key = strconv.AppendInt(append(key, ','), int64(e.l), 10)
				key = append(key, ';')
			}
			if seen[q] == nil {
				seen[q] = map[string]int{}
			}
			j, ok := seen[q][string(key)]
			if !ok {
				j = len(fm.erep)
				seen[q][string(key)] = j
				fm.erep, fm.epix = append(fm.erep, m), append(fm.epix, q)
			}
			fm.eOf[m][q] = j
		}
	}
}

// overlapOf returns the pixels patches a and k share, as filter entries.
func (fm *robustForm) overlapOf(a, k int) overlap {
	at := map[int]int{}
	for l, q := range fm.pix[a] {
		if q >= 0 {
			at[q] = l
		}
	}
	var o overlap
	inK := map[int]bool{}
	for l, q := range fm.pix[k] {
		if q < 0 {
			continue
		}
		inK[q] = true
		if la, ok := at[q]; ok {
			o.la, o.lk = append(o.la, la), append(o.lk, l)
		} else {
			o.excl = append(o.excl, l)
		}
	}
	for l, q := range fm.pix[a] {
		if q >= 0 && !inK[q] {
			o.excl = append(o.excl, l)
		}
	}
	return o
}

// build writes G, h, the cone and the linear cost β·Σt (+ (1/n)Σζ for the
// hinge loss).
func (fm *robustForm) build() {
	p, n, f, np := fm.p, fm.n, fm.f, fm.np
	rows := fm.orth + 2*np*(f+1) + fm.extra
	g := mat.NewDense(rows, fm.nx, nil)
	h := make([]float64, rows)
	eps := fm.eps * (1 + robustTightening)
	halves := [2][2]int{{fm.ov, fm.oa}, {fm.ow, fm.ob}}
	// Robust sign rows: −s x_kmᵀu + ε Σ_{l ∈ patch k} a_l ≤ 0.
	r := 0
	for _, hv := range halves {
		for i := range fm.signs {
			for _, sr := range fm.signs[i] {
				row := g.RawRowView(r)
				floats.AddScaled(row[hv[0]+i*f:hv[0]+(i+1)*f], -sr.s, p.Patches[sr.k].RawRowView(sr.m))
				floats.AddScaled(row[hv[1]+i*f:hv[1]+(i+1)*f], eps, fm.masks[sr.k])
				r++
			}
		}
	}
	// Winner rows: −(x_am − x_km)ᵀu + ε(Σ_{a only} a_l + Σ_{k only} a_l + Σ_overlap o_t) ≤ 0.
	for half, hv := range halves {
		for i := range fm.wins {
			for _, wr := range fm.wins[i] {
				row := g.RawRowView(r)
				floats.AddScaled(row[hv[0]+i*f:hv[0]+(i+1)*f], -1, p.Patches[wr.a].RawRowView(wr.m))
				floats.AddScaled(row[hv[0]+i*f:hv[0]+(i+1)*f], 1, p.Patches[wr.k].RawRowView(wr.m))
				ov := fm.pairs[wr.pair]
				for _, l := range ov.excl {
					row[hv[1]+i*f+l] += eps
				}
				for t := range ov.la {
					row[fm.oo+half*fm.no+ov.off+t] += eps
				}
				r++
			}
		}
	}
	// |u| ≤ a: ±u − a ≤ 0.
	for _, hv := range halves {
		for l := 0; l < np*f; l++ {
			g.Set(r, hv[0]+l, 1)
			g.Set(r, hv[1]+l, -1)
			g.Set(r+1, hv[0]+l, -1)
			g.Set(r+1, hv[1]+l, -1)
			r += 2
		}
	}
	// Overlaps: ±(u_la − u_lk) − o_t ≤ 0, per group of the pair's pattern.
	for half, hv := range halves {
		for i := range fm.wins {
			seen := map[int]bool{}
			for _, wr := range fm.wins[i] {
				if seen[wr.pair] {
					continue
				}
				seen[wr.pair] = true
				ov := fm.pairs[wr.pair]
				for t := range ov.la {
					o := fm.oo + half*fm.no + ov.off + t
					rr := fm.rOver + 2*(half*fm.no+ov.off+t)
					g.Set(rr, hv[0]+i*f+ov.la[t], 1)
					g.Set(rr, hv[0]+i*f+ov.lk[t], -1)
					g.Set(rr, o, -1)
					g.Set(rr+1, hv[0]+i*f+ov.la[t], -1)
					g.Set(rr+1, hv[0]+i*f+ov.lk[t], 1)
					g.Set(rr+1, o, -1)
				}
			}
		}
	}
	r = fm.rLoss
	// Loss rows, with a·f_m written by addF:
	// hinge    −ζ_m ≤ 0 and −y_m f_m + ε Σ_q e_mq − ζ_m ≤ −1;
	// squared  ±(f_m − y_m) + ε Σ_q e_mq − ζ_m ≤ 0;
	// BCE, logistic  c_m f_m + |c_m| ε Σ_q e_mq − ζ_m ≤ 0 (c_m: MarginScale).
	for m := 0; m < n; m++ {
		y := p.Y[m]
		switch p.Loss {
		case solvers.HingeLoss:
			g.Set(r, fm.oz+m, -1)
			fm.addF(g.RawRowView(r+1), m, -y)
			fm.addE(g.RawRowView(r+1), m, eps)
			fm.addS(g.RawRowView(r+1), m, 1)
			g.Set(r+1, fm.oz+m, -1)
			h[r+1] = -1
		case solvers.SquaredLoss:
			for s, sg := range []float64{1, -1} {
				fm.addF(g.RawRowView(r+s), m, sg)
				fm.addE(g.RawRowView(r+s), m, eps)
				g.Set(r+s, fm.oz+m, -1)
				h[r+s] = sg * y
			}
		default:
			c := p.Loss.MarginScale(y)
			fm.addF(g.RawRowView(r), m, c)
			fm.addE(g.RawRowView(r), m, math.Abs(c)*eps)
			fm.addS(g.RawRowView(r), m, math.Abs(c))
			g.Set(r, fm.oz+m, -1)
		}
		r += fm.lossRows
	}
	// |g_mq| ≤ e_j (j = eOf[m][q], one row pair per shared variable):
	// ±g_mq − e_j ≤ 0, g_m = Σ_i Σ_terms w·P_kᵀ(v_i − w_i).
	for j, m := range fm.erep {
		rp, rn := g.RawRowView(r+2*j), g.RawRowView(r+2*j+1)
		rp[fm.oe+j], rn[fm.oe+j] = -1, -1
		sv, sw := fm.halfSigns(m)
		for i := range fm.terms {
			for _, tm := range fm.terms[i][m] {
				for l, q := range fm.pix[tm.k] {
					if q != fm.epix[j] {
						continue
					}
					rp[fm.ov+i*f+l] += sv * tm.w
					rp[fm.ow+i*f+l] += sw * tm.w
					rn[fm.ov+i*f+l] -= sv * tm.w
					rn[fm.ow+i*f+l] -= sw * tm.w
				}
			}
		}
	}
	r += 2 * len(fm.erep)
	if fm.free {
		// −s_mi ≤ 0 and x_kmᵀu + ε Σ_{l ∈ patch k} a_l − s_mi ≤ 0 for the
		// filter u of group i's half on the adverse side of image m.
		for m := 0; m < n; m++ {
			hv := halves[1-fm.low[m]]
			for i := 0; i < np; i++ {
				sv := fm.os + m*np + i
				g.Set(r, sv, -1)
				r++
				for k := range p.Patches {
					row := g.RawRowView(r)
					floats.AddScaled(row[hv[0]+i*f:hv[0]+(i+1)*f], 1, p.Patches[k].RawRowView(m))
					floats.AddScaled(row[hv[1]+i*f:hv[1]+(i+1)*f], eps, fm.masks[k])
					row[sv] = -1
					r++
				}
			}
		}
	}
	fm.cone = ipm.Cone{Orthant: fm.orth}
	for half, off := range []int{fm.ov, fm.ow} {
		for i := 0; i < np; i++ {
			fm.cone.SOC = append(fm.cone.SOC, f+1)
			g.Set(r, fm.ot+half*np+i, -1)
			for l := 0; l < f; l++ {
				g.Set(r+1+l, off+i*f+l, -1)
			}
			r += f + 1
		}
	}
	fm.g, fm.h = g, h
	fm.c = make([]float64, fm.nx)
	for j := 0; j < 2*np; j++ {
		fm.c[fm.ot+j] = p.Beta
	}
	if p.Loss == solvers.HingeLoss {
		for m := 0; m < n; m++ {
			fm.c[fm.oz+m] = 1 / float64(n)
		}
	}
}

// addF adds a·f_m to the row: f_m = Σ_i Σ_terms w·x_kmᵀ(σ_v v_i + σ_w w_i)
// (halfSigns).
func (fm *robustForm) addF(row []float64, m int, a float64) {
	f := fm.f
	sv, sw := fm.halfSigns(m)
	for i := range fm.terms {
		for _, tm := range fm.terms[i][m] {
			x := fm.p.Patches[tm.k].RawRowView(m)
			if sv != 0 {
				floats.AddScaled(row[fm.ov+i*f:fm.ov+(i+1)*f], a*tm.w, x)
			}
			if sw != 0 {
				floats.AddScaled(row[fm.ow+i*f:fm.ow+(i+1)*f], -a*tm.w, x)
			}
		}
	}
}

// halfSigns returns the signs σ_v, σ_w with which the halves' filters enter
// image m's terms: 1, −1 (f = Σ v − w); in the WinnerBound program only
// the favourable half's (low[m]), the other 0.
func (fm *robustForm) halfSigns(m int) (sv, sw float64) {
	switch {
	case !fm.free:
		return 1, -1
	case fm.low[m] == 0:
		return 1, 0
	}
	return 0, -1
}

// addS adds a·Σ_i s_mi to the row (WinnerBound's upper epigraphs).
func (fm *robustForm) addS(row []float64, m int, a float64) {
	if !fm.free {
		return
	}
	for i := 0; i < fm.np; i++ {
		row[fm.os+m*fm.np+i] += a
	}
}

// upper returns Σ_i max(0, max_k x_kmᵀu_i + ε‖P_kᵀu_i‖₁) over the filters
// u_i of image m's adverse half (WinnerBound; 0 otherwise).
func (fm *robustForm) upper(m int, w, wp []float64) float64 {
	if !fm.free {
		return 0
	}
	x := wp
	if fm.low[m] == 1 {
		x = w
	}
	f := fm.f
	var sum float64
	for i := 0; i < fm.np; i++ {
		u := x[i*f : (i+1)*f]
		best := 0.0
		for k, xk := range fm.p.Patches {
			v := floats.Dot(xk.RawRowView(m), u)
			for l, ul := range u {
				v += fm.eps * fm.masks[k][l] * math.Abs(ul)
			}
			best = math.Max(best, v)
		}
		sum += best
	}
	return sum
}

// addE adds a·Σ_q e_mq to the row.
func (fm *robustForm) addE(row []float64, m int, a float64) {
	for _, j := range fm.eOf[m] {
		if j >= 0 {
			row[fm.oe+j] += a
		}
	}
}

// SolveRobust solves the convex adversarial training program of a CNN
// (the appendix "Convex Adversarial Training for ConvNets", as section 4
// does for the two-layer network) against perturbations ‖δ‖_∞ ≤ eps of
// every image's pixels: the patterns must hold on the whole ball, and the
// loss is its worst case there, both in closed form. With the patterns
// fixed, patch k of x + δ is x_k + P_kδ, so for filter u the sign
// constraint holds on the ball iff
//
//	(2D_ik − I) x_kᵀu ≥ eps·‖u‖_{1,k}   (‖·‖_{1,k}: over the patch's pixels, padding excluded),
//
// and with max pooling the winning patch a stays the winner iff
//
//	(x_a − x_k)ᵀu ≥ eps·‖P_aᵀu − P_kᵀu‖₁   for every other patch k
//
// (P_kᵀu lays the filter on patch k's pixels; where the patches overlap
// the entries subtract). Then f(x + δ) = f(x) + δᵀg with
// g = Σ_i Σ_k ω_ik D_ik P_kᵀ(v_i − w_i) (ω = 1/K for average pooling; for
// max pooling only the winner, ω = 1), and the worst loss on the ball is
// that of the worst margin: max(0, 1 − y f + eps‖g‖₁) (hinge),
// ½(|f − y| + eps‖g‖₁)² (squared), log(1 + e^{c f + |c| eps‖g‖₁}) (BCE and
// logistic, c from Loss.MarginScale). The program
//
//	min ℓ_rob(f, g) + β Σ_i (‖v_i‖₂ + ‖w_i‖₂)   s.t. the robust constraints
//
// is a cone LP for the hinge loss, a cone QP for the squared loss (the ℓ₁
// norms by epigraphs, those of the g_m shared by the images whose gradient
// reads alike at a pixel: gradKeys; 600 CIFAR images at 7×7×3 with 4
// patterns need 1515 instead of 88 200), both solved by ipm.SolveConeQP; the BCE and
// logistic losses, which an exponential cone would need, are solved by a
// proximal Newton method whose steps are those cone QPs with the loss
// replaced by its second-order model, with a backtracking line search.
// Dense: small programs only (MaxRobustVariables).
//
// The result is certified (RobustResult.Lower, robustForm.bound): at its
// point, which is feasible (the constraints are solved at the radius
// eps(1 + 10⁻⁸), and any group still in violation is set to zero), the
// recovered network's loss at any x_m + δ in the ball is at most
// PointLoss[m] (Network.PGD cannot beat it). When ctx ends the solve, the
// point so far is returned, made feasible and certified, with ctx's error.
func (p *Problem) SolveRobust(ctx context.Context, eps, tol float64) (*RobustResult, error) {
	switch {
	case !(eps > 0) || math.IsInf(eps, 0):
		return nil, fmt.Errorf("cnn: robust training needs a radius 0 < ε < ∞, got %v", eps)
	case len(p.Signs) == 0:
		return nil, errors.New("cnn: no patterns (SamplePatterns)")
	}
	if err := p.checkMaxRobust(); err != nil {
		return nil, err
	}
	if tol == 0 {
		tol = 1e-9
	}
	fm, err := newRobustForm(p, eps, 0, false)
	if err != nil {
		return nil, err
	}
	qp := &ipm.ConeQP{C: fm.c, G: fm.g, H: fm.h, K: fm.cone, SparseG: true}
	var res *ipm.ConeQPResult
	var stop error // ctx's error when it ended the solve: the point so far is returned with it
	iters := 0
	switch p.Loss {
	case solvers.HingeLoss, solvers.SquaredLoss:
		if p.Loss == solvers.SquaredLoss { // ½ Σ ζ_m²
			qp.Q = mat.NewSymDense(fm.nx, nil)
			for m := 0; m < fm.n; m++ {
				qp.Q.SetSym(fm.oz+m, fm.oz+m, 1)
			}
		}
		res, err = ipm.SolveConeQP(ctx, qp, ipm.Options{Tol: tol})
		if err != nil && (ctx.Err() == nil || res == nil || res.X == nil) {
			return nil, err
		}
		stop = err // ctx's: the best iterate so far is restored and certified below
		if res.X == nil {
			return nil, fmt.Errorf("cnn: the robust program's interior-point solve ended %v", res.Status)
		}
		iters = res.Iterations
	default:
		res, iters, err = fm.proximalNewton(ctx, qp, tol)
		if err != nil && (ctx.Err() == nil || res == nil) {
			return nil, err
		}
		stop = err
	}
	f := fm.f * fm.np
	out := &RobustResult{W: append([]float64(nil), res.X[fm.ov:fm.ov+f]...), Wp: append([]float64(nil), res.X[fm.ow:fm.ow+f]...),
		Status: res.Status, Gap: res.Gap, Iterations: iters}
	fm.restore(out.W, out.Wp)
	out.Objective, out.PointLoss = fm.objective(out.W, out.Wp)
	out.Lower = fm.bound(res.Z)
	out.Upper = out.Objective
	out.CertifiedGap = (out.Upper - out.Lower) / math.Max(1e-300, math.Abs(out.Upper))
	return out, stop
}

// proximalNewton minimizes the BCE or logistic robust program: each step
// solves the cone QP with (1/n) Σ_m softplus(ζ_m) replaced by its
// second-order model at the current ζ, then backtracks along the segment
// to the QP's solution (feasible, as both ends are) until the objective
// falls by a quarter of the model's decrease. The first subproblems are
// solved to 10⁻³, each later one to a tenth of the last relative decrease,
// down to tol. It stops when the model's decrease is below
// tol·max(1, objective) at a subproblem solved to tol, and returns the last QP's
// result with X set to the final point, and the total interior-point
// iterations.
func (fm *robustForm) proximalNewton(ctx context.Context, qp *ipm.ConeQP, tol float64) (*ipm.ConeQPResult, int, error) {
	n := fm.n
	inv := 1 / float64(n)
	x := make([]float64, fm.nx) // zero weights, ζ = 0: feasible
	objective := func(x []float64) float64 {
		var s float64
		for m := 0; m < n; m++ {
			s += solvers.Softplus(x[fm.oz+m]) * inv
		}
		for j := 0; j < 2*fm.np; j++ {
			s += fm.p.Beta * x[fm.ot+j]
		}
		return s
	}
	qp.Q = mat.NewSymDense(fm.nx, nil)
	c := append([]float64(nil), fm.c...)
	qp.C = c
	total, inner := 0, math.Max(tol, 1e-3)
	var last *ipm.ConeQPResult
	// stopped returns the point so far (feasible: the start, zero, is, and
	// each step moves along a segment between feasible points) with ctx's
	// error; before the first step's QP, with zero multipliers (a valid,
	// weak, lower bound).
	stopped := func(err error) (*ipm.ConeQPResult, int, error) {
		if last == nil {
			last = &ipm.ConeQPResult{Status: ipm.IterationLimit, Z: make([]float64, len(qp.H))}
		}
		last.X = x
		return last, total, err
	}
	for step := 0; step < 60; step++ {
		if err := ctx.Err(); err != nil {
			return stopped(err)
		}
		grad := make([]float64, n)
		curv := make([]float64, n)
		for m := 0; m < n; m++ {
			z := x[fm.oz+m]
			s := solvers.Logistic(z)
			grad[m], curv[m] = s*inv, s*(1-s)*inv
			qp.Q.SetSym(fm.oz+m, fm.oz+m, curv[m])
			c[fm.oz+m] = grad[m] - curv[m]*z
		}
		res, err := ipm.SolveConeQP(ctx, qp, ipm.Options{Tol: inner})
		if err != nil {
			if ctx.Err() != nil {
				return stopped(err)
			}
			return nil, total, err
		}
		total += res.Iterations
		if res.X == nil {
			return nil, total, fmt.Errorf("cnn: a robust proximal Newton step's interior-point solve ended %v", res.Status)
		}
		last = res
		// The model's decrease from x to the QP's solution.
		var dec float64
		for j := 0; j < 2*fm.np; j++ {
			dec += fm.p.Beta * (res.X[fm.ot+j] - x[fm.ot+j])
		}
		for m := 0; m < n; m++ {
			d := res.X[fm.oz+m] - x[fm.oz+m]
			dec += grad[m]*d + curv[m]*d*d/2
		}
		f0 := objective(x)
		if -dec <= tol*math.Max(1, f0) && inner <= tol {
			break
		}
		// Inexact steps far from the optimum: the next subproblem is solved
		// to a tenth of this step's relative decrease (at least tol).
		inner = math.Max(tol, math.Min(inner, 0.1*-dec/math.Max(1, f0)))
		t := 1.0
		trial := make([]float64, fm.nx)
		for {
			for j := range trial {
				trial[j] = x[j] + t*(res.X[j]-x[j])
			}
			if objective(trial) <= f0+0.25*t*dec || t < 1e-8 {
				break
			}
			t /= 2
		}
		copy(x, trial)
	}
	last.X = x
	return last, total, nil
}

// restore makes (w, w′) feasible for the robust constraints at radius ε.
// A group that violates any of them (by rounding, where a constraint is
// tight without slack for the tightened radius to give: a filter whose
// pixel weights are zero up to the interior-point method's accuracy, say)
// first has its entries below 10⁻⁸, then 10⁻⁶, of its largest set to zero
// (a filter of only its bias satisfies every winner constraint exactly);
// if it still violates one it is set to zero, which satisfies every one.
//
// Then the groups the recovery drops (solvers.RecoveryTol) are set to zero,
// so that the point's worst-case loss terms are the recovered network's.
func (fm *robustForm) restore(w, wp []float64) {
	f := fm.f
	trial := make([]float64, f)
	defer func() {
		var big float64
		for _, x := range [][]float64{w, wp} {
			for i := 0; i < fm.np; i++ {
				big = math.Max(big, floats.Norm(x[i*f:(i+1)*f], 2))
			}
		}
		for _, x := range [][]float64{w, wp} {
			for i := 0; i < fm.np; i++ {
				if u := x[i*f : (i+1)*f]; floats.Norm(u, 2) <= solvers.RecoveryTol*big {
					for l := range u {
						u[l] = 0
					}
				}
			}
		}
	}()
	for _, x := range [][]float64{w, wp} {
		for i := 0; i < fm.np; i++ {
			u := x[i*f : (i+1)*f]
			if fm.groupViolation(i, u) <= 0 {
				continue
			}
			big := floats.Norm(u, math.Inf(1))
			fixed := false
			for _, rel := range []float64{1e-8, 1e-6} {
				for l, v := range u {
					trial[l] = v
					if math.Abs(v) <= rel*big {
						trial[l] = 0
					}
				}
				if fm.groupViolation(i, trial) <= 0 {
					copy(u, trial)
					fixed = true
					break
				}
			}
			if !fixed {
				for l := range u {
					u[l] = 0
				}
			}
		}
	}
}

// groupViolation returns the largest violation of group i's robust sign
// and winner constraints at filter u (≤ 0 when feasible).
func (fm *robustForm) groupViolation(i int, u []float64) float64 {
	p := fm.p
	worst := math.Inf(-1)
	l1 := make([]float64, fm.nk)
	for k := range l1 {
		for l, v := range u {
			l1[k] += fm.masks[k][l] * math.Abs(v)
		}
	}
	for _, sr := range fm.signs[i] {
		worst = math.Max(worst, fm.eps*l1[sr.k]-sr.s*floats.Dot(p.Patches[sr.k].RawRowView(sr.m), u))
	}
	if len(fm.wins[i]) == 0 {
		return worst
	}
	lay := make([]float64, fm.npix)
	for _, wr := range fm.wins[i] {
		for q := range lay {
			lay[q] = 0
		}
		for l, q := range fm.pix[wr.a] {
			if q >= 0 {
				lay[q] += u[l]
			}
		}
		for l, q := range fm.pix[wr.k] {
			if q >= 0 {
				lay[q] -= u[l]
			}
		}
		diff := floats.Dot(p.Patches[wr.a].RawRowView(wr.m), u) - floats.Dot(p.Patches[wr.k].RawRowView(wr.m), u)
		worst = math.Max(worst, fm.eps*floats.Norm(lay, 1)-diff)
	}
	return worst
}

// bound returns a lower bound on the robust program's optimum from the
// multipliers z of its cone program (any z: the bound is valid for every
// one, and tight at an optimum's). By weak duality, for the loss rows'
// multipliers turned into a_m (the coefficient of f_m) and b_m ≥ 0 (that
// of ε‖g_m‖₁) with the loss's conjugate term κ_m,
//
//	ℓ_rob(f_m, g_m) ≥ κ_m + a_m f_m + b_m ε‖g_m‖₁ ≥ κ_m + a_m f_m + b_m ε ρ_mᵀg_m
//
// (hinge: a = −yλ, b = λ, κ = λ, λ ∈ [0, 1/n]; squared: a = μ⁺ − μ⁻,
// b = μ⁺ + μ⁻, κ = −½b² − a y; BCE, logistic: a = cλ, b = |c|λ,
// κ = −ℓ*(λ), Loss.NegConjugate; ρ_m ∈ [−1, 1]^pixels from the multipliers of
// |g_m| ≤ e_m). The right side is linear in the filters, q_jᵀu_j per group;
// with the multipliers α ≥ 0 of the robust constraints (winner rows: the
// overlaps' ℓ₁ terms bounded below by τᵀ(u_la − u_lk), τ from their
// epigraphs' multipliers) the group's part of the Lagrangian is at least
// β‖u‖ + q̃ᵀu + Σ_l r_l|u_l| with the radii r = ε Σ α·mask ≥ 0, which is
// nonnegative for all u iff dist(−q̃, box(r)) ≤ β. Scaling every multiplier
// by s = min(1, β/max_j dist_j) makes every group's part nonnegative, and
// the bound is Σ_m κ_m(s).
func (fm *robustForm) bound(z []float64) float64 {
	p, n, f, eps := fm.p, fm.n, fm.f, fm.eps
	inv := 1 / float64(n)
	a, b := make([]float64, n), make([]float64, n)
	clip := func(v, hi float64) float64 { return math.Min(math.Max(v, 0), hi) }
	for m := 0; m < n; m++ {
		r := fm.rLoss + fm.lossRows*m
		y := p.Y[m]
		switch p.Loss {
		case solvers.HingeLoss:
			lam := clip(z[r+1], inv)
			a[m], b[m] = -y*lam, lam
		case solvers.SquaredLoss:
			mp, mn := clip(z[r], math.Inf(1)), clip(z[r+1], math.Inf(1))
			a[m], b[m] = mp-mn, mp+mn
		default:
			lam := clip(z[r], inv)
			c := p.Loss.MarginScale(y)
			a[m], b[m] = c*lam, math.Abs(c)*lam
		}
	}
	// ρ per shared epigraph: any ρ ∈ [−1, 1] bounds ‖g_m‖₁ ≥ ρ_mᵀg_m, so
	// the images sharing a variable share its ρ.
	rhoOf := make([]float64, len(fm.erep))
	for j := range rhoOf {
		r := fm.rGrad + 2*j
		zp, zn := clip(z[r], math.Inf(1)), clip(z[r+1], math.Inf(1))
		if zp+zn > 0 {
			rhoOf[j] = (zp - zn) / (zp + zn)
		}
	}
	rho := make([][]float64, n)
	for m := 0; m < n; m++ {
		rho[m] = make([]float64, fm.npix)
		for q, j := range fm.eOf[m] {
			if j >= 0 {
				rho[m][q] = rhoOf[j]
			}
		}
	}
	var worst float64
	q, rad := make([]float64, f), make([]float64, f)
	for half, sigma := range []float64{1, -1} {
		for i := 0; i < fm.np; i++ {
			for l := range q {
				q[l], rad[l] = 0, 0
			}
			for m := 0; m < n; m++ {
				if fm.free && fm.low[m] != half {
					continue
				}
				for _, tm := range fm.terms[i][m] {
					floats.AddScaled(q, sigma*tm.w*a[m], p.Patches[tm.k].RawRowView(m))
					for l, px := range fm.pix[tm.k] {
						if px >= 0 {
							q[l] += sigma * tm.w * b[m] * eps * rho[m][px]
						}
					}
				}
			}
			fm.addRobustMultipliers(z, half, i, q, rad)
			fm.addUpperMultipliers(z, half, i, b, q, rad)
			var d2 float64
			for l := range q {
				if e := math.Abs(q[l]) - rad[l]; e > 0 {
					d2 += e * e
				}
			}
			worst = math.Max(worst, math.Sqrt(d2))
		}
	}
	s := 1.0
	if worst > 0 {
		s = math.Min(1, p.Beta/(worst*(1+1e-12)))
	}

	var lower, mag float64
	switch p.Loss {
	case solvers.HingeLoss:
		for m := 0; m < n; m++ {
			lower += s * b[m]
			mag += s * b[m]
		}
	case solvers.SquaredLoss:
		for m := 0; m < n; m++ {
			v := -0.5*s*s*b[m]*b[m] - s*a[m]*p.Y[m]
			lower += v
			mag += math.Abs(v)
		}
	default:
		lower, mag = p.Loss.NegConjugate(a, nil, p.Y, s)
	}
	return lower - 1e-13*mag
}

// addUpperMultipliers adds to q and rad the terms of WinnerBound's upper
// epigraph rows of group (half, i) on the images where that half is
// adverse: multipliers μ_k ≥ 0 of x_kmᵀu + ε‖P_kᵀu‖₁ − s_mi ≤ 0, scaled
// to Σ_k μ_k ≤ b_m, the loss term's weight on s_mi, so that
// b_m s_mi ≥ Σ_k μ_k (x_kmᵀu + ε‖P_kᵀu‖₁) for every u.
func (fm *robustForm) addUpperMultipliers(z []float64, half, i int, b, q, rad []float64) {
	if !fm.free {
		return
	}
	mu := make([]float64, fm.nk)
	for m := 0; m < fm.n; m++ {
		if fm.low[m] == half {
			continue
		}
		r0 := fm.rUp + (m*fm.np+i)*(1+fm.nk) + 1
		var sum float64
		for k := range mu {
			mu[k] = math.Max(0, z[r0+k])
			sum += mu[k]
		}
		if sum == 0 {
			continue
		}
		scale := 1.0
		if sum > b[m] {
			scale = b[m] / sum
		}
		for k, xk := range fm.p.Patches {
			if mu[k] == 0 {
				continue
			}
			floats.AddScaled(q, scale*mu[k], xk.RawRowView(m))
			floats.AddScaled(rad, fm.eps*scale*mu[k], fm.masks[k])
		}
	}
}

// addRobustMultipliers adds to q (the linear coefficients of group (half,
// i)) and rad (its ℓ₁ radii) the terms of the robust sign and winner rows'
// multipliers in z, clipped to be nonnegative.
func (fm *robustForm) addRobustMultipliers(z []float64, half, i int, q, rad []float64) {
	p, eps := fm.p, fm.eps
	nsign, nwin := 0, 0
	before := func(rows [][]signRow) int {
		c := 0
		for _, r := range rows[:i] {
			c += len(r)
		}
		return c
	}
	for _, r := range fm.signs {
		nsign += len(r)
	}
	for _, r := range fm.wins {
		nwin += len(r)
	}
	r0 := half*nsign + before(fm.signs)
	for j, sr := range fm.signs[i] {
		al := math.Max(0, z[r0+j])
		if al == 0 {
			continue
		}
		floats.AddScaled(q, -al*sr.s, p.Patches[sr.k].RawRowView(sr.m))
		floats.AddScaled(rad, eps*al, fm.masks[sr.k])
	}
	w0 := fm.rWin + half*nwin
	for _, r := range fm.wins[:i] {
		w0 += len(r)
	}
	for j, wr := range fm.wins[i] {
		ga := math.Max(0, z[w0+j])
		if ga == 0 {
			continue
		}
		floats.AddScaled(q, -ga, p.Patches[wr.a].RawRowView(wr.m))
		floats.AddScaled(q, ga, p.Patches[wr.k].RawRowView(wr.m))
		ov := fm.pairs[wr.pair]
		for _, l := range ov.excl {
			rad[l] += eps * ga
		}
		for t := range ov.la {
			rr := fm.rOver + 2*(half*fm.no+ov.off+t)
			zp, zn := math.Max(0, z[rr]), math.Max(0, z[rr+1])
			var tau float64
			if zp+zn > 0 {
				tau = (zp - zn) / (zp + zn)
			}
			q[ov.la[t]] += eps * ga * tau
			q[ov.lk[t]] -= eps * ga * tau
		}
	}
}

// RobustObjective returns the robust objective of SolveRobust at (w, w′)
// and its per-image worst-case loss terms (hinge, BCE, logistic: before
// the 1/n).
func (p *Problem) RobustObjective(eps float64, w, wp []float64) (float64, []float64, error) {
	if err := p.checkMaxRobust(); err != nil {
		return 0, nil, err
	}
	if err := p.checkPoint(eps, w, wp); err != nil {
		return 0, nil, err
	}
	obj, terms := p.layout(eps).objective(w, wp)
	return obj, terms, nil
}

// objective is RobustObjective on the layout's terms.
func (fm *robustForm) objective(w, wp []float64) (float64, []float64) {
	p, eps := fm.p, fm.eps
	n, f := fm.n, fm.f
	terms := make([]float64, n)
	var total float64
	gm := make([]float64, fm.npix)
	for m := 0; m < n; m++ {
		var fv float64
		for q := range gm {
			gm[q] = 0
		}
		sv, sw := fm.halfSigns(m)
		for i := range fm.terms {
			for _, tm := range fm.terms[i][m] {
				x := p.Patches[tm.k].RawRowView(m)
				for l, q := range fm.pix[tm.k] {
					d := sv*w[i*f+l] + sw*wp[i*f+l]
					fv += tm.w * x[l] * d
					if q >= 0 {
						gm[q] += tm.w * d
					}
				}
			}
		}
		g1 := eps*floats.Norm(gm, 1) + fm.upper(m, w, wp)
		switch p.Loss {
		case solvers.HingeLoss:
			terms[m] = math.Max(0, 1-p.Y[m]*fv+g1)
		case solvers.SquaredLoss:
			e := math.Abs(fv-p.Y[m]) + g1
			terms[m] = e * e / 2
		default:
			c := p.Loss.MarginScale(p.Y[m])
			terms[m] = solvers.Softplus(c*fv + math.Abs(c)*g1)
		}
		total += terms[m]
	}
	var reg float64
	for i := range p.Signs {
		reg += floats.Norm(w[i*f:(i+1)*f], 2) + floats.Norm(wp[i*f:(i+1)*f], 2)
	}
	if p.Loss != solvers.SquaredLoss {
		total /= float64(n)
	}
	return total + p.Beta*reg, terms
}

// RobustViolation returns the largest violation of the robust sign (and,
// for max pooling, winner) constraints at (w, w′), 0 when every one holds.
func (p *Problem) RobustViolation(eps float64, w, wp []float64) (float64, error) {
	if err := p.checkPoint(eps, w, wp); err != nil {
		return 0, err
	}
	fm := p.layout(eps)
	f := fm.f
	var worst float64
	for _, x := range [][]float64{w, wp} {
		for i := 0; i < fm.np; i++ {
			worst = math.Max(worst, fm.groupViolation(i, x[i*f:(i+1)*f]))
		}
	}
	return worst, nil
}

// checkMaxRobust reports a MaxRobust form the problem's pooling and loss
// do not take.
func (p *Problem) checkMaxRobust() error {
	switch {
	case p.MaxRobust != WinnerRows && p.MaxRobust != WinnerBound:
		return fmt.Errorf("cnn: unknown max-pooling robust program %v", p.MaxRobust)
	case p.MaxRobust == WinnerBound && p.Pool != MaxPool:
		return errors.New("cnn: the winner bound is max pooling's robust program (average pooling has no winner: its sign rows keep the network linear on the ball)")
	case p.MaxRobust == WinnerBound && p.Loss == solvers.SquaredLoss:
		return errors.New("cnn: the winner bound takes the losses monotone in the margin (hinge, BCE, logistic), not the squared loss")
	}
	return nil
}

// checkPoint reports a point (w, w′) that is not one of the program's
// (each has a filter per pattern), or a radius that is not finite and ≥ 0.
func (p *Problem) checkPoint(eps float64, w, wp []float64) error {
	if !(eps >= 0) || math.IsInf(eps, 0) {
		return fmt.Errorf("cnn: ε = %v, need 0 ≤ ε < ∞", eps)
	}
	if f, np := p.Filter(), len(p.Signs); len(w) != f*np || len(wp) != f*np {
		return fmt.Errorf("cnn: point has %d and %d entries, the program %d (%d patterns of %d-entry filters)", len(w), len(wp), f*np, np, f)
	}
	return nil
}

// PGD attacks the image x with label y: projected gradient ascent on the
// loss (hinge max(0, 1 − y f(x + δ)), squared ½(f(x + δ) − y)², BCE and
// logistic log(1 + e^{c f(x + δ)}) with c from Loss.MarginScale) over
// ‖δ‖_∞ ≤ eps (steps of eps/4, from δ = 0 and from the corner the
// gradient points to), and returns the largest loss found (Attack).
func (net *Network) PGD(x []float64, y, eps float64, steps int, loss solvers.Loss) (float64, error) {
	_, worst, err := net.Attack(x, y, eps, steps, loss)
	return worst, err
}

// Attack is PGD's search (see PGD); it returns the perturbed image with
// the largest loss found, and that loss.
func (net *Network) Attack(x []float64, y, eps float64, steps int, loss solvers.Loss) ([]float64, float64, error) {
	if loss < solvers.SquaredLoss || loss > solvers.LogisticLoss {
		return nil, 0, fmt.Errorf("cnn: PGD attacks the squared, hinge, BCE and logistic losses, not %v", loss)
	}
	if !loss.ValidLabel(y) {
		return nil, 0, fmt.Errorf("cnn: label %v: the %v loss needs labels %s", y, loss, loss.Labels())
	}
	if !(eps >= 0) || math.IsInf(eps, 0) || steps < 0 {
		return nil, 0, fmt.Errorf("cnn: PGD(ε = %v, %d steps): need a finite ε ≥ 0 and steps ≥ 0", eps, steps)
	}
	d := len(x)
	if d != net.Shape.C*net.Shape.H*net.Shape.W {
		return nil, 0, fmt.Errorf("cnn: image has %d entries, the network's shape %d", d, net.Shape.C*net.Shape.H*net.Shape.W)
	}
	eval := func(z []float64) (float64, []float64, error) {
		out, err := net.Predict(mat.NewDense(1, d, z))
		if err != nil {
			return 0, nil, err
		}
		return out[0], net.inputGradient(z), nil
	}
	// lossAt returns the loss at output fz and the factor s of the
	// gradient ascent direction s·∇f.
	lossAt := func(fz float64) (float64, float64) {
		switch loss {
		case solvers.HingeLoss:
			return math.Max(0, 1-y*fz), -y
		case solvers.SquaredLoss:
			return (fz - y) * (fz - y) / 2, math.Copysign(1, fz-y)
		}
		c := loss.MarginScale(y)
		return solvers.Softplus(c * fz), c
	}
	best, arg := math.Inf(-1), append([]float64(nil), x...)
	for _, start := range []bool{false, true} {
		z := append([]float64(nil), x...)
		if start {
			fz, g, err := eval(z)
			if err != nil {
				return nil, 0, err
			}
			_, s := lossAt(fz)
			for i := range z {
				z[i] = x[i] + eps*math.Copysign(1, s*g[i])
			}
		}
		for it := 0; it <= steps; it++ {
			fz, g, err := eval(z)
			if err != nil {
				return nil, 0, err
			}
			l, s := lossAt(fz)
			if l > best {
				best = l
				copy(arg, z)
			}
			for i := range z {
				z[i] += eps / 4 * math.Copysign(1, s*g[i])
				z[i] = math.Min(x[i]+eps, math.Max(x[i]-eps, z[i]))
			}
		}
	}
	return arg, best, nil
}

// inputGradient returns ∂f/∂x at the image z (a subgradient at kinks).
func (net *Network) inputGradient(z []float64) []float64 {
	p := &Problem{Shape: net.Shape, Conv: net.Conv}
	pt, _ := Patches(mat.NewDense(1, len(z), z), net.Shape, net.Conv)
	p.Patches = pt
	pix := p.pixelOf()
	grad := make([]float64, len(z))
	f, m := net.U.Dims()
	col := make([]float64, f)
	for j := 0; j < m; j++ {
		mat.Col(col, j, net.U)
		best, arg := math.Inf(-1), -1
		for k, xk := range pt {
			r := floats.Dot(xk.RawRowView(0), col)
			if net.Pool == AvgPool {
				if r > 0 {
					for l, q := range pix[k] {
						if q >= 0 {
							grad[q] += net.Alpha[j] * col[l] / float64(len(pt))
						}
					}
				}
			} else if r > best {
				best, arg = r, k
			}
		}
		if net.Pool == MaxPool && best > 0 {
			for l, q := range pix[arg] {
				if q >= 0 {
					grad[q] += net.Alpha[j] * col[l]
				}
			}
		}
	}
	return grad
}
