// Package build_test checks the set-up's list of external requirements
// (build/requirements) against this machine and against the tree: every
// command and Python module the tests, the notebooks, `make jupyter` and
// `convexnn bench` run must have a line, and each line must name the Debian
// package that dpkg says provides it. A package installed by hand on a
// development machine then cannot hide a missing install step.
package build_test

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/convexnn/convexnn/internal/testenv"
)

const debianPython = "/usr/bin/python3"

// requirement is one line of build/requirements.
type requirement struct {
	line    int
	kind    string   // pre, cmd, py or deb
	pkg     string   // the Debian package, "-" for a prerequisite
	argv    []string // the check: a command line, a module, or a package
	checked string   // the check as written
}

func readRequirements(t *testing.T) []requirement {
	t.Helper()
	f, err := os.Open("requirements")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var reqs []requirement
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		fields := strings.Fields(sc.Text())
		if len(fields) == 0 || strings.HasPrefix(fields[0], "#") {
			continue
		}
		if len(fields) < 3 {
			t.Fatalf("requirements:%d: want kind, package and check, got %q", n, sc.Text())
		}
		r := requirement{line: n, kind: fields[0], pkg: fields[1], argv: fields[2:], checked: strings.Join(fields[2:], " ")}
		switch r.kind {
		case "pre", "cmd", "py", "deb":
		default:
			t.Fatalf("requirements:%d: unknown kind %q", n, r.kind)
		}
		if (r.kind == "pre") != (r.pkg == "-") {
			t.Fatalf("requirements:%d: a prerequisite (and only a prerequisite) has package -", n)
		}
		reqs = append(reqs, r)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return reqs
}

// requireDebian skips, or fails under CONVEXNN_REQUIRE_E2E=1 (make test),
// when the machine has no dpkg or no Debian Python.
func requireDebian(t *testing.T) {
	t.Helper()
	var missing []string
	if _, err := exec.LookPath("dpkg"); err != nil {
		missing = append(missing, "dpkg")
	}
	if _, err := os.Stat(debianPython); err != nil {
		missing = append(missing, debianPython)
	}
	if len(missing) == 0 {
		return
	}
	testenv.Missing(t, "checking build/requirements needs %s (a Debian machine)", strings.Join(missing, ", "))
}

// TestRequirementsNameTheirPackages resolves every check to the file that
// implements it (the executable, or the module's source) and asks dpkg -S
// which package owns that file: it must be the package the line names, the
// one set-up installs when the check fails.
func TestRequirementsNameTheirPackages(t *testing.T) {
	requireDebian(t)
	for _, r := range readRequirements(t) {
		if r.kind == "pre" {
			continue
		}
		t.Run(r.checked, func(t *testing.T) {
			if r.kind == "deb" {
				out, err := exec.Command("dpkg-query", "-W", "-f=${Status}", r.argv[0]).CombinedOutput()
				if err != nil || !strings.Contains(string(out), "install ok installed") {
					t.Fatalf("requirements:%d: package %s is not installed: run make setup (%v %s)", r.line, r.argv[0], err, out)
				}
				if r.pkg != r.argv[0] {
					t.Fatalf("requirements:%d: a deb line names its own package, got %s for %s", r.line, r.pkg, r.argv[0])
				}
				return
			}
			file, err := implementingFile(r)
			if err != nil {
				t.Fatalf("requirements:%d: %s: %v (run make setup)", r.line, r.checked, err)
			}
			owners, err := dpkgOwners(file)
			if err != nil {
				t.Fatalf("requirements:%d: %s is %s, which no Debian package provides (%v): set-up cannot install it", r.line, r.checked, file, err)
			}
			if !slices.Contains(owners, r.pkg) {
				t.Fatalf("requirements:%d: %s is %s, provided by %s, but the line names %s: set-up would install the wrong package",
					r.line, r.checked, file, strings.Join(owners, ", "), r.pkg)
			}
		})
	}
}

// implementingFile is the executable a command line runs (jupyter dispatches
// "jupyter sub" to jupyter-sub) or the file a Python module loads from.
func implementingFile(r requirement) (string, error) {
	if r.kind == "py" {
		out, err := exec.Command(debianPython, "-c", `import importlib.util, sys
s = importlib.util.find_spec(sys.argv[1])
print(s.origin if s.origin and s.origin != "namespace" else list(s.submodule_search_locations)[0])`, r.argv[0]).CombinedOutput()
		if err != nil {
			return "", fmt.Errorf("%s cannot find module %s: %s", debianPython, r.argv[0], bytes.TrimSpace(out))
		}
		return strings.TrimSpace(string(out)), nil
	}
	name := r.argv[0]
	if filepath.Base(name) == "jupyter" && len(r.argv) > 1 && !strings.HasPrefix(r.argv[1], "-") {
		name += "-" + r.argv[1]
	}
	return exec.LookPath(name)
}

