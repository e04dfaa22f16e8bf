package data

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func sharedDataDir(t *testing.T) string {
	t.Helper()
	dir, _ := filepath.Abs(filepath.Join("..", "..", "shared", "data"))
	if _, err := os.Stat(filepath.Join(dir, "README.md")); err != nil {
		if os.Getenv("CONVEXNN_REQUIRE_E2E") == "1" {
			t.Fatalf("shared data folder %s missing", dir)
		}
		t.Skipf("shared data folder %s missing", dir)
	}
	return dir
}

// TestPaperHoldsOutWhenNoTestRecords: a CIFAR folder with training records
// only gives a validation set held out from them.
func TestPaperHoldsOutWhenNoTestRecords(t *testing.T) {
	shared := sharedDataDir(t)
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "cifar10-bird-ship"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(shared, "cifar10-bird-ship", "train.bin"), filepath.Join(dir, "cifar10-bird-ship", "train.bin")); err != nil {
		t.Fatal(err)
	}
	sp, err := Paper(context.Background(), "cifar-bird-ship-ds", Source{Dir: dir, Offline: true}, PlusMinus)
	if err != nil {
		t.Fatal(err)
	}
	n, d := sp.Train.Dims()
	m, _ := sp.Test.Dims()
	if n+m != 10000 || m != 1667 || d != 768 {
		t.Fatalf("held-out split %d + %d rows, d = %d", n, m, d)
	}
	if _, err := Paper(context.Background(), "nope", Source{Dir: dir, Offline: true}, PlusMinus); err == nil || !strings.Contains(err.Error(), "mnist-2-8") {
		t.Fatalf("unknown name: %v", err)
	}
}

// TestPaperMammographicIsStandardizedOnTraining checks the standardization
// uses training statistics only.
func TestPaperMammographicIsStandardizedOnTraining(t *testing.T) {
	sp, err := Paper(context.Background(), "mammographic", Source{Dir: sharedDataDir(t), Offline: true}, ZeroOne)
	if err != nil {
		t.Fatal(err)
	}
	n, d := sp.Train.Dims()
	for j := 0; j < d; j++ {
		var mean float64
		for i := 0; i < n; i++ {
			mean += sp.Train.X.At(i, j) / float64(n)
		}
		if mean > 1e-9 || mean < -1e-9 {
			t.Fatalf("training feature %d has mean %v", j, mean)
		}
	}
	for _, y := range sp.Test.Y {
		if y != 0 && y != 1 {
			t.Fatalf("0/1 labels requested, got %v", y)
		}
	}
}
