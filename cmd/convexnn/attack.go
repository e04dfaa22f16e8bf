package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"io"
	"math"
	"os"

	"github.com/convexnn/convexnn/solvers"
	"github.com/convexnn/convexnn/solvers/backprop"
	"gonum.org/v1/gonum/mat"
)

// attackJSON is the output of `convexnn attack`.
type attackJSON struct {
	CleanAccuracy    float64 `json:"clean_accuracy"`
	AttackedAccuracy float64 `json:"attacked_accuracy"`
	Method           string  `json:"method"`
	Eps              float64 `json:"eps"`
	Norm             string  `json:"norm"`
	Steps            int     `json:"steps,omitempty"` // PGD's T
	Loss             string  `json:"loss"`
	N                int     `json:"n"`
}

const attackUsage = "usage: convexnn attack -network result.json -data problem.json -method pgd|fgsm -eps E [-norm inf|2] [-steps T]"

// attackCommand attacks the network of a `convexnn solve` result on the data
// of a problem file: the accuracy on X and on X + Δ, Δ from FGSM or PGD
// (eq. PGD) on the problem's loss in the ball ‖δ_k‖ ≤ ε, each point's
// strongest iterate kept (backprop.AttackOptions.KeepBest), so the attacked
// accuracy is at most the clean one for the classification losses.
func attackCommand(ctx context.Context, args []string, stdout io.Writer) error {
	fs := quietFlags("attack")
	netFile := fs.String("network", "", "result JSON of convexnn solve (its \"network\")")
	dataFile := fs.String("data", "", "problem JSON (X, y, loss; - for stdin)")
	method := fs.String("method", "", "pgd or fgsm")
	eps := fs.Float64("eps", 0, "radius ε ≥ 0 of the perturbation ball")
	norm := fs.String("norm", "inf", "ball: inf (‖δ‖_∞ ≤ ε) or 2 (‖δ‖₂ ≤ ε)")
	steps := fs.Int("steps", 0, "PGD steps T (0: the paper's 40)")
	if err := fs.Parse(args); err != nil {
		return badInput("attack: %v\n%s", err, attackUsage)
	}
	if fs.NArg() > 0 {
		return badInput("attack: unexpected argument %q\n%s", fs.Arg(0), attackUsage)
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	switch {
	case *netFile == "":
		return badInput("attack: -network is required\n%s", attackUsage)
	case *dataFile == "":
		return badInput("attack: -data is required\n%s", attackUsage)
	case *netFile == "-" && *dataFile == "-":
		return badInput("attack: -network and -data cannot both be stdin")
	case !set["eps"]:
		return badInput("attack: -eps is required\n%s", attackUsage)
	}
	switch *method {
	case "pgd", "fgsm":
	case "":
		return badInput("attack: -method is required (pgd or fgsm)\n%s", attackUsage)
	default:
		return badInput("attack: -method %q: use pgd or fgsm", *method)
	}
	if !(*eps >= 0) || math.IsInf(*eps, 0) {
		return badInput("attack: -eps %v: need 0 ≤ ε < ∞", *eps)
	}
	if *norm != "inf" && *norm != "2" {
		return badInput("attack: -norm %q: use inf or 2", *norm)
	}
	if *steps < 0 {
		return badInput("attack: -steps %d: need T ≥ 1 (0 for the default 40)", *steps)
	}
	if set["steps"] && *method != "pgd" {
		return badInput("attack: -steps is a PGD option (FGSM takes one step of size ε)")
	}
	net, err := readFile(*netFile, readNetwork)
	if err != nil {
		return err
	}
	data, err := readFile(*dataFile, readAttackData)
	if err != nil {
		return err
	}
	x, y, loss := data.x, data.y, data.loss
	n, d0 := x.Dims()
	if net.Width() > 0 && net.InputDim() != d0 {
		return badInput("attack: the network takes %d features (bias %v), the data has %d", net.InputDim(), net.Bias, d0)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	res := attackJSON{Method: *method, Eps: *eps, Norm: *norm, Loss: loss.String(), N: n}
	if *method == "pgd" {
		res.Steps = *steps
		if res.Steps == 0 {
			res.Steps = 40
		}
	}
	if net.Width() == 0 {
		// f ≡ 0 predicts +1 everywhere, whatever the perturbation.
		res.CleanAccuracy, err = solvers.Accuracy(make([]float64, n), y)
		res.AttackedAccuracy = res.CleanAccuracy
	} else {
		o := backprop.AttackOptions{Norm: solvers.Norm(*norm), Eps: *eps, Steps: *steps, Loss: loss, KeepBest: true}
		if res.CleanAccuracy, err = backprop.RobustAccuracy(net, x, y, backprop.NoAdversary, o); err == nil {
			res.AttackedAccuracy, err = backprop.RobustAccuracy(net, x, y, backprop.Adversary(*method), o)
		}
	}
	if err != nil {
		return err
	}
	enc := json.NewEncoder(stdout)
	enc.SetIndent("", " ")
	return enc.Encode(res)
}

// readFile opens name (- for stdin) and parses it with parse.
func readFile[T any](name string, parse func(io.Reader) (T, error)) (T, error) {
	if name == "-" {
		return parse(os.Stdin)
	}
	f, err := os.Open(name)
	if err != nil {
		var zero T
		return zero, badInput("attack: %v", err)
	}
	defer f.Close()
	return parse(f)
}

// readNetwork reads the "network" of a result file: u is m rows of d
// entries (the raw features, then the bias entry when "bias"), alpha m
// output weights.
func readNetwork(r io.Reader) (*solvers.Network, error) {
	var res struct {
		Network *networkJSON `json:"network"`
		Model   string       `json:"model"`
	}
	if err := json.NewDecoder(r).Decode(&res); err != nil {
		return nil, badInput("network: not a convexnn solve result: %v", err)
	}
	if res.Model != "" && res.Model != modelReLU {
		// Its "network" is not the model's network on the data (the
		// filters as rows, or the network on the BN features): reading it
		// as a two-layer ReLU network would give wrong numbers.
		return nil, badInput("network: the result of a %q solve: its field \"network\" is not a two-layer ReLU network on the data; this command takes the results of two-layer ReLU and gated solves; convexnn solve -save FILE writes the %s network for convexnn predict", res.Model, res.Model)
	}
	if res.Network == nil {
		return nil, badInput("network: field \"network\" is missing (give the result file of convexnn solve)")
	}
	return res.Network.network()
}

// network is the two-layer ReLU network of a result's "network", checked.
func (nj *networkJSON) network() (*solvers.Network, error) {
	m := len(nj.U)
	if len(nj.Alpha) != m {
		return nil, badInput("network: field \"network\".\"u\" has %d rows but \"alpha\" has %d entries", m, len(nj.Alpha))
	}
	for j, a := range nj.Alpha {
		if math.IsNaN(a) || math.IsInf(a, 0) {
			return nil, badInput("network: field \"network\".\"alpha\"[%d] is %v", j, a)
		}
	}
	if m == 0 {
		return &solvers.Network{Bias: nj.Bias}, nil
	}
	d := len(nj.U[0])
	if need := 1 + b2i(nj.Bias); d < need {
		return nil, badInput("network: field \"network\".\"u\": rows have %d entries, need at least %d (bias %v)", d, need, nj.Bias)
	}
	u := mat.NewDense(d, m, nil)
	for j, row := range nj.U {
		if len(row) != d {
			return nil, badInput("network: field \"network\".\"u\": row %d has %d entries, row 0 has %d", j, len(row), d)
		}
		for i, v := range row {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return nil, badInput("network: field \"network\".\"u\"[%d][%d] is %v", j, i, v)
			}
			u.Set(i, j, v)
		}
	}
	return &solvers.Network{U: u, Alpha: nj.Alpha, Bias: nj.Bias}, nil
}

// attackData is what readAttackData returns.
type attackData struct {
	x    *mat.Dense
	y    []float64
	loss solvers.Loss
}

// readAttackData reads X, y and the loss of a problem file through
// readProblem; the fields of the convex program ("D", "P", "seed", "eps",
// "norm", "robust_sampling") are not used. X is returned without the bias column. The labels must be
// classes: −1/+1 (0/1 for BCE).
func readAttackData(r io.Reader) (attackData, error) {
	raw, err := io.ReadAll(r)
	if err != nil {
		return attackData{}, err
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil {
		// readProblem names the problem precisely.
		_, perr := readProblem(bytes.NewReader(raw), false)
		if perr == nil {
			perr = badInput("problem: %v", err)
		}
		return attackData{}, perr
	}
	for _, k := range []string{"D", "P", "seed", "eps", "norm", "robust_sampling"} {
		delete(fields, k)
	}
	clean, err := json.Marshal(fields)
	if err != nil {
		return attackData{}, err
	}
	p, err := readProblem(bytes.NewReader(clean), false)
	if err != nil {
		return attackData{}, err
	}
	n, d := p.X.Dims()
	if p.Bias {
		d--
	}
	x := mat.DenseCopyOf(p.X.Slice(0, n, 0, d))
	for k, v := range p.Y {
		if !validLabel(p.Loss, v) {
			want := "−1 or +1"
			if p.Loss == solvers.BCELoss {
				want = "0 or 1"
			}
			return attackData{}, badInput("problem: field \"y\"[%d] = %v: accuracy needs class labels %s", k, v, want)
		}
	}
	return attackData{x: x, y: p.Y, loss: p.Loss}, nil
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}
