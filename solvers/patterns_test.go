package solvers

import (
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"gonum.org/v1/gonum/mat"
	"gonum.org/v1/gonum/optimize/convex/lp"
)

func patGaussian(n, d int, seed uint64) *mat.Dense {
	rng := rand.New(rand.NewPCG(seed, 11))
	x := mat.NewDense(n, d, nil)
	for i := 0; i < n; i++ {
		for j := 0; j < d; j++ {
			x.Set(i, j, rng.NormFloat64())
		}
	}
	return x
}

// patWithBias returns rows [x_k, 1] for the rows x_k of x.
func patWithBias(x *mat.Dense) *mat.Dense {
	n, d := x.Dims()
	xb := mat.NewDense(n, d+1, nil)
	for k := 0; k < n; k++ {
		for j := 0; j < d; j++ {
			xb.Set(k, j, x.At(k, j))
		}
		xb.Set(k, d, 1)
	}
	return xb
}

// patGeneralCount is the number of cells of n central hyperplanes in general
// position in R^d: 2 Σ_{k<d} C(n−1, k).
func patGeneralCount(n, d int) int {
	c := 0
	for k := 0; k < d && k <= n-1; k++ {
		b := 1
		for i := 0; i < k; i++ {
			b = b * (n - 1 - i) / (i + 1)
		}
		c += b
	}
	return 2 * c
}

func patString(p Pattern) string {
	var b strings.Builder
	for _, on := range p {
		if on {
			b.WriteByte('1')
		} else {
			b.WriteByte('0')
		}
	}
	return b.String()
}

// patSetOf returns the patterns as a set, failing on repeats or wrong lengths.
func patSetOf(t *testing.T, ps Patterns, n int) map[string]bool {
	t.Helper()
	s := make(map[string]bool, len(ps))
	for i, p := range ps {
		if len(p) != n {
			t.Fatalf("pattern %d has %d entries, want %d", i, len(p), n)
		}
		k := patString(p)
		if s[k] {
			t.Fatalf("pattern %d (%s) is repeated", i, k)
		}
		s[k] = true
	}
	return s
}

// patRealizable reports whether some u has s_k x_kᵀu > 0 for every nonzero
// row x_k, s_k = ±1 by the pattern: the linear program s_k x_kᵀu ≥ 1, in
// standard form with u = u⁺ − u⁻ and surplus t: [S X, −S X, −I] (u⁺, u⁻, t) = 1.
func patRealizable(t *testing.T, x *mat.Dense, p Pattern) bool {
	t.Helper()
	n, d := x.Dims()
	var rows [][]float64
	for k := 0; k < n; k++ {
		if patZeroRow(x.RawRowView(k)) {
			if !p[k] {
				return false
			}
			continue
		}
		s := 1.0
		if !p[k] {
			s = -1
		}
		rows = append(rows, mat.Row(nil, k, x))
		for j := range rows[len(rows)-1] {
			rows[len(rows)-1][j] *= s
		}
	}
	m := len(rows)
	a := mat.NewDense(m, 2*d+m, nil)
	b := make([]float64, m)
	for i, r := range rows {
		for j, v := range r {
			a.Set(i, j, v)
			a.Set(i, d+j, -v)
		}
		a.Set(i, 2*d+i, -1)
		b[i] = 1
	}
	_, _, err := lp.Simplex(make([]float64, 2*d+m), a, b, 1e-10, nil)
	if err != nil && !errors.Is(err, lp.ErrInfeasible) {
		t.Fatalf("simplex: %v", err)
	}
	return err == nil
}

// patStride keeps the linear-program checks of np patterns of n entries
// fast (the simplex costs about n³): about max(8, 8000/n²) of them.
func patStride(np, n int) int {
	c := max(8, 8000/(n*n))
	return max(1, (np+c-1)/c)
}

