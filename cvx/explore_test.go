package cvx

import (
	"errors"
	"slices"
	"strings"
	"testing"

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
