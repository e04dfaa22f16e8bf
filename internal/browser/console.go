package browser

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/url"
	"slices"
	"strings"
	"sync"

	cdplog "github.com/chromedp/cdproto/log"

	"github.com/chromedp/cdproto/fetch"
	"github.com/chromedp/cdproto/inspector"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

// collector gathers console messages and blocks network requests.
type collector struct {
	origins  origins // allowed besides local files
	mu       sync.Mutex
	console  []string
	warnings []string
	seen     map[string]bool
}

func (c *collector) add(warning bool, msg string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.seen == nil {
		c.seen = map[string]bool{}
	}
	key := fmt.Sprint(warning, msg)
	if c.seen[key] {
		return
	}
	c.seen[key] = true
	if warning {
		c.warnings = append(c.warnings, msg)
	} else {
		c.console = append(c.console, msg)
	}
}

func (c *collector) fill(r *Report) {
	c.mu.Lock()
	defer c.mu.Unlock()
	r.Console = append([]string(nil), c.console...)
	r.Warnings = append([]string(nil), c.warnings...)
}

// event handles one CDP event of the page. It must not block.
func (c *collector) event(ctx context.Context, ev any) {
	switch ev := ev.(type) {
	case *fetch.EventRequestPaused:
		u := ""
		if ev.Request != nil {
			u = ev.Request.URL
		}
		go func() {
			var a chromedp.Action
			if allowed(u) || c.origins.allowed(u) {
				a = fetch.ContinueRequest(ev.RequestID)
			} else {
				a = fetch.FailRequest(ev.RequestID, network.ErrorReasonInternetDisconnected)
			}
			_ = chromedp.Run(ctx, a)
		}()

	case *runtime.EventExceptionThrown:
		c.add(false, exceptionText(ev.ExceptionDetails))

	case *runtime.EventConsoleAPICalled:
		switch ev.Type {
		case runtime.APITypeError, runtime.APITypeAssert:
			c.add(false, consoleText(ev))
		case runtime.APITypeWarning:
			c.add(true, consoleText(ev))
		}

	case *cdplog.EventEntryAdded:
		e := ev.Entry
		if e == nil {
			return
		}
		switch e.Level {
		case cdplog.LevelError:
			c.add(false, logText(e))
		case cdplog.LevelWarning:
			c.add(true, logText(e))
		}

	case *inspector.EventTargetCrashed:
		c.add(false, "page crashed")

	case *page.EventJavascriptDialogOpening:
		c.add(true, fmt.Sprintf("%s dialog: %s", ev.Type, ev.Message))
		go func() { _ = chromedp.Run(ctx, page.HandleJavaScriptDialog(true)) }()
	}
}

// allowed reports whether the page may load u: only local files and inline
// data.
func allowed(u string) bool {
	scheme, _, _ := strings.Cut(u, ":")
	switch strings.ToLower(scheme) {
	case "file", "data", "blob", "about", "chrome-extension", "devtools":
		return true
	}
	return false
}

// origins is a set of allowed origins, "scheme://host:port" with http or
// https as scheme.
type origins map[string]bool

// parseOrigins checks and normalizes Options.AllowOrigins.
func parseOrigins(list []string) (origins, error) {
	o := origins{}
	for _, s := range list {
		u, err := url.Parse(s)
		if err != nil {
			return nil, fmt.Errorf("browser: Options.AllowOrigins: %w", err)
		}
		if scheme := strings.ToLower(u.Scheme); scheme != "http" && scheme != "https" {
			return nil, fmt.Errorf("browser: Options.AllowOrigins: %q is not an http or https origin", s)
		}
		if (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" || u.User != nil {
			return nil, fmt.Errorf("browser: Options.AllowOrigins: %q is not an origin (scheme://host:port)", s)
		}
		key, ok := originOf(u)
		if !ok {
			return nil, fmt.Errorf("browser: Options.AllowOrigins: %q has no host", s)
		}
		ip := net.ParseIP(u.Hostname())
		if ip == nil || !ip.IsLoopback() {
			return nil, fmt.Errorf("browser: Options.AllowOrigins: %q: only loopback IP addresses (127.0.0.1, [::1]) can be allowed", s)
		}
		o[key] = true
	}
	return o, nil
}

