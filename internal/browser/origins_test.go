package browser

import (
	"bufio"
	"context"
	"crypto/sha1"
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

// serveAllowed starts an HTTP server on the loopback interface that serves
// dir, answers /ping with "pong" and /ws with a web socket that sends
// "hello". It returns the server's origin and the number of requests it got.
func serveAllowed(t *testing.T, dir string) (string, *atomic.Int64) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var requests atomic.Int64
	mux := http.NewServeMux()
	mux.Handle("/", http.FileServer(http.Dir(dir)))
	mux.HandleFunc("/ping", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		fmt.Fprint(w, "pong")
	})
	mux.HandleFunc("/ws", func(w http.ResponseWriter, r *http.Request) {
		// A minimal RFC 6455 handshake and one unmasked text frame.
		key := r.Header.Get("Sec-WebSocket-Key")
		h, ok := w.(http.Hijacker)
		if key == "" || !ok {
			http.Error(w, "not a web socket", http.StatusBadRequest)
			return
		}
		conn, buf, err := h.Hijack()
		if err != nil {
			return
		}
		defer conn.Close()
		sum := sha1.Sum([]byte(key + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"))
		fmt.Fprintf(buf, "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: %s\r\n\r\n",
			base64.StdEncoding.EncodeToString(sum[:]))
		buf.Write([]byte{0x81, 5})
		buf.WriteString("hello")
		buf.Flush()
		// Keep the socket open until the browser closes it.
		_, _ = bufio.NewReader(conn).ReadByte()
	})
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		mux.ServeHTTP(w, r)
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return "http://" + ln.Addr().String(), &requests
}

// listenCounting listens on the loopback interface, counts the connections
// and closes them. It returns the port.
func listenCounting(t *testing.T) (string, *atomic.Int64) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	var conns atomic.Int64
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			conns.Add(1)
			c.Close()
		}
	}()
	return fmt.Sprint(ln.Addr().(*net.TCPAddr).Port), &conns
}

// probeJS tries a fetch and a web socket to the origin http://127.0.0.1:%[1]s
// (allowed) and to port %[2]s (not allowed) and reports what worked.
const probeJS = `(async () => {
	const get = u => fetch(u).then(r => r.text(), e => 'failed: ' + e.message);
	const ws = u => new Promise(resolve => {
		let s;
		try { s = new WebSocket(u); } catch (e) { resolve('failed: ' + e.message); return; }
		const t = setTimeout(() => { resolve('timeout'); s.close(); }, 10000);
		s.onmessage = e => { clearTimeout(t); resolve(String(e.data)); s.close(); };
		s.onerror = () => { clearTimeout(t); resolve('failed'); };
	});
	return [
		await get('http://127.0.0.1:%[1]s/ping'),
		await get('http://127.0.0.1:%[2]s/ping'),
		await ws('ws://127.0.0.1:%[1]s/ws'),
		await ws('ws://127.0.0.1:%[2]s/ws'),
	].join('|');
})()`

// TestAllowOrigins opens a chart page served over HTTP from an allowed
// loopback origin: the page, its scripts, a fetch and a web socket of that
// origin work, another port of the loopback interface stays unreachable,
// with the Fetch interception and with the command-line flags alone. It
// also checks the Prepare and Finish hooks.
func TestAllowOrigins(t *testing.T) {
	requireBrowser(t)
	dir := filepath.Dir(testPage(t, "charts.html", true))
	origin, requests := serveAllowed(t, dir)
	_, allowedPort, _ := strings.Cut(strings.TrimPrefix(origin, "http://"), ":")
	otherPort, conns := listenCounting(t)
	for _, intercept := range []bool{true, false} {
		t.Run(fmt.Sprintf("intercept=%v", intercept), func(t *testing.T) {
			defer func(v bool) { interceptRequests = v }(interceptRequests)
			interceptRequests = intercept
			before := requests.Load()
			var probe string
			var order []string
			o := Options{
				AllowOrigins: []string{origin},
				Prepare: func(ctx context.Context) error {
					order = append(order, "prepare")
					return chromedp.Run(ctx, chromedp.Evaluate(fmt.Sprintf(probeJS, allowedPort, otherPort), &probe,
						func(p *runtime.EvaluateParams) *runtime.EvaluateParams { return p.WithAwaitPromise(true) }))
				},
				Finish: func(ctx context.Context) error {
					order = append(order, "finish")
					return nil
				},
			}
			start := time.Now()
			r, err := CheckURL(context.Background(), origin+"/charts.html", o)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("CheckURL took %v; probe %q; console %q", time.Since(start).Round(time.Millisecond), probe, r.Console)
			if fmt.Sprint(order) != "[prepare finish]" {
				t.Errorf("hooks ran as %v, want [prepare finish]", order)
			}
			parts := strings.Split(probe, "|")
			if len(parts) != 4 || parts[0] != "pong" || !strings.HasPrefix(parts[1], "failed") || parts[2] != "hello" || !strings.HasPrefix(parts[3], "failed") {
				t.Errorf("probe = %q, want pong|failed...|hello|failed...", probe)
			}
			if n := conns.Load(); n != 0 {
				t.Errorf("the page made %d connections to 127.0.0.1:%s, which is not allowed", n, otherPort)
			}
			if n := requests.Load() - before; n < 4 {
				t.Errorf("the allowed server got %d requests, want the page, 2 scripts and the probes", n)
			}
			for _, c := range r.Charts {
				if c.Canvases < 1 || c.Inked < 0.01 {
					t.Errorf("chart %+v did not draw", c)
				}
			}
			if len(r.Charts) != 2 {
				t.Errorf("got %d charts, want 2", len(r.Charts))
			}
			// The only console errors are the blocked probes.
			for _, c := range r.Console {
				if !strings.Contains(c, ":"+otherPort+"/") && !strings.Contains(c, "/favicon.ico") {
					t.Errorf("unexpected console error: %s", c)
				}
			}
		})
	}
}

