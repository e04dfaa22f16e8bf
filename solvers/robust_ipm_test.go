package solvers

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// robustIPMInstances are small random programs; d counts the bias column.
var robustIPMInstances = []ipmInstance{
	{n: 24, d: 3, np: 5, loss: HingeLoss, bias: true, beta: 0.01, seed: 21},
	{n: 20, d: 2, np: 4, loss: HingeLoss, beta: 0.05, seed: 22},
	{n: 30, d: 3, np: 6, loss: SquaredLoss, bias: true, beta: 0.1, seed: 23},
	{n: 22, d: 3, np: 4, loss: SquaredLoss, beta: 0.05, seed: 24},
}

// robustIPMProgram is ipmRandomProgram's data with the patterns replaced by
// SamplePatterns' draws.
func robustIPMProgram(t *testing.T, c ipmInstance) *Program {
	t.Helper()
	p := ipmRandomProgram(t, c)
	pats, err := SamplePatterns(p.X, c.np, c.seed, 0)
	if err != nil {
		t.Fatalf("SamplePatterns: %v", err)
	}
	p.D = pats
	if err := p.Validate(); err != nil {
		t.Fatal(err)
	}
	return p
}

func solveRobustIPMOK(t *testing.T, p *Program, pert Perturbation) *IPMResult {
	t.Helper()
	var log strings.Builder
	res, err := SolveRobustIPM(context.Background(), p, pert, IPMOptions{Verbose: &log})
	if err != nil {
		t.Fatalf("SolveRobustIPM (%v): %v\n%s", pert, err, log.String())
	}
	if res.Status != IPMOptimal {
		t.Fatalf("SolveRobustIPM (%v): status %v after %d iterations\n%s", pert, res.Status, res.Iterations, log.String())
	}
	return res
}

type cvxoptRobustResult struct {
	cvxoptResult
	Violation float64 `json:"violation"`
}

// cvxoptRobustSolve solves the robust program with
// testdata/cvxopt_robust_oracle.py.
func cvxoptRobustSolve(t *testing.T, p *Program, pert Perturbation) cvxoptRobustResult {
	t.Helper()
	n, d, _ := p.Dims()
	in := struct {
		X    [][]float64 `json:"X"`
		Y    []float64   `json:"y"`
		D    [][]int     `json:"D"`
		Loss string      `json:"loss"`
		Beta float64     `json:"beta"`
		Eps  float64     `json:"eps"`
		Norm string      `json:"norm"`
		Bias bool        `json:"bias"`
	}{Y: p.Y, Loss: p.Loss.String(), Beta: p.Beta, Eps: pert.Eps, Norm: pert.Norm, Bias: p.Bias}
	for k := 0; k < n; k++ {
		in.X = append(in.X, append([]float64(nil), p.X.RawRowView(k)[:d]...))
	}
	for _, pat := range p.D {
		row := make([]int, n)
		for k, on := range pat {
			if on {
				row[k] = 1
			}
		}
		in.D = append(in.D, row)
	}
	js, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(cvxoptPython, "testdata/cvxopt_robust_oracle.py")
	cmd.Stdin = bytes.NewReader(js)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("cvxopt robust oracle: %v: %s", err, stderr.String())
	}
	var res cvxoptRobustResult
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatalf("cvxopt robust oracle output %q: %v", out, err)
	}
	return res
}

