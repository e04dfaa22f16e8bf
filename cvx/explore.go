package cvx

import (
	"context"
	"errors"
	"fmt"
	"html"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/convexnn/convexnn/plots"
	"github.com/janpfeifer/gonb/gonbui"
	"github.com/janpfeifer/gonb/gonbui/comms"
	"github.com/janpfeifer/gonb/gonbui/dom"
	"gonum.org/v1/gonum/mat"
)

// Explorer is a chart with a slider over a list of values: moving the slider
// recomputes the chart for the value under it and redraws it in place. The
// explorer keeps its cell running and listening to the slider until its
// "done" button is pressed or the cell is interrupted; the last chart stays
// in the saved notebook. A cell without a live front-end (a headless run of
// the notebook, CONVEXNN_HEADLESS set, or the front-end not answering within
// ConnectWait) shows the chart at the start value and returns.
//
// Figures are memoized by slider position, and once the slider is live the
// other positions are computed in the background, nearest first, so that a
// move usually finds its figure ready; while one is computed, further moves
// coalesce into the latest position (the slider reports a position when it
// is released; the label follows it while it moves).
type Explorer struct {
	// Label names the slider's quantity ("β"); Values are its positions,
	// and Start the index of the first one shown.
	Label  string
	Values []float64
	Start  int
	// Figure computes the chart at value Values[i] and a status line
	// (objective, active neurons, certified gap) shown below it.
	Figure func(i int, v float64) (*plots.Figure, string, error)
	// ConnectWait bounds the wait for the front-end's first message; 0
	// means 5 s.
	ConnectWait time.Duration
}

// envHeadless, set by the headless notebook runs (internal/nbrun), makes an
// explorer show its start chart without trying to reach a front-end (GoNB's
// attempt to connect leaves its scripts in the saved notebook).
const envHeadless = "CONVEXNN_HEADLESS"

// Explored reports what an explorer did: the positions computed, in order
// (each once), the last position shown, and whether a live front-end drove
// it.
type Explored struct {
	Computed []int
	Last     int
	Live     bool
}

