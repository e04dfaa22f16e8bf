package ipm

import (
	"context"
	"fmt"
	"github.com/convexnn/convexnn/internal/testenv"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/convexnn/convexnn/solvers"
	"github.com/convexnn/convexnn/solvers/internal/testprog"
	"gonum.org/v1/gonum/mat"
)

// TestWorkingSetReachesTheOptimum checks that the working-set method ends
// with a certified gap of at most 1e-6 at the interior-point optimum of the
// whole program (to 1e-6 relative), standard and robust, squared and hinge,
// and that it resumes exactly from a saved state.
func TestWorkingSetReachesTheOptimum(t *testing.T) {
	cases := []struct {
		c    testprog.Instance
		pert solvers.Perturbation
	}{
		{testprog.Instance{N: 60, D: 4, P: 30, Loss: solvers.SquaredLoss, Bias: true, Beta: 0.05, Seed: 31}, solvers.Perturbation{}},
		{testprog.Instance{N: 60, D: 4, P: 30, Loss: solvers.HingeLoss, Bias: true, Beta: 0.01, Seed: 32}, solvers.Perturbation{}},
		{testprog.Instance{N: 30, D: 3, P: 12, Loss: solvers.HingeLoss, Bias: true, Beta: 0.01, Seed: 33}, solvers.Perturbation{Eps: 0.05}},
		{testprog.Instance{N: 30, D: 3, P: 12, Loss: solvers.SquaredLoss, Bias: true, Beta: 0.05, Seed: 34}, solvers.Perturbation{Eps: 0.05, Norm: solvers.L2}},
	}
	if testenv.Race { // all of them run in make test's pass without -race
		cases = []struct {
			c    testprog.Instance
			pert solvers.Perturbation
		}{cases[0], cases[2]}
	}
	for _, tc := range cases {
		t.Run(fmt.Sprintf("%v/%v", tc.c, tc.pert), func(t *testing.T) {
			p := testprog.Random(t, tc.c)
			var full *Result
			var err error
			if tc.pert.Eps > 0 {
				full, err = SolveRobust(context.Background(), p, tc.pert, Options{Tol: 1e-10})
			} else {
				full, err = Solve(context.Background(), p, Options{Tol: 1e-10})
			}
			if err != nil {
				t.Fatal(err)
			}
			// The default start (the patterns whose dual constraints at zero
			// reach startFloor·β) and, for the rounds that add patterns and
			// the exact resume, a start from patterns 0 and 1 that adds two
			// per round.
			def, err := NewWorkingSet(p, tc.pert, 1e-6, 0, Options{}, nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			dl, err := def.Solve(context.Background(), 0, nil)
			if err != nil || dl.Bound.Gap > 1e-6 || dl.Bound.Lower > full.Objective*(1+1e-9) || dl.Bound.Upper < full.Objective*(1-1e-9) {
				t.Fatalf("working set from its default start: %v, certified [%.12g, %.12g] (gap %.2g), full interior point %.12g", err, dl.Bound.Lower, dl.Bound.Upper, dl.Bound.Gap, full.Objective)
			}
			t.Logf("default start: %d rounds, working set %d of %d patterns, certified gap %.2g", dl.Round, dl.Size, tc.c.P, dl.Bound.Gap)
			start := WorkingSetState{Patterns: []int{0, 1}}
			ws, err := NewWorkingSet(p, tc.pert, 1e-6, 2, Options{}, &start, nil)
			if err != nil {
				t.Fatal(err)
			}
			first, err := ws.Step(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			saved := ws.State
			last, err := ws.Solve(context.Background(), 0, nil)
			if err != nil {
				t.Fatal(err)
			}
			if first.Finished {
				last = first
			}
			rel := math.Abs(last.Bound.Objective-full.Objective) / math.Abs(full.Objective)
			if last.Bound.Gap > 1e-6 || rel > 1e-6 || last.Bound.Lower > full.Objective*(1+1e-9) {
				t.Fatalf("working set: objective %.12g, certified [%.12g, %.12g] (gap %.2g), full interior point %.12g", last.Bound.Objective, last.Bound.Lower, last.Bound.Upper, last.Bound.Gap, full.Objective)
			}
			t.Logf("%d rounds, working set %d of %d patterns, certified gap %.2g, objective off the full solve's by %.1e", last.Round, last.Size, tc.c.P, last.Bound.Gap, rel)
			if last.Round < 2 {
				t.Fatalf("started with two patterns: %d round(s), want rounds that add patterns", last.Round)
			}
			again, err := NewWorkingSet(p, tc.pert, 1e-6, 2, Options{}, &saved, nil)
			if err != nil {
				t.Fatal(err)
			}
			resumed := first
			if !first.Finished {
				if resumed, err = again.Solve(context.Background(), 0, nil); err != nil {
					t.Fatal(err)
				}
			}
			if resumed.Round != last.Round || resumed.Bound.Objective != last.Bound.Objective || resumed.Bound.Lower != last.Bound.Lower {
				t.Fatalf("resumed run: round %d objective %v lower %v; uninterrupted: round %d objective %v lower %v", resumed.Round, resumed.Bound.Objective, resumed.Bound.Lower, last.Round, last.Bound.Objective, last.Bound.Lower)
			}
		})
	}
}

// TestWorkingSetBadInput checks the refusals: a gap outside (0, 1), a
// loss the method cannot solve and so cannot certify, a corrupt state.
func TestWorkingSetBadInput(t *testing.T) {
	p := testprog.Random(t, testprog.RobustInstances[0])
	for _, gap := range []float64{0, -1, 1, math.NaN()} {
		if _, err := NewWorkingSet(p, solvers.Perturbation{}, gap, 0, Options{}, nil, nil); err == nil || !strings.Contains(err.Error(), "certified gap") {
			t.Errorf("gap %v: %v", gap, err)
		}
	}
	bce := *p
	bce.Loss = solvers.BCELoss
	bce.Y = make([]float64, len(p.Y))
	if _, err := NewWorkingSet(&bce, solvers.Perturbation{}, 1e-6, 0, Options{}, nil, nil); err == nil || !strings.Contains(err.Error(), "use ADMM") {
		t.Errorf("BCE: %v", err)
	}
	if _, err := NewWorkingSet(p, solvers.Perturbation{}, 1e-6, 0, Options{}, &WorkingSetState{Patterns: []int{3, 1}}, nil); err == nil || !strings.Contains(err.Error(), "not sorted") {
		t.Errorf("unsorted state: %v", err)
	}
}

// TestMethodForChoosesTheWorkingSet checks MethodFor's rule for the working
// set: large robust squared and hinge programs with the ℓ∞ set, not the ℓ₂
// set, small programs, standard ones or the smooth losses.
func TestMethodForChoosesTheWorkingSet(t *testing.T) {
	inf := solvers.Perturbation{Eps: 0.02, Norm: solvers.LInf}
	for k, c := range []struct {
		c    testprog.Instance
		pert solvers.Perturbation
		want Method
	}{
		{testprog.Instance{N: 2000, D: 50, P: 48, Loss: solvers.HingeLoss, Bias: true, Beta: 1e-4, Seed: 1}, inf, PatternWorkingSet},
		{testprog.Instance{N: 2000, D: 50, P: 48, Loss: solvers.SquaredLoss, Bias: true, Beta: 1e-3, Seed: 2}, inf, PatternWorkingSet},
		{testprog.Instance{N: 2000, D: 50, P: 48, Loss: solvers.HingeLoss, Bias: true, Beta: 1e-4, Seed: 1}, solvers.Perturbation{Eps: 0.1, Norm: solvers.L2}, InteriorPoint},
		{testprog.Instance{N: 2000, D: 50, P: 48, Loss: solvers.HingeLoss, Bias: true, Beta: 1e-4, Seed: 1}, solvers.Perturbation{}, InteriorPoint},
		{testprog.Instance{N: 2000, D: 50, P: 48, Loss: solvers.HingeLoss, Bias: true, Beta: 1e-4, Seed: 1}, inf, InteriorPoint}, // as logistic
		{testprog.Instance{N: 200, D: 10, P: 60, Loss: solvers.HingeLoss, Bias: true, Beta: 1e-3, Seed: 3}, inf, InteriorPoint},
	} {
		p := testprog.Random(t, c.c)
		if k == 4 {
			p.Loss = solvers.LogisticLoss // the labels are ±1
		}
		if got := MethodFor(p, c.pert); got != c.want {
			t.Errorf("%v %v: method %d, want %d", c.c, c.pert, got, c.want)
		}
	}
}

// TestWarmWorkingSet checks the rule of WarmWorkingSet on a program whose
// earlier program shares three of its patterns (two in the earlier
// solution's support, one at zero) and has one of its own: the first
// working set is the two shared support patterns and the start patterns
// the earlier program lacks, or, from another radius, all start patterns;
// a mismatched solution or program is refused.
func TestWarmWorkingSet(t *testing.T) {
	p := testprog.Random(t, testprog.Instance{N: 30, D: 3, P: 12, Loss: solvers.HingeLoss, Bias: true, Beta: 0.001, Seed: 35})
	n, d, np := p.Dims()
	own := make(solvers.Pattern, n)
	for k := range own {
		own[k] = k%3 == 0
	}
	from := &solvers.Program{X: p.X, Y: p.Y, Loss: p.Loss, Beta: p.Beta, Bias: p.Bias, D: solvers.Patterns{p.D[5], own, p.D[2], p.D[7]}}
	w := from.NewWeights()
	w.V.Set(0, 0, 1) // p's pattern 5
	w.W.Set(3, 1, 1) // p's pattern 7; p's pattern 2 and the own pattern stay at zero
	got, err := WarmWorkingSet(p, solvers.Perturbation{}, from, solvers.Perturbation{}, w)
	if err != nil {
		t.Fatal(err)
	}
	start, err := StartPatterns(p, solvers.Perturbation{})
	if err != nil {
		t.Fatal(err)
	}
	want := []int{5, 7}
	for _, i := range start {
		if i != 2 && i != 5 && i != 7 {
			want = append(want, i)
		}
	}
	slices.Sort(want)
	if !slices.Equal(got, want) || len(start) == 0 {
		t.Errorf("warm working set %v, want %v (start patterns %v)", got, want, start)
	}
	// At another radius every start pattern joins the support.
	robust := solvers.Perturbation{Eps: 0.05, Norm: solvers.LInf}
	if start, err = StartPatterns(p, robust); err != nil {
		t.Fatal(err)
	}
	want = []int{5, 7}
	for _, i := range start {
		if i != 5 && i != 7 {
			want = append(want, i)
		}
	}
	slices.Sort(want)
	if got, err = WarmWorkingSet(p, robust, from, solvers.Perturbation{Eps: 0.02, Norm: solvers.LInf}, w); err != nil || !slices.Equal(got, want) || !slices.Contains(start, 2) {
		t.Errorf("other radius: warm working set %v (%v), want %v (start patterns %v, which should hold pattern 2)", got, err, want, start)
	}
	for _, bad := range []struct {
		from *solvers.Program
		w    solvers.Weights
		msg  string
	}{
		{nil, w, "nil earlier program"},
		{&solvers.Program{X: p.X.Slice(0, n-1, 0, d).(*mat.Dense), Y: p.Y[:n-1], Loss: p.Loss, Beta: p.Beta, D: solvers.Patterns{own[:n-1]}}, w, "points"},
		{from, solvers.Weights{V: mat.NewDense(np, d, nil), W: mat.NewDense(np, d, nil)}, "groups"},
		{from, solvers.Weights{}, "no weights"},
		{from, solvers.Weights{V: w.V, W: mat.NewDense(np, d, nil)}, "groups w_i"},
		{&solvers.Program{X: p.X, Y: p.Y, Loss: p.Loss, Beta: -1, D: from.D}, w, "earlier program"},
	} {
		if _, err := WarmWorkingSet(p, solvers.Perturbation{}, bad.from, solvers.Perturbation{}, bad.w); err == nil || !strings.Contains(err.Error(), bad.msg) {
			t.Errorf("%s: error %v", bad.msg, err)
		}
	}
}
