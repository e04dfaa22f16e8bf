package paper

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/convexnn/convexnn/cvx"
	"github.com/convexnn/convexnn/internal/testenv"
)

// heapSamplerRaced is why the tests of the paper's runs that start external
// processes skip under -race: their one goroutine, the heap sampler, runs
// in TestReproduceSmall under the race detector.
const heapSamplerRaced = "numerical, with external processes: its one goroutine (the heap sampler) runs in TestReproduceSmall under -race"

// TestReproduceComplexitySmall runs `reproduce -size small
// fig-admm-complexity` end to end and checks result.json (every point of
// both sweeps, positive times, accuracies in (0.5, 1], finite slopes) and
// report.html (four charts, no network address).
func TestReproduceComplexitySmall(t *testing.T) {
	testenv.SkipUnderRace(t, heapSamplerRaced)
	const name = "fig-admm-complexity"
	e, err := Lookup(name)
	if err != nil {
		t.Fatal(err)
	}
	out, stdout := reproduceSmall(t, e)
	dir := filepath.Join(out, name)
	raw, err := os.ReadFile(filepath.Join(dir, "result.json"))
	if err != nil {
		t.Fatal(err)
	}
	var res complexityResult
	if err := json.Unmarshal(raw, &res); err != nil {
		t.Fatalf("result.json does not parse: %v", err)
	}
	want := complexitySetup(SizeSmall, 1)
	if res.Experiment != name || res.Size != "small" || res.Settings.Runs != 1 || res.TrainImages == 0 || res.ValImages == 0 ||
		res.Dim != 100 || res.Host.CPUs < 1 || res.WallSeconds <= 0 || res.PeakRSSBytes <= 0 {
		t.Errorf("result.json header: %+v", res)
	}
	if len(res.Paper.Rows) != len(complexityClaims) || len(res.Measured) != len(complexityClaims) {
		t.Errorf("%d claims of the paper, %d measured; want %d", len(res.Paper.Rows), len(res.Measured), len(complexityClaims))
	}
	if len(res.Sweeps) != 2 || res.Partial {
		t.Fatalf("%d sweeps (partial %v), want 2, final", len(res.Sweeps), res.Partial)
	}
	grids := []struct {
		variable string
		n, ps    []int
	}{
		{"n", want.SweepN, complexityRepeat(want.PsOfSweepN, len(want.SweepN))},
		{"P_s", complexityRepeat(want.NOfSweepPs, len(want.SweepPs)), want.SweepPs},
	}
	for k, g := range grids {
		sw := res.Sweeps[k]
		if sw.Variable != g.variable || len(sw.Points) != len(g.n) {
			t.Errorf("sweep %d: variable %q with %d points, want %q with %d", k, sw.Variable, len(sw.Points), g.variable, len(g.n))
			continue
		}
		for i, p := range sw.Points {
			if p.N != g.n[i] || p.Ps != g.ps[i] || p.Runs != 1 || len(p.Trials) != 1 {
				t.Errorf("sweep %s, point %d: n = %d, P_s = %d, %d runs (%d trials); want n = %d, P_s = %d, 1 run",
					sw.Variable, i, p.N, p.Ps, p.Runs, len(p.Trials), g.n[i], g.ps[i])
			}
			for _, v := range []float64{p.ADMMSeconds, p.SetupSeconds, p.IterationSeconds, p.PerIterationSeconds, p.IPMSeconds} {
				if !(v > 0) || math.IsInf(v, 0) {
					t.Errorf("sweep %s, n = %d, P_s = %d: a time is %v: %+v", sw.Variable, p.N, p.Ps, v, p)
					break
				}
			}
			if math.Abs(p.ADMMSeconds-(p.SetupSeconds+p.IterationSeconds)) > 1e-9*p.ADMMSeconds {
				t.Errorf("sweep %s, n = %d, P_s = %d: ADMM time %v is not set-up %v + iterations %v", sw.Variable, p.N, p.Ps, p.ADMMSeconds, p.SetupSeconds, p.IterationSeconds)
			}
			for _, a := range []float64{p.ADMMAccuracy, p.IPMAccuracy} {
				if !(a > 0.5 && a <= 1) {
					t.Errorf("sweep %s, n = %d, P_s = %d: accuracy %v outside (0.5, 1]", sw.Variable, p.N, p.Ps, a)
				}
			}
			tr := p.Trials[0]
			if tr.Patterns < 1 || tr.Patterns > p.Ps || p.Patterns != tr.Patterns || len(p.Routes) != 1 || (tr.Route != "direct" && tr.Route != "woodbury") {
				t.Errorf("sweep %s, n = %d, P_s = %d: %d patterns (point %d), route %q (point %v)", sw.Variable, p.N, p.Ps, tr.Patterns, p.Patterns, tr.Route, p.Routes)
			}
			if tr.ADMMIterations != want.ADMMIter || tr.IPMIterations < 1 || tr.IPMStatus != "optimal" || tr.IPMCapped || p.PeakRSSBytes <= 0 {
				t.Errorf("sweep %s, n = %d, P_s = %d: trial %+v, peak RSS %d", sw.Variable, p.N, p.Ps, tr, p.PeakRSSBytes)
			}
			// The IPM solves the program ADMM runs 6 iterations on: its
			// l^{u,α} is at most ADMM's, up to the IPM's accuracy.
			if p.IPMObjective > p.ADMMObjective*(1+1e-6) {
				t.Errorf("sweep %s, n = %d, P_s = %d: IPM objective %v above ADMM's %v", sw.Variable, p.N, p.Ps, p.IPMObjective, p.ADMMObjective)
			}
		}
		if len(sw.Fits) == 0 {
			t.Errorf("sweep %s: no slope fits", sw.Variable)
		}
		for _, f := range sw.Fits {
			if f.Slope == nil || math.IsNaN(*f.Slope) || math.IsInf(*f.Slope, 0) || f.Points < 2 || f.Paper == "" {
				t.Errorf("sweep %s: fit %+v", sw.Variable, f)
			}
		}
	}

	page, err := os.ReadFile(filepath.Join(dir, "report.html"))
	if err != nil {
		t.Fatal(err)
	}
	h := string(page)
	for _, s := range []string{"<table>", "The paper&#39;s claims", "Log-log slopes", "Sweep over n", "Sweep over P_s"} {
		if !strings.Contains(h, s) {
			t.Errorf("report.html lacks %q", s)
		}
	}
	if got := strings.Count(h, `class="convexnn-chart"`); got != 4 {
		t.Errorf("report.html has %d charts, want 4", got)
	}
	if got := strings.Count(h, "data:image/png;base64,"); got != 4 {
		t.Errorf("report.html has %d static chart images, want 4", got)
	}
	if _, warn := reportAssets(); warn == "" {
		if u := regexp.MustCompile(`(?i)(https?:)?//[a-z0-9.-]+\.[a-z]{2,}/`).FindString(h); u != "" {
			t.Errorf("report.html references the network: %q", u)
		}
	} else {
		t.Logf("no local echarts (%s): the offline check is skipped", warn)
	}
	if ents, _ := filepath.Glob(filepath.Join(dir, "state-*")); len(ents) != 0 {
		t.Errorf("run state left behind: %v", ents)
	}
	for _, s := range []string{"== " + name, "-- n = 100, P_s = 8", "log-log slopes"} {
		if !strings.Contains(stdout.String(), s) {
			t.Errorf("no progress line %q in\n%s", s, stdout.String())
		}
	}
}

