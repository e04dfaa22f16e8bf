// Package browser checks, in a real headless Chromium without network access,
// that the charts of an HTML page (an nbconvert export of a notebook, or a
// test page) actually draw.
//
// Charts are the elements
//
//	<div class="convexnn-chart" data-chart-kind="2d|3d" id="...">
//
// into which echarts (and echarts-gl for 3-D charts) put their <canvas>
// elements. [Check] opens the page, waits until the charts have drawn, takes a
// screenshot of every chart and measures how much of it differs from the
// background of the page. It also collects console errors, uncaught exceptions
// and failed resource loads.
//
// The browser has no network: every request that is not file: or data: fails
// as if the machine were offline (net::ERR_INTERNET_DISCONNECTED), except
// requests to the loopback origins listed in Options.AllowOrigins, such as a
// Jupyter server started by a test, which [CheckURL] can open.
package browser

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/fetch"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/cdproto/target"
	"github.com/chromedp/chromedp"
)

// EnvExecPath is the environment variable that names the Chromium binary when
// Options.ExecPath is empty.
const EnvExecPath = "CONVEXNN_CHROMIUM"

// Defaults of Options.
const (
	DefaultTimeout   = 60 * time.Second
	DefaultMaxSettle = 15 * time.Second // the longest wait for the charts to draw when Options.Settle is 0
	DefaultWidth     = 1200
	DefaultHeight    = 900
)

// noChartsGrace is how long Check waits for charts on a page that has none
// after its load event.
const noChartsGrace = time.Second

// Options configures Check. The zero value is usable.
type Options struct {
	// ExecPath is the Chromium (or Chrome) binary. Default: $CONVEXNN_CHROMIUM,
	// else "chromium" or "google-chrome" found on PATH.
	ExecPath string
	// Timeout bounds the whole check, browser start-up included. Default 60s.
	Timeout time.Duration
	// Settle is a fixed wait after the load event before the charts are
	// measured. If zero, Check polls until every chart has a canvas with
	// drawn pixels (and the drawing has stopped changing), or 15s passed.
	Settle time.Duration
	// Width and Height of the viewport in CSS pixels. Default 1200x900.
	Width, Height int

	// AllowOrigins lists origins the page may reach, such as
	// "http://127.0.0.1:8888" for a local Jupyter server (its HTTP requests
	// and its web sockets). Only loopback IP literals are accepted
	// (127.0.0.0/8 and [::1]); a missing port means the scheme's default.
	// Every other request still fails as offline, including other ports of
	// the loopback interface.
	AllowOrigins []string

	// Prepare, if set, runs after the page's load event and before the
	// charts are measured, with the page's context (for chromedp.Run): for
	// example to drive a web application until its charts are on the page.
	// Its time counts towards Timeout. An error ends the check with the
	// partial report.
	Prepare func(ctx context.Context) error

	// Finish, if set, runs after the charts were measured, with the page
	// still open (for example to take a screenshot). An error is returned
	// with the full report.
	Finish func(ctx context.Context) error
}

// Chart is the state of one chart div after the page settled.
type Chart struct {
	ID, Kind string
	// Canvases is the number of <canvas> elements inside the div.
	Canvases int
	// Inked is the fraction of the on-screen pixels of the chart (after it is
	// scrolled into view) that differ from the background behind it,
	// measured on a screenshot, so it works for WebGL canvases too.
	Inked float64
	// Text is the visible text inside the div (first 200 characters, white
	// space collapsed), e.g. an error message the chart printed.
	Text string
}

// Report is the result of Check.
type Report struct {
	URL    string
	Charts []Chart
	// Console lists console.error calls, uncaught exceptions, failed resource
	// loads and other browser errors, each with its source location where
	// known. Identical messages are listed once.
	Console []string
	// Warnings lists console.warn calls and browser warnings. They are not
	// Problems.
	Warnings []string
	// Math lists the markdown cells (.jp-MarkdownOutput of nbconvert's lab
	// template, .text_cell_render of the classic one) whose visible text,
	// after MathJax finished typesetting, still shows TeX: a literal $, a
	// \command or _{, with the text around it. Code spans and blocks do not
	// count.
	Math []string
}

