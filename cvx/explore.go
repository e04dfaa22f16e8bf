package cvx

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"math"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/convexnn/convexnn/plots"
	"github.com/convexnn/convexnn/solvers"
	"github.com/convexnn/convexnn/solvers/ipm"
	"github.com/convexnn/convexnn/solvers/scp"
	"github.com/janpfeifer/gonb/gonbui"
	"github.com/janpfeifer/gonb/gonbui/comms"
	"github.com/janpfeifer/gonb/gonbui/dom"
	"gonum.org/v1/gonum/mat"
)

// Explorer is a chart with sliders over lists of values: moving a slider
// recomputes the chart at the values under the sliders and redraws it in
// place. The explorer keeps its cell running and listening to the sliders
// until its "done" button is pressed or the cell is interrupted; the last
// chart stays in the saved notebook. A cell without a live front-end (a
// headless run of the notebook, CONVEXNN_HEADLESS set, or the front-end not
// answering within ConnectWait) shows the chart at the start values and
// returns.
//
// Figures are memoized by slider positions. The other positions are
// computed nearest first (in slider steps): for up to Ahead before the
// sliders appear, then in the background, so that a move usually finds its
// figure ready; while one is computed, further moves coalesce into the
// latest (a slider reports its position when it is released; its label
// follows it while it moves).
type Explorer struct {
	Sliders []Slider
	// Figure computes the chart at positions at (at[k] indexes
	// Sliders[k].Values) and a status line (objective, active neurons,
	// certified gap) shown below it. It may be called from several
	// goroutines at once, for different positions.
	Figure func(at []int) (*plots.Figure, string, error)
	// ConnectWait bounds the wait for the front-end's first message; 0
	// means 5 s.
	ConnectWait time.Duration
	// Ahead bounds the time spent computing the other positions' figures,
	// nearest first on two goroutines, after the start chart is shown and
	// before the sliders appear, so that the first moves find their
	// figures ready; 0 means 3 s, negative none. The background computes
	// the rest once the sliders are live.
	Ahead time.Duration
}

// Slider is one of an explorer's controls: a quantity, its values and the
// index of the value shown first.
type Slider struct {
	Label  string // "β", "P_s"
	Values []float64
	Start  int
}

// maxPositions bounds an explorer's grid of positions (the product of its
// sliders' lengths), each a figure to compute.
const maxPositions = 2000

// envHeadless, set by the headless notebook runs (internal/nbrun), makes an
// explorer show its start chart without trying to reach a front-end (GoNB's
// attempt to connect leaves its scripts in the saved notebook).
const envHeadless = "CONVEXNN_HEADLESS"

// Explored reports what an explorer did: the positions computed, in order
// (each once), the last positions shown, and whether a live front-end drove
// it.
type Explored struct {
	Computed [][]int
	Last     []int
	Live     bool
}

