package data

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

func TestParseCSV(t *testing.T) {
	const file = "width,height,species\n1.5,2,setosa\n3,4e-1,virginica\r\n\n-2,0,setosa\n5,6,versicolor\n"
	s, err := ParseCSV([]byte(file), CSV{Label: ColumnNamed("species")})
	if err != nil {
		t.Fatal(err)
	}
	checkRows(t, "csv", s.X, [][]float64{{1.5, 2}, {3, 0.4}, {-2, 0}, {5, 6}})
	if !slices.Equal(s.Classes, []string{"setosa", "versicolor", "virginica"}) || !slices.Equal(s.Y, []float64{0, 2, 0, 1}) ||
		!slices.Equal(s.Features, []string{"width", "height"}) || s.NumClasses() != 3 {
		t.Fatalf("classes %v, labels %v, features %v", s.Classes, s.Y, s.Features)
	}
	// The same by position, quoted, with semicolons and numeric labels.
	q := "\"a\";\"b;c\";\"lab\"\n1;2;\"10\"\n3;\"4\";-1\n5;6;10.0\n"
	s, err = ParseCSV([]byte(q), CSV{Delimiter: ';', Label: ParseColumn("2")})
	if err != nil {
		t.Fatal(err)
	}
	checkRows(t, "quoted", s.X, [][]float64{{1, 2}, {3, 4}, {5, 6}})
	if !slices.Equal(s.Classes, []string{"-1", "10"}) || !slices.Equal(s.Y, []float64{1, 0, 1}) || s.Features[1] != "b;c" {
		t.Fatalf("quoted: classes %v labels %v features %v", s.Classes, s.Y, s.Features)
	}
	// No header; the label column first.
	s, err = ParseCSV([]byte("b,1,2\na,3,4\n"), CSV{NoHeader: true, Label: ColumnAt(0)})
	if err != nil {
		t.Fatal(err)
	}
	checkRows(t, "no header", s.X, [][]float64{{1, 2}, {3, 4}})
	if !slices.Equal(s.Y, []float64{1, 0}) || !slices.Equal(s.Features, []string{"1", "2"}) {
		t.Fatalf("no header: labels %v features %v", s.Y, s.Features)
	}
	// Recode the two classes.
	b, err := s.Recode(PlusMinus)
	if err != nil || !slices.Equal(b.Y, []float64{1, -1}) || b.Coding != PlusMinus {
		t.Fatalf("Recode: %v %v", b, err)
	}
}

func TestParseCSVErrors(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"", "no rows"},
		{"a,b\n", "no data rows"},
		{"a,b,c\n1,2,x\n3,4,y\n5,6\n", "line 4 has 2 cells, the header has 3"},
		{"a,b,c\n1,,x\n3,4,y\n", `line 2, column "b": missing value ""`},
		{"a,b,c\n1,2,x\n3,NA,y\n", `line 3, column "b": missing value "NA"`},
		{"a,b,c\n1,2,x\n3,four,y\n", `line 3, column "b": "four" is not a number`},
		{"a,b,c\n1,2,x\n3,1e999,y\n", "out of the float64 range"},
		{"a,b,c\n1,2,x\n3,inf,y\n", "infinite"},
		{"a,b,c\n1,2,x\n3,4,\n", "missing label"},
		{"a,b,c\n1,2,x\n3,4,x\n", "at least 2 classes"},
		{"a;b;c\n1;2;x\n", "line 1 has 1 column"},
		{"a,b,c\n1,\"2,x\n", "extraneous or missing"},
	} {
		_, err := ParseCSV([]byte(c.in), CSV{})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: error %v, want one containing %q", c.in, err, c.want)
		}
	}
	if _, err := ParseCSV([]byte("a,b\n1,x\n2,y\n"), CSV{Label: ColumnNamed("c")}); err == nil || !strings.Contains(err.Error(), `no column named "c"`) {
		t.Errorf("unknown label column: %v", err)
	}
	if _, err := ParseCSV([]byte("a,b\n1,x\n2,y\n"), CSV{Label: ColumnAt(5)}); err == nil || !strings.Contains(err.Error(), "outside the 2 columns") {
		t.Errorf("label column 5: %v", err)
	}
	if _, err := ParseCSV([]byte("a,b\n1,x\n"), CSV{Delimiter: '"'}); err == nil || !strings.Contains(err.Error(), "delimiter") {
		t.Errorf("quote delimiter: %v", err)
	}
	p := filepath.Join(t.TempDir(), "bad.csv")
	os.WriteFile(p, []byte("a,b\n1,x\nz,y\n"), 0o644)
	if _, err := ReadCSV(p, CSV{}); err == nil || !strings.Contains(err.Error(), "bad.csv: line 3") {
		t.Errorf("ReadCSV names the file and line: %v", err)
	}
}

func TestPickClasses(t *testing.T) {
	s, err := ParseCSV([]byte("f,l\n1,a\n2,b\n3,c\n4,a\n5,c\n"), CSV{})
	if err != nil {
		t.Fatal(err)
	}
	p, err := s.PickClasses(ZeroOne, "c", "a")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(p.X.RawMatrix().Data, []float64{1, 3, 4, 5}) || !slices.Equal(p.Y, []float64{1, 0, 1, 0}) || !slices.Equal(p.Classes, []string{"c", "a"}) {
		t.Fatalf("PickClasses: x %v y %v classes %v", p.X.RawMatrix().Data, p.Y, p.Classes)
	}
	if _, err := s.Recode(PlusMinus); err == nil || !strings.Contains(err.Error(), "3 classes") {
		t.Fatalf("Recode of 3 classes: %v", err)
	}
	if _, err := s.PickClasses(ZeroOne, "a", "z"); err == nil || !strings.Contains(err.Error(), `no class "z"`) {
		t.Fatalf("unknown class: %v", err)
	}
}

