package paper

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/convexnn/convexnn/internal/nbrun"
	checkout "github.com/convexnn/convexnn/internal/repo"
)

// figureNotebooks are the paper's smaller figures, each reproduced by one of
// the notebooks (the notebook holds the experiment, its charts and its
// commentary): `convexnn reproduce <name>` executes it headless at the
// requested size and writes its executed HTML as report.html.
var figureNotebooks = []struct{ name, notebook, title string }{
	{"fig-admm-conv", "01-admm-convergence.ipynb", "figs. ADMMConv1 and ADMMConv2: ADMM convergence, objective and feasibility against iterations"},
	{"fig-stability", "02-practical-convex-training.ipynb", "fig. stability: practical convex training (Algorithm train) against the number of sampled patterns"},
	{"fig-admm-acc", "03-mammographic.ipynb", "fig. ADMMAcc: ADMM validation accuracy on the mammographic masses against CVX"},
	{"fig-scp", "04-scp.ipynb", "fig. SCPexp: SCP accuracy and cost against the number of sampled neurons N, and iterative sampling with its certificate"},
	{"fig-2d-toy", "06-adversarial-2d.ipynb", "fig. 2D-toy and fig. 7: convex adversarial training on 2-D data, decision regions"},
	{"fig-landscapes", "07-landscape.ipynb", "fig. landscapes: the convex and non-convex loss landscapes around a training point"},
	{"fig-adv-regression", "08-adversarial-regression.ipynb", "figs. te and exp_sl: squared-loss convex adversarial training in 1-D"},
	{"fig-learning-curves", "10-admm-tables.ipynb", "fig. learning_curves (with Tables 2 and 3): squared-loss ADMM and back-propagation, training loss and validation accuracy against time"},
}

func init() {
	for _, f := range figureNotebooks {
		experiments = append(experiments, &Experiment{Name: f.name, Title: f.title,
			run: func(ctx context.Context, size Size, runs int, outDir string, stdout io.Writer) error {
				return runFigureNotebook(ctx, f.name, f.notebook, f.title, size, outDir, stdout)
			}})
	}
}

// figureResult is result.json of a figure experiment.
type figureResult struct {
	Experiment  string    `json:"experiment"`
	Title       string    `json:"title"`
	Notebook    string    `json:"notebook"`
	Size        string    `json:"size"`
	Started     time.Time `json:"started"`
	WallSeconds float64   `json:"wall_seconds"`
	FailedCells []string  `json:"failed_cells"`
	Executed    string    `json:"executed_notebook"`
	Host        Host      `json:"host"`
}

// runFigureNotebook executes notebooks/<notebook> at size into
// <outDir>/<name>/ and writes result.json and report.html there. A failed
// cell is an error, after both files are written.
func runFigureNotebook(ctx context.Context, name, notebook, title string, size Size, outDir string, stdout io.Writer) error {
	repo, err := checkout.Root()
	if err != nil {
		return err
	}
	dir := filepath.Join(outDir, name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "== %s (size %s): %s\n   executing notebooks/%s headless ...\n", name, size, title, notebook)
	start := time.Now()
	res, err := nbrun.Execute(ctx, filepath.Join(repo, "notebooks", notebook), nbrun.Options{Repo: repo, OutDir: dir, Size: notebookSize(size), Timeout: time.Hour})
	if err != nil {
		return err
	}
	fr := figureResult{Experiment: name, Title: title, Notebook: "notebooks/" + notebook, Size: string(size), Started: start.UTC(),
		WallSeconds: res.Duration.Seconds(), FailedCells: []string{}, Executed: res.Executed, Host: thisHost()}
	for _, e := range res.Errors {
		fr.FailedCells = append(fr.FailedCells, e.Error())
	}
	page, err := os.ReadFile(res.HTML)
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "report.html"), page, 0o644); err != nil {
		return err
	}
	if err := writeJSON(filepath.Join(dir, "result.json"), fr); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "   %d failed cells, %.1f s; wrote %s and %s\n", len(res.Errors), fr.WallSeconds, filepath.Join(dir, "result.json"), filepath.Join(dir, "report.html"))
	if len(res.Errors) > 0 {
		return fmt.Errorf("%d notebook cells failed: %s", len(res.Errors), fr.FailedCells[0])
	}
	return nil
}

// notebookSize is the CONVEXNN_SIZE a notebook runs at for an experiment
// size: "paper", or "small" (the notebooks' own default).
func notebookSize(size Size) string {
	if size == SizePaper {
		return string(SizePaper)
	}
	return string(SizeSmall)
}

// NotebookSize is the size a notebook runs its experiments at:
// CONVEXNN_SIZE=paper (make notebooks SIZE=paper) gives SizePaper, anything
// else SizeNotebook.
func NotebookSize() Size {
	if os.Getenv("CONVEXNN_SIZE") == string(SizePaper) {
		return SizePaper
	}
	return SizeNotebook
}
