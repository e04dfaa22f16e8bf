// Copyright ©2026 The convexnn Authors. All rights reserved.

package plots

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	_ "embed"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"html/template"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/go-echarts/go-echarts/v2/opts"
	"github.com/go-echarts/go-echarts/v2/render"
)

// HTMLOptions controls what a snippet carries besides the chart.
type HTMLOptions struct {
	// OmitAssets leaves the libraries out of the snippet: the chart waits
	// for window.__convexnnECharts / window.echarts set by an earlier
	// output of the same page, or loads the copies in Beside. It is meant
	// for frequent live updates of one output.
	OmitAssets bool

	// Embed, when not nil and the Assets embed the libraries, decides
	// for each library the chart needs whether this snippet carries it;
	// a library left out comes, as with OmitAssets, from an earlier
	// output of the page or from Beside. A notebook embeds each library
	// in one output and leaves it out of the others.
	Embed func(Library) bool

	// Beside, when not empty, is the folder (BesideDir, written by
	// WriteBeside) holding copies of the libraries next to the page: in
	// the classic Notebook next to the notebook (served under files/),
	// elsewhere relative to the page, as for an HTML export saved next
	// to its notebook. A snippet that leaves a library out loads it from
	// there when no earlier output of the page has.
	Beside string

	// NoStatic leaves out the static PNG fallback.
	NoStatic bool
}

// Library is one of the chart libraries a snippet may need.
type Library string

// The chart libraries.
const (
	ECharts   Library = "echarts"    // every chart
	EChartsGL Library = "echarts-gl" // 3-D charts
)

// file returns the library's file name in Assets.Dir or under BaseURL.
func (l Library) file() string { return string(l) + ".min.js" }

// Chart kinds, as written in the data-chart-kind attribute.
const (
	kind2D = "2d"
	kind3D = "3d"
)

// The chart loader (loader.js), the stub that calls it where the page has it
// (stub.js), and the functions both use (shared.js: the folder next to the
// page, the error shown in a chart; put in place of their "/* @shared */").
var (
	//go:embed loader.js
	loaderJS string
	//go:embed stub.js
	stubJS string
	//go:embed shared.js
	sharedJS string
)

// loaderMin and stubMin are the loader and the stub as snippets carry them:
// assembled, without comments, indentation and blank lines.
var (
	loaderMin = minifyJS(strings.Replace(loaderJS, sharedMarker, sharedJS, 1))
	stubMin   = minifyJS(strings.Replace(stubJS, sharedMarker, sharedJS, 1))
)

const sharedMarker = "/* @shared */"

// loaderVersion names this build's loader on a page
// (window.__convexnnLoaders) and in its copy next to the page (loaderFile).
var loaderVersion = func() string {
	h := sha256.Sum256([]byte(loaderMin))
	return hex.EncodeToString(h[:6])
}()

// loaderFile is the name of the loader's copy in BesideDir.
func loaderFile() string { return "loader-" + loaderVersion + ".js" }

// loaderFileJS is the content of loaderFile: the loader, registered.
func loaderFileJS() string {
	return `(window.__convexnnLoaders = window.__convexnnLoaders || {})["` + loaderVersion + `"] = (` + loaderMin + ");\n"
}

// minifyJS removes block comments, whole-line // comments, indentation and
// blank lines. It is meant for loader.js and stub.js, whose strings hold no
// comment markers (TestScriptSafe checks; the smoke pages run the result).
func minifyJS(src string) string {
	var b strings.Builder
	for {
		i := strings.Index(src, "/*")
		if i < 0 {
			break
		}
		j := strings.Index(src[i+2:], "*/")
		if j < 0 {
			break
		}
		b.WriteString(src[:i])
		src = src[i+2+j+2:]
	}
	b.WriteString(src)
	var out []string
	for _, line := range strings.Split(b.String(), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "//") {
			continue
		}
		out = append(out, line)
	}
	return strings.Join(out, "\n")
}

// snippet is everything renderSnippet needs to know about one chart.
type snippet struct {
	kind          string // kind2D or kind3D
	option        string // echarts option, a JavaScript object literal
	width, height string // CSS lengths
	alt           string // text alternative of the static image
	png           []byte // static fallback, or nil
}

// loaderConfig is the first argument of the function in loader.js.
type loaderConfig struct {
	Version string            `json:"version"`
	ID      string            `json:"id"`
	Kind    string            `json:"kind"`
	Mode    string            `json:"mode"`
	Payload map[string]string `json:"payload,omitempty"`
	URLs    map[string]string `json:"urls,omitempty"`
	Beside  string            `json:"beside,omitempty"`
}