// TestRobustIPMAgainstCVXOPT checks SolveRobustIPM against CVXOPT on an
// independent formulation (vertex enumeration for the ℓ_∞ and ℓ₁ balls,
// one second-order cone per robust row for ℓ₂), and that the robust optimum
// is SolveIPM's at ε = 0 and nondecreasing in ε.
func TestRobustIPMAgainstCVXOPT(t *testing.T) {
	requireCVXOPT(t)
	for _, c := range robustIPMInstances {
		t.Run(c.String(), func(t *testing.T) {
			t.Parallel()
			p := robustIPMProgram(t, c)
			std := solveIPMOK(t, p)
			for _, norm := range []string{"inf", "2", "1"} {
				zero := solveRobustIPMOK(t, p, Perturbation{Eps: 0, Norm: norm})
				if diff := math.Abs(zero.Objective - std.Objective); diff > 1e-7*math.Max(1, std.Objective) {
					t.Errorf("norm %s, ε = 0: robust optimum %.12g, SolveIPM %.12g (|Δ| = %.1e)", norm, zero.Objective, std.Objective, diff)
				}
				prev := zero.Objective
				epss := []float64{0.01, 0.05}
				if norm == "1" {
					epss = epss[1:] // ℓ₁ ball: one radius, the oracle checks the scalar bound
				}
				for _, eps := range epss {
					pert := Perturbation{Eps: eps, Norm: norm}
					res := solveRobustIPMOK(t, p, pert)
					viol, err := RobustViolation(p, res.Weights, pert)
					if err != nil {
						t.Fatal(err)
					}
					if viol > 1e-7 {
						t.Errorf("%v: robust constraint violation %.2e", pert, viol)
					}
					start := time.Now()
					ref := cvxoptRobustSolve(t, p, pert)
					cvxTime := time.Since(start)
					if ref.Status != "optimal" {
						t.Logf("%v: cvxopt status %q at tolerance %g", pert, ref.Status, ref.Tolerance)
					}
					diff := math.Abs(res.Objective - ref.Objective)
					t.Logf("%v: objective %.12f (cvxopt %.12f, |Δ|/max(1,|obj|) = %.1e, cvxopt violation %.1e); violation %.1e, gap %.1e; %d iterations in %.3fs (cvxopt %d at tol %g, %.2fs with start-up)",
						pert, res.Objective, ref.Objective, diff/math.Max(1, math.Abs(ref.Objective)), ref.Violation, viol, res.Gap,
						res.Iterations, res.Seconds, ref.Iterations, ref.Tolerance, cvxTime.Seconds())
					if diff > 1e-6*math.Max(1, math.Abs(ref.Objective)) {
						t.Errorf("%v: objective %.12g, cvxopt %.12g", pert, res.Objective, ref.Objective)
					}
					if res.Objective < std.Objective-1e-8*math.Max(1, std.Objective) {
						t.Errorf("%v: robust optimum %.12g below the standard optimum %.12g", pert, res.Objective, std.Objective)
					}
					if res.Objective < prev-1e-8*math.Max(1, prev) {
						t.Errorf("%v: robust optimum %.12g below the optimum %.12g at the smaller radius", pert, res.Objective, prev)
					}
					prev = res.Objective
				}
			}
		})
	}
}

func TestRobustIPMRefuses(t *testing.T) {
	p := robustIPMProgram(t, ipmInstance{n: 10, d: 2, np: 2, loss: SquaredLoss, beta: 0.1, seed: 3})
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		p    *Program
		pert Perturbation
		want string
	}{
		{"nil", nil, Perturbation{}, "nil program"},
		{"radius", p, Perturbation{Eps: -1}, "radius"},
		{"norm", p, Perturbation{Eps: 0.1, Norm: "3"}, "unknown perturbation norm"},
		{"loss", &Program{X: p.X, Y: make([]float64, len(p.Y)), Loss: BCELoss, Beta: 0.1, D: p.D}, Perturbation{Eps: 0.1}, "not the"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := SolveRobustIPM(ctx, tc.p, tc.pert, IPMOptions{})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one mentioning %q", err, tc.want)
			}
		})
	}
}

// The radius where every hinge margin is saturated: a large ε forces the
// robust constraints to zero out most groups, and the solver must still
// agree with RobustObjective (no error from the built-in check).
func TestRobustIPMLargeRadius(t *testing.T) {
	for _, c := range robustIPMInstances[:3:3] {
		p := robustIPMProgram(t, c)
		for _, norm := range []string{"inf", "2", "1"} {
			pert := Perturbation{Eps: 0.5, Norm: norm}
			res := solveRobustIPMOK(t, p, pert)
			if viol, _ := RobustViolation(p, res.Weights, pert); viol > 1e-7 {
				t.Errorf("%v %v: violation %.2e", c, pert, viol)
			}
			t.Logf("%v %v: objective %.10f in %d iterations", c, pert, res.Objective, res.Iterations)
		}
	}
}