// originOf returns the origin of u as "scheme://host:port", with ws and wss
// counted as http and https, and whether u has an http(s) or ws(s) scheme
// and a host.
func originOf(u *url.URL) (string, bool) {
	scheme := strings.ToLower(u.Scheme)
	port := u.Port()
	switch scheme {
	case "http", "ws":
		scheme = "http"
		if port == "" {
			port = "80"
		}
	case "https", "wss":
		scheme = "https"
		if port == "" {
			port = "443"
		}
	default:
		return "", false
	}
	host := strings.ToLower(u.Hostname())
	if host == "" {
		return "", false
	}
	if ip := net.ParseIP(host); ip != nil {
		host = ip.String()
	}
	return scheme + "://" + net.JoinHostPort(host, port), true
}

// allowed reports whether u is on one of the origins.
func (o origins) allowed(u string) bool {
	if len(o) == 0 {
		return false
	}
	p, err := url.Parse(u)
	if err != nil {
		return false
	}
	key, ok := originOf(p)
	return ok && o[key]
}

// hosts returns the hosts of the origins, sorted, as in host resolver rules
// (IPv6 addresses in brackets).
func (o origins) hosts() []string {
	var out []string
	for key := range o {
		_, hostPort, _ := strings.Cut(key, "://")
		host, _, _ := net.SplitHostPort(hostPort)
		if strings.Contains(host, ":") {
			host = "[" + host + "]"
		}
		out = append(out, host)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// bypass returns the proxy bypass rules (host:port) for the origins, sorted.
func (o origins) bypass() []string {
	var out []string
	for key := range o {
		_, hostPort, _ := strings.Cut(key, "://")
		out = append(out, hostPort)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

func location(u string, line, col int64) string {
	if u == "" {
		return ""
	}
	s := " at " + u
	if line > 0 {
		s += fmt.Sprintf(":%d", line)
		if col > 0 {
			s += fmt.Sprintf(":%d", col)
		}
	}
	return s
}

func topFrame(st *runtime.StackTrace) string {
	for ; st != nil; st = st.Parent {
		for _, f := range st.CallFrames {
			if f.URL != "" {
				return location(f.URL, f.LineNumber+1, f.ColumnNumber+1)
			}
		}
	}
	return ""
}

func exceptionText(d *runtime.ExceptionDetails) string {
	if d == nil {
		return "uncaught exception"
	}
	msg := d.Text
	if e := d.Exception; e != nil {
		desc := e.Description
		if desc == "" && len(e.Value) > 0 {
			desc = remoteText(e)
		}
		// The description is "Error: msg\n    at stack..."; keep the first
		// line, the location follows.
		desc, _, _ = strings.Cut(desc, "\n")
		if desc != "" {
			msg = strings.TrimSuffix(msg, desc)
			msg = strings.TrimSpace(msg + " " + desc)
		}
	}
	loc := ""
	if d.URL != "" {
		loc = location(d.URL, d.LineNumber+1, d.ColumnNumber+1)
	} else {
		loc = topFrame(d.StackTrace)
	}
	return msg + loc
}

func remoteText(o *runtime.RemoteObject) string {
	if o == nil {
		return ""
	}
	if o.Type == runtime.TypeString {
		var s string
		if err := json.Unmarshal(o.Value, &s); err == nil {
			return s
		}
	}
	if len(o.Value) > 0 {
		return string(o.Value)
	}
	if o.UnserializableValue != "" {
		return string(o.UnserializableValue)
	}
	if o.Description != "" {
		return o.Description
	}
	return string(o.Type)
}

func consoleText(ev *runtime.EventConsoleAPICalled) string {
	parts := make([]string, 0, len(ev.Args))
	for _, a := range ev.Args {
		parts = append(parts, remoteText(a))
	}
	name := "console.error"
	switch ev.Type {
	case runtime.APITypeWarning:
		name = "console.warn"
	case runtime.APITypeAssert:
		name = "console.assert"
	}
	return name + ": " + strings.Join(parts, " ") + topFrame(ev.StackTrace)
}

func logText(e *cdplog.Entry) string {
	// The stack trace has the exact location; the line number of the entry
	// is 0-based, and 0 also when unknown.
	loc := topFrame(e.StackTrace)
	if loc == "" {
		line := e.LineNumber
		if line > 0 {
			line++
		}
		loc = location(e.URL, line, 0)
	}
	return e.Text + loc
}

// tailBuffer keeps the last 8 KiB written to it, safe for concurrent use.
type tailBuffer struct {
	mu  sync.Mutex
	buf []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if n := len(t.buf) - 8<<10; n > 0 {
		t.buf = append(t.buf[:0], t.buf[n:]...)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.buf)
}
