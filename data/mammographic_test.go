package data

import (
	"errors"
	"math"
	"slices"
	"strings"
	"testing"
	"testing/iotest"
)

func TestReadMammographicTiny(t *testing.T) {
	tab, err := ReadMammographic(strings.NewReader(tinyMammographicFile))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(tab.Columns, []string{"BI-RADS", "Age", "Shape", "Margin", "Density", "Severity"}) {
		t.Fatalf("columns %v", tab.Columns)
	}
	nan := math.NaN()
	want := [][]float64{
		{5, 67, 3, 5, 3, 1},
		{4, 43, 1, 1, nan, 1},
		{55, 46, 4, 3, 3, 1},
		{0, nan, nan, nan, nan, 0},
		{3, 28, 1, 1, 3, 0},
	}
	same := func(a, b float64) bool { return a == b || math.IsNaN(a) && math.IsNaN(b) }
	if len(tab.Rows) != len(want) {
		t.Fatalf("%d rows, want %d", len(tab.Rows), len(want))
	}
	for i, r := range tab.Rows {
		if !slices.EqualFunc(r, want[i], same) {
			t.Fatalf("row %d: %v, want %v", i, r, want[i])
		}
	}
	// Several trailing blank lines, no final newline, a byte order mark.
	for _, in := range []string{"1,2,3,4,5,0\n\n\r\n  \n", "1,2,3,4,5,0", "\ufeff1,2,3,4,5,0\n"} {
		tab, err := ReadMammographic(strings.NewReader(in))
		if err != nil || len(tab.Rows) != 1 {
			t.Fatalf("%q: %v, %v", in, tab, err)
		}
	}
}

func TestReadMammographicErrors(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"", "mammographic: no rows"},
		{"\n\n", "mammographic: no rows"},
		{"5,67,3,5,3,1\n4,43,1,1,1\n", "line 2: 5 fields, want 6"},
		{"5,67,3,5,3,1,0\n", "line 1: 7 fields, want 6"},
		{"5,67,3,5,3,1\n5,67,3,5,3,1\n4,abc,1,1,1,0\n", `line 3, field Age: "abc" is not a number`},
		{"5,67,3,5,3,?\n", "line 1, field Severity: missing"},
		{"5,67,3,5,3,2\n", "line 1, field Severity: 2, want 0 or 1"},
		{"5,67,3,5,3,0.5\n", "line 1, field Severity: 0.5, want 0 or 1"},
		{"5,67,,5,3,1\n", "line 1, field Shape: empty"},
		{"5,67,3,5,Inf,1\n", `line 1, field Density: "Inf" is not a number`},
		{"5,67,3,5,NaN,1\n", `line 1, field Density: "NaN" is not a number`},
		{"5,67,3,5,3,1\n\n5,67,3,5,3,1\n", "line 2: blank line before more data (line 3)"},
		{"5,67,3,5,3,1\n" + strings.Repeat("1", 70000) + "\n", "line 2: longer than 65536 bytes"},
	} {
		for rname, r := range readers([]byte(c.in)) {
			tab, err := ReadMammographic(r)
			if tab != nil {
				t.Errorf("%q/%s: got a table with error %v", c.in, rname, err)
			}
			wantError(t, err, c.want)
		}
	}
	_, err := ReadMammographic(iotest.TimeoutReader(iotest.OneByteReader(strings.NewReader(tinyMammographicFile))))
	if !errors.Is(err, iotest.ErrTimeout) {
		t.Fatalf("error %v does not wrap the reader's", err)
	}
}

// The real files of ../shared/data (see its README for sizes and counts).

func TestReadMammographicShared(t *testing.T) {
	dir := requireSharedData(t)
	tab, err := ReadMammographic(openShared(t, dir, "mammographic/mammographic_masses.data"))
	if err != nil {
		t.Fatal(err)
	}
	var all, complete [2]int
	for _, r := range tab.Rows {
		s := int(r[5])
		all[s]++
		if !slices.ContainsFunc(r, math.IsNaN) {
			complete[s]++
		}
	}
	if len(tab.Rows) != 961 || all != [2]int{516, 445} || complete != [2]int{427, 403} {
		t.Fatalf("%d rows, benign/malignant %v, complete %v", len(tab.Rows), all, complete)
	}
	if r := tab.Rows[340]; r[0] != 55 { // line 341 keeps its odd BI-RADS
		t.Fatalf("line 341: BI-RADS %v, want 55", r[0])
	}
}