// Problems returns a human-readable list of what is wrong with the page: no
// charts, charts without a canvas, charts with less than minInk of their
// pixels drawn, and every Console entry. It is empty when all is well.
func (r *Report) Problems(minInk float64) []string {
	var out []string
	if len(r.Charts) == 0 {
		out = append(out, "no charts found")
	}
	for i, c := range r.Charts {
		name := c.ID
		if name == "" {
			name = fmt.Sprintf("#%d", i+1)
		}
		if c.Kind != "" {
			name += " (" + c.Kind + ")"
		}
		var p string
		switch {
		case c.Canvases == 0:
			p = fmt.Sprintf("chart %s: no canvas", name)
		case c.Inked < minInk:
			p = fmt.Sprintf("chart %s: only %s of pixels drawn (want at least %s)", name, percent(c.Inked), percent(minInk))
		default:
			continue
		}
		if c.Text != "" {
			p += fmt.Sprintf("; text: %q", c.Text)
		}
		out = append(out, p)
	}
	for _, c := range r.Console {
		out = append(out, "console: "+c)
	}
	for _, m := range r.Math {
		out = append(out, "unrendered TeX: "+m)
	}
	return out
}

func percent(f float64) string {
	return strings.TrimSuffix(strings.TrimSuffix(fmt.Sprintf("%.2f", f*100), "0"), ".0") + "%"
}

// FindExecPath returns the browser binary Check would use for o.
func FindExecPath(o Options) (string, error) {
	if o.ExecPath != "" {
		p, err := exec.LookPath(o.ExecPath)
		if err != nil {
			return "", fmt.Errorf("browser: Options.ExecPath %q: %w", o.ExecPath, err)
		}
		return p, nil
	}
	if env := os.Getenv(EnvExecPath); env != "" {
		p, err := exec.LookPath(env)
		if err != nil {
			return "", fmt.Errorf("browser: $%s=%q: %w", EnvExecPath, env, err)
		}
		return p, nil
	}
	for _, name := range []string{"chromium", "google-chrome", "chromium-browser", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p, nil
		}
	}
	return "", errors.New(`browser: no Chromium found: install it (Debian: apt-get install chromium), put "chromium" or "google-chrome" on PATH, or set $` + EnvExecPath)
}

// switches are the boolean command-line flags Check starts the browser with.
var switches = []string{
	// Nothing the browser itself does over the network (see flags).
	"disable-quic",
	"disable-background-networking",
	"disable-component-update",
	"disable-sync",
	"disable-domain-reliability",
	"disable-client-side-phishing-detection",
	"safebrowsing-disable-auto-update",
	"disable-default-apps",
	"disable-extensions",
	"disable-breakpad",
	"disable-crash-reporter",
	"no-pings",
	"metrics-recording-only",
	// No throttling of the page, and the same behaviour on any machine.
	"disable-background-timer-throttling",
	"disable-backgrounding-occluded-windows",
	"disable-renderer-backgrounding",
	"disable-hang-monitor",
	"disable-dev-shm-usage",
	"use-mock-keychain",
}

// flags returns the command-line flags Check starts the browser with (without
// --user-data-dir and --remote-debugging-port, which Check adds): those of
// switches, and those with a value. bypass lists the host:port pairs (of
// Options.AllowOrigins) that go around the dead proxy; hosts are their IP
// addresses, which the host resolver must leave alone.
func flags(width, height int, bypass, hosts []string) []chromedp.ExecAllocatorOption {
	resolver := "MAP * ~NOTFOUND"
	for _, h := range hosts {
		resolver += ", EXCLUDE " + h
	}
	opts := []chromedp.ExecAllocatorOption{
		chromedp.Headless, // --headless (new headless mode), --hide-scrollbars, --mute-audio
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.WindowSize(width, height),
		// WebGL (echarts-gl) on the CPU. Recent Chromium refuses the
		// software fallback for WebGL without --enable-unsafe-swiftshader.
		chromedp.Flag("enable-unsafe-swiftshader", true),
		chromedp.Flag("use-angle", "swiftshader"),
		// No network, also not for the browser itself. The page's own
		// requests are failed through the Fetch domain; these flags are the
		// backstop for everything else (workers, web sockets, the browser).
		// Everything, loopback included (<-loopback> removes Chromium's
		// implicit bypass of localhost), goes to a proxy on the discard
		// port, except the allowed origins, and no name resolves.
		chromedp.Flag("host-resolver-rules", resolver),
		chromedp.Flag("proxy-server", "127.0.0.1:9"),
		chromedp.Flag("proxy-bypass-list", strings.Join(append([]string{"<-loopback>"}, bypass...), ";")),
		chromedp.Flag("disable-features", "Translate,OptimizationHints,MediaRouter,DialMediaRouteProvider,CalculateNativeWinOcclusion,InterestFeedContentSuggestions,AutofillServerCommunication"),
		// Rendering, and the password store, as on any machine.
		chromedp.Flag("force-color-profile", "srgb"),
		chromedp.Flag("force-device-scale-factor", "1"),
		chromedp.Flag("password-store", "basic"),
	}
	for _, name := range switches {
		opts = append(opts, chromedp.Flag(name, true))
	}
	return opts
}

