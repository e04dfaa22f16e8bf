package netfile

import (
	"bytes"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/convexnn/convexnn/solvers"
	"github.com/convexnn/convexnn/solvers/batchnorm"
	"github.com/convexnn/convexnn/solvers/cnn"
	"github.com/convexnn/convexnn/solvers/gated"
	"github.com/convexnn/convexnn/solvers/twohidden"
	"gonum.org/v1/gonum/mat"
)

func randDense(rng *rand.Rand, r, c int) *mat.Dense {
	m := mat.NewDense(r, c, nil)
	for i := range m.RawMatrix().Data {
		m.RawMatrix().Data[i] = rng.NormFloat64() * math.Pow(10, float64(rng.IntN(20)-10))
	}
	return m
}

func randVec(rng *rand.Rand, n int) []float64 {
	v := make([]float64, n)
	for i := range v {
		v[i] = rng.NormFloat64()
	}
	return v
}

// sampleFiles returns one file of every model, with scalings and names.
func sampleFiles(t testing.TB) []*File {
	rng := rand.New(rand.NewPCG(1, 2))
	var out []*File
	add := func(net any, in Input, o Output) {
		f, err := New(net, in, o)
		if err != nil {
			t.Fatalf("%T: %v", net, err)
		}
		out = append(out, f)
	}
	bin := Output{Decision: Sign, Classes: []string{"benign", "malignant"}}
	scale := func(d int) Input {
		sc := make([]float64, d)
		for j := range sc {
			sc[j] = 0.5 + rng.Float64()
		}
		return Input{Shift: randVec(rng, d), Scale: sc, Names: slices.Repeat([]string{"f"}, d)}
	}
	add(&solvers.Network{U: randDense(rng, 5, 3), Alpha: randVec(rng, 3), Bias: true}, scale(4), bin)
	g := &gated.Network{Gates: randDense(rng, 4, 2), W: gated.Weights{randDense(rng, 4, 3), randDense(rng, 4, 3)}, Bias: true}
	add(g, scale(3), Output{Decision: Argmax, Classes: []string{"a", "b", "c"}})
	add(&gated.Network{Gates: randDense(rng, 3, 2), W: gated.Weights{randDense(rng, 3, 1), randDense(rng, 3, 1)}}, Input{}, Output{Decision: Value})
	bn := &batchnorm.Network{W: randDense(rng, 3, 2), Mean: randVec(rng, 2), Scale: []float64{1.5, 2}, Gamma: []float64{0.3, 0}, Alpha: randVec(rng, 2), A: randVec(rng, 2), N: 40}
	add(bn, Input{}, bin)
	th := &twohidden.Network{Bias: true, Subs: []twohidden.SubNetwork{{W1: randDense(rng, 4, 2), W2: randVec(rng, 2), W3: -0.5}, {W1: randDense(rng, 4, 2), W2: randVec(rng, 2), W3: 2}}}
	add(th, scale(3), bin)
	c := &cnn.Network{Shape: cnn.Shape{C: 1, H: 5, W: 5}, Conv: cnn.Conv{Size: 3, Stride: 2, Bias: true}, Pool: cnn.MaxPool, U: randDense(rng, 10, 2), Alpha: randVec(rng, 2)}
	add(c, Input{Shape: [3]int{1, 5, 5}}, bin)
	add(&solvers.MultiNetwork{U: randDense(rng, 4, 3), A: randDense(rng, 3, 4), Bias: true}, scale(3), Output{Decision: Argmax, Classes: []string{"0", "1", "2", "3"}})
	return out
}

func sameBits(a, b []float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if math.Float64bits(a[i]) != math.Float64bits(b[i]) {
			return false
		}
	}
	return true
}

// Saved files load back bit-identically (weights, scalings, names) and score
// new rows exactly as the original.
func TestRoundTrip(t *testing.T) {
	dir := t.TempDir()
	rng := rand.New(rand.NewPCG(3, 4))
	for i, f := range sampleFiles(t) {
		for _, ext := range []string{".json", ".npz"} {
			path := filepath.Join(dir, f.Model.String()+ext)
			if err := f.Save(path); err != nil {
				t.Fatal(err)
			}
			g, err := Load(path)
			if err != nil {
				t.Fatalf("%s: %v", path, err)
			}
			a, _ := f.wire(nil).flat()
			b, _ := g.wire(nil).flat()
			if !sameBits(a, b) || g.Model != f.Model || !slices.Equal(g.Output.Classes, f.Output.Classes) || g.Output.Decision != f.Output.Decision ||
				!slices.Equal(g.Input.Names, f.Input.Names) || g.Input.Shape != f.Input.Shape {
				t.Fatalf("file %d %s: loaded file differs", i, ext)
			}
			x := randDense(rng, 7, f.Input.Features)
			for k := range x.RawMatrix().Data {
				x.RawMatrix().Data[k] = rng.NormFloat64()
			}
			s1, err := f.Scores(x)
			if err != nil {
				t.Fatal(err)
			}
			s2, err := g.Scores(x)
			if err != nil {
				t.Fatal(err)
			}
			if !sameBits(s1.RawMatrix().Data, s2.RawMatrix().Data) {
				t.Fatalf("file %d %s: scores differ after loading", i, ext)
			}
		}
	}
}

