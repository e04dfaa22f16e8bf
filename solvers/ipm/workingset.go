package ipm

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"time"

	"github.com/convexnn/convexnn/solvers"
	"github.com/convexnn/convexnn/solvers/certify"
	"gonum.org/v1/gonum/mat"
)

// WorkingSet solves a program (standard or robust; squared or hinge loss) to
// a certified relative gap by the interior-point method on a growing subset
// of its patterns, in the manner of working-set (screening) methods for
// sparse problems: each round solves the program restricted to the working
// set W of patterns (the other groups held at zero, which is feasible),
// certifies that point on the whole program (package certify, with the
// restricted solve's multipliers, refined from zero for the groups outside
// W), and adds the patterns of the groups whose dual constraint
// fails most (s_j > β, certify.Bound.Groups): at the optimum every group
// outside the optimal support has s_j ≤ β, and then the bound equals the
// restricted optimum. It stops once the certified gap is at most Gap. When
// no group fails but the gap is still larger (the restricted solve's own
// accuracy), the interior-point tolerance is tightened tenfold, down to
// 1e-12.
//
// A round costs an interior-point solve of |W| patterns (MemoryEstimate with
// P = |W|: the dense factor is (d|W|)², not (dP)²) and a certificate of the
// whole program (products of X with n×2P matrices). It pays when the
// optimal network uses a fraction of the patterns.
//
// The state (the round and the working set) is exported: a solver rebuilt
// from it takes the same rounds.
type WorkingSet struct {
	Program      *solvers.Program
	Perturbation solvers.Perturbation
	// Gap is the target certified relative gap; Add the number of patterns
	// added per round (0: max(2, P/8)). Options are the restricted solves'
	// (their Gap and Certifier are set by each round: Gap/2, and the
	// restricted program's own).
	Gap     float64
	Add     int
	Options Options
	State   WorkingSetState
}

// WorkingSetState is the iteration state of WorkingSet.
type WorkingSetState struct {
	Round    int
	Patterns []int   // the working set, sorted pattern indices
	Tol      float64 // the interior-point tolerance of the next round
}

// WorkingSetStep is what one round reports.
type WorkingSetStep struct {
	Round    int
	Size     int           // |W| solved this round
	Bound    certify.Bound // the certificate of the round's point on the whole program
	Weights  solvers.Weights
	Added    int // patterns added for the next round
	Seconds  float64
	Finished bool // the certified gap is at most the target
}

// startFloor: the first working set holds the patterns with a group whose
// dual constraint at zero, s_j of the exact multipliers
// (certify.Certifier.Exact), is at least startFloor·β. On the robust
// programs of docs/performance.md ("fourth round") the patterns fall into
// two sets there, s_j ≥ 0.69β (4–8 patterns, which hold the optimum's) and
// s_j ≤ 0.03β, and the first round is the last.
const startFloor = 0.1

// NewWorkingSet validates the program and the options and starts from st,
// or, when st is nil, from the patterns of the nonzero groups of warm (a
// point of any earlier run; nil for none) or else from the patterns whose
// groups' dual constraints at zero reach startFloor·β (at least two: else
// the Add patterns whose groups violate them most).
func NewWorkingSet(p *solvers.Program, pert solvers.Perturbation, gap float64, add int, o Options, st *WorkingSetState, warm *solvers.Weights) (*WorkingSet, error) {
	if err := checkProgram(p); err != nil {
		return nil, err
	}
	if err := pert.Validate(); err != nil {
		return nil, err
	}
	if !(gap > 0 && gap < 1) {
		return nil, fmt.Errorf("ipm: working set: certified gap %v, need 0 < gap < 1", gap)
	}
	if _, err := o.resolveCone(p.Loss, "ipm: the working-set method solves the squared and hinge losses (cone programs), not the %v loss: use ADMM"); err != nil {
		return nil, err
	}
	_, _, np := p.Dims()
	if add < 0 {
		return nil, fmt.Errorf("ipm: working set: Add = %d < 0", add)
	}
	if add == 0 {
		add = defaultAdd(np)
	}
	cert, err := NewCertifier(p, pert)
	if err != nil {
		return nil, err
	}
	w := &WorkingSet{Program: p, Perturbation: pert, Gap: gap, Add: add, Options: o}
	switch {
	case st != nil:
		if err := st.check(np); err != nil {
			return nil, err
		}
		w.State = WorkingSetState{Round: st.Round, Patterns: slices.Clone(st.Patterns), Tol: st.Tol}
	case warm != nil:
		w.State.Patterns = warmPatterns(p, *warm)
	}
	if len(w.State.Patterns) == 0 {
		if w.State.Patterns, err = startPatterns(p, cert, add); err != nil {
			return nil, err
		}
	}
	if w.State.Tol == 0 {
		w.State.Tol = o.Tol
		if w.State.Tol == 0 {
			w.State.Tol = math.Min(1e-8, gap/10)
		}
	}
	return w, nil
}