// Check opens the HTML file at path (or a file: URL) in headless Chromium
// without network and reports on its charts and console. On an error after
// the page was opened, the partial report is returned with the error.
func Check(ctx context.Context, path string, o Options) (*Report, error) {
	pageURL, err := fileURL(path)
	if err != nil {
		return nil, err
	}
	return run(ctx, pageURL, o)
}

// CheckURL is Check for a page at a URL: a file: URL, or a page of one of
// Options.AllowOrigins, such as a notebook served by a local Jupyter server.
func CheckURL(ctx context.Context, pageURL string, o Options) (*Report, error) {
	pageURL, err := checkedURL(pageURL, o.AllowOrigins)
	if err != nil {
		return nil, err
	}
	return run(ctx, pageURL, o)
}

// checkedURL returns pageURL as the browser opens it (a file: URL made
// absolute), or an error when it is neither a file: URL nor a page of one
// of allow's origins.
func checkedURL(pageURL string, allow []string) (string, error) {
	u, err := url.Parse(pageURL)
	if err != nil {
		return "", fmt.Errorf("browser: %w", err)
	}
	switch strings.ToLower(u.Scheme) {
	case "file":
		return fileURL(pageURL)
	case "http", "https":
		origins, err := parseOrigins(allow)
		if err != nil {
			return "", err
		}
		if !origins.allowed(pageURL) {
			return "", fmt.Errorf("browser: %s is not in Options.AllowOrigins %q", pageURL, allow)
		}
		return pageURL, nil
	}
	return "", fmt.Errorf("browser: %q is not a file:, http: or https: URL", pageURL)
}

// run checks the page at pageURL in a browser of its own.
func run(ctx context.Context, pageURL string, o Options) (*Report, error) {
	o = o.withDefaults()
	ctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	b, err := start(ctx, o)
	if err != nil {
		return nil, err
	}
	defer b.Close()
	tctx, tcancel := within(ctx, b.bctx)
	defer tcancel()
	return b.check(tctx, pageURL, o)
}

// within returns the context of tab (a chromedp context, for chromedp.Run)
// that ends when ctx ends, with ctx's deadline.
func within(ctx, tab context.Context) (context.Context, context.CancelFunc) {
	tctx, cancel := context.WithCancel(tab)
	stop := context.AfterFunc(ctx, cancel)
	if d, ok := ctx.Deadline(); ok {
		var dcancel context.CancelFunc
		tctx, dcancel = context.WithDeadline(tctx, d)
		return tctx, func() { dcancel(); stop(); cancel() }
	}
	return tctx, func() { stop(); cancel() }
}

// withDefaults returns o with its zero sizes and timeout set to the
// defaults.
func (o Options) withDefaults() Options {
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.Width <= 0 {
		o.Width = DefaultWidth
	}
	if o.Height <= 0 {
		o.Height = DefaultHeight
	}
	return o
}

// Browser is one headless Chromium that checks several pages one after
// another: it starts once for all of them (a start and its first page cost
// about 4 s of CPU on these machines, a later page its own drawing only).
// Each page opens in a browser context of its own (as a fresh profile: no
// cache, storage or cookies from the pages before it), in the one tab that
// is open and in front: a tab behind another gets no animation frames, and
// its charts never draw.
type Browser struct {
	mu      sync.Mutex // held by a check: one page at a time
	o       Options    // the start's: AllowOrigins and the window size
	origins origins
	dataDir string
	stderr  *tailBuffer
	bctx    context.Context // the first tab, which starts the browser
	closeFn func()
}

// Start starts a browser for [Browser.Check]; o's AllowOrigins, ExecPath and
// size hold for every page, its Timeout for the start. Close it after use.
func Start(ctx context.Context, o Options) (*Browser, error) {
	o = o.withDefaults()
	ctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	return start(ctx, o)
}

