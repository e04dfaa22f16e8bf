package solvers

import (
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"gonum.org/v1/gonum/mat"
)

// ExactPatterns returns every distinct pattern diag(1[X u ≥ 0]) of the
// full-dimensional cells of the central hyperplane arrangement
// {u ∈ R^d : x_kᵀu = 0}, k = 1 … n: all D_1 … D_P of eq. (convex_general).
// Patterns of lower-dimensional faces are left out; among them is u = 0,
// whose D = I is harmless and implied (it is a cell's pattern whenever some u
// has X u > 0, as with a bias column). A zero row x_k = 0 has entry 1 in every
// pattern. The order is deterministic.
//
// Method. Patterns depend on u only through X u, so the arrangement is taken
// in the r-dimensional row space of X (r = rank X, numerically, from an SVD);
// null-space directions change no pattern. Repeated rows, and rows that are
// positive or negative multiples of one another, give one hyperplane. For
// r = 1 the cells are the two half-lines; for r = 2 they lie between
// consecutive angles at which some x_kᵀu changes sign. For r ≥ 3 every cell is
// a pointed cone and has an extreme ray ℓ on which r−1 independent
// hyperplanes S meet. For each such (r−1)-subset S, ℓ = ±null(X_S); near ℓ
// only the hyperplanes T ⊇ S that contain ℓ are crossed, so the cells at ℓ
// have the sign of x_kᵀℓ for k ∉ T and, on T, the signs of a cell of the
// arrangement of T in the (r−1)-dimensional space ℓ^⊥: in general position
// T = S and these are all 2^(r−1) sign vectors σ (u = ℓ + δw with X_S w = σ);
// otherwise (three collinear points with a bias column, say) they are found by
// the same method one dimension down. The enumeration is exact in general
// position and for exactly degenerate data (repeated or collinear points);
// near-degeneracies within about 1e-9 (relative, on unit normals) are resolved
// at that tolerance.
//
// The work is about C(n, r−1)·2^r candidate sign vectors for r ≥ 3 (2n for
// r ≤ 2), n counting distinct nonzero rows. ExactPatterns refuses, naming n,
// r, the paper's bound min(2^n, 2r(e(n−1)/r)^r) on P and the limit, when the
// candidates exceed limit (0 means DefaultExactLimit) or when the patterns
// could hold more than 128·limit booleans in all (n·P, 256 MB at the
// default); use SamplePatterns then.
func ExactPatterns(x *mat.Dense, limit int) (Patterns, error) {
	if err := patCheckMatrix("X", x); err != nil {
		return nil, err
	}
	if limit < 0 {
		return nil, fmt.Errorf("solvers: ExactPatterns limit %d < 0 (0 means the default %d)", limit, DefaultExactLimit)
	}
	if limit == 0 {
		limit = DefaultExactLimit
	}
	n, d := x.Dims()

	// Distinct nonzero rows: x_k is row uniq[rowOf[k]] of X, or zero when
	// rowOf[k] = −1. Rows are found by a hash and compared exactly.
	rowOf := make([]int, n)
	var uniq, chain []int // chain[j]: the previous distinct row with the same hash, or −1
	heads := make(map[uint64]int)
	for k := 0; k < n; k++ {
		row := x.RawRowView(k)
		if patZeroRow(row) {
			rowOf[k] = -1
			continue
		}
		hash := patRowHash(row)
		j, ok := heads[hash]
		for ok && j >= 0 && !slices.Equal(x.RawRowView(uniq[j]), row) {
			j = chain[j]
		}
		if !ok || j < 0 {
			j = len(uniq)
			prev := -1
			if ok {
				prev = heads[hash]
			}
			uniq, chain = append(uniq, k), append(chain, prev)
			heads[hash] = j
		}
		rowOf[k] = j
	}
	m := len(uniq)
	if m == 0 {
		return Patterns{patAllOnes(n)}, nil
	}

	fits := func(r int) bool {
		cand, cells := patExactWork(m, r)
		return cand <= float64(limit) && cells*float64(n) <= patEntriesPerCandidate*float64(limit)
	}
	refuse := func(r int, atLeast bool) error {
		cand, cells := patExactWork(m, r)
		rank := fmt.Sprintf("r = %d", r)
		if atLeast {
			rank = fmt.Sprintf("r ≥ %d", r)
		}
		why := fmt.Sprintf("about %.3g candidate sign vectors to examine, above the limit %d", cand, limit)
		if cand <= float64(limit) {
			why = fmt.Sprintf("room for up to %.3g patterns of %d entries, above the cap of 128·limit = %d entries",
				cells, n, patEntriesPerCandidate*limit)
		}
		return fmt.Errorf("solvers: ExactPatterns refused: n = %d distinct nonzero rows of rank %s, "+
			"the bound min(2^n, 2r(e(n−1)/r)^r) on the number of patterns is %.3g and enumeration needs %s; "+
			"use SamplePatterns", m, rank, PatternBound(m, r), why)
	}

	// A basis of the column space of X: patterns depend only on X u.
	var basis patBasis
	var err error
	if float64(n)*float64(d)*float64(min(n, d)) <= patCheapSVD {
		basis, err = patColBasis(x)
		if err != nil {
			return nil, err
		}
	} else {
		// rank(X G) = min(rank X, k) for a Gaussian d×k sketch G: enough
		// to find out whether the rank is below the first k that does not
		// fit, and then X G spans the column space of X.
		rmax := min(m, d)
		k := rmax
		for r := 1; r <= rmax; r++ {
			if !fits(r) {
				k = r
				break
			}
		}
		g := mat.NewDense(d, k, nil)
		rng := rand.New(rand.NewPCG(uint64(m), patSketchStream))
		gr := g.RawMatrix().Data
		for i := range gr {
			gr[i] = rng.NormFloat64()
		}
		xg := mat.NewDense(n, k, nil)
		xg.Mul(x, g)
		basis, err = patColBasis(xg)
		if err != nil {
			return nil, err
		}
		if basis.r == k && !fits(k) {
			return nil, refuse(k, k < rmax)
		}
	}
	r := basis.r
	if r == 0 {
		return Patterns{patAllOnes(n)}, nil
	}
	if !fits(r) {
		return nil, refuse(r, false)
	}

	// Unit normals h_i of the distinct nonzero rows, in R^r; for r ≥ 3 rows
	// that are ± multiples of one another are merged into one hyperplane.
	// hyp[j], flip[j]: distinct row j has the normal ±h_hyp[j] (− when
	// flip), or hyp[j] = −1 when the row vanishes in the row space.
	h := make([]float64, 0, m*r)
	hyp := make([]int, m)
	flip := make([]bool, m)
	nh := 0
	for j := 0; j < m; j++ {
		y := basis.y[uniq[j]*r : (uniq[j]+1)*r]
		nrm := patNorm(y)
		if nrm <= basis.zeroTol {
			hyp[j] = -1
			continue
		}
		hyp[j] = -1
		if r >= 3 {
			for i := 0; i < nh; i++ {
				hi := h[i*r : (i+1)*r]
				var dp, dm float64
				for c, v := range y {
					v /= nrm
					dp += (v - hi[c]) * (v - hi[c])
					dm += (v + hi[c]) * (v + hi[c])
				}
				if dp <= patTolSame*patTolSame {
					hyp[j] = i
					break
				}
				if dm <= patTolSame*patTolSame {
					hyp[j], flip[j] = i, true
					break
				}
			}
		}
		if hyp[j] < 0 {
			hyp[j] = nh
			nh++
			for _, v := range y {
				h = append(h, v/nrm)
			}
		}
	}
	if nh == 0 {
		return Patterns{patAllOnes(n)}, nil
	}
	cells := patArr{h: h, m: nh, dim: r}.cells()
	if cells.count == 0 {
		return nil, errors.New("solvers: ExactPatterns found no cell: X is numerically degenerate beyond the enumeration's tolerance")
	}

	// Row k of X has entry bit(hk) XOR fk, or 1 when hk < 0 (a zero row).
	hk := make([]int, n)
	fk := make([]bool, n)
	for k, j := range rowOf {
		hk[k] = -1
		if j >= 0 && hyp[j] >= 0 {
			hk[k], fk[k] = hyp[j], flip[j]
		}
	}
	out := make(Patterns, cells.count)
	entries := make([]bool, cells.count*n)
	for c := range out {
		bits := cells.cell(c)
		p := entries[c*n : (c+1)*n : (c+1)*n]
		for k, j := range hk {
			p[k] = j < 0 || (bits[j>>6]>>(j&63)&1 == 1) != fk[k]
		}
		out[c] = p
	}
	return out, nil
}

