package solvers

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"gonum.org/v1/gonum/floats"
	"gonum.org/v1/gonum/mat"
)

// ReLU activation patterns D = diag(1[X u ≥ 0]) of a data matrix X (n×d, rows
// x_k): sampled (Algorithm "practical convex training"), read off given hidden
// weights, or enumerated exactly (all D_1 … D_P of eq. convex_general).

// DefaultExactLimit is the work limit ExactPatterns uses when given 0: the
// number of candidate sign vectors it may examine.
const DefaultExactLimit = 2_000_000

const (
	// patSampleStream is the second PCG word of SamplePatterns' generator.
	patSampleStream = 0x5bd1e9955bd1e995
	// patSketchStream seeds the random sketch ExactPatterns uses to bound
	// the rank of a large X.
	patSketchStream = 0x2545f4914f6cdd1d

	// patEntriesPerCandidate·limit caps n·P, the booleans of the patterns
	// ExactPatterns may have to return (256 MB at the default limit).
	patEntriesPerCandidate = 128
	// patCheapSVD is the n·d·min(n, d) below which ExactPatterns takes the
	// SVD of X itself rather than of a random sketch.
	patCheapSVD = 5e7

	// Tolerances on unit normals (relative quantities).
	patTolRank   = 1e-10 // Gram–Schmidt residual below which a row is dependent
	patTolLine   = 1e-9  // |h_kᵀℓ| at or below which hyperplane k contains the line ℓ
	patTolSame   = 1e-9  // distance at which two normals are the same hyperplane
	patTolReduce = 1e-8  // relative singular value treated as zero on reduction
)

// FewPatternsError reports that SamplePatterns found fewer distinct patterns
// than asked. X may have fewer than Asked patterns altogether (see
// ExactPatterns and PatternBound), or the remaining ones occupy cells too
// small to be hit in Draws draws.
type FewPatternsError struct {
	Asked, Found, Draws int
}

func (e *FewPatternsError) Error() string {
	return fmt.Sprintf("solvers: found %d distinct activation patterns of the %d asked after %d draws",
		e.Found, e.Asked, e.Draws)
}

// SamplePatterns draws a_h ~ N(0, I_d), h = 1, 2, …, from a PCG generator
// seeded with seed, and keeps the distinct patterns D_h = diag(1[X a_h ≥ 0])
// in the order first seen, until p distinct ones are found or maxDraws draws
// are spent: step 1 of the paper's Algorithm "practical convex training".
// maxDraws 0 means max(100p, 10000), with p at most min(2ⁿ, 2·Σ_{k≤d} C(n, k)), the
// most patterns n points in d dimensions can have (asking for more stops
// after that many draws with a *FewPatternsError).
//
// The draws are a fixed sequence for a seed, so the result for p is a prefix
// of the result for any larger p (given enough draws). Each draw lies, with
// probability one, inside a full-dimensional cell of the arrangement
// {u : x_kᵀu = 0}, so the patterns are a subset of ExactPatterns(x).
// A zero row x_k = 0 has pattern entry 1 in every pattern.
//
// When fewer than p distinct patterns are found, SamplePatterns returns those
// found together with a *FewPatternsError, so that a caller can proceed
// knowingly.
func SamplePatterns(x *mat.Dense, p int, seed uint64, maxDraws int) (Patterns, error) {
	d, _, err := samplePatterns(x, p, seed, maxDraws, false)
	return d, err
}

// SampleGates is SamplePatterns that also returns the vectors a_h that drew
// the kept patterns, as the columns of G (d×len(patterns)): a gated network
// needs them to gate new inputs, D(x) = 1[xᵀa_h ≥ 0].
func SampleGates(x *mat.Dense, p int, seed uint64, maxDraws int) (Patterns, *mat.Dense, error) {
	d, vecs, err := samplePatterns(x, p, seed, maxDraws, false)
	if len(vecs) == 0 {
		return d, nil, err
	}
	g := mat.NewDense(len(vecs[0]), len(vecs), nil)
	for j, v := range vecs {
		g.SetCol(j, v)
	}
	return d, g, err
}

