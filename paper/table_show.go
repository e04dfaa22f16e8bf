package paper

import (
	"context"
	"fmt"
	"io"
	"path/filepath"

	"github.com/convexnn/convexnn/cvx"
	"github.com/convexnn/convexnn/plots"
)

// NotebookTable opens the table experiment name (Lookup) at size for a
// notebook: one run (seed 1) at the smaller sizes and every seed of the
// paper's at SizePaper, with its runs and results kept in cvx.StateDir()
// (results as <name>.json). fresh starts it afresh (StartTable: the results
// of an earlier execution are discarded); otherwise it continues where an
// earlier cell stopped (ResumeTable).
func NotebookTable(ctx context.Context, name string, size Size, fresh bool) (*Table, error) {
	e, err := Lookup(name)
	if err != nil {
		return nil, err
	}
	runs := 1
	if size == SizePaper {
		runs = e.Setup(size).Runs
	}
	open := ResumeTable
	if fresh {
		open = StartTable
	}
	dir := cvx.StateDir()
	return open(ctx, e, size, runs, cvx.RunDir(dir), filepath.Join(dir, name+".json"))
}

// RunsNote says what the table's figures are over: "one run (seed 1)" or
// "mean and (standard deviation) over N runs".
func (t *Table) RunsNote() string {
	if t.Runs > 1 {
		return fmt.Sprintf("mean and (standard deviation) over %d runs", t.Runs)
	}
	return "one run (seed 1)"
}

// ShowTable is notebook 10's cell for Tables 2 and 3: it trains
// back-propagation and ADMM on the experiment name (as convexnn reproduce
// does) in the notebook's table (NotebookTable, afresh), validating after
// every iteration (epoch); then shows our table beside the paper's and the
// learning curves of run 1: the training objective and the validation
// accuracy against wall time, set-up included (the ADMM curve starts flat,
// at the zero network's loss n/2, for its set-up). Progress lines go to out.
// Cancelling ctx stops training after the last finished epoch, which is
// kept.
func ShowTable(ctx context.Context, name string, size Size, out io.Writer) error {
	t, err := NotebookTable(ctx, name, size, true)
	if err != nil {
		return err
	}
	e := t.Experiment
	s := t.Settings
	n, d := t.Sets.Train.Dims()
	fmt.Fprintf(out, "%s: %d training images (d = %d), %d validation images; P_s = %d, %d ADMM iterations (ρ = %g, γ_a = %g, β = %g), back-prop %d epochs; %d run(s)\n",
		e.Title, n, d, len(t.Sets.Validation.Y), s.Ps, s.ADMMIter, s.Rho, s.Gamma, s.Beta, s.BPEpochs, t.Runs)
	// The paper's two rows (back-propagation and ADMM at P_s), not the
	// extra ADMM row with more patterns that reproduce adds to Table 2.
	methods := t.Methods()[:2]
	if err := t.Train(ctx, out, methods[0].Name, methods[1].Name); err != nil {
		return err
	}
	res := t.Result()
	head, rows := res.TableRows()
	caption := fmt.Sprintf("%s, ours: %d training images, P_s = %d; %s", e.Name, n, s.Ps, t.RunsNote())
	if err := cvx.Table(caption, head, rows); err != nil {
		return err
	}
	if err := cvx.Table(e.Name+", the paper", res.Paper.Head, res.Paper.Rows); err != nil {
		return err
	}
	var obj, val []plots.Series
	for k, m := range res.Methods {
		o, v := plots.Series{Name: m.Name}, plots.Series{Name: m.Name}
		if k == 1 {
			// The flat part: the zero network's loss ½Σy² = n/2 until the set-up ends.
			setup := m.Runs[0].SetupSeconds
			o.X, o.Y = []float64{0, setup}, []float64{float64(n) / 2, float64(n) / 2}
		}
		for _, p := range m.Curve {
			o.X, o.Y = append(o.X, p.Seconds), append(o.Y, p.Objective)
			v.X, v.Y = append(v.X, p.Seconds), append(v.Y, 100*p.Validation)
		}
		obj, val = append(obj, o), append(val, v)
	}
	f, err := plots.Line(plots.LineOptions{Title: e.Name + ": training objective against time (run 1)", XLabel: "seconds", YLabel: "½Σ(ŷ − y)² + regularization", LogY: true}, obj...)
	if err != nil {
		return err
	}
	if err := cvx.Show(f); err != nil {
		return err
	}
	g, err := plots.Line(plots.LineOptions{Title: e.Name + ": validation accuracy against time (run 1)", XLabel: "seconds", YLabel: "accuracy (%)"}, val...)
	if err != nil {
		return err
	}
	return cvx.Show(g)
}
