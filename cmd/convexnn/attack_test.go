package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func attackJSONOf(t *testing.T, args ...string) attackJSON {
	t.Helper()
	return commandJSON[attackJSON](t, "attack", attackCommand, args)
}

// solvedProblem solves a small problem by the interior-point method and
// returns the problem and result files.
func solvedProblem(t *testing.T, loss string) (prob, result string) {
	t.Helper()
	prob = writeProblem(t, randomProblem(30, 2, loss, 3))
	result = filepath.Join(t.TempDir(), "result.json")
	var out bytes.Buffer
	if err := solveCommand(context.Background(), []string{"-problem", prob, "-solver", "ipm", "-out", result}, &out); err != nil {
		t.Fatal(err)
	}
	return prob, result
}

func TestAttackSolvedNetwork(t *testing.T) {
	for _, loss := range []string{"hinge", "squared"} {
		prob, result := solvedProblem(t, loss)
		clean := -1.0
		for _, args := range [][]string{
			{"-method", "fgsm", "-eps", "0.2"},
			{"-method", "pgd", "-eps", "0.2"},
			{"-method", "pgd", "-eps", "0.3", "-norm", "2", "-steps", "10"},
			{"-method", "pgd", "-eps", "0"},
		} {
			r := attackJSONOf(t, append([]string{"-network", result, "-data", prob}, args...)...)
			t.Logf("%s %v: %+v", loss, args, r)
			if r.N != 30 || r.Loss != loss || r.Method != args[1] || r.Norm == "" {
				t.Fatalf("%v: %+v", args, r)
			}
			if r.CleanAccuracy < 0 || r.CleanAccuracy > 1 || r.AttackedAccuracy < 0 || r.AttackedAccuracy > 1 {
				t.Fatalf("%v: accuracies %v, %v outside [0, 1]", args, r.CleanAccuracy, r.AttackedAccuracy)
			}
			if loss == "hinge" && r.AttackedAccuracy > r.CleanAccuracy {
				t.Fatalf("%v: attacked accuracy %v above the clean %v", args, r.AttackedAccuracy, r.CleanAccuracy)
			}
			if clean >= 0 && r.CleanAccuracy != clean {
				t.Fatalf("clean accuracy changed with the attack: %v then %v", clean, r.CleanAccuracy)
			}
			clean = r.CleanAccuracy
			if args[3] == "0" && r.AttackedAccuracy != r.CleanAccuracy {
				t.Fatalf("ε = 0: attacked %v, clean %v", r.AttackedAccuracy, r.CleanAccuracy)
			}
			if (args[1] == "pgd") != (r.Steps > 0) {
				t.Fatalf("%v: steps %d", args, r.Steps)
			}
		}
		if want := directAccuracy(t, prob, result); clean != want {
			t.Fatalf("%s: clean accuracy %v, evaluated from the files %v", loss, clean, want)
		}
	}
}

