package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/convexnn/convexnn/solvers/netfile"
	"gonum.org/v1/gonum/mat"
)

// threeClassProblem writes a problem file of n points in the plane with
// labels 0, 1, 2 by angle sector.
func threeClassProblem(t *testing.T, extra map[string]any) string {
	t.Helper()
	rng := rand.New(rand.NewPCG(3, 3))
	x := make([][]float64, 90)
	y := make([]float64, 90)
	for k := range x {
		a, b := rng.NormFloat64(), rng.NormFloat64()
		x[k] = []float64{a, b}
		y[k] = math.Min(2, math.Floor(3*(math.Atan2(b, a)+math.Pi)/(2*math.Pi)))
	}
	b, _ := json.Marshal(map[string]any{"X": x, "y": y, "bias": true, "beta": 0.01, "P": 10, "seed": 1, "classes": 3})
	p := filepath.Join(t.TempDir(), "problem.json")
	os.WriteFile(p, []byte(withFields(t, string(b), extra)), 0o644)
	return p
}

func TestSolveGated(t *testing.T) {
	for _, c := range []struct {
		extra  map[string]any
		solver string
		want   string
	}{
		{nil, "", "fista"},
		{map[string]any{"loss": "squared"}, "", "kernel"},
		{map[string]any{"loss": "squared"}, "newton", "newton"},
		{map[string]any{"loss": "squared", "groups": "per-class"}, "fista", "fista"},
	} {
		prob := threeClassProblem(t, c.extra)
		save := filepath.Join(t.TempDir(), "net.npz")
		args := []string{"-problem", prob, "-save", save, "-gap", "1e-5"}
		if c.solver != "" {
			args = append(args, "-solver", c.solver)
		}
		r := commandJSON[gatedResultJSON](t, "solve", solveCommand, args)
		t.Logf("%v: %s, objective %.6f, certified %.1e, %d steps, decomposition +%.1f %%, training accuracy %.3f", c.extra, r.Solver, r.Objective, r.CertifiedGap, r.Iterations, 100*r.DecompositionGap, r.TrainingAccuracy)
		if r.Status != "optimal" || r.Solver != c.want || r.CertifiedGap > 1e-5 || r.LowerBound > r.Objective || r.TrainingAccuracy < 0.9 {
			t.Errorf("%v: %+v", c.extra, r)
		}
		if len(r.Network.Alpha) == 0 || len(r.Network.Alpha[0]) != 3 || len(r.Gated.W) != 10 || len(r.Gated.Gates[0]) != 3 {
			t.Errorf("network shapes: alpha %d×?, %d blocks", len(r.Network.Alpha), len(r.Gated.W))
		}
		f, err := netfile.Load(save)
		if err != nil {
			t.Fatal(err)
		}
		s, err := f.Scores(mat.NewDense(1, 2, []float64{1, 0.1}))
		if err != nil || f.Output.Decision != netfile.Argmax {
			t.Fatalf("saved network: %v, %v", s, err)
		}
	}
	// One output, labels ±1.
	prob := threeClassProblem(t, map[string]any{"classes": nil, "gated": true, "loss": "squared", "y": signs(90)})
	r := commandJSON[gatedResultJSON](t, "solve", solveCommand, []string{"-problem", prob})
	if r.Status != "optimal" || r.Solver != "kernel" || len(r.Network.Alpha[0]) != 1 {
		t.Errorf("binary gated: %s by %s, %d outputs", r.Status, r.Solver, len(r.Network.Alpha[0]))
	}
	for _, c := range []struct {
		extra map[string]any
		args  []string
		want  string
	}{
		{map[string]any{"classes": 1}, nil, "need at least 2"},
		{map[string]any{"loss": "hinge"}, nil, "softmax\" or \"squared"},
		{map[string]any{"groups": "all"}, nil, "\"joint\" or \"per-class\""},
		{map[string]any{"eps": 0.1}, nil, "robust training"},
		{map[string]any{"P": nil}, nil, "\"P\" ≥ 1"},
		{map[string]any{"y": append(make([]float64, 89), 7)}, nil, "not a class index"},
		{map[string]any{"extra": 1}, nil, "unknown field"},
		{map[string]any{"filter": 3}, nil, "belong to the models \"cnn-avg\" and \"cnn-max\""},
		{map[string]any{"m1": 2}, nil, "belongs to the model \"two-hidden\""},
		{map[string]any{"classes": 1 << 40}, nil, "classes for 90 labels"},
		{nil, []string{"-solver", "newton"}, "squared loss"},
		{nil, []string{"-solver", "kernel"}, "squared loss"},
		{nil, []string{"-solver", "ipm"}, "auto, kernel, newton or fista"},
		{nil, []string{"-rho", "2"}, "do not apply to gated"},
	} {
		prob := threeClassProblem(t, c.extra)
		err := solveCommand(context.Background(), append([]string{"-problem", prob}, c.args...), &bytes.Buffer{})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v %v: error %v, want one containing %q", c.extra, c.args, err, c.want)
		}
	}
}

