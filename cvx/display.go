package cvx

import (
	"errors"
	"fmt"
	"html"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/convexnn/convexnn/plots"
	"github.com/janpfeifer/gonb/gonbui"
)

// InNotebook reports whether the process is a GoNB cell that can display
// rich output.
func InNotebook() bool { return gonbui.IsNotebook }

// stderr is where progress lines go outside a notebook.
var stderr io.Writer = os.Stderr

// Show displays a figure inline in the notebook, with the chart assets chosen
// by plots.AssetsFromEnv. Outside a notebook it does nothing.
func Show(f *plots.Figure) error {
	if !InNotebook() {
		return nil
	}
	a := plots.AssetsFromEnv()
	h, err := f.HTML(a, page.options(a, true))
	if err != nil {
		report(err)
		return err
	}
	display(h)
	return nil
}

// chartPage decides which chart outputs of a notebook carry the chart
// libraries (about 450 KB for echarts, 230 KB more for echarts-gl, each time).
// GoNB runs every cell as a new process of one kernel session, whose page is
// the notebook. The first output kept in the notebook that needs a library
// embeds it, claiming a marker file in the session's folder ($GONB_TMP_DIR);
// every later output leaves it out and finds it on the page, or in the copy
// next to the notebook (plots.WriteBeside into $GONB_DIR, the notebook's
// folder, served by the classic Notebook under files/) when the embedding
// output was cleared or re-run, or the notebook was reopened without it.
// Outside GoNB, with the libraries loaded by URL, or when a folder is not
// writable, every output embeds them, as before.
type chartPage struct {
	once    sync.Once
	markers string // the session's folder; "" when every output embeds
}

// page is the notebook's page as this cell's process sees it.
var page chartPage

// setup finds the session's folder and writes the copies next to the
// notebook, once per process.
func (p *chartPage) setup(a plots.Assets) {
	p.once.Do(func() {
		session, nbDir := os.Getenv("GONB_TMP_DIR"), os.Getenv("GONB_DIR")
		if a.Dir == "" || session == "" || nbDir == "" {
			return
		}
		if st, err := os.Stat(session); err != nil || !st.IsDir() {
			return
		}
		if err := plots.WriteBeside(a, nbDir); err != nil {
			return
		}
		p.markers = session
	})
}

// marker is the file that says an output of the session embeds lib.
func (p *chartPage) marker(lib plots.Library) string {
	return filepath.Join(p.markers, "convexnn-embeds-"+string(lib))
}

