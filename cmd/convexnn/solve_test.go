package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/convexnn/convexnn/internal/testenv"
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
	return commandJSON[resultJSON](t, "solve", solveCommand, args)
}

// commandJSON runs the subcommand name with args and decodes its output,
// which must hold exactly the fields of T.
func commandJSON[T any](t *testing.T, name string, command func(context.Context, []string, io.Writer) error, args []string) T {
	t.Helper()
	var out bytes.Buffer
	if err := command(context.Background(), args, &out); err != nil {
		t.Fatalf("%s %v: %v", name, args, err)
	}
	var r T
	dec := json.NewDecoder(&out)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&r); err != nil {
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
	relaxed := solveJSON(t, "-problem", prob, "-solver", "admm", "-relax", "1.8", "-max-iter", "20000", "-tol", "1e-10")
	if relaxed.Status != "optimal" || math.Abs(relaxed.Objective-ipm.Objective) > 1e-5*math.Max(1, ipm.Objective) {
		t.Fatalf("over-relaxed ADMM: %s, objective %.10f, interior point %.10f", relaxed.Status, relaxed.Objective, ipm.Objective)
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
		`{"X": [[1,2],[3]], "y": [1,1], "loss": "squared", "beta": 1, "P": 2, "seed": 1}`:                            `row 1 has 1 entries`,
		`{"X": [[1,2],[3,4]], "y": [1,1], "loss": "squared", "beta": 1, "P": 2, "seed": 1, "foo": 3}`:                `unknown field "foo"`,
		`{"X": [[1,2],[3,4]], "y": [1], "loss": "squared", "beta": 1, "P": 2, "seed": 1}`:                            `field "y" has 1 entries`,
		`{"X": [[1,2],[3,4]], "y": [1,1], "loss": "cubic", "beta": 1, "P": 2, "seed": 1}`:                            `field "loss"`,
		`{"X": [[1,2],[3,4]], "y": [1,1], "loss": "squared", "P": 2, "seed": 1}`:                                     `field "beta" is missing`,
		`{"X": [[1,2],[3,4]], "y": [1,1], "loss": "squared", "beta": 1, "D": [[1,0,1]]}`:                             `field "D": row 0 has 3`,
		`{"X": [[1,2],[3,4]], "y": [1,1], "loss": "squared", "beta": 1, "D": [[1,3]]}`:                               `"D"[0][1] = 3`,
		`{"X": [[1,2],[3,4]], "y": [1,1], "loss": "squared", "beta": 1, "eps": -0.1, "P": 2, "seed": 1}`:             `field "eps" = -0.1`,
		`{"X": [[1,2],[3,4]], "y": [1,1], "loss": "squared", "beta": 1, "eps": 0.1, "norm": "3", "P": 2, "seed": 1}`: `field "norm" = "3"`,
		`{"X": [[1,2],[3,4]], "y": [1,1], "loss": "squared", "beta": -1, "P": 2, "seed": 1}`:                         `"beta" = -1`,
		`{"X": [[1,2],[3,4]], "y": [1,0], "loss": "hinge", "beta": 1, "P": 2, "seed": 1}`:                            `"y"[1] = 0`,
		`{"X": [[1,2],[3,4]], "y": "a", "loss": "squared", "beta": 1, "P": 2, "seed": 1}`:                            `field "y"`,
		`{"X": [[1,2],[3,4]],`: `malformed JSON`,
		`{"X": [[1,2],[3,null]], "y": [1,-1], "loss": "hinge", "beta": 1, "P": 2, "seed": 1}`:                          `field "X"[1][1] is null`,
		`{"X": null, "y": [1,-1], "loss": "hinge", "beta": 1, "P": 2, "seed": 1}`:                                      `field "X" is missing or empty`,
		`{"X": [[1,2],[3,4]], "y": [1,null], "loss": "squared", "beta": 1, "P": 2, "seed": 1}`:                         `field "y"[1] is null`,
		`{"X": [[1,2],[3,4]], "y": [1,null], "loss": "squared", "beta": 1, "P": 2, "seed": 1, "gated": true}`:          `field "y"[1] is null`,
		`{"X": [[1,2],[ null ,4]], "y": [1,1], "loss": "squared", "beta": 1, "P": 2, "seed": null}`:                    `field "X"[1][0] is null`,
		`{"X": [[1,2],[3,4]], "y": [0,1], "classes": 2, "loss": "squared", "beta": 1, "D": [[1,null]], "gated": true}`: `field "D"[0][1] is null`,
	}
	for body, want := range cases {
		var out bytes.Buffer
		err := solveCommand(context.Background(), []string{"-problem", writeProblem(t, body)}, &out)
		var ue usageError
		if !errors.As(err, &ue) || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: want a usage error with %q, got %v", body, want, err)
		}
	}
	hinge := writeProblem(t, randomProblem(10, 2, "hinge", 3))
	scpProb := `{"X": [[1,2],[3,4]], "y": [1,1], "loss": "squared", "beta": 1}`
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"-problem", hinge, "-solver", "admm", "-gap", "0"}, "-gap 0: the certified relative gap must be in (0, 1)"},
		{[]string{"-problem", hinge, "-solver", "admm", "-gap", "NaN"}, "-gap NaN"},
		{[]string{"-problem", hinge, "-solver", "admm", "-tol", "Inf"}, "must be finite and ≥ 0 (-tol +Inf"},
		{[]string{"-problem", hinge, "-solver", "admm", "-rho", "Inf"}, "must be finite and ≥ 0"},
		{[]string{"-problem", hinge, "-solver", "auto", "-rho", "1"}, "-solver auto chooses the method itself"},
		{[]string{"-problem", hinge, "-solver", "newton"}, "-solver newton needs a smooth loss"},
		{[]string{"-problem", writeProblem(t, strings.Replace(randomProblem(10, 2, "hinge", 3), `"loss":"hinge"`, `"loss":"logistic"`, 1)), "-solver", "working-set"}, "-solver working-set solves the squared and hinge losses"},
		{[]string{"-problem", hinge, "-solver", "bfgs"}, "use ipm, working-set, newton, admm, scp, fista or kernel (gated programs) or auto"},
		{[]string{"-problem", hinge, "-solver", "admm", "-inner", "closed-form"}, "closed-form is for the squared loss"},
		{[]string{"-problem", hinge, "-solver", "admm", "-inner", "newton"}, `-inner "newton"`},
		{[]string{"-problem", hinge, "-solver", "admm", "-inner", "rbcd"}, "smooth loss"},
		{[]string{"-problem", hinge, "-solver", "ipm", "-inner", "split"}, "-inner and -relax are ADMM options"},
		{[]string{"-problem", hinge, "-solver", "ipm", "-relax", "1.5"}, "-inner and -relax are ADMM options"},
		{[]string{"-problem", hinge, "-solver", "admm", "-relax", "1.5"}, "-relax is for -inner closed-form"},
		{[]string{"-problem", hinge, "-solver", "admm", "-relax", "2"}, "must be in (0, 2)"},
		{[]string{"-problem", hinge, "-solver", "scp", "-neurons", "10"}, `"D" and "P"`},
		{[]string{"-problem", writeProblem(t, scpProb), "-solver", "scp"}, "-neurons N"},
		{[]string{"-problem", writeProblem(t, scpProb), "-solver", "ipm", "-neurons", "5"}, "for -solver scp"},
		{[]string{"-problem", writeProblem(t, scpProb), "-solver", "magic"}, `-solver "magic"`},
		{[]string{"-problem", writeProblem(t, `{"X": [[1,2],[3,4]], "y": [1,-1], "loss": "bce", "beta": 1}`), "-solver", "scp", "-neurons", "5"}, `"y"[1] = -1: the bce loss needs labels 0 or 1`},
		{[]string{"-problem", writeProblem(t, `{"X": [[1,2],[3,4]], "y": [1,-1], "loss": "hinge", "beta": 1}`), "-solver", "scp", "-neurons", "5"}, "squared and bce"},
	} {
		var out bytes.Buffer
		err := solveCommand(context.Background(), c.args, &out)
		if !errors.As(err, new(usageError)) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: want a usage error with %q, got %v", c.args, c.want, err)
		}
	}
}