func signs(n int) []float64 {
	y := make([]float64, n)
	for k := range y {
		y[k] = float64(2*(k%2) - 1)
	}
	return y
}

// A CSV file solves directly: two classes as the ReLU program (labels
// mapped to −1/+1) or the gated one, three as a multi-class gated problem.
func TestSolveCSV(t *testing.T) {
	dir := t.TempDir()
	var two, three strings.Builder
	two.WriteString("a,b,kind\n")
	three.WriteString("a,b,kind\n")
	rng := rand.New(rand.NewPCG(5, 5))
	for k := 0; k < 60; k++ {
		a, b := rng.NormFloat64(), rng.NormFloat64()
		kind := "round"
		if a*b > 0 {
			kind = "flat"
		}
		fmt.Fprintf(&two, "%v,%v,%s\n", a, b, kind)
		fmt.Fprintf(&three, "%v,%v,%d\n", a, b, int(math.Min(2, math.Floor(3*(math.Atan2(b, a)+math.Pi)/(2*math.Pi)))))
	}
	p2, p3 := filepath.Join(dir, "two.csv"), filepath.Join(dir, "three.csv")
	os.WriteFile(p2, []byte(two.String()), 0o644)
	os.WriteFile(p3, []byte(three.String()), 0o644)
	r := commandJSON[resultJSON](t, "solve", solveCommand, []string{"-problem", p2, "-label-column", "kind", "-patterns", "8", "-beta", "0.01"})
	if r.Status != "optimal" || len(r.Network.U) == 0 {
		t.Errorf("two classes, ReLU program: %+v", r.Status)
	}
	g := commandJSON[gatedResultJSON](t, "solve", solveCommand, []string{"-problem", p2, "-label-column", "kind", "-patterns", "8", "-gated"})
	if g.Status != "optimal" || g.Solver != "kernel" {
		t.Errorf("two classes, gated: %+v by %s", g.Status, g.Solver)
	}
	m := commandJSON[gatedResultJSON](t, "solve", solveCommand, []string{"-problem", p3, "-label-column", "-1", "-patterns", "8", "-gap", "1e-5"})
	if m.Status != "optimal" || m.Classes != 3 || m.TrainingAccuracy < 0.9 {
		t.Errorf("three classes: %s, %d classes, accuracy %v", m.Status, m.Classes, m.TrainingAccuracy)
	}
	err := solveCommand(context.Background(), []string{"-problem", p3, "-label-column", "nope"}, &bytes.Buffer{})
	if err == nil || !strings.Contains(err.Error(), `no column named "nope"`) {
		t.Errorf("unknown label column: %v", err)
	}
	err = solveCommand(context.Background(), []string{"-problem", threeClassProblem(t, nil), "-patterns", "8"}, &bytes.Buffer{})
	if err == nil || !strings.Contains(err.Error(), "is for a data file") {
		t.Errorf("-patterns with a JSON problem: %v", err)
	}
}