// SampleAnchoredPatterns is SamplePatterns for hyperplanes through the data:
// it draws a_h ~ N(0, I_d) and an anchor k_h uniform in 1 … n, and keeps the
// distinct patterns D_h = diag(1[(x_i − x_{k_h})ᵀa_h ≥ 0]), the patterns of
// the affine maps x ↦ a_hᵀx + c_h whose hyperplane passes through a training
// point (the anchor's own entry is 1). These are patterns of X with a bias
// column, drawn with a different law: where the columns of X have very
// different scales (or X is whitened, as in batch normalization's U′), a
// Gaussian direction in the input space splits the data along its
// directions of large variance, and the anchor puts each cut inside the
// data rather than beside it. Seed, maxDraws, the prefix property and
// *FewPatternsError are as for SamplePatterns.
func SampleAnchoredPatterns(x *mat.Dense, p int, seed uint64, maxDraws int) (Patterns, error) {
	d, _, err := samplePatterns(x, p, seed, maxDraws, true)
	return d, err
}

// patternBound bounds the number of distinct patterns 1[Xa ≥ 0] (or of
// affine maps, anchored) that n points in d dimensions have: the regions
// of an arrangement of n hyperplanes in at most d + 1 dimensions number at
// most 2·Σ_{k≤d} C(n, k) (Cover 1965; Zaslavsky), and there are 2ⁿ sign
// vectors. A float, saturating far above any count that can be drawn.
func patternBound(n, d int) float64 {
	if n < 64 {
		bound := math.Ldexp(1, n)
		if sum := arrangementBound(n, d); sum < bound {
			return sum
		}
		return bound
	}
	return arrangementBound(n, d)
}

func arrangementBound(n, d int) float64 {
	sum, c := 0.0, 1.0 // c = C(n, k)
	for k := 0; k <= d && k <= n; k++ {
		sum += c
		if sum > 1e18 {
			return math.Inf(1)
		}
		c = c * float64(n-k) / float64(k+1)
	}
	return 2 * sum
}

// samplePatterns returns the patterns and the vectors a_h that drew them.
func samplePatterns(x *mat.Dense, p int, seed uint64, maxDraws int, anchored bool) (Patterns, [][]float64, error) {
	if err := patCheckMatrix("X", x); err != nil {
		return nil, nil, err
	}
	if p < 1 {
		return nil, nil, fmt.Errorf("solvers: asked for %d activation patterns, need p ≥ 1", p)
	}
	if maxDraws < 0 {
		return nil, nil, fmt.Errorf("solvers: maxDraws = %d, need maxDraws ≥ 0 (0 for the default)", maxDraws)
	}
	n, d := x.Dims()
	if maxDraws == 0 {
		// 100 draws per pattern, for no more patterns than the data have
		// (patternBound): asking for more ends with a *FewPatternsError
		// after as many draws as the data's own count needs.
		want := min(float64(p), patternBound(n, d))
		maxDraws = 10000
		if want > float64(maxDraws/100) {
			maxDraws = math.MaxInt
			if want < float64(math.MaxInt/100) {
				maxDraws = 100 * int(want)
			}
		}
	}
	// Draws in batches: row j of G is a_h, row j of Z = G Xᵀ is (X a_h)ᵀ.
	batch := max(1, min(1024, (1<<20)/n, maxDraws))

	g := mat.NewDense(batch, d, nil)
	z := mat.NewDense(batch, n, nil)
	rng := rand.New(rand.NewPCG(seed, patSampleStream))
	set := newPatCellSet(n)
	bits := make([]uint64, set.w)
	var out Patterns
	var vecs [][]float64
	draws := 0
	for draws < maxDraws && len(out) < p {
		b := min(batch, maxDraws-draws)
		if draws == 0 && !anchored {
			// At least p draws are needed, and on large data about p
			// suffice: the first batch need not be larger (without anchors
			// the draws, and so the patterns, do not depend on batches).
			b = min(b, p)
		}
		for j := 0; j < b; j++ {
			row := g.RawRowView(j)
			for i := range row {
				row[i] = rng.NormFloat64()
			}
		}
		gv := g.Slice(0, b, 0, d).(*mat.Dense)
		zv := z.Slice(0, b, 0, n).(*mat.Dense)
		zv.Mul(gv, x.T())
		if anchored {
			for j := 0; j < b; j++ {
				row := zv.RawRowView(j)
				floats.AddConst(-row[rng.IntN(n)], row)
			}
		}
		for j := 0; j < b && len(out) < p; j++ {
			draws++
			patSignBits(bits, zv.RawRowView(j))
			if set.add(bits) {
				out = append(out, patFromBits(bits, n))
				vecs = append(vecs, slices.Clone(gv.RawRowView(j)))
			}
		}
	}
	if len(out) < p {
		return out, vecs, &FewPatternsError{Asked: p, Found: len(out), Draws: draws}
	}
	return out, vecs, nil
}

