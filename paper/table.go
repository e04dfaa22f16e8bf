package paper

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strings"
	"time"

	"github.com/convexnn/convexnn/cvx"
)

// Table is a table experiment at work: its settings and data, the cvx runs
// of its methods kept in a directory, and its results so far, saved after
// every finished method run. A notebook trains its rows cell by cell (each
// cell a new process reopens the table with ResumeTable) and reopens the
// runs for their charts; convexnn reproduce trains them all at once.
type Table struct {
	Experiment *Experiment
	// Settings are the experiment's at the table's size, for the loaded
	// data (BCE: β, ρ and γ_a divided by n, see Load).
	Settings Settings
	Size     Size
	// Runs is the number of seeds (1 … Runs) every method is trained with.
	Runs int
	Sets *Sets

	dir     cvx.RunDir
	path    string // where the results are saved
	methods []Method
	res     Result
	start   time.Time
}

// StartTable opens experiment e afresh at size with runs seeds: the cvx runs
// go to dir and the results, after every method run, to path (result.json
// marked partial, with the finished runs); earlier results at path are
// discarded.
func StartTable(ctx context.Context, e *Experiment, size Size, runs int, dir cvx.RunDir, path string) (*Table, error) {
	return openTable(ctx, e, size, runs, dir, path, false)
}

// ResumeTable is StartTable that keeps the results saved at path by an
// earlier StartTable or ResumeTable of the same experiment, size, runs and
// settings: their method runs are not trained again.
func ResumeTable(ctx context.Context, e *Experiment, size Size, runs int, dir cvx.RunDir, path string) (*Table, error) {
	return openTable(ctx, e, size, runs, dir, path, true)
}

func openTable(ctx context.Context, e *Experiment, size Size, runs int, dir cvx.RunDir, path string, resume bool) (*Table, error) {
	if e == nil || e.Setup == nil {
		return nil, errors.New("paper: a table needs a table experiment (with Setup)")
	}
	if _, err := ParseSize(string(size)); err != nil {
		return nil, err
	}
	if runs < 1 {
		return nil, fmt.Errorf("paper: %d runs: need at least one", runs)
	}
	start := time.Now()
	sets, s, err := Load(ctx, e.Setup(size))
	if err != nil {
		return nil, err
	}
	n, d := sets.Train.Dims()
	t := &Table{Experiment: e, Settings: s, Size: size, Runs: runs, Sets: sets, dir: dir, path: path, methods: s.Methods(), start: start}
	t.res = Result{Experiment: e.Name, Title: e.Title, Size: string(size), Runs: runs, Settings: s, TrainImages: n, ValImages: len(sets.Validation.Y), Dim: d,
		HoldImages: heldOut(sets), DataNotes: sets.Notes, Paper: Reported{Head: e.PaperHead, Rows: e.Paper}, Started: start.UTC(),
		Host: thisHost(), Definitions: definitions}
	t.res.Methods = make([]MethodResult, len(t.methods))
	for k, m := range t.methods {
		t.res.Methods[k].Name = m.Name
	}
	if resume {
		if err := t.load(); err != nil {
			return nil, err
		}
	}
	return t, nil
}