func complexityRepeat(v, n int) []int {
	s := make([]int, n)
	for k := range s {
		s[k] = v
	}
	return s
}

// TestComplexityFits checks the slope fit: exact on a power law, the points
// below the floor and those with capped IPM runs left out, and no slope from
// fewer than two points.
func TestComplexityFits(t *testing.T) {
	if b, ok := logSlope([]float64{10, 100, 1000}, []float64{3, 300, 30000}); !ok || math.Abs(b-2) > 1e-12 {
		t.Errorf("logSlope of t = 3·(x/10)²: %v, %v; want 2", b, ok)
	}
	if _, ok := logSlope([]float64{5}, []float64{1}); ok {
		t.Error("logSlope of one point gave a slope")
	}
	if _, ok := logSlope([]float64{5, 5}, []float64{1, 2}); ok {
		t.Error("logSlope of one distinct x gave a slope")
	}
	// ADMM time 1e-3·n (the first point below the 10 ms floor), IPM time
	// 1e-4·n², capped at the last point.
	var sw complexitySweep
	sw.Variable = "n"
	for _, n := range []int{5, 100, 200, 400} {
		x := float64(n)
		p := complexityPoint{N: n, Ps: 8, ADMMSeconds: 1e-3 * x, SetupSeconds: 1e-3 * x / 2, IterationSeconds: 1e-3 * x / 60,
			IPMSeconds: 1e-4 * x * x, ADMMCPUSeconds: 1e-3 * x, IPMCPUSeconds: 1e-4 * x * x}
		if n == 400 {
			p.IPMCapped = 1
		}
		sw.Points = append(sw.Points, p)
	}
	fits := complexityFits(sw, 0.01)
	check := func(q string, slope float64, points int, note string) {
		t.Helper()
		f := fitOf(complexitySweep{Fits: fits}, q)
		if f.Slope == nil || math.Abs(*f.Slope-slope) > 1e-9 || f.Points != points || !strings.Contains(f.Note, note) {
			t.Errorf("%s: fit %+v (slope %v), want slope %v over %d points, note %q", q, f, complexitySlopeValue(f.Slope), slope, points, note)
		}
	}
	check("ADMM (set-up + iterations)", 1, 3, "1 point(s) below")
	check("ADMM iterations", 1, 4, "fewer than two points reach")
	check(`IPM ("CVX")`, 2, 2, "budget-capped")
}