// Run shows the explorer and serves its slider until done (see Explorer).
func (e *Explorer) Run() (*Explored, error) {
	if len(e.Values) == 0 || e.Figure == nil {
		return nil, errors.New("cvx: Explorer needs Values and a Figure function")
	}
	if e.Start < 0 || e.Start >= len(e.Values) {
		return nil, fmt.Errorf("cvx: Explorer.Start %d: want an index of the %d values", e.Start, len(e.Values))
	}
	res := &Explored{Last: e.Start}
	type figure struct {
		fig  *plots.Figure
		line string // the status line
	}
	var (
		mu       sync.Mutex
		cache    = map[int]figure{}
		busy     = map[int]chan struct{}{} // positions being computed
		embedded = map[plots.Library]bool{}
	)
	// compute computes position i's figure once; later calls wait for it.
	compute := func(i int) (figure, error) {
		mu.Lock()
		if f, ok := cache[i]; ok {
			mu.Unlock()
			return f, nil
		}
		if ch, ok := busy[i]; ok {
			mu.Unlock()
			<-ch
			mu.Lock()
			f, ok := cache[i]
			mu.Unlock()
			if !ok {
				return f, fmt.Errorf("cvx: explorer: the figure at %s = %s failed", e.Label, formatValue(e.Values[i]))
			}
			return f, nil
		}
		ch := make(chan struct{})
		busy[i] = ch
		mu.Unlock()
		defer func() {
			mu.Lock()
			delete(busy, i)
			mu.Unlock()
			close(ch)
		}()
		t0 := time.Now()
		fig, status, err := e.Figure(i, e.Values[i])
		if err != nil {
			return figure{}, err
		}
		f := figure{fig: fig, line: fmt.Sprintf("%s = %s: %s (computed in %d ms)", e.Label, formatValue(e.Values[i]), status, time.Since(t0).Milliseconds())}
		mu.Lock()
		cache[i] = f
		res.Computed = append(res.Computed, i)
		mu.Unlock()
		return f, nil
	}
	// render is position i's output. The start position's embeds the
	// libraries the notebook's page needs (chartPage); every later figure
	// replaces it in the same output, so it embeds the same ones, keeping
	// the saved notebook self-contained. Live updates leave out the static
	// image (its encoding is most of the time of a redraw); the output kept
	// at the end has it.
	render := func(i int, static bool) (string, error) {
		f, err := compute(i)
		if err != nil {
			return "", err
		}
		a := plots.AssetsFromEnv()
		o := page.options(a, true)
		o.NoStatic = !static
		if o.Embed != nil {
			claim := o.Embed
			o.Embed = func(l plots.Library) bool {
				mu.Lock()
				defer mu.Unlock()
				if i == e.Start && static && claim(l) {
					embedded[l] = true
				}
				return embedded[l]
			}
		}
		h, err := f.fig.HTML(a, o)
		if err != nil {
			return "", err
		}
		return h + statusHTML(f.line), nil
	}
	first, err := render(e.Start, true)
	if err != nil {
		report(err)
		return res, err
	}
	if !InNotebook() {
		return res, nil
	}
	id := "convexnn-explore-" + gonbui.UniqueID()
	address := "/convexnn/explore/" + id
	gonbui.UpdateHTML(id+"-chart", first)
	gonbui.Sync()
	if os.Getenv(envHeadless) != "" {
		note(fmt.Sprintf("explorer: a headless run (%s), so the chart stays at %s = %s; in a live notebook a slider moves it", envHeadless, e.Label, formatValue(e.Values[e.Start])))
		return res, nil
	}

	// The controls talk to this process through GoNB's comms, whose
	// connection the kernel sets up on request (comms.Start); the request
	// is repeated, since GoNB's front-end gives up after 500 ms without the
	// kernel's answer, which a busy machine can exceed.
	moves := comms.Listen[int](address).LatestOnly()
	defer moves.Close()
	gonbui.UpdateHTML(id+"-controls", e.controlsHTML(id))
	wait := e.ConnectWait
	if wait <= 0 {
		wait = 5 * time.Second
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	connected := false
	for attempt := 0; attempt < 3 && !connected; attempt++ {
		comms.Start()
		dom.TransientJavascript(e.controlsJS(id, address))
		select {
		case <-moves.C: // the controls say hello with the start position
			connected = true
		case <-time.After(wait / 3):
		case <-ctx.Done():
			gonbui.UpdateHTML(id+"-controls", "")
			return res, nil
		}
	}
	if !connected {
		gonbui.UpdateHTML(id+"-controls", "")
		note(fmt.Sprintf("explorer: no live front-end answered within %v, so the chart stays at %s = %s", wait, e.Label, formatValue(e.Values[e.Start])))
		return res, nil
	}
	res.Live = true
	// While the reader looks, the other positions are computed in the
	// background, nearest first, so that a move finds its figure ready.
	prefetch, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for d := 1; d < len(e.Values); d++ {
			for _, i := range []int{e.Start - d, e.Start + d} {
				if i < 0 || i >= len(e.Values) || prefetch.Err() != nil {
					continue
				}
				compute(i) // an error shows when the slider reaches i
			}
		}
	}()
	defer func() { cancel(); wg.Wait() }()
	// The output kept in the notebook: the last figure, with its static
	// image.
	shown := e.Start
	defer func() {
		if shown == e.Start {
			return
		}
		if body, err := render(res.Last, true); err == nil {
			gonbui.UpdateHTML(id+"-chart", body)
			gonbui.Sync()
		}
	}()
	for {
		select {
		case <-ctx.Done():
			gonbui.UpdateHTML(id+"-controls", "")
			return res, nil
		case i, ok := <-moves.C:
			if !ok {
				return res, nil
			}
			if i < 0 { // the done button
				gonbui.UpdateHTML(id+"-controls", "")
				gonbui.Sync()
				return res, nil
			}
			if i >= len(e.Values) {
				continue
			}
			body, err := render(i, false)
			if err != nil {
				body = errorHTML(err)
			} else {
				res.Last = i
			}
			gonbui.UpdateHTML(id+"-chart", body)
			gonbui.Sync()
			shown = i
		}
	}
}

