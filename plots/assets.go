// Copyright ©2026 The convexnn Authors. All rights reserved.

package plots

import (
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

// DefaultBaseURL is the URL prefix used when neither Assets.Dir nor
// Assets.BaseURL is set. It is go-echarts' own default asset host, which
// serves echarts 5.x and echarts-gl.
const DefaultBaseURL = "https://go-echarts.github.io/go-echarts-assets/assets/"

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
	// (gzip + Z85, decoded in the browser with DecompressionStream
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

// payloads caches the gzip+Z85 encoding of asset files, so each file is
// read and compressed once per process (again only if it changes on disk).
// Failures are not cached: after "make setup" the next call succeeds.
var payloads struct {
	sync.Mutex
	m map[payloadKey]string
}

// payload returns the file name in dir as snippets carry it: gzip-compressed,
// then Z85-encoded (z85), after its length in bytes and a colon.
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
	p := strconv.Itoa(buf.Len()) + ":" + z85(buf.Bytes())
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

// BesideDir is the folder, next to a notebook or an exported page, that holds
// copies of the chart libraries for the outputs that leave them out
// (HTMLOptions.Embed, HTMLOptions.Beside).
const BesideDir = "convexnn-assets"

// WriteBeside copies the libraries of a (which must embed them: Assets.Dir)
// and the chart loader into dir/BesideDir, where outputs of a page in dir
// that leave them out find them. A copy already there with the same contents is left alone; a new one
// is written to a temporary file and renamed, so a reader never sees half a
// file.
func WriteBeside(a Assets, dir string) error {
	if !a.embedded() {
		return errors.New("plots: WriteBeside needs local assets (Assets.Dir, " + envAssetsDir + ")")
	}
	dst := filepath.Join(dir, BesideDir)
	if err := os.MkdirAll(dst, 0o755); err != nil {
		return fmt.Errorf("plots: copying the chart libraries beside the page: %v", err)
	}
	files := map[string][]byte{loaderFile(): []byte(loaderFileJS())}
	for _, l := range []Library{ECharts, EChartsGL} {
		src, err := os.ReadFile(filepath.Join(a.Dir, l.file()))
		if err != nil {
			return fmt.Errorf("plots: reading %s: %v; run \"make setup\" to fetch a local copy", l.file(), err)
		}
		files[l.file()] = src
	}
	for name, src := range files {
		target := filepath.Join(dst, name)
		if cur, err := os.ReadFile(target); err == nil && bytes.Equal(cur, src) {
			continue
		}
		tmp, err := os.CreateTemp(dst, "."+name+".*")
		if err != nil {
			return fmt.Errorf("plots: copying %s beside the page: %v", name, err)
		}
		_, werr := tmp.Write(src)
		cerr := tmp.Close()
		if werr == nil {
			werr = cerr
		}
		if werr == nil {
			werr = os.Chmod(tmp.Name(), 0o644)
		}
		if werr == nil {
			werr = os.Rename(tmp.Name(), target)
		}
		if werr != nil {
			os.Remove(tmp.Name())
			return fmt.Errorf("plots: copying %s beside the page: %v", name, werr)
		}
	}
	return nil
}

// z85Alphabet is ZeroMQ's Z85 alphabet (RFC 32/Z85): no quotes or
// backslashes, so the text needs no escaping in JSON or a JavaScript string.
const z85Alphabet = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-:+=^!/*?&<>()[]{}@%$#"

// z85 encodes b, padded with zeros to a multiple of 4 bytes, as Z85: five
// characters per four bytes, against base64's six per four and a half (a
// sixteenth less: 28 KB of echarts' 450 KB). The loader's decoder drops the
// padding by the length written before the text.
func z85(b []byte) string {
	out := make([]byte, 0, (len(b)+3)/4*5)
	var w [4]byte
	for i := 0; i < len(b); i += 4 {
		w = [4]byte{}
		copy(w[:], b[i:])
		v := uint32(w[0])<<24 | uint32(w[1])<<16 | uint32(w[2])<<8 | uint32(w[3])
		var c [5]byte
		for k := 4; k >= 0; k-- {
			c[k] = z85Alphabet[v%85]
			v /= 85
		}
		out = append(out, c[:]...)
	}
	return string(out)
}
