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