// StartPatterns returns the first working set of NewWorkingSet without a
// state or a warm point: the patterns whose groups' dual constraints at
// zero reach startFloor·β (at least two: else the max(2, P/8) patterns
// whose groups violate them most).
func StartPatterns(p *solvers.Program, pert solvers.Perturbation) ([]int, error) {
	if err := checkProgram(p); err != nil {
		return nil, err
	}
	cert, err := NewCertifier(p, pert)
	if err != nil {
		return nil, err
	}
	_, _, np := p.Dims()
	return startPatterns(p, cert, defaultAdd(np))
}

// defaultAdd is the number of patterns a round adds when WorkingSet.Add is
// 0: max(2, P/8).
func defaultAdd(np int) int { return max(2, np/8) }

func startPatterns(p *solvers.Program, cert *certify.Certifier, add int) ([]int, error) {
	_, _, np := p.Dims()
	// The groups' exact s_j at zero (no steps on the perturbation slopes:
	// at zero every worst case is one).
	cert.Refine = 1
	b, err := cert.Bound(p.NewWeights(), nil)
	if err != nil {
		return nil, err
	}
	ws := worstPatterns(b.Groups, np, nil, np, p.Beta*startFloor)
	if len(ws) < 2 {
		ws = worstPatterns(b.Groups, np, nil, add, math.Inf(-1))
	}
	return ws, nil
}