// dpkgOwners returns the packages dpkg -S names for a file, trying the path
// as given and with its symbolic links resolved (usrmerge: /bin -> /usr/bin).
func dpkgOwners(file string) ([]string, error) {
	paths := []string{file}
	if real, err := filepath.EvalSymlinks(file); err == nil && real != file {
		paths = append(paths, real)
	}
	if strings.HasPrefix(file, "/bin/") {
		paths = append(paths, "/usr"+file)
	}
	var lastErr error
	for _, p := range paths {
		out, err := exec.Command("dpkg", "-S", p).Output()
		if err != nil {
			lastErr = fmt.Errorf("dpkg -S %s: %v", p, err)
			continue
		}
		var owners []string
		for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			if strings.HasPrefix(line, "diversion ") {
				continue
			}
			pkgs, _, ok := strings.Cut(line, ": ")
			if !ok {
				continue
			}
			for _, p := range strings.Split(pkgs, ", ") {
				p, _, _ = strings.Cut(p, ":") // drop an architecture qualifier
				owners = append(owners, p)
			}
		}
		if len(owners) > 0 {
			return owners, nil
		}
	}
	return nil, lastErr
}

// A use of something outside Go found in the tree.
type use struct {
	kind  string // "cmd" (argv[0], and the jupyter sub-command if any) or "py"
	argv  []string
	where string
}

var (
	// Go: exec.Command("x", ...), exec.CommandContext(ctx, "x", ...), exec.LookPath("x").
	goExec = regexp.MustCompile(`exec\.(?:Command|CommandContext|LookPath)\((?:ctx,\s*)?"([^"]+)"`)
	// Any absolute path to a system executable written as a literal.
	binPath = regexp.MustCompile(`"(/(?:usr/)?bin/[A-Za-z0-9_.+-]+)"`)
	// jupyter sub-commands: exec.Command(jupyter, "notebook") in Go, and
	// `jupyter notebook` on a command line of a script or a Makefile recipe.
	goJupyterSub    = regexp.MustCompile(`\bjupyter,\s*"([a-z]+)"`)
	shellJupyterSub = regexp.MustCompile(`(?m)^[ \t]*[^#\n]*\bjupyter[ \t]+([a-z]+)\b`)
	makeJupyterSub  = regexp.MustCompile(`(?m)^\t[^#\n]*\bjupyter[ \t]+([a-z]+)\b`)
	// Python: import lines (.py and Python inside shell scripts) and Python
	// snippets and -m modules inside Go strings.
	pyImport   = regexp.MustCompile(`(?m)^[ \t]*(?:import[ \t]+([A-Za-z_][\w.]*(?:[ \t]*,[ \t]*[A-Za-z_][\w.]*)*)[ \t]*(?:#.*)?$|from[ \t]+([A-Za-z_][\w.]*)[ \t]+import\b)`)
	goPyImport = regexp.MustCompile(`"(?:import|from) ([A-Za-z_][\w, ]*)`)
	goPyModule = regexp.MustCompile(`"-m",\s*"([A-Za-z_]\w*)"`)
)

// treeUses scans the tracked files for external commands and Python modules.
func treeUses(t *testing.T) []use {
	t.Helper()
	out, err := exec.Command("git", "-C", "..", "ls-files").Output()
	if err != nil {
		t.Fatalf("git ls-files: %v", err)
	}
	stdlib := pythonStdlib(t)
	var uses []use
	addPy := func(list, where string, local map[string]bool) {
		if i := strings.Index(list, " import "); i >= 0 { // from x import y
			list = list[:i]
		}
		for _, m := range strings.Split(list, ",") {
			m = strings.TrimSpace(strings.Fields(m + " ")[0])
			m, _, _ = strings.Cut(m, ".")
			if m == "" || stdlib[m] || local[m] || m == "__future__" {
				continue
			}
			uses = append(uses, use{kind: "py", argv: []string{m}, where: where})
		}
	}
	for _, f := range strings.Fields(string(out)) {
		path := filepath.Join("..", f)
		ext := filepath.Ext(f)
		if ext != ".go" && ext != ".py" && ext != ".sh" && filepath.Base(f) != "Makefile" && !strings.HasPrefix(f, ".ci/") {
			continue
		}
		if f == "build/requirements_test.go" {
			continue // this file's patterns are not uses
		}
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		src := string(b)
		local := localPythonModules(filepath.Dir(path))
		switch ext {
		case ".py":
			for _, m := range pyImport.FindAllStringSubmatch(src, -1) {
				addPy(m[1]+m[2], f, local)
			}
		case ".go":
			for _, m := range goPyImport.FindAllStringSubmatch(src, -1) {
				addPy(m[1], f, local)
			}
			for _, m := range goPyModule.FindAllStringSubmatch(src, -1) {
				addPy(m[1], f, local)
			}
			for _, m := range goExec.FindAllStringSubmatch(src, -1) {
				uses = append(uses, use{kind: "cmd", argv: []string{m[1]}, where: f})
			}
			for _, m := range goJupyterSub.FindAllStringSubmatch(src, -1) {
				uses = append(uses, use{kind: "cmd", argv: []string{"jupyter", m[1]}, where: f})
			}
		default: // Makefile, shell scripts (and the Python inside them)
			sub := shellJupyterSub
			if filepath.Base(f) == "Makefile" {
				sub = makeJupyterSub
			} else {
				for _, m := range pyImport.FindAllStringSubmatch(src, -1) {
					addPy(m[1]+m[2], f, local)
				}
			}
			for _, m := range sub.FindAllStringSubmatch(src, -1) {
				uses = append(uses, use{kind: "cmd", argv: []string{"jupyter", m[1]}, where: f})
			}
		}
		if ext != ".py" {
			for _, m := range binPath.FindAllStringSubmatch(src, -1) {
				uses = append(uses, use{kind: "cmd", argv: []string{m[1]}, where: f})
			}
		}
	}
	return uses
}

