// Package notebooks holds convexnn's GoNB notebooks; its tests execute every
// notebook headless with the real kernel and check the exported HTML in a
// real headless Chromium.
package notebooks

import (
	"context"
	"encoding/json"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/convexnn/convexnn/cvx"
	"github.com/convexnn/convexnn/data"
	"github.com/convexnn/convexnn/internal/browser"
	"github.com/convexnn/convexnn/internal/nbrun"
	"github.com/convexnn/convexnn/internal/testenv"
	"github.com/convexnn/convexnn/plots"
	"gonum.org/v1/gonum/mat"
)

var (
	runOnce sync.Once
	results map[string]*nbrun.Result
	runErr  error
	outDir  string
)

func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// requireE2E skips, or fails under CONVEXNN_REQUIRE_E2E=1 (make test), when
// the real kernel and browser are not set up.
func requireE2E(t *testing.T) {
	t.Helper()
	if missing := e2eMissing(repoRoot(t)); len(missing) > 0 {
		testenv.Missing(t, "notebook tests need %s: run make setup (make test does)", strings.Join(missing, ", "))
	}
}

// e2eMissing lists what the end-to-end tests need and the checkout lacks.
func e2eMissing(root string) []string {
	var missing []string
	for _, p := range []string{".cache/jupyter/kernels/convexnn/kernel.json", ".cache/assets/echarts.min.js", "bin/gonb"} {
		if _, err := os.Stat(filepath.Join(root, p)); err != nil {
			missing = append(missing, p)
		}
	}
	if _, err := exec.LookPath("chromium"); err != nil {
		missing = append(missing, "chromium")
	}
	return missing
}

// TestMain starts the notebooks' executions (executeAll's) before the
// first test when every test runs (no -run) and the kernel and browser are
// set up, so that they overlap the live-notebook tests, which do not need
// them: 1.5 minutes of make test's longest package.
func TestMain(m *testing.M) {
	flag.Parse()
	if f := flag.Lookup("test.run"); f != nil && f.Value.String() == "" {
		if root, err := filepath.Abs(".."); err == nil && len(e2eMissing(root)) == 0 {
			go runOnce.Do(func() { runAll(root) })
		}
	}
	code := m.Run()
	pool.Close()
	os.Exit(code)
}

var pool browser.LazyPool

// browsers returns the test binary's two browsers, started at the first
// call: a browser's start costs about as much CPU as drawing a notebook's
// charts, and each page opens in a browser context of its own, so pages
// checked one after another see nothing of each other.
func browsers(t *testing.T) *browser.Pool {
	t.Helper()
	p, err := pool.Get()
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// dataEnv points the kernel at the project's shared data folder when
// CONVEXNN_DATA is unset and the folder is beside the checkout.
func dataEnv(root string) []string {
	if os.Getenv("CONVEXNN_DATA") != "" {
		return nil
	}
	dir := filepath.Join(root, "..", "shared", "data")
	if _, err := os.Stat(dir); err != nil {
		return nil
	}
	return []string{"CONVEXNN_DATA=" + dir}
}

// executeAll runs every notebook once per test binary.
func executeAll(t *testing.T) map[string]*nbrun.Result {
	t.Helper()
	requireE2E(t)
	runOnce.Do(func() { runAll(repoRoot(t)) })
	if runErr != nil {
		t.Fatal(runErr)
	}
	return results
}

// runAll executes every notebook of the checkout root (executeAll's one
// run), setting results or runErr.
func runAll(root string) {
	outDir = filepath.Join(root, "out", "test-notebooks")
	list, err := nbrun.List(".")
	if err != nil {
		runErr = err
		return
	}
	// Two at a time: a notebook's kernel mostly waits on one core, and
	// each run has its own state folder and kernel (nbrun.Execute).
	results = map[string]*nbrun.Result{}
	res := make([]*nbrun.Result, len(list))
	errs := make([]error, len(list))
	sem := make(chan struct{}, 2)
	var wg sync.WaitGroup
	for k, nb := range list {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			res[k], errs[k] = nbrun.Execute(context.Background(), nb, nbrun.Options{Repo: root, OutDir: outDir, Size: "small", Env: dataEnv(root)})
		}()
	}
	wg.Wait()
	for k, nb := range list {
		if errs[k] != nil {
			runErr = errs[k]
			return
		}
		results[filepath.Base(nb)] = res[k]
	}
}