// patExactWork returns the number of candidate sign vectors ExactPatterns
// examines for m distinct hyperplanes of rank r, and the maximum number of
// cells, min(2^m, 2 Σ_{k<r} C(m−1, k)).
func patExactWork(m, r int) (cand, cells float64) {
	switch {
	case r <= 0:
		return 1, 1
	case r == 1:
		return 2, 2
	case r == 2:
		return 2 * float64(m), 2 * float64(m)
	}
	cand = patBinom(m, r-1) * math.Ldexp(1, r)
	for k := 0; k < r; k++ {
		cells += patBinom(m-1, k)
	}
	return cand, math.Min(2*cells, math.Ldexp(1, m))
}

// patBinom returns C(n, k) as a float64 (+Inf when too large).
func patBinom(n, k int) float64 {
	if k < 0 || k > n {
		return 0
	}
	a, _ := math.Lgamma(float64(n + 1))
	b, _ := math.Lgamma(float64(k + 1))
	c, _ := math.Lgamma(float64(n - k + 1))
	return math.Round(math.Exp(a - b - c))
}

// patBasis is an m×r row-major matrix Y whose columns span the column space
// of a matrix X (r its numerical rank): Y = X V_r, or X itself when r equals
// its number of columns. Rows of Y with norm at most zeroTol are numerically
// zero.
type patBasis struct {
	y       []float64
	r       int
	zeroTol float64
}

