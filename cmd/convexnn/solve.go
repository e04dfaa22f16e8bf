package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"time"

	"github.com/convexnn/convexnn/solvers"
	"gonum.org/v1/gonum/mat"
)

// usageError is a bad command line or input file: exit code 2.
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

func badInput(format string, a ...any) error { return usageError{fmt.Sprintf(format, a...)} }

// problemJSON is the input of `convexnn solve`.
type problemJSON struct {
	X    [][]float64 `json:"X"`
	Y    []float64   `json:"y"`
	Bias bool        `json:"bias"`
	Loss string      `json:"loss"`
	Beta *float64    `json:"beta"`
	Eps  float64     `json:"eps"`
	D    [][]float64 `json:"D"`
	P    int         `json:"P"`
	Seed *uint64     `json:"seed"`
}

type networkJSON struct {
	U     [][]float64 `json:"u"`
	Alpha []float64   `json:"alpha"`
	Bias  bool        `json:"bias"`
}

type resultJSON struct {
	Status             string      `json:"status"`
	Solver             string      `json:"solver"`
	Objective          float64     `json:"objective"`
	NonconvexObjective float64     `json:"nonconvex_objective"`
	MaxViolation       float64     `json:"max_constraint_violation"`
	V                  [][]float64 `json:"v"`
	W                  [][]float64 `json:"w"`
	D                  [][]int     `json:"D"`
	Network            networkJSON `json:"network"`
	Iterations         int         `json:"iterations"`
	Seconds            float64     `json:"seconds"`
	BLAS               string      `json:"blas"`
}

// readProblem parses and checks problem JSON, naming the offending field.
func readProblem(r io.Reader) (*solvers.Program, error) {
	raw, err := io.ReadAll(r)
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	var pj problemJSON
	if err := dec.Decode(&pj); err != nil {
		var se *json.SyntaxError
		var te *json.UnmarshalTypeError
		switch {
		case errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF):
			return nil, badInput("problem: malformed JSON: the input ends before the object is complete")
		case errors.As(err, &se):
			return nil, badInput("problem: malformed JSON at byte %d: %v", se.Offset, err)
		case errors.As(err, &te):
			return nil, badInput("problem: field %q: %v is not a valid %v", te.Field, te.Value, te.Type)
		}
		return nil, badInput("problem: %v", err)
	}
	if dec.More() {
		return nil, badInput("problem: extra data after the JSON object")
	}
	n := len(pj.X)
	if n == 0 {
		return nil, badInput("problem: field \"X\" is missing or empty")
	}
	d := len(pj.X[0])
	if d == 0 {
		return nil, badInput("problem: field \"X\": rows are empty")
	}
	cols := d
	if pj.Bias {
		cols++
	}
	x := mat.NewDense(n, cols, nil)
	for k, row := range pj.X {
		if len(row) != d {
			return nil, badInput("problem: field \"X\": row %d has %d entries, row 0 has %d", k, len(row), d)
		}
		for j, v := range row {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return nil, badInput("problem: field \"X\"[%d][%d] is %v", k, j, v)
			}
			x.Set(k, j, v)
		}
		if pj.Bias {
			x.Set(k, d, 1)
		}
	}
	if len(pj.Y) != n {
		return nil, badInput("problem: field \"y\" has %d entries, X has %d rows", len(pj.Y), n)
	}
	if pj.Loss == "" {
		return nil, badInput("problem: field \"loss\" is missing (squared or hinge)")
	}
	loss, err := solvers.ParseLoss(pj.Loss)
	if err != nil {
		return nil, badInput("problem: field \"loss\": %q, want \"squared\" or \"hinge\"", pj.Loss)
	}
	if pj.Beta == nil {
		return nil, badInput("problem: field \"beta\" is missing")
	}
	if pj.Eps != 0 {
		return nil, badInput("problem: field \"eps\" = %v: robust (adversarial) training is not available yet; use eps 0", pj.Eps)
	}
	p := &solvers.Program{X: x, Y: pj.Y, Loss: loss, Beta: *pj.Beta, Bias: pj.Bias}
	switch {
	case pj.D != nil && pj.P != 0:
		return nil, badInput("problem: give either field \"D\" or field \"P\" (with \"seed\"), not both")
	case pj.D != nil:
		for i, row := range pj.D {
			if len(row) != n {
				return nil, badInput("problem: field \"D\": row %d has %d entries, want one per data point (%d)", i, len(row), n)
			}
			pat := make(solvers.Pattern, n)
			for k, v := range row {
				switch v {
				case 0:
				case 1:
					pat[k] = true
				default:
					return nil, badInput("problem: field \"D\"[%d][%d] = %v, want 0 or 1", i, k, v)
				}
			}
			p.D = append(p.D, pat)
		}
		if len(p.D) == 0 {
			return nil, badInput("problem: field \"D\" is empty")
		}
	case pj.P > 0:
		if pj.Seed == nil {
			return nil, badInput("problem: field \"P\" needs field \"seed\"")
		}
		pats, err := solvers.SamplePatterns(x, pj.P, *pj.Seed, 0)
		var few *solvers.FewPatternsError
		if errors.As(err, &few) {
			fmt.Fprintf(os.Stderr, "convexnn: warning: %v; solving with %d patterns\n", err, len(pats))
		} else if err != nil {
			return nil, badInput("problem: %v", err)
		}
		p.D = pats
	default:
		return nil, badInput("problem: give field \"D\" (P rows of n 0/1 entries) or field \"P\" > 0 with \"seed\"")
	}
	if err := p.Validate(); err != nil {
		return nil, badInput("problem: %v", err)
	}
	return p, nil
}

