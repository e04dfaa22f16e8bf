package data

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"codeberg.org/sbinet/npyio/npy"
	"gonum.org/v1/gonum/mat"
)

// The fixtures in testdata/numpy were written by NumPy 1.24 (make.py).
func numpyFixture(name string) string { return filepath.Join("testdata", "numpy", name) }

var fixtureX = [][]float64{{0.5, 1, 2}, {1.5, -1, 0}, {2.5, 3, 1}, {0, 0, 0}, {4, 4, 4}, {-1, 2, 7}}

func checkRows(t *testing.T, what string, x *mat.Dense, want [][]float64) {
	t.Helper()
	n, d := x.Dims()
	if n != len(want) || d != len(want[0]) {
		t.Fatalf("%s: %d×%d, want %d×%d", what, n, d, len(want), len(want[0]))
	}
	for i, w := range want {
		if !slices.Equal(x.RawRowView(i), w) {
			t.Fatalf("%s: row %d is %v, want %v", what, i, x.RawRowView(i), w)
		}
	}
}

func TestReadNumPy(t *testing.T) {
	intY := []float64{2, 0, 2, 1, 0, 2}
	for _, c := range []struct {
		file    string
		opt     NumPy
		classes []string
		y       []float64
	}{
		{"features.npy", NumPy{Labels: numpyFixture("labels.npy")}, []string{"cat", "dog", "emu"}, []float64{0, 1, 0, 2, 1, 0}},
		{"features.npy", NumPy{Labels: numpyFixture("labels_int.npy")}, []string{"0", "1", "2"}, intY},
		{"table.npy", NumPy{}, []string{"0", "1", "2"}, intY},
		{"table.npy", NumPy{Label: ColumnAt(3)}, []string{"0", "1", "2"}, intY},
		{"fortran.npy", NumPy{Labels: numpyFixture("labels_int.npy")}, []string{"0", "1", "2"}, intY},
		{"set.npz", NumPy{}, []string{"0", "1", "2"}, intY},
		{"named.npz", NumPy{XKey: "feats", YKey: "lab"}, []string{"a", "b"}, []float64{0, 1, 0, 1, 1, 0}},
	} {
		s, err := ReadNumPy(numpyFixture(c.file), c.opt)
		if err != nil {
			t.Fatalf("%s: %v", c.file, err)
		}
		checkRows(t, c.file, s.X, fixtureX)
		if !slices.Equal(s.Classes, c.classes) || !slices.Equal(s.Y, c.y) || s.Coding != ClassIndex {
			t.Errorf("%s: classes %v labels %v (%v), want %v %v", c.file, s.Classes, s.Y, s.Coding, c.classes, c.y)
		}
	}
	// A label column in the middle.
	s, err := ReadNumPy(numpyFixture("table.npy"), NumPy{Label: ColumnAt(1)})
	if err != nil {
		t.Fatal(err)
	}
	if got := s.X.RawRowView(1); !slices.Equal(got, []float64{1.5, 0, 0}) || !slices.Equal(s.Features, []string{"0", "2", "3"}) {
		t.Errorf("label column 1: row 1 %v features %v", got, s.Features)
	}
}

func TestReadUnlabelled(t *testing.T) {
	s, err := ReadNumPy(numpyFixture("features.npy"), NumPy{Unlabelled: true})
	if err != nil {
		t.Fatal(err)
	}
	checkRows(t, "npy", s.X, fixtureX)
	if s.Y != nil || s.Classes != nil {
		t.Fatalf("unlabelled set has labels %v classes %v", s.Y, s.Classes)
	}
	z, err := ReadNumPy(numpyFixture("set.npz"), NumPy{Unlabelled: true})
	if err != nil || z.Y != nil {
		t.Fatalf("npz: %v %v", z, err)
	}
	c, err := ParseCSV([]byte("a,b\n1,2\n3,4\n"), CSV{Unlabelled: true})
	if err != nil {
		t.Fatal(err)
	}
	checkRows(t, "csv", c.X, [][]float64{{1, 2}, {3, 4}})
	if c.Y != nil || len(c.Features) != 2 {
		t.Fatalf("unlabelled csv: labels %v features %v", c.Y, c.Features)
	}
}

