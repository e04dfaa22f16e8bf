package paper

import (
	"encoding/json"
	"fmt"
	"html"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	checkout "github.com/convexnn/convexnn/internal/repo"
	"github.com/convexnn/convexnn/plots"
)

// TableRows are the measured table's header and rows.
func (res *Result) TableRows() ([]string, [][]string) {
	adv := res.Settings.Adversarial()
	head := []string{"Method", "Validation accuracy"}
	if adv {
		head = append(head, "FGSM adv.", "PGD adv.")
	}
	ho := len(res.Methods) > 0 && res.Methods[0].Holdout != nil
	if ho {
		head = append(head, fmt.Sprintf("Held out (%d)", res.HoldImages))
		if adv {
			head = append(head, "Held out FGSM", "Held out PGD")
		}
	}
	head = append(head, "Peak validation (at)", "Wall time (s), median", "Training loss", "Objective", "Certified gap")
	opt := slices.ContainsFunc(res.Methods, func(m MethodResult) bool { return m.OptimumObjective != nil })
	if opt {
		head = append(head, "Certified optimum (gap)")
	}
	head = append(head, "Iterations", "Peak RSS (MB)", "Peak Go heap (MB)")
	var rows [][]string
	for _, m := range res.Methods {
		row := append([]string{m.Name}, (&Accuracies{Accuracy: m.ValidationAccuracy, AccuracySD: m.ValidationAccuracySD,
			FGSM: m.FGSMAccuracy, PGD: m.PGDAccuracy}).cells(len(m.Runs), adv)...)
		if ho {
			row = append(row, m.Holdout.cells(len(m.Runs), adv)...)
		}
		at := make([]string, len(m.PeakIterations))
		for q, it := range m.PeakIterations {
			at[q] = fmt.Sprint(it)
		}
		row = append(row, fmt.Sprintf("%.2f %% (%s)", 100*m.PeakValidation, strings.Join(at, ", ")), fmt.Sprintf("%.4g", m.WallSecondsMedian), fmt.Sprintf("%.4g", m.TrainingLoss), fmt.Sprintf("%.4g", m.Objective), gapCell(m.CertifiedGap))
		if opt {
			c := "—"
			if m.OptimumObjective != nil {
				c = fmt.Sprintf("%.4g (%.2g)", *m.OptimumObjective, *m.OptimumGap)
			}
			row = append(row, c)
		}
		row = append(row, fmt.Sprint(m.Iterations), fmt.Sprintf("%.0f", float64(m.PeakRSSBytes)/1e6), fmt.Sprintf("%.0f", float64(m.PeakHeapBytes)/1e6))
		rows = append(rows, row)
	}
	return head, rows
}

// PrintTables prints the measured table and the paper's as text.
func (res *Result) PrintTables(w io.Writer) {
	head, rows := res.TableRows()
	PrintText(w, fmt.Sprintf("%s — measured (%s size, %d run(s))", res.Experiment, res.Size, res.Runs), head, rows)
	PrintText(w, "the paper", res.Paper.Head, res.Paper.Rows)
}

// PrintText prints a table as aligned text under its caption.
func PrintText(w io.Writer, caption string, head []string, rows [][]string) {
	width := make([]int, len(head))
	for j, h := range head {
		width[j] = len([]rune(h))
	}
	for _, r := range rows {
		for j, c := range r {
			width[j] = max(width[j], len([]rune(c)))
		}
	}
	fmt.Fprintf(w, "   %s:\n", caption)
	line := func(cells []string) {
		var b strings.Builder
		b.WriteString("   ")
		for j, c := range cells {
			pad := strings.Repeat(" ", width[j]-len([]rune(c)))
			if j == 0 {
				b.WriteString(c + pad)
			} else {
				b.WriteString("  " + pad + c)
			}
		}
		fmt.Fprintln(w, b.String())
	}
	line(head)
	for _, r := range rows {
		line(r)
	}
}

// reportAssets returns where the report gets echarts: $CONVEXNN_ASSETS,
// else the repository's .cache/assets (both embedded, so the report renders
// offline), else the network.
func reportAssets() (plots.Assets, string) {
	a := plots.AssetsFromEnv()
	if a.Dir != "" {
		return a, ""
	}
	if repo, err := checkout.Root(); err == nil {
		dir := filepath.Join(repo, ".cache", "assets")
		if _, err := os.Stat(filepath.Join(dir, "echarts.min.js")); err == nil {
			return plots.Assets{Dir: dir}, ""
		}
	}
	return a, "echarts loads from " + a.BaseURL + ": no local copy (run make setup, or set CONVEXNN_ASSETS), so the charts need the network; the static images below each chart do not"
}

// HTMLTable returns a table as HTML (escaped), with its caption.
func HTMLTable(caption string, head []string, rows [][]string) string {
	var b strings.Builder
	b.WriteString("<table>\n<caption>" + html.EscapeString(caption) + "</caption>\n<tr>")
	for _, h := range head {
		b.WriteString("<th>" + html.EscapeString(h) + "</th>")
	}
	b.WriteString("</tr>\n")
	for _, r := range rows {
		b.WriteString("<tr>")
		for _, c := range r {
			b.WriteString("<td>" + html.EscapeString(c) + "</td>")
		}
		b.WriteString("</tr>\n")
	}
	b.WriteString("</table>\n")
	return b.String()
}

// reportPage is what every report.html holds, in order: the title, a
// summary line, the tables (HTML), the definitions of the result's fields,
// the settings as JSON with the data notes, and the charts under
// chartsCaption. html renders it as one standalone page.
type reportPage struct {
	name, title, summary string
	tables               string
	definitions          map[string]string
	settings             any
	dataNotes            string
	chartsCaption        string
	figs                 []*plots.Figure
}