// The result of a multi-class solve predicts as a network file.
func TestPredictGatedResult(t *testing.T) {
	prob := threeClassProblem(t, nil)
	res := filepath.Join(t.TempDir(), "result.json")
	if err := solveCommand(context.Background(), []string{"-problem", prob, "-gap", "1e-5", "-out", res}, &bytes.Buffer{}); err != nil {
		t.Fatal(err)
	}
	data, _, _ := problemCSV(t, prob, "y")
	r := commandJSON[predictionsJSON](t, "predict", predictCommand, []string{"-network", res, "-data", data, "-label-column", "y"})
	var rr gatedResultJSON
	rawRes, _ := os.ReadFile(res)
	json.Unmarshal(rawRes, &rr)
	if r.Model != "gated" || r.Accuracy == nil || math.Abs(*r.Accuracy-rr.TrainingAccuracy) > 1e-12 || len(r.Classes) != 3 {
		t.Fatalf("predict on the gated result: %+v (training accuracy %v)", r, rr.TrainingAccuracy)
	}
}

// A network solved from a data file predicts on that file (raw features,
// class names as in the file) with the accuracy it had in training: through
// the result and through -save, for two classes (ReLU and gated programs)
// and three classes named 1, 2, 3.
func TestDataFileRoundTrip(t *testing.T) {
	dir := t.TempDir()
	rng := rand.New(rand.NewPCG(9, 9))
	var two, three strings.Builder
	two.WriteString("a,b,kind\n")
	three.WriteString("a,b,grade\n")
	for k := 0; k < 80; k++ {
		a, b := 10+5*rng.NormFloat64(), -3+0.1*rng.NormFloat64()
		kind := "none"
		if (a-10)*(b+3) > 0 {
			kind = "mild"
		}
		fmt.Fprintf(&two, "%v,%v,%s\n", a, b, kind)
		fmt.Fprintf(&three, "%v,%v,%d\n", a, b, 1+int(math.Min(2, math.Floor(3*(math.Atan2(10*(b+3), (a-10)/5)+math.Pi)/(2*math.Pi)))))
	}
	p2, p3 := filepath.Join(dir, "two.csv"), filepath.Join(dir, "three.csv")
	os.WriteFile(p2, []byte(two.String()), 0o644)
	os.WriteFile(p3, []byte(three.String()), 0o644)
	for _, c := range []struct {
		file, label string
		extra       []string
	}{{p2, "kind", nil}, {p2, "kind", []string{"-gated"}}, {p3, "grade", []string{"-gap", "1e-5"}}} {
		res := filepath.Join(dir, "result.json")
		save := filepath.Join(dir, "net.json")
		args := append([]string{"-problem", c.file, "-label-column", c.label, "-patterns", "12", "-beta", "0.01", "-out", res}, c.extra...)
		gatedRun := len(c.extra) > 0
		if gatedRun {
			args = append(args, "-save", save)
		}
		if err := solveCommand(context.Background(), args, &bytes.Buffer{}); err != nil {
			t.Fatal(err)
		}
		var train struct {
			TrainingAccuracy float64 `json:"training_accuracy"`
		}
		raw, _ := os.ReadFile(res)
		json.Unmarshal(raw, &train)
		nets := []string{res}
		if gatedRun {
			nets = append(nets, save)
		}
		for _, net := range nets {
			r := commandJSON[predictionsJSON](t, "predict", predictCommand, []string{"-network", net, "-data", c.file, "-label-column", c.label})
			t.Logf("%s %v via %s: accuracy %v (training %v), unknown %d, classes %v", filepath.Base(c.file), c.extra, filepath.Base(net), *r.Accuracy, train.TrainingAccuracy, r.Unknown, r.Classes)
			if r.Unknown != 0 || *r.Accuracy < 0.8 || (gatedRun && math.Abs(*r.Accuracy-train.TrainingAccuracy) > 1e-12) {
				t.Errorf("%s %v via %s: accuracy %v against training %v, %d unknown labels", c.file, c.extra, net, *r.Accuracy, train.TrainingAccuracy, r.Unknown)
			}
		}
	}
}
