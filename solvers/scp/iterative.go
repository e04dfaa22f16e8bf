package scp

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"time"

	"github.com/convexnn/convexnn/solvers"
	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/gonum/floats"
	"gonum.org/v1/gonum/mat"
)

// Dual returns the dual variable of eq. (SCP) recovered from a Lasso
// solution α (appendix "Details about the strong duality between (SCP) and
// (SCP2)", squared loss): v* = y − Hα.
//
// For ½‖Hα − y‖² + β‖α‖₁ the dual is max_v −ℓ*(v) subject to |vᵀh_j| ≤ β for
// every feature column h_j = (X u_j)_+, and the KKT conditions give v* = y − Hα*.
// The residual of an inexact α is returned as is (it is not rescaled into the
// feasible set), so it may violate the sampled constraints by an amount that
// vanishes with the duality gap; Violations takes a relative tolerance for
// that reason.
func Dual(p *Lasso, alpha []float64) []float64 {
	r := make([]float64, len(p.Y))
	p.smooth(alpha, r) // r = Hα − y
	floats.Scale(-1, r)
	return r
}

// Violations counts, for N1 new neurons u (the columns of U1, assumed of
// unit norm), how many violate the dual constraint of eq. (UCP):
// |vᵀ(X u)_+| > β(1 + tol).
func Violations(x, u1 *mat.Dense, v []float64, beta, tol float64) (int, error) {
	if x == nil || u1 == nil {
		return 0, errors.New("scp: Violations needs X and U1")
	}
	if !(beta > 0) || math.IsInf(beta, 0) {
		return 0, fmt.Errorf("scp: regularization β=%v, need 0 < β < ∞", beta)
	}
	if !(tol >= 0) || math.IsInf(tol, 0) {
		return 0, fmt.Errorf("scp: violation tolerance %v, need 0 ≤ tol < ∞", tol)
	}
	n, _ := x.Dims()
	if len(v) != n {
		return 0, fmt.Errorf("scp: dual vector has %d entries for %d data points", len(v), n)
	}
	for k, vk := range v {
		if math.IsNaN(vk) || math.IsInf(vk, 0) {
			return 0, fmt.Errorf("scp: v[%d] is %v", k, vk)
		}
	}
	if err := solvers.CheckFinite("scp: U1", u1); err != nil {
		return 0, err
	}
	h, err := ReLUFeatures(x, u1)
	if err != nil {
		return 0, err
	}
	_, m := h.Dims()
	g := make([]float64, m)
	blas64.Gemv(blas.Trans, 1, h.RawMatrix(), vec(v), 0, vec(g))
	lim := beta * (1 + tol)
	count := 0
	for _, gj := range g {
		if math.Abs(gj) > lim {
			count++
		}
	}
	return count, nil
}

// scpViolators returns the indices j of the columns of H1 with
// |vᵀh_j| > β(1 + tol).
func scpViolators(h1 *mat.Dense, v []float64, beta, tol float64) []int {
	_, m := h1.Dims()
	g := make([]float64, m)
	blas64.Gemv(blas.Trans, 1, h1.RawMatrix(), vec(v), 0, vec(g))
	lim := beta * (1 + tol)
	var idx []int
	for j, gj := range g {
		if math.Abs(gj) > lim {
			idx = append(idx, j)
		}
	}
	return idx
}

// HoeffdingBound returns the upper confidence bound
//
//	θ ≤ Z̄ + sqrt(log(1/ξ)/(2N)),
//
// which holds with probability at least 1 − ξ by Hoeffding's inequality
// P(θ − Z̄ ≥ t) ≤ exp(−2Nt²) for the mean Z̄ of N i.i.d. Bernoulli(θ) samples
// (set exp(−2Nt²) = ξ and solve for t).
//
// NOTE: the paper (section "Iterative sampling of hidden-layer weights" and
// the stopping rule of its Algorithm) prints the bound without the square
// root, Z̄ + log(1/ξ)/(2N). That is not what Hoeffding's inequality gives (it
// is much smaller than the correct deviation for large N, hence not a valid
// confidence bound); we implement the correct one.
func HoeffdingBound(zbar float64, n int, xi float64) (float64, error) {
	if !(zbar >= 0 && zbar <= 1) {
		return 0, fmt.Errorf("scp: violation fraction Z̄=%v, need 0 ≤ Z̄ ≤ 1", zbar)
	}
	if n < 1 {
		return 0, fmt.Errorf("scp: number of fresh samples N=%d, need N ≥ 1", n)
	}
	if !(xi > 0 && xi < 1) {
		return 0, fmt.Errorf("scp: confidence ξ=%v, need 0 < ξ < 1", xi)
	}
	return zbar + math.Sqrt(math.Log(1/xi)/(2*float64(n))), nil
}

