// Package twohidden trains networks of K parallel two-hidden-layer ReLU
// sub-networks (the appendix "Two-Hidden-Layer Sub-Networks", after Ergen
// and Pilanci, "Global optimality beyond two layers", ICML 2021),
//
//	f(x) = Σ_k w_3k (Σ_j w_2kj (xᵀw_1kj)_+)_+,
//
// with m1 first-layer neurons w_1kj per sub-network, through a convex
// program that is an instance of eq. (ct_general) (package general).
//
// The non-convex problem is
//
//	min ℓ(f(X), y) + (β/2) Σ_k (‖w_2k‖² + w_3k²)   s.t.  ‖w_1kj‖₂ ≤ 1,
//
// the paper's eq. (nonconvextrainingdeep) with the first layer bounded, as
// Ergen and Pilanci bound it. Fix a sub-network's patterns: D_1j =
// diag(1[Xw_1j ≥ 0]) of its first-layer neurons, the signs σ_j of w_2j and
// D_2 = diag(1[Σ_j w_2j (Xw_1j)_+ ≥ 0]) of its second layer. With
// c = |w_3| w_2 and u_j = |c_j| w_1j its output is sign(w_3)·D_2 Σ_j σ_j D_1j
// X u_j, and by the arithmetic–geometric mean inequality its regularizer is
// at least β‖c‖ ≥ β‖U‖_F (U = [u_1 … u_m1], ‖w_1j‖ ≤ 1), with equality for
// |w_3| = ‖w_2‖ and unit w_1j. So each pattern tuple t = (D_1·, σ, D_2) is a
// group U_t ∈ ℝ^{d×m1} (and U′_t for the negative output sign) of the program
//
//	min ℓ(Σ_t F_t(U_t − U′_t), y) + β Σ_t (‖U_t‖_F + ‖U′_t‖_F)
//	s.t. (2D_1j − I) X u_tj ≥ 0 (every j),  (2D_2 − I) F_t U_t ≥ 0  (and for U′_t),
//
// F_t U = D_2 Σ_j σ_j D_1j X u_j. Every feasible point is a network with the
// same objective (Recover: one sub-network per nonzero group, w_1j =
// u_j/‖u_j‖, c_j = σ_j‖u_j‖, w_3 = ±√‖c‖, w_2 = c/√‖c‖), and every network
// whose patterns are among the program's gives a feasible point whose
// objective is at most the network's (Lift); with every pattern tuple the
// program is exact. Patterns are sampled from random sub-networks.
//
// The paper prints the program with one group per first-layer neuron (the
// bound ‖W_1k‖_F ≤ 1 instead of one per neuron gives that grouping by the
// Cauchy–Schwarz inequality) and the second-layer sign constraint per
// neuron; this package groups per sub-network, which keeps G block diagonal
// and the equivalence above exact.
package twohidden

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/convexnn/convexnn/solvers"
	"github.com/convexnn/convexnn/solvers/general"
	"gonum.org/v1/gonum/floats"
	"gonum.org/v1/gonum/mat"
)

// Tuple is one sub-network's patterns: the first layer's D_1j (one per
// neuron), the signs σ_j of its second-layer weights and the second
// layer's D_2.
type Tuple struct {
	First  []solvers.Pattern
	Sign   []float64
	Second solvers.Pattern
}

// Problem is the convex program of K sub-networks of m1 first-layer
// neurons on data X; with Bias the last column of X is all ones (the first
// layer's biases) and the recovered networks take raw inputs.
type Problem struct {
	X      *mat.Dense
	Y      []float64
	Loss   solvers.Loss
	Beta   float64
	M1     int
	Bias   bool
	Tuples []Tuple
}