// load takes the method runs of the results saved at t.path when they
// belong to the same table.
func (t *Table) load() error {
	raw, err := os.ReadFile(t.path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	var saved Result
	if err := json.Unmarshal(raw, &saved); err != nil {
		return fmt.Errorf("paper: %s is corrupt (%v): delete it to start afresh", t.path, err)
	}
	a, _ := json.Marshal(saved.Settings)
	b, _ := json.Marshal(t.res.Settings)
	if saved.Experiment != t.res.Experiment || saved.Size != t.res.Size || saved.Runs != t.Runs || string(a) != string(b) {
		return fmt.Errorf("paper: %s holds %s at size %s with %d runs and other settings, not this table: delete it or use StartTable", t.path, saved.Experiment, saved.Size, saved.Runs)
	}
	for _, m := range saved.Methods {
		k := slices.IndexFunc(t.methods, func(x Method) bool { return x.Name == m.Name })
		if k < 0 {
			continue
		}
		t.res.Methods[k].Runs, t.res.Methods[k].Curve = m.Runs, m.Curve
	}
	if !saved.Started.IsZero() {
		t.res.Started = saved.Started
	}
	return nil
}

// Methods are the table's rows.
func (t *Table) Methods() []Method { return t.methods }

// Train trains the named methods (every row when none is named) with each
// seed 1 … Runs that has no result yet, seed by seed, saving the results
// after every method run; it prints progress to stdout. On cancellation
// the finished runs stay saved.
func (t *Table) Train(ctx context.Context, stdout io.Writer, names ...string) error {
	for _, n := range names {
		if !slices.ContainsFunc(t.methods, func(m Method) bool { return m.Name == n }) {
			return fmt.Errorf("paper: %s has no method %q (its methods: %s)", t.Experiment.Name, n, strings.Join(t.methodNames(), ", "))
		}
	}
	for r := 1; r <= t.Runs; r++ {
		for k, m := range t.methods {
			if len(names) > 0 && !slices.Contains(names, m.Name) || t.has(k, r) {
				continue
			}
			if err := ctx.Err(); err != nil {
				return err
			}
			tr, err := RunMethod(ctx, t.dir, m, t.Settings, t.Sets, r, stdout)
			if err != nil {
				if ctx.Err() != nil {
					fmt.Fprintf(stdout, "   interrupted: %s keeps the %d method run(s) finished\n", t.path, t.finished())
				}
				return fmt.Errorf("%s (run %d): %w", m.Name, r, err)
			}
			mr := &t.res.Methods[k]
			mr.Runs = append(mr.Runs, tr)
			slices.SortFunc(mr.Runs, func(a, b Trial) int { return a.Seed - b.Seed })
			if r == 1 {
				mr.Curve = tr.Curve
			}
			if err := writeJSON(t.path, t.partial()); err != nil {
				return err
			}
		}
	}
	return nil
}

// TrainRows is Train for the rows numbered ks (indexes into Methods), and
// stops cleanly on an interrupt (SIGINT, as Jupyter sends), the finished
// runs kept: a notebook cell's cvx.Check(t.TrainRows(os.Stdout, 0, 1)).
func (t *Table) TrainRows(stdout io.Writer, ks ...int) error {
	var names []string
	for _, k := range ks {
		if k < 0 || k >= len(t.methods) {
			return fmt.Errorf("paper: %s has rows 0 to %d, not %d", t.Experiment.Name, len(t.methods)-1, k)
		}
		names = append(names, t.methods[k].Name)
	}
	if len(names) == 0 {
		return errors.New("paper: TrainRows: name at least one row")
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	return t.Train(ctx, stdout, names...)
}

// Row is the name of row k (Methods()[k].Name).
func (t *Table) Row(k int) string { return t.methods[k].Name }

func (t *Table) methodNames() []string {
	var n []string
	for _, m := range t.methods {
		n = append(n, m.Name)
	}
	return n
}

// has reports whether method k has a result for seed r.
func (t *Table) has(k, r int) bool {
	return slices.ContainsFunc(t.res.Methods[k].Runs, func(tr Trial) bool { return tr.Seed == r })
}

// finished counts the method runs with a result.
func (t *Table) finished() int {
	var n int
	for _, m := range t.res.Methods {
		n += len(m.Runs)
	}
	return n
}

// partial is the result with the means of the runs finished so far,
// marked partial: what the table saves after every method run.
func (t *Table) partial() *Result {
	p := t.res
	p.Partial, p.WallSeconds = true, time.Since(t.start).Seconds()
	p.Methods = nil
	for _, m := range t.res.Methods {
		if len(m.Runs) == 0 {
			continue
		}
		q := MethodResult{Name: m.Name, Runs: m.Runs, Curve: m.Curve}
		summarize(&q)
		p.Methods = append(p.Methods, q)
	}
	return &p
}

// Result is the table so far: the methods with results, each summarized
// over its runs (means, medians, the curve of run 1). It is partial until
// every method has every run.
func (t *Table) Result() *Result {
	p := t.partial()
	p.Partial = t.finished() < len(t.methods)*t.Runs
	return p
}

// Run reopens the saved cvx run of method name with seed (for its charts:
// cvx.Convergence, cvx.TrainingCurves, Run.Network).
func (t *Table) Run(name string, seed int) (*cvx.Run, error) {
	k := slices.IndexFunc(t.methods, func(m Method) bool { return m.Name == name })
	if k < 0 {
		return nil, fmt.Errorf("paper: %s has no method %q (its methods: %s)", t.Experiment.Name, name, strings.Join(t.methodNames(), ", "))
	}
	m := t.methods[k]
	prob, meth := m.Build(t.Sets.Train, seed)
	run := t.dir.Resume(RunName(m, seed), prob, meth)
	if err := run.Err(); err != nil {
		return nil, err
	}
	if run.Iter() == 0 {
		return nil, fmt.Errorf("paper: no saved run of %s with seed %d in %s: train it first", name, seed, t.dir)
	}
	return run, nil
}

// RunName is the name of the cvx run of method m with seed.
func RunName(m Method, seed int) string {
	return fmt.Sprintf("%s-seed%d", strings.NewReplacer(" ", "", "(", "", ")", "", ".", "", "_", "", ",", "", "=", "").Replace(m.Name), seed)
}