// PatternsFromWeights returns the distinct patterns diag(1[X u_j ≥ 0]) of the
// hidden weights u_j, the columns of U (d×m), for example a back-propagation
// network's, in column order with repeats left out. A zero column u_j = 0
// gives the all-ones pattern D = I.
func PatternsFromWeights(x, u *mat.Dense) (Patterns, error) {
	if err := patCheckMatrix("X", x); err != nil {
		return nil, err
	}
	if err := patCheckMatrix("U", u); err != nil {
		return nil, err
	}
	n, d := x.Dims()
	du, m := u.Dims()
	if du != d {
		return nil, fmt.Errorf("solvers: X has %d columns but U has %d rows (want U d×m with d = %d)", d, du, d)
	}
	// Row j of Z = Uᵀ Xᵀ is (X u_j)ᵀ.
	z := mat.NewDense(m, n, nil)
	z.Mul(u.T(), x.T())
	set := newPatCellSet(n)
	bits := make([]uint64, set.w)
	var out Patterns
	for j := 0; j < m; j++ {
		patSignBits(bits, z.RawRowView(j))
		if set.add(bits) {
			out = append(out, patFromBits(bits, n))
		}
	}
	return out, nil
}

// PatternBound returns min(2^n, 2r(e(n−1)/r)^r), the paper's bound on the
// number P of activation patterns of n points whose data matrix has rank r.
// The true maximum, reached in general position, is 2 Σ_{k<r} C(n−1, k).
// r is clamped to n; r < 1 (X = 0) gives 1 and n < 1 gives 0. For n = 1
// the second term vanishes, and the bound is 2^n = 2, which is attained.
func PatternBound(n, r int) float64 {
	switch {
	case n < 1:
		return 0
	case r < 1:
		return 1
	case n == 1:
		return 2
	}
	r = min(r, n)
	rf := float64(r)
	b := 2 * rf * math.Pow(math.E*float64(n-1)/rf, rf)
	return math.Min(math.Ldexp(1, n), b)
}

// patCellSet is a set of bit vectors of a fixed length, packed into w words
// each, kept in the order first added.
type patCellSet struct {
	w     int
	count int
	data  []uint64
	seen  map[string]struct{}
	key   []byte
}

func newPatCellSet(bitsLen int) *patCellSet {
	w := (bitsLen + 63) / 64
	return &patCellSet{w: w, seen: make(map[string]struct{}), key: make([]byte, 8*w)}
}

// add inserts a copy of bits and reports whether it was new.
func (s *patCellSet) add(bits []uint64) bool {
	for i, v := range bits {
		binary.LittleEndian.PutUint64(s.key[8*i:], v)
	}
	if _, ok := s.seen[string(s.key)]; ok {
		return false
	}
	s.seen[string(s.key)] = struct{}{}
	s.data = append(s.data, bits...)
	s.count++
	return true
}

func (s *patCellSet) cell(c int) []uint64 { return s.data[c*s.w : (c+1)*s.w] }

func patSet(b []uint64, k int)      { b[k>>6] |= 1 << (k & 63) }
func patGet(b []uint64, k int) bool { return b[k>>6]>>(k&63)&1 == 1 }

// patSignBits sets bit k of bits to 1[z_k ≥ 0].
func patSignBits(bits []uint64, z []float64) {
	clear(bits)
	for k, v := range z {
		if v >= 0 {
			patSet(bits, k)
		}
	}
}

func patFromBits(bits []uint64, n int) Pattern {
	p := make(Pattern, n)
	for k := range p {
		p[k] = patGet(bits, k)
	}
	return p
}

func patAllOnes(n int) Pattern {
	p := make(Pattern, n)
	for k := range p {
		p[k] = true
	}
	return p
}

// patRowHash hashes the bits of a row (FNV-1a over words), with −0 as 0.
func patRowHash(row []float64) uint64 {
	hash := uint64(14695981039346656037)
	for _, v := range row {
		hash ^= math.Float64bits(v + 0)
		hash *= 1099511628211
	}
	return hash
}

func patZeroRow(row []float64) bool {
	for _, v := range row {
		if v != 0 {
			return false
		}
	}
	return true
}

func patNorm(v []float64) float64 {
	var s float64
	for _, x := range v {
		s += x * x
	}
	return math.Sqrt(s)
}

// patCheckMatrix reports a nil or empty matrix, or a NaN or Inf entry.
func patCheckMatrix(name string, x *mat.Dense) error {
	if x == nil {
		return fmt.Errorf("solvers: %s is nil", name)
	}
	if x.IsEmpty() {
		return fmt.Errorf("solvers: %s is empty", name)
	}
	return CheckFinite("solvers: "+name, x)
}
