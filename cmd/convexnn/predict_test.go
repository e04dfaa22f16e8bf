package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/convexnn/convexnn/solvers"
	"github.com/convexnn/convexnn/solvers/gated"
	"github.com/convexnn/convexnn/solvers/netfile"
	"gonum.org/v1/gonum/mat"
)

// A solve result predicts on a CSV of its own data with the accuracy its
// network has there.
func TestPredictSolveResult(t *testing.T) {
	prob, result := solvedProblem(t, "hinge")
	data, px, py := problemCSV(t, prob, "label")
	pj := struct {
		X [][]float64
		Y []float64
	}{px, py}
	r := commandJSON[predictionsJSON](t, "predict", predictCommand, []string{"-network", result, "-data", data, "-label-column", "label"})
	rawRes, _ := os.ReadFile(result)
	net, err := readNetwork(bytes.NewReader(rawRes))
	if err != nil {
		t.Fatal(err)
	}
	x := mat.NewDense(len(pj.X), 2, nil)
	for k, row := range pj.X {
		x.SetRow(k, row)
	}
	pred, _ := net.Predict(x)
	want, _ := solvers.Accuracy(pred, pj.Y)
	if r.Accuracy == nil || *r.Accuracy != want || r.Rows != 30 || r.Model != "relu" || len(r.Predicted) != 30 || r.Unknown != 0 {
		t.Fatalf("predict: %+v, want accuracy %v", r, want)
	}
	sum := 0
	for _, row := range r.Confusion {
		for _, v := range row {
			sum += v
		}
	}
	if sum != 30 || float64(r.Confusion[0][0]+r.Confusion[1][1])/30 != want {
		t.Fatalf("confusion %v", r.Confusion)
	}
	for k, p := range r.Predicted {
		if (p == "1") != (pred[k] >= 0) || r.Scores[k][0] != pred[k] {
			t.Fatalf("row %d: predicted %s score %v, network %v", k, p, r.Scores[k], pred[k])
		}
	}
}

// problemCSV writes the rows of a problem file with two features as a CSV
// file with columns a, b and the labels under label, and returns its path
// and the problem's X and y.
func problemCSV(t *testing.T, prob, label string) (path string, x [][]float64, y []float64) {
	t.Helper()
	var pj struct {
		X [][]float64 `json:"X"`
		Y []float64   `json:"y"`
	}
	raw, err := os.ReadFile(prob)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, &pj); err != nil {
		t.Fatal(err)
	}
	var csv strings.Builder
	csv.WriteString("a,b," + label + "\n")
	for k, row := range pj.X {
		fmt.Fprintf(&csv, "%v,%v,%v\n", row[0], row[1], pj.Y[k])
	}
	path = filepath.Join(t.TempDir(), "points.csv")
	if err := os.WriteFile(path, []byte(csv.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return path, pj.X, pj.Y
}

// A saved multi-class network scores .npy data, with names of classes and
// a scaling, and refuses data of another width.
func TestPredictNetworkFile(t *testing.T) {
	dir := t.TempDir()
	g := &gated.Network{Gates: mat.NewDense(3, 2, []float64{1, -1, 0, 1, 0.5, 0}), Bias: true,
		W: gated.Weights{mat.NewDense(3, 3, []float64{1, 0, 0, 0, 1, 0, 0, 0, 1}), mat.NewDense(3, 3, []float64{0, 2, 0, 0, 0, 1, 1, 0, 0})}}
	f, err := netfile.New(g, netfile.Input{Shift: []float64{1, 1}, Scale: []float64{2, 2}}, netfile.Output{Decision: netfile.Argmax, Classes: []string{"cat", "dog", "emu"}})
	if err != nil {
		t.Fatal(err)
	}
	netPath := filepath.Join(dir, "net.npz")
	if err := f.Save(netPath); err != nil {
		t.Fatal(err)
	}
	csv := "x1,x2,animal\n3,1,cat\n1,5,dog\n-1,-1,emu\n0,0,cat\n"
	data := filepath.Join(dir, "d.csv")
	os.WriteFile(data, []byte(csv), 0o644)
	r := commandJSON[predictionsJSON](t, "predict", predictCommand, []string{"-network", netPath, "-data", data, "-label-column", "animal"})
	x := mat.NewDense(4, 2, []float64{1, 0, 0, 2, -1, -1, -0.5, -0.5}) // scaled by hand
	s, _ := g.Scores(x)
	right := 0
	for k, want := range []string{"cat", "dog", "emu", "cat"} {
		cls := []string{"cat", "dog", "emu"}[int(gated.Decide(s)[k])]
		if r.Predicted[k] != cls {
			t.Fatalf("row %d: predicted %s, want %s (scores %v)", k, r.Predicted[k], cls, r.Scores[k])
		}
		if cls == want {
			right++
		}
	}
	if *r.Accuracy != float64(right)/4 || r.Decision != "argmax" || len(r.Confusion) != 3 {
		t.Fatalf("accuracy %v (want %v), %+v", *r.Accuracy, float64(right)/4, r)
	}
	// Unlabelled data: predictions only.
	os.WriteFile(data, []byte("x1,x2\n3,1\n1,5\n"), 0o644)
	u := commandJSON[predictionsJSON](t, "predict", predictCommand, []string{"-network", netPath, "-data", data})
	if u.Accuracy != nil || u.Rows != 2 || u.Predicted[0] != r.Predicted[0] {
		t.Fatalf("unlabelled: %+v", u)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"-network", netPath, "-data", filepath.Join(dir, "d.txt2")}, "read .csv, .npy or .npz"},
		{[]string{"-network", netPath}, "-network and -data are required"},
		{[]string{"-network", data, "-data", data}, "not a network file"},
		{[]string{"-network", netPath, "-data", data, "-label-column", "x2"}, "has 1 features, the network"},
		{[]string{"-network", netPath, "-data", data, "-delimiter", ";;"}, "one character"},
	} {
		err := predictCommand(context.Background(), c.args, &bytes.Buffer{})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: error %v, want one containing %q", c.args, err, c.want)
		}
	}
}