// SampleSizeGuidance returns the number of sampled neurons of theorem SCP,
//
//	min{ (n+1)/(ψξ) − 1, (2/ξ)(n + 1 − log ψ) },
//
// for n data points: with at least that many i.i.d. uniform neurons, with
// probability at least 1 − ξ, a further uniform neuron improves the sampled
// program with probability at most ψ.
func SampleSizeGuidance(n int, psi, xi float64) (float64, error) {
	if n < 1 {
		return 0, fmt.Errorf("scp: number of data points n=%d, need n ≥ 1", n)
	}
	if !(psi > 0 && psi < 1) {
		return 0, fmt.Errorf("scp: violation level ψ=%v, need 0 < ψ < 1", psi)
	}
	if !(xi > 0 && xi < 1) {
		return 0, fmt.Errorf("scp: confidence ξ=%v, need 0 < ξ < 1", xi)
	}
	nf := float64(n)
	return math.Min((nf+1)/(psi*xi)-1, 2/xi*(nf+1-math.Log(psi))), nil
}

// IterativeOptions configures Iterative. Zero values select defaults.
type IterativeOptions struct {
	N0        int     // initial number of neurons (required, ≥ 1)
	N1        int     // fresh neurons sampled per round for the certificate (required, ≥ 1)
	Psi       float64 // target violation probability ψ ∈ (0,1) (required)
	Xi        float64 // confidence ξ ∈ (0,1): the certificate holds with probability ≥ 1 − ξ (required)
	MaxRounds int     // maximum number of Lasso solves; 0 means 20
	// GapTol stops FISTA when the duality gap is ≤ GapTol·max(1, F(α)); 0
	// means 1e-9.
	GapTol float64
	// MaxIter caps the FISTA iterations of one round; 0 means 200000. A round
	// that hits the cap is reported with its (larger) gap and the loop goes on.
	MaxIter int
	// ViolationTol is the relative slack of the violation test
	// |vᵀ(Xu)_+| > β(1 + ViolationTol), absorbing the inexactness of v; 0
	// means 1e-6.
	ViolationTol float64
	// AddAll adds all N1 fresh neurons of a round that is not certified,
	// instead of only the violating ones. The default (false) follows the
	// paper's Algorithm, which adds the set E of violating neurons only: the
	// non-violating ones satisfy the dual constraint at v* and cannot lower the
	// optimum at the current solution.
	AddAll bool
	// GuidanceStop also stops once the number of neurons reaches
	// SampleSizeGuidance(n, ψ, ξ), the "or" clause of the paper's stopping
	// rule. Off by default: the neurons kept by the algorithm are not i.i.d.
	// uniform, so theorem SCP does not strictly apply to them.
	GuidanceStop bool
	Seed         uint64 // seed of all neuron sampling; the same seed gives the same run
	// OnRound, when set, is called after each finished round (for a live
	// display).
	OnRound func(Round)
}

// Round records one round of Iterative.
type Round struct {
	Round      int     // 0-based
	Neurons    int     // neurons in the Lasso solved this round
	Objective  float64 // F(α) = ½‖Hα − y‖² + β‖α‖₁ at the returned α
	Gap        float64 // duality gap at α
	Iters      int     // FISTA iterations this round
	Nonzeros   int     // |{j : α_j ≠ 0}|
	Violations int     // fresh neurons with |vᵀ(Xu)_+| > β(1+tol), out of N1
	Zbar       float64 // Violations / N1
	Bound      float64 // HoeffdingBound(Z̄, N1, ξ)
	Added      int     // neurons added for the next round (0 in the last round)
	Seconds    float64 // wall time of the round
}

