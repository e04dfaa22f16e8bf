package data

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/convexnn/convexnn/internal/testenv"
	"gonum.org/v1/gonum/mat"
)

// preparedFixture copies the mammographic file into a fresh data folder
// and returns a Source over it with its own cache, and the file's path.
func preparedFixture(t *testing.T) (Source, string) {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(testenv.SharedData(t), "mammographic", "mammographic_masses.data"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	p := filepath.Join(dir, "mammographic", "mammographic_masses.data")
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	return Source{Dir: dir, Cache: t.TempDir(), Offline: true}, p
}

func sameSplit(t *testing.T, what string, got, want *Split) {
	t.Helper()
	for k, pair := range [][2]*Set{{got.Train, want.Train}, {got.Test, want.Test}} {
		g, w := pair[0], pair[1]
		if !mat.Equal(g.X, w.X) || len(g.Y) != len(w.Y) || g.Coding != w.Coding || g.Name != w.Name || g.Bias != w.Bias {
			t.Fatalf("%s: set %d differs from a fresh build", what, k)
		}
		for i := range g.Y {
			if g.Y[i] != w.Y[i] {
				t.Fatalf("%s: set %d label %d differs", what, k, i)
			}
		}
		if (g.Scaling == nil) != (w.Scaling == nil) || g.Scaling != nil && (len(g.Scaling.Shift) != len(w.Scaling.Shift) || g.Scaling.Shift[0] != w.Scaling.Shift[0]) {
			t.Fatalf("%s: set %d scaling differs", what, k)
		}
	}
	if got.Notes != want.Notes || got.Name != want.Name {
		t.Fatalf("%s: notes or name differ", what)
	}
}

// entry returns the one prepared entry in src's cache.
func entry(t *testing.T, src Source) string {
	t.Helper()
	m, _ := filepath.Glob(filepath.Join(src.Cache, "prepared", "*.bin"))
	if len(m) != 1 {
		t.Fatalf("prepared entries %v, want one", m)
	}
	return m[0]
}

// TestPreparedCacheIsExactAndNeverStale: a set read from the prepared
// cache equals a fresh build bit for bit, and the cache is not used once a
// source file changed (modification time), disappeared, or the entry is
// damaged or from other code: the set is then built again from its sources.
func TestPreparedCacheIsExactAndNeverStale(t *testing.T) {
	ctx := context.Background()
	src, file := preparedFixture(t)
	fresh := src
	fresh.NoPrepared = true
	want, err := Paper(ctx, "mammographic", fresh, ZeroOne)
	if err != nil {
		t.Fatal(err)
	}
	if m, _ := filepath.Glob(filepath.Join(src.Cache, "prepared", "*")); len(m) != 0 {
		t.Fatalf("NoPrepared wrote %v", m)
	}
	first, err := Paper(ctx, "mammographic", src, ZeroOne)
	if err != nil {
		t.Fatal(err)
	}
	sameSplit(t, "first build", first, want)
	e := entry(t, src)
	cached, err := Paper(ctx, "mammographic", src, ZeroOne)
	if err != nil {
		t.Fatal(err)
	}
	sameSplit(t, "cached", cached, want)
	// The other label coding is another entry.
	if _, err := Paper(ctx, "mammographic", src, PlusMinus); err != nil {
		t.Fatal(err)
	}
	if m, _ := filepath.Glob(filepath.Join(src.Cache, "prepared", "*.bin")); len(m) != 2 {
		t.Fatalf("entries %v, want one per label coding", m)
	}
	os.Remove(strings.Replace(e, "labels1", "labels0", 1))

	// rebuilt reports whether loading rewrote the entry.
	rebuilt := func(what string) bool {
		t.Helper()
		before, _ := os.Stat(e)
		got, err := Paper(ctx, "mammographic", src, ZeroOne)
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		sameSplit(t, what, got, want)
		after, err := os.Stat(e)
		return err == nil && (before == nil || !os.SameFile(before, after))
	}
	if rebuilt("a cache hit") {
		t.Fatal("an intact entry was rebuilt")
	}
	later := time.Now().Add(time.Hour)
	if err := os.Chtimes(file, later, later); err != nil {
		t.Fatal(err)
	}
	if !rebuilt("after the source's modification time changed") {
		t.Fatal("an entry was used after its source file changed")
	}
	raw, _ := os.ReadFile(e)
	damaged := bytes.Clone(raw)
	damaged[len(damaged)-3] ^= 0x10
	os.WriteFile(e, damaged, 0o644)
	if !rebuilt("after a flipped payload bit") {
		t.Fatal("a damaged entry was used")
	}
	raw, _ = os.ReadFile(e)
	code := []byte(codeDigest())
	other := bytes.Replace(raw, code, bytes.Repeat([]byte("0"), len(code)), 1)
	if bytes.Equal(other, raw) {
		t.Fatal("the entry does not record its code digest")
	}
	os.WriteFile(e, other, 0o644)
	if !rebuilt("after an entry from other code") {
		t.Fatal("an entry written by other code was used")
	}
	os.WriteFile(e, raw[:len(raw)/2], 0o644)
	if !rebuilt("after a torn entry") {
		t.Fatal("a torn entry was used")
	}
	os.Remove(file)
	if _, err := Paper(ctx, "mammographic", src, ZeroOne); err == nil {
		t.Fatal("the cache served a set whose source file is gone")
	}
}

// TestPreparedCacheFollowsItsFolders: an entry built from one data folder
// is not used for another, and a file added next to a source file (which
// could change the split, as a CIFAR test file does) makes it stale.
func TestPreparedCacheFollowsItsFolders(t *testing.T) {
	ctx := context.Background()
	src, file := preparedFixture(t)
	if _, err := Paper(ctx, "mammographic", src, ZeroOne); err != nil {
		t.Fatal(err)
	}
	e := entry(t, src)
	before, _ := os.Stat(e)
	if err := os.WriteFile(filepath.Join(filepath.Dir(file), "notes.txt"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	// Folder times can be coarse: make sure the folder's time moved.
	later := time.Now().Add(2 * time.Hour)
	os.Chtimes(filepath.Dir(file), later, later)
	if _, err := Paper(ctx, "mammographic", src, ZeroOne); err != nil {
		t.Fatal(err)
	}
	if after, _ := os.Stat(e); os.SameFile(before, after) {
		t.Error("an entry was used after its source folder changed")
	}
	other, _ := preparedFixture(t)
	other.Cache = src.Cache
	if _, err := Paper(ctx, "mammographic", other, ZeroOne); err != nil {
		t.Fatal(err)
	}
	if m, _ := filepath.Glob(filepath.Join(src.Cache, "prepared", "*.bin")); len(m) != 2 {
		t.Errorf("entries %v: want one per data folder", m)
	}
}
