package main

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"

	"github.com/convexnn/convexnn/internal/testenv"
)

// TestDataInfoReproducesTheREADMECounts runs `convexnn data info` on every
// data set and checks the counts stated in shared/data/README.md.
func TestDataInfoReproducesTheREADMECounts(t *testing.T) {
	if testenv.Race {
		// Parsing every data set under the race detector takes a minute;
		// the test runs in make test's pass without -race.
		t.Skip("runs in the pass without -race")
	}
	dir := testenv.SharedData(t)
	info := func(name string) dataInfo {
		var out bytes.Buffer
		if err := dataCommand(context.Background(), []string{"info", name, "-dir", dir}, &out); err != nil {
			t.Fatalf("data info %s: %v", name, err)
		}
		var d dataInfo
		if err := json.Unmarshal(out.Bytes(), &d); err != nil {
			t.Fatalf("data info %s printed %q: %v", name, out.String(), err)
		}
		for _, f := range d.Files {
			if !f.Verified {
				t.Errorf("%s: file %s not verified: %s", name, f.Path, f.Problem)
			}
		}
		return d
	}
	m := info("mnist")
	if p := m.Paper["mnist-2-8"]; p.Train != 11809 || p.Validation != 2006 || p.D != 784 || p.Classes["2"] != 5958 || p.Classes["8"] != 5851 {
		t.Errorf("MNIST 2 vs 8: %+v", p)
	}
	if p := m.Paper["mnist-2-8-d100"]; p.D != 100 {
		t.Errorf("MNIST d=100 has d=%d", p.D)
	}
	if m.Splits["train"].N != 60000 || m.Splits["test"].N != 10000 || m.Splits["train"].Classes["1"] != 6742 {
		t.Errorf("MNIST splits %+v", m.Splits)
	}
	f := info("fashion-mnist")
	if p := f.Paper["fashion-pullover-bag"]; p.Train != 12000 || p.Classes["pullover"] != 6000 || p.Classes["bag"] != 6000 || p.Validation != 2000 {
		t.Errorf("Fashion pullover vs bag: %+v", p)
	}
	if p := f.Paper["fashion-pullover-bag-ds"]; p.D != 196 {
		t.Errorf("Fashion DS has d=%d", p.D)
	}
	c := info("cifar10")
	if s := c.Splits["train"]; s.N != 10000 || s.Classes["bird"] != 5000 || s.Classes["ship"] != 5000 {
		t.Errorf("CIFAR bird/ship train: %+v", s)
	}
	if s := c.Splits["test"]; s.N != 206 || s.Classes["bird"] != 100 || s.Classes["ship"] != 106 {
		t.Errorf("CIFAR partial test: %+v", s)
	}
	if p := c.Paper["cifar-bird-ship-600"]; p.Train != 600 || p.Holdout != 9400 || p.D != 147 {
		t.Errorf("CIFAR Table 5 set: %+v", p)
	}
	if p := c.Paper["cifar-bird-ship-ds"]; p.D != 768 {
		t.Errorf("CIFAR DS has d=%d", p.D)
	}
	mm := info("mammographic")
	if tb := mm.Table; tb == nil || tb.Rows != 961 || tb.CompleteRows != 830 || tb.Classes["benign"] != 516 || tb.Classes["malignant"] != 445 || tb.CompleteClasses["benign"] != 427 || tb.CompleteClasses["malignant"] != 403 {
		t.Errorf("mammographic table: %+v", mm.Table)
	}
	if p := mm.Paper["mammographic"]; p.Train != 581 || p.Validation != 249 || p.D != 5 {
		t.Errorf("mammographic 70/30 split: %+v", p)
	}
	var out bytes.Buffer
	if err := dataCommand(context.Background(), []string{"info", "imagenet"}, &out); err == nil {
		t.Error("unknown data set accepted")
	}
}