// WarmWorkingSet returns a first working set (WorkingSetState.Patterns)
// that starts p (with perturbation pert) from w, the solution of an earlier
// program from (with perturbation fromPert) over the same points: another
// β, another sample of patterns, another radius. It holds the patterns of
// p equal to a pattern of w's support (a nonzero group) and p's start
// patterns (StartPatterns) that from does not have at all, since the
// earlier solution says nothing of them. A pattern that from has and its
// solution leaves at zero stays out when the two perturbations are the
// same (the certificate of the first round names it if p needs it); when
// they differ, the groups' cone constraints differ (S_i X v_i ≥ ε‖v_i‖_*),
// the earlier zeros do not carry over, and every start pattern joins
// (measured on notebook 06's explorer: 1 round at every radius, where
// leaving them out took 2–3 rounds when ε fell). The result is sorted; it
// may be empty, and then NewWorkingSet starts from StartPatterns.
func WarmWorkingSet(p *solvers.Program, pert solvers.Perturbation, from *solvers.Program, fromPert solvers.Perturbation, w solvers.Weights) ([]int, error) {
	if err := checkProgram(p); err != nil {
		return nil, err
	}
	if from == nil {
		return nil, errors.New("ipm: WarmWorkingSet: nil earlier program")
	}
	if err := from.Validate(); err != nil {
		return nil, fmt.Errorf("ipm: WarmWorkingSet: the earlier program: %w", err)
	}
	n, _, _ := p.Dims()
	m, _, fp := from.Dims()
	if m != n {
		return nil, fmt.Errorf("ipm: WarmWorkingSet: the programs have %d and %d points", n, m)
	}
	if w.V == nil || w.W == nil {
		return nil, errors.New("ipm: WarmWorkingSet: the earlier solution has no weights")
	}
	if r, _ := w.V.Dims(); r != fp {
		return nil, fmt.Errorf("ipm: WarmWorkingSet: the earlier solution has %d groups v_i, its program %d patterns", r, fp)
	}
	if r, _ := w.W.Dims(); r != fp {
		return nil, fmt.Errorf("ipm: WarmWorkingSet: the earlier solution has %d groups w_i, its program %d patterns", r, fp)
	}
	key := func(d solvers.Pattern) string {
		b := make([]byte, len(d))
		for i, on := range d {
			if on {
				b[i] = 1
			}
		}
		return string(b)
	}
	inSupport := map[string]bool{} // the patterns of from, true for those of the support
	for i, d := range from.D {
		k := key(d)
		inSupport[k] = inSupport[k] || mat.Norm(w.V.RowView(i), 2) > 0 || mat.Norm(w.W.RowView(i), 2) > 0
	}
	same := pert.Eps == fromPert.Eps && (pert.Eps == 0 || pert.Norm.Canonical() == fromPert.Norm.Canonical())
	var ws, candidates []int // candidates: start patterns if StartPatterns says so
	for i, d := range p.D {
		switch on, seen := inSupport[key(d)]; {
		case on:
			ws = append(ws, i)
		case !seen || !same:
			candidates = append(candidates, i)
		}
	}
	if len(candidates) == 0 { // StartPatterns costs a certificate at zero
		return ws, nil
	}
	start, err := StartPatterns(p, pert)
	if err != nil {
		return nil, err
	}
	for _, i := range candidates {
		if _, found := slices.BinarySearch(start, i); found {
			ws = append(ws, i)
		}
	}
	slices.Sort(ws)
	return ws, nil
}

func (st *WorkingSetState) check(np int) error {
	if st.Round < 0 || !(st.Tol >= 0) {
		return fmt.Errorf("ipm: working-set state: round %d, tolerance %v", st.Round, st.Tol)
	}
	for k, i := range st.Patterns {
		if i < 0 || i >= np || (k > 0 && i <= st.Patterns[k-1]) {
			return fmt.Errorf("ipm: working-set state: pattern list %v is not sorted distinct indices below P = %d", st.Patterns, np)
		}
	}
	return nil
}

// warmPatterns returns the patterns with a nonzero group in wt (sorted).
func warmPatterns(p *solvers.Program, wt solvers.Weights) []int {
	_, _, np := p.Dims()
	var out []int
	if r, _ := wt.V.Dims(); r != np {
		return nil
	}
	for i := 0; i < np; i++ {
		if mat.Norm(wt.V.RowView(i), 2) > 0 || mat.Norm(wt.W.RowView(i), 2) > 0 {
			out = append(out, i)
		}
	}
	return out
}

// worstPatterns returns have plus up to add patterns not in have, those of
// the groups with the largest s_j above floor, sorted.
func worstPatterns(s []float64, np int, have []int, add int, floor float64) []int {
	in := make([]bool, np)
	for _, i := range have {
		in[i] = true
	}
	best := make([]float64, np)
	for i := range best {
		best[i] = math.Max(s[i], s[np+i])
	}
	var cand []int
	for i := 0; i < np; i++ {
		if !in[i] && best[i] > floor {
			cand = append(cand, i)
		}
	}
	sort.SliceStable(cand, func(a, b int) bool { return best[cand[a]] > best[cand[b]] })
	out := slices.Clone(have)
	out = append(out, cand[:min(add, len(cand))]...)
	sort.Ints(out)
	return out
}