// bceProblem is randomProblem with labels 0/1 and the given loss.
func bceProblem(n, d int, loss string, seed uint64) string {
	var m map[string]any
	if err := json.Unmarshal([]byte(randomProblem(n, d, loss, seed)), &m); err != nil {
		panic(err)
	}
	if loss == "bce" {
		y := m["y"].([]any)
		for k, v := range y {
			y[k] = (v.(float64) + 1) / 2
		}
	}
	b, _ := json.Marshal(m)
	return string(b)
}

// TestSolveADMMOtherLosses solves the hinge problem by the loss-split ADMM
// against the interior-point method, and the BCE and logistic problems by
// the loss-split ADMM and ADMM-RBCD, which must agree.
func TestSolveADMMOtherLosses(t *testing.T) {
	hinge := writeProblem(t, randomProblem(20, 2, "hinge", 2))
	ipm := solveJSON(t, "-problem", hinge, "-solver", "ipm")
	admm := solveJSON(t, "-problem", hinge, "-solver", "admm", "-max-iter", "100000", "-tol", "1e-9")
	if admm.Inner != "split" || admm.Status != "optimal" {
		t.Fatalf("hinge ADMM: inner %q, status %q after %d iterations", admm.Inner, admm.Status, admm.Iterations)
	}
	if rel := math.Abs(admm.Objective-ipm.Objective) / ipm.Objective; rel > 1e-5 {
		t.Fatalf("hinge: ADMM %.10g, interior point %.10g (relative %.2e)", admm.Objective, ipm.Objective, rel)
	}
	losses := []string{"bce", "logistic"}
	if testenv.Race { // both run in make test's pass without -race
		losses = losses[:1]
	}
	for _, loss := range losses {
		prob := writeProblem(t, bceProblem(30, 3, loss, 4))
		split := solveJSON(t, "-problem", prob, "-solver", "admm", "-inner", "split", "-max-iter", "50000", "-tol", "1e-9")
		rbcd := solveJSON(t, "-problem", prob, "-solver", "admm", "-max-iter", "50000", "-tol", "1e-9")
		for _, r := range []resultJSON{split, rbcd} {
			if r.Status != "optimal" || r.MaxViolation > 1e-6 {
				t.Fatalf("%s, %s: status %q after %d iterations, violation %v", loss, r.Inner, r.Status, r.Iterations, r.MaxViolation)
			}
			if math.Abs(r.NonconvexObjective-r.Objective) > 1e-6*r.Objective {
				t.Fatalf("%s, %s: l^{u,α} %v vs l^{v,w} %v", loss, r.Inner, r.NonconvexObjective, r.Objective)
			}
		}
		if split.Inner != "split" || rbcd.Inner != "rbcd" {
			t.Fatalf("%s: inner %q and %q", loss, split.Inner, rbcd.Inner)
		}
		// Two different algorithms reach the same optimum.
		if rel := math.Abs(split.Objective-rbcd.Objective) / rbcd.Objective; rel > 1e-5 {
			t.Fatalf("%s: loss split %.10g, RBCD %.10g (relative %.2e)", loss, split.Objective, rbcd.Objective, rel)
		}
		t.Logf("%s: split %d iterations, RBCD %d iterations, objectives %.10g / %.10g", loss, split.Iterations, rbcd.Iterations, split.Objective, rbcd.Objective)
	}
}

