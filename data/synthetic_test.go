package data

import (
	"math"
	"testing"

	"gonum.org/v1/gonum/mat"
)

func TestDisk2D(t *testing.T) {
	x, y, err := Disk2D(400, 3)
	if err != nil {
		t.Fatal(err)
	}
	x2, y2, _ := Disk2D(400, 3)
	if !mat.Equal(x, x2) || len(y) != len(y2) {
		t.Fatal("same seed, different data")
	}
	var pos int
	for k, v := range y {
		r := math.Hypot(x.At(k, 0), x.At(k, 1))
		if (v == 1) != (r <= 0.65) || (v != 1 && v != -1) {
			t.Fatalf("point %d at radius %v has label %v", k, r, v)
		}
		if v == 1 {
			pos++
		}
	}
	// Area fraction π·0.65²/4 ≈ 0.332.
	if f := float64(pos) / 400; f < 0.25 || f > 0.42 {
		t.Fatalf("positive fraction %v far from 0.33", f)
	}
	if _, _, err := Disk2D(1, 0); err == nil {
		t.Fatal("n=1 accepted")
	}
}