// pythonStdlib is the set of standard-library module names of Debian's Python.
func pythonStdlib(t *testing.T) map[string]bool {
	t.Helper()
	out, err := exec.Command(debianPython, "-c", `import sys; print("\n".join(sorted(sys.stdlib_module_names)))`).Output()
	if err != nil {
		t.Fatalf("%s: %v", debianPython, err)
	}
	set := map[string]bool{}
	for _, m := range strings.Fields(string(out)) {
		set[m] = true
	}
	return set
}

// localPythonModules are the .py files beside a script (its own imports).
func localPythonModules(dir string) map[string]bool {
	set := map[string]bool{}
	matches, _ := filepath.Glob(filepath.Join(dir, "*.py"))
	for _, m := range matches {
		set[strings.TrimSuffix(filepath.Base(m), ".py")] = true
	}
	return set
}

// TestRequirementsCoverTheTree: every command and Python module the tree
// runs outside Go has a line in build/requirements (so set-up installs its
// package), apart from the shell builtins and core utilities of any machine.
func TestRequirementsCoverTheTree(t *testing.T) {
	requireDebian(t)
	reqs := readRequirements(t)
	covered := func(u use) bool {
		for _, r := range reqs {
			switch {
			case u.kind == "py" && r.kind == "py":
				if r.argv[0] == u.argv[0] {
					return true
				}
			case u.kind == "cmd" && (r.kind == "cmd" || r.kind == "pre"):
				if filepath.Base(r.argv[0]) != filepath.Base(u.argv[0]) {
					continue
				}
				if len(u.argv) == 1 || (len(r.argv) > 1 && r.argv[1] == u.argv[1]) {
					return true
				}
			}
		}
		return false
	}
	// Commands every machine has, or that the tree only names as alternatives
	// (internal/browser also accepts Google Chrome when it is what is installed).
	base := map[string]bool{"bash": true, "sh": true, "env": true, "dpkg": true, "dpkg-query": true, "apt-get": true,
		"sudo": true, "google-chrome": true, "google-chrome-stable": true, "chromium-browser": true}
	uses := treeUses(t)
	if len(uses) < 5 {
		t.Fatalf("found only %d uses in the tree: the scan is broken", len(uses))
	}
	var missing []string
	seen := map[string]bool{}
	for _, u := range uses {
		key := u.kind + " " + strings.Join(u.argv, " ")
		if seen[key] || (u.kind == "cmd" && base[filepath.Base(u.argv[0])]) {
			continue
		}
		seen[key] = true
		if !covered(u) {
			missing = append(missing, fmt.Sprintf("%s %q (used in %s)", u.kind, strings.Join(u.argv, " "), u.where))
		}
	}
	sort.Strings(missing)
	if len(missing) > 0 {
		t.Fatalf("build/requirements has no line for:\n  %s\nadd each with the Debian package dpkg -S names for it", strings.Join(missing, "\n  "))
	}
	for _, want := range []string{"jupyter notebook", "py nbconvert", "chromium", "py cvxopt", "py torch", "py jupyter_client"} {
		if !seen["cmd "+want] && !seen[want] {
			t.Errorf("the scan did not find %q, which the tree uses: the scan is broken", want)
		}
	}
}

// TestSetupReadsRequirements: set-up installs from build/requirements, not
// from a list of its own.
func TestSetupReadsRequirements(t *testing.T) {
	b, err := os.ReadFile("setup.sh")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), "< build/requirements") {
		t.Fatal("build/setup.sh does not read build/requirements")
	}
	if regexp.MustCompile(`apt-get install[^\n]*python3-`).Match(b) {
		t.Fatal("build/setup.sh names packages of its own: list them in build/requirements")
	}
}