// TestSolveSCP checks the SCP result: the network holds the sampled neurons
// with non-zero weights, the objective is reached to the tolerance, and the
// same seed gives the same network.
func TestSolveSCP(t *testing.T) {
	for _, loss := range []string{"squared", "bce"} {
		var m map[string]any
		json.Unmarshal([]byte(bceProblem(40, 3, loss, 5)), &m)
		delete(m, "P")
		delete(m, "seed")
		b, _ := json.Marshal(m)
		prob := writeProblem(t, string(b))
		r := solveJSON(t, "-problem", prob, "-solver", "scp", "-neurons", "50", "-seed", "7", "-tol", "1e-7")
		if r.Status != "optimal" || r.Neurons != 50 || r.Seed == nil || *r.Seed != 7 || r.Gap > 1e-7*math.Max(1, r.Objective) {
			t.Fatalf("%s: status %q neurons %d gap %v", loss, r.Status, r.Neurons, r.Gap)
		}
		if k := len(r.Network.Alpha); k == 0 || k > 50 || len(r.Network.U) != k || len(r.Network.U[0]) != 4 {
			t.Fatalf("%s: network with %d output weights, u %d rows", loss, k, len(r.Network.U))
		}
		for j, u := range r.Network.U {
			var s float64
			for _, v := range u {
				s += v * v
			}
			if math.Abs(s-1) > 1e-12 {
				t.Fatalf("%s: neuron %d has norm² %v, want 1 (uniform on the sphere)", loss, j, s)
			}
		}
		again := solveJSON(t, "-problem", prob, "-solver", "scp", "-neurons", "50", "-seed", "7", "-tol", "1e-7")
		if again.Objective != r.Objective {
			t.Fatalf("%s: same seed, objectives %v and %v", loss, r.Objective, again.Objective)
		}
		other := solveJSON(t, "-problem", prob, "-solver", "scp", "-neurons", "50", "-seed", "8", "-tol", "1e-7")
		if other.Objective == r.Objective {
			t.Fatalf("%s: seeds 7 and 8 give the same objective", loss)
		}
		// The interior-point method on the same program: certified to
		// -gap, at FISTA's objective or below.
		ip := solveJSON(t, "-problem", prob, "-solver", "scp", "-neurons", "50", "-seed", "7", "-method", "ipm", "-gap", "1e-9")
		if ip.Status != "gap reached" || *ip.CertifiedGap > 1e-9 || ip.Objective > r.Objective+1e-7*math.Max(1, r.Objective) {
			t.Fatalf("%s, -method ipm: status %q, certified gap %v, objective %.10g (FISTA %.10g)", loss, ip.Status, *ip.CertifiedGap, ip.Objective, r.Objective)
		}
	}
	var out bytes.Buffer
	if err := solveCommand(context.Background(), []string{"-problem", "x.json", "-solver", "scp", "-neurons", "5", "-method", "newton"}, &out); !errors.As(err, new(usageError)) || !strings.Contains(err.Error(), "fista and ipm") {
		t.Fatalf("-method newton: %v", err)
	}
	if err := solveCommand(context.Background(), []string{"-problem", "x.json", "-solver", "admm", "-method", "ipm"}, &out); !errors.As(err, new(usageError)) || !strings.Contains(err.Error(), "-method are for -solver scp") {
		t.Fatalf("-method with admm: %v", err)
	}
}

