// Package nbrun executes convexnn's notebooks headless with Jupyter's
// nbconvert and the "Go (convexnn)" GoNB kernel, reports cell errors by
// notebook, cell and message, and exports offline-viewable HTML.
//
// It is the engine of `convexnn notebooks` (make notebooks) and of the
// notebook tests.
package nbrun

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/convexnn/convexnn/plots"
)

// Options configures a run.
type Options struct {
	Repo    string        // repository root (holds .cache/jupyter and .cache/assets)
	OutDir  string        // executed .ipynb and .html go here
	Size    string        // "small" (default) or "paper": exported to cells as CONVEXNN_SIZE
	Timeout time.Duration // per cell; 0 means 10 minutes
	Python  string        // Debian's Python with nbconvert; default /usr/bin/python3
	// Env is extra environment for the kernel, KEY=VALUE. Headless runs are
	// hermetic: the kernel's go get resolves modules from the workspace and
	// the module cache that set-up filled (GOPROXY=off), which also saves
	// the proxy's version listings, about a second per cell. Set GOPROXY
	// here to let cells fetch modules.
	Env []string
}

// CellError is a cell that failed.
type CellError struct {
	Notebook string
	Cell     int // 1-based index among all cells
	Source   string
	Message  string
}

func (e CellError) Error() string {
	src := e.Source
	if len(src) > 300 {
		src = src[:300] + "…"
	}
	return fmt.Sprintf("notebook %s, cell %d failed: %s\n--- cell source ---\n%s", e.Notebook, e.Cell, e.Message, src)
}

// Result is one executed notebook.
type Result struct {
	Notebook string // source path
	Executed string // executed .ipynb
	HTML     string // exported .html
	Errors   []CellError
	Duration time.Duration
}

// Notebook is the parsed JSON of an .ipynb file, as much as we need.
type Notebook struct {
	Cells []Cell `json:"cells"`
}

// Cell is one notebook cell.
type Cell struct {
	Type    string          `json:"cell_type"`
	Source  json.RawMessage `json:"source"`
	Outputs []Output        `json:"outputs"`
}

// Output is one cell output.
type Output struct {
	Type   string                     `json:"output_type"`
	Name   string                     `json:"name"`
	Text   json.RawMessage            `json:"text"`
	Data   map[string]json.RawMessage `json:"data"`
	Ename  string                     `json:"ename"`
	Evalue string                     `json:"evalue"`
}

