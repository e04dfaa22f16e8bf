package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/convexnn/convexnn/data"
	"io"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/convexnn/convexnn/solvers"
	"github.com/convexnn/convexnn/solvers/gated"
	"github.com/convexnn/convexnn/solvers/netfile"
	"gonum.org/v1/gonum/mat"
)

// gatedResultJSON is the result of `convexnn solve` on a gated or
// multi-class problem: the gated network (gates and blocks), the ReLU
// network of its cone decomposition (u m×d̃, alpha m×c) with its objective
// gap, and the certificate.
type gatedResultJSON struct {
	Status       string       `json:"status"`
	Solver       string       `json:"solver"`
	Objective    float64      `json:"objective"`
	LowerBound   float64      `json:"lower_bound"`
	UpperBound   float64      `json:"upper_bound"`
	CertifiedGap float64      `json:"gap"`
	Iterations   int          `json:"iterations"`
	Seconds      float64      `json:"seconds"`
	Classes      int          `json:"classes,omitempty"`
	Gated        gatedNetJSON `json:"gated_network"`
	// Network is the ReLU network of the cone decomposition: the gated
	// network's outputs on the training data, at the objective
	// NonconvexObjective (DecompositionGap above the gated one).
	Network            multiNetworkJSON `json:"network"`
	NonconvexObjective float64          `json:"nonconvex_objective"`
	DecompositionGap   float64          `json:"decomposition_gap"`
	TrainingAccuracy   float64          `json:"training_accuracy"`
	// Input is set when the problem came from a data file.
	Input *dataInputJSON `json:"input,omitempty"`
}

// gatedNetJSON holds the gate vectors (P rows of d̃ entries) and the
// blocks W_i (P blocks of d̃ rows of c entries).
type gatedNetJSON struct {
	Gates [][]float64   `json:"gates"`
	W     [][][]float64 `json:"w"`
	Bias  bool          `json:"bias"`
}

// multiNetworkJSON is a ReLU network with c outputs: u holds m rows of d̃
// entries (the neurons), alpha m rows of c output weights.
type multiNetworkJSON struct {
	U     [][]float64 `json:"u"`
	Alpha [][]float64 `json:"alpha"`
	Bias  bool        `json:"bias"`
}

// isGated reports whether a problem asks for the gated program: field
// "gated", or "classes" (multi-class problems are gated).
func (pj *problemJSON) isGated() bool { return pj.Gated || pj.Classes != 0 }

// gatedProblem builds the gated program of a problem file, with its gate
// vectors: X (with the ones column for "bias"), targets (±1 or real values
// for one output; one-hot for "classes" c), the loss ("squared", or
// "softmax" for classes), "groups" ("joint" or "per-class"), β, and "P"
// gates drawn with "seed".
func gatedProblem(pj *problemJSON) (*gated.Problem, *mat.Dense, error) {
	x, err := pj.design()
	if err != nil {
		return nil, nil, err
	}
	n := len(pj.X)
	if len(pj.Y) != n {
		return nil, nil, badInput("problem: field \"y\" has %d entries, X has %d rows", len(pj.Y), n)
	}
	switch {
	case pj.Beta == nil:
		return nil, nil, badInput("problem: field \"beta\" is missing")
	case !(*pj.Beta > 0) || math.IsInf(*pj.Beta, 0):
		return nil, nil, badInput("problem: field \"beta\" = %v, need 0 < β < ∞", *pj.Beta)
	case pj.Eps != 0 || pj.Norm != "" || pj.RobustSampling != nil:
		return nil, nil, badInput("problem: robust training (\"eps\", \"norm\", \"robust_sampling\") is not available for gated programs: their gates are not the network's own patterns")
	case pj.Model != "" && pj.Model != modelReLU:
		return nil, nil, badInput("problem: field \"model\" = %q: gated programs are of two-layer networks (\"relu\")", pj.Model)
	case pj.refuseOtherModelsFields(modelReLU) != nil:
		return nil, nil, pj.refuseOtherModelsFields(modelReLU)
	case pj.D != nil:
		return nil, nil, badInput("problem: a gated program needs its gate vectors: give \"P\" and \"seed\", not \"D\"")
	case pj.P < 1 || pj.Seed == nil:
		return nil, nil, badInput("problem: a gated program needs field \"P\" ≥ 1 (gates) and \"seed\"")
	}
	groups := gated.Joint
	switch pj.Groups {
	case "", "joint":
	case "per-class":
		groups = gated.PerClass
	default:
		return nil, nil, badInput("problem: field \"groups\" = %q, want \"joint\" or \"per-class\"", pj.Groups)
	}
	var t *mat.Dense
	loss := gated.Squared
	switch {
	case pj.Classes == 1 || pj.Classes < 0:
		return nil, nil, badInput("problem: field \"classes\" = %d, need at least 2 (labels 0…c−1)", pj.Classes)
	case pj.Classes >= 2:
		var err error
		if t, err = gated.OneHot(pj.Y, pj.Classes); err != nil {
			return nil, nil, badInput("problem: field \"y\": %v", err)
		}
		switch pj.Loss {
		case "", "softmax":
			loss = gated.Softmax
		case "squared":
		default:
			return nil, nil, badInput("problem: field \"loss\" = %q: a multi-class problem takes \"softmax\" or \"squared\"", pj.Loss)
		}
	default:
		if pj.Loss != "" && pj.Loss != "squared" {
			return nil, nil, badInput("problem: field \"loss\" = %q: a gated problem with one output takes \"squared\" (give \"classes\": 2 and labels 0/1 for \"softmax\")", pj.Loss)
		}
		for k, v := range pj.Y {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return nil, nil, badInput("problem: field \"y\"[%d] is %v", k, v)
			}
		}
		t = mat.NewDense(n, 1, append([]float64(nil), pj.Y...))
	}
	gates, gv, err := solvers.SampleGates(x, pj.P, *pj.Seed, 0)
	if gates, err = sampled(gates, err, ""); err != nil {
		return nil, nil, err
	}
	p := &gated.Problem{X: x, Gates: gates, Targets: t, Loss: loss, Groups: groups, Beta: *pj.Beta}
	if err := p.Validate(); err != nil {
		return nil, nil, badInput("problem: %v", err)
	}
	return p, gv, nil
}