// syntheticCSV writes n rows of d features and a label column.
func syntheticCSV(n, d int) []byte {
	rng := rand.New(rand.NewPCG(1, 2))
	var b bytes.Buffer
	for j := 0; j < d; j++ {
		fmt.Fprintf(&b, "f%d,", j)
	}
	b.WriteString("label\n")
	for i := 0; i < n; i++ {
		for j := 0; j < d; j++ {
			b.WriteString(strconv.FormatFloat(rng.NormFloat64(), 'g', 6, 64))
			b.WriteByte(',')
		}
		b.WriteString(strconv.Itoa(rng.IntN(3)))
		b.WriteByte('\n')
	}
	return b.Bytes()
}

// BenchmarkReadCSV reads issue 20's 100 000 × 100 table (target ≤ 1 s).
func BenchmarkReadCSV(b *testing.B) {
	p := filepath.Join(b.TempDir(), "big.csv")
	if err := os.WriteFile(p, syntheticCSV(100000, 100), 0o644); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for range b.N {
		s, err := ReadCSV(p, CSV{})
		if err != nil {
			b.Fatal(err)
		}
		if n, d := s.Dims(); n != 100000 || d != 100 {
			b.Fatalf("%d×%d", n, d)
		}
	}
}

func FuzzParseCSV(f *testing.F) {
	f.Add([]byte("a,b,c\n1,2,x\n3,4,y\n"), byte(','))
	f.Add([]byte("\"a\";\"b\"\n1;\"x\"\n2;y\n"), byte(';'))
	f.Add([]byte("a\tb\n1\tx\n\n2\ty\r\n"), byte('\t'))
	f.Add([]byte("a,b\n1,NA\n"), byte(','))
	f.Add(syntheticCSV(20, 3), byte(','))
	f.Fuzz(func(t *testing.T, in []byte, delim byte) {
		s, err := ParseCSV(in, CSV{Delimiter: rune(delim)})
		if err != nil {
			if s != nil {
				t.Fatalf("set returned with error %v", err)
			}
			return
		}
		n, d := s.Dims()
		if n != len(s.Y) || d != len(s.Features) || len(s.Classes) < 2 {
			t.Fatalf("%d×%d with %d labels, %d feature names, %d classes", n, d, len(s.Y), len(s.Features), len(s.Classes))
		}
		for i := 0; i < n; i++ {
			for _, v := range s.X.RawRowView(i) {
				if v-v != 0 {
					t.Fatalf("row %d holds %v", i, v)
				}
			}
		}
		for _, v := range s.Y {
			if v < 0 || int(v) >= len(s.Classes) || v != float64(int(v)) {
				t.Fatalf("label %v of %d classes", v, len(s.Classes))
			}
		}
	})
}

// parseNumber must be bit-identical to strconv.ParseFloat, errors included.
func TestParseNumber(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	cases := []string{"0", "-0", "+0", "0.0", "-0.000", "1", "1.", ".5", "-.5", "1e5", "1E-5", "1e+22", "1e23", "1e-22", "1e-23",
		"9007199254740993", "9007199254740992", "123456789012345678", "0.1", "0.3", "1.7976931348623157e308", "4.9e-324",
		"", "-", "+", ".", "e5", "1e", "1e+", "1.2.3", "0x1p3", "inf", "NaN", "1_000", " 1", "1 ", "00012.5000", "1e0001",
		"0.000000000000000000000000001", "12345678901234567e-5", "1e-400", "2e400"}
	for range 20000 {
		var s string
		switch rng.IntN(4) {
		case 0:
			s = strconv.FormatFloat(rng.NormFloat64()*math.Pow(10, float64(rng.IntN(40)-20)), 'g', -1, 64)
		case 1:
			s = strconv.FormatFloat(rng.Float64()*1000, 'f', rng.IntN(12), 64)
		case 2:
			s = strconv.FormatFloat(rng.NormFloat64(), 'e', rng.IntN(18), 64)
		default:
			s = strconv.Itoa(rng.IntN(1<<40) - 1<<39)
		}
		cases = append(cases, s)
	}
	for _, s := range cases {
		want, werr := strconv.ParseFloat(s, 64)
		got, err := parseNumber(s)
		if (err == nil) != (werr == nil) || math.Float64bits(got) != math.Float64bits(want) {
			t.Fatalf("parseNumber(%q) = %v, %v; strconv: %v, %v", s, got, err, want, werr)
		}
	}
}

func FuzzParseNumber(f *testing.F) {
	for _, s := range []string{"0", "-1.5e-3", "123456789012345678", "1e22", "1e23", ".5", "nan", "0x10"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want, werr := strconv.ParseFloat(s, 64)
		got, err := parseNumber(s)
		if (err == nil) != (werr == nil) || math.Float64bits(got) != math.Float64bits(want) {
			t.Fatalf("parseNumber(%q) = %v, %v; strconv: %v, %v", s, got, err, want, werr)
		}
	})
}