// New returns the problem without patterns (SamplePatterns adds them).
func New(x *mat.Dense, y []float64, m1 int, loss solvers.Loss, beta float64) (*Problem, error) {
	if x == nil {
		return nil, errors.New("twohidden: no data matrix")
	}
	n, d := x.Dims()
	if n == 0 || d == 0 {
		return nil, fmt.Errorf("twohidden: X is empty (%d×%d)", n, d)
	}
	if err := solvers.CheckFinite("twohidden: X", x); err != nil {
		return nil, err
	}
	if len(y) != n {
		return nil, fmt.Errorf("twohidden: X has %d rows but y has %d entries", n, len(y))
	}
	if err := loss.CheckLabels(y); err != nil {
		return nil, fmt.Errorf("twohidden: %w", err)
	}
	if m1 < 1 {
		return nil, fmt.Errorf("twohidden: %d first-layer neurons per sub-network, need ≥ 1", m1)
	}
	if !(beta > 0) || math.IsInf(beta, 0) {
		return nil, fmt.Errorf("twohidden: β = %v, need 0 < β < ∞", beta)
	}
	return &Problem{X: x, Y: y, Loss: loss, Beta: beta, M1: m1}, nil
}

// SubNetwork is one sub-network: W1 (d×m1), W2 (m1), W3.
type SubNetwork struct {
	W1 *mat.Dense
	W2 []float64
	W3 float64
}

// Network is K parallel sub-networks. With Bias the input is [x; 1]: the
// last row of each W1 holds the first layer's biases, and Predict and
// Objective take raw inputs x.
type Network struct {
	Subs []SubNetwork
	Bias bool
}

// input returns x with the ones column appended when the network has
// biases.
func (net *Network) input(x *mat.Dense) *mat.Dense {
	if !net.Bias {
		return x
	}
	return solvers.WithOnes(x)
}

// hidden returns the second layer's pre-activations of sub-network s on x.
func (s *SubNetwork) hidden(x *mat.Dense) []float64 {
	n, _ := x.Dims()
	var h mat.Dense
	h.Mul(x, s.W1)
	z := make([]float64, n)
	for k := 0; k < n; k++ {
		for j, w := range s.W2 {
			if v := h.At(k, j); v > 0 {
				z[k] += w * v
			}
		}
	}
	return z
}

// Predict returns f(x_k) for the rows of x.
func (net *Network) Predict(x *mat.Dense) ([]float64, error) {
	if x == nil {
		return nil, errors.New("twohidden: no data matrix")
	}
	x = net.input(x)
	n, d := x.Dims()
	out := make([]float64, n)
	for i := range net.Subs {
		s := &net.Subs[i]
		if r, m := s.W1.Dims(); r != d || m != len(s.W2) {
			return nil, fmt.Errorf("twohidden: sub-network %d has a %d×%d first layer and %d second-layer weights for %d features", i, r, m, len(s.W2), d)
		}
		for k, v := range s.hidden(x) {
			if v > 0 {
				out[k] += s.W3 * v
			}
		}
	}
	return out, nil
}

// Width returns the number of sub-networks.
func (net *Network) Width() int { return len(net.Subs) }

// Objective returns the non-convex objective ℓ(f(X), y) + (β/2) Σ_k
// (‖w_2k‖² + w_3k²); it refuses a first-layer neuron outside the unit ball.
func (net *Network) Objective(x *mat.Dense, y []float64, loss solvers.Loss, beta float64) (float64, error) {
	out, err := net.Predict(x)
	if err != nil {
		return 0, err
	}
	if len(y) != len(out) {
		return 0, fmt.Errorf("twohidden: %d labels for %d points", len(y), len(out))
	}
	var reg float64
	for i, s := range net.Subs {
		_, m := s.W1.Dims()
		for j := 0; j < m; j++ {
			if nw := floats.Norm(mat.Col(nil, j, s.W1), 2); nw > 1+1e-12 {
				return 0, fmt.Errorf("twohidden: sub-network %d neuron %d has ‖w_1‖ = %v > 1", i, j, nw)
			}
		}
		reg += floats.Dot(s.W2, s.W2) + s.W3*s.W3
	}
	return loss.Value(out, y) + beta/2*reg, nil
}

