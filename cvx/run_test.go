package cvx

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/convexnn/convexnn/data"
	"gonum.org/v1/gonum/mat"
)

func testProblem(t testing.TB, n, neurons int) *Problem {
	t.Helper()
	x, y := disk(t, n, 3)
	return Classify(x, y).Beta(1e-3).Bias().SampleNeurons(neurons, 2)
}

func TestResumeContinuesExactly(t *testing.T) {
	t.Setenv("CONVEXNN_STATE_DIR", t.TempDir())
	whole := Start("whole", testProblem(t, 60, 80), FISTA{Tol: 1e-300})
	whole.Quiet = true
	if err := whole.Iterate(40); err != nil {
		t.Fatal(err)
	}
	a := Start("split", testProblem(t, 60, 80), FISTA{Tol: 1e-300})
	a.Quiet = true
	if err := a.Iterate(15); err != nil {
		t.Fatal(err)
	}
	b := Resume("split", testProblem(t, 60, 80), FISTA{Tol: 1e-300})
	b.Quiet = true
	if b.Err() != nil {
		t.Fatal(b.Err())
	}
	if b.ResumedAt() != 15 || b.Iter() != 15 || len(b.History()) != 15 {
		t.Fatalf("resumed at %d with iteration %d and %d history points, want 15", b.ResumedAt(), b.Iter(), len(b.History()))
	}
	if err := b.Iterate(25); err != nil {
		t.Fatal(err)
	}
	if b.Iter() != 40 || b.Objective() != whole.Objective() {
		t.Fatalf("split run: iteration %d objective %v; whole run: iteration %d objective %v", b.Iter(), b.Objective(), whole.Iter(), whole.Objective())
	}
	for i, p := range b.History() {
		if p.Iter != i+1 || p.Objective != whole.History()[i].Objective {
			t.Fatalf("history point %d differs: %+v vs %+v", i, p, whole.History()[i])
		}
	}
	// Start discards the saved run.
	c := Start("split", testProblem(t, 60, 80), FISTA{})
	if c.Iter() != 0 || c.ResumedAt() != 0 {
		t.Fatalf("Start kept the old run: iteration %d", c.Iter())
	}
	if ents, _ := os.ReadDir(StateDir()); len(ents) != 1 {
		var names []string
		for _, e := range ents {
			names = append(names, e.Name())
		}
		t.Fatalf("state directory holds %v, want only whole.state (no temporary files)", names)
	}
}

func TestResumeRefusesOtherProblemVersionAndCorruptState(t *testing.T) {
	t.Setenv("CONVEXNN_STATE_DIR", t.TempDir())
	r := Start("r", testProblem(t, 30, 20), FISTA{})
	r.Quiet = true
	if err := r.Iterate(3); err != nil {
		t.Fatal(err)
	}
	other := Resume("r", testProblem(t, 30, 20).Beta(0.5), FISTA{})
	if err := other.Err(); err == nil || !strings.Contains(err.Error(), "another problem") || !strings.Contains(err.Error(), "β=0.5") {
		t.Fatalf("resume with another β: %v", err)
	}
	if err := other.Iterate(1); err == nil {
		t.Fatal("a failed run iterated")
	}

	raw, err := os.ReadFile(r.Path())
	if err != nil {
		t.Fatal(err)
	}
	bumped := bytes.Replace(raw, []byte(fmt.Sprintf("convexnn-run-state v%d\n", StateVersion)), []byte("convexnn-run-state v99\n"), 1)
	if bytes.Equal(bumped, raw) {
		t.Fatal("the state file does not start with its format and version")
	}
	os.WriteFile(r.Path(), bumped, 0o644)
	if err := Resume("r", testProblem(t, 30, 20), FISTA{}).Err(); err == nil || !strings.Contains(err.Error(), "v99") || !strings.Contains(err.Error(), fmt.Sprintf("v%d", StateVersion)) {
		t.Fatalf("resume of a v99 state: %v", err)
	}
	os.WriteFile(r.Path(), raw[:len(raw)/2], 0o644)
	if err := Resume("r", testProblem(t, 30, 20), FISTA{}).Err(); err == nil || !strings.Contains(err.Error(), "is corrupt") {
		t.Fatalf("resume of a truncated state: %v", err)
	}
	flipped := bytes.Clone(raw)
	flipped[len(flipped)/2] ^= 4
	os.WriteFile(r.Path(), flipped, 0o644)
	if err := Resume("r", testProblem(t, 30, 20), FISTA{}).Err(); err == nil || !strings.Contains(err.Error(), "checksum") {
		t.Fatalf("resume of a state with a flipped bit: %v", err)
	}
	os.WriteFile(r.Path(), []byte(`{"format":"something else"}`), 0o644)
	if err := Resume("r", testProblem(t, 30, 20), FISTA{}).Err(); err == nil || !strings.Contains(err.Error(), "not a convexnn run state") {
		t.Fatalf("resume of a foreign file: %v", err)
	}
	// A run saved in format v1 (JSON, name.json) is refused by its
	// version, not silently started afresh.
	os.Remove(r.Path())
	v1 := strings.TrimSuffix(r.Path(), ".state") + ".json"
	os.WriteFile(v1, []byte(`{"format":"convexnn-run-state","version":1,"name":"r"}`), 0o644)
	if err := Resume("r", testProblem(t, 30, 20), FISTA{}).Err(); err == nil || !strings.Contains(err.Error(), "format v1") {
		t.Fatalf("resume of a v1 state: %v", err)
	}
	if err := Resume("bad/name", testProblem(t, 30, 20), FISTA{}).Err(); err == nil || !strings.Contains(err.Error(), "run name") {
		t.Fatalf("bad name: %v", err)
	}
}

