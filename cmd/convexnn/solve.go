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
	"path/filepath"
	"strings"
	"time"

	"github.com/convexnn/convexnn/solvers"
	"github.com/convexnn/convexnn/solvers/admm"
	"github.com/convexnn/convexnn/solvers/batchnorm"
	"github.com/convexnn/convexnn/solvers/certify"
	"github.com/convexnn/convexnn/solvers/ipm"
	"github.com/convexnn/convexnn/solvers/scp"
	"gonum.org/v1/gonum/mat"
)

// usageError is a bad command line or input file: exit code 2.
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

func badInput(format string, a ...any) error { return usageError{fmt.Sprintf(format, a...)} }

// problemJSON is the input of `convexnn solve`. eps > 0 asks for robust
// (adversarial) training, section "Convex Adversarial Training": every data
// point may move by ‖δ_k‖ ≤ eps in the norm "norm" ("inf", the default, "2"
// or "1"). RobustSampling, with "P" the number of patterns P_s, samples the
// patterns by Algorithm adv_train instead of plain solvers.SamplePatterns.
type problemJSON struct {
	X              [][]float64         `json:"X"`
	Y              []float64           `json:"y"`
	Bias           bool                `json:"bias"`
	Loss           string              `json:"loss"`
	Beta           *float64            `json:"beta"`
	Eps            float64             `json:"eps"`
	Norm           string              `json:"norm"`
	D              [][]float64         `json:"D"`
	P              int                 `json:"P"`
	Seed           *uint64             `json:"seed"`
	RobustSampling *robustSamplingJSON `json:"robust_sampling"`
	// Model is the architecture (see modelInput): "relu" (the default, eq.
	// convex_general), "batchnorm", "cnn-avg", "cnn-max" or "two-hidden"
	// (with M1); the CNNs take
	// Shape (channels, height, width of the images in X's rows, CHW),
	// Filter, Stride (default 1) and Pad.
	Model  string `json:"model"`
	Shape  []int  `json:"shape"`
	Filter int    `json:"filter"`
	Stride int    `json:"stride"`
	Pad    int    `json:"pad"`
	// M1 is the first-layer width of each sub-network of "two-hidden".
	M1 int `json:"m1"`
	// Generate grows a CNN's patterns by the dual (cnn.Problem.
	// SolveGenerating; -solver ipm or auto).
	Generate *generateJSON `json:"generate"`
	// WinnerBound solves a robust "cnn-max" problem by the winner bound
	// (cnn.WinnerBound) instead of the appendix's program; BoundPatterns
	// (≥ 1) adds the patterns of that many filters trained on the bound
	// (backprop.BoundPatterns, best of 3 starts, seeded by "seed").
	WinnerBound   bool `json:"winner_bound"`
	BoundPatterns int  `json:"bound_patterns"`
	// BackpropPatterns (≥ 1) adds to a standard (not robust) CNN the
	// patterns of a CNN of that many filters trained by back-prop on the
	// same problem (backprop.CNNPatterns, seeded by "seed"): the optimum is
	// then at most that network's objective.
	BackpropPatterns int `json:"backprop_patterns"`
	// Gated asks for the gated ReLU program (no cone constraints; gates
	// drawn with "P" and "seed"); Classes c ≥ 2 for a multi-class problem
	// with labels 0…c−1 (gated, "loss" "softmax" or "squared"); Groups is
	// "joint" (default) or "per-class". See solveGatedCommand.
	Gated   bool   `json:"gated"`
	Classes int    `json:"classes"`
	Groups  string `json:"groups"`
}

// design returns field "X" as a matrix, with a column of ones appended
// for "bias", or the error naming the bad entry.
func (pj *problemJSON) design() (*mat.Dense, error) {
	n := len(pj.X)
	if n == 0 {
		return nil, badInput("problem: field \"X\" is missing or empty")
	}
	d := len(pj.X[0])
	if d == 0 {
		return nil, badInput("problem: field \"X\": rows are empty")
	}
	x := mat.NewDense(n, d, nil)
	for k, row := range pj.X {
		if len(row) != d {
			return nil, badInput("problem: field \"X\": row %d has %d entries, row 0 has %d", k, len(row), d)
		}
		for j, v := range row {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return nil, badInput("problem: field \"X\"[%d][%d] is %v", k, j, v)
			}
		}
		x.SetRow(k, row)
	}
	if pj.Bias {
		return solvers.WithOnes(x), nil
	}
	return x, nil
}

// robustSamplingJSON is step 1 of Algorithm "practical convex adversarial
// training" (alg. adv_train): P random directions a_h, S perturbed copies
// of the data per direction (the first one clean), until the problem's "P"
// distinct patterns are found, drawn with the seed.
type robustSamplingJSON struct {
	P    int     `json:"P"`
	S    int     `json:"S"`
	Seed *uint64 `json:"seed"`
}

type networkJSON struct {
	U     [][]float64 `json:"u"`
	Alpha []float64   `json:"alpha"`
	Bias  bool        `json:"bias"`
}