// Run shows the explorer and serves its sliders until done (see Explorer).
func (e *Explorer) Run() (*Explored, error) {
	g, err := e.grid()
	if err != nil {
		return nil, err
	}
	start := g.index(e.starts())
	res := &Explored{Last: g.at(start)}
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
				return f, fmt.Errorf("cvx: explorer: the figure at %s failed", e.describe(g.at(i)))
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
		fig, status, err := e.Figure(g.at(i))
		if err != nil {
			return figure{}, err
		}
		f := figure{fig: fig, line: fmt.Sprintf("%s: %s (computed in %d ms)", e.describe(g.at(i)), status, time.Since(t0).Milliseconds())}
		mu.Lock()
		cache[i] = f
		res.Computed = append(res.Computed, g.at(i))
		mu.Unlock()
		return f, nil
	}
	// render is position i's output. The start position's embeds the
	// libraries the notebook's page needs (chartPage), and so does the
	// output kept at the end, which replaces it, keeping the saved notebook
	// self-contained. Live updates leave out both the libraries (the start
	// output loaded them on the page; embedding echarts made each update
	// ten times larger, about 460 KB) and the static image (its encoding
	// was most of the time of a redraw).
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
				if i == start && static && claim(l) {
					embedded[l] = true
				}
				return static && embedded[l]
			}
		}
		h, err := f.fig.HTML(a, o)
		if err != nil {
			return "", err
		}
		return h + statusHTML(f.line), nil
	}
	first, err := render(start, true)
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
		note(fmt.Sprintf("explorer: a headless run (%s), so the chart stays at %s; in a live notebook sliders move it", envHeadless, e.describe(g.at(start))))
		return res, nil
	}

	if e.Ahead >= 0 {
		gonbui.UpdateHTML(id+"-controls", `<div class="convexnn-explorer-preparing" style="font:13px sans-serif;color:#555;margin:6px 0">computing the positions near the start; the sliders follow…</div>`)
		gonbui.Sync()
		e.computeAhead(g, start, func(i int) { compute(i) })
	}

	// The controls talk to this process through GoNB's comms, whose
	// connection the kernel sets up on request (comms.Start); the request
	// is repeated, since GoNB's front-end gives up after 500 ms without the
	// kernel's answer, which a busy machine can exceed. Each request's
	// controls script says hello with its attempt's number ([-2, k]), and
	// only the hello of the latest attempt counts: a late hello of an
	// earlier one came through a connection the latest request replaced
	// (GoNB's script closes the one before), which may itself have failed,
	// leaving the sliders with no way to the cell.
	// Positions travel as JSON text ("[4,1]"): GoNB's comms convert
	// numbers, not arrays of them.
	moves := comms.Listen[string](address).LatestOnly()
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
		dom.TransientJavascript(e.controlsJS(id, address, attempt))
		timeout := time.After(wait / 3)
	listen:
		for {
			select {
			case msg := <-moves.C:
				var hello []int
				if json.Unmarshal([]byte(msg), &hello) == nil && slices.Equal(hello, []int{-2, attempt}) {
					connected = true
					break listen
				}
			case <-timeout:
				break listen
			case <-ctx.Done():
				gonbui.UpdateHTML(id+"-controls", "")
				return res, nil
			}
		}
	}
	if !connected {
		gonbui.UpdateHTML(id+"-controls", "")
		note(fmt.Sprintf("explorer: no live front-end answered within %v, so the chart stays at %s", wait, e.describe(g.at(start))))
		return res, nil
	}
	res.Live = true
	yieldToFrontEnd()
	// While the reader looks, the other positions are computed in the
	// background, nearest first, so that a move finds its figure ready;
	// the background yields while a move's figure is computed (urgent).
	prefetch, cancel := context.WithCancel(ctx)
	var (
		wg     sync.WaitGroup
		urgent atomic.Int32
	)
	wg.Add(1)
	go func() {
		defer wg.Done()
		for _, i := range g.byDistance(start) {
			for urgent.Load() > 0 && prefetch.Err() == nil {
				time.Sleep(5 * time.Millisecond)
			}
			if prefetch.Err() != nil {
				return
			}
			compute(i) // an error shows when the sliders reach i
		}
	}()
	defer func() { cancel(); wg.Wait() }()
	// The output kept in the notebook: the last figure, with its static
	// image.
	shown, last := start, start
	defer func() {
		if shown == start {
			return
		}
		if body, err := render(last, true); err == nil {
			gonbui.UpdateHTML(id+"-chart", body)
			gonbui.Sync()
		}
	}()
	for {
		select {
		case <-ctx.Done():
			gonbui.UpdateHTML(id+"-controls", "")
			return res, nil
		case msg, ok := <-moves.C:
			if !ok {
				return res, nil
			}
			var at []int
			if json.Unmarshal([]byte(msg), &at) != nil {
				continue
			}
			if len(at) > 0 && at[0] == -2 { // a late hello
				continue
			}
			if len(at) > 0 && at[0] < 0 { // the done button
				gonbui.UpdateHTML(id+"-controls", "")
				gonbui.Sync()
				return res, nil
			}
			i := g.index(at)
			if i < 0 {
				continue
			}
			urgent.Add(1)
			body, err := render(i, false)
			urgent.Add(-1)
			if err != nil {
				body = errorHTML(err)
			} else {
				last, res.Last = i, g.at(i)
			}
			gonbui.UpdateHTML(id+"-chart", body)
			gonbui.Sync()
			shown = i
		}
	}
}