func TestExactPatternsCountGeneralPosition(t *testing.T) {
	for _, tc := range []struct {
		name string
		x    *mat.Dense
		want int
	}{
		{"d=1", patGaussian(4, 1, 1), 2},
		{"d=2,n=5", patGaussian(5, 2, 2), 10},
		{"d=2,n=10", patGaussian(10, 2, 3), 20},
		{"d=2,n=40", patGaussian(40, 2, 4), 80},
		{"d=3,n=6", patGaussian(6, 3, 5), patGeneralCount(6, 3)},
		{"d=3,n=10", patGaussian(10, 3, 6), patGeneralCount(10, 3)},
		{"d=3,n=20", patGaussian(20, 3, 7), patGeneralCount(20, 3)},
		{"d=4,n=8", patGaussian(8, 4, 8), 128},
		{"d=5,n=9", patGaussian(9, 5, 9), patGeneralCount(9, 5)},
		{"n=5<d=8", patGaussian(5, 8, 10), 32},
		{"2-D points with bias, n=12", patWithBias(patGaussian(12, 2, 11)), patGeneralCount(12, 3)},
	} {
		n, _ := tc.x.Dims()
		ps, err := ExactPatterns(tc.x, 0)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		patSetOf(t, ps, n)
		if len(ps) != tc.want {
			t.Errorf("%s: %d patterns, want %d", tc.name, len(ps), tc.want)
		}
		for i := 0; i < len(ps); i += patStride(len(ps), n) {
			if !patRealizable(t, tc.x, ps[i]) {
				t.Fatalf("%s: pattern %s has no u", tc.name, patString(ps[i]))
			}
		}
	}
	if got := patGeneralCount(6, 3); got != 2*(1+5+10) {
		t.Fatalf("count formula helper: %d", got)
	}
}

// patDeconedCount returns the number of cells of the arrangement of the
// hyperplanes with normals (p_x, p_y, 1) of distinct integer points p, the
// first of them (0, 0): twice the number of regions of the lines
// p_x a + p_y b = −1 (p ≠ 0) in the plane, 1 + L + Σ_points (m_p − 1).
func patDeconedCount(pts [][2]int) int {
	type pt struct{ a, b, den int }
	gcd := func(a, b int) int {
		a, b = max(a, -a), max(b, -b)
		for b != 0 {
			a, b = b, a%b
		}
		return a
	}
	pairs := make(map[pt]int)
	lines := pts[1:]
	for i := range lines {
		for j := i + 1; j < len(lines); j++ {
			i1, j1, i2, j2 := lines[i][0], lines[i][1], lines[j][0], lines[j][1]
			det := i1*j2 - i2*j1
			if det == 0 {
				continue
			}
			a, b := j1-j2, i2-i1
			if det < 0 {
				a, b, det = -a, -b, -det
			}
			g := gcd(gcd(a, b), det)
			pairs[pt{a / g, b / g, det / g}]++
		}
	}
	regions := 1 + len(lines)
	for _, c := range pairs {
		m := int(math.Round((1 + math.Sqrt(float64(1+8*c))) / 2))
		regions += m - 1
	}
	return 2 * regions
}