func TestReadNumPyImages(t *testing.T) {
	hwc, err := ReadNumPy(numpyFixture("images_hwc.npy"), NumPy{Labels: numpyFixture("labels4.npy")})
	if err != nil {
		t.Fatal(err)
	}
	chw, err := ReadNumPy(numpyFixture("images_chw.npy"), NumPy{Labels: numpyFixture("labels4.npy")})
	if err != nil {
		t.Fatal(err)
	}
	if hwc.Shape != [3]int{3, 2, 3} || chw.Shape != hwc.Shape {
		t.Fatalf("shapes %v and %v, want 3×2×3", hwc.Shape, chw.Shape)
	}
	if !mat.Equal(hwc.X, chw.X) {
		t.Fatal("n×H×W×C and n×C×H×W images differ after reordering")
	}
	// Pixel (c, i, j) of image k was written as ((k·2 + i)·3 + j)·3 + c.
	if v := chw.X.At(1, (2*2+1)*3+2); v != float64(((1*2+1)*3+2)*3+2) {
		t.Fatalf("image 1, channel 2, pixel (1, 2) is %v", v)
	}
	if !slices.Equal(hwc.Classes, []string{"0", "1"}) || !slices.Equal(hwc.Y, []float64{1, 0, 1, 1}) {
		t.Fatalf("bool labels: classes %v, y %v", hwc.Classes, hwc.Y)
	}
}

func TestReadNumPyErrors(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, v any) string {
		var b bytes.Buffer
		if err := npy.Write(&b, v); err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, name)
		os.WriteFile(p, b.Bytes(), 0o644)
		return p
	}
	short := write("short.npy", []int64{0, 1})
	raw, _ := os.ReadFile(numpyFixture("features.npy"))
	trunc := filepath.Join(dir, "trunc.npy")
	os.WriteFile(trunc, raw[:len(raw)-5], 0o644)
	garbage := filepath.Join(dir, "garbage.npy")
	os.WriteFile(garbage, []byte("not numpy at all"), 0o644)
	one := write("one.npy", []int64{1, 1, 1, 1, 1, 1})
	huge := filepath.Join(dir, "huge.npy")
	os.WriteFile(huge, []byte("\x93NUMPY\x02\x00\xff\xff\xff\x7f{'descr'"), 0o644)
	empty := numpyFixture("empty.npy")
	for _, c := range []struct {
		file string
		opt  NumPy
		want string
	}{
		{numpyFixture("complex.npy"), NumPy{Labels: numpyFixture("labels.npy")}, "dtype"},
		{numpyFixture("object.npy"), NumPy{}, "dtype"},
		{numpyFixture("nan.npy"), NumPy{Label: ColumnAt(0)}, "finite"},
		{numpyFixture("features.npy"), NumPy{Labels: short}, "6 feature rows but 2 labels"},
		{numpyFixture("features.npy"), NumPy{Labels: one}, "at least 2 classes"},
		{numpyFixture("labels.npy"), NumPy{}, "need numbers"},
		{numpyFixture("labels_int.npy"), NumPy{}, "need a 2-D array"},
		{numpyFixture("images_hwc.npy"), NumPy{}, "need their labels"},
		{numpyFixture("set.npz"), NumPy{XKey: "nope"}, `no array "nope"`},
		{numpyFixture("named.npz"), NumPy{}, "no features array"},
		{trunc, NumPy{Labels: numpyFixture("labels.npy")}, "truncated"},
		{garbage, NumPy{}, "not a valid .npy"},
		{huge, NumPy{}, "header of 2147483647 bytes"},
		{empty, NumPy{}, "no rows"},
		{numpyFixture("make.py"), NumPy{}, "not a NumPy file"},
		{filepath.Join(dir, "absent.npy"), NumPy{}, "absent.npy"},
	} {
		_, err := ReadNumPy(c.file, c.opt)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want one containing %q", filepath.Base(c.file), err, c.want)
		}
	}
}

func FuzzReadNPY(f *testing.F) {
	for _, name := range []string{"features.npy", "labels.npy", "table.npy", "fortran.npy", "images_hwc.npy", "complex.npy", "object.npy", "nan.npy"} {
		raw, err := os.ReadFile(numpyFixture(name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(raw)
		f.Add(raw[:len(raw)/2])
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		a, err := readNPY(bytes.NewReader(in), int64(len(in)))
		if err != nil {
			if a != nil {
				t.Fatalf("array returned with error %v", err)
			}
			return
		}
		elems := 1
		for _, d := range a.shape {
			elems *= d
		}
		if n := max(len(a.values), len(a.strings)); n != elems || elems > len(in) {
			t.Fatalf("shape %v but %d entries from %d bytes", a.shape, n, len(in))
		}
	})
}
