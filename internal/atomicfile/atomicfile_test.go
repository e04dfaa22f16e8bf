package atomicfile

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
)

// TestWriteIsAllOrNothing: a write replaces the file whole; a failing
// write leaves the old file and no temporary file behind.
func TestWriteIsAllOrNothing(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "sub", "f.bin")
	if err := WriteBytes(p, 0o644, []byte("old")); err != nil {
		t.Fatal(err)
	}
	boom := errors.New("boom")
	err := Write(p, 0o644, func(w io.Writer) error {
		w.Write([]byte("half of the new"))
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("error %v", err)
	}
	if b, _ := os.ReadFile(p); string(b) != "old" {
		t.Fatalf("after a failed write the file holds %q", b)
	}
	if ents, _ := os.ReadDir(filepath.Dir(p)); len(ents) != 1 {
		t.Fatalf("folder holds %d entries, want the file alone", len(ents))
	}
	if err := WriteBytes(p, 0o600, []byte("new")); err != nil {
		t.Fatal(err)
	}
	fi, _ := os.Stat(p)
	if b, _ := os.ReadFile(p); string(b) != "new" || fi.Mode().Perm() != 0o600 {
		t.Fatalf("file %q mode %v", b, fi.Mode())
	}
}