// ids makes element ids unique within a page: a random per-process prefix,
// so outputs of earlier kernel runs kept in a notebook do not collide, and a
// counter.
var ids struct {
	prefix string
	n      atomic.Uint64
}

func init() {
	var b [4]byte
	if _, err := rand.Read(b[:]); err != nil {
		// crypto/rand does not fail on supported platforms; fall back
		// to the counter alone if it does.
		ids.prefix = "0"
		return
	}
	ids.prefix = hex.EncodeToString(b[:])
}

// newID returns a fresh element id that is valid as an HTML id and as a
// CSS identifier.
func newID() string {
	return "convexnn-" + ids.prefix + "-" + strconv.FormatUint(ids.n.Add(1), 10)
}

// scriptSafe makes JavaScript source safe to place between <script> and
// </script>: no "</" can close the element, no "<!--" can switch the HTML
// parser into its escaped state, and U+2028/U+2029 are written as escapes.
// It does not change the meaning of string literals, which is where user
// text goes.
var scriptSafe = strings.NewReplacer(
	"</", `<\/`,
	"<!--", `<\!--`,
	"\u2028", `\u2028`,
	"\u2029", `\u2029`,
).Replace

// renderSnippet builds the HTML snippet for s.
func renderSnippet(s snippet, a Assets, o HTMLOptions) (string, error) {
	cfg := loaderConfig{Version: loaderVersion, ID: newID(), Kind: s.kind}
	libs := []Library{ECharts}
	if s.kind == kind3D {
		libs = append(libs, EChartsGL)
	}
	if o.Beside != "" && !relativeFolder(o.Beside) {
		return "", fmt.Errorf("plots: HTMLOptions.Beside %q: want a relative folder below the page: names of letters, digits, '.', '_' and '-' joined by '/'", o.Beside)
	}
	switch {
	case o.OmitAssets:
		cfg.Mode = "omit"
		cfg.Beside = o.Beside
	case a.embedded():
		cfg.Mode = "embed"
		cfg.Payload = make(map[string]string, len(libs))
		for _, l := range libs {
			if o.Embed != nil && !o.Embed(l) {
				cfg.Beside = o.Beside
				continue
			}
			p, err := payload(a.Dir, l.file())
			if err != nil {
				return "", err
			}
			cfg.Payload[string(l)] = p
		}
	default:
		cfg.Mode = "url"
		base, err := a.base()
		if err != nil {
			return "", err
		}
		cfg.URLs = map[string]string{
			string(ECharts):   base + ECharts.file(),
			string(EChartsGL): base + EChartsGL.file(),
		}
	}
	cfgJSON, err := jsonText(cfg) // Z85 payloads hold <, > and &: no HTML escapes
	if err != nil {
		return "", fmt.Errorf("plots: encoding loader configuration: %v", err)
	}

	var b strings.Builder
	b.Grow(len(s.png)*4/3 + len(s.option) + len(loaderMin) + len(cfgJSON) + 512)
	fmt.Fprintf(&b, `<div class="convexnn-chart" data-chart-kind="%s" id="%s" style="width:%s;max-width:100%%;height:%s;position:relative;box-sizing:border-box;">`,
		s.kind, cfg.ID, html.EscapeString(s.width), html.EscapeString(s.height))
	if len(s.png) > 0 && !o.NoStatic {
		b.WriteString(`<img class="convexnn-static" alt="`)
		b.WriteString(html.EscapeString(s.alt))
		b.WriteString(`" style="display:block;width:100%;height:100%;object-fit:contain;" src="data:image/png;base64,`)
		b.WriteString(base64.StdEncoding.EncodeToString(s.png))
		b.WriteString(`">`)
	}
	b.WriteString("</div>\n<script>\n(")
	// A snippet that carries no library leaves the loader to the page too:
	// the stub calls the loader an earlier output registered, or loads its
	// copy next to the page.
	if cfg.Beside != "" && len(cfg.Payload) == 0 {
		b.WriteString(scriptSafe(stubMin))
		b.WriteString(`)("` + loaderVersion + `", "` + loaderFile() + `", `)
	} else {
		b.WriteString(scriptSafe(loaderMin))
		b.WriteString(")(")
	}
	b.WriteString(scriptSafe(string(cfgJSON)))
	b.WriteString(",\n")
	b.WriteString(scriptSafe(s.option))
	b.WriteString(");\n</script>\n")
	return b.String(), nil
}

// chartRenderer is what go-echarts charts implement.
type chartRenderer interface {
	RenderSnippet() render.ChartSnippet
}

