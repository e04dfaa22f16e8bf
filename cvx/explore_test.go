package cvx

import (
	"errors"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/convexnn/convexnn/data"
	"github.com/convexnn/convexnn/internal/testenv"
	"github.com/convexnn/convexnn/plots"
	"github.com/convexnn/convexnn/solvers"
	"github.com/convexnn/convexnn/solvers/scp"
	"gonum.org/v1/gonum/mat"
)

// TestExplorerOutsideNotebook: outside a notebook an explorer computes its
// start figure once and returns; bad settings and a failing figure are
// errors; ExploreRegions and ExploreSCP refuse data that is not 2-D and
// bad values. (The sliders are tested in the real classic Notebook:
// notebooks.TestExplorerInLiveClassicNotebook.)
func TestExplorerOutsideNotebook(t *testing.T) {
	x, y := disk(t, 30, 1)
	calls := 0
	figure := func(at []int) (*plots.Figure, string, error) {
		calls++
		if !slices.Equal(at, []int{1, 2}) {
			t.Errorf("figure at %v, want the start [1 2]", at)
		}
		f, err := ScatterFigure(x, y)
		return f, "ok", err
	}
	e := &Explorer{Sliders: []Slider{{Label: "β", Values: []float64{1, 2, 3}, Start: 1}, {Label: "P_s", Values: []float64{4, 8, 16}, Start: 2}}, Figure: figure}
	res, err := e.Run()
	if err != nil {
		t.Fatal(err)
	}
	if calls != 1 || len(res.Computed) != 1 || !slices.Equal(res.Computed[0], []int{1, 2}) || !slices.Equal(res.Last, []int{1, 2}) || res.Live {
		t.Errorf("calls %d, explored %+v", calls, res)
	}
	if got := e.describe([]int{1, 2}); got != "β = 2, P_s = 16" {
		t.Errorf("described as %q", got)
	}
	for _, bad := range []*Explorer{
		{Figure: figure},
		{Sliders: []Slider{{Label: "β"}}, Figure: figure},
		{Sliders: []Slider{{Label: "β", Values: []float64{1}, Start: 1}}, Figure: figure},
		{Sliders: []Slider{{Label: "β", Values: []float64{1}}}},
		{Sliders: []Slider{{Values: make([]float64, 100)}, {Values: make([]float64, 100)}}, Figure: figure},
	} {
		if _, err := bad.Run(); err == nil {
			t.Errorf("%+v: no error", bad)
		}
	}
	boom := errors.New("boom")
	if _, err := (&Explorer{Sliders: []Slider{{Values: []float64{1}}}, Figure: func([]int) (*plots.Figure, string, error) { return nil, "", boom }}).Run(); !errors.Is(err, boom) {
		t.Errorf("a failing figure gave %v", err)
	}
	if res, err := ExploreRegions(x, y, []float64{1e-3, 1e-2, 1e-1}, []int{4, 8}, 1); err != nil || len(res.Computed) != 1 || !slices.Equal(res.Computed[0], []int{1, 1}) {
		t.Errorf("ExploreRegions: %+v, %v", res, err)
	}
	adv := AdvTrain{Directions: 10, PerDirection: 4, Patterns: 10, Seed: 1}
	if res, err := ExploreAdversarial(x, y, 1e-3, []float64{0.02, 0.05, 0.1}, adv, nil); err != nil || len(res.Computed) != 1 || !slices.Equal(res.Computed[0], []int{1}) {
		t.Errorf("ExploreAdversarial: %+v, %v", res, err)
	}
	if res, err := ExploreSCP(x, y, 1e-3, []int{5, 20, 80}, 1); err != nil || len(res.Computed) != 1 || !slices.Equal(res.Computed[0], []int{1}) {
		t.Errorf("ExploreSCP: %+v, %v", res, err)
	}
	for _, c := range []struct {
		run  func() error
		want string
	}{
		{func() error {
			_, err := ExploreRegions(mat.NewDense(4, 3, nil), []float64{1, -1, 1, -1}, []float64{1e-3}, []int{8}, 1)
			return err
		}, "2-D"},
		{func() error { _, err := ExploreRegions(x, y, []float64{1e-3, 0}, []int{8}, 1); return err }, "β[1] = 0"},
		{func() error { _, err := ExploreRegions(x, y, []float64{1e-3}, []int{8, 0}, 1); return err }, "P_s[1] = 0"},
		{func() error { _, err := ExploreSCP(x, y, 0, []int{8}, 1); return err }, "β = 0"},
		{func() error { _, err := ExploreAdversarial(x, y, -1, []float64{0.1}, adv, nil); return err }, "β = -1"},
		{func() error {
			_, err := ExploreAdversarial(x, y, 1e-3, []float64{0.1, math.NaN()}, adv, nil)
			return err
		}, "ε[1] = NaN"},
		{func() error {
			_, err := ExploreAdversarial(x, y, 1e-3, []float64{0.1}, AdvTrain{Directions: 2, PerDirection: 2, Patterns: 10}, nil)
			return err
		}, "cannot give 10 patterns"},
		{func() error { _, err := ExploreSCP(x, y, 1e-3, []int{8, -1}, 1); return err }, "N[1] = -1"},
		{func() error { _, err := ExploreSCP(x, y[:5], 1e-3, []int{8}, 1); return err }, "5 labels"},
	} {
		if err := c.run(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("error %v, want %q", err, c.want)
		}
	}
}

