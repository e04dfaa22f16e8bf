package paper

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/convexnn/convexnn/internal/testenv"
)

// TestReproduceSmall runs every experiment at -size small and checks what
// it writes: result.json with a positive accuracy per method and the
// paper's table, and report.html with the measured table.
func TestReproduceSmall(t *testing.T) {
	// Every experiment except the figure notebooks, which the notebook
	// tests execute already: of those only one, for the mechanism. Under
	// -race one experiment; make test runs the others without it.
	var run []*Experiment
	for _, e := range experiments {
		keep := !isFigureNotebook(e.Name) || e.Name == "fig-admm-acc"
		if testenv.Race {
			keep = e.Name == "table3-fmnist-ds"
		}
		if keep {
			run = append(run, e)
		}
	}
	if len(run) == 0 {
		t.Fatal("no experiments")
	}
	out, stdout := reproduceSmall(t, run...)
	for _, e := range run {
		dir := filepath.Join(out, e.Name)
		if e.run != nil {
			// A sweep with its own result format and test: here only
			// that "all" ran it.
			for _, f := range []string{"result.json", "report.html"} {
				if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
					t.Errorf("%s: %v", e.Name, err)
				}
			}
			continue
		}
		raw, err := os.ReadFile(filepath.Join(dir, "result.json"))
		if err != nil {
			t.Errorf("%s: %v", e.Name, err)
			continue
		}
		var res Result
		if err := json.Unmarshal(raw, &res); err != nil {
			t.Errorf("%s: result.json does not parse: %v", e.Name, err)
			continue
		}
		if res.Experiment != e.Name || res.Size != "small" || res.Runs != 1 || len(res.Paper.Rows) == 0 || res.TrainImages == 0 || res.ValImages == 0 {
			t.Errorf("%s: result.json header %+v", e.Name, res)
		}
		want := 2
		switch e.Name {
		case "table5-cifar-adv":
			want = 5
		case "scp-mnist":
			want = 1
		case "table2-mnist":
			want = 3 // with the row of more patterns
		}
		more := map[string]string{"table2-mnist": "ADMM, P_s = 12"}
		if len(res.Methods) != want {
			t.Errorf("%s: %d methods, want %d", e.Name, len(res.Methods), want)
		} else if m, ok := more[e.Name]; ok && res.Methods[2].Name != m {
			t.Errorf("%s: third row %q, want %q", e.Name, res.Methods[2].Name, m)
		}
		for _, m := range res.Methods {
			if m.Name == "" || !(m.ValidationAccuracy > 0) || m.ValidationAccuracy > 1 || !(m.WallSeconds > 0) || m.Iterations < 1 ||
				m.PeakRSSBytes <= 0 || m.PeakHeapBytes == 0 || len(m.Runs) != 1 || len(m.Curve) != curveLen(e, m.Iterations) {
				t.Errorf("%s: method %+v", e.Name, m)
			}
			if (m.FGSMAccuracy != nil) != (e.Name == "table5-cifar-adv") {
				t.Errorf("%s: %s: attacked accuracy %v", e.Name, m.Name, m.FGSMAccuracy)
			}
			// Table 5's convex rows report their program's certified
			// optimum (the interior-point methods, to 1e-6).
			if wantOpt := e.Name == "table5-cifar-adv" && strings.Contains(m.Name, "convex"); wantOpt != (m.OptimumObjective != nil) {
				t.Errorf("%s: %s: certified optimum %v", e.Name, m.Name, m.OptimumObjective)
			} else if wantOpt {
				o := m.Runs[0].Optimum
				if o == nil || !(*m.OptimumGap <= 1e-6) || !(o.Lower <= o.Objective) || o.Objective != *m.OptimumObjective {
					t.Errorf("%s: %s: certified optimum %+v, gap %v", e.Name, m.Name, o, *m.OptimumGap)
				}
			}
			// The peak is over the validated iterations, the last one
			// included: never below the final accuracy.
			if len(m.PeakIterations) != 1 || m.PeakIterations[0] < 1 || m.PeakIterations[0] > m.Iterations ||
				m.PeakValidation < m.ValidationAccuracy-1e-12 || m.PeakValidation > 1 {
				t.Errorf("%s: %s: peak validation %v at %v, final %v after %d iterations", e.Name, m.Name, m.PeakValidation, m.PeakIterations, m.ValidationAccuracy, m.Iterations)
			}
			// Table 5's data set (also Table 3 CIFAR's at the small size)
			// trains on a subsample: its other training records are
			// evaluated as a held-out set, attacks included for Table 5.
			if res.Settings.Dataset == "cifar-bird-ship-600" {
				ho := m.Holdout
				adv := e.Name == "table5-cifar-adv"
				if res.HoldImages != 9400 || ho == nil || !(ho.Accuracy > 0.5) || ho.Accuracy > 1 || (ho.FGSM != nil) != adv || (ho.PGD != nil) != adv ||
					(adv && *ho.PGD > ho.Accuracy) || len(m.Runs) != 1 || m.Runs[0].Holdout == nil {
					t.Errorf("%s: %s: held-out evaluation %+v of %d images", e.Name, m.Name, ho, res.HoldImages)
				}
			} else if m.Holdout != nil || res.HoldImages != 0 {
				t.Errorf("%s: %s: a held-out evaluation without a held-out set", e.Name, m.Name)
			}
		}
		if e.Name == "table5-cifar-adv" && !strings.Contains(stdout.String(), "9400 held-out training images") {
			t.Errorf("%s: the progress lines do not name the held-out set", e.Name)
		}
		page, err := os.ReadFile(filepath.Join(dir, "report.html"))
		if err != nil {
			t.Errorf("%s: %v", e.Name, err)
			continue
		}
		h := string(page)
		for _, s := range []string{"<table>", "<caption>Measured</caption>", "<caption>The paper</caption>", "convexnn-chart"} {
			if !strings.Contains(h, s) {
				t.Errorf("%s: report.html lacks %q", e.Name, s)
			}
		}
		if got, want := strings.Contains(h, "held-out images"), res.HoldImages > 0; got != want {
			t.Errorf("%s: report.html's summary names held-out images: %v, want %v (%d held out)", e.Name, got, want, res.HoldImages)
		}
		for _, m := range res.Methods {
			if !strings.Contains(h, "<td>"+m.Name+"</td>") {
				t.Errorf("%s: report.html has no row for %s", e.Name, m.Name)
			}
		}
		if strings.Contains(h, "go-echarts.github.io") && os.Getenv("CONVEXNN_ASSETS") != "" {
			t.Errorf("%s: report.html loads echarts from the network though CONVEXNN_ASSETS is set", e.Name)
		}
		if ents, _ := filepath.Glob(filepath.Join(dir, "state-*")); len(ents) != 0 {
			t.Errorf("%s: run state left behind: %v", e.Name, ents)
		}
		if !strings.Contains(stdout.String(), "== "+e.Name) {
			t.Errorf("no progress lines for %s", e.Name)
		}
	}
}

