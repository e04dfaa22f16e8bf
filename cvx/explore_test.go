package cvx

import (
	"errors"
	"strings"
	"testing"

	"github.com/convexnn/convexnn/plots"
	"gonum.org/v1/gonum/mat"
)

// TestExplorerOutsideNotebook: outside a notebook an explorer computes its
// start figure once and returns; bad settings and a failing figure are
// errors; ExploreRegions refuses data that is not 2-D and β ≤ 0. (The
// slider is tested in the real classic Notebook:
// notebooks.TestExplorerInLiveClassicNotebook.)
func TestExplorerOutsideNotebook(t *testing.T) {
	x, y := disk(t, 30, 1)
	calls := 0
	e := &Explorer{Label: "β", Values: []float64{1, 2, 3}, Start: 1, Figure: func(i int, v float64) (*plots.Figure, string, error) {
		calls++
		if i != 1 || v != 2 {
			t.Errorf("figure at %d (%v), want the start 1 (2)", i, v)
		}
		f, err := ScatterFigure(x, y)
		return f, "ok", err
	}}
	res, err := e.Run()
	if err != nil {
		t.Fatal(err)
	}
	if calls != 1 || len(res.Computed) != 1 || res.Computed[0] != 1 || res.Last != 1 || res.Live {
		t.Errorf("calls %d, explored %+v", calls, res)
	}
	for _, bad := range []*Explorer{
		{Values: nil, Figure: e.Figure},
		{Values: []float64{1}, Start: 1, Figure: e.Figure},
		{Values: []float64{1}},
	} {
		if _, err := bad.Run(); err == nil {
			t.Errorf("%+v: no error", bad)
		}
	}
	boom := errors.New("boom")
	if _, err := (&Explorer{Values: []float64{1}, Figure: func(int, float64) (*plots.Figure, string, error) { return nil, "", boom }}).Run(); !errors.Is(err, boom) {
		t.Errorf("a failing figure gave %v", err)
	}
	if res, err := ExploreRegions(x, y, []float64{1e-3, 1e-2, 1e-1}, 8, 1); err != nil || len(res.Computed) != 1 || res.Computed[0] != 1 {
		t.Errorf("ExploreRegions: %+v, %v", res, err)
	}
	if _, err := ExploreRegions(mat.NewDense(4, 3, nil), []float64{1, -1, 1, -1}, []float64{1e-3}, 8, 1); err == nil || !strings.Contains(err.Error(), "2-D") {
		t.Errorf("3-D data: %v", err)
	}
	if _, err := ExploreRegions(x, y, []float64{1e-3, 0}, 8, 1); err == nil || !strings.Contains(err.Error(), "β") {
		t.Errorf("β = 0: %v", err)
	}
}
