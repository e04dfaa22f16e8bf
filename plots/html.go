// Copyright ©2026 The convexnn Authors. All rights reserved.

package plots

import (
	"bytes"
	"crypto/rand"
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
	// OmitAssets leaves the library out of the snippet: the chart waits
	// for window.__convexnnECharts / window.echarts set by an earlier
	// output of the same page. It is meant for frequent live updates of
	// one output; render the final update without it.
	OmitAssets bool

	// NoStatic leaves out the static PNG fallback.
	NoStatic bool
}

// Chart kinds, as written in the data-chart-kind attribute.
const (
	kind2D = "2d"
	kind3D = "3d"
)

//go:embed loader.js
var loaderJS string

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
	ID      string            `json:"id"`
	Kind    string            `json:"kind"`
	Mode    string            `json:"mode"`
	Payload map[string]string `json:"payload,omitempty"`
	URLs    map[string]string `json:"urls,omitempty"`
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
	cfg := loaderConfig{ID: newID(), Kind: s.kind}
	names := []string{echartsFile}
	if s.kind == kind3D {
		names = append(names, echartsGLFile)
	}
	switch {
	case o.OmitAssets:
		cfg.Mode = "omit"
	case a.embedded():
		cfg.Mode = "embed"
		cfg.Payload = make(map[string]string, len(names))
		for _, n := range names {
			p, err := payload(a.Dir, n)
			if err != nil {
				return "", err
			}
			cfg.Payload[strings.TrimSuffix(n, ".min.js")] = p
		}
	default:
		cfg.Mode = "url"
		base, err := a.base()
		if err != nil {
			return "", err
		}
		cfg.URLs = map[string]string{
			"echarts":    base + echartsFile,
			"echarts-gl": base + echartsGLFile,
		}
	}
	cfgJSON, err := json.Marshal(cfg)
	if err != nil {
		return "", fmt.Errorf("plots: encoding loader configuration: %v", err)
	}

	var b strings.Builder
	b.Grow(len(s.png)*4/3 + len(s.option) + len(loaderJS) + len(cfgJSON) + 512)
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
	b.WriteString(scriptSafe(strings.TrimSpace(loaderJS)))
	b.WriteString(")(")
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
	sizeRE      = regexp.MustCompile(`style="width:\s*([^;"]*);\s*height:\s*([^;"]*);?"`)
	cssLengthRE = regexp.MustCompile(`^[0-9]+(\.[0-9]+)?(px|%|em|rem|vw|vh)?$`)
)

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