// resultJSON is the result file of convexnn solve.
type resultJSON struct {
	Status string `json:"status"`
	Solver string `json:"solver"`
	// Generated lists a CNN's rounds of pattern generation ("generate").
	Generated []generatedJSON `json:"generated,omitempty"`
	// Objective is the solver's convex objective at the solution (l^{v,w}
	// of eq. convex_general for ipm and admm, eq. SCP2 for scp),
	// NonconvexObjective l^{u,α} of Network on the clean data,
	// MaxViolation the largest violation of the cone constraints; robust
	// problems: see Eps.
	Objective          float64     `json:"objective"`
	NonconvexObjective float64     `json:"nonconvex_objective"`
	MaxViolation       float64     `json:"max_constraint_violation"`
	V                  [][]float64 `json:"v,omitempty"`
	W                  [][]float64 `json:"w,omitempty"`
	D                  [][]int     `json:"D,omitempty"`
	Network            networkJSON `json:"network"`
	Iterations         int         `json:"iterations"`
	// Inner is the ADMM u-update: "closed-form" (squared loss), "split"
	// (the loss split out, its prox per sample) or "rbcd" (Algorithm RBCD).
	Inner string `json:"inner,omitempty"`
	// SCP: the sampled neurons, their seed, the duality gap of eq. (SCP2).
	Neurons int     `json:"neurons,omitempty"`
	Seed    *uint64 `json:"seed,omitempty"`
	Gap     float64 `json:"duality_gap,omitempty"`
	// Auto is set when -solver auto chose Solver.
	Auto bool `json:"auto,omitempty"`
	// Input is set when the problem came from a data file: how its rows
	// were prepared and its classes named.
	Input *dataInputJSON `json:"input,omitempty"`
	// LowerBound ≤ p* ≤ UpperBound certify the optimum p* of the program as
	// posed (package solvers/certify); CertifiedGap is
	// (upper − lower)/|upper|. UpperBound is the objective at the solution
	// made feasible (restored), so it may exceed Objective when the solution
	// violates constraints.
	LowerBound   *float64 `json:"lower_bound,omitempty"`
	UpperBound   *float64 `json:"upper_bound,omitempty"`
	CertifiedGap *float64 `json:"gap,omitempty"`
	Seconds      float64  `json:"seconds"`
	BLAS         string   `json:"blas"`
	// Robust training (eps > 0): the perturbation set and the objective on
	// the clean data at the solution; Objective is then the robust objective
	// (eq. hinge_adv_D, eq. SOCP3) and MaxViolation that of the robust
	// constraints eq. (robust_constraint).
	Eps            float64  `json:"eps,omitempty"`
	Norm           string   `json:"norm,omitempty"`
	CleanObjective *float64 `json:"clean_objective,omitempty"`
	// Model is the problem's "model" when it is not "relu"; BatchNorm,
	// CNN and SubNetworks describe the trained network of those models
	// (Network then holds the network on the BN features, or the filters as
	// rows of "u"; it is empty for two-hidden).
	Model       string           `json:"model,omitempty"`
	BatchNorm   *batchNormJSON   `json:"batchnorm,omitempty"`
	CNN         *cnnJSON         `json:"cnn,omitempty"`
	SubNetworks []subNetworkJSON `json:"subnetworks,omitempty"`
	// net is the trained network of a model other than relu (a
	// *batchnorm.Network, *cnn.Network or *twohidden.Network) for -save;
	// relu's is Network.
	net any
}

// readProblem parses and checks problem JSON, naming the offending field.
// With patterns false (the SCP method), the fields "D" and "P" are not used.
// Robust problems (eps > 0) are refused: see readRobustProblem.
func readProblem(r io.Reader, patterns bool) (*solvers.Program, error) {
	p, pert, err := readRobustProblem(r, patterns)
	if err != nil {
		return nil, err
	}
	if pert.Eps > 0 {
		return nil, badInput("problem: field \"eps\" = %v: robust (adversarial) programs are solved by `convexnn solve -solver ipm` only so far", pert.Eps)
	}
	return p, nil
}

// readRobustProblem is readProblem for robust problems too: it also returns
// the perturbation set of fields "eps" and "norm" (Eps 0 for a standard
// problem), and samples the patterns by Algorithm adv_train when the field
// "robust_sampling" is given.
func readRobustProblem(r io.Reader, patterns bool) (*solvers.Program, solvers.Perturbation, error) {
	in, err := readInput(r, patterns)
	if err != nil {
		return nil, solvers.Perturbation{}, err
	}
	if in.model != modelReLU {
		return nil, in.pert, badInput("problem: field \"model\" = %q: this command takes the two-layer ReLU program (\"relu\") only", in.model)
	}
	return in.prog, in.pert, nil
}

// readInput parses a problem of any model (see readRobustProblem).
func readInput(r io.Reader, patterns bool) (*modelInput, error) {
	in := &modelInput{}
	var err error
	in.prog, in.pert, err = readModel(r, patterns, in)
	if err != nil {
		return nil, err
	}
	return in, nil
}

// refuseNulls names the first null in the numeric arrays of a problem
// (fields "X", "y" and "D"): JSON's null decodes into a float as 0, which
// would train on a missing value as if it were 0 (pandas writes NaN as
// null). A field that is null as a whole is absent.
func refuseNulls(raw []byte) error {
	null := []byte("null")
	if !nullElement(raw) {
		return nil // the common case, at the cost of one byte scan
	}
	var top struct{ X, Y, D json.RawMessage }
	if json.Unmarshal(raw, &top) != nil {
		return nil // malformed input: the decoder reports it
	}
	for _, f := range []struct {
		name string
		body json.RawMessage
	}{{"X", top.X}, {"y", top.Y}, {"D", top.D}} {
		field, body := f.name, f.body
		if !bytes.Contains(body, null) {
			continue // absent, or no null inside
		}
		dec := json.NewDecoder(bytes.NewReader(body))
		var idx []int // the index of the next element at each depth
		for {
			tok, err := dec.Token()
			if err != nil {
				break
			}
			switch tok {
			case json.Delim('['):
				idx = append(idx, 0)
				continue
			case json.Delim(']'):
				idx = idx[:len(idx)-1]
			case nil:
				if len(idx) == 0 {
					break // the field itself is null: as if absent, which the checks after decoding report
				}
				at := ""
				for _, i := range idx {
					at += fmt.Sprintf("[%d]", i)
				}
				return badInput("problem: field %q%s is null: give a number (missing values are not filled in)", field, at)
			}
			if len(idx) > 0 {
				idx[len(idx)-1]++
			}
		}
	}
	return nil
}