// gatedSolvers are the -solver names of the gated programs' methods.
var gatedSolvers = map[string]gated.Method{"auto": gated.Auto, "kernel": gated.Kernel, "newton": gated.Newton, "fista": gated.ProxGradient}

// solveGatedCommand solves a gated problem: -solver auto
// (gated.Problem.Choose: the kernel method or Newton's for the squared
// loss, proximal gradient otherwise), kernel, newton or fista (the
// accelerated proximal gradient), to -gap (1e-6 by default) within
// -max-iter steps.
func solveGatedCommand(ctx context.Context, pj *problemJSON, input *dataInputJSON, solver string, maxIter int, gap float64, save string, stdout io.Writer, out string) error {
	p, gv, err := gatedProblem(pj)
	if err != nil {
		return err
	}
	m, ok := gatedSolvers[solver]
	if !ok {
		return badInput("solve: -solver %q: gated programs are solved by -solver auto, kernel, newton or fista", solver)
	}
	if (m == gated.Newton || m == gated.Kernel) && p.Loss != gated.Squared {
		return badInput("solve: -solver %s solves gated programs with the squared loss; use -solver fista or auto for %v", solver, p.Loss)
	}
	opt := gated.Options{Tol: gap, MaxIter: maxIter}
	if m == gated.Auto {
		m = p.Choose(opt)
		for name, mm := range gatedSolvers {
			if mm == m && name != "auto" {
				solver = name
			}
		}
	}
	start := time.Now()
	res, err := gated.SolveWith(ctx, p, m, opt)
	if res == nil {
		return err
	}
	status := "optimal"
	tol := gap
	if tol == 0 {
		tol = 1e-6
	}
	switch {
	case errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded):
		status = "interrupted"
	case err != nil:
		return err
	case res.Cert.Gap > tol:
		status = "max_iter"
	}
	dec, err := gated.Decompose(p, gv, res.W, pj.Bias)
	if err != nil {
		return err
	}
	net, err := gated.NewNetwork(gv, res.W, pj.Bias)
	if err != nil {
		return err
	}
	_, _, np, c := p.Dims()
	r := gatedResultJSON{Status: status, Solver: solver, Objective: res.Objective, LowerBound: res.Cert.Lower, UpperBound: res.Cert.Upper,
		CertifiedGap: res.Cert.Gap, Iterations: res.Iterations, Seconds: time.Since(start).Seconds(), Classes: pj.Classes,
		NonconvexObjective: dec.Objective, DecompositionGap: dec.Gap}
	var gt mat.Dense
	gt.CloneFrom(gv.T())
	r.Gated = gatedNetJSON{Gates: rows(&gt), Bias: pj.Bias}
	for i := 0; i < np; i++ {
		r.Gated.W = append(r.Gated.W, rows(res.W[i]))
	}
	var ut mat.Dense
	ut.CloneFrom(dec.Network.U.T())
	r.Network = multiNetworkJSON{U: rows(&ut), Alpha: rows(dec.Network.A), Bias: pj.Bias}
	f, _ := p.Predict(res.W)
	pred := gated.Decide(f)
	right := 0
	for k, v := range pred {
		if (c == 1 && (v >= 0) == (pj.Y[k] > 0)) || (c > 1 && v == pj.Y[k]) {
			right++
		}
	}
	r.TrainingAccuracy = float64(right) / float64(len(pred))
	r.Input = input
	if save != "" {
		file, err := input.file(net, c)
		if c == 1 {
			file, err = input.fileFor(net, pj.Y)
		}
		if err != nil {
			return err
		}
		if err := file.Save(save); err != nil {
			return err
		}
	}
	return writeJSON(stdout, out, r)
}