// start starts the browser; ctx bounds the start only.
func start(ctx context.Context, o Options) (*Browser, error) {
	origins, err := parseOrigins(o.AllowOrigins)
	if err != nil {
		return nil, err
	}
	execPath, err := FindExecPath(o)
	if err != nil {
		return nil, err
	}
	dataDir, err := os.MkdirTemp("", "convexnn-chromium-")
	if err != nil {
		return nil, fmt.Errorf("browser: %w", err)
	}
	b := &Browser{o: o, origins: origins, dataDir: dataDir, stderr: &tailBuffer{}}
	opts := append(flags(o.Width, o.Height, origins.bypass(), origins.hosts()),
		chromedp.ExecPath(execPath),
		chromedp.UserDataDir(dataDir),
		chromedp.CombinedOutput(b.stderr),
	)
	// The browser lives until Close, past ctx (which bounds the start).
	allocCtx, allocCancel := chromedp.NewExecAllocator(context.WithoutCancel(ctx), opts...)
	quiet := func(string, ...any) {}
	bctx, bcancel := chromedp.NewContext(allocCtx, chromedp.WithLogf(quiet), chromedp.WithErrorf(quiet))
	b.bctx = bctx
	b.closeFn = func() {
		// Close the browser gracefully; if that hangs, allocCancel kills it.
		done := make(chan struct{})
		go func() { _ = chromedp.Cancel(bctx); close(done) }()
		t := time.NewTimer(5 * time.Second)
		defer t.Stop()
		select {
		case <-done:
		case <-t.C:
		}
		bcancel()
		allocCancel()
		os.RemoveAll(dataDir)
	}
	// Start the browser, within ctx.
	started := make(chan error, 1)
	go func() { started <- chromedp.Run(bctx) }()
	select {
	case err = <-started:
	case <-ctx.Done():
		err = ctx.Err()
	}
	if err != nil {
		b.Close()
		msg := strings.TrimSpace(b.stderr.String())
		if msg != "" {
			msg = "\nbrowser output:\n" + msg
		}
		return nil, fmt.Errorf("browser: starting %s: %w%s", execPath, err, msg)
	}
	return b, nil
}

// Close ends the browser and removes its profile, after the check that
// runs, if any.
func (b *Browser) Close() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closeFn != nil {
		b.closeFn()
		b.closeFn = nil
	}
}

// Check is [Check] in a fresh window of b, in a browser context of its own (o's Timeout, Settle, Prepare and
// Finish hold for the page; its AllowOrigins must be b's). A check called
// while another runs waits for it; o's Timeout counts from its own start.
func (b *Browser) Check(ctx context.Context, path string, o Options) (*Report, error) {
	pageURL, err := fileURL(path)
	if err != nil {
		return nil, err
	}
	return b.checkTab(ctx, pageURL, o)
}

// CheckURL is [CheckURL] in a fresh window of b, as [Browser.Check].
func (b *Browser) CheckURL(ctx context.Context, pageURL string, o Options) (*Report, error) {
	pageURL, err := checkedURL(pageURL, o.AllowOrigins)
	if err != nil {
		return nil, err
	}
	return b.checkTab(ctx, pageURL, o)
}