// withFields is the problem JSON body with fields set (nil deletes).
func withFields(t *testing.T, body string, fields map[string]any) string {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(body), &m); err != nil {
		t.Fatal(err)
	}
	for k, v := range fields {
		if v == nil {
			delete(m, k)
		} else {
			m[k] = v
		}
	}
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestSolveRobust solves robust hinge (eq. hinge_adv_D) and squared
// (eq. SOCP3) problems with -solver ipm: the result's objective is the
// robust one, at least the standard optimum on the same patterns, its
// clean objective is at least the standard optimum too, and the robust
// constraints eq. (robust_constraint) hold.
func TestSolveRobust(t *testing.T) {
	type robustCase struct {
		loss, norm string
		eps        float64
		sampling   map[string]any
	}
	cases := []*robustCase{
		{"hinge", "", 0.1, nil},
		{"squared", "", 0.1, nil},
		{"hinge", "2", 0.1, nil},
		{"squared", "1", 0.1, nil},
		{"hinge", "inf", 0.1, map[string]any{"P": 4, "S": 3, "seed": 7}},
	}
	for _, c := range cases {
		body := randomProblem(20, 2, c.loss, 11)
		std := solveJSON(t, "-problem", writeProblem(t, body), "-solver", "ipm")
		fields := map[string]any{"eps": c.eps}
		if c.norm != "" {
			fields["norm"] = c.norm
		}
		if c.sampling != nil {
			fields["robust_sampling"], fields["seed"] = c.sampling, nil
		}
		rob := solveJSON(t, "-problem", writeProblem(t, withFields(t, body, fields)), "-solver", "ipm")
		if c.sampling != nil {
			// Algorithm adv_train's patterns: the standard program on them.
			std = solveJSON(t, "-problem", writeProblem(t, withFields(t, body, map[string]any{"D": rob.D, "P": nil, "seed": nil})), "-solver", "ipm")
		}
		wantNorm := c.norm
		if wantNorm == "" {
			wantNorm = "inf"
		}
		t.Logf("%s ℓ_%s ε=%g (sampling %v): robust %.8g (clean %.8g, violation %.2e, %d iterations), standard %.8g; %d patterns",
			c.loss, wantNorm, c.eps, c.sampling != nil, rob.Objective, *rob.CleanObjective, rob.MaxViolation, rob.Iterations, std.Objective, len(rob.D))
		if rob.Status != "optimal" || rob.Eps != c.eps || rob.Norm != wantNorm || rob.CleanObjective == nil {
			t.Fatalf("%s: status %q eps %v norm %q clean %v", c.loss, rob.Status, rob.Eps, rob.Norm, rob.CleanObjective)
		}
		if std.Eps != 0 || std.Norm != "" || std.CleanObjective != nil {
			t.Fatalf("standard result reports eps %v norm %q", std.Eps, std.Norm)
		}
		if rob.Objective < std.Objective-1e-7 || *rob.CleanObjective < std.Objective-1e-7 || *rob.CleanObjective > rob.Objective+1e-9 {
			t.Fatalf("%s: robust %v, clean %v, standard optimum %v", c.loss, rob.Objective, *rob.CleanObjective, std.Objective)
		}
		if rob.Objective < std.Objective*(1+1e-3) {
			t.Fatalf("%s: ε = %g did not raise the objective (%v vs %v)", c.loss, c.eps, rob.Objective, std.Objective)
		}
		if rob.MaxViolation > 1e-7 {
			t.Fatalf("%s: robust constraint violation %v", c.loss, rob.MaxViolation)
		}
		// The robust ADMM reaches the interior-point optimum (under -race on
		// the first case only; make test runs all without -race).
		if testenv.Race && c != cases[0] {
			continue
		}
		adm := solveJSON(t, "-problem", writeProblem(t, withFields(t, body, fields)), "-solver", "admm", "-tol", "1e-9", "-max-iter", "100000")
		rel := (adm.Objective - rob.Objective) / rob.Objective
		t.Logf("  -solver admm (inner %s): robust %.8g after %d iterations (%s), relative %.1e, violation %.1e", adm.Inner, adm.Objective, adm.Iterations, adm.Status, rel, adm.MaxViolation)
		if adm.Inner != "robust" || math.Abs(rel) > 1e-4 || adm.MaxViolation > 1e-4 || *adm.CleanObjective > adm.Objective+1e-9 {
			t.Fatalf("%s: -solver admm robust objective %v (inner %q, violation %v), ipm %v", c.loss, adm.Objective, adm.Inner, adm.MaxViolation, rob.Objective)
		}
	}
}

