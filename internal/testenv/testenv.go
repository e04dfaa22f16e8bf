// Package testenv holds what the tests of several packages need from their
// environment: whether the race detector is on, and the project's shared
// data folder. Tests only.
package testenv

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/convexnn/convexnn/internal/repo"
)

// RequireE2E reports whether the tests must not skip for a missing part of
// the environment (CONVEXNN_REQUIRE_E2E=1, as make test sets it).
func RequireE2E() bool { return os.Getenv("CONVEXNN_REQUIRE_E2E") == "1" }

// Missing skips the test, or fails it under RequireE2E, for a missing part
// of the environment.
func Missing(t testing.TB, format string, args ...any) {
	t.Helper()
	if RequireE2E() {
		t.Fatalf(format, args...)
	}
	t.Skipf(format, args...)
}

// RepoRoot returns the checkout the test runs in (repo.Root), or
// fails the test.
func RepoRoot(t testing.TB) string {
	t.Helper()
	dir, err := repo.Root()
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

// SharedData returns the project's shared data folder, ../shared/data beside
// the checkout; when it is missing the test is skipped (failed under
// RequireE2E).
func SharedData(t testing.TB) string {
	t.Helper()
	dir := filepath.Join(filepath.Dir(RepoRoot(t)), "shared", "data")
	if _, err := os.Stat(filepath.Join(dir, "README.md")); err != nil {
		Missing(t, "shared data folder %s missing", dir)
	}
	return dir
}

// SkipUnderRace skips the test in a -race build. It is for a numerical test
// whose goroutines, if any, other tests of its package already run under
// the race detector; why says which. make test runs the test again in its
// pass without -race (the Makefile's PUREGO packages, which
// build/racefree_test.go checks hold every package that calls this).
func SkipUnderRace(t testing.TB, why string) {
	t.Helper()
	if Race {
		t.Skip(why + "; make test runs it in its pass without -race")
	}
}