func TestBadInputIsNamed(t *testing.T) {
	x, y, _ := data.Disk2D(10, 1)
	cases := map[string]*Problem{
		"label y[2] = 0":      Classify(x, append(append(append([]float64{}, y[:2]...), 0), y[3:]...)),
		"10 rows but y has 9": Classify(x, y[:9]),
		"β must be positive":  Classify(x, y).Beta(-1),
		"need at least one":   Classify(x, y).SampleNeurons(0, 1),
	}
	xn := mat.DenseCopyOf(x)
	xn.Set(4, 1, math.NaN())
	cases["X[4,1] is NaN"] = Classify(xn, y)
	for want, p := range cases {
		if err := p.Err(); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("want error containing %q, got %v", want, err)
		}
	}
	if err := Start("x", Classify(x, y), FISTA{}).Err(); err == nil || !strings.Contains(err.Error(), "SampleNeurons") {
		t.Errorf("FISTA without sampled neurons: %v", err)
	}
}

func TestCancelSavesLastFinishedIteration(t *testing.T) {
	t.Setenv("CONVEXNN_STATE_DIR", t.TempDir())
	r := Start("c", testProblem(t, 40, 30), FISTA{Tol: 1e-300})
	r.Quiet = true
	ctx, cancel := context.WithCancel(context.Background())
	r.Iterate(5)
	cancel()
	err := r.IterateContext(ctx, 100)
	if !errors.Is(err, ErrInterrupted) {
		t.Fatalf("want ErrInterrupted, got %v", err)
	}
	s := Resume("c", testProblem(t, 40, 30), FISTA{Tol: 1e-300})
	if s.Iter() != 5 {
		t.Fatalf("saved iteration %d, want 5", s.Iter())
	}
}

