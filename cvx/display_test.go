package cvx

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/convexnn/convexnn/internal/testenv"
	"github.com/convexnn/convexnn/plots"
)

// TestProgressOutsideNotebookIsThrottled: outside a notebook, Progress
// writes status lines to stderr, at most one per MinInterval, and Done
// always writes the final line.
func TestProgressOutsideNotebookIsThrottled(t *testing.T) {
	var buf bytes.Buffer
	old := stderr
	stderr = &buf
	defer func() { stderr = old }()
	p := NewProgress("test")
	p.MinInterval = 50 * time.Millisecond
	p.MaxShare = 1
	calls := 0
	start := time.Now()
	for time.Since(start) < 220*time.Millisecond {
		p.Update("working", nil)
		calls++
	}
	p.Done("finished", nil)
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) < 3 || len(lines) > 7 {
		t.Fatalf("%d Update calls in 220 ms wrote %d lines, want about 5:\n%s", calls, len(lines), buf.String())
	}
	if lines[len(lines)-1] != "test: finished" {
		t.Fatalf("last line %q", lines[len(lines)-1])
	}
}

// TestChartPageEmbedsOnce checks the notebook's delivery of the chart
// libraries: in a GoNB session the first kept output that needs a library
// embeds it, later outputs leave it to the page and its copy next to the
// notebook; a live update embeds a library no kept output has yet, without
// claiming it; without a writable notebook folder every output embeds.
func TestChartPageEmbedsOnce(t *testing.T) {
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	assets := plots.Assets{Dir: filepath.Join(root, ".cache", "assets")}
	if _, err := os.Stat(filepath.Join(assets.Dir, "echarts-gl.min.js")); err != nil {
		testenv.Missing(t, "chart assets missing in %s: run make setup", assets.Dir)
	}
	session, nbDir := t.TempDir(), t.TempDir()
	t.Setenv("GONB_TMP_DIR", session)
	t.Setenv("GONB_DIR", nbDir)
	x, y := disk(t, 30, 1)
	flat, err := ScatterFigure(x, y)
	if err != nil {
		t.Fatal(err)
	}
	embeds := func(p *chartPage, kept bool) bool {
		t.Helper()
		h, err := flat.HTML(assets, p.options(assets, kept))
		if err != nil {
			t.Fatal(err)
		}
		return strings.Contains(h, `"payload":{"echarts":`)
	}
	var p chartPage
	if !embeds(&p, false) || !embeds(&p, false) {
		t.Error("a live update before any kept output does not embed echarts")
	}
	if !embeds(&p, true) {
		t.Error("the first kept output does not embed echarts")
	}
	if embeds(&p, true) || embeds(&p, false) {
		t.Error("an output after the first kept one embeds echarts again")
	}
	// A later cell is a new process of the same session.
	var next chartPage
	if embeds(&next, true) {
		t.Error("a later cell's output embeds echarts again")
	}
	for _, f := range []string{"echarts.min.js", "echarts-gl.min.js"} {
		if _, err := os.Stat(filepath.Join(nbDir, plots.BesideDir, f)); err != nil {
			t.Errorf("no copy of %s next to the notebook: %v", f, err)
		}
	}

	// A notebook folder that cannot be written: every output embeds.
	t.Setenv("GONB_TMP_DIR", t.TempDir())
	blocked := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(blocked, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("GONB_DIR", blocked)
	var ro chartPage
	if !embeds(&ro, true) || !embeds(&ro, true) {
		t.Error("with no copy next to the notebook, an output leaves echarts out")
	}
	// Outside GoNB: every output embeds.
	t.Setenv("GONB_TMP_DIR", "")
	var plain chartPage
	if !embeds(&plain, true) || !embeds(&plain, true) {
		t.Error("outside GoNB an output leaves echarts out")
	}
}