// TestSolveRobustUsage checks the usage errors of robust problems.
func TestSolveRobustUsage(t *testing.T) {
	body := randomProblem(10, 2, "squared", 3)
	rob := writeProblem(t, withFields(t, body, map[string]any{"eps": 0.1}))
	scpRob := writeProblem(t, withFields(t, body, map[string]any{"eps": 0.1, "P": nil, "seed": nil}))
	sampling := func(f map[string]any) string { return writeProblem(t, withFields(t, body, f)) }
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"-problem", rob, "-solver", "admm", "-inner", "split"}, "solved by the robust ADMM"},
		{[]string{"-problem", rob, "-solver", "admm", "-relax", "1.5"}, "robust ADMM over-relaxes with its own fixed α = 1.6"},
		{[]string{"-problem", scpRob, "-solver", "scp", "-neurons", "5"}, "use -solver ipm or -solver admm"},
		{[]string{"-problem", rob, "-solver", "newton"}, "-solver newton solves standard programs"},
		{[]string{"-problem", writeProblem(t, withFields(t, body, map[string]any{"eps": 0.1, "norm": "max"}))}, `field "norm" = "max"`},
		{[]string{"-problem", sampling(map[string]any{"robust_sampling": map[string]any{"P": 2, "S": 2, "seed": 1}})}, `give the seed as "robust_sampling"."seed"`},
		{[]string{"-problem", sampling(map[string]any{"seed": nil, "robust_sampling": map[string]any{"P": 2, "S": 2}})}, `needs "seed"`},
		{[]string{"-problem", sampling(map[string]any{"seed": nil, "robust_sampling": map[string]any{"P": 2, "S": 0, "seed": 1}})}, `"S" = 0`},
		{[]string{"-problem", sampling(map[string]any{"seed": nil, "robust_sampling": map[string]any{"P": 2, "S": 2, "seed": 1}})}, `P_a·S = 2·2 = 4 draws cannot give P_s = 6`},
		{[]string{"-problem", sampling(map[string]any{"seed": nil, "P": nil, "robust_sampling": map[string]any{"P": 2, "S": 2, "seed": 1}})}, `needs field "P"`},
		{[]string{"-problem", sampling(map[string]any{"seed": nil, "robust_sampling": map[string]any{"P": 2, "S": 3, "seed": 1, "Q": 1}})}, `unknown field "Q"`},
	} {
		var out bytes.Buffer
		err := solveCommand(context.Background(), c.args, &out)
		if !errors.As(err, new(usageError)) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: want a usage error with %q, got %v", c.args, c.want, err)
		}
	}
	// readProblem (the other commands) refuses robust problems.
	if _, err := readProblem(strings.NewReader(withFields(t, body, map[string]any{"eps": 0.1})), true); !errors.As(err, new(usageError)) || !strings.Contains(err.Error(), `"eps"`) {
		t.Fatalf("readProblem with eps > 0: %v", err)
	}
	// "norm" with eps 0 is accepted (standard training).
	solveJSON(t, "-problem", writeProblem(t, withFields(t, body, map[string]any{"norm": "2"})), "-solver", "ipm")
}