// checkTab checks pageURL, a URL checkedURL accepted, in a fresh window of b.
func (b *Browser) checkTab(ctx context.Context, pageURL string, o Options) (*Report, error) {
	o = o.withDefaults()
	if strings.Join(o.AllowOrigins, " ") != strings.Join(b.o.AllowOrigins, " ") {
		return nil, fmt.Errorf("browser: Options.AllowOrigins %q differ from the browser's %q", o.AllowOrigins, b.o.AllowOrigins)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closeFn == nil {
		return nil, errors.New("browser: Check on a closed Browser")
	}
	ctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	// A browser context of the page's own, and a tab in a window of its own
	// (in front: the only one besides the first, blank tab).
	bexec := func(ctx context.Context) context.Context {
		return cdp.WithExecutor(ctx, chromedp.FromContext(b.bctx).Browser)
	}
	sctx, scancel := within(ctx, b.bctx)
	defer scancel()
	bcID, err := target.CreateBrowserContext().WithDisposeOnDetach(true).Do(bexec(sctx))
	if err != nil {
		return nil, fmt.Errorf("browser: a browser context for %s: %w", pageURL, err)
	}
	defer func() {
		// The context's tabs close with it; a fresh context, since ctx may
		// have ended.
		dctx, dcancel := context.WithTimeout(context.WithoutCancel(b.bctx), 5*time.Second)
		defer dcancel()
		_ = target.DisposeBrowserContext(bcID).Do(bexec(dctx))
	}()
	tabID, err := target.CreateTarget("about:blank").WithBrowserContextID(bcID).WithNewWindow(true).Do(bexec(sctx))
	if err != nil {
		return nil, fmt.Errorf("browser: opening a tab for %s: %w", pageURL, err)
	}
	tab, closeTab := chromedp.NewContext(b.bctx, chromedp.WithTargetID(tabID))
	defer closeTab()
	tctx, tcancel := within(ctx, tab)
	defer tcancel()
	if err := chromedp.Run(tctx, chromedp.ActionFunc(func(ctx context.Context) error {
		return target.ActivateTarget(tabID).Do(bexec(ctx))
	})); err != nil {
		return nil, fmt.Errorf("browser: opening a tab for %s: %w", pageURL, err)
	}
	return b.check(tctx, pageURL, o)
}

// Pool is a few browsers that check pages side by side, each one page at a
// time ([Browser]): on two cores, two of them keep both busy while a page
// loads or settles.
type Pool struct {
	free chan *Browser
	all  []*Browser
}

// StartPool starts n browsers with o (as [Start]). Close it after use.
func StartPool(ctx context.Context, n int, o Options) (*Pool, error) {
	if n < 1 {
		return nil, fmt.Errorf("browser: a pool of %d browsers", n)
	}
	p := &Pool{free: make(chan *Browser, n), all: make([]*Browser, n)}
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() { defer wg.Done(); p.all[i], errs[i] = Start(ctx, o) }()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		p.Close()
		return nil, err
	}
	for _, b := range p.all {
		p.free <- b
	}
	return p, nil
}

// Check is [Browser.Check] on the first browser of p that is free.
func (p *Pool) Check(ctx context.Context, path string, o Options) (*Report, error) {
	return p.with(ctx, func(b *Browser) (*Report, error) { return b.Check(ctx, path, o) })
}

// CheckURL is [Browser.CheckURL] on the first browser of p that is free.
func (p *Pool) CheckURL(ctx context.Context, pageURL string, o Options) (*Report, error) {
	return p.with(ctx, func(b *Browser) (*Report, error) { return b.CheckURL(ctx, pageURL, o) })
}

// with calls check with the first browser of p that is free.
func (p *Pool) with(ctx context.Context, check func(*Browser) (*Report, error)) (*Report, error) {
	var b *Browser
	select {
	case b = <-p.free:
	case <-ctx.Done():
		return nil, fmt.Errorf("browser: waiting for a browser of the pool: %w", ctx.Err())
	}
	defer func() { p.free <- b }()
	return check(b)
}

// LazyPool is a Pool of N browsers (2 when N is 0) with options O, started
// at the first Get: for a test binary whose tests share browsers, when only
// some of its tests need them. Close it after the last Get, as a Pool.
type LazyPool struct {
	N    int
	O    Options
	once sync.Once
	p    *Pool
	err  error
}

// Get returns the pool, starting it at the first call; a failed start is
// returned to every call.
func (l *LazyPool) Get() (*Pool, error) {
	l.once.Do(func() {
		n := l.N
		if n == 0 {
			n = 2
		}
		l.p, l.err = StartPool(context.Background(), n, l.O)
	})
	return l.p, l.err
}

// Close ends the pool's browsers if Get started them.
func (l *LazyPool) Close() {
	if l.p != nil {
		l.p.Close()
	}
}

// Close ends p's browsers, after the checks that run.
func (p *Pool) Close() {
	for _, b := range p.all {
		if b != nil {
			b.Close()
		}
	}
}