// readExecuted returns the notebook name as executeAll ran it.
func readExecuted(t *testing.T, name string) *nbrun.Notebook {
	t.Helper()
	res := executeAll(t)[name]
	if res == nil {
		t.Fatalf("notebook %s missing", name)
	}
	nb, err := nbrun.Read(res.Executed)
	if err != nil {
		t.Fatal(err)
	}
	return nb
}

func TestNotebooksExecuteWithoutErrors(t *testing.T) {
	for name, res := range executeAll(t) {
		for _, e := range res.Errors {
			t.Errorf("%s", e.Error())
		}
		t.Logf("%s executed in %.1f s", name, res.Duration.Seconds())
	}
}

// minCharts is how many charts each notebook draws at its small size.
var minCharts = map[string]int{
	"00-quickstart.ipynb":                5,
	"01-admm-convergence.ipynb":          6,
	"02-practical-convex-training.ipynb": 3,
	"03-mammographic.ipynb":              2,
	"04-scp.ipynb":                       3,
	"05-bce-rbcd.ipynb":                  2,
	"06-adversarial-2d.ipynb":            11,
	"07-landscape.ipynb":                 4,
	"08-adversarial-regression.ipynb":    5,
	"09-cifar-adversarial.ipynb":         6,
	"10-admm-tables.ipynb":               8,
	"11-batchnorm.ipynb":                 2,
	"12-two-hidden-layer.ipynb":          1,
	"13-cnn.ipynb":                       8,
	"14-multiclass.ipynb":                7,
	"15-paths.ipynb":                     4,
	"datasets.ipynb":                     7,
	"tutorial-your-data.ipynb":           1,
}

func TestChartsRenderOfflineInChromium(t *testing.T) {
	results := executeAll(t)
	pool := browsers(t)
	for name, res := range results {
		t.Run(name, func(t *testing.T) {
			t.Parallel() // two pages at a time (-parallel: GOMAXPROCS; the pool's two browsers)
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			rep, err := pool.Check(ctx, res.HTML, browser.Options{})
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range rep.Problems(0.01) {
				t.Errorf("%s: %s", res.HTML, p)
			}
			kinds := map[string]int{}
			for _, c := range rep.Charts {
				kinds[c.Kind]++
				t.Logf("chart %s (%s): %d canvases, %.1f%% inked", c.ID, c.Kind, c.Canvases, 100*c.Inked)
			}
			if want := minCharts[name]; len(rep.Charts) < want {
				t.Errorf("%s has %d charts, want at least %d", name, len(rep.Charts), want)
			}
			if name == "00-quickstart.ipynb" && (kinds["2d"] == 0 || kinds["3d"] == 0) {
				t.Errorf("quickstart should mix 2-D and 3-D charts, has %v", kinds)
			}
		})
	}
}

// maxNotebookBytes is the size limit of an executed notebook (issue 21): each
// chart library is embedded once per notebook, every other chart leaves it to
// the page, and the static twins are paletted PNGs.
const maxNotebookBytes = 1_000_000

// payloadRE finds the libraries a chart output embeds.
var payloadRE = regexp.MustCompile(`"payload":\{("echarts(-gl)?":"[^"]*",?)+\}`)

// embeddedLibraries counts, per library, the outputs of nb that embed it.
func embeddedLibraries(nb *nbrun.Notebook) map[string]int {
	n := map[string]int{}
	for _, c := range nb.Cells {
		for _, o := range c.Outputs {
			for _, p := range payloadRE.FindAllString(o.TextOf("text/html"), -1) {
				for _, lib := range []string{"echarts", "echarts-gl"} {
					if strings.Contains(p, `"`+lib+`":"`) {
						n[lib]++
					}
				}
			}
		}
	}
	return n
}

// TestNotebooksAreSmall checks every executed notebook against the size
// limit, and that no chart library is embedded more than once in it.
func TestNotebooksAreSmall(t *testing.T) {
	for name, res := range executeAll(t) {
		st, err := os.Stat(res.Executed)
		if err != nil {
			t.Fatal(err)
		}
		nb := readExecuted(t, name)
		libs := embeddedLibraries(nb)
		t.Logf("%s: %d bytes, libraries embedded %v", name, st.Size(), libs)
		if st.Size() > maxNotebookBytes {
			t.Errorf("%s is %d bytes executed, want at most %d", name, st.Size(), maxNotebookBytes)
		}
		for lib, k := range libs {
			if k > 1 {
				t.Errorf("%s embeds %s in %d outputs, want one", name, lib, k)
			}
		}
		if minCharts[name] > 0 && libs["echarts"] != 1 {
			t.Errorf("%s embeds echarts in %d outputs, want one (a notebook opened offline needs it)", name, libs["echarts"])
		}
	}
}