// nullElement reports whether raw has a null that may be an array's
// element (after '[' or ','): a field that is null as a whole (after ':')
// is not one, so a problem without missing values costs a byte scan, not
// a decoding.
func nullElement(raw []byte) bool {
	for i := 0; ; {
		j := bytes.Index(raw[i:], []byte("null"))
		if j < 0 {
			return false
		}
		k := i + j - 1
		for k >= 0 && (raw[k] == ' ' || raw[k] == '\t' || raw[k] == '\n' || raw[k] == '\r') {
			k--
		}
		if k >= 0 && (raw[k] == '[' || raw[k] == ',') {
			return true
		}
		i += j + 4
	}
}

func readModel(r io.Reader, patterns bool, in *modelInput) (*solvers.Program, solvers.Perturbation, error) {
	var pert solvers.Perturbation
	raw, err := io.ReadAll(r)
	if err != nil {
		return nil, pert, err
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	var pj problemJSON
	if err := dec.Decode(&pj); err != nil {
		var se *json.SyntaxError
		var te *json.UnmarshalTypeError
		switch {
		case errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF):
			return nil, pert, badInput("problem: malformed JSON: the input ends before the object is complete")
		case errors.As(err, &se):
			return nil, pert, badInput("problem: malformed JSON at byte %d: %v", se.Offset, err)
		case errors.As(err, &te):
			return nil, pert, badInput("problem: field %q: %v is not a valid %v", te.Field, te.Value, te.Type)
		}
		return nil, pert, badInput("problem: %v", err)
	}
	if err := refuseNulls(raw); err != nil {
		return nil, pert, err
	}
	if dec.More() {
		return nil, pert, badInput("problem: extra data after the JSON object")
	}
	if pj.isGated() || pj.Groups != "" {
		return nil, pert, badInput("problem: fields \"gated\", \"classes\" and \"groups\" ask for the gated program, which `convexnn solve` solves (-solver auto, newton or fista); this command takes the ReLU program")
	}
	x, err := pj.design()
	if err != nil {
		return nil, pert, err
	}
	n := len(pj.X)
	if len(pj.Y) != n {
		return nil, pert, badInput("problem: field \"y\" has %d entries, X has %d rows", len(pj.Y), n)
	}
	if pj.Loss == "" {
		return nil, pert, badInput("problem: field \"loss\" is missing (squared, hinge, bce or logistic)")
	}
	loss, err := solvers.ParseLoss(pj.Loss)
	if err != nil {
		return nil, pert, badInput("problem: field \"loss\": %q, want \"squared\", \"hinge\", \"bce\" or \"logistic\"", pj.Loss)
	}
	for k, v := range pj.Y {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return nil, pert, badInput("problem: field \"y\"[%d] is %v", k, v)
		}
		if loss != solvers.SquaredLoss && !validLabel(loss, v) {
			return nil, pert, badInput("problem: field \"y\"[%d] = %v: the %v loss needs labels %s", k, v, loss, loss.Labels())
		}
	}
	if pj.Beta == nil {
		return nil, pert, badInput("problem: field \"beta\" is missing")
	}
	if pj.Eps < 0 {
		return nil, pert, badInput("problem: field \"eps\" = %v: the perturbation radius must be ≥ 0 (0: standard training)", pj.Eps)
	}
	pert = solvers.Perturbation{Eps: pj.Eps, Norm: solvers.Norm(pj.Norm).Canonical()}
	if err := pert.Validate(); err != nil {
		return nil, pert, badInput("problem: field \"norm\" = %q: want \"inf\" (the box, default), \"2\" or \"1\"", pj.Norm)
	}
	if !(*pj.Beta > 0) || math.IsInf(*pj.Beta, 0) {
		return nil, pert, badInput("problem: field \"beta\" = %v, need 0 < β < ∞", *pj.Beta)
	}
	if err := in.setModel(&pj, x, loss, patterns); err != nil {
		return nil, pert, err
	}
	if in.model == modelBatchNorm {
		x = in.prog.X
	}
	if in.gen != nil {
		return nil, pert, nil
	}
	p := &solvers.Program{X: x, Y: pj.Y, Loss: loss, Beta: *pj.Beta, Bias: pj.Bias}
	if !patterns {
		if pj.D != nil || pj.P != 0 || pj.RobustSampling != nil {
			return nil, pert, badInput("problem: fields \"D\" and \"P\" (activation patterns) and \"robust_sampling\" do not apply to -solver scp, which samples neurons (-neurons, -seed)")
		}
		return p, pert, nil
	}
	switch {
	case pj.D != nil && pj.P != 0:
		return nil, pert, badInput("problem: give either field \"D\" or field \"P\" (with \"seed\"), not both")
	case pj.RobustSampling != nil:
		rs := pj.RobustSampling
		switch {
		case pj.D != nil:
			return nil, pert, badInput("problem: give either field \"D\" or field \"robust_sampling\" (with \"P\"), not both")
		case pj.P < 1:
			return nil, pert, badInput("problem: field \"robust_sampling\" needs field \"P\" ≥ 1, the number of distinct patterns P_s to sample")
		case pj.Seed != nil:
			return nil, pert, badInput("problem: with field \"robust_sampling\" give the seed as \"robust_sampling\".\"seed\", not field \"seed\"")
		case rs.Seed == nil:
			return nil, pert, badInput("problem: field \"robust_sampling\" needs \"seed\"")
		case rs.P < 1 || rs.S < 1:
			return nil, pert, badInput("problem: field \"robust_sampling\": \"P\" = %d directions and \"S\" = %d samples per direction must be ≥ 1", rs.P, rs.S)
		}
		pats, err := solvers.SampleRobustPatterns(x, pj.Bias, rs.P, rs.S, pert, pj.P, *rs.Seed, 0)
		if p.D, err = sampled(pats, err, "field \"robust_sampling\": "); err != nil {
			return nil, pert, err
		}
	case pj.D != nil:
		for i, row := range pj.D {
			if len(row) != n {
				return nil, pert, badInput("problem: field \"D\": row %d has %d entries, want one per data point (%d)", i, len(row), n)
			}
			pat := make(solvers.Pattern, n)
			for k, v := range row {
				switch v {
				case 0:
				case 1:
					pat[k] = true
				default:
					return nil, pert, badInput("problem: field \"D\"[%d][%d] = %v, want 0 or 1", i, k, v)
				}
			}
			p.D = append(p.D, pat)
		}
		if len(p.D) == 0 {
			return nil, pert, badInput("problem: field \"D\" is empty")
		}
	case pj.P > 0:
		if pj.Seed == nil {
			return nil, pert, badInput("problem: field \"P\" needs field \"seed\"")
		}
		var pats solvers.Patterns
		var err error
		if in.model == modelBatchNorm {
			pats, err = batchnorm.SamplePatterns(in.raw, pj.P, *pj.Seed)
		} else {
			pats, err = solvers.SamplePatterns(x, pj.P, *pj.Seed, 0)
		}
		if p.D, err = sampled(pats, err, ""); err != nil {
			return nil, pert, err
		}
	default:
		return nil, pert, badInput("problem: give field \"D\" (P rows of n 0/1 entries) or field \"P\" > 0 with \"seed\"")
	}
	if err := p.Validate(); err != nil {
		return nil, pert, badInput("problem: %v", err)
	}
	return p, pert, nil
}