// TestSolveCertifiesTheOptimum checks the certificate in the result file:
// lower ≤ the interior-point optimum ≤ upper for both solvers, a small
// certified gap at the interior-point solution, and -gap stopping ADMM once
// its certified gap is below the target.
func TestSolveCertifiesTheOptimum(t *testing.T) {
	prob := writeProblem(t, randomProblem(30, 3, "squared", 1))
	ipm := solveJSON(t, "-problem", prob, "-solver", "ipm")
	if ipm.LowerBound == nil || ipm.CertifiedGap == nil || ipm.UpperBound == nil {
		t.Fatal("ipm result has no certificate")
	}
	if *ipm.LowerBound > ipm.Objective || *ipm.CertifiedGap > 1e-6 {
		t.Fatalf("ipm: lower bound %.12g, objective %.12g, certified gap %.3g", *ipm.LowerBound, ipm.Objective, *ipm.CertifiedGap)
	}
	admm := solveJSON(t, "-problem", prob, "-solver", "admm", "-max-iter", "20000", "-tol", "1e-12", "-gap", "1e-3")
	if admm.CertifiedGap == nil || *admm.CertifiedGap > 1e-3 || admm.Status != "gap reached" {
		t.Fatalf("admm -gap 1e-3: status %s, certified gap %v", admm.Status, admm.CertifiedGap)
	}
	if admm.Iterations >= 20000 || *admm.LowerBound > ipm.Objective*(1+1e-9) || *admm.UpperBound < ipm.Objective*(1-1e-9) {
		t.Fatalf("admm -gap 1e-3: %d iterations, bounds [%.12g, %.12g], optimum %.12g", admm.Iterations, *admm.LowerBound, *admm.UpperBound, ipm.Objective)
	}
}