// TupleOf returns the pattern tuple of sub-network s on X.
func TupleOf(x *mat.Dense, s *SubNetwork) Tuple {
	n, _ := x.Dims()
	_, m := s.W1.Dims()
	var h mat.Dense
	h.Mul(x, s.W1)
	t := Tuple{First: make([]solvers.Pattern, m), Sign: make([]float64, m), Second: make(solvers.Pattern, n)}
	for j := 0; j < m; j++ {
		t.First[j] = make(solvers.Pattern, n)
		for k := 0; k < n; k++ {
			t.First[j][k] = h.At(k, j) >= 0
		}
		t.Sign[j] = math.Copysign(1, s.W2[j])
	}
	for k, v := range s.hidden(x) {
		t.Second[k] = v >= 0
	}
	return t
}

func (t Tuple) key() string {
	b := make([]byte, 0, len(t.Second)*(len(t.First)+1)+len(t.Sign))
	for _, p := range append(append([]solvers.Pattern(nil), t.First...), t.Second) {
		for _, on := range p {
			b = append(b, '0'+map[bool]byte{false: 0, true: 1}[on])
		}
	}
	for _, s := range t.Sign {
		b = append(b, map[bool]byte{false: '-', true: '+'}[s > 0])
	}
	return string(b)
}

// AddTuple adds t unless the problem has it, and reports whether it did.
func (p *Problem) AddTuple(t Tuple) (bool, error) {
	n, _ := p.X.Dims()
	if len(t.First) != p.M1 || len(t.Sign) != p.M1 || len(t.Second) != n {
		return false, fmt.Errorf("twohidden: a tuple of %d first-layer patterns, %d signs and a second-layer pattern of %d points, the problem has %d neurons and %d points", len(t.First), len(t.Sign), len(t.Second), p.M1, n)
	}
	for j, d1 := range t.First {
		if len(d1) != n || (t.Sign[j] != 1 && t.Sign[j] != -1) {
			return false, fmt.Errorf("twohidden: tuple neuron %d: pattern of %d points, sign %v (want ±1)", j, len(d1), t.Sign[j])
		}
	}
	k := t.key()
	for _, u := range p.Tuples {
		if u.key() == k {
			return false, nil
		}
	}
	p.Tuples = append(p.Tuples, t)
	return true, nil
}

// SamplePatterns adds the tuples of up to np random sub-networks (W1 and
// W2 Gaussian; seeded; at most 20·np draws) and returns the number added.
func (p *Problem) SamplePatterns(np int, seed uint64) (int, error) {
	if np < 1 {
		return 0, fmt.Errorf("twohidden: %d patterns, need ≥ 1", np)
	}
	rng := rand.New(rand.NewPCG(seed, 0x3273))
	_, d := p.X.Dims()
	added := 0
	for draws := 0; added < np && draws < 20*np; draws++ {
		s := SubNetwork{W1: mat.NewDense(d, p.M1, nil), W2: make([]float64, p.M1), W3: 1}
		for i := 0; i < d; i++ {
			for j := 0; j < p.M1; j++ {
				s.W1.Set(i, j, rng.NormFloat64())
			}
		}
		for j := range s.W2 {
			s.W2[j] = rng.NormFloat64()
		}
		ok, err := p.AddTuple(TupleOf(p.X, &s))
		if err != nil {
			return added, err
		}
		if ok {
			added++
		}
	}
	return added, nil
}