// TestExplorerGrid: positions are numbered one to one, and the background
// order visits every other position once, nearest in slider steps first.
func TestExplorerGrid(t *testing.T) {
	g := positions{3, 4, 2}
	for i := 0; i < 24; i++ {
		if j := g.index(g.at(i)); j != i {
			t.Fatalf("position %d → %v → %d", i, g.at(i), j)
		}
	}
	if g.index([]int{3, 0, 0}) != -1 || g.index([]int{0, 0}) != -1 || g.index([]int{0, -1, 0}) != -1 {
		t.Error("a position off the grid got a number")
	}
	start := g.index([]int{1, 2, 0})
	order := g.byDistance(start)
	if len(order) != 23 || slices.Contains(order, start) {
		t.Fatalf("order %v", order)
	}
	seen := map[int]bool{}
	last := 0
	for _, i := range order {
		at := g.at(i)
		d := max(at[0]-1, 1-at[0]) + max(at[1]-2, 2-at[1]) + at[2]
		if seen[i] || d < last {
			t.Fatalf("position %v (distance %d) after distance %d, or twice", at, d, last)
		}
		seen[i], last = true, d
	}
}

// TestSCPWarmStartReachesTheSameOptimum: solves warm-started from a
// smaller and from a larger sample reach the optimum of a cold solve, each
// certified by its duality gap.
func TestSCPWarmStartReachesTheSameOptimum(t *testing.T) {
	x, y := disk(t, 60, 3)
	u, err := scp.SampleSphere(3, 200, 1)
	if err != nil {
		t.Fatal(err)
	}
	h, err := scp.ReLUFeatures(solvers.WithOnes(x), u)
	if err != nil {
		t.Fatal(err)
	}
	w := &scpWarm{h: h, y: y, beta: 1e-2, solved: map[int][]float64{}}
	for _, c := range []struct{ n, from int }{{20, 0}, {200, 20}, {50, 20}, {120, 50}} {
		warm, from, err := w.solve(c.n)
		if err != nil {
			t.Fatal(err)
		}
		if from != c.from {
			t.Errorf("N = %d started from %d, want the nearest solved %d", c.n, from, c.from)
		}
		cold, _, err := (&scpWarm{h: h, y: y, beta: 1e-2, solved: map[int][]float64{}}).solve(c.n)
		if err != nil {
			t.Fatal(err)
		}
		if warm.Gap > 1e-9*warm.Objective || warm.Objective-warm.Gap > cold.Objective+1e-12 || cold.Objective-cold.Gap > warm.Objective+1e-12 {
			t.Errorf("N = %d: warm %.12g (gap %.2g), cold %.12g (gap %.2g)", c.n, warm.Objective, warm.Gap, cold.Objective, cold.Gap)
		}
		t.Logf("N = %d: %d steps warm, %d cold", c.n, warm.Steps, cold.Steps)
	}
}