// flat lists every number of a file's JSON, in order, for comparisons.
func (w *wireFile) flat() ([]float64, error) {
	var out []float64
	m := func(x *wireMatrix) { out = append(out, x.Data...) }
	out = append(append(out, w.Input.Shift...), w.Input.Scale...)
	switch {
	case w.ReLU != nil:
		m(w.ReLU.U)
		out = append(out, w.ReLU.Alpha...)
	case w.Gated != nil:
		m(w.Gated.Gates)
		for _, b := range w.Gated.W {
			m(b)
		}
	case w.BatchNorm != nil:
		b := w.BatchNorm
		m(b.W)
		out = slices.Concat(out, b.Mean, b.Scale, b.Gamma, b.Alpha, b.A, []float64{float64(b.N)})
	case w.TwoHidden != nil:
		for _, s := range w.TwoHidden.Subs {
			m(s.W1)
			out = append(append(out, s.W2...), s.W3)
		}
	case w.CNN != nil:
		m(w.CNN.U)
		out = append(out, w.CNN.Alpha...)
	case w.MultiReLU != nil:
		m(w.MultiReLU.U)
		m(w.MultiReLU.A)
	}
	return out, nil
}

func TestLoadErrors(t *testing.T) {
	dir := t.TempDir()
	f := sampleFiles(t)[1]
	good := filepath.Join(dir, "g.json")
	if err := f.Save(good); err != nil {
		t.Fatal(err)
	}
	raw, _ := os.ReadFile(good)
	npz := filepath.Join(dir, "g.npz")
	if err := f.Save(npz); err != nil {
		t.Fatal(err)
	}
	rawz, _ := os.ReadFile(npz)
	edit := func(old, new string) []byte { return bytes.Replace(raw, []byte(old), []byte(new), 1) }
	for _, c := range []struct {
		name string
		in   []byte
		want string
	}{
		{"version", edit(`"version": 1`, `"version": 2`), "version 2; this convexnn reads version 1"},
		{"format", edit(`"convexnn-network"`, `"other"`), "not a network file"},
		{"json", raw[:len(raw)/2], "corrupt JSON"},
		{"model", edit(`"model": "gated"`, `"model": "gated2"`), `unknown model "gated2"`},
		{"field", edit(`"bias": true`, `"bias": true, "extra": 1`), "unknown field"},
		{"classes", edit(`"c"`, `"c", "d"`), "one class per output"},
		{"decision", edit(`"argmax"`, `"maybe"`), "decision"},
		{"shape", edit(`"rows": 4`, `"rows": 5`), "holds"},
		{"features", edit(`"features": 3`, `"features": 4`), "network takes 3"},
		{"truncated npz", rawz[:len(rawz)-40], "corrupt NumPy archive"},
		{"empty", nil, "corrupt JSON"},
	} {
		p := filepath.Join(dir, c.name+".json")
		if bytes.HasPrefix(c.in, []byte("PK")) {
			p = filepath.Join(dir, "t.npz")
		}
		os.WriteFile(p, c.in, 0o644)
		_, err := Load(p)
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), filepath.Base(p)) {
			t.Errorf("%s: error %v, want one naming the file and containing %q", c.name, err, c.want)
		}
	}
	if _, err := f.Scores(mat.NewDense(2, 5, nil)); err == nil || !strings.Contains(err.Error(), "5 features, the network takes 3") {
		t.Errorf("wrong width: %v", err)
	}
	if err := f.Save(filepath.Join(dir, "x.txt")); err == nil || !strings.Contains(err.Error(), ".json or .npz") {
		t.Errorf("bad extension: %v", err)
	}
	if _, err := New(42, Input{}, Output{}); err == nil || !strings.Contains(err.Error(), "cannot save a int") {
		t.Errorf("New(42): %v", err)
	}
}

func FuzzParse(f *testing.F) {
	dir := f.TempDir()
	for i, file := range sampleFiles(f) {
		for _, ext := range []string{".json", ".npz"} {
			p := filepath.Join(dir, string(rune('a'+i))+ext)
			if err := file.Save(p); err != nil {
				f.Fatal(err)
			}
			raw, _ := os.ReadFile(p)
			f.Add(raw)
		}
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		file, err := Parse(in)
		if err != nil {
			if file != nil {
				t.Fatal("file returned with an error")
			}
			return
		}
		if err := file.Validate(); err != nil {
			t.Fatalf("parsed file does not validate: %v", err)
		}
		x := mat.NewDense(2, file.Input.Features, nil)
		if _, err := file.Scores(x); err != nil {
			t.Fatalf("parsed file cannot score: %v", err)
		}
	})
}