// Step performs one round.
func (w *WorkingSet) Step(ctx context.Context) (WorkingSetStep, error) {
	start := time.Now()
	p, pert := w.Program, w.Perturbation
	_, _, np := p.Dims()
	ws := w.State.Patterns
	sub := &solvers.Program{X: p.X, Y: p.Y, Loss: p.Loss, Beta: p.Beta, Bias: p.Bias}
	for _, i := range ws {
		sub.D = append(sub.D, p.D[i])
	}
	o := w.Options
	o.Tol = w.State.Tol
	// Certified on the restricted program (by its own certifier) to half
	// the target, the tolerance tightened in place (Options.Gap) rather
	// than in a round that starts again: the groups outside W add nothing
	// to the gap when their dual constraints hold.
	o.Gap, o.Certifier = w.Gap/2, nil
	var res *Result
	var err error
	if pert.Eps > 0 {
		res, err = SolveRobust(ctx, sub, pert, o)
	} else {
		res, err = Solve(ctx, sub, o)
	}
	if err != nil {
		return WorkingSetStep{}, fmt.Errorf("ipm: working set round %d (%d patterns): %w", w.State.Round+1, len(ws), err)
	}
	// Embed the restricted solution and its multipliers in the whole program.
	n, _, _ := p.Dims()
	wt := p.NewWeights()
	// A fresh certifier each round: the round depends on the state alone,
	// so a resumed run takes the same rounds.
	cert, err := NewCertifier(p, pert)
	if err != nil {
		return WorkingSetStep{}, err
	}
	cert.Enough = enoughFor(w.Gap)
	hint := &certify.Hint{Alpha: mat.NewDense(2*np, n, nil)}
	if res.Dual != nil {
		hint.Mu, hint.Lambda, hint.Slopes = res.Dual.Mu, res.Dual.Lambda, res.Dual.Slopes
	}
	m := len(ws)
	for a, i := range ws {
		wt.V.SetRow(i, res.Weights.V.RawRowView(a))
		wt.W.SetRow(i, res.Weights.W.RawRowView(a))
		if res.Dual != nil && res.Dual.Alpha != nil {
			hint.Alpha.SetRow(i, res.Dual.Alpha.RawRowView(a))
			hint.Alpha.SetRow(np+i, res.Dual.Alpha.RawRowView(m+a))
		}
	}
	b, err := cert.Bound(wt, hint)
	if err != nil {
		return WorkingSetStep{}, err
	}
	w.State.Round++
	step := WorkingSetStep{Round: w.State.Round, Size: m, Bound: b, Weights: wt}
	if b.Gap <= w.Gap {
		step.Finished = true
	} else {
		next := worstPatterns(b.Groups, np, ws, w.Add, p.Beta)
		step.Added = len(next) - len(ws)
		if step.Added == 0 {
			if w.State.Tol <= 1e-12 {
				step.Seconds = time.Since(start).Seconds()
				return step, errors.New("ipm: working set: no pattern violates its dual constraint, yet the certified gap stays above the target at the tightest interior-point tolerance 1e-12")
			}
			w.State.Tol = math.Max(w.State.Tol/10, 1e-12)
		}
		w.State.Patterns = next
	}
	step.Seconds = time.Since(start).Seconds()
	return step, nil
}

// Solve runs rounds until the certified gap is reached (or maxRounds, 0
// meaning P + 10, or ctx is done), calling onStep after each, and returns
// the last round.
func (w *WorkingSet) Solve(ctx context.Context, maxRounds int, onStep func(WorkingSetStep)) (WorkingSetStep, error) {
	_, _, np := w.Program.Dims()
	if maxRounds <= 0 {
		maxRounds = np + 10
	}
	var last WorkingSetStep
	for r := 0; r < maxRounds; r++ {
		if err := ctx.Err(); err != nil {
			return last, err
		}
		st, err := w.Step(ctx)
		if err != nil {
			return last, err
		}
		last = st
		if onStep != nil {
			onStep(st)
		}
		if st.Finished {
			return last, nil
		}
	}
	return last, fmt.Errorf("ipm: working set: certified gap %.3g after %d rounds, target %g", last.Bound.Gap, maxRounds, w.Gap)
}