// fileFor is file for a network with one output, deciding as the labels y
// do: by its sign between the classes −1 and +1, or 0 and 1 (the BCE
// loss's labels), else its value (regression).
func (in *dataInputJSON) fileFor(net any, y []float64) (*netfile.File, error) {
	if isBinary(y) {
		return in.file(net, 1)
	}
	var i netfile.Input
	if in != nil {
		i = netfile.Input{Names: in.Names, Shift: in.Shift, Scale: in.Scale}
	}
	o := netfile.Output{Decision: netfile.Value}
	if slices.IndexFunc(y, func(v float64) bool { return v != 0 && v != 1 }) < 0 {
		o = netfile.Output{Decision: netfile.Sign, Classes: []string{"0", "1"}}
		if in != nil && len(in.Classes) == 2 {
			o.Classes = in.Classes
		}
	}
	return netfile.New(net, i, o)
}

// isBinary reports whether every label is −1 or +1.
func isBinary(y []float64) bool {
	for _, v := range y {
		if v != 1 && v != -1 {
			return false
		}
	}
	return true
}

// probeGated decodes a problem file that asks for the gated program
// (strictly: unknown fields are refused as for any problem); ok is false
// for other problems and for malformed input, which readInput reports.
func probeGated(raw []byte) (*problemJSON, bool, error) {
	var probe struct {
		Gated   bool `json:"gated"`
		Classes int  `json:"classes"`
	}
	if json.Unmarshal(raw, &probe) != nil || (!probe.Gated && probe.Classes == 0) {
		return nil, false, nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	var pj problemJSON
	if err := dec.Decode(&pj); err != nil {
		return nil, true, badInput("problem: %v", err)
	}
	if err := refuseNulls(raw); err != nil {
		return nil, true, err
	}
	return &pj, true, nil
}

// tableProblem turns a data file (CSV or NumPy, labels in labelCol) into a
// problem JSON: the features standardized on the file itself, a bias, the
// loss, β, P patterns drawn with seed; two classes give labels −1/+1 (the
// ReLU program, or the gated one with gated), more give a multi-class
// (gated) problem with "classes".
func tableProblem(path, labelCol, loss string, beta float64, p int, seed uint64, gatedProg bool) ([]byte, *dataInputJSON, error) {
	var set *data.Set
	var err error
	switch strings.ToLower(filepath.Ext(path)) {
	case ".npy", ".npz":
		opt := data.NumPy{}
		if strings.HasSuffix(strings.ToLower(path), ".npz") {
			opt.YKey = labelCol
		} else if labelCol != "" {
			opt.Label = data.ParseColumn(labelCol)
		}
		set, err = data.ReadNumPy(path, opt)
	default:
		delim := ','
		if strings.HasSuffix(strings.ToLower(path), ".tsv") {
			delim = '\t'
		}
		set, err = data.ReadCSV(path, data.CSV{Delimiter: delim, Label: data.ParseColumn(labelCol)})
	}
	if err != nil {
		return nil, nil, err
	}
	if set, _, err = set.Standardize(); err != nil {
		return nil, nil, err
	}
	input := &dataInputJSON{Names: set.Features, Shift: set.Scaling.Shift, Scale: set.Scaling.Scale, Classes: set.Classes}
	pj := problemJSON{Bias: true, Loss: loss, Beta: &beta, P: p, Seed: &seed}
	n, _ := set.Dims()
	for k := 0; k < n; k++ {
		pj.X = append(pj.X, set.X.RawRowView(k))
	}
	if c := set.NumClasses(); c > 2 {
		pj.Classes, pj.Y = c, set.Y
	} else {
		b, err := set.Recode(data.PlusMinus)
		if err != nil {
			return nil, nil, err
		}
		pj.Y, pj.Gated = b.Y, gatedProg
		if pj.Loss == "" {
			pj.Loss = "squared"
		}
	}
	raw, err := json.Marshal(pj)
	return raw, input, err
}

// dataInputJSON says how a data file given as -problem was prepared: its
// feature names, the standardization fitted on it and its class names (the
// first class is −1 of a binary problem, class c index c of a multi-class
// one), so that predict prepares new rows alike.
type dataInputJSON struct {
	Names   []string  `json:"names,omitempty"`
	Shift   []float64 `json:"shift,omitempty"`
	Scale   []float64 `json:"scale,omitempty"`
	Classes []string  `json:"classes,omitempty"`
}

// file wraps a network with the input's scaling and class names (nil: raw
// features, classes named by their labels).
func (in *dataInputJSON) file(net any, outputs int) (*netfile.File, error) {
	o := netfile.Output{Decision: netfile.Sign, Classes: []string{"-1", "1"}}
	if outputs > 1 {
		o = netfile.Output{Decision: netfile.Argmax}
		for j := 0; j < outputs; j++ {
			o.Classes = append(o.Classes, fmt.Sprint(j))
		}
	}
	var i netfile.Input
	if in != nil {
		i = netfile.Input{Names: in.Names, Shift: in.Shift, Scale: in.Scale}
		if len(in.Classes) == len(o.Classes) {
			o.Classes = in.Classes
		}
	}
	return netfile.New(net, i, o)
}