func (p reportPage) html() (string, error) {
	assets, warn := reportAssets()
	var b strings.Builder
	b.WriteString(`<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>` + html.EscapeString(p.name) + `</title>
<style>
body{font-family:sans-serif;max-width:1100px;margin:1em auto;padding:0 1em}
table{border-collapse:collapse;margin:1em 0;font-size:13px}
caption{text-align:left;font-weight:bold;padding:4px 0}
th,td{padding:3px 8px;border-bottom:1px solid #ccc;text-align:right}
th:first-child,td:first-child{text-align:left}
pre{background:#f6f6f6;padding:.5em;font-size:12px;white-space:pre-wrap}
</style></head><body>
`)
	b.WriteString("<h1>" + html.EscapeString(p.title) + "</h1>\n<p>" + html.EscapeString(p.summary) + "</p>\n")
	if warn != "" {
		b.WriteString("<p><em>" + html.EscapeString(warn) + "</em></p>\n")
	}
	b.WriteString(p.tables)
	keys := make([]string, 0, len(p.definitions))
	for k := range p.definitions {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	b.WriteString("<ul>\n")
	for _, k := range keys {
		b.WriteString("<li><b>" + html.EscapeString(k) + "</b>: " + html.EscapeString(p.definitions[k]) + "</li>\n")
	}
	b.WriteString("</ul>\n")
	settings, err := json.MarshalIndent(p.settings, "", "  ")
	if err != nil {
		return "", err
	}
	b.WriteString("<h2>Settings</h2>\n<pre>" + html.EscapeString(string(settings)) + "</pre>\n<p>" + html.EscapeString(p.dataNotes) + "</p>\n")
	b.WriteString("<h2>" + html.EscapeString(p.chartsCaption) + "</h2>\n")
	for _, f := range p.figs {
		h, err := f.HTML(assets, plots.HTMLOptions{})
		if err != nil {
			return "", err
		}
		b.WriteString("<div>" + h + "</div>\n")
	}
	b.WriteString("</body></html>\n")
	return b.String(), nil
}

// ReportHTML is report.html: the measured and the paper's tables, the
// settings and the charts, standalone.
func (res *Result) ReportHTML() (string, error) {
	head, rows := res.TableRows()
	figs, err := res.Figures()
	if err != nil {
		return "", err
	}
	held := ""
	if res.HoldImages > 0 {
		held = fmt.Sprintf(", %d held-out images", res.HoldImages)
	}
	return reportPage{name: res.Experiment, title: res.Title,
		summary: fmt.Sprintf("convexnn reproduce %s, size %s, %d run(s), %s; %d training images (d = %d), %d validation images%s; total %.1f s on %d CPUs.",
			res.Experiment, res.Size, res.Runs, res.Started.Format(time.RFC3339), res.TrainImages, res.Dim, res.ValImages, held, res.WallSeconds, res.Host.CPUs),
		tables:      HTMLTable("Measured", head, rows) + HTMLTable("The paper", res.Paper.Head, res.Paper.Rows),
		definitions: res.Definitions, settings: res.Settings, dataNotes: res.DataNotes,
		chartsCaption: "Charts (run 1)", figs: figs}.html()
}

// Figures are the convergence and accuracy charts of run 1 (and for Table
// 5 the accuracies, clean and attacked, as bars).
func (res *Result) Figures() ([]*plots.Figure, error) {
	var obj, acc []plots.Series
	for _, m := range res.Methods {
		o, a := plots.Series{Name: m.Name}, plots.Series{Name: m.Name}
		for _, p := range m.Curve {
			if p.Objective > 0 && !math.IsInf(p.Objective, 0) {
				o.X, o.Y = append(o.X, p.Seconds), append(o.Y, p.Objective)
			}
			if !math.IsNaN(p.Validation) {
				a.X, a.Y = append(a.X, p.Seconds), append(a.Y, 100*p.Validation)
			}
		}
		obj, acc = append(obj, o), append(acc, a)
	}
	var figs []*plots.Figure
	f, err := plots.Line(plots.LineOptions{Title: "Training objective against wall time (ADMM from its set-up's end)", XLabel: "seconds", YLabel: "objective", LogY: true}, obj...)
	if err != nil {
		return nil, err
	}
	figs = append(figs, f)
	if f, err = plots.Line(plots.LineOptions{Title: "Validation accuracy against wall time", XLabel: "seconds", YLabel: "accuracy (%)"}, acc...); err != nil {
		return nil, err
	}
	figs = append(figs, f)
	if res.Settings.Adversarial() {
		var names []string
		var clean, fgsm, pgd []float64
		pct := func(v float64) float64 { return math.Round(1e4*v) / 100 }
		short := strings.NewReplacer("practical convex training ", "", "convex adversarial training ", "", "(", "", ")", "")
		for _, m := range res.Methods {
			names = append(names, short.Replace(m.Name))
			clean, fgsm, pgd = append(clean, pct(m.ValidationAccuracy)), append(fgsm, pct(*m.FGSMAccuracy)), append(pgd, pct(*m.PGDAccuracy))
		}
		if f, err = plots.Bar(plots.BarOptions{Title: "Validation accuracy, clean and under attack", XLabel: "method", YLabel: "accuracy (%)"}, names,
			plots.Bars{Name: "clean", Values: clean}, plots.Bars{Name: "FGSM", Values: fgsm}, plots.Bars{Name: "PGD", Values: pgd}); err != nil {
			return nil, err
		}
		figs = append(figs, f)
	}
	return figs, nil
}

// gapCell formats a certified gap, "—" for none (back-propagation).
func gapCell(g *float64) string {
	if g == nil {
		return "—"
	}
	return fmt.Sprintf("%.2g", *g)
}