// controlsHTML is the slider, its value and the done button.
func (e *Explorer) controlsHTML(id string) string {
	var labels []string
	for _, v := range e.Values {
		labels = append(labels, strconv.Quote(formatValue(v)))
	}
	return fmt.Sprintf(`<div class="convexnn-explorer" id="%s" data-values="[%s]" style="font:13px sans-serif;display:flex;gap:12px;align-items:center;margin:6px 0">`+
		`<label>%s = <span class="convexnn-explorer-value">%s</span></label>`+
		`<input type="range" class="convexnn-explorer-slider" min="0" max="%d" step="1" value="%d" style="width:320px">`+
		`<button class="convexnn-explorer-done" type="button">done</button></div>`,
		id, html.EscapeString(strings.Join(labels, ",")), html.EscapeString(e.Label), html.EscapeString(formatValue(e.Values[e.Start])), len(e.Values)-1, e.Start)
}

// controlsJS wires the controls to address: the slider's position when it
// is released, −1 for the done button, and the start position once
// connected.
func (e *Explorer) controlsJS(id, address string) string {
	return fmt.Sprintf(`(function () {
  var id = %q, address = %q, tries = 0;
  function send(v) {
    var c = globalThis.gonb_comm;
    if (c && typeof c.send === "function") {
      Promise.resolve(c.send(address, v)).catch(function (e) { console.warn("convexnn explorer: " + e); });
    }
  }
  (function wire() {
    var box = document.getElementById(id), c = globalThis.gonb_comm;
    if (!box || !c || typeof c.send !== "function") {
      if (++tries < 100) { setTimeout(wire, 100); }
      return;
    }
    var slider = box.querySelector(".convexnn-explorer-slider");
    if (!box.getAttribute("data-wired")) {
      box.setAttribute("data-wired", "1");
      var label = box.querySelector(".convexnn-explorer-value");
      var values = JSON.parse(box.getAttribute("data-values"));
      slider.addEventListener("input", function () { label.textContent = values[+slider.value]; });
      slider.addEventListener("change", function () {
        label.textContent = values[+slider.value];
        send(+slider.value);
      });
      box.querySelector(".convexnn-explorer-done").addEventListener("click", function () {
        slider.disabled = true;
        send(-1);
      });
    }
    send(+slider.value);
  })();
})();`, id, address)
}

// formatValue writes a slider value briefly.
func formatValue(v float64) string { return strconv.FormatFloat(v, 'g', 4, 64) }

// ExploreRegions is an Explorer of decision regions against β on 2-D data,
// starting at the middle of betas: for each β, the hinge-loss program with
// biases over P sampled patterns (seed), solved to its certified optimum by
// the interior-point method, and the recovered network's regions with the
// training points; the status line gives the objective, the certified gap,
// the active neurons and the training accuracy.
func ExploreRegions(x *mat.Dense, y []float64, betas []float64, patterns int, seed uint64) (*Explored, error) {
	if x == nil {
		return nil, errors.New("cvx: ExploreRegions: no data")
	}
	if _, d := x.Dims(); d != 2 {
		return nil, fmt.Errorf("cvx: ExploreRegions needs 2-D data, the data has %d features", d)
	}
	for k, b := range betas {
		if !(b > 0) {
			return nil, fmt.Errorf("cvx: ExploreRegions: β[%d] = %v, want β > 0", k, b)
		}
	}
	e := &Explorer{Label: "β", Values: betas, Start: len(betas) / 2, Figure: func(_ int, beta float64) (*plots.Figure, string, error) {
		sol, err := Solve(Classify(x, y).Hinge().Beta(beta).Bias().SamplePatterns(patterns, seed), IPM{})
		if err != nil {
			return nil, "", err
		}
		acc, err := Accuracy(sol.Network, x, y)
		if err != nil {
			return nil, "", err
		}
		fig, err := DecisionRegionsFigure(sol.Network, x, y)
		if err != nil {
			return nil, "", err
		}
		return fig, fmt.Sprintf("objective %.6g (certified gap %.1e), %d active neurons, training accuracy %.1f%%",
			sol.Objective, sol.Gap, sol.Network.Width(), 100*acc), nil
	}}
	return e.Run()
}