// multiline decodes nbformat's string-or-list-of-strings.
func multiline(raw json.RawMessage) string {
	if len(raw) == 0 {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var l []string
	if json.Unmarshal(raw, &l) == nil {
		return strings.Join(l, "")
	}
	return ""
}

// SourceText returns the cell's source.
func (c Cell) SourceText() string { return multiline(c.Source) }

// TextOf returns the text of a stream output or the given MIME type of a
// display output.
func (o Output) TextOf(mime string) string {
	if o.Type == "stream" {
		return multiline(o.Text)
	}
	return multiline(o.Data[mime])
}

// Read parses an .ipynb file.
func Read(path string) (*Notebook, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var nb Notebook
	if err := json.Unmarshal(data, &nb); err != nil {
		return nil, fmt.Errorf("%s: not a notebook: %w", path, err)
	}
	return &nb, nil
}

var tags = regexp.MustCompile(`(?s)<style.*?</style>|<[^>]*>`)

func plain(h string) string {
	t := html.UnescapeString(tags.ReplaceAllString(h, " "))
	return strings.Join(strings.Fields(t), " ")
}

// CellErrors lists the failed cells of an executed notebook with the best
// message available: the error output plus what the cell wrote to stderr and
// GoNB's HTML error report (compile errors), as plain text.
func CellErrors(name string, nb *Notebook) []CellError {
	var out []CellError
	for i, c := range nb.Cells {
		var msg []string
		failed := false
		for _, o := range c.Outputs {
			switch {
			case o.Type == "error":
				failed = true
				msg = append(msg, strings.TrimSpace(o.Ename+": "+o.Evalue))
			case o.Type == "stream" && o.Name == "stderr":
				msg = append(msg, strings.TrimSpace(o.TextOf("")))
			case o.Type == "display_data" && strings.Contains(o.TextOf("text/html"), "gonb-err"):
				msg = append(msg, plain(o.TextOf("text/html")))
			case o.Type == "display_data" && strings.Contains(o.TextOf("text/html"), "#b00020"):
				msg = append(msg, plain(o.TextOf("text/html")))
			}
		}
		if failed {
			out = append(out, CellError{Notebook: name, Cell: i + 1, Source: c.SourceText(), Message: strings.Join(msg, "\n")})
		}
	}
	return out
}

// Execute runs one notebook headless and exports it to HTML. A failing cell
// does not stop the run (later cells still execute, so one report shows every
// failure); the failures are in Result.Errors. err is for failures to run at
// all (no Jupyter, no kernel, timeouts).
func Execute(ctx context.Context, notebook string, o Options) (*Result, error) {
	start := time.Now()
	if o.Python == "" {
		o.Python = "/usr/bin/python3"
	}
	if o.Size == "" {
		o.Size = "small"
	}
	if o.Size != "small" && o.Size != "paper" {
		return nil, fmt.Errorf("nbrun: size %q: use small or paper", o.Size)
	}
	if o.Timeout == 0 {
		o.Timeout = 10 * time.Minute
	}
	kernel := filepath.Join(o.Repo, ".cache", "jupyter", "kernels", "convexnn", "kernel.json")
	if _, err := os.Stat(kernel); err != nil {
		return nil, fmt.Errorf("nbrun: kernel spec %s is missing: run make setup", kernel)
	}
	if _, err := os.Stat(o.Python); err != nil {
		return nil, fmt.Errorf("nbrun: %s is missing: Jupyter comes from Debian's packages (run make setup)", o.Python)
	}
	if err := os.MkdirAll(o.OutDir, 0o755); err != nil {
		return nil, err
	}
	base := strings.TrimSuffix(filepath.Base(notebook), ".ipynb")
	stateDir, err := filepath.Abs(filepath.Join(o.OutDir, ".convexnn", base))
	if err != nil {
		return nil, err
	}
	os.RemoveAll(stateDir) // each headless run starts from a clean slate
	jupyterPath, err := headlessKernel(kernel, o.Repo, filepath.Join(o.OutDir, ".kernels", base))
	if err != nil {
		return nil, err
	}
	env := append(os.Environ(),
		"JUPYTER_PATH="+jupyterPath,
		"CONVEXNN_SIZE="+o.Size,
		"CONVEXNN_STATE_DIR="+stateDir,
		"CONVEXNN_HEADLESS=1", // no front-end: explorers show their start chart (cvx.Explorer)
		"GOPROXY=off",
	)
	env = append(env, o.Env...)
	abs, err := filepath.Abs(notebook)
	if err != nil {
		return nil, err
	}
	outAbs, err := filepath.Abs(o.OutDir)
	if err != nil {
		return nil, err
	}
	res := &Result{Notebook: notebook, Executed: filepath.Join(outAbs, base+".ipynb")}
	if err := nbconvert(ctx, o.Python, env, filepath.Dir(abs), "--to", "notebook", "--execute", "--allow-errors",
		"--ExecutePreprocessor.kernel_name=convexnn",
		fmt.Sprintf("--ExecutePreprocessor.timeout=%d", int(o.Timeout.Seconds())),
		"--output-dir", outAbs, "--output", base, abs); err != nil {
		return nil, err
	}
	nb, err := Read(res.Executed)
	if err != nil {
		return nil, err
	}
	res.Errors = CellErrors(filepath.Base(notebook), nb)
	if res.HTML, err = Export(ctx, res.Executed, o); err != nil {
		return nil, err
	}
	res.Duration = time.Since(start)
	return res, nil
}

// headlessKernel writes to dir a copy of the kernel spec at spec whose
// PATH leaves out gopls, and returns the JUPYTER_PATH that holds it. GoNB
// starts gopls when it finds it (for a front-end's completions and
// contextual help), and gopls then loads the whole workspace: about 3 s of
// CPU per kernel that no headless run asks anything of. The copy's PATH has
// the spec's entry for the repository's bin folder (gonb, goimports, gopls)
// replaced by one that holds goimports alone, which GoNB runs on every
// cell; a spec without that entry is copied as it is.
func headlessKernel(spec, repo, dir string) (string, error) {
	raw, err := os.ReadFile(spec)
	if err != nil {
		return "", fmt.Errorf("nbrun: kernel spec: %w", err)
	}
	var ks map[string]any
	if err := json.Unmarshal(raw, &ks); err != nil {
		return "", fmt.Errorf("nbrun: kernel spec %s: %w (run make setup)", spec, err)
	}
	bin, err := filepath.Abs(filepath.Join(repo, "bin"))
	if err != nil {
		return "", err
	}
	tools := filepath.Join(dir, "bin")
	if env, ok := ks["env"].(map[string]any); ok {
		if path, ok := env["PATH"].(string); ok {
			parts := filepath.SplitList(path)
			for k, p := range parts {
				if filepath.Clean(p) == bin {
					parts[k] = tools
				}
			}
			env["PATH"] = strings.Join(parts, string(os.PathListSeparator))
		}
	}
	kdir := filepath.Join(dir, "kernels", "convexnn")
	if err := os.MkdirAll(kdir, 0o755); err != nil {
		return "", err
	}
	if err := os.MkdirAll(tools, 0o755); err != nil {
		return "", err
	}
	link := filepath.Join(tools, "goimports")
	os.Remove(link)
	if err := os.Symlink(filepath.Join(bin, "goimports"), link); err != nil {
		return "", err
	}
	out, err := json.MarshalIndent(ks, "", " ")
	if err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(kdir, "kernel.json"), out, 0o644); err != nil {
		return "", err
	}
	return filepath.Abs(dir)
}