// patColBasis returns the column-space basis of x from its SVD, with the
// numerical rank r = #{σ_i > max(m, d)·σ_1·ε}.
func patColBasis(x *mat.Dense) (patBasis, error) {
	m, d := x.Dims()
	var svd mat.SVD
	if !svd.Factorize(x, mat.SVDThinV) {
		return patBasis{}, errors.New("solvers: SVD of X did not converge")
	}
	s := svd.Values(nil)
	tol := s[0] * float64(max(m, d)) * 0x1p-52
	r := 0
	for _, v := range s {
		if v > tol {
			r++
		}
	}
	if r == d {
		y := make([]float64, m*d)
		for i := 0; i < m; i++ {
			copy(y[i*d:(i+1)*d], x.RawRowView(i))
		}
		return patBasis{y: y, r: d}, nil
	}
	if r == 0 {
		return patBasis{}, nil
	}
	var v mat.Dense
	svd.VTo(&v)
	y := mat.NewDense(m, r, nil)
	y.Mul(x, v.Slice(0, d, 0, r))
	return patBasis{y: y.RawMatrix().Data, r: r, zeroTol: tol}, nil
}

// patArr is the central arrangement of the hyperplanes {z ∈ R^dim : h_kᵀz = 0},
// k = 0 … m−1, with unit normals h_k, the rows of the row-major m×dim slice h.
// The hyperplanes are distinct, and for dim ≥ 3 they are expected to have
// rank dim (the arrangement is essential).
type patArr struct {
	h      []float64
	m, dim int
}

