// Copyright ©2026 The convexnn Authors. All rights reserved.

package plots

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// DefaultBaseURL is the URL prefix used when neither Assets.Dir nor
// Assets.BaseURL is set. It is go-echarts' own default asset host, which
// serves echarts 5.x and echarts-gl.
const DefaultBaseURL = "https://go-echarts.github.io/go-echarts-assets/assets/"

// Names of the two library files, relative to Assets.Dir or Assets.BaseURL.
const (
	echartsFile   = "echarts.min.js"
	echartsGLFile = "echarts-gl.min.js"
)

// Environment variables read by AssetsFromEnv.
const (
	envAssetsDir = "CONVEXNN_ASSETS"
	envAssetsURL = "CONVEXNN_ASSETS_URL"
)

// Assets says where a chart's page gets echarts.min.js and echarts-gl.min.js.
//
// The zero value loads both files from DefaultBaseURL.
type Assets struct {
	// Dir, when non-empty, is a local directory holding echarts.min.js
	// and echarts-gl.min.js. Their contents are embedded in the HTML
	// (gzip + base64, decoded in the browser with DecompressionStream
	// and evaluated with define, module and exports shadowed as
	// undefined, so the UMD bundles set window.echarts even when
	// RequireJS is on the page), so the output renders with no network
	// anywhere.
	Dir string

	// BaseURL is used when Dir is empty: the URL prefix of the two
	// files. A missing trailing slash is added. The default is
	// DefaultBaseURL.
	BaseURL string
}

// AssetsFromEnv returns the Assets described by the environment:
// CONVEXNN_ASSETS=<dir> gives Dir, CONVEXNN_ASSETS_URL=<url> gives BaseURL,
// and otherwise BaseURL is DefaultBaseURL. When both are set, Dir wins.
func AssetsFromEnv() Assets {
	a := Assets{
		Dir:     strings.TrimSpace(os.Getenv(envAssetsDir)),
		BaseURL: strings.TrimSpace(os.Getenv(envAssetsURL)),
	}
	if a.BaseURL == "" {
		a.BaseURL = DefaultBaseURL
	}
	return a
}

// embedded reports whether the library is embedded in the HTML.
func (a Assets) embedded() bool { return a.Dir != "" }

// base returns the URL prefix of the library files, ending in a slash.
func (a Assets) base() (string, error) {
	b := strings.TrimSpace(a.BaseURL)
	if b == "" {
		return DefaultBaseURL, nil
	}
	if strings.ContainsAny(b, " \t\r\n\"'<>\\") {
		return "", fmt.Errorf("plots: invalid asset base URL %q: it must not contain spaces, quotes, angle brackets or backslashes", b)
	}
	if _, err := url.Parse(b); err != nil {
		return "", fmt.Errorf("plots: invalid asset base URL %q: %v", b, err)
	}
	if !strings.HasSuffix(b, "/") {
		b += "/"
	}
	return b, nil
}

// payloadKey identifies one version of one asset file on disk.
type payloadKey struct {
	path string
	size int64
	mod  time.Time
}

// payloads caches the gzip+base64 encoding of asset files, so each file is
// read and compressed once per process (again only if it changes on disk).
// Failures are not cached: after "make setup" the next call succeeds.
var payloads struct {
	sync.Mutex
	m map[payloadKey]string
}

// payload returns the gzip+base64 encoding of the file name in dir.
func payload(dir, name string) (string, error) {
	fix := `run "make setup" to fetch a local copy, or unset ` + envAssetsDir + ` to load echarts from the network`
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", fmt.Errorf("plots: echarts asset directory %q: %v; %s", dir, err, fix)
	}
	if st, err := os.Stat(abs); err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return "", fmt.Errorf("plots: echarts asset directory %s (Assets.Dir, %s) does not exist; %s", abs, envAssetsDir, fix)
		}
		return "", fmt.Errorf("plots: echarts asset directory %s (Assets.Dir, %s): %v; %s", abs, envAssetsDir, err, fix)
	} else if !st.IsDir() {
		return "", fmt.Errorf("plots: echarts asset directory %s (Assets.Dir, %s) is not a directory; %s", abs, envAssetsDir, fix)
	}
	path := filepath.Join(abs, name)
	st, err := os.Stat(path)
	if err != nil {
		return "", fmt.Errorf("plots: cannot read echarts asset %s: %v; %s", path, err, fix)
	}
	if !st.Mode().IsRegular() {
		return "", fmt.Errorf("plots: echarts asset %s is not a regular file; %s", path, fix)
	}
	if st.Size() == 0 {
		return "", fmt.Errorf("plots: echarts asset %s is empty; %s", path, fix)
	}
	key := payloadKey{path: path, size: st.Size(), mod: st.ModTime()}

	payloads.Lock()
	defer payloads.Unlock()
	if p, ok := payloads.m[key]; ok {
		return p, nil
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("plots: cannot read echarts asset %s: %v; %s", path, err, fix)
	}
	var buf bytes.Buffer
	zw, err := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	if err != nil {
		return "", err
	}
	if _, err := zw.Write(raw); err != nil {
		return "", err
	}
	if err := zw.Close(); err != nil {
		return "", err
	}
	p := base64.StdEncoding.EncodeToString(buf.Bytes())
	if payloads.m == nil {
		payloads.m = make(map[payloadKey]string)
	}
	// Forget older versions of the same file.
	for k := range payloads.m {
		if k.path == path {
			delete(payloads.m, k)
		}
	}
	payloads.m[key] = p
	return p, nil
}