func TestExactPatternsDegenerate(t *testing.T) {
	// A g×g integer grid with a bias column: many collinear triples, so
	// several hyperplanes meet in one line.
	for _, g := range []int{3, 4, 5} {
		var pts [][2]int
		for i := 0; i < g; i++ {
			for j := 0; j < g; j++ {
				pts = append(pts, [2]int{i, j})
			}
		}
		x := mat.NewDense(len(pts), 3, nil)
		for k, p := range pts {
			x.SetRow(k, []float64{float64(p[0]), float64(p[1]), 1})
		}
		ps, err := ExactPatterns(x, 0)
		if err != nil {
			t.Fatal(err)
		}
		exact := patSetOf(t, ps, len(pts))
		if want := patDeconedCount(pts); len(ps) != want {
			t.Errorf("%d×%d grid: %d patterns, want %d", g, g, len(ps), want)
		}
		for i := 0; i < len(ps); i += patStride(len(ps), len(pts)) {
			if !patRealizable(t, x, ps[i]) {
				t.Fatalf("%d×%d grid: pattern %s has no u", g, g, patString(ps[i]))
			}
		}
		if len(ps) >= patGeneralCount(len(pts), 3) {
			t.Errorf("%d×%d grid: %d patterns, not fewer than general position", g, g, len(ps))
		}
		if g == 3 {
			checker := make(Pattern, len(pts))
			for k, p := range pts {
				checker[k] = (p[0]+p[1])%2 == 0
			}
			if patRealizable(t, x, checker) {
				t.Fatal("the LP check accepts the checkerboard (XOR) pattern of a grid")
			}
			sampled, _ := SamplePatterns(x, len(ps)+1, 1, 50000)
			for _, p := range sampled {
				if !exact[patString(p)] {
					t.Fatalf("3×3 grid: sampled pattern %s is not in the exact set", patString(p))
				}
			}
			if len(sampled) != len(ps) {
				t.Errorf("3×3 grid: sampling found %d of %d patterns", len(sampled), len(ps))
			}
		}
	}

	// Many copies of few points: the work depends on the distinct rows.
	xr := mat.NewDense(5000, 3, nil)
	for k := 0; k < 5000; k++ {
		xr.SetRow(k, []float64{float64(k % 3), float64(k / 3 % 3), 1})
	}
	ps, err := ExactPatterns(xr, 0)
	if err != nil {
		t.Fatal(err)
	}
	patSetOf(t, ps, 5000)
	if want := patDeconedCount([][2]int{{0, 0}, {1, 0}, {2, 0}, {0, 1}, {1, 1}, {2, 1}, {0, 2}, {1, 2}, {2, 2}}); len(ps) != want {
		t.Errorf("5000 copies of a 3×3 grid: %d patterns, want %d", len(ps), want)
	}
	for _, p := range ps {
		for k := 9; k < 5000; k++ {
			if p[k] != p[k%9] {
				t.Fatalf("copies of one point differ in pattern %s…", patString(p[:9]))
			}
		}
	}

	// Points on one line with a bias column: rank 2 in R^3.
	x := mat.NewDense(7, 3, nil)
	for k := 0; k < 7; k++ {
		s := float64(k) - 2.5
		x.SetRow(k, []float64{s, 2 * s, 1})
	}
	ps, err = ExactPatterns(x, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(ps) != 14 {
		t.Errorf("collinear points: %d patterns, want 14", len(ps))
	}

	// Rank 2 in R^5: X = Z B.
	z := patGaussian(9, 2, 21)
	b := patGaussian(2, 5, 22)
	var zb mat.Dense
	zb.Mul(z, b)
	ps, err = ExactPatterns(&zb, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(ps) != 18 {
		t.Errorf("rank-2 X in R^5: %d patterns, want 18", len(ps))
	}

	// Repeated, negated and zero rows add no hyperplane.
	a := []float64{1, 0.2, -0.3}
	bb := []float64{-0.4, 1, 0.5}
	c := []float64{0.3, -0.2, 1}
	x = mat.NewDense(7, 3, nil)
	for k, row := range [][]float64{a, bb, a, {-2, -0.4, 0.6}, {0, 0, 0}, c, {0.6, -0.4, 2}} {
		x.SetRow(k, row)
	}
	ps, err = ExactPatterns(x, 0)
	if err != nil {
		t.Fatal(err)
	}
	patSetOf(t, ps, 7)
	if len(ps) != 8 {
		t.Errorf("three distinct hyperplanes in R^3: %d patterns, want 8", len(ps))
	}
	for _, p := range ps {
		if p[0] != p[2] || p[0] == p[3] || !p[4] || p[5] != p[6] {
			t.Errorf("pattern %s ignores repeated (0=2, 5=6), negated (3) or zero (4) rows", patString(p))
		}
	}

	// Lines closer than the tolerance (1e-9) count as one, also across the
	// angle 0 = 2π of the planar sweep.
	for _, rows := range [][]float64{
		{0, 1, 1e-12, 1, 1, 0},
		{0, 1, -1e-12, 1, 1, 0},
		{1, 0, 1, 1e-12, 0, 1},
		{1, 0, 1, -1e-12, 0, 1},
	} {
		x = mat.NewDense(3, 2, rows)
		ps, err = ExactPatterns(x, 0)
		if err != nil {
			t.Fatal(err)
		}
		patSetOf(t, ps, 3)
		if len(ps) != 4 {
			t.Errorf("X = %v: %d patterns, want 4", rows, len(ps))
		}
		for _, p := range ps {
			if p[0] != p[1] {
				t.Errorf("X = %v: nearly equal rows differ in %s", rows, patString(p))
			}
		}
	}

	// X = 0: only D = I.
	ps, err = ExactPatterns(mat.NewDense(3, 2, nil), 0)
	if err != nil || len(ps) != 1 || patString(ps[0]) != "111" {
		t.Errorf("X = 0: %v, %v; want the one pattern 111", ps, err)
	}
}

// TestExactPatternsComplete checks completeness without a count formula: the
// cells are connected by crossings of one hyperplane, so a set of cells that
// holds every cell reachable by one crossing from its members holds them
// all. A pattern with one entry flipped that is not in the set must have no u.
func TestExactPatternsComplete(t *testing.T) {
	// The corners and centre of a cube, with a bias column: four points on
	// each face, so several hyperplanes of R^4 meet in one line or plane.
	var rows [][]float64
	for i := 0; i < 8; i++ {
		rows = append(rows, []float64{float64(i & 1), float64(i >> 1 & 1), float64(i >> 2), 1})
	}
	rows = append(rows, []float64{0.5, 0.5, 0.5, 1})
	x := mat.NewDense(len(rows), 4, nil)
	for k, r := range rows {
		x.SetRow(k, r)
	}
	ps, err := ExactPatterns(x, 0)
	if err != nil {
		t.Fatal(err)
	}
	set := patSetOf(t, ps, len(rows))
	flips := 0
	for i, p := range ps {
		if i%8 == 0 && !patRealizable(t, x, p) {
			t.Fatalf("pattern %s has no u", patString(p))
		}
		q := slices.Clone(p)
		for k := range q {
			q[k] = !q[k]
			if !set[patString(q)] {
				flips++
				if patRealizable(t, x, q) {
					t.Fatalf("pattern %s is a cell but missing", patString(q))
				}
			}
			q[k] = !q[k]
		}
	}
	if len(ps) >= patGeneralCount(len(rows), 4) {
		t.Errorf("cube: %d patterns, not fewer than general position", len(ps))
	}
	t.Logf("cube with centre: %d patterns, %d flips checked", len(ps), flips)
}

func TestExactPatternsMatchSampling(t *testing.T) {
	// Sampled patterns are always exact ones; with the draws given, sampling
	// finds all of the first two sets (50000 draws already find the 92 of
	// the first). The others have thin cells: one of the 58 cells of the
	// third set takes more than 2·10⁷ draws to hit.
	for _, tc := range []struct {
		name  string
		x     *mat.Dense
		draws int
		all   bool
	}{
		{"n=10,d=3", patGaussian(10, 3, 31), 100000, true},
		{"n=30,d=2", patGaussian(30, 2, 35), 30000, true},
		{"2-D points with bias, n=8", patWithBias(patGaussian(8, 2, 32)), 20000, false},
		{"n=7,d=4", patGaussian(7, 4, 33), 20000, false},
	} {
		n, _ := tc.x.Dims()
		ps, err := ExactPatterns(tc.x, 0)
		if err != nil {
			t.Fatal(err)
		}
		exact := patSetOf(t, ps, n)
		sampled, err := SamplePatterns(tc.x, len(ps)+1, 5, tc.draws)
		var few *FewPatternsError
		if !errors.As(err, &few) {
			t.Fatalf("%s: asking for P+1 patterns gave error %v, want *FewPatternsError", tc.name, err)
		}
		for _, p := range sampled {
			if !exact[patString(p)] {
				t.Fatalf("%s: sampled pattern %s is not in the exact set", tc.name, patString(p))
			}
		}
		if few.Found != len(sampled) || tc.all && len(sampled) != len(ps) {
			t.Errorf("%s: sampling found %d (error says %d) of the %d exact patterns", tc.name, len(sampled), few.Found, len(ps))
		}
	}
}

func TestExactPatternsGuard(t *testing.T) {
	start := time.Now()
	_, err := ExactPatterns(patGaussian(2000, 30, 41), 0)
	if err == nil {
		t.Fatal("n = 2000, d = 30 was not refused")
	}
	for _, s := range []string{"n = 2000", "r = 30", "2r(e(n−1)/r)^r", "2000000", "SamplePatterns"} {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("refusal %q does not mention %q", err, s)
		}
	}
	// Large X: the rank is bounded from a small random sketch.
	_, err = ExactPatterns(patGaussian(3000, 200, 42), 0)
	if err == nil || !strings.Contains(err.Error(), "r ≥ 3") {
		t.Errorf("n = 3000, d = 200: %v, want a refusal with r ≥ 3", err)
	}
	// A low limit refuses a small problem.
	if _, err := ExactPatterns(patGaussian(20, 3, 43), 100); err == nil || !strings.Contains(err.Error(), "limit 100") {
		t.Errorf("limit 100: %v, want a refusal", err)
	}
	if el := time.Since(start); el > time.Second {
		t.Errorf("refusals took %v", el)
	}
}

func TestSamplePatterns(t *testing.T) {
	x := patWithBias(patGaussian(30, 2, 51))
	a, err := SamplePatterns(x, 40, 7, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(a) != 40 {
		t.Fatalf("%d patterns, want 40", len(a))
	}
	sa := patSetOf(t, a, 30)
	// Each pattern is 1[X a ≥ 0] of some direction, hence one of the exact ones.
	exact, err := ExactPatterns(x, 0)
	if err != nil {
		t.Fatal(err)
	}
	se := patSetOf(t, exact, 30)
	for k := range sa {
		if !se[k] {
			t.Fatalf("sampled pattern %s is not a cell's pattern", k)
		}
	}
	// firstDiff returns the first index of the first p patterns of (p,
	// seed) at which they differ from a, or -1.
	firstDiff := func(p int, seed uint64) int {
		b, err := SamplePatterns(x, p, seed, 0)
		if err != nil {
			t.Fatal(err)
		}
		for i := range b {
			if patString(a[i]) != patString(b[i]) {
				return i
			}
		}
		return -1
	}
	if i := firstDiff(40, 7); i >= 0 {
		t.Fatalf("same seed, pattern %d differs", i)
	}
	if i := firstDiff(10, 7); i >= 0 {
		t.Fatalf("p = 10 is not a prefix of p = 40 at %d", i)
	}
	if firstDiff(40, 8) < 0 {
		t.Error("seeds 7 and 8 gave the same patterns")
	}

	// Five lines through the origin of the plane cut it into 10 cells.
	x = patGaussian(5, 2, 52)
	ps, err := SamplePatterns(x, 50, 1, 100000)
	var few *FewPatternsError
	if !errors.As(err, &few) {
		t.Fatalf("asking 50 of 10 patterns: error %v, want *FewPatternsError", err)
	}
	if few.Asked != 50 || few.Found != 10 || few.Draws != 100000 || len(ps) != 10 {
		t.Errorf("FewPatternsError %+v with %d patterns, want Asked 50, Found 10, Draws 100000", *few, len(ps))
	}
	if !strings.Contains(err.Error(), "found 10 distinct activation patterns of the 50 asked after 100000 draws") {
		t.Errorf("message %q", err)
	}
	patSetOf(t, ps, 5)
	// Far more patterns than the data can have: the default draws stop at
	// 100 per pattern the data can have (5 points in the plane: at most
	// 32), at once instead of 10¹¹ draws.
	if _, err := SamplePatterns(x, 1_000_000_000, 1, 0); !errors.As(err, &few) || few.Found != 10 || few.Draws != 10000 {
		t.Errorf("asking 10⁹ patterns of 5 points: %v", err)
	}
	if b := patternBound(5, 2); b != 32 {
		t.Errorf("patternBound(5, 2) = %v, want 32 (2^5 and 2·(1 + 5 + 10))", b)
	}
	if b := patternBound(100, 3); b != 2*(1+100+4950+161700) {
		t.Errorf("patternBound(100, 3) = %v", b)
	}
	// Default draws: max(100p, 10000).
	_, err = SamplePatterns(x, 50, 1, 0)
	if !errors.As(err, &few) || few.Draws != 10000 {
		t.Errorf("default draws: %v", err)
	}
	// A zero row is always active.
	x = mat.NewDense(3, 2, []float64{1, 0, 0, 0, 0, 1})
	ps, _ = SamplePatterns(x, 4, 1, 0)
	if len(ps) != 4 {
		t.Errorf("%d patterns with a zero row, want 4", len(ps))
	}
	for _, p := range ps {
		if !p[1] {
			t.Errorf("zero row inactive in %s", patString(p))
		}
	}
}

func TestSampleAnchoredPatterns(t *testing.T) {
	x := patGaussian(30, 2, 53)
	a, err := SampleAnchoredPatterns(x, 40, 7, 0)
	if err != nil {
		t.Fatal(err)
	}
	sa := patSetOf(t, a, 30)
	// Each is the pattern of an affine map, hence one of X's with a bias
	// column, and has its anchor, at least, active.
	exact, err := ExactPatterns(patWithBias(x), 0)
	if err != nil {
		t.Fatal(err)
	}
	se := patSetOf(t, exact, 30)
	for k := range sa {
		if !se[k] {
			t.Fatalf("anchored pattern %s is not a cell's pattern of [X, 1]", k)
		}
		if !strings.Contains(k, "1") {
			t.Fatalf("anchored pattern %s has no active point", k)
		}
	}
	b, err := SampleAnchoredPatterns(x, 10, 7, 0)
	if err != nil {
		t.Fatal(err)
	}
	for i := range b {
		if patString(a[i]) != patString(b[i]) {
			t.Fatalf("p = 10 is not a prefix of p = 40 at %d", i)
		}
	}
	// Data far from the origin: Gaussian directions with a Gaussian bias
	// hardly ever cut it, hyperplanes through a data point always do.
	far := patWithBias(patGaussian(30, 2, 54))
	for k := 0; k < 30; k++ {
		far.Set(k, 0, far.At(k, 0)+100)
		far.Set(k, 1, far.At(k, 1)+100)
	}
	plain, _ := SamplePatterns(far, 40, 1, 2000)
	anch, err := SampleAnchoredPatterns(far.Slice(0, 30, 0, 2).(*mat.Dense), 40, 1, 2000)
	if err != nil || len(plain) > 20 {
		t.Errorf("far data: %d plain and %d anchored patterns in 2000 draws (error %v), want ≤ 20 and 40", len(plain), len(anch), err)
	}
	if _, err := SampleAnchoredPatterns(x, 0, 1, 0); err == nil || !strings.Contains(err.Error(), "p ≥ 1") {
		t.Errorf("p = 0: error %v", err)
	}
}

func TestPatternsFromWeights(t *testing.T) {
	x := patWithBias(patGaussian(12, 2, 61))
	u0 := patGaussian(3, 3, 62)
	// Columns u_1, u_2, 2u_1, u_3, u_2, 0: patterns of u_1, u_2, u_3, D = I.
	u := mat.NewDense(3, 6, nil)
	for i := 0; i < 3; i++ {
		u.Set(i, 0, u0.At(i, 0))
		u.Set(i, 1, u0.At(i, 1))
		u.Set(i, 2, 2*u0.At(i, 0))
		u.Set(i, 3, u0.At(i, 2))
		u.Set(i, 4, u0.At(i, 1))
	}
	ps, err := PatternsFromWeights(x, u)
	if err != nil {
		t.Fatal(err)
	}
	if len(ps) != 4 {
		t.Fatalf("%d patterns, want 4", len(ps))
	}
	for i, col := range []int{0, 1, 3, 5} {
		for k := 0; k < 12; k++ {
			var s float64
			for j := 0; j < 3; j++ {
				s += x.At(k, j) * u.At(j, col)
			}
			if ps[i][k] != (s >= 0) {
				t.Fatalf("pattern %d, entry %d: %v, want 1[x_kᵀu ≥ 0] for column %d", i, k, ps[i][k], col)
			}
		}
	}
	net := Network{U: u0, Alpha: []float64{1, -1, 1}, Bias: true}
	ps, err = PatternsFromWeights(x, net.U)
	if err != nil || len(ps) != 3 {
		t.Errorf("network's U: %d patterns, %v", len(ps), err)
	}
}

func TestPatternsBadInput(t *testing.T) {
	good := patGaussian(4, 2, 71)
	nan := patGaussian(4, 2, 72)
	nan.Set(2, 1, math.NaN())
	inf := patGaussian(4, 2, 73)
	inf.Set(0, 0, math.Inf(-1))
	nanU := mat.NewDense(2, 3, nil)
	nanU.Set(1, 2, math.NaN())
	for _, tc := range []struct {
		name string
		err  func() error
		want string
	}{
		{"sample nil", func() error { _, err := SamplePatterns(nil, 3, 1, 0); return err }, "X is nil"},
		{"sample empty", func() error { _, err := SamplePatterns(&mat.Dense{}, 3, 1, 0); return err }, "X is empty"},
		{"sample NaN", func() error { _, err := SamplePatterns(nan, 3, 1, 0); return err }, "NaN"},
		{"sample Inf", func() error { _, err := SamplePatterns(inf, 3, 1, 0); return err }, "Inf"},
		{"sample p=0", func() error { _, err := SamplePatterns(good, 0, 1, 0); return err }, "p ≥ 1"},
		{"sample p<0", func() error { _, err := SamplePatterns(good, -2, 1, 0); return err }, "p ≥ 1"},
		{"sample maxDraws<0", func() error { _, err := SamplePatterns(good, 2, 1, -1); return err }, "maxDraws"},
		{"exact nil", func() error { _, err := ExactPatterns(nil, 0); return err }, "X is nil"},
		{"exact empty", func() error { _, err := ExactPatterns(&mat.Dense{}, 0); return err }, "X is empty"},
		{"exact NaN", func() error { _, err := ExactPatterns(nan, 0); return err }, "NaN"},
		{"exact limit<0", func() error { _, err := ExactPatterns(good, -1); return err }, "limit"},
		{"weights nil X", func() error { _, err := PatternsFromWeights(nil, good); return err }, "X is nil"},
		{"weights nil U", func() error { _, err := PatternsFromWeights(good, nil); return err }, "U is nil"},
		{"weights empty U", func() error { _, err := PatternsFromWeights(good, &mat.Dense{}); return err }, "U is empty"},
		{"weights NaN U", func() error { _, err := PatternsFromWeights(good, nanU); return err }, "NaN"},
		{"weights dims", func() error { _, err := PatternsFromWeights(good, patGaussian(3, 2, 1)); return err }, "U has 3 rows"},
	} {
		err := tc.err()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one mentioning %q", tc.name, err, tc.want)
		}
	}
}

func TestPatternBound(t *testing.T) {
	if got := PatternBound(5, 2); got != 32 {
		t.Errorf("PatternBound(5, 2) = %v, want 2^5", got)
	}
	want := 6 * math.Pow(math.E*39/3, 3)
	if got := PatternBound(40, 3); math.Abs(got-want) > 1e-9*want {
		t.Errorf("PatternBound(40, 3) = %v, want %v", got, want)
	}
	if PatternBound(0, 1) != 0 || PatternBound(3, 0) != 1 || PatternBound(1, 1) != 2 || PatternBound(3, 7) != 8 {
		t.Error("PatternBound edge cases")
	}
	if !math.IsInf(PatternBound(5000, 2000), 1) {
		t.Error("PatternBound(5000, 2000) should overflow to +Inf")
	}
	// The bound holds the general-position count 2 Σ_{k<r} C(n−1, k).
	for n := 1; n <= 40; n++ {
		for r := 1; r <= min(n, 8); r++ {
			if c := float64(patGeneralCount(n, r)); PatternBound(n, r) < c {
				t.Errorf("PatternBound(%d, %d) = %v < %v", n, r, PatternBound(n, r), c)
			}
		}
	}
}

// SampleGates returns the patterns SamplePatterns does, with vectors that
// reproduce them.
func TestSampleGates(t *testing.T) {
	rng := rand.New(rand.NewPCG(4, 4))
	x := mat.NewDense(30, 3, nil)
	for i := range x.RawMatrix().Data {
		x.RawMatrix().Data[i] = rng.NormFloat64()
	}
	want, err := SamplePatterns(x, 12, 9, 0)
	if err != nil {
		t.Fatal(err)
	}
	got, g, err := SampleGates(x, 12, 9, 0)
	if err != nil {
		t.Fatal(err)
	}
	if r, c := g.Dims(); r != 3 || c != 12 || len(got) != 12 {
		t.Fatalf("gates %d×%d for %d patterns", r, c, len(got))
	}
	var z mat.Dense
	z.Mul(x, g)
	for i := range got {
		if !slices.Equal(got[i], want[i]) {
			t.Fatalf("pattern %d differs from SamplePatterns'", i)
		}
		for k := 0; k < 30; k++ {
			if (z.At(k, i) >= 0) != got[i][k] {
				t.Fatalf("gate %d does not reproduce its pattern at row %d", i, k)
			}
		}
	}
}