// options returns the HTMLOptions of a chart output: kept says whether the
// output stays in the notebook (a transient live update does not, so it
// embeds a library the session has not embedded yet without claiming it).
func (p *chartPage) options(a plots.Assets, kept bool) plots.HTMLOptions {
	p.setup(a)
	if p.markers == "" {
		return plots.HTMLOptions{}
	}
	return plots.HTMLOptions{Beside: plots.BesideDir, Embed: func(lib plots.Library) bool {
		if !kept {
			_, err := os.Stat(p.marker(lib))
			return err != nil
		}
		f, err := os.OpenFile(p.marker(lib), os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
		if err != nil {
			// Claimed by an earlier output, or the folder is gone: in
			// the latter case embedding is the safe choice.
			return !errors.Is(err, fs.ErrExist)
		}
		f.Close()
		return true
	}}
}

// showHTML displays rendered HTML in the notebook, or reports the error of
// rendering it; outside a notebook it does nothing.
func showHTML(h string, err error) error {
	if err != nil {
		report(err)
		return err
	}
	if InNotebook() {
		display(h)
	}
	return nil
}

// display shows HTML and waits until GoNB has taken it: a display sent just
// before the cell's process exits can otherwise be lost.
func display(h string) {
	gonbui.DisplayHTML(h)
	gonbui.Sync()
}

// report shows an error: a red box in a notebook, a line on stderr outside.
func report(err error) {
	if err == nil {
		return
	}
	if InNotebook() {
		display(errorHTML(err))
		return
	}
	fmt.Fprintln(stderr, err)
}

// errorHTML is an error as a notebook output shows it (red; the headless
// runner, internal/nbrun, names a cell with such an output as failed).
func errorHTML(err error) string {
	return `<pre style="color:#b00020;white-space:pre-wrap;border-left:3px solid #b00020;padding-left:8px">` + html.EscapeString(err.Error()) + `</pre>`
}

// statusHTML is the status line under a live chart (Progress, Explorer).
func statusHTML(line string) string {
	return `<div class="convexnn-status" style="font-family:monospace;font-size:12px">` + html.EscapeString(line) + `</div>`
}

// note shows an informational message: a grey line in a notebook, a line
// on stderr outside.
func note(msg string) {
	if InNotebook() {
		display(`<div style="color:#555;font-size:12px;font-family:monospace">` + html.EscapeString(msg) + `</div>`)
		return
	}
	fmt.Fprintln(stderr, msg)
}

// Check ends the cell when err is not nil: it shows the error and exits the
// process with status 1 (130 when the run was interrupted), so the notebook
// marks the cell as failed and stops. Use it around calls whose failure
// should stop the notebook: cvx.Check(run.Iterate(100)).
func Check(err error) {
	if err == nil {
		return
	}
	report(err)
	if errors.Is(err, ErrInterrupted) {
		os.Exit(130)
	}
	os.Exit(1)
}

// Must returns v when err is nil, and otherwise ends the cell as Check
// does: x := cvx.Must(net.Predict(grid)).
func Must[T any](v T, err error) T {
	Check(err)
	return v
}

// Progress is a display that updates in place while a long computation runs:
// in a notebook, one output whose chart and status line are replaced
// (gonbui.UpdateHTML), ending in a final chart that stays in the saved
// notebook; outside a notebook, progress lines on stderr. Updates are
// throttled so that rendering never takes more than a small share of the run.
type Progress struct {
	title      string
	id         string
	notebook   bool
	start      time.Time
	last       time.Time
	cost       time.Duration // time spent rendering so far
	assetsSent bool
	// MinInterval is the shortest time between two updates: 0 means 500 ms
	// in a notebook and 1 s on stderr.
	MinInterval time.Duration
	// MaxShare bounds the share of wall time spent rendering updates; 0 means 5%.
	MaxShare float64
}

// NewProgress starts a progress display.
func NewProgress(title string) *Progress {
	p := &Progress{title: title, notebook: InNotebook(), start: time.Now()}
	if p.notebook {
		p.id = "convexnn-progress-" + gonbui.UniqueID()
	}
	return p
}

func (p *Progress) due(now time.Time) bool {
	minGap := p.MinInterval
	if minGap <= 0 {
		minGap = 500 * time.Millisecond
		if !p.notebook {
			minGap = time.Second
		}
	}
	share := p.MaxShare
	if share <= 0 {
		share = 0.05
	}
	if now.Sub(p.last) < minGap {
		return false
	}
	// Rendering so far must stay below share·(wall time).
	return float64(p.cost) <= share*float64(now.Sub(p.start))
}

// Update shows a status line and, in a notebook, the chart fig builds, if
// enough time has passed since the last update; otherwise it returns at once
// without calling fig.
func (p *Progress) Update(line string, fig func() (*plots.Figure, error)) {
	now := time.Now()
	if !p.due(now) {
		return
	}
	p.last = now
	defer func() { p.cost += time.Since(now) }()
	if !p.notebook {
		fmt.Fprintf(stderr, "%s: %s\n", p.title, line)
		return
	}
	p.render(line, fig, !p.assetsSent, false)
}

// Done shows the final status and chart, which stay in the saved notebook.
func (p *Progress) Done(line string, fig func() (*plots.Figure, error)) {
	if !p.notebook {
		fmt.Fprintf(stderr, "%s: %s\n", p.title, line)
		return
	}
	p.render(line, fig, true, true)
	gonbui.Sync()
}

func (p *Progress) render(line string, fig func() (*plots.Figure, error), withAssets, final bool) {
	body := ""
	if fig != nil {
		f, err := fig()
		if err == nil {
			a := plots.AssetsFromEnv()
			o := page.options(a, final)
			o.OmitAssets, o.NoStatic = !withAssets, !final
			body, err = f.HTML(a, o)
		}
		if err != nil {
			body = errorHTML(err)
		} else if withAssets {
			p.assetsSent = true
		}
	}
	gonbui.UpdateHTML(p.id, body+statusHTML(line))
}