// Program returns the problem as eq. (ct_general): one group of d·m1
// coordinates per tuple (u_1, …, u_m1 stacked), F_t U = D_2 Σ_j σ_j D_1j X
// u_j and G_t = [blkdiag_j((2D_1j − I)X); (2D_2 − I) F_t]. Every block is a
// masked X, so F, each G_t and the whole G (Program.BlockG) are
// general.Masked operators: a product reads X once for all tuples, not the
// dense (m1 + 1)n×d·m1 block of each.
func (p *Problem) Program() (*general.Program, error) {
	if len(p.Tuples) == 0 {
		return nil, errors.New("twohidden: no patterns (SamplePatterns)")
	}
	n, d := p.X.Dims()
	m := p.M1
	gp := &general.Program{Y: p.Y, Loss: p.Loss, Beta: p.Beta}
	var fterms []general.MaskTerm
	var gs []*general.Masked
	for i, t := range p.Tuples {
		var gterms []general.MaskTerm
		for j := 0; j < m; j++ {
			f, first, second := make([]float64, n), make([]float64, n), make([]float64, n)
			for k := 0; k < n; k++ {
				first[k] = -1
				if !t.First[j][k] {
					continue
				}
				first[k] = 1
				// (2D_2 − I) times the second layer's pre-activation.
				second[k] = -t.Sign[j]
				if t.Second[k] {
					second[k] = t.Sign[j]
					f[k] = t.Sign[j]
				}
			}
			fterms = append(fterms, general.MaskTerm{In: i*m + j, Mask: f})
			gterms = append(gterms, general.MaskTerm{In: j, Out: j, Mask: first}, general.MaskTerm{In: j, Out: m, Mask: second})
		}
		g, err := general.NewMasked(p.X, 1, m, m+1, gterms)
		if err != nil {
			return nil, err
		}
		gp.Groups = append(gp.Groups, general.Group{Size: d * m, G: g})
		gs = append(gs, g)
	}
	nt := len(p.Tuples)
	f, err := general.NewMasked(p.X, 1, nt*m, 1, fterms)
	if err != nil {
		return nil, err
	}
	if gp.BlockG, err = general.BlockDiagonal(gs); err != nil {
		return nil, err
	}
	gp.F = f
	return gp, gp.Validate()
}

// Recover returns the network of the point (w, w′) of Program: one
// sub-network per group U above solvers.RecoveryTol times the largest
// (see the package comment).
func (p *Problem) Recover(w, wp []float64) (*Network, error) {
	_, d := p.X.Dims()
	m, nt := p.M1, len(p.Tuples)
	sz := d * m
	if len(w) != sz*nt || len(wp) != sz*nt {
		return nil, fmt.Errorf("twohidden: point has %d and %d entries, the program %d", len(w), len(wp), sz*nt)
	}
	var tol float64
	for _, x := range [][]float64{w, wp} {
		for i := 0; i < nt; i++ {
			tol = math.Max(tol, floats.Norm(x[i*sz:(i+1)*sz], 2))
		}
	}
	tol *= solvers.RecoveryTol
	net := &Network{Bias: p.Bias}
	for half, x := range [][]float64{w, wp} {
		for i, t := range p.Tuples {
			u := x[i*sz : (i+1)*sz]
			if nu := floats.Norm(u, 2); nu <= tol || nu == 0 {
				continue
			}
			s := SubNetwork{W1: mat.NewDense(d, m, nil), W2: make([]float64, m)}
			c := make([]float64, m)
			for j := 0; j < m; j++ {
				uj := u[j*d : (j+1)*d]
				nj := floats.Norm(uj, 2)
				if nj == 0 {
					continue
				}
				for a, v := range uj {
					s.W1.Set(a, j, v/nj)
				}
				c[j] = t.Sign[j] * nj
			}
			nc := floats.Norm(c, 2)
			r := math.Sqrt(nc)
			floats.ScaleTo(s.W2, 1/r, c)
			s.W3 = r
			if half == 1 {
				s.W3 = -r
			}
			net.Subs = append(net.Subs, s)
		}
	}
	return net, nil
}

// Lift returns the point of Program that net's sub-networks give when
// their tuples are among the program's (u_j = |w_3||w_2j| w_1j in the
// group of its tuple, U′ for w_3 < 0), and an error naming the first
// sub-network whose tuple is not. Its objective is at most net's.
func (p *Problem) Lift(net *Network) (w, wp []float64, err error) {
	_, d := p.X.Dims()
	m := p.M1
	sz := d * m
	w, wp = make([]float64, sz*len(p.Tuples)), make([]float64, sz*len(p.Tuples))
	index := map[string]int{}
	for i, t := range p.Tuples {
		index[t.key()] = i
	}
	for k := range net.Subs {
		s := &net.Subs[k]
		if r, c := s.W1.Dims(); r != d || c != m || len(s.W2) != m {
			return nil, nil, fmt.Errorf("twohidden: sub-network %d is %d×%d with %d second-layer weights, the problem's are %d×%d", k, r, c, len(s.W2), d, m)
		}
		i, ok := index[TupleOf(p.X, s).key()]
		if !ok {
			return nil, nil, fmt.Errorf("twohidden: sub-network %d's patterns are not among the program's", k)
		}
		dst := w
		if s.W3 < 0 {
			dst = wp
		}
		for j := 0; j < m; j++ {
			f := math.Abs(s.W3 * s.W2[j])
			for a := 0; a < d; a++ {
				dst[i*sz+j*d+a] += f * s.W1.At(a, j)
			}
		}
	}
	return w, wp, nil
}