// check opens pageURL in the tab of bctx (a chromedp context) and reports on
// it.
func (b *Browser) check(bctx context.Context, pageURL string, o Options) (*Report, error) {
	rep := &Report{URL: pageURL}
	col := &collector{origins: b.origins}
	chromedp.ListenTarget(bctx, func(ev any) { col.event(bctx, ev) })

	var setup []chromedp.Action
	if interceptRequests {
		// Fail every request of the page that is not for a local file.
		setup = append(setup, fetch.Enable().WithPatterns([]*fetch.RequestPattern{{URLPattern: "*"}}))
	}
	err := chromedp.Run(bctx, append(setup,
		chromedp.EmulateViewport(int64(o.Width), int64(o.Height)),
		chromedp.Navigate(pageURL),
	)...)
	if err != nil {
		col.fill(rep)
		return rep, fmt.Errorf("browser: opening %s: %w", pageURL, err)
	}

	if o.Prepare != nil {
		if err := o.Prepare(bctx); err != nil {
			col.fill(rep)
			return rep, fmt.Errorf("browser: preparing %s: %w", pageURL, err)
		}
	}

	charts, err := settle(bctx, o)
	if charts != nil {
		rep.Charts = charts
	}
	if err != nil {
		col.fill(rep)
		return rep, fmt.Errorf("browser: checking %s: %w", pageURL, err)
	}
	if err := chromedp.Run(bctx, chromedp.Evaluate(mathJS, &rep.Math,
		func(p *runtime.EvaluateParams) *runtime.EvaluateParams { return p.WithAwaitPromise(true) })); err != nil {
		col.fill(rep)
		return rep, fmt.Errorf("browser: reading the markdown of %s: %w", pageURL, err)
	}
	if o.Finish != nil {
		err = o.Finish(bctx)
	}
	col.fill(rep)
	if err != nil {
		return rep, fmt.Errorf("browser: finishing %s: %w", pageURL, err)
	}
	return rep, nil
}

// mathJS waits for MathJax 2 (when the page has it) to finish typesetting,
// at most 20 s, then lists the markdown cells whose visible text, without
// code and without what MathJax drew, still shows TeX.
const mathJS = `(async () => {
  if (window.MathJax && MathJax.Hub && MathJax.Hub.Queue) {
    await Promise.race([new Promise(r => MathJax.Hub.Queue(r)), new Promise(r => setTimeout(r, 20000))]);
  }
  const out = [];
  document.querySelectorAll('.text_cell_render, .jp-MarkdownOutput').forEach((el, i) => {
    const c = el.cloneNode(true);
    c.querySelectorAll('code, pre, script, .MathJax, .MathJax_CHTML, .MathJax_Display, .MathJax_Preview, .MJX_Assistive_MathML').forEach(x => x.remove());
    const text = c.textContent.replace(/\s+/g, ' ');
    const m = text.match(/\$|\\[A-Za-z]+|_\{/);
    if (m) {
      out.push('markdown cell ' + (i + 1) + ': ' + JSON.stringify(text.substring(Math.max(0, m.index - 50), m.index + 50)));
    }
  });
  return out;
})()`

// interceptRequests turns the Fetch interception of the page's requests on.
// The tests turn it off to check that the command-line flags alone keep the
// browser off the network.
var interceptRequests = true

func fileURL(path string) (string, error) {
	if strings.HasPrefix(path, "file:") {
		u, err := url.Parse(path)
		if err != nil {
			return "", fmt.Errorf("browser: %w", err)
		}
		path = u.Path
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", fmt.Errorf("browser: %w", err)
	}
	st, err := os.Stat(abs)
	if err != nil {
		return "", fmt.Errorf("browser: %w", err)
	}
	if st.IsDir() {
		return "", fmt.Errorf("browser: %s is a directory", abs)
	}
	return (&url.URL{Scheme: "file", Path: filepath.ToSlash(abs)}).String(), nil
}