// TestChartsRenderWithTheirLibraryCleared clears, in executed notebooks, the
// outputs that embed the chart libraries (as a reader who clears or re-runs
// the first chart's cell does), exports them to HTML and checks in Chromium
// that every remaining chart draws from the copies next to the page.
func TestChartsRenderWithTheirLibraryCleared(t *testing.T) {
	results := executeAll(t)
	for _, name := range []string{"00-quickstart.ipynb", "06-adversarial-2d.ipynb"} {
		t.Run(name, func(t *testing.T) {
			dir := filepath.Join(outDir, "cleared")
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(dir, name)
			cleared, kept, err := clearLibraryOutputs(results[name].Executed, path)
			if err != nil {
				t.Fatal(err)
			}
			if cleared == 0 || kept == 0 {
				t.Fatalf("%s: %d charts cleared with the libraries, %d kept; want some of each", name, cleared, kept)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			html, err := nbrun.Export(ctx, path, nbrun.Options{Repo: repoRoot(t)})
			if err != nil {
				t.Fatal(err)
			}
			rep, err := browsers(t).Check(ctx, html, browser.Options{})
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range rep.Problems(0.01) {
				t.Errorf("%s: %s", html, p)
			}
			if len(rep.Charts) != kept {
				t.Errorf("%s: %d charts on the page, want the %d kept", html, len(rep.Charts), kept)
			}
			t.Logf("%s: %d charts cleared with the libraries, %d drew from the copies next to the page", name, cleared, len(rep.Charts))
		})
	}
}

// clearLibraryOutputs writes to dst the executed notebook src with the
// outputs of every cell that embeds a chart library cleared, and returns how
// many charts were cleared with them and how many are kept.
func clearLibraryOutputs(src, dst string) (cleared, kept int, err error) {
	raw, err := os.ReadFile(src)
	if err != nil {
		return 0, 0, err
	}
	var nb map[string]interface{}
	if err := json.Unmarshal(raw, &nb); err != nil {
		return 0, 0, err
	}
	cells, _ := nb["cells"].([]interface{})
	for _, c := range cells {
		cell, _ := c.(map[string]interface{})
		outs, _ := cell["outputs"].([]interface{})
		text, err := json.Marshal(outs)
		if err != nil {
			return 0, 0, err
		}
		charts := strings.Count(string(text), `class=\"convexnn-chart\"`)
		if strings.Contains(string(text), `\"payload\":{\"echarts`) {
			cell["outputs"] = []interface{}{}
			cleared += charts
			continue
		}
		kept += charts
	}
	out, err := json.Marshal(nb)
	if err != nil {
		return 0, 0, err
	}
	return cleared, kept, os.WriteFile(dst, out, 0o644)
}

var (
	statusIter = regexp.MustCompile(`iteration (\d+),`)
	cellRange  = regexp.MustCompile(`iterations (\d+)→(\d+) this cell`)
	resumedAt  = regexp.MustCompile(`resumed at iteration (\d+)`)
)

func cellText(c nbrun.Cell) string {
	var b strings.Builder
	for _, o := range c.Outputs {
		b.WriteString(o.TextOf("text/html"))
		b.WriteString(o.TextOf("text/plain"))
		if o.Type == "stream" {
			b.WriteString(o.TextOf(""))
		}
	}
	return b.String()
}

// TestQuickstartSecondTrainingCellContinuesTheFirst reads the executed
// quickstart: the Resume cell must start at the Start cell's last iteration.
func TestQuickstartSecondTrainingCellContinuesTheFirst(t *testing.T) {
	nb := readExecuted(t, "00-quickstart.ipynb")
	first, second := -1, -1
	for i, c := range nb.Cells {
		src := c.SourceText()
		if strings.Contains(src, `cvx.Start("quickstart"`) && first < 0 {
			first = i
		}
		if strings.Contains(src, `cvx.Resume("quickstart"`) && strings.Contains(src, "Iterate") && second < 0 {
			second = i
		}
	}
	if first < 0 || second < 0 {
		t.Fatalf("training cells not found (Start at %d, Resume at %d)", first, second)
	}
	a := cellRange.FindStringSubmatch(cellText(nb.Cells[first]))
	b := cellRange.FindStringSubmatch(cellText(nb.Cells[second]))
	r := resumedAt.FindStringSubmatch(cellText(nb.Cells[second]))
	if a == nil || b == nil || r == nil {
		t.Fatalf("progress lines missing: first %q, second %q", cellText(nb.Cells[first]), cellText(nb.Cells[second]))
	}
	aFrom, _ := strconv.Atoi(a[1])
	aTo, _ := strconv.Atoi(a[2])
	bFrom, _ := strconv.Atoi(b[1])
	bTo, _ := strconv.Atoi(b[2])
	rAt, _ := strconv.Atoi(r[1])
	if aFrom != 0 || aTo == 0 {
		t.Fatalf("first training cell ran iterations %d→%d, want 0→N>0", aFrom, aTo)
	}
	if bFrom != aTo || rAt != aTo || bTo <= bFrom {
		t.Fatalf("second cell ran %d→%d (resumed at %d), first ended at %d", bFrom, bTo, rAt, aTo)
	}
	t.Logf("first cell 0→%d, second cell %d→%d", aTo, bFrom, bTo)
}

// runLine is paper.RunMethod's closing line of a run in notebook 10: method
// and validation accuracy.
var runLine = regexp.MustCompile(`(Back-prop|ADMM)(?: \(DS\))? done: \d+ [a-zA-Z ]+, validation accuracy ([0-9.]+)%`)

// TestTablesNotebookTrainsBothMethodsOnEveryDataSet reads the executed
// notebook 10: each of its four data-set cells trains back-propagation and
// ADMM, and the ADMM network classifies its validation set well above chance
// even at the small size (76–95 % measured).
func TestTablesNotebookTrainsBothMethodsOnEveryDataSet(t *testing.T) {
	nb := readExecuted(t, "10-admm-tables.ipynb")
	sets := 0
	for _, c := range nb.Cells {
		if !strings.Contains(c.SourceText(), "runTable(") || strings.Contains(c.SourceText(), "func runTable") {
			continue
		}
		sets++
		text := cellText(c)
		acc := map[string]float64{}
		for _, m := range runLine.FindAllStringSubmatch(text, -1) {
			acc[m[1]], _ = strconv.ParseFloat(m[2], 64)
		}
		if len(acc) != 2 || !(acc["ADMM"] > 70) || !(acc["Back-prop"] > 50) {
			t.Errorf("cell %q: run lines %v in\n%s", c.SourceText(), acc, text)
		}
		if !strings.Contains(text, "Peak validation") || !strings.Contains(text, "the paper") {
			t.Errorf("cell %q: our table or the paper's missing", c.SourceText())
		}
	}
	if sets != 4 {
		t.Fatalf("%d data-set cells, want 4 (Table 2 and the three of Table 3)", sets)
	}
}

// TestInterruptingACellSavesTheLastStep interrupts a running cell through
// the real kernel (Jupyter's interrupt_request → GoNB → SIGINT to the cell's
// process) and resumes in the next cell.
func TestInterruptingACellSavesTheLastStep(t *testing.T) {
	requireE2E(t)
	root := repoRoot(t)
	work := t.TempDir()
	script, _ := filepath.Abs("testdata/interrupt_cell.py")
	cmd := exec.Command("/usr/bin/python3", script, work)
	cmd.Env = append(os.Environ(), "JUPYTER_PATH="+filepath.Join(root, ".cache", "jupyter"), "CONVEXNN_STATE_DIR="+filepath.Join(work, "state"), "GOPROXY=off")
	out, err := cmd.Output()
	if err != nil {
		stderr := ""
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = string(ee.Stderr)
		}
		t.Fatalf("interrupt driver failed: %v\n%s\n%s", err, out, stderr)
	}
	var r struct {
		InterruptSent     bool   `json:"interrupt_sent"`
		InterruptedOutput string `json:"interrupted_output"`
		SavedIteration    int    `json:"saved_iteration"`
		ResumeOutput      string `json:"resume_output"`
		ResumedAt         int    `json:"resumed_at"`
		History           int    `json:"history"`
	}
	if err := json.Unmarshal(out, &r); err != nil {
		t.Fatalf("driver output %q: %v", out, err)
	}
	if !r.InterruptSent {
		t.Fatalf("no progress display appeared, so no interrupt was sent; cell output: %s", r.InterruptedOutput)
	}
	if r.SavedIteration <= 0 {
		t.Fatalf("the interrupted cell did not report a saved iteration; output: %s", r.InterruptedOutput)
	}
	if r.ResumedAt != r.SavedIteration || r.History != r.SavedIteration {
		t.Fatalf("interrupted at iteration %d, next cell resumed at %d with %d history points; output: %s", r.SavedIteration, r.ResumedAt, r.History, r.ResumeOutput)
	}
	t.Logf("interrupted after iteration %d; the next cell resumed there", r.SavedIteration)
}