// TestSIGINTSavesState runs a long Iterate in a child process, sends it
// SIGINT as Jupyter's interrupt does, and checks that the child saved its last
// finished iteration and exited promptly.
func TestSIGINTSavesState(t *testing.T) {
	if os.Getenv("CONVEXNN_SIGINT_CHILD") == "1" {
		r := Start("sig", testProblem(t, 300, 400), FISTA{Tol: 1e-300})
		r.Quiet = true
		r.SaveEvery = time.Hour // only the interrupt may save
		fmt.Println("started")
		err := r.Iterate(1 << 30)
		fmt.Printf("returned %d %v\n", r.Iter(), err)
		return
	}
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestSIGINTSavesState$", "-test.v")
	cmd.Env = append(os.Environ(), "CONVEXNN_SIGINT_CHILD=1", "CONVEXNN_STATE_DIR="+dir)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(out)
	for sc.Scan() && sc.Text() != "started" {
	}
	time.Sleep(300 * time.Millisecond)
	t0 := time.Now()
	cmd.Process.Signal(syscall.SIGINT)
	var last string
	for sc.Scan() {
		if strings.HasPrefix(sc.Text(), "returned") {
			last = sc.Text()
		}
	}
	cmd.Wait()
	if time.Since(t0) > 5*time.Second {
		t.Fatalf("child took %v to stop after SIGINT (GoNB kills after 5 s)", time.Since(t0))
	}
	var iter int
	var rest string
	if _, err := fmt.Sscanf(last, "returned %d %s", &iter, &rest); err != nil || iter == 0 || !strings.Contains(last, "interrupted") {
		t.Fatalf("child reported %q", last)
	}
	t.Setenv("CONVEXNN_STATE_DIR", dir)
	s := Resume("sig", testProblem(t, 300, 400), FISTA{Tol: 1e-300})
	if s.Err() != nil || s.Iter() != iter || len(s.History()) != iter {
		t.Fatalf("saved state has iteration %d (%v), child stopped at %d", s.Iter(), s.Err(), iter)
	}
	if _, err := os.Stat(filepath.Join(dir, "sig.state")); err != nil {
		t.Fatal(err)
	}
}

func TestThinKeepsEndsAndBound(t *testing.T) {
	h := make([]Point, 10007)
	for i := range h {
		h[i].Iter = i + 1
	}
	th := thin(h, 1500)
	if len(th) > 1501 || th[0].Iter != 1 || th[len(th)-1].Iter != 10007 {
		t.Fatalf("thin gave %d points from %d to %d", len(th), th[0].Iter, th[len(th)-1].Iter)
	}
	if got := thin(h[:10], 1500); len(got) != 10 {
		t.Fatalf("short history thinned to %d", len(got))
	}
}

// solvedDisk sets a fresh state directory and returns a small 2-D disk
// problem (a new value per call, as each notebook cell builds it) with its
// interior-point solution.
func solvedDisk(t *testing.T) (func() *Problem, *Solution) {
	t.Helper()
	t.Setenv("CONVEXNN_STATE_DIR", t.TempDir())
	x, y, _ := data.Disk2D(40, 4)
	prob := func() *Problem { return Classify(x, y).Beta(0.05).Bias().SamplePatterns(6, 3) }
	sol, err := Solve(prob(), IPM{})
	if err != nil {
		t.Fatal(err)
	}
	return prob, sol
}

// TestADMMRunResumesAndMatchesIPM runs the convex program through cvx: an
// ADMM run split over two "cells" continues exactly, and its objective
// approaches the interior-point optimum.
func TestADMMRunResumesAndMatchesIPM(t *testing.T) {
	prob, sol := solvedDisk(t)
	a := Start("admm", prob(), ADMM{Rho: 0.1, Tol: 1e-300})
	a.Quiet = true
	if err := a.Iterate(300); err != nil {
		t.Fatal(err)
	}
	b := Resume("admm", prob(), ADMM{Rho: 0.1, Tol: 1e-300})
	b.Quiet = true
	if b.ResumedAt() != 300 {
		t.Fatalf("resumed at %d", b.ResumedAt())
	}
	if err := b.Iterate(4700); err != nil {
		t.Fatal(err)
	}
	if rel := math.Abs(b.Objective()-sol.Objective) / sol.Objective; rel > 1e-4 {
		t.Fatalf("ADMM objective %v after 5000 iterations, interior point %v (relative %v)", b.Objective(), sol.Objective, rel)
	}
	h := b.History()
	if len(h) != 5000 || h[len(h)-1].Gap > 1e-5 {
		t.Fatalf("history %d points, final |l^{u,α} − l^{v,w}| %v", len(h), h[len(h)-1].Gap)
	}
	if err := Resume("admm", prob(), ADMM{Rho: 0.2}).Err(); err == nil || !strings.Contains(err.Error(), "another problem or method") {
		t.Fatalf("resume with another ρ: %v", err)
	}
	// Early stopping on a validation metric.
	c := Start("early", prob(), ADMM{Rho: 0.1, Tol: 1e-300})
	c.Quiet = true
	calls := 0
	c.Validate = func(*Network) (float64, bool) { calls++; return float64(calls), calls == 7 }
	if err := c.Iterate(100); err != nil || c.Iter() != 7 || c.History()[6].Validation != 7 {
		t.Fatalf("early stopping: iteration %d, err %v", c.Iter(), err)
	}
	// Validation every 3rd iteration and at the end of each Iterate call.
	e := Start("every", prob(), ADMM{Rho: 0.1, Tol: 1e-300})
	e.Quiet, e.ValidateEvery = true, 3
	var seen []int
	e.Validate = func(*Network) (float64, bool) { seen = append(seen, e.Iter()); return 0.5, false }
	if err := e.Iterate(7); err != nil {
		t.Fatal(err)
	}
	if err := e.Iterate(4); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(seen) != "[3 6 7 9 11]" {
		t.Fatalf("ValidateEvery 3: validated after iterations %v, want [3 6 7 9 11]", seen)
	}
	for _, p := range e.History() {
		if want := p.Iter%3 == 0 || p.Iter == 7 || p.Iter == 11; p.Validated != want || (p.Validation == 0.5) != want {
			t.Fatalf("iteration %d: Validated %v, Validation %v", p.Iter, p.Validated, p.Validation)
		}
	}
}