// TestRegionsWarmStartReachesTheSameOptimum: ExploreRegions' solves,
// warm-started from the nearest position solved before (a β move both
// ways, fewer and more patterns, a diagonal move), each start chosen as
// documented, reach the interior-point optimum of a cold solve: the
// certified intervals [lower, upper] of the two meet and the warm gap is at
// most warmGap.
func TestRegionsWarmStartReachesTheSameOptimum(t *testing.T) {
	x, y := disk(t, 40, 5)
	betas := []float64{1e-4, 1e-3, 1e-2, 1e-1}
	patterns := []int{4, 8, 16, 32}
	w := &warmSolves{rank: regionsRank}
	for _, c := range []struct{ at, from []int }{
		{[]int{2, 2}, nil},
		{[]int{1, 2}, []int{2, 2}}, // β down
		{[]int{3, 2}, []int{2, 2}}, // β up: same distance as (1, 2), the smaller β index first
		{[]int{1, 3}, []int{1, 2}}, // more patterns
		{[]int{0, 1}, []int{1, 2}}, // fewer patterns and β down, two steps: (1, 2) before (1, 3)
		{[]int{0, 0}, []int{0, 1}},
	} {
		prob := Classify(x, y).Hinge().Beta(betas[c.at[0]]).Bias().SamplePatterns(patterns[c.at[1]], 1)
		prog, err := prob.Convex()
		if err != nil {
			t.Fatal(err)
		}
		warm, from, err := w.solve(c.at, prog, solvers.Perturbation{})
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(from, c.from) {
			t.Errorf("%v started from %v, want %v", c.at, from, c.from)
		}
		cold, err := Solve(prob, IPM{})
		if err != nil {
			t.Fatal(err)
		}
		if warm.Gap > warmGap || warm.Lower > cold.Upper || cold.Lower > warm.Upper {
			t.Errorf("%v: warm [%.12g, %.12g] (gap %.2g), cold [%.12g, %.12g]", c.at, warm.Lower, warm.Upper, warm.Gap, cold.Lower, cold.Upper)
		}
		t.Logf("%v from %v: %d rounds, %.1f ms warm, %.1f ms cold; objective %.10g", c.at, from, warm.Iterations, 1e3*warm.Seconds, 1e3*cold.Seconds, warm.Objective)
	}
}

// TestAdversarialWarmStartReachesTheSameOptimum: ExploreAdversarial's
// robust solves, warm-started from the nearest radius solved before (whose
// sample of patterns differs), reach the interior-point optimum of a cold
// solve: the certified intervals meet and the warm gap is at most warmGap,
// or, on fig. 2D-toy's data with 20 patterns at ε = 0.02, where the
// working set's certificate stalls above it, the solve still returns its
// certified point, marked "gap not reached".
func TestAdversarialWarmStartReachesTheSameOptimum(t *testing.T) {
	dx, dy := disk(t, 30, 6)
	tx, ty := data.Toy2D(1)
	for _, c := range []struct {
		x     *mat.Dense
		y     []float64
		beta  float64
		radii []float64
		a     AdvTrain
		moves []struct{ at, from []int }
		// stalls marks the instance whose certificate stalls (5 rounds at
		// ε = 0.02): make test runs it in its pass without -race.
		stalls bool
	}{
		{dx, dy, 1e-3, []float64{0.02, 0.05, 0.08}, AdvTrain{Directions: 16, PerDirection: 4, Patterns: 16, Seed: 2},
			[]struct{ at, from []int }{{[]int{1}, nil}, {[]int{2}, []int{1}}, {[]int{0}, []int{1}}}, false},
		{tx, ty, 1e-6, []float64{0.02, 0.05, 0.08}, AdvTrain{Directions: 20, PerDirection: 8, Patterns: 20, Seed: 1},
			[]struct{ at, from []int }{{[]int{2}, nil}, {[]int{1}, []int{2}}, {[]int{0}, []int{1}}}, true},
	} {
		if c.stalls && testenv.Race {
			continue
		}
		w := &warmSolves{rank: radiusRank}
		for _, m := range c.moves {
			eps := c.radii[m.at[0]]
			prob := Classify(c.x, c.y).Hinge().Beta(c.beta).Bias().Robust(eps, LInf).RobustPatterns(c.a)
			prog, err := prob.Convex()
			if err != nil {
				t.Fatal(err)
			}
			warm, from, err := w.solve(m.at, prog, prob.Perturbation())
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(from, m.from) {
				t.Errorf("%v started from %v, want %v", m.at, from, m.from)
			}
			// The interior-point method may end inaccurate on the stalling
			// instance (pure-Go BLAS); its bounds are valid all the same.
			cold, err := Solve(prob, IPM{})
			if cold == nil {
				t.Fatal(err)
			}
			if warm.Gap > warmGap && warm.Status != "gap not reached" || warm.Lower > cold.Upper || cold.Lower > warm.Upper {
				t.Errorf("ε = %g: warm [%.12g, %.12g] (gap %.2g, %s), cold [%.12g, %.12g]", eps, warm.Lower, warm.Upper, warm.Gap, warm.Status, cold.Lower, cold.Upper)
			}
			t.Logf("ε = %g from %v: %d rounds, %.1f ms warm (gap %.1e, %s), %.1f ms cold (gap %.1e); robust objective %.10g",
				eps, from, warm.Iterations, 1e3*warm.Seconds, warm.Gap, warm.Status, 1e3*cold.Seconds, cold.Gap, warm.Objective)
		}
	}
}