// computeAhead computes figures (by compute, memoized) nearest first from
// start on two goroutines until all are done or e.Ahead has passed (a
// figure under way then finishes).
func (e *Explorer) computeAhead(g positions, start int, compute func(int)) {
	limit := e.Ahead
	if limit == 0 {
		limit = 3 * time.Second
	}
	if limit < 0 {
		return
	}
	order := g.byDistance(start)
	deadline := time.Now().Add(limit)
	var next atomic.Int64
	var wg sync.WaitGroup
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(deadline) {
				k := int(next.Add(1)) - 1
				if k >= len(order) {
					return
				}
				compute(order[k]) // an error shows when the sliders reach it
			}
		}()
	}
	wg.Wait()
}

// positions is the grid of an explorer's slider positions, numbered in
// mixed radix (the last slider fastest).
type positions []int // the sliders' lengths

// grid checks the explorer's settings and returns its grid.
func (e *Explorer) grid() (positions, error) {
	if len(e.Sliders) == 0 || e.Figure == nil {
		return nil, errors.New("cvx: Explorer needs Sliders and a Figure function")
	}
	g := make(positions, len(e.Sliders))
	total := 1
	for k, s := range e.Sliders {
		if len(s.Values) == 0 {
			return nil, fmt.Errorf("cvx: Explorer: slider %d (%s) has no values", k, s.Label)
		}
		if s.Start < 0 || s.Start >= len(s.Values) {
			return nil, fmt.Errorf("cvx: Explorer: slider %s starts at %d: want an index of its %d values", s.Label, s.Start, len(s.Values))
		}
		g[k] = len(s.Values)
		total *= len(s.Values)
		if total > maxPositions {
			return nil, fmt.Errorf("cvx: Explorer: more than %d slider positions (each a figure to compute): use fewer values", maxPositions)
		}
	}
	return g, nil
}

func (e *Explorer) starts() []int {
	at := make([]int, len(e.Sliders))
	for k, s := range e.Sliders {
		at[k] = s.Start
	}
	return at
}

// index is the number of positions at, −1 when at is not on the grid.
func (g positions) index(at []int) int {
	if len(at) != len(g) {
		return -1
	}
	i := 0
	for k, n := range g {
		if at[k] < 0 || at[k] >= n {
			return -1
		}
		i = i*n + at[k]
	}
	return i
}

// at is the positions numbered i.
func (g positions) at(i int) []int {
	at := make([]int, len(g))
	for k := len(g) - 1; k >= 0; k-- {
		at[k] = i % g[k]
		i /= g[k]
	}
	return at
}

// byDistance lists the other positions by their distance from start in
// slider steps (ties by number).
func (g positions) byDistance(start int) []int {
	total := 1
	for _, n := range g {
		total *= n
	}
	from := g.at(start)
	dist := func(i int) int {
		d := 0
		for k, v := range g.at(i) {
			d += max(v-from[k], from[k]-v)
		}
		return d
	}
	var order []int
	for i := 0; i < total; i++ {
		if i != start {
			order = append(order, i)
		}
	}
	slices.SortStableFunc(order, func(a, b int) int { return dist(a) - dist(b) })
	return order
}

// describe names positions at: "β = 0.01, P_s = 32".
func (e *Explorer) describe(at []int) string {
	parts := make([]string, len(at))
	for k, v := range at {
		parts[k] = e.Sliders[k].Label + " = " + formatValue(e.Sliders[k].Values[v])
	}
	return strings.Join(parts, ", ")
}

// controlsHTML is a slider and its value per quantity, and the done button.
func (e *Explorer) controlsHTML(id string) string {
	var b strings.Builder
	fmt.Fprintf(&b, `<div class="convexnn-explorer" id="%s" style="font:13px sans-serif;display:flex;flex-wrap:wrap;gap:12px;align-items:center;margin:6px 0">`, id)
	for _, s := range e.Sliders {
		var labels []string
		for _, v := range s.Values {
			labels = append(labels, strconv.Quote(formatValue(v)))
		}
		fmt.Fprintf(&b, `<label data-values="[%s]">%s = <span class="convexnn-explorer-value">%s</span> `+
			`<input type="range" class="convexnn-explorer-slider" min="0" max="%d" step="1" value="%d" style="width:240px;vertical-align:middle"></label>`,
			html.EscapeString(strings.Join(labels, ",")), html.EscapeString(s.Label), html.EscapeString(formatValue(s.Values[s.Start])), len(s.Values)-1, s.Start)
	}
	b.WriteString(`<button class="convexnn-explorer-done" type="button">done</button></div>`)
	return b.String()
}