// IterativeResult is the outcome of Iterative.
type IterativeResult struct {
	Rounds    []Round
	Alpha     []float64  // output weights of the last solved Lasso
	U         *mat.Dense // d×m neurons of the last solved Lasso (unit-norm columns)
	V         []float64  // dual variable y − Hα of the last round
	Certified bool       // the last round's Bound ≤ ψ
	// StopReason is "certified", "guidance", "max-rounds" or "canceled".
	StopReason string
}

// Iterative runs the paper's Algorithm "convex ANN training based on
// iterative sampling of hidden-layer weights" for the squared loss:
//
//  1. sample N0 neurons uniformly on S^{d−1};
//  2. solve the Lasso ½‖Hα − y‖² + β‖α‖₁ by FISTA to the relative duality
//     gap GapTol (warm-started from the previous round's α, padded with zeros
//     for the new neurons);
//  3. recover v = y − Hα (Dual);
//  4. sample N1 fresh neurons, count the violators |vᵀ(Xu)_+| > β(1+tol),
//     Z̄ = violators/N1, and the certificate Bound = Z̄ + sqrt(log(1/ξ)/(2N1))
//     (HoeffdingBound; the paper prints it without the square root);
//  5. stop if Bound ≤ ψ — then with probability ≥ 1 − ξ a further uniform
//     neuron improves the training objective with probability ≤ ψ; this
//     confidence is per round: a run that stops at the first certified of
//     R rounds holds it with probability ≥ 1 − Rξ (union bound; pass ξ/R
//     for a run-wide 1 − ξ) —, else add
//     the violating neurons (all N1 when AddAll) and repeat, up to MaxRounds
//     solves.
//
// X is n×d (append a column of ones for a bias), y has n entries. The
// returned α and U are those of the last solve. On cancellation the result so
// far is returned together with ctx.Err().
func Iterative(ctx context.Context, x *mat.Dense, y []float64, beta float64, o IterativeOptions) (*IterativeResult, error) {
	if x == nil {
		return nil, errors.New("scp: Iterative needs a data matrix X")
	}
	n, d := x.Dims()
	if len(y) != n {
		return nil, fmt.Errorf("scp: %d labels for %d data points", len(y), n)
	}
	if err := solvers.CheckFinite("scp: X", x); err != nil {
		return nil, err
	}
	for k, v := range y {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return nil, fmt.Errorf("scp: y[%d] is %v", k, v)
		}
	}
	if !(beta > 0) || math.IsInf(beta, 0) {
		return nil, fmt.Errorf("scp: regularization β=%v, need 0 < β < ∞", beta)
	}
	if o.N0 < 1 {
		return nil, fmt.Errorf("scp: initial neurons N0=%d, need N0 ≥ 1", o.N0)
	}
	if o.N1 < 1 {
		return nil, fmt.Errorf("scp: fresh neurons per round N1=%d, need N1 ≥ 1", o.N1)
	}
	if !(o.Psi > 0 && o.Psi < 1) {
		return nil, fmt.Errorf("scp: violation level ψ=%v, need 0 < ψ < 1", o.Psi)
	}
	if !(o.Xi > 0 && o.Xi < 1) {
		return nil, fmt.Errorf("scp: confidence ξ=%v, need 0 < ξ < 1", o.Xi)
	}
	if o.MaxRounds < 0 || o.MaxIter < 0 {
		return nil, fmt.Errorf("scp: MaxRounds=%d, MaxIter=%d must not be negative", o.MaxRounds, o.MaxIter)
	}
	if !(o.GapTol >= 0) || math.IsInf(o.GapTol, 0) || !(o.ViolationTol >= 0) || math.IsInf(o.ViolationTol, 0) {
		return nil, fmt.Errorf("scp: GapTol=%v, ViolationTol=%v must be finite and ≥ 0", o.GapTol, o.ViolationTol)
	}
	if floor, _ := HoeffdingBound(0, o.N1, o.Xi); floor > o.Psi {
		return nil, fmt.Errorf("scp: N1=%d fresh neurons can never certify ψ=%v at ξ=%v (bound ≥ %.4g even with no violation); need N1 ≥ %d",
			o.N1, o.Psi, o.Xi, floor, int(math.Ceil(math.Log(1/o.Xi)/(2*o.Psi*o.Psi))))
	}
	maxRounds := o.MaxRounds
	if maxRounds == 0 {
		maxRounds = 20
	}
	maxIter := o.MaxIter
	if maxIter == 0 {
		maxIter = 200000
	}
	gapTol := o.GapTol
	if gapTol == 0 {
		gapTol = 1e-9
	}
	vtol := o.ViolationTol
	if vtol == 0 {
		vtol = 1e-6
	}
	guidance, _ := SampleSizeGuidance(n, o.Psi, o.Xi)

	seeds := rand.New(rand.NewPCG(o.Seed, 0x5c9d1a7e3b2f4c61))
	u, err := SampleSphere(d, o.N0, seeds.Uint64())
	if err != nil {
		return nil, err
	}
	res := &IterativeResult{}
	var warm *FISTAState
	for round := 0; round < maxRounds; round++ {
		start := time.Now()
		h, err := ReLUFeatures(x, u)
		if err != nil {
			return nil, err
		}
		p := &Lasso{H: h, Y: y, Beta: beta}
		f, err := NewFISTA(p, warm)
		if err != nil {
			return nil, err
		}
		rec := Round{Round: round, Neurons: u.RawMatrix().Cols}
		rec.Objective = f.State.Obj
		rec.Gap = p.DualityGap(f.State.Alpha)
		for it := 0; rec.Gap > gapTol*math.Max(1, math.Abs(rec.Objective)) && it < maxIter; it++ {
			if it%256 == 0 {
				if err := ctx.Err(); err != nil {
					res.StopReason = "canceled"
					return res, err
				}
			}
			st := f.Step()
			rec.Objective, rec.Gap, rec.Iters = st.Objective, st.Gap, st.Iter
		}
		alpha := append([]float64(nil), f.State.Alpha...)
		for _, a := range alpha {
			if a != 0 {
				rec.Nonzeros++
			}
		}
		v := Dual(p, alpha)
		u1, err := SampleSphere(d, o.N1, seeds.Uint64())
		if err != nil {
			return nil, err
		}
		h1, err := ReLUFeatures(x, u1)
		if err != nil {
			return nil, err
		}
		viol := scpViolators(h1, v, beta, vtol)
		rec.Violations = len(viol)
		rec.Zbar = float64(len(viol)) / float64(o.N1)
		rec.Bound, _ = HoeffdingBound(rec.Zbar, o.N1, o.Xi)
		res.Alpha, res.U, res.V = alpha, u, v

		stop := ""
		switch {
		case rec.Bound <= o.Psi:
			stop = "certified"
		case o.GuidanceStop && float64(rec.Neurons) >= guidance:
			stop = "guidance"
		case round == maxRounds-1:
			stop = "max-rounds"
		}
		if stop != "" {
			rec.Seconds = time.Since(start).Seconds()
			res.Rounds = append(res.Rounds, rec)
			if o.OnRound != nil {
				o.OnRound(rec)
			}
			res.Certified = rec.Bound <= o.Psi
			res.StopReason = stop
			return res, nil
		}

		add := viol
		if o.AddAll {
			add = make([]int, o.N1)
			for j := range add {
				add[j] = j
			}
		}
		m := rec.Neurons
		grown := mat.NewDense(d, m+len(add), nil)
		grown.Slice(0, d, 0, m).(*mat.Dense).Copy(u)
		for k, j := range add {
			for i := 0; i < d; i++ {
				grown.Set(i, m+k, u1.At(i, j))
			}
		}
		u = grown
		rec.Added = len(add)
		// Warm start: the previous α padded with zeros is optimal for the
		// old neurons; momentum restarts.
		pad := make([]float64, m+len(add))
		copy(pad, alpha)
		// The new columns carry zero weight, so F is unchanged.
		warm = &FISTAState{Alpha: pad, Prev: append([]float64(nil), pad...), T: 1, L: f.State.L, Obj: f.State.Obj}
		rec.Seconds = time.Since(start).Seconds()
		res.Rounds = append(res.Rounds, rec)
		if o.OnRound != nil {
			o.OnRound(rec)
		}
	}
	res.StopReason = "max-rounds"
	return res, nil
}