func complexitySlopeValue(p *float64) float64 {
	if p == nil {
		return math.NaN()
	}
	return *p
}

// TestComplexityPaperGrid runs the paper's grids with
// $CONVEXNN_COMPLEXITY_RUNS runs per point (default 1; `reproduce -size paper`
// runs five unless -runs says more) into $CONVEXNN_COMPLEXITY_OUT. It is a
// measurement of many minutes, not a check, and runs only when
// CONVEXNN_COMPLEXITY_OUT is set.
func TestComplexityPaperGrid(t *testing.T) {
	out := os.Getenv("CONVEXNN_COMPLEXITY_OUT")
	if out == "" {
		t.Skip("set CONVEXNN_COMPLEXITY_OUT to run the paper's grids")
	}
	if os.Getenv("CONVEXNN_DATA") == "" {
		t.Setenv("CONVEXNN_DATA", testenv.SharedData(t))
	}
	s := complexitySetup(SizePaper, 1)
	s.Runs = 1
	if r := os.Getenv("CONVEXNN_COMPLEXITY_RUNS"); r != "" {
		n, err := strconv.Atoi(r)
		if err != nil || n < 1 {
			t.Fatalf("CONVEXNN_COMPLEXITY_RUNS=%q: want a positive integer", r)
		}
		s.Runs = n
	}
	if err := runComplexitySettings(context.Background(), SizePaper, s, out, os.Stdout); err != nil {
		t.Fatal(err)
	}
}

// TestReproduceComplexityInterruptedKeepsFinishedPoints interrupts the sweep
// when its second point starts: result.json must hold the first, partial.
func TestReproduceComplexityInterruptedKeepsFinishedPoints(t *testing.T) {
	t.Setenv("CONVEXNN_DATA", testenv.SharedData(t))
	out := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	w := &cancelOn{after: "-- n = ", times: 2, cancel: cancel}
	err := reproduceNamed(ctx, t, w, out, 1, "fig-admm-complexity")
	if !errors.Is(err, context.Canceled) && !errors.Is(err, cvx.ErrInterrupted) {
		t.Fatalf("interrupted sweep returned %v\n%s", err, w.buf.String())
	}
	raw, err := os.ReadFile(filepath.Join(out, "fig-admm-complexity", "result.json"))
	if err != nil {
		t.Fatalf("no result.json after the interruption: %v", err)
	}
	var res complexityResult
	if err := json.Unmarshal(raw, &res); err != nil {
		t.Fatalf("result.json does not parse: %v", err)
	}
	if !res.Partial || len(res.Sweeps) != 2 || len(res.Sweeps[0].Points) != 1 || len(res.Sweeps[1].Points) != 0 {
		t.Fatalf("partial sweep: partial %v, sweeps %+v", res.Partial, res.Sweeps)
	}
}