func (a patArr) row(k int) []float64 { return a.h[k*a.dim : (k+1)*a.dim] }

// cells returns the sign vectors of the full-dimensional cells of a: bit k of
// a cell is set when h_kᵀz > 0 on it.
func (a patArr) cells() *patCellSet {
	switch {
	case a.dim == 1:
		return a.cells1()
	case a.dim == 2:
		return a.cells2()
	case a.m < a.dim:
		return a.reduced()
	case a.m == a.dim:
		// Independent normals: every sign vector σ is a cell (H z = σ).
		q := make([]float64, a.dim*a.dim)
		for k := 0; k < a.m; k++ {
			qk := q[k*a.dim : (k+1)*a.dim]
			copy(qk, a.row(k))
			if patOrth(qk, q[:k*a.dim], a.dim) < patTolRank {
				return a.reduced()
			}
		}
		set := newPatCellSet(a.m)
		bits := make([]uint64, set.w)
		for s := uint64(0); s < 1<<a.m; s++ {
			bits[0] = s
			set.add(bits)
		}
		return set
	}
	return a.cellsRays()
}

// cells1 returns the two half-lines z > 0 and z < 0.
func (a patArr) cells1() *patCellSet {
	set := newPatCellSet(a.m)
	pos := make([]uint64, set.w)
	neg := make([]uint64, set.w)
	for k := 0; k < a.m; k++ {
		switch v := a.h[k]; {
		case v > 0:
			patSet(pos, k)
		case v < 0:
			patSet(neg, k)
		}
	}
	set.add(pos)
	set.add(neg)
	return set
}

// cells2 returns the planar cells: h_kᵀz changes sign at the angles
// φ_k ± π/2 (φ_k the angle of h_k); the cells are the arcs between
// consecutive distinct critical angles (closer than patTolSame counts as
// equal). The signs are computed at the midpoint of the first arc, at least
// half the gap away from every line, and then toggled across each critical
// angle in turn.
func (a patArr) cells2() *patCellSet {
	set := newPatCellSet(a.m)
	bits := make([]uint64, set.w)
	type crit struct {
		t float64
		k int
	}
	cs := make([]crit, 0, 2*a.m)
	for k := 0; k < a.m; k++ {
		hk := a.row(k)
		phi := math.Atan2(hk[1], hk[0])
		for _, t := range [2]float64{phi + math.Pi/2, phi - math.Pi/2} {
			t = math.Mod(t, 2*math.Pi)
			if t < 0 {
				t += 2 * math.Pi
			}
			cs = append(cs, crit{t, k})
		}
	}
	if len(cs) == 0 {
		set.add(bits)
		return set
	}
	slices.SortFunc(cs, func(x, y crit) int { return cmp.Compare(x.t, y.t) })
	// Groups of equal angles: start[g] is the first of group g; a last group
	// within patTolSame of 2π joins the first.
	var start []int
	for i := range cs {
		if i == 0 || cs[i].t-cs[i-1].t > patTolSame {
			start = append(start, i)
		}
	}
	ng := len(start)
	end := len(cs)
	if ng > 1 && cs[0].t+2*math.Pi-cs[start[ng-1]].t <= patTolSame {
		ng--
		end = start[ng]
		for i := end; i < len(cs); i++ {
			cs[i].t -= 2 * math.Pi
		}
		cs = slices.Concat(cs[end:], cs[:end])
		for g := range start[:ng] {
			start[g] += len(cs) - end
		}
		start[0] = 0
		end = len(cs)
	}
	groupEnd := func(g int) int {
		if g+1 < ng {
			return start[g+1]
		}
		return end
	}
	// First arc: from group 0 to group 1 (or around the circle).
	next := cs[0].t + 2*math.Pi
	if ng > 1 {
		next = cs[start[1]].t
	}
	mid := (cs[groupEnd(0)-1].t + next) / 2
	c, sn := math.Cos(mid), math.Sin(mid)
	for k := 0; k < a.m; k++ {
		hk := a.row(k)
		if hk[0]*c+hk[1]*sn > 0 {
			patSet(bits, k)
		}
	}
	set.add(bits)
	for g := 1; g < ng; g++ {
		for _, x := range cs[start[g]:groupEnd(g)] {
			bits[x.k>>6] ^= 1 << (x.k & 63)
		}
		set.add(bits)
	}
	return set
}