// settle waits for the charts to draw and measures them.
func settle(ctx context.Context, o Options) ([]Chart, error) {
	const poll = 250 * time.Millisecond
	if o.Settle > 0 {
		if err := sleep(ctx, o.Settle); err != nil {
			return nil, err
		}
		charts, _, err := measureAll(ctx, shots{})
		return charts, err
	}

	deadline := time.Now().Add(DefaultMaxSettle)
	if d, ok := ctx.Deadline(); ok {
		// Leave time to measure at the end.
		if reserve := time.Until(d) / 5; time.Now().Add(DefaultMaxSettle + reserve).After(d) {
			deadline = d.Add(-reserve)
		}
	}

	// Phase 1: until every chart has a canvas with pixels that differ from
	// the background. A page without charts gets a short grace period, in
	// case its charts are inserted by a script.
	loaded := time.Now()
	inked := map[int]bool{}
	seen := shots{}
	for {
		states, err := chartStates(ctx)
		if err != nil {
			return nil, err
		}
		ready := len(states) > 0 || time.Since(loaded) >= noChartsGrace
		scrolled := false
		for i, s := range states {
			if inked[i] {
				continue
			}
			if s.Canvases == 0 && strings.TrimSpace(s.Text) != "" {
				// No canvas but text: the chart shows a message (its
				// library failed to load), it will not draw.
				continue
			}
			if s.Canvases == 0 {
				ready = false
				if !scrolled {
					// A chart that draws lazily when it becomes visible.
					scrolled = true
					_ = chromedp.Run(ctx, chromedp.Evaluate(fmt.Sprintf(scrollJS, i), nil))
				}
				continue
			}
			ink, err := measure(ctx, i, seen)
			if err != nil {
				return nil, err
			}
			if ink > 0 {
				inked[i] = true
			} else {
				ready = false
			}
		}
		if ready || !time.Now().Before(deadline) {
			break
		}
		if err := sleep(ctx, poll); err != nil {
			return nil, err
		}
	}

	// Phase 2: until the drawing stops changing (animations), at most 3s
	// more and not past the deadline.
	charts, prev, err := measureAll(ctx, seen)
	if err != nil {
		return charts, err
	}
	stable := time.Now().Add(3 * time.Second)
	if stable.After(deadline) {
		stable = deadline
	}
	for time.Now().Before(stable) {
		if err := sleep(ctx, poll); err != nil {
			return charts, err
		}
		c, cur, err := measureAll(ctx, seen)
		if err != nil {
			return charts, err
		}
		charts = c
		if sameInk(prev, cur) {
			break
		}
		prev = cur
	}
	return charts, nil
}

func sameInk(a, b []float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		d := a[i] - b[i]
		if d < 0 {
			d = -d
		}
		if d > 0.002 && d > 0.05*max(a[i], b[i]) {
			return false
		}
	}
	return true
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

type chartState struct {
	ID       string `json:"id"`
	Kind     string `json:"kind"`
	Canvases int    `json:"canvases"`
	Text     string `json:"text"`
}

func chartStates(ctx context.Context) ([]chartState, error) {
	var s []chartState
	if err := chromedp.Run(ctx, chromedp.Evaluate(statesJS, &s)); err != nil {
		return nil, err
	}
	return s, nil
}

// measureAll measures every chart and returns them and their ink.
func measureAll(ctx context.Context, seen shots) ([]Chart, []float64, error) {
	states, err := chartStates(ctx)
	if err != nil {
		return nil, nil, err
	}
	charts := make([]Chart, len(states))
	inks := make([]float64, len(states))
	for i, s := range states {
		ink, err := measure(ctx, i, seen)
		if err != nil {
			return nil, nil, err
		}
		text := s.Text
		if utf8.RuneCountInString(text) > 200 {
			text = string([]rune(text)[:200])
		}
		charts[i] = Chart{ID: s.ID, Kind: s.Kind, Canvases: s.Canvases, Inked: ink, Text: text}
		inks[i] = ink
	}
	_ = chromedp.Run(ctx, chromedp.Evaluate(`window.scrollTo(0, 0)`, nil))
	return charts, inks, nil
}

type chartBox struct {
	Found   bool       `json:"found"`
	X       float64    `json:"x"`
	Y       float64    `json:"y"`
	W       float64    `json:"w"`
	H       float64    `json:"h"`
	BG      [3]float64 `json:"bg"`
	BGImage bool       `json:"bgImage"`
}

// shots keeps, per chart, the last screenshot measured and its ink.
type shots map[int]shot

type shot struct {
	png []byte
	box chartBox
	ink float64
}