// controlsJS wires the controls to address: the sliders' positions when
// one is released, [−1] for the done button, and the hello [−2, attempt]
// once connected.
func (e *Explorer) controlsJS(id, address string, attempt int) string {
	return fmt.Sprintf(`(function () {
  var id = %q, address = %q, attempt = %d, tries = 0;
  function send(v) {
    var c = globalThis.gonb_comm;
    if (c && typeof c.send === "function") {
      Promise.resolve(c.send(address, JSON.stringify(v))).catch(function (e) { console.warn("convexnn explorer: " + e); });
    }
  }
  (function wire() {
    var box = document.getElementById(id), c = globalThis.gonb_comm;
    if (!box || !c || typeof c.send !== "function") {
      if (++tries < 100) { setTimeout(wire, 100); }
      return;
    }
    var sliders = Array.prototype.slice.call(box.querySelectorAll(".convexnn-explorer-slider"));
    function positions() { return sliders.map(function (s) { return +s.value; }); }
    if (!box.getAttribute("data-wired")) {
      box.setAttribute("data-wired", "1");
      sliders.forEach(function (slider) {
        var holder = slider.parentNode;
        var label = holder.querySelector(".convexnn-explorer-value");
        var values = JSON.parse(holder.getAttribute("data-values"));
        slider.addEventListener("input", function () { label.textContent = values[+slider.value]; });
        slider.addEventListener("change", function () {
          label.textContent = values[+slider.value];
          send(positions());
        });
      });
      box.querySelector(".convexnn-explorer-done").addEventListener("click", function () {
        sliders.forEach(function (s) { s.disabled = true; });
        send([-1]);
      });
    }
    send([-2, attempt]);
  })();
})();`, id, address, attempt)
}

// formatValue writes a slider value briefly.
func formatValue(v float64) string { return strconv.FormatFloat(v, 'g', 4, 64) }

// check2D refuses data an explorer of decision regions cannot draw.
func check2D(what string, x *mat.Dense, y []float64) error {
	if x == nil {
		return fmt.Errorf("cvx: %s: no data", what)
	}
	n, d := x.Dims()
	if d != 2 {
		return fmt.Errorf("cvx: %s needs 2-D data, the data has %d features", what, d)
	}
	if len(y) != n {
		return fmt.Errorf("cvx: %s: X has %d rows but y has %d labels", what, n, len(y))
	}
	return nil
}

// ExploreRegions is an Explorer of decision regions against β and the
// number of sampled patterns P_s on 2-D data, starting in the middle of
// both lists: at each (β, P_s), the hinge-loss program with biases over P_s
// patterns sampled with seed (nested: P_s patterns are the first P_s of any
// larger sample), solved to a certified relative gap of warmGap, and the
// recovered network's regions with the training points; the status line
// gives the objective, the certified gap, the active neurons, the training
// accuracy and the position the solve started from.
//
// Each solve is warm-started from the solution at the nearest position
// solved before (warmSolves, regionsRank): the working-set method
// (ipm.WorkingSet, ipm.WarmWorkingSet) starts from the patterns of that
// solution's nonzero groups and the sample's patterns it did not have, so
// that the interior-point method solves the program restricted to them,
// and the certificate on the whole program either proves that point
// optimal or names the patterns to add (docs/performance.md measures it).
func ExploreRegions(x *mat.Dense, y []float64, betas []float64, patterns []int, seed uint64) (*Explored, error) {
	if err := check2D("ExploreRegions", x, y); err != nil {
		return nil, err
	}
	for k, b := range betas {
		if !(b > 0) || math.IsInf(b, 0) {
			return nil, fmt.Errorf("cvx: ExploreRegions: β[%d] = %v, want 0 < β < ∞", k, b)
		}
	}
	ps := make([]float64, len(patterns))
	for k, p := range patterns {
		if p < 1 {
			return nil, fmt.Errorf("cvx: ExploreRegions: P_s[%d] = %d, want at least one pattern", k, p)
		}
		ps[k] = float64(p)
	}
	warm := &warmSolves{rank: regionsRank}
	var e *Explorer
	e = &Explorer{
		Sliders: []Slider{{Label: "β", Values: betas, Start: len(betas) / 2}, {Label: "P_s", Values: ps, Start: len(ps) / 2}},
		Figure: func(at []int) (*plots.Figure, string, error) {
			prog, err := Classify(x, y).Hinge().Beta(betas[at[0]]).Bias().SamplePatterns(patterns[at[1]], seed).Convex()
			if err != nil {
				return nil, "", err
			}
			sol, from, err := warm.solve(at, prog, solvers.Perturbation{})
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
			return fig, fmt.Sprintf("objective %.6g (certified gap %.1e, %d working-set rounds %s), %d active neurons, training accuracy %.1f%%",
				sol.Objective, sol.Gap, sol.Iterations, e.startedFrom(from), sol.Network.Width(), 100*acc), nil
		}}
	return e.Run()
}