// reduced handles a numerically rank-deficient arrangement: it projects the
// normals onto their numerical row space and enumerates there.
func (a patArr) reduced() *patCellSet {
	hm := mat.NewDense(a.m, a.dim, a.h)
	var svd mat.SVD
	if !svd.Factorize(hm, mat.SVDThinV) {
		return newPatCellSet(a.m)
	}
	s := svd.Values(nil)
	r := 0
	for _, v := range s {
		if v > patTolReduce*s[0] {
			r++
		}
	}
	if r >= a.dim || r == 0 {
		return newPatCellSet(a.m)
	}
	var v mat.Dense
	svd.VTo(&v)
	y := mat.NewDense(a.m, r, nil)
	y.Mul(hm, v.Slice(0, a.dim, 0, r))
	h := y.RawMatrix().Data
	for k := 0; k < a.m; k++ {
		hk := h[k*r : (k+1)*r]
		nrm := patNorm(hk)
		for i := range hk {
			hk[i] /= nrm
		}
	}
	return patArr{h: h, m: a.m, dim: r}.cells()
}

// cellsRays enumerates, for dim ≥ 3, the cells at every line of the
// arrangement (see ExactPatterns), by a depth-first search over the
// (dim−1)-subsets S of independent normals that keeps an orthonormal basis
// q_0 … q_{dim−2} of span{h_i : i ∈ S} = ℓ^⊥ by Gram–Schmidt.
func (a patArr) cellsRays() *patCellSet {
	e := &patRays{
		a:     a,
		q:     make([]float64, (a.dim-1)*a.dim),
		res:   make([]float64, a.dim-1),
		idx:   make([]int, a.dim-1),
		ell:   make([]float64, a.dim),
		dots:  make([]float64, a.m),
		lines: make(map[string]struct{}),
		out:   newPatCellSet(a.m),
	}
	w := e.out.w
	e.tmask = make([]uint64, w)
	e.dir = [2][]uint64{make([]uint64, w), make([]uint64, w)}
	e.tmp = make([]uint64, w)
	e.key = make([]byte, 8*w)
	e.dfs(0, 0)
	if e.out.count == 0 {
		return a.reduced()
	}
	return e.out
}

type patRays struct {
	a     patArr
	q     []float64 // rows q_0 … q_{dim−2}
	res   []float64 // Gram–Schmidt residual of each chosen normal
	idx   []int     // the subset S
	ell   []float64 // the line ℓ
	dots  []float64 // h_kᵀℓ
	lines map[string]struct{}
	out   *patCellSet

	tmask []uint64    // T as a bit set
	tlist []int       // T in increasing order
	dir   [2][]uint64 // signs off T at +ℓ and at −ℓ
	tmp   []uint64
	key   []byte
}

func (e *patRays) dfs(t, start int) {
	dim := e.a.dim
	qt := e.q[t*dim : (t+1)*dim]
	for i := start; i <= e.a.m-(dim-1-t); i++ {
		copy(qt, e.a.row(i))
		nr := patOrth(qt, e.q[:t*dim], dim)
		if nr < patTolRank {
			continue
		}
		e.res[t], e.idx[t] = nr, i
		if t == dim-2 {
			e.line()
		} else {
			e.dfs(t+1, i+1)
		}
	}
}