// Raw returns the training inputs without the bias column (X itself when
// the problem has no bias): what the recovered networks take.
func (p *Problem) Raw() *mat.Dense {
	n, d := p.X.Dims()
	if !p.Bias {
		return p.X
	}
	return mat.DenseCopyOf(p.X.Slice(0, n, 0, d-1))
}

// ExactPatterns adds every pattern tuple a sub-network can have on X (and
// some it cannot, which only add groups whose constraints hold at zero
// alone): every combination of first-layer patterns D_1j of X
// (solvers.ExactPatterns), every sign vector σ, and every sign pattern D_2
// of the second layer's pre-activation Σ_j σ_j D_1j X u_j over all u (the
// patterns of [σ_1 D_11 X … σ_m D_1m X]). With them the program is exact.
// It refuses, before adding any, when there would be more than limit
// tuples (tiny data only; 0 means 5000).
func (p *Problem) ExactPatterns(limit int) error {
	if limit < 0 {
		return fmt.Errorf("twohidden: ExactPatterns limit %d < 0", limit)
	}
	if limit == 0 {
		limit = 5000
	}
	n, d := p.X.Dims()
	first, err := solvers.ExactPatterns(p.X, 0)
	if err != nil {
		return fmt.Errorf("twohidden: %w", err)
	}
	m := p.M1
	combos := math.Pow(float64(len(first)), float64(m)) * math.Pow(2, float64(m))
	if combos > float64(limit) {
		return fmt.Errorf("twohidden: ExactPatterns: %d first-layer patterns give %.3g first-layer combinations with signs for m1 = %d, over the limit %d: sample patterns instead", len(first), combos, m, limit)
	}
	var tuples []Tuple
	idx := make([]int, m)
	sign := make([]float64, m)
	for {
		for sbits := 0; sbits < 1<<m; sbits++ {
			for j := range sign {
				sign[j] = 1
				if sbits>>j&1 == 1 {
					sign[j] = -1
				}
			}
			mm := mat.NewDense(n, d*m, nil)
			for j := 0; j < m; j++ {
				for k := 0; k < n; k++ {
					if first[idx[j]][k] {
						floats.ScaleTo(mm.RawRowView(k)[j*d:(j+1)*d], sign[j], p.X.RawRowView(k))
					}
				}
			}
			var second solvers.Patterns
			if mat.Norm(mm, math.Inf(1)) == 0 {
				second = solvers.Patterns{make(solvers.Pattern, n)}
				for k := range second[0] {
					second[0][k] = true
				}
			} else if second, err = solvers.ExactPatterns(mm, 0); err != nil {
				return fmt.Errorf("twohidden: %w", err)
			}
			for _, d2 := range second {
				t := Tuple{First: make([]solvers.Pattern, m), Sign: append([]float64(nil), sign...), Second: d2}
				for j := range t.First {
					t.First[j] = first[idx[j]]
				}
				tuples = append(tuples, t)
				if len(tuples) > limit {
					return fmt.Errorf("twohidden: ExactPatterns: more than %d pattern tuples: sample patterns instead", limit)
				}
			}
		}
		j := 0
		for j < m {
			idx[j]++
			if idx[j] < len(first) {
				break
			}
			idx[j] = 0
			j++
		}
		if j == m {
			break
		}
	}
	for _, t := range tuples {
		if _, err := p.AddTuple(t); err != nil {
			return err
		}
	}
	return nil
}