// nbconvert runs python -m nbconvert args in dir.
func nbconvert(ctx context.Context, python string, env []string, dir string, args ...string) error {
	cmd := exec.CommandContext(ctx, python, append([]string{"-m", "nbconvert"}, args...)...)
	cmd.Env = env
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		tail := stderr.String()
		if len(tail) > 4000 {
			tail = tail[len(tail)-4000:]
		}
		return fmt.Errorf("nbrun: nbconvert %s on %s: %v\n%s", args[0], args[len(args)-1], err, tail)
	}
	return nil
}

// Export converts an executed notebook to HTML next to it, with require.js,
// MathJax and the chart libraries (for charts that leave them to the page)
// in folders next to it, and returns the HTML's path. Only o.Repo and
// o.Python are used.
func Export(ctx context.Context, executed string, o Options) (string, error) {
	if o.Python == "" {
		o.Python = "/usr/bin/python3"
	}
	abs, err := filepath.Abs(executed)
	if err != nil {
		return "", err
	}
	dir, base := filepath.Dir(abs), strings.TrimSuffix(filepath.Base(abs), ".ipynb")
	if err := linkAssets(o.Repo, dir); err != nil {
		return "", err
	}
	if err := nbconvert(ctx, o.Python, os.Environ(), dir, "--to", "html",
		"--HTMLExporter.require_js_url=assets/require.js",
		"--HTMLExporter.mathjax_url=assets/mathjax/MathJax.js?config=TeX-AMS_CHTML-full,Safe",
		"--output-dir", dir, "--output", base, abs); err != nil {
		return "", err
	}
	return filepath.Join(dir, base+".html"), nil
}

// linkAssets makes out/assets point at the offline copies of require.js and
// MathJax that the exported HTML references, and writes the chart libraries
// and loader to out/convexnn-assets (plots.WriteBeside), for the charts that
// leave them to the page (cvx embeds each library once per notebook).
func linkAssets(repo, out string) error {
	src := filepath.Join(repo, ".cache", "assets")
	if _, err := os.Stat(filepath.Join(src, "require.js")); err != nil {
		return errors.New("nbrun: offline assets are missing in .cache/assets: run make setup")
	}
	abs, err := filepath.Abs(src)
	if err != nil {
		return err
	}
	dst := filepath.Join(out, "assets")
	if cur, err := os.Readlink(dst); err != nil || cur != abs {
		os.Remove(dst)
		if err := os.Symlink(abs, dst); err != nil {
			return err
		}
	}
	// An older run linked this folder to the assets.
	if st, err := os.Lstat(filepath.Join(out, plots.BesideDir)); err == nil && st.Mode()&os.ModeSymlink != 0 {
		os.Remove(filepath.Join(out, plots.BesideDir))
	}
	return plots.WriteBeside(plots.Assets{Dir: abs}, out)
}

// List returns the notebooks in dir, sorted by name.
func List(dir string) ([]string, error) {
	m, err := filepath.Glob(filepath.Join(dir, "*.ipynb"))
	if err != nil {
		return nil, err
	}
	if len(m) == 0 {
		return nil, fmt.Errorf("nbrun: no notebooks in %s", dir)
	}
	return m, nil
}