func TestCheckURLErrors(t *testing.T) {
	page := testPage(t, "nocharts.html", false)
	for _, tc := range []struct {
		url     string
		origins []string
		want    string
	}{
		{"http://127.0.0.1:1234/x.html", nil, "not in Options.AllowOrigins"},
		{"http://127.0.0.1:1234/x.html", []string{"http://127.0.0.1:1235"}, "not in Options.AllowOrigins"},
		{"http://127.0.0.1:1234/x.html", []string{"https://127.0.0.1:1234"}, "not in Options.AllowOrigins"},
		{"ftp://127.0.0.1/x.html", nil, "not a file:, http: or https: URL"},
		{"http://example.com/", []string{"http://example.com"}, "only loopback"},
		{"http://localhost:80/", []string{"http://localhost"}, "only loopback"},
		{"http://10.0.0.1/", []string{"http://10.0.0.1"}, "only loopback"},
		{"http://127.0.0.1/", []string{"http://127.0.0.1/path"}, "not an origin"},
		{"http://127.0.0.1/", []string{"file:///tmp"}, "not an http or https origin"},
		{"file://" + page, []string{"http://[::1]:99", "ws://127.0.0.1"}, "not an http or https origin"},
		{"http://127.0.0.1/", []string{"http://"}, "has no host"},
	} {
		_, err := CheckURL(context.Background(), tc.url, Options{AllowOrigins: tc.origins, ExecPath: filepath.Join(t.TempDir(), "unused")})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("CheckURL(%q, AllowOrigins %q): %v, want an error with %q", tc.url, tc.origins, err, tc.want)
		}
	}
}

func TestOrigins(t *testing.T) {
	o, err := parseOrigins([]string{"http://127.0.0.1:8888", "HTTP://127.0.0.1:8888/", "https://[::1]", "http://127.0.0.2"})
	if err != nil {
		t.Fatal(err)
	}
	for u, want := range map[string]bool{
		"http://127.0.0.1:8888/notebooks/a.ipynb?token=x": true,
		"ws://127.0.0.1:8888/api/kernels/1/channels":      true,
		"https://127.0.0.1:8888/":                         false,
		"http://127.0.0.1:8889/":                          false,
		"http://localhost:8888/":                          false,
		"https://[::1]:443/x":                             true,
		"wss://[::1]/x":                                   true,
		"http://[::1]/x":                                  false,
		"http://127.0.0.2/":                               true,
		"http://127.0.0.2:80/":                            true,
		"file:///etc/passwd":                              false,
		"data:text/plain,x":                               false,
		"::":                                              false,
	} {
		if got := o.allowed(u); got != want {
			t.Errorf("allowed(%q) = %v, want %v", u, got, want)
		}
	}
	if got := fmt.Sprint(o.bypass()); got != "[127.0.0.1:8888 127.0.0.2:80 [::1]:443]" {
		t.Errorf("bypass() = %s", got)
	}
	if got := fmt.Sprint(o.hosts()); got != "[127.0.0.1 127.0.0.2 [::1]]" {
		t.Errorf("hosts() = %s", got)
	}
	if (origins{}).allowed("http://127.0.0.1/") {
		t.Error("an empty set allows a URL")
	}
}

// TestHookErrors checks that errors of Prepare and Finish end the check with
// the report.
func TestHookErrors(t *testing.T) {
	requireBrowser(t)
	page := testPage(t, "charts.html", true)
	errHook := errors.New("hook failed")
	r, err := Check(context.Background(), page, Options{Prepare: func(context.Context) error { return errHook }})
	if !errors.Is(err, errHook) || r == nil || len(r.Charts) != 0 {
		t.Errorf("Prepare error: report %+v, error %v", r, err)
	}
	r, err = Check(context.Background(), page, Options{Finish: func(context.Context) error { return errHook }})
	if !errors.Is(err, errHook) || r == nil || len(r.Charts) != 2 {
		t.Errorf("Finish error: report %+v, error %v", r, err)
	}
}