// line handles the line ℓ = null(H_S) of the current subset S.
func (e *patRays) line() {
	a := e.a
	dim := a.dim
	q := e.q
	// ℓ ⊥ q_0 … q_{dim−2}: project out of the unit vector e_j with the
	// largest residual 1 − Σ_i q_i[j]² (at least 1/dim).
	best, bestRes := 0, -1.0
	for j := 0; j < dim; j++ {
		s := 1.0
		for i := 0; i < dim-1; i++ {
			s -= q[i*dim+j] * q[i*dim+j]
		}
		if s > bestRes {
			best, bestRes = j, s
		}
	}
	clear(e.ell)
	e.ell[best] = 1
	patOrth(e.ell, q, dim)

	// ℓ is accurate to about ε/min residual.
	tol := patTolLine
	for _, r := range e.res {
		tol = math.Max(tol, 1e3*0x1p-52/r)
	}
	e.tlist = e.tlist[:0]
	h, ell := a.h, e.ell
	si := 0
	for w := range e.tmask {
		var tw, pw, nw uint64
		for b, k := 0, 64*w; b < 64 && k < a.m; b, k = b+1, k+1 {
			hk := h[k*dim : (k+1)*dim : (k+1)*dim]
			var s float64
			for i, v := range ell[:len(hk)] {
				s += hk[i] * v
			}
			inS := si < len(e.idx) && e.idx[si] == k
			if inS {
				si++
			}
			switch {
			case inS || (s <= tol && s >= -tol):
				tw |= 1 << b
				e.tlist = append(e.tlist, k)
			case s > 0:
				pw |= 1 << b
			default:
				nw |= 1 << b
			}
		}
		e.tmask[w], e.dir[0][w], e.dir[1][w] = tw, pw, nw
	}
	nt := len(e.tlist)
	if nt == dim-1 {
		// General position: the cells at ±ℓ are all sign vectors σ on S.
		for _, base := range e.dir {
			for s := 0; s < 1<<nt; s++ {
				copy(e.tmp, base)
				for i, k := range e.tlist {
					if s>>i&1 == 1 {
						patSet(e.tmp, k)
					}
				}
				e.out.add(e.tmp)
			}
		}
		return
	}
	// Several subsets of T give this line; handle it once.
	for i, v := range e.tmask {
		binary.LittleEndian.PutUint64(e.key[8*i:], v)
	}
	if _, ok := e.lines[string(e.key)]; ok {
		return
	}
	e.lines[string(e.key)] = struct{}{}
	// The arrangement of T in ℓ^⊥, in the coordinates c = (q_iᵀh_k)_i.
	ld := dim - 1
	local := make([]float64, nt*ld)
	for j, k := range e.tlist {
		hk := a.row(k)
		c := local[j*ld : (j+1)*ld]
		for i := range c {
			var s float64
			for l, v := range hk {
				s += q[i*dim+l] * v
			}
			c[i] = s
		}
		nrm := patNorm(c)
		for i := range c {
			c[i] /= nrm
		}
	}
	tlist := slices.Clone(e.tlist)
	lc := patArr{h: local, m: nt, dim: ld}.cells()
	for _, base := range e.dir {
		for c := 0; c < lc.count; c++ {
			cb := lc.cell(c)
			copy(e.tmp, base)
			for i, k := range tlist {
				if patGet(cb, i) {
					patSet(e.tmp, k)
				}
			}
			e.out.add(e.tmp)
		}
	}
}

// patOrth orthogonalizes v (length dim) against the orthonormal rows of
// basis (twice, for accuracy), normalizes it and returns its norm before
// normalization (0 leaves v unscaled).
func patOrth(v, basis []float64, dim int) float64 {
	for pass := 0; pass < 2; pass++ {
		for b := 0; b+dim <= len(basis); b += dim {
			qb := basis[b : b+dim]
			var c float64
			for i, x := range qb {
				c += x * v[i]
			}
			for i, x := range qb {
				v[i] -= c * x
			}
		}
	}
	nrm := patNorm(v)
	if nrm > 0 {
		for i := range v {
			v[i] /= nrm
		}
	}
	return nrm
}