func rows(m *mat.Dense) [][]float64 {
	r, _ := m.Dims()
	out := make([][]float64, r)
	for i := range out {
		out[i] = append([]float64(nil), m.RawRowView(i)...)
	}
	return out
}

func solveCommand(ctx context.Context, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("solve", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	problem := fs.String("problem", "", "problem JSON file (- for stdin)")
	solver := fs.String("solver", "ipm", "ipm or admm")
	maxIter := fs.Int("max-iter", 0, "iteration limit (0: the solver's default)")
	tol := fs.Float64("tol", 0, "tolerance (0: the solver's default)")
	out := fs.String("out", "", "result JSON file (default stdout)")
	rho := fs.Float64("rho", 0, "ADMM penalty ρ (0: default)")
	if err := fs.Parse(args); err != nil {
		return badInput("solve: %v\nusage: convexnn solve -problem problem.json -solver ipm|admm [-max-iter N] [-tol T] [-out result.json]", err)
	}
	if *problem == "" {
		return badInput("solve: -problem is required")
	}
	if *maxIter < 0 || *tol < 0 || *rho < 0 {
		return badInput("solve: -max-iter, -tol and -rho must be ≥ 0")
	}
	var in io.Reader = os.Stdin
	if *problem != "-" {
		f, err := os.Open(*problem)
		if err != nil {
			return badInput("solve: %v", err)
		}
		defer f.Close()
		in = f
	}
	p, err := readProblem(in)
	if err != nil {
		return err
	}
	start := time.Now()
	var wt solvers.Weights
	res := resultJSON{Solver: *solver, BLAS: solvers.BLASImplementation}
	switch *solver {
	case "ipm":
		r, err := solvers.SolveIPM(ctx, p, solvers.IPMOptions{MaxIter: *maxIter, Tol: *tol})
		if err != nil {
			return err
		}
		wt, res.Status, res.Iterations = r.Weights, r.Status.String(), r.Iterations
	case "admm":
		if p.Loss != solvers.SquaredLoss {
			return badInput("solve: -solver admm supports the squared loss; use -solver ipm for %s", p.Loss)
		}
		o := solvers.ADMMOptions{MaxIter: *maxIter, Rho: *rho}
		if *tol > 0 {
			o.AbsTol, o.RelTol = *tol, *tol
		}
		a, hist, err := solvers.SolveADMM(ctx, p, o, nil, nil)
		if err != nil {
			return err
		}
		wt, res.Iterations = a.Weights(), len(hist)
		res.Status = "iteration limit"
		if len(hist) > 0 && a.Converged(hist[len(hist)-1]) {
			res.Status = "optimal"
		}
	default:
		return badInput("solve: -solver %q: use ipm or admm", *solver)
	}
	res.Seconds = time.Since(start).Seconds()
	if res.Objective, err = p.Objective(wt); err != nil {
		return err
	}
	if res.MaxViolation, err = p.Violation(wt); err != nil {
		return err
	}
	net, err := p.Recover(wt, 1e-9*math.Max(1, maxNorm(wt)))
	if err != nil {
		return err
	}
	if res.NonconvexObjective, err = p.NonconvexObjective(net); err != nil {
		return err
	}
	res.V, res.W = rows(wt.V), rows(wt.W)
	for _, pat := range p.D {
		row := make([]int, len(pat))
		for k, on := range pat {
			if on {
				row[k] = 1
			}
		}
		res.D = append(res.D, row)
	}
	var ut mat.Dense
	ut.CloneFrom(net.U.T())
	res.Network = networkJSON{U: rows(&ut), Alpha: net.Alpha, Bias: net.Bias}
	w := stdout
	if *out != "" {
		f, err := os.Create(*out)
		if err != nil {
			return err
		}
		defer f.Close()
		w = f
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", " ")
	return enc.Encode(res)
}

func maxNorm(wt solvers.Weights) float64 {
	var m float64
	r, _ := wt.V.Dims()
	for i := 0; i < r; i++ {
		m = math.Max(m, math.Max(mat.Norm(wt.V.RowView(i), 2), mat.Norm(wt.W.RowView(i), 2)))
	}
	return m
}