// ExploreAdversarial is an Explorer of convex adversarial training against
// the radius ε on 2-D data, starting in the middle of radii: at each ε the
// robust hinge-loss program with biases and ℓ∞ perturbations (eq.
// hinge_adv_D) over the patterns Algorithm adv_train samples at that ε (a),
// solved to a certified relative gap of warmGap, and the chart of the
// points its network certifies (CertifiedScatterFigure); the status line
// gives the robust objective, its certified gap, where the solve started,
// and the accuracy under PGD at ε of that network and of standard (a
// network trained without perturbations; nil leaves it out).
//
// Each solve is warm-started from the solution at the nearest ε solved
// before: the working-set method starts from the patterns of its support,
// matched by activation (the samples differ with ε), and the new program's
// start patterns that the earlier sample lacks (ipm.WarmWorkingSet).
func ExploreAdversarial(x *mat.Dense, y []float64, beta float64, radii []float64, a AdvTrain, standard *Network) (*Explored, error) {
	if err := check2D("ExploreAdversarial", x, y); err != nil {
		return nil, err
	}
	if !(beta > 0) || math.IsInf(beta, 0) {
		return nil, fmt.Errorf("cvx: ExploreAdversarial: β = %v, want 0 < β < ∞", beta)
	}
	for k, e := range radii {
		if !(e > 0) || math.IsInf(e, 0) {
			return nil, fmt.Errorf("cvx: ExploreAdversarial: ε[%d] = %v, want 0 < ε < ∞", k, e)
		}
	}
	problem := func(e float64) *Problem {
		return Classify(x, y).Hinge().Beta(beta).Bias().Robust(e, LInf).RobustPatterns(a)
	}
	if len(radii) > 0 {
		if err := problem(radii[0]).Err(); err != nil {
			return nil, err
		}
	}
	warm := &warmSolves{rank: radiusRank}
	var e *Explorer
	e = &Explorer{
		Sliders: []Slider{{Label: "ε", Values: radii, Start: len(radii) / 2}},
		Figure: func(at []int) (*plots.Figure, string, error) {
			eps := radii[at[0]]
			prob := problem(eps)
			prog, err := prob.Convex()
			if err != nil {
				return nil, "", err
			}
			sol, from, err := warm.solve(at, prog, prob.Perturbation())
			if err != nil {
				return nil, "", err
			}
			attack := Attack{Method: PGD, Eps: eps}
			pgd, err := AttackAccuracy(sol.Network, x, y, Hinge, attack)
			if err != nil {
				return nil, "", err
			}
			line := fmt.Sprintf("robust objective %.6g (certified gap %.1e, %d working-set rounds %s); accuracy under PGD: adversarial %.1f%%",
				sol.Objective, sol.Gap, sol.Iterations, e.startedFrom(from), 100*pgd)
			if standard != nil {
				pgdStd, err := AttackAccuracy(standard, x, y, Hinge, attack)
				if err != nil {
					return nil, "", err
				}
				line += fmt.Sprintf(", standard %.1f%%", 100*pgdStd)
			}
			fig, err := CertifiedScatterFigure(sol.Network, x, y, eps, LInf)
			return fig, line, err
		}}
	return e.Run()
}