func TestAttackBadInputIsUsageError(t *testing.T) {
	prob, result := solvedProblem(t, "hinge")
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	noNet := write("nonet.json", `{"status":"optimal"}`)
	short := write("short.json", `{"network":{"u":[[1,2,3],[1,2]],"alpha":[1,1],"bias":true}}`)
	alphas := write("alphas.json", `{"network":{"u":[[1,2,3]],"alpha":[1,1],"bias":true}}`)
	wide := write("wide.json", `{"network":{"u":[[1,2,3,4]],"alpha":[1],"bias":true}}`)
	labels := write("labels.json", `{"X":[[1,2],[3,4]],"y":[0.5,1],"loss":"squared","beta":1}`)
	base := []string{"-network", result, "-data", prob}
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"-data", prob, "-method", "pgd", "-eps", "0.1"}, "-network is required"},
		{[]string{"-network", result, "-method", "pgd", "-eps", "0.1"}, "-data is required"},
		{append(base, "-method", "pgd"), "-eps is required"},
		{append(base, "-eps", "0.1"), "-method is required"},
		{append(base, "-method", "cw", "-eps", "0.1"), `-method "cw"`},
		{append(base, "-method", "pgd", "-eps", "-1"), "-eps -1"},
		{append(base, "-method", "pgd", "-eps", "0.1", "-norm", "1"), `-norm "1"`},
		{append(base, "-method", "pgd", "-eps", "0.1", "-steps", "-3"), "-steps -3"},
		{append(base, "-method", "fgsm", "-eps", "0.1", "-steps", "3"), "-steps is a PGD option"},
		{append(base, "-method", "pgd", "-eps", "x"), "invalid value"},
		{append(base, "-method", "pgd", "-eps", "0.1", "extra"), `unexpected argument "extra"`},
		{[]string{"-network", filepath.Join(dir, "missing.json"), "-data", prob, "-method", "pgd", "-eps", "0.1"}, "missing.json"},
		{[]string{"-network", prob, "-data", prob, "-method", "pgd", "-eps", "0.1"}, `"network" is missing`},
		{[]string{"-network", noNet, "-data", prob, "-method", "pgd", "-eps", "0.1"}, `"network" is missing`},
		{[]string{"-network", short, "-data", prob, "-method", "pgd", "-eps", "0.1"}, "row 1 has 2 entries"},
		{[]string{"-network", alphas, "-data", prob, "-method", "pgd", "-eps", "0.1"}, `"alpha" has 2 entries`},
		{[]string{"-network", wide, "-data", prob, "-method", "pgd", "-eps", "0.1"}, "takes 3 features"},
		{[]string{"-network", result, "-data", result, "-method", "pgd", "-eps", "0.1"}, "problem:"},
		{[]string{"-network", result, "-data", labels, "-method", "pgd", "-eps", "0.1"}, `"y"[0] = 0.5`},
	}
	for _, c := range cases {
		err := attackCommand(context.Background(), c.args, &bytes.Buffer{})
		var ue usageError
		if err == nil || !errors.As(err, &ue) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("attack %v: %v, want a usage error containing %q", c.args, err, c.want)
		}
	}
}

// directAccuracy evaluates f(x) = Σ_j ([x; 1]ᵀu_j)_+ α_j from the files
// themselves, independently of readNetwork and solvers.
func directAccuracy(t *testing.T, prob, result string) float64 {
	t.Helper()
	var p problemJSON
	var r resultJSON
	for f, v := range map[string]any{prob: &p, result: &r} {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(raw, v); err != nil {
			t.Fatal(err)
		}
	}
	ok := 0
	for k, x := range p.X {
		in := append(append([]float64{}, x...), 1)
		var f float64
		for j, u := range r.Network.U {
			var z float64
			for i, ui := range u {
				z += in[i] * ui
			}
			f += max(z, 0) * r.Network.Alpha[j]
		}
		if (f >= 0) == (p.Y[k] > 0) {
			ok++
		}
	}
	return float64(ok) / float64(len(p.X))
}

// TestAttackBCE attacks an SCP-trained BCE network: labels 0/1 in the
// problem file, and the convex program's fields are ignored.
func TestAttackBCE(t *testing.T) {
	var p map[string]any
	if err := json.Unmarshal([]byte(randomProblem(30, 2, "bce", 4)), &p); err != nil {
		t.Fatal(err)
	}
	for k, v := range p["y"].([]any) {
		p["y"].([]any)[k] = (v.(float64) + 1) / 2
	}
	delete(p, "P")
	delete(p, "seed")
	body, _ := json.Marshal(p)
	prob := writeProblem(t, string(body))
	result := filepath.Join(t.TempDir(), "result.json")
	if err := solveCommand(context.Background(), []string{"-problem", prob, "-solver", "scp", "-neurons", "40", "-seed", "1", "-out", result}, &bytes.Buffer{}); err != nil {
		t.Fatal(err)
	}
	// A problem file with patterns is accepted too.
	p["P"], p["seed"] = 5, 2
	body, _ = json.Marshal(p)
	withP := writeProblem(t, string(body))
	for _, data := range []string{prob, withP} {
		r := attackJSONOf(t, "-network", result, "-data", data, "-method", "pgd", "-eps", "0.2")
		t.Logf("%+v", r)
		if r.Loss != "bce" || r.CleanAccuracy < 0.5 || r.AttackedAccuracy > r.CleanAccuracy {
			t.Fatalf("%+v", r)
		}
		if want := directAccuracy(t, prob, result); r.CleanAccuracy != want {
			t.Fatalf("clean accuracy %v, evaluated from the files %v", r.CleanAccuracy, want)
		}
	}
}
