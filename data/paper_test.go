package data

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/convexnn/convexnn/internal/testenv"
	"gonum.org/v1/gonum/mat"
)

// TestPaperHoldsOutWhenNoTestRecords: a CIFAR folder with training records
// only gives a validation set held out from them.
func TestPaperHoldsOutWhenNoTestRecords(t *testing.T) {
	testenv.SkipUnderRace(t, "numerical only: the preparation's goroutines run in the other tests")
	shared := testenv.SharedData(t)
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

// TestPaperTable5HoldsOutTheUnusedTrainingRecords: Table 5's 600 training
// images and its held-out set partition the 10000 bird/ship training records.
func TestPaperTable5HoldsOutTheUnusedTrainingRecords(t *testing.T) {
	src := Source{Dir: testenv.SharedData(t), Offline: true}
	sp, err := Paper(context.Background(), "cifar-bird-ship-600", src, PlusMinus)
	if err != nil {
		t.Fatal(err)
	}
	n, d := sp.Train.Dims()
	if sp.Holdout == nil {
		t.Fatal("no held-out set")
	}
	h, dh := sp.Holdout.Dims()
	if n != 600 || h != 9400 || d != 147 || dh != 147 {
		t.Fatalf("train %d×%d, held out %d×%d; want 600 and 9400 rows of 147", n, d, h, dh)
	}
	// No training image is held out: compare the rows themselves.
	rows := map[string]bool{}
	key := func(s *Set, i int) string { return fmt.Sprint(s.X.RawRowView(i)) }
	for i := 0; i < n; i++ {
		rows[key(sp.Train, i)] = true
	}
	for i := 0; i < h; i++ {
		if rows[key(sp.Holdout, i)] {
			t.Fatalf("held-out row %d is also a training row", i)
		}
	}
	if c := sp.Holdout.ClassCounts(); c[1] < 4000 || c[-1] < 4000 {
		t.Fatalf("held-out classes %v", c)
	}
	if !strings.Contains(sp.Holdout.Name, "held out") {
		t.Fatalf("held-out set named %q", sp.Holdout.Name)
	}
}

// TestPaperMammographicIsStandardizedOnTraining checks the standardization
// uses training statistics only.
func TestPaperMammographicIsStandardizedOnTraining(t *testing.T) {
	sp, err := Paper(context.Background(), "mammographic", Source{Dir: testenv.SharedData(t), Offline: true}, ZeroOne)
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

// TestTenClasses checks the ten-class sets: classes 0–9 with their names,
// pixels in [0, 1], the trims, and the errors.
func TestTenClasses(t *testing.T) {
	src := Source{Dir: testenv.SharedData(t), Offline: true}
	tenClassErrors(t, src)
	if testenv.Race {
		// Decoding and downsampling the 60000 training images, which
		// every load does, takes most of a minute under the race
		// detector; the preparation's goroutines run in the other tests
		// of the package. make test loads them in its pass without -race.
		return
	}
	tr, te, err := TenClasses(context.Background(), "fashion-mnist", src, TenClassOptions{Train: 300, Test: 100, Side: 14})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		s    *Set
		rows int
	}{{tr, 300}, {te, 100}} {
		n, d := c.s.X.Dims()
		if n != c.rows || d != 196 || len(c.s.Y) != n {
			t.Fatalf("%s: %d×%d with %d labels, want %d×196", c.s.Name, n, d, len(c.s.Y), c.rows)
		}
		if len(c.s.Classes) != 10 || c.s.Classes[8] != "bag" {
			t.Errorf("%s: classes %v", c.s.Name, c.s.Classes)
		}
		seen := map[float64]bool{}
		for _, y := range c.s.Y {
			if y != float64(int(y)) || y < 0 || y > 9 {
				t.Fatalf("%s: label %v", c.s.Name, y)
			}
			seen[y] = true
		}
		if len(seen) < 9 {
			t.Errorf("%s: only %d classes among %d rows", c.s.Name, len(seen), n)
		}
		lo, hi := mat.Min(c.s.X), mat.Max(c.s.X)
		if lo < 0 || hi > 1 || hi < 0.5 {
			t.Errorf("%s: pixels in [%v, %v], want within [0, 1]", c.s.Name, lo, hi)
		}
	}
	full, _, err := TenClasses(context.Background(), "mnist", src, TenClassOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if n, d := full.X.Dims(); n != 60000 || d != 784 {
		t.Errorf("full MNIST: %d×%d", n, d)
	}
}

// tenClassErrors checks TenClasses' refusals of a set without ten classes
// and of bad sizes.
func tenClassErrors(t *testing.T, src Source) {
	t.Helper()
	for _, bad := range []struct {
		name string
		o    TenClassOptions
		want string
	}{{"cifar", TenClassOptions{}, `"mnist" and "fashion-mnist"`}, {"mnist", TenClassOptions{Train: -1}, "must not be negative"},
		{"mnist", TenClassOptions{Side: 40}, "the images' 28"}} {
		if _, _, err := TenClasses(context.Background(), bad.name, src, bad.o); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("TenClasses(%q, %+v): error %v, want one naming %s", bad.name, bad.o, err, bad.want)
		}
	}
}