func validLabel(l solvers.Loss, v float64) bool {
	if l == solvers.BCELoss {
		return v == 0 || v == 1
	}
	return v == 1 || v == -1
}

func rows(m *mat.Dense) [][]float64 {
	r, _ := m.Dims()
	out := make([][]float64, r)
	for i := range out {
		out[i] = append([]float64(nil), m.RawRowView(i)...)
	}
	return out
}

// sampled returns the patterns a sampler returned with err: with a
// warning on stderr when it found fewer distinct patterns than asked
// (solvers.FewPatternsError), as bad input about field (the problem file's
// field, with its separator, or "") for any other error.
func sampled(pats solvers.Patterns, err error, field string) (solvers.Patterns, error) {
	var few *solvers.FewPatternsError
	switch {
	case errors.As(err, &few):
		fmt.Fprintf(os.Stderr, "convexnn: warning: %v; solving with %d patterns\n", err, len(pats))
	case err != nil:
		return nil, badInput("problem: %s%v", field, err)
	}
	return pats, nil
}

func solveCommand(ctx context.Context, args []string, stdout io.Writer) error {
	fs := quietFlags("solve")
	problem := fs.String("problem", "", "problem JSON file (- for stdin)")
	method := fs.String("method", "fista", "-solver scp: fista (first-order, any size) or ipm (the interior-point method, N×N matrices; reaches 1e-9)")
	solver := fs.String("solver", "ipm", "ipm, working-set (interior-point solves on a growing set of patterns: squared, hinge), newton (proximal Newton: bce, logistic), admm, scp, or auto (the method that fits the instance, run to -gap, default 1e-6)")
	maxIter := fs.Int("max-iter", 0, "iteration limit (0: the solver's default)")
	tol := fs.Float64("tol", 0, "tolerance (0: the solver's default)")
	out := fs.String("out", "", "result JSON file (default stdout)")
	rho := fs.Float64("rho", 0, "ADMM penalty ρ (0: default)")
	relax := fs.Float64("relax", 0, "ADMM over-relaxation α in (0, 2) for -inner closed-form (0: none, the paper's ADMM; 1.5–1.8 often faster)")
	inner := fs.String("inner", "", "ADMM u-update: closed-form (squared loss), split, rbcd or robust (default: robust for eps > 0, else closed-form for squared, split for hinge, rbcd for bce and logistic)")
	neurons := fs.Int("neurons", 0, "SCP: number of hidden neurons sampled uniformly on the unit sphere")
	seed := fs.Uint64("seed", 0, "SCP: seed of the neuron sample")
	labelCol := fs.String("label-column", "", "-problem data.csv|.npy|.npz: the labels' column (a header name or a position, −1 the last; .npz: the labels' array)")
	tabLoss := fs.String("loss", "", "-problem data file: the loss (default squared; softmax for more than two classes)")
	tabBeta := fs.Float64("beta", 1e-3, "-problem data file: β")
	tabP := fs.Int("patterns", 32, "-problem data file: the number of sampled patterns (gates) P")
	tabSeed := fs.Uint64("pattern-seed", 1, "-problem data file: the patterns' seed")
	tabGated := fs.Bool("gated", false, "-problem data file with two classes: the gated program (more than two classes always are)")
	save := fs.String("save", "", "also write the trained network (any model) to this file (.json or .npz, for convexnn predict)")
	gap := fs.Float64("gap", 0, "certified relative gap (upper − lower)/|upper| to reach: ADMM and SCP stop there, the interior-point method tightens its tolerance for it; the status says whether it was reached (0: the solver's own stopping test; every solver reports its certified bounds)")
	const usage = "usage: convexnn solve -problem problem.json -solver ipm|working-set|newton|admm|scp|auto (robust problems, eps > 0: ipm, working-set, admm or auto) [-max-iter N] [-tol T] [-rho R] [-relax α] [-inner split|rbcd|robust] [-gap T] [-neurons N -seed S [-method fista|ipm]] [-out result.json]"
	if err := fs.Parse(args); err != nil {
		return badInput("solve: %v\n%s", err, usage)
	}
	if fs.NArg() > 0 {
		return badInput("solve: unexpected argument %q\n%s", fs.Arg(0), usage)
	}
	if *problem == "" {
		return badInput("solve: -problem is required\n%s", usage)
	}
	if *maxIter < 0 || !(*tol >= 0) || !(*rho >= 0) || math.IsInf(*tol, 0) || math.IsInf(*rho, 0) {
		return badInput("solve: -max-iter, -tol and -rho must be finite and ≥ 0 (-tol %v, -rho %v)", *tol, *rho)
	}
	if set := flagSet(fs, "gap"); set && !(*gap > 0 && *gap < 1) {
		return badInput("solve: -gap %v: the certified relative gap must be in (0, 1)", *gap)
	}
	if *relax != 0 && !(*relax > 0 && *relax < 2) {
		return badInput("solve: -relax %v: the over-relaxation α must be in (0, 2)", *relax)
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	switch *solver {
	case "ipm", "working-set", "newton", "admm", "scp", "auto", "fista", "kernel":
	default:
		return badInput("solve: -solver %q: use ipm, working-set, newton, admm, scp, fista or kernel (gated programs) or auto", *solver)
	}
	if *solver == "auto" && (set["inner"] || set["relax"] || set["rho"]) {
		return badInput("solve: -inner, -relax and -rho choose an ADMM; -solver auto chooses the method itself (use -solver admm)")
	}
	if *solver == "scp" {
		if *neurons < 1 {
			return badInput("solve: -solver scp needs -neurons N ≥ 1 (and -seed S)")
		}
		if set["rho"] || set["inner"] {
			return badInput("solve: -rho and -inner are ADMM options, not for -solver scp")
		}
		if *method != "fista" && *method != "ipm" {
			return badInput("solve: -method %q: -solver scp's methods are fista and ipm", *method)
		}
	} else if set["neurons"] || set["seed"] || set["method"] {
		return badInput("solve: -neurons, -seed and -method are for -solver scp (patterns are sampled with the problem's \"P\" and \"seed\")")
	}
	if (set["inner"] || set["relax"]) && *solver != "admm" {
		return badInput("solve: -inner and -relax are ADMM options")
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
	var raw []byte
	var input *dataInputJSON
	var err error
	switch strings.ToLower(filepath.Ext(*problem)) {
	case ".csv", ".tsv", ".npy", ".npz":
		raw, input, err = tableProblem(*problem, *labelCol, *tabLoss, *tabBeta, *tabP, *tabSeed, *tabGated)
	default:
		for _, f := range []string{"label-column", "loss", "beta", "patterns", "pattern-seed", "gated"} {
			if set[f] {
				return badInput("solve: -%s is for a data file given as -problem (.csv, .npy or .npz); a problem JSON holds its own fields", f)
			}
		}
		raw, err = io.ReadAll(in)
	}
	if err != nil {
		return badInput("solve: %v", err)
	}
	if pj, ok, err := probeGated(raw); err != nil {
		return err
	} else if ok {
		if set["inner"] || set["relax"] || set["rho"] || set["neurons"] || set["method"] {
			return badInput("solve: -inner, -relax, -rho, -neurons and -method do not apply to gated programs")
		}
		gs := *solver
		if !set["solver"] {
			gs = "auto"
		}
		return solveGatedCommand(ctx, pj, input, gs, *maxIter, *gap, *save, stdout, *out)
	}
	if *solver == "fista" || *solver == "kernel" {
		return badInput("solve: -solver %s solves gated programs (fields \"gated\" or \"classes\"); the sampled program of neurons is -solver scp", *solver)
	}
	mi, err := readInput(bytes.NewReader(raw), *solver != "scp")
	if err != nil {
		return err
	}
	if mi.gen != nil {
		switch *solver {
		case "admm", "ipm", "auto":
		default:
			return badInput("solve: model %q is solved by -solver admm, ipm or auto, not %s", mi.model, *solver)
		}
		if set["inner"] || set["relax"] {
			return badInput("solve: -inner and -relax are options of the two-layer ADMM; model %q runs the general ADMM (-rho, -tol, -max-iter, -gap)", mi.model)
		}
		if *solver == "ipm" && (set["max-iter"] || set["rho"]) {
			return badInput("solve: -max-iter and -rho are options of -solver admm; the interior-point method of model %q stops at -tol or -gap", mi.model)
		}
		if mi.eps > 0 && *solver == "admm" && set["tol"] {
			return badInput("solve: -tol does not apply to the ADMM splitting of the robust CNN, which stops at -gap (certified) or -max-iter")
		}
		return writeResult(stdout, *out, input, *save, mi.labels(), func() (resultJSON, error) {
			return solveGeneral(ctx, mi, *solver, *maxIter, *rho, *tol, *gap)
		})
	}
	if mi.basis != nil && *solver == "scp" {
		return badInput("solve: model %q is solved by -solver ipm, working-set, newton, admm or auto, not scp", mi.model)
	}
	p, pert := mi.prog, mi.pert
	robust := pert.Eps > 0
	if robust && *solver == "scp" {
		return badInput("solve: field \"eps\" = %v asks for robust (adversarial) training, a program of activation patterns: use -solver ipm or -solver admm (not -solver scp)", pert.Eps)
	}
	if robust && *solver == "newton" {
		return badInput("solve: field \"eps\" = %v asks for robust (adversarial) training: -solver newton solves standard programs; use -solver ipm (squared, hinge) or admm", pert.Eps)
	}
	if *solver == "working-set" && p.Loss != solvers.SquaredLoss && p.Loss != solvers.HingeLoss {
		return badInput("solve: -solver working-set solves the squared and hinge losses (cone programs), not %v: use -solver ipm or auto", p.Loss)
	}
	if *solver == "newton" && !p.Loss.Smooth() {
		return badInput("solve: -solver newton needs a smooth loss (squared, bce, logistic), not %v: use -solver ipm", p.Loss)
	}
	if robust && set["inner"] && *inner != "robust" {
		return badInput("solve: -inner %s: robust problems (eps > 0) are solved by the robust ADMM (-inner robust, the default)", *inner)
	}
	start := time.Now()
	if *solver == "scp" {
		return writeResult(stdout, *out, input, *save, mi.labels(), func() (resultJSON, error) {
			return solveSCP(ctx, p, *neurons, *seed, *method, *maxIter, *tol, *gap, start)
		})
	}
	auto := *solver == "auto"
	if auto {
		*solver = chooseSolver(p, pert)
		if *gap == 0 {
			*gap = 1e-6
		}
	}
	var wt solvers.Weights
	res := resultJSON{Solver: *solver, Auto: auto, BLAS: solvers.BLAS()}
	var converged admmResult
	var hint *certify.Hint // the solver's duals for the certificate
	interrupted := false   // ctx ended the run: its best point so far is the result
	switch *solver {
	case "ipm":
		o := ipm.Options{MaxIter: *maxIter, Tol: *tol}
		var r *ipm.Result
		var err error
		if *gap > 0 && o.Tol == 0 {
			// The tolerance starts at the gap/10 and tightens, in place,
			// while the certificate misses the gap (ipm.Options.Gap).
			var b certify.Bound
			r, b, err = ipm.SolveToGap(ctx, p, pert, *gap, o, nil)
			if err == nil {
				converged.bound = &b
			}
		} else {
			r, err = ipm.SolveProgram(ctx, p, pert, o)
		}
		if err != nil {
			if r == nil || r.Weights.V == nil || !isInterrupt(err) {
				return err
			}
			interrupted = true
		}
		wt, res.Status, res.Iterations, hint = r.Weights, r.Status.String(), r.Iterations, r.Dual
	case "working-set":
		if *gap == 0 {
			*gap = 1e-6 // its stopping rule: the status says whether it holds
		}
		ws, err := ipm.NewWorkingSet(p, pert, *gap, 0, ipm.Options{Tol: *tol}, nil, nil)
		if err != nil {
			return err
		}
		last, err := ws.Solve(ctx, *maxIter, nil)
		if last.Round == 0 {
			return err
		}
		wt, res.Iterations, converged.bound = last.Weights, last.Round, &last.Bound
		res.Status = "optimal"
		if err != nil {
			res.Status = err.Error()
			interrupted = isInterrupt(err)
		}
	case "newton":
		g := *gap
		if g == 0 {
			g = 1e-6
		}
		nt, err := ipm.NewNewton(p, g, ipm.Options{Tol: *tol}, nil, nil)
		if err != nil {
			return err
		}
		last, err := nt.Solve(ctx, *maxIter, nil)
		if last.Iter == 0 {
			return err
		}
		wt, res.Iterations, converged.bound = last.Weights, last.Iter, &last.Bound
		res.Status = "optimal"
		if err != nil {
			res.Status = err.Error()
			interrupted = isInterrupt(err)
		}
	case "admm":
		if res.Inner, res.Iterations, converged, err = solveADMM(ctx, p, pert, *inner, *relax, *rho, *tol, *gap, *maxIter); err != nil {
			return err
		}
		wt, hint, interrupted = converged.weights, converged.hint, converged.interrupted
		res.Status = "iteration limit"
		if converged.ok {
			res.Status = "optimal"
		}
	}
	res.Seconds = time.Since(start).Seconds()
	bound := converged.bound
	if bound == nil {
		cert, err := ipm.NewCertifier(p, pert)
		if err != nil {
			return err
		}
		b, err := cert.Bound(wt, hint)
		if err != nil {
			return err
		}
		bound = &b
	}
	wt = bound.Best(wt) // not an inaccurate point worse than the certificate's
	res.LowerBound, res.UpperBound, res.CertifiedGap = &bound.Lower, &bound.Upper, &bound.Gap
	switch {
	case interrupted:
		res.Status = "interrupted"
	case *gap > 0:
		res.Status = "gap reached"
		if bound.Gap > *gap {
			res.Status = "gap not reached"
		}
	}
	if res.Objective, err = p.Objective(wt); err != nil {
		return err
	}
	if res.MaxViolation, err = p.Violation(wt); err != nil {
		return err
	}
	if robust {
		// The robust objective eq. (hinge_adv_D) / (SOCP3) and the robust
		// constraints eq. (robust_constraint); the clean objective kept.
		clean := res.Objective
		res.CleanObjective, res.Eps, res.Norm = &clean, pert.Eps, string(pert.Norm)
		if res.Objective, err = solvers.RobustObjective(p, wt, pert); err != nil {
			return err
		}
		if res.MaxViolation, err = solvers.RobustViolation(p, wt, pert); err != nil {
			return err
		}
	}
	net, err := p.Recover(wt)
	if err != nil {
		return err
	}
	if res.NonconvexObjective, err = p.NonconvexObjective(net); err != nil {
		return err
	}
	res.V, res.W = rows(wt.V), rows(wt.W)
	res.D = p.D.Rows()
	res.Network = networkOf(net)
	if mi.basis != nil {
		if err := mi.batchNormResult(&res, net); err != nil {
			return err
		}
	}
	return writeResult(stdout, *out, input, *save, mi.labels(), func() (resultJSON, error) { return res, nil })
}

func networkOf(net *solvers.Network) networkJSON {
	var ut mat.Dense
	ut.CloneFrom(net.U.T())
	return networkJSON{U: rows(&ut), Alpha: net.Alpha, Bias: net.Bias}
}

// writeResult writes the result JSON to the file out, or to stdout when out
// is empty; the file is created only once the result is there.
func writeResult(stdout io.Writer, out string, input *dataInputJSON, save string, y []float64, solve func() (resultJSON, error)) error {
	res, err := solve()
	if err != nil {
		return err
	}
	res.Input = input
	if save != "" {
		if err := saveNetwork(save, res, input, y); err != nil {
			return err
		}
	}
	w := stdout
	if out != "" {
		f, err := os.Create(out)
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

// saveNetwork writes the result's trained network to a network file for
// convexnn predict: the model's own network (res.net), or relu's from
// "network"; deciding as the labels y do (see dataInputJSON.fileFor).
func saveNetwork(path string, res resultJSON, input *dataInputJSON, y []float64) error {
	net := res.net
	if net == nil {
		relu, err := res.Network.network()
		if err != nil {
			return err
		}
		if relu.U == nil {
			return badInput("solve: -save: the solution has no neurons (the zero network)")
		}
		net = relu
	}
	file, err := input.fileFor(net, y)
	if err != nil {
		return err
	}
	return file.Save(path)
}

// isInterrupt reports whether err ends a run because its context ended
// (an interrupt or a time limit): the run's best point so far is then
// written, with the status "interrupted".
func isInterrupt(err error) bool {
	return errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
}

// admmResult is the end of an ADMM run: its weights and whether its last
// step passed the stopping test (or the run was interrupted).
type admmResult struct {
	weights     solvers.Weights
	ok          bool
	interrupted bool
	bound       *certify.Bound // the final iterate's certificate, when -gap asked for one
	hint        *certify.Hint  // the solver's duals at weights
}

// solveADMM runs the ADMM variant named by inner, or admm.ChooseVariant's
// for the program's loss when inner is empty, and returns the variant, the
// iterations and how it ended. -relax is the closed-form u-update's; 1 means
// no over-relaxation for every variant.
func solveADMM(ctx context.Context, p *solvers.Program, pert solvers.Perturbation, inner string, relax, rho, tol, gap float64, maxIter int) (string, int, admmResult, error) {
	robust := pert.Eps > 0
	v := admm.ChooseVariant(p.Loss, robust)
	if inner != "" {
		var err error
		if v, err = admm.ParseVariant(inner); err != nil {
			return inner, 0, admmResult{}, badInput("solve: -inner %q: use split or rbcd (or closed-form for the squared loss, robust for eps > 0)", inner)
		}
	}
	switch {
	case robust && v != admm.VariantRobust:
		return inner, 0, admmResult{}, badInput("solve: -inner %s: robust problems (eps > 0) are solved by the robust ADMM (-inner robust, the default)", inner)
	case !robust && v == admm.VariantRobust:
		return inner, 0, admmResult{}, badInput("solve: -inner robust is for robust problems (eps > 0)")
	case v == admm.VariantClosedForm && p.Loss != solvers.SquaredLoss:
		return inner, 0, admmResult{}, badInput("solve: -inner closed-form is for the squared loss; the %v loss needs split or rbcd", p.Loss)
	case v == admm.VariantRBCD && !p.Loss.Smooth():
		return inner, 0, admmResult{}, badInput("solve: -inner rbcd needs a smooth loss (squared, bce, logistic); the %v loss has no gradient: use -inner split", p.Loss)
	case relax != 0 && relax != 1 && v == admm.VariantRBCD:
		return inner, 0, admmResult{}, badInput("solve: -relax is for -inner closed-form (the squared loss); the rbcd u-update has no over-relaxation")
	case relax != 0 && relax != 1 && v != admm.VariantClosedForm:
		return inner, 0, admmResult{}, badInput("solve: -relax is for -inner closed-form (the squared loss); the %s ADMM over-relaxes with its own fixed α = %g", v, admm.FixedRelax)
	}
	o := admm.Options{MaxIter: maxIter, Rho: rho}
	if v == admm.VariantClosedForm {
		o.Relax = relax
	}
	if tol > 0 {
		o.AbsTol, o.RelTol = tol, tol
	}
	s, err := admm.New(p, pert, v, o, nil)
	if err != nil {
		return string(v), 0, admmResult{}, err
	}
	if gap > 0 {
		// The certificate decides: the run stops once its gap is at most gap.
		cert, err := certify.New(p, pert)
		if err != nil {
			return string(v), 0, admmResult{}, err
		}
		cert.Refine = 20 // warm-started along the run: a few steps per certificate
		if maxIter == 0 {
			maxIter = 1000
		}
		b, iters, err := admm.SolveToGap(ctx, s, cert, gap, certifyEvery, maxIter)
		if isInterrupt(err) {
			return string(v), iters, admmResult{weights: s.Weights(), interrupted: true, hint: admm.Hint(s)}, nil
		}
		if err != nil {
			return string(v), iters, admmResult{}, err
		}
		return string(v), iters, admmResult{weights: s.Weights(), ok: b.Gap <= gap, bound: &b, hint: admm.Hint(s)}, nil
	}
	hist, err := admm.Solve(ctx, s, maxIter, nil)
	if isInterrupt(err) {
		return string(v), len(hist), admmResult{weights: s.Weights(), interrupted: true, hint: admm.Hint(s)}, nil
	}
	if err != nil {
		return string(v), len(hist), admmResult{}, err
	}
	ok := len(hist) > 0 && s.Converged(hist[len(hist)-1])
	return string(v), len(hist), admmResult{weights: s.Weights(), ok: ok, hint: admm.Hint(s)}, nil
}

// solveSCP solves eq. (SCP2): N neurons uniform on the unit sphere (seeded),
// the output layer by FISTA with the squared loss (a Lasso) or BCE.
func solveSCP(ctx context.Context, p *solvers.Program, neurons int, seed uint64, method string, maxIter int, tol, gap float64, start time.Time) (resultJSON, error) {
	res := resultJSON{Solver: "scp", BLAS: solvers.BLAS(), Neurons: neurons, Seed: &seed}
	if p.Loss != solvers.SquaredLoss && p.Loss != solvers.BCELoss {
		return res, badInput("solve: -solver scp solves the squared and bce losses (FISTA needs a smooth loss with a computable duality gap), not %v", p.Loss)
	}
	n, d := p.X.Dims()
	if err := scp.CheckFeatureMemory(n, neurons, 8<<30); err != nil {
		return res, badInput("solve: %v", err)
	}
	u, err := scp.SampleSphere(d, neurons, seed)
	if err != nil {
		return res, err
	}
	h, err := scp.ReLUFeatures(p.X, u)
	if err != nil {
		return res, err
	}
	if method == "ipm" {
		o := ipm.Options{MaxIter: maxIter, Tol: tol}
		if gap > 0 && tol == 0 {
			o.Tol = gap / 1000 // the duality gap of SCP2 is looser than the method's own
		}
		r, err := scp.SolveInteriorPoint(ctx, h, p.Y, p.Loss, p.Beta, o)
		if r == nil {
			var me *ipm.MemoryError
			if errors.As(err, &me) {
				return res, badInput("solve: %v", err)
			}
			return res, err
		}
		res.Iterations, res.Gap, res.Objective, res.Status = r.Iterations, r.Gap, r.Objective, r.Status
		switch {
		case isInterrupt(err):
			res.Status = "interrupted"
		case err != nil:
			res.Status = err.Error()
		case gap > 0:
			res.Status = "gap reached"
			if r.Gap > gap*math.Abs(r.Objective) {
				res.Status = "gap not reached"
			}
		}
		return finishSCP(res, p, u, r.Alpha, start)
	}
	if maxIter == 0 {
		maxIter = 100000
	}
	if tol == 0 {
		tol = 1e-8
	}
	type stepper interface{ Step() scp.FISTAStep }
	var (
		f     stepper
		alpha func() []float64
		obj   func([]float64) float64
	)
	if p.Loss == solvers.SquaredLoss {
		lp := &scp.Lasso{H: h, Y: p.Y, Beta: p.Beta}
		s, err := scp.NewFISTA(lp, nil)
		if err != nil {
			return res, err
		}
		f, alpha, obj = s, func() []float64 { return s.State.Alpha }, lp.Objective
	} else {
		bp := &scp.BCELasso{H: scp.NewDenseFeatures(h), Y: p.Y, Beta: p.Beta}
		s, err := scp.NewFISTABCE(bp, nil)
		if err != nil {
			return res, err
		}
		f, alpha, obj = s, func() []float64 { return s.State.Alpha }, bp.Objective
	}
	res.Status = "iteration limit"
	for res.Iterations < maxIter {
		if ctx.Err() != nil {
			res.Status = "interrupted"
			break
		}
		st := f.Step()
		res.Iterations++
		res.Gap = st.Gap
		if gap > 0 && st.Gap <= gap*math.Abs(st.Objective) {
			res.Status = "gap reached"
			break
		}
		if gap == 0 && st.Gap <= tol*math.Max(1, st.Objective) {
			res.Status = "optimal"
			break
		}
	}
	if gap > 0 && res.Status != "gap reached" && res.Status != "interrupted" {
		res.Status = "gap not reached"
	}
	a := alpha()
	res.Objective = obj(a)
	return finishSCP(res, p, u, a, start)
}

// finishSCP completes the result of -solver scp: the certificate of the
// duality gap, F(α) − gap ≤ F* ≤ F(α), the network and its objective.
func finishSCP(res resultJSON, p *solvers.Program, u *mat.Dense, a []float64, start time.Time) (resultJSON, error) {
	lower, upper := res.Objective-res.Gap, res.Objective
	cgap := certify.RelativeGap(lower, upper)
	res.LowerBound, res.UpperBound, res.CertifiedGap = &lower, &upper, &cgap
	res.Seconds = time.Since(start).Seconds()
	net, err := scp.Network(u, a, p.Bias)
	if err != nil {
		return res, err
	}
	if res.NonconvexObjective, err = p.NonconvexObjective(net); err != nil {
		return res, err
	}
	res.Network = networkOf(net)
	return res, nil
}

// certifyEvery is how often (in iterations) solve -gap certifies an ADMM
// iterate: a certificate costs about as much as tens of iterations.
const certifyEvery = 50

// flagSet reports whether the flag name was given.
func flagSet(fs *flag.FlagSet, name string) bool {
	found := false
	fs.Visit(func(f *flag.Flag) { found = found || f.Name == name })
	return found
}

// chooseSolver is -solver auto's rule (ipm.MethodFor): the interior-point
// method when it fits (squared or hinge loss within the memory limit; it
// reaches 1e-8 in tens of iterations), through the working set over
// patterns on large robust programs with the ℓ∞ set, the proximal Newton
// method for BCE and logistic, otherwise ADMM run to the gap.
func chooseSolver(p *solvers.Program, pert solvers.Perturbation) string {
	switch ipm.MethodFor(p, pert) {
	case ipm.InteriorPoint:
		return "ipm"
	case ipm.PatternWorkingSet:
		return "working-set"
	case ipm.ProximalNewton:
		return "newton"
	}
	return "admm"
}