// ChartHTML wraps any go-echarts chart (anything with
// RenderSnippet() render.ChartSnippet, such as *charts.Line,
// *charts.Scatter3D or *charts.Surface3D) as a notebook snippet like
// Figure.HTML, without a static fallback. Charts that need echarts-gl are
// detected from their JSAssets (or, failing that, from 3-D components in
// their options) and get echarts-gl loaded too.
//
// The chart's size comes from its Initialization Width and Height. Only
// the chart's options are used: its theme, event listeners and JSFunctions
// are not carried over.
func ChartHTML(c interface{ RenderSnippet() render.ChartSnippet }, a Assets, o HTMLOptions) (string, error) {
	if c == nil {
		return "", errors.New("plots: ChartHTML: nil chart")
	}
	sn, err := renderChart(c)
	if err != nil {
		return "", fmt.Errorf("plots: ChartHTML: %v", err)
	}
	s := snippet{
		kind:   kind2D,
		option: sn.Option,
		width:  "900px",
		height: "500px",
	}
	if is3D(c, sn.Option) {
		s.kind = kind3D
	}
	if m := sizeRE.FindStringSubmatch(sn.Element); m != nil {
		if cssLengthRE.MatchString(m[1]) {
			s.width = m[1]
		}
		if cssLengthRE.MatchString(m[2]) {
			s.height = m[2]
		}
	}
	return renderSnippet(s, a, o)
}

var (
	folderRE    = regexp.MustCompile(`^[A-Za-z0-9._-]+$`)
	sizeRE      = regexp.MustCompile(`style="width:\s*([^;"]*);\s*height:\s*([^;"]*);?"`)
	cssLengthRE = regexp.MustCompile(`^[0-9]+(\.[0-9]+)?(px|%|em|rem|vw|vh)?$`)
)

// relativeFolder reports whether dir names a folder below the page, safe to
// place in a URL unescaped.
func relativeFolder(dir string) bool {
	for _, name := range strings.Split(dir, "/") {
		if name == "." || name == ".." || !folderRE.MatchString(name) {
			return false
		}
	}
	return true
}

// funcMarkerRE matches go-echarts' markers around JavaScript functions
// in option JSON, with the quotes that make them strings.
var funcMarkerRE = regexp.MustCompile(`(__f__")|("__f__)|(__f__)`)

// renderChart calls c.RenderSnippet, turning a panic of the go-echarts
// templates into an error, and returns the snippet with its Option
// replaced by the chart's option as a JavaScript object literal.
//
// RenderSnippet's own Option goes through html/template, whose escaping
// hides the quotes around function markers from go-echarts, so functions
// come out as strings. When c has JSONNotEscaped (every go-echarts chart
// does), the option is taken from there instead, after RenderSnippet has
// run the chart's validation hooks.
func renderChart(c chartRenderer) (sn render.ChartSnippet, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("rendering the chart: %v", r)
		}
	}()
	sn = c.RenderSnippet()
	if j, ok := c.(interface{ JSONNotEscaped() template.HTML }); ok {
		sn.Option = string(j.JSONNotEscaped())
	}
	sn.Option = funcMarkerRE.ReplaceAllString(sn.Option, "")
	sn.Option = strings.TrimSpace(sn.Option)
	sn.Option = strings.TrimSuffix(sn.Option, ";")
	sn.Option = strings.TrimSpace(sn.Option)
	if !strings.HasPrefix(sn.Option, "{") || !strings.HasSuffix(sn.Option, "}") {
		return sn, errors.New("the chart rendered no option object")
	}
	return sn, nil
}

// gl3DRE finds echarts-gl components and series types in an option.
var gl3DRE = regexp.MustCompile(`"(grid3D|globe|geo3D|mapbox3D)"\s*:|"type"\s*:\s*"(surface|scatter3D|bar3D|line3D|lines3D|polygons3D|map3D|scatterGL|graphGL|flowGL|linesGL)"`)

// is3D reports whether chart c needs echarts-gl.
func is3D(c interface{}, option string) bool {
	if ac, ok := c.(interface{ GetAssets() opts.Assets }); ok {
		as := ac.GetAssets()
		for _, set := range [][]string{as.JSAssets.Values, as.CustomizedJSAssets.Values} {
			for _, v := range set {
				if strings.Contains(v, "echarts-gl") {
					return true
				}
			}
		}
	}
	return gl3DRE.MatchString(option)
}

// jsonText marshals v without HTML escaping; scriptSafe takes care of the
// script context.
func jsonText(v interface{}) (string, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return "", err
	}
	return strings.TrimSpace(buf.String()), nil
}