// TestADMMRunStopsAtACertifiedGap checks the certificates of an ADMM run:
// every certified point encloses the interior-point optimum, the run stops
// once its certified gap reaches ADMM.Gap, Run.Gap reports it, and the
// interior-point solution carries its own certificate.
func TestADMMRunStopsAtACertifiedGap(t *testing.T) {
	prob, sol := solvedDisk(t)
	if sol.Gap > 1e-6 || sol.Lower > sol.Objective {
		t.Fatalf("interior point: objective %.12g, certified [%.12g, %.12g], gap %.3g", sol.Objective, sol.Lower, sol.Upper, sol.Gap)
	}
	r := Start("gap", prob(), ADMM{Tol: 1e-300, Gap: 1e-3, CertifyEvery: 10})
	r.Quiet = true
	if !math.IsNaN(r.Gap()) {
		t.Fatalf("Gap before any iteration: %v, want NaN", r.Gap())
	}
	if err := r.Iterate(5000); err != nil {
		t.Fatal(err)
	}
	if g := r.Gap(); !(g <= 1e-3) || r.Iter() >= 5000 || r.Iter()%10 != 0 {
		t.Fatalf("stopped at iteration %d with certified gap %v, want ≤ 1e-3 before 5000 at a multiple of 10", r.Iter(), g)
	}
	certified := 0
	for _, p := range r.History() {
		if p.Certified != (p.Iter%10 == 0) {
			t.Fatalf("iteration %d: Certified %v with CertifyEvery 10", p.Iter, p.Certified)
		}
		if p.Certified {
			certified++
			if p.Lower > sol.Objective*(1+1e-9) || p.Upper < sol.Objective*(1-1e-9) {
				t.Fatalf("iteration %d: bounds [%.12g, %.12g] miss the optimum %.12g", p.Iter, p.Lower, p.Upper, sol.Objective)
			}
		}
	}
	t.Logf("certified gap %.3g after %d iterations (%d certificates)", r.Gap(), r.Iter(), certified)
	if err := Start("bad", prob(), ADMM{Gap: -1}).Err(); err == nil || !strings.Contains(err.Error(), "ADMM{Gap: -1}") {
		t.Fatalf("ADMM{Gap: -1}: %v", err)
	}
	if err := Start("bad", prob(), ADMM{Gap: math.NaN()}).Err(); err == nil || !strings.Contains(err.Error(), "certified relative gap") {
		t.Fatalf("ADMM{Gap: NaN}: %v", err)
	}
	if err := Start("bad", prob(), ADMM{Gap: 1e-3, CertifyEvery: -1}).Err(); err == nil || !strings.Contains(err.Error(), "needs certificates") {
		t.Fatalf("ADMM{Gap, CertifyEvery: -1}: %v", err)
	}
}
