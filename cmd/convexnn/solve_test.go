package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func writeProblem(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "problem.json")
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func randomProblem(n, d int, loss string, seed uint64) string {
	rng := rand.New(rand.NewPCG(seed, 9))
	x := make([][]float64, n)
	y := make([]float64, n)
	for k := range x {
		x[k] = make([]float64, d)
		for j := range x[k] {
			x[k][j] = rng.NormFloat64()
		}
		y[k] = 1
		if x[k][0]*x[k][1] < 0 {
			y[k] = -1
		}
	}
	b, _ := json.Marshal(map[string]any{"X": x, "y": y, "bias": true, "loss": loss, "beta": 0.05, "eps": 0, "P": 6, "seed": seed})
	return string(b)
}

func solveJSON(t *testing.T, args ...string) resultJSON {
	t.Helper()
	var out bytes.Buffer
	if err := solveCommand(context.Background(), args, &out); err != nil {
		t.Fatalf("solve %v: %v", args, err)
	}
	var r resultJSON
	if err := json.Unmarshal(out.Bytes(), &r); err != nil {
		t.Fatal(err)
	}
	return r
}

// TestSolveIPMAndADMMAgree solves one squared-loss problem with both
// solvers through the command line and checks the result file's contents.
func TestSolveIPMAndADMMAgree(t *testing.T) {
	prob := writeProblem(t, randomProblem(30, 3, "squared", 1))
	ipm := solveJSON(t, "-problem", prob, "-solver", "ipm")
	admm := solveJSON(t, "-problem", prob, "-solver", "admm", "-max-iter", "20000", "-tol", "1e-10")
	if ipm.Status != "optimal" || len(ipm.V) != 6 || len(ipm.V[0]) != 4 || len(ipm.D) != 6 || len(ipm.D[0]) != 30 {
		t.Fatalf("ipm result: status %s, v %d×%d, D %d", ipm.Status, len(ipm.V), len(ipm.V[0]), len(ipm.D))
	}
	if math.Abs(admm.Objective-ipm.Objective) > 1e-5*math.Max(1, ipm.Objective) {
		t.Fatalf("ADMM objective %.10f, interior point %.10f", admm.Objective, ipm.Objective)
	}
	if ipm.MaxViolation > 1e-7 || math.Abs(ipm.NonconvexObjective-ipm.Objective) > 1e-6*math.Max(1, ipm.Objective) {
		t.Fatalf("ipm violation %v, l^{u,α} %v vs l^{v,w} %v", ipm.MaxViolation, ipm.NonconvexObjective, ipm.Objective)
	}
	if len(ipm.Network.U) != len(ipm.Network.Alpha) || len(ipm.Network.U) == 0 || len(ipm.Network.U[0]) != 4 {
		t.Fatalf("network u %d×?, alpha %d", len(ipm.Network.U), len(ipm.Network.Alpha))
	}
	hinge := writeProblem(t, randomProblem(20, 2, "hinge", 2))
	if r := solveJSON(t, "-problem", hinge, "-solver", "ipm"); r.Status != "optimal" {
		t.Fatalf("hinge: %s", r.Status)
	}
}

// TestSolveBadInputNamesTheField checks exit-code-2 errors.
func TestSolveBadInputNamesTheField(t *testing.T) {
	cases := map[string]string{
		`{"X": [[1,2],[3]], "y": [1,1], "loss": "squared", "beta": 1, "P": 2, "seed": 1}`:               `row 1 has 1 entries`,
		`{"X": [[1,2],[3,4]], "y": [1,1], "loss": "squared", "beta": 1, "P": 2, "seed": 1, "foo": 3}`:   `unknown field "foo"`,
		`{"X": [[1,2],[3,4]], "y": [1], "loss": "squared", "beta": 1, "P": 2, "seed": 1}`:               `field "y" has 1 entries`,
		`{"X": [[1,2],[3,4]], "y": [1,1], "loss": "cubic", "beta": 1, "P": 2, "seed": 1}`:               `field "loss"`,
		`{"X": [[1,2],[3,4]], "y": [1,1], "loss": "squared", "P": 2, "seed": 1}`:                        `field "beta" is missing`,
		`{"X": [[1,2],[3,4]], "y": [1,1], "loss": "squared", "beta": 1, "D": [[1,0,1]]}`:                `field "D": row 0 has 3`,
		`{"X": [[1,2],[3,4]], "y": [1,1], "loss": "squared", "beta": 1, "D": [[1,3]]}`:                  `"D"[0][1] = 3`,
		`{"X": [[1,2],[3,4]], "y": [1,1], "loss": "squared", "beta": 1, "eps": 0.1, "P": 2, "seed": 1}`: `field "eps"`,
		`{"X": [[1,2],[3,4]], "y": [1,1], "loss": "squared", "beta": -1, "P": 2, "seed": 1}`:            `β = -1`,
		`{"X": [[1,2],[3,4]], "y": [1,0], "loss": "hinge", "beta": 1, "P": 2, "seed": 1}`:               `y[1] = 0`,
		`{"X": [[1,2],[3,4]], "y": "a", "loss": "squared", "beta": 1, "P": 2, "seed": 1}`:               `field "y"`,
		`{"X": [[1,2],[3,4]],`: `malformed JSON`,
	}
	for body, want := range cases {
		var out bytes.Buffer
		err := solveCommand(context.Background(), []string{"-problem", writeProblem(t, body)}, &out)
		var ue usageError
		if !errors.As(err, &ue) || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: want a usage error with %q, got %v", body, want, err)
		}
	}
	var out bytes.Buffer
	err := solveCommand(context.Background(), []string{"-problem", writeProblem(t, randomProblem(10, 2, "hinge", 3)), "-solver", "admm"}, &out)
	if !errors.As(err, new(usageError)) || !strings.Contains(err.Error(), "use -solver ipm") {
		t.Errorf("admm with hinge: %v", err)
	}
}