// TestMulticlassNetworkFileScoresLikeTheNetwork reads the executed notebook
// 14: the accuracy of the network loaded from its file, on raw test rows,
// must be the network's own (a file that re-scaled already scaled rows once
// printed 8 % against 85 %).
func TestMulticlassNetworkFileScoresLikeTheNetwork(t *testing.T) {
	nb := readExecuted(t, "14-multiclass.ipynb")
	re := regexp.MustCompile(`test accuracy through the file ([0-9.]+) % \(the network itself: ([0-9.]+) %\)`)
	found := false
	for _, c := range nb.Cells {
		if m := re.FindStringSubmatch(cellText(c)); m != nil {
			found = true
			if m[1] != m[2] {
				t.Errorf("through the file %s %%, the network itself %s %%", m[1], m[2])
			}
		}
	}
	if !found {
		t.Error("notebook 14 printed no accuracy through the network file")
	}
}

// TestChartsFailWhenAssetsUnreachable is the negative of the rendering test:
// the same check on a chart whose echarts source cannot be reached must
// report a problem, and the chart must say so in place.
func TestChartsFailWhenAssetsUnreachable(t *testing.T) {
	requireE2E(t)
	fig, err := cvx.ScatterFigure(mustDisk(t))
	if err != nil {
		t.Fatal(err)
	}
	snippet, err := fig.HTML(plots.Assets{BaseURL: "http://127.0.0.1:9/no-such-cdn/"}, plots.HTMLOptions{})
	if err != nil {
		t.Fatal(err)
	}
	page := filepath.Join(t.TempDir(), "unreachable.html")
	if err := os.WriteFile(page, []byte("<!DOCTYPE html><html><body>"+snippet+"</body></html>"), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	rep, err := browsers(t).Check(ctx, page, browser.Options{})
	if err != nil {
		t.Fatal(err)
	}
	probs := rep.Problems(0.01)
	if len(probs) == 0 {
		t.Fatal("a chart with unreachable assets passed the rendering check")
	}
	if len(rep.Charts) != 1 || !strings.Contains(rep.Charts[0].Text, "could not be loaded") {
		t.Fatalf("the chart does not tell the reader what went wrong: %+v", rep.Charts)
	}
	t.Logf("problems reported: %q", probs)
}

func mustDisk(t *testing.T) (*mat.Dense, []float64) {
	x, y, err := data.Disk2D(30, 1)
	if err != nil {
		t.Fatal(err)
	}
	return x, y
}

// TestFailedCellsAreNamed executes a notebook that fails on purpose: the
// runner must report each failed cell by number with its message, and keep
// running the cells after a failure.
func TestFailedCellsAreNamed(t *testing.T) {
	requireE2E(t)
	res, err := nbrun.Execute(context.Background(), "testdata/broken.ipynb", nbrun.Options{Repo: repoRoot(t), OutDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Errors) != 2 {
		t.Fatalf("want 2 failed cells, got %d: %v", len(res.Errors), res.Errors)
	}
	want := []struct {
		cell int
		text string
	}{{3, `cannot use "not a number"`}, {4, "label y[3] = 7"}}
	for i, w := range want {
		e := res.Errors[i]
		msg := e.Error()
		if e.Cell != w.cell || !strings.Contains(msg, w.text) || !strings.Contains(msg, "broken.ipynb") {
			t.Errorf("failure %d: want cell %d with %q, got %s", i, w.cell, w.text, msg)
		}
	}
}