// measure scrolls chart i into view and measures the ink on a screenshot of
// its on-screen part. A screenshot identical to the one seen last for the
// chart, of the same box, has its ink: a chart that stopped drawing is not
// decoded again while the page settles.
func measure(ctx context.Context, i int, seen shots) (float64, error) {
	var box chartBox
	err := chromedp.Run(ctx, chromedp.Evaluate(fmt.Sprintf(boxJS, i), &box,
		func(p *runtime.EvaluateParams) *runtime.EvaluateParams { return p.WithAwaitPromise(true) }))
	if err != nil {
		return 0, err
	}
	if !box.Found || box.W < 1 || box.H < 1 {
		return 0, nil
	}
	var buf []byte
	err = chromedp.Run(ctx, chromedp.ActionFunc(func(ctx context.Context) error {
		var err error
		buf, err = page.CaptureScreenshot().
			WithFormat(page.CaptureScreenshotFormatPng).
			WithFromSurface(true).
			WithClip(&page.Viewport{X: box.X, Y: box.Y, Width: box.W, Height: box.H, Scale: 1}).
			Do(ctx)
		return err
	}))
	if err != nil {
		return 0, err
	}
	if last, ok := seen[i]; ok && last.box == box && bytes.Equal(last.png, buf) {
		return last.ink, nil
	}
	img, err := png.Decode(bytes.NewReader(buf))
	if err != nil {
		return 0, fmt.Errorf("decoding screenshot: %w", err)
	}
	bg := [3]uint8{uint8(box.BG[0]), uint8(box.BG[1]), uint8(box.BG[2])}
	if box.BGImage {
		bg = borderColor(img)
	}
	ink := inkFraction(img, bg, inkTolerance)
	seen[i] = shot{png: buf, box: box, ink: ink}
	return ink, nil
}

// inkTolerance is the largest per-channel difference (0-255) from the
// background that still counts as background.
const inkTolerance = 12

// inkFraction returns the fraction of the pixels of img that differ from bg
// by more than tol in some channel.
func inkFraction(img image.Image, bg [3]uint8, tol int) float64 {
	b := img.Bounds()
	total := b.Dx() * b.Dy()
	if total == 0 {
		return 0
	}
	inked := func(r, g, bl uint8) bool {
		return absDiff(int(r), int(bg[0])) > tol || absDiff(int(g), int(bg[1])) > tol || absDiff(int(bl), int(bg[2])) > tol
	}
	// The screenshots' own types are read from their pixel slices: At's
	// color interface per pixel was most of the tests' time in this package
	// under the race detector.
	var pix []uint8
	var offset func(x, y int) int
	translucent := false // NRGBA: a pixel that is not opaque is premultiplied by At
	switch m := img.(type) {
	case *image.RGBA:
		pix, offset = m.Pix, m.PixOffset
	case *image.NRGBA:
		pix, offset, translucent = m.Pix, m.PixOffset, true
	}
	n := 0
	for y := b.Min.Y; y < b.Max.Y; y++ {
		if pix == nil {
			for x := b.Min.X; x < b.Max.X; x++ {
				if inked(rgb8(img.At(x, y))) {
					n++
				}
			}
			continue
		}
		row := pix[offset(b.Min.X, y):offset(b.Max.X, y)]
		for i := 0; i < len(row); i += 4 {
			r, g, bl := row[i], row[i+1], row[i+2]
			if translucent && row[i+3] != 0xff {
				r, g, bl = rgb8(img.At(b.Min.X+i/4, y))
			}
			if inked(r, g, bl) {
				n++
			}
		}
	}
	return float64(n) / float64(total)
}

// rgb8 returns c's alpha-premultiplied red, green and blue in 0–255.
func rgb8(c color.Color) (r, g, b uint8) {
	r16, g16, b16, _ := c.RGBA()
	return uint8(r16 >> 8), uint8(g16 >> 8), uint8(b16 >> 8)
}

func absDiff(a, b int) int {
	if a > b {
		return a - b
	}
	return b - a
}

// borderColor returns the most common color of the outermost pixels of img.
func borderColor(img image.Image) [3]uint8 {
	b := img.Bounds()
	count := map[[3]uint8]int{}
	add := func(x, y int) {
		r, g, bl := rgb8(img.At(x, y))
		count[[3]uint8{r, g, bl}]++
	}
	for x := b.Min.X; x < b.Max.X; x++ {
		add(x, b.Min.Y)
		add(x, b.Max.Y-1)
	}
	for y := b.Min.Y; y < b.Max.Y; y++ {
		add(b.Min.X, y)
		add(b.Max.X-1, y)
	}
	best, bestN := [3]uint8{255, 255, 255}, 0
	for c, n := range count {
		if n > bestN || n == bestN && less(c, best) {
			best, bestN = c, n
		}
	}
	return best
}

func less(a, b [3]uint8) bool {
	for i := range a {
		if a[i] != b[i] {
			return a[i] < b[i]
		}
	}
	return false
}