// TestSolveCertifiesTheHingeOptimum checks that the interior-point
// method's duals certify its hinge-loss solution (the loss's subgradient
// alone does not, at the points on the margin).
func TestSolveCertifiesTheHingeOptimum(t *testing.T) {
	prob := writeProblem(t, randomProblem(40, 3, "hinge", 4))
	r := solveJSON(t, "-problem", prob, "-solver", "ipm")
	if r.Status != "optimal" || r.CertifiedGap == nil || *r.CertifiedGap > 1e-6 || *r.LowerBound > r.Objective {
		t.Fatalf("ipm hinge: status %s, objective %.12g, lower %v, certified gap %v", r.Status, r.Objective, r.LowerBound, r.CertifiedGap)
	}
}

// TestSolveAuto checks -solver auto: the interior-point method for a small
// squared-loss program, the proximal Newton method for BCE, each to its
// certified gap (1e-6 by default), and -solver newton with -gap.
func TestSolveAuto(t *testing.T) {
	sq := solveJSON(t, "-problem", writeProblem(t, randomProblem(30, 3, "squared", 1)), "-solver", "auto")
	if sq.Solver != "ipm" || !sq.Auto || sq.Status != "gap reached" || *sq.CertifiedGap > 1e-6 {
		t.Fatalf("auto on a small squared-loss program: solver %s (auto %v), status %s, certified gap %v", sq.Solver, sq.Auto, sq.Status, *sq.CertifiedGap)
	}
	body := strings.Replace(randomProblem(30, 3, "squared", 5), `"loss":"squared"`, `"loss":"bce"`, 1)
	var m map[string]any
	if err := json.Unmarshal([]byte(body), &m); err != nil {
		t.Fatal(err)
	}
	ys := m["y"].([]any)
	for k, y := range ys {
		ys[k] = (y.(float64) + 1) / 2
	}
	b, _ := json.Marshal(m)
	bceProb := writeProblem(t, string(b))
	bce := solveJSON(t, "-problem", bceProb, "-solver", "auto")
	if bce.Solver != "newton" || !bce.Auto || bce.Status != "gap reached" || bce.CertifiedGap == nil || *bce.CertifiedGap > 1e-6 || *bce.LowerBound > bce.Objective {
		t.Fatalf("auto on BCE: solver %s, status %s, bounds %v %v", bce.Solver, bce.Status, bce.LowerBound, bce.CertifiedGap)
	}
	t.Logf("auto on BCE: %s after %d Newton steps, certified gap %.3g", bce.Status, bce.Iterations, *bce.CertifiedGap)
	nt := solveJSON(t, "-problem", bceProb, "-solver", "newton", "-gap", "1e-9")
	if nt.Status != "gap reached" || *nt.CertifiedGap > 1e-9 || math.Abs(nt.Objective-bce.Objective) > 1e-6*bce.Objective {
		t.Fatalf("newton to 1e-9: status %s, gap %v, objective %.10g (auto: %.10g)", nt.Status, *nt.CertifiedGap, nt.Objective, bce.Objective)
	}
}