// startedFrom says where a warm-started solve began: at the positions from,
// or afresh (nil).
func (e *Explorer) startedFrom(from []int) string {
	if from == nil {
		return "started afresh"
	}
	return "warm-started from " + e.describe(from)
}

// warmGap is the certified relative gap of the explorers' working-set
// solves (ExploreRegions, ExploreAdversarial).
const warmGap = 1e-7

// warmSolves solves an explorer's programs by the working-set method
// (ipm.WorkingSet) to warmGap, each warm-started (ipm.WarmWorkingSet) from
// the solution at the nearest position solved before: the least rank(from,
// at) (the distance in slider steps, with the explorer's preferences), ties
// to the first position in order. It is safe for concurrent use.
type warmSolves struct {
	rank func(from, at [2]int) int

	mu     sync.Mutex
	solved map[[2]int]warmSolution
}

// warmSolution is a position's program, its perturbation and its
// solution's weights.
type warmSolution struct {
	prog *solvers.Program
	pert solvers.Perturbation
	w    solvers.Weights
}

// solve solves the program prog (with perturbation pert) of the explorer's
// position at (one or two sliders) and returns the position it started
// from (nil: none solved before, or the warm working set came out empty
// and the method chose its own). The solution's Status says whether the
// gap was reached.
func (s *warmSolves) solve(pos []int, prog *solvers.Program, pert solvers.Perturbation) (*Solution, []int, error) {
	t0 := time.Now()
	var at [2]int
	copy(at[:], pos)
	var from *[2]int
	var prev warmSolution
	s.mu.Lock()
	best := math.MaxInt
	for pos, sol := range s.solved {
		r := s.rank(pos, at)
		if r < best || r == best && slices.Compare(pos[:], from[:]) < 0 {
			p := pos
			best, from, prev = r, &p, sol
		}
	}
	s.mu.Unlock()
	var st *ipm.WorkingSetState
	if from != nil {
		start, err := ipm.WarmWorkingSet(prog, pert, prev.prog, prev.pert, prev.w)
		if err != nil {
			return nil, nil, err
		}
		if len(start) > 0 {
			st = &ipm.WorkingSetState{Patterns: start}
		} else {
			from = nil
		}
	}
	ws, err := ipm.NewWorkingSet(prog, pert, warmGap, 0, ipm.Options{}, st, nil)
	if err != nil {
		return nil, nil, err
	}
	// A solve that stops short of warmGap (the certificate may stall above
	// it, and the method then finds no pattern left to add) still has a
	// certified point, shown with its gap.
	sol, err := workingSetSolution(context.Background(), ws, t0)
	if sol == nil {
		return nil, nil, err
	}
	s.mu.Lock()
	if s.solved == nil {
		s.solved = map[[2]int]warmSolution{}
	}
	s.solved[at] = warmSolution{prog, pert, sol.Weights}
	s.mu.Unlock()
	if from == nil {
		return sol, nil, nil
	}
	return sol, from[:len(pos)], nil
}

// radiusRank is ExploreAdversarial's distance from position from to at,
// in slider steps.
func radiusRank(from, at [2]int) int { return max(from[0]-at[0], at[0]-from[0]) }

// regionsRank is ExploreRegions' distance from position from to at, in
// slider steps; among equally near solutions the same sample of patterns
// comes first, then a larger one (its support cut to the smaller sample),
// then a smaller one (whose sample lacks patterns of at's).
func regionsRank(from, at [2]int) int {
	steps := 4 * (max(from[0]-at[0], at[0]-from[0]) + max(from[1]-at[1], at[1]-from[1]))
	switch {
	case from[1] == at[1]:
		return steps
	case from[1] > at[1]:
		return steps + 1
	}
	return steps + 2
}

