package build_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// The Makefile's RACE_FREE packages skip the race run of make test, which
// is sound only while their own code starts no goroutine and uses no
// synchronization: this test reads their non-test files and fails on a go
// statement or an import of sync, sync/atomic or golang.org/x/sync.
func TestRaceFreePackagesStartNoGoroutine(t *testing.T) {
	mk, err := os.ReadFile(filepath.Join("..", "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^RACE_FREE := (.+)$`).FindSubmatch(mk)
	if m == nil {
		t.Fatal("Makefile has no RACE_FREE line")
	}
	dirs := strings.Fields(string(m[1]))
	if len(dirs) == 0 {
		t.Fatal("RACE_FREE is empty")
	}
	for _, dir := range dirs {
		files, err := filepath.Glob(filepath.Join("..", dir, "*.go"))
		if err != nil || len(files) == 0 {
			t.Errorf("RACE_FREE package %s: no Go files (%v)", dir, err)
			continue
		}
		fset := token.NewFileSet()
		for _, name := range files {
			if strings.HasSuffix(name, "_test.go") {
				continue
			}
			f, err := parser.ParseFile(fset, name, nil, parser.SkipObjectResolution)
			if err != nil {
				t.Fatal(err)
			}
			for _, im := range f.Imports {
				switch strings.Trim(im.Path.Value, `"`) {
				case "sync", "sync/atomic", "golang.org/x/sync/errgroup":
					t.Errorf("%s imports %s: take %s out of RACE_FREE", fset.Position(im.Pos()), im.Path.Value, dir)
				}
			}
			ast.Inspect(f, func(n ast.Node) bool {
				if g, ok := n.(*ast.GoStmt); ok {
					t.Errorf("%s starts a goroutine: take %s out of RACE_FREE", fset.Position(g.Pos()), dir)
				}
				return true
			})
		}
	}
}

// Tests that do less under -race (testenv.Race, testenv.SkipUnderRace) rely
// on make test's pass without it: this test fails for a package whose tests
// do so while the Makefile's PUREGO list leaves it out.
func TestRaceReducedPackagesRunWithoutRace(t *testing.T) {
	mk, err := os.ReadFile(filepath.Join("..", "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	vars := map[string][]string{}
	for _, m := range regexp.MustCompile(`(?m)^(PUREGO(?:_FIRST)?) := (.+)$`).FindAllSubmatch(mk, -1) {
		vars[string(m[1])] = strings.Fields(string(m[2]))
	}
	var patterns []string
	for _, p := range vars["PUREGO"] {
		if p == "$(PUREGO_FIRST)" {
			patterns = append(patterns, vars["PUREGO_FIRST"]...)
			continue
		}
		patterns = append(patterns, p)
	}
	if len(patterns) == 0 {
		t.Fatal("Makefile has no PUREGO line")
	}
	covered := func(dir string) bool {
		for _, p := range patterns {
			p = strings.TrimPrefix(p, "./")
			if rest, ok := strings.CutSuffix(p, "..."); ok && strings.HasPrefix(dir+"/", rest) || strings.TrimSuffix(p, "/") == dir {
				return true
			}
		}
		return false
	}
	reduced := regexp.MustCompile(`\btestenv\.(Race|SkipUnderRace)\b`)
	found := 0
	err = filepath.WalkDir("..", func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != ".." && (strings.HasPrefix(d.Name(), ".") || d.Name() == "out" || d.Name() == "bin") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, "_test.go") || path == filepath.Join("..", "build", "racefree_test.go") {
			return nil // (this file names the pattern)
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if !reduced.Match(src) {
			return nil
		}
		found++
		dir := filepath.ToSlash(filepath.Dir(strings.TrimPrefix(path, ".."+string(filepath.Separator))))
		if !covered(dir) {
			t.Errorf("%s does less under -race, but the Makefile's PUREGO list leaves %s out: its full tests would never run", path, dir)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if found == 0 {
		t.Fatal("no test uses testenv.Race or testenv.SkipUnderRace: is the pattern stale?")
	}
}