// TestSolveWorkingSet checks -solver working-set on a robust hinge program
// and a standard squared one: the certified gap reached, and the optimum of
// -solver ipm (to 1e-6 relative), within its bounds (its refusal of the
// smooth losses is in TestSolveBadInputNamesTheField's table).
func TestSolveWorkingSet(t *testing.T) {
	for _, c := range []struct {
		loss string
		eps  float64
	}{{"hinge", 0.05}, {"squared", 0}} {
		prob := writeProblem(t, withFields(t, randomProblem(40, 3, c.loss, 7), map[string]any{"eps": c.eps, "P": 12}))
		ws := solveJSON(t, "-problem", prob, "-solver", "working-set")
		ref := solveJSON(t, "-problem", prob, "-solver", "ipm", "-gap", "1e-9")
		if ws.Solver != "working-set" || ws.Status != "gap reached" || *ws.CertifiedGap > 1e-6 ||
			math.Abs(ws.Objective-ref.Objective) > 1e-6*math.Abs(ref.Objective) ||
			*ws.LowerBound > ref.Objective*(1+1e-9) || *ws.UpperBound < ref.Objective*(1-1e-9) {
			t.Fatalf("%s ε = %g: working set %s after %d rounds, objective %.12g in [%.12g, %.12g] (gap %.3g); ipm %.12g",
				c.loss, c.eps, ws.Status, ws.Iterations, ws.Objective, *ws.LowerBound, *ws.UpperBound, *ws.CertifiedGap, ref.Objective)
		}
		t.Logf("%s ε = %g: %d rounds, certified gap %.2g", c.loss, c.eps, ws.Iterations, *ws.CertifiedGap)
	}
}

// An interrupted solve (its context cancelled before it starts) writes the
// run's point so far with the status "interrupted" and its certificate,
// instead of losing it (the proximal Newton method and the working set,
// with no step finished, have no point yet and return the error).
func TestSolveInterruptedWritesItsPoint(t *testing.T) {
	two := writeProblem(t, randomProblem(30, 3, "squared", 4))
	var fields map[string]any
	if err := json.Unmarshal([]byte(randomProblem(30, 3, "squared", 4)), &fields); err != nil {
		t.Fatal(err)
	}
	delete(fields, "P")
	delete(fields, "seed")
	raw, err := json.Marshal(fields)
	if err != nil {
		t.Fatal(err)
	}
	sampled := writeProblem(t, string(raw))
	cnnBody := writeProblem(t, cnnProblem(10, []int{1, 4, 4}, "hinge", "cnn-avg", 4))
	maxBody := writeProblem(t, cnnProblem(10, []int{1, 4, 4}, "hinge", "cnn-max", 4))
	robust := writeProblem(t, withFields(t, cnnProblem(10, []int{1, 4, 4}, "hinge", "cnn-avg", 4), map[string]any{"eps": 0.03, "P": 3}))
	robustBCE := writeProblem(t, withFields(t, cnnProblem(10, []int{1, 4, 4}, "bce", "cnn-max", 4), map[string]any{"eps": 0.03, "P": 3}))
	twoHidden := writeProblem(t, withFields(t, randomProblem(16, 2, "squared", 3), map[string]any{"model": "two-hidden", "m1": 2, "P": 5}))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for _, args := range [][]string{
		{"-problem", two, "-solver", "admm"},
		{"-problem", two, "-solver", "admm", "-gap", "1e-6"},
		{"-problem", two, "-solver", "ipm"},
		{"-problem", two, "-solver", "ipm", "-gap", "1e-6"},
		{"-problem", sampled, "-solver", "scp", "-neurons", "20"},
		{"-problem", sampled, "-solver", "scp", "-neurons", "20", "-method", "ipm"},
		{"-problem", cnnBody, "-solver", "admm"},
		{"-problem", cnnBody, "-solver", "ipm"},
		{"-problem", maxBody, "-solver", "ipm"},
		{"-problem", twoHidden, "-solver", "ipm"},
		{"-problem", robust, "-solver", "ipm"},
		{"-problem", robustBCE, "-solver", "ipm"},
	} {
		var out bytes.Buffer
		if err := solveCommand(ctx, args, &out); err != nil {
			t.Errorf("%v: %v", args, err)
			continue
		}
		var r resultJSON
		if err := json.Unmarshal(out.Bytes(), &r); err != nil {
			t.Fatal(err)
		}
		if r.Status != "interrupted" || r.LowerBound == nil || r.UpperBound == nil || *r.LowerBound > *r.UpperBound {
			t.Errorf("%v: status %q, certificate %v, %v", args, r.Status, r.LowerBound, r.UpperBound)
		}
	}
}