// curveLen is the number of curve points of a method run for iters
// iterations: one per iteration, except SCP, validated every 25 iterations
// and at the end.
func curveLen(e *Experiment, iters int) int {
	if e.Setup(SizeSmall).Neurons == 0 {
		return iters
	}
	return (iters + 24) / 25
}

func isFigureNotebook(name string) bool {
	for _, f := range figureNotebooks {
		if f.name == name {
			return true
		}
	}
	return false
}

// cancelOn cancels a context once the output so far contains a string
// (times times; 0 counts as once).
type cancelOn struct {
	buf    bytes.Buffer
	after  string
	times  int
	cancel context.CancelFunc
}

func (c *cancelOn) Write(p []byte) (int, error) {
	n, err := c.buf.Write(p)
	if strings.Count(c.buf.String(), c.after) >= max(1, c.times) {
		c.cancel()
	}
	return n, err
}

// TestReproduceInterruptedKeepsFinishedRuns interrupts an experiment right
// after its first method run: result.json must hold that run, marked
// partial, and nothing half-written.
func TestReproduceInterruptedKeepsFinishedRuns(t *testing.T) {
	t.Setenv("CONVEXNN_DATA", testenv.SharedData(t))
	out := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	w := &cancelOn{after: " done: ", cancel: cancel}
	// A report left by an earlier complete run must not outlive the new,
	// interrupted one.
	dir := filepath.Join(out, "table3-fmnist-ds")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "report.html"), []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	err := reproduceNamed(ctx, t, w, out, 2, "table3-fmnist-ds")
	if err == nil || !errors.Is(err, context.Canceled) {
		t.Fatalf("interrupted reproduce returned %v\n%s", err, w.buf.String())
	}
	raw, err := os.ReadFile(filepath.Join(dir, "result.json"))
	if err != nil {
		t.Fatalf("no result.json after the interruption: %v", err)
	}
	var res Result
	if err := json.Unmarshal(raw, &res); err != nil {
		t.Fatalf("result.json does not parse: %v", err)
	}
	if !res.Partial || len(res.Methods) != 1 || len(res.Methods[0].Runs) != 1 || res.Methods[0].Name != "Back-prop (DS)" ||
		!(res.Methods[0].ValidationAccuracy > 0.5) || res.Methods[0].Runs[0].Seed != 1 {
		t.Fatalf("partial result: partial %v, methods %+v", res.Partial, res.Methods)
	}
	if ents, _ := filepath.Glob(filepath.Join(dir, "*.tmp")); len(ents) != 0 {
		t.Errorf("temporary files left: %v", ents)
	}
	if _, err := os.Stat(filepath.Join(dir, "report.html")); err == nil {
		t.Errorf("report.html present after an interrupted experiment")
	}
}

// reproduceSmall runs Reproduce of exps at SizeSmall, one run each, on the
// shared data folder into a temporary directory; it returns the directory
// and Reproduce's output, and fails the test with the output on an error.
func reproduceSmall(t *testing.T, exps ...*Experiment) (out string, stdout *bytes.Buffer) {
	t.Helper()
	t.Setenv("CONVEXNN_DATA", testenv.SharedData(t))
	out, stdout = t.TempDir(), new(bytes.Buffer)
	if err := Reproduce(context.Background(), exps, SizeSmall, 1, out, stdout); err != nil {
		var names []string
		for _, e := range exps {
			names = append(names, e.Name)
		}
		t.Fatalf("reproduce -size small %s: %v\n%s", names, err, stdout)
	}
	return out, stdout
}

// reproduceNamed is Reproduce of the experiments named, at SizeSmall.
func reproduceNamed(ctx context.Context, t *testing.T, w io.Writer, out string, runs int, names ...string) error {
	t.Helper()
	exps, err := Resolve(names)
	if err != nil {
		t.Fatal(err)
	}
	return Reproduce(ctx, exps, SizeSmall, runs, out, w)
}