// ExploreSCP is an Explorer of the sampled convex program's network (eq.
// SCP2, squared loss, biases, β) against the number of sampled neurons N on
// 2-D data, starting in the middle of neurons: at each N the decision
// regions of the network the active-set method (scp.SolveActiveSet) trains
// to the program's optimum (certified by its duality gap, about 10⁻¹⁰
// relative), warm-started from the solution at the nearest N already
// computed. The samples are nested (N neurons are the first N of any
// larger sample with the seed), so the weights of a smaller sample, padded
// with zeros, and those of a larger one, cut, are points of the program at
// N.
func ExploreSCP(x *mat.Dense, y []float64, beta float64, neurons []int, seed uint64) (*Explored, error) {
	if err := check2D("ExploreSCP", x, y); err != nil {
		return nil, err
	}
	if !(beta > 0) || math.IsInf(beta, 0) {
		return nil, fmt.Errorf("cvx: ExploreSCP: β = %v, want 0 < β < ∞", beta)
	}
	if err := Classify(x, y).Err(); err != nil {
		return nil, err
	}
	most := 0
	ns := make([]float64, len(neurons))
	for k, n := range neurons {
		if n < 1 {
			return nil, fmt.Errorf("cvx: ExploreSCP: N[%d] = %d, want at least one neuron", k, n)
		}
		most, ns[k] = max(most, n), float64(n)
	}
	a := solvers.WithOnes(x)
	u, err := scp.SampleSphere(3, most, seed)
	if err != nil {
		return nil, err
	}
	h, err := scp.ReLUFeatures(a, u)
	if err != nil {
		return nil, err
	}
	w := &scpWarm{h: h, y: y, beta: beta, solved: map[int][]float64{}}
	e := &Explorer{
		Sliders: []Slider{{Label: "N", Values: ns, Start: len(ns) / 2}},
		Figure: func(at []int) (*plots.Figure, string, error) {
			n := neurons[at[0]]
			sol, from, err := w.solve(n)
			if err != nil {
				return nil, "", err
			}
			net, err := scp.Network(u.Slice(0, 3, 0, n).(*mat.Dense), sol.Alpha, true)
			if err != nil {
				return nil, "", err
			}
			acc, err := Accuracy(net, x, y)
			if err != nil {
				return nil, "", err
			}
			fig, err := DecisionRegionsFigure(net, x, y)
			if err != nil {
				return nil, "", err
			}
			warm := "started at zero"
			if from > 0 {
				warm = fmt.Sprintf("warm-started from N = %d", from)
			}
			return fig, fmt.Sprintf("objective %.6g (certified gap %.1e), %d active-set steps %s, %d active neurons, training accuracy %.1f%%",
				sol.Objective, sol.Gap/math.Max(1e-300, math.Abs(sol.Objective)), sol.Steps, warm, net.Width(), 100*acc), nil
		}}
	return e.Run()
}

// scpWarm solves the sampled program (eq. SCP2) at several N over nested
// samples, each solve warm-started from the solution at the nearest N
// solved before (ExploreSCP). It is safe for concurrent use.
type scpWarm struct {
	h    *mat.Dense // the features (X u_j)_+ of the largest sample
	y    []float64
	beta float64

	mu     sync.Mutex
	solved map[int][]float64 // α by N
}

// solve returns the solution of the program at the first n neurons
// (scp.SolveActiveSet) and the N it started from (0: zero).
func (w *scpWarm) solve(n int) (sol *scp.ActiveSetResult, from int, err error) {
	lasso := &scp.Lasso{H: w.h.Slice(0, len(w.y), 0, n).(*mat.Dense), Y: w.y, Beta: w.beta}
	w.mu.Lock()
	for m := range w.solved {
		if from == 0 || max(m-n, n-m) < max(from-n, n-from) {
			from = m
		}
	}
	var start []float64
	if from > 0 {
		// A smaller sample's weights padded with zeros, or a larger one's
		// cut: a point of the program at n.
		start = make([]float64, n)
		copy(start, w.solved[from])
	}
	w.mu.Unlock()
	if sol, err = scp.SolveActiveSet(lasso, start, 0); err != nil {
		return nil, from, err
	}
	w.mu.Lock()
	w.solved[n] = sol.Alpha
	w.mu.Unlock()
	return sol, from, nil
}
