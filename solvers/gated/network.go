package gated

import (
	"errors"
	"fmt"

	"github.com/convexnn/convexnn/solvers"
	"gonum.org/v1/gonum/mat"
)

// Network is a gated ReLU network with c outputs,
//
//	f(x) = Σ_i 1[x̃ᵀg_i ≥ 0] W_iᵀ x̃,   x̃ = [x; 1] with Bias, x otherwise,
//
// the model of the gated program: Gates holds the gate vectors g_i as
// columns (d̃×P) and W the output blocks W_i (d̃×c). With c ≥ 2 outputs the
// predicted class is the largest score.
type Network struct {
	Gates *mat.Dense
	W     Weights
	Bias  bool
}

// NewNetwork returns the network of a solution of the program whose gates
// were drawn by the columns of gates (solvers.SampleGates on the same X).
func NewNetwork(gates *mat.Dense, w Weights, bias bool) (*Network, error) {
	net := &Network{Gates: gates, W: w, Bias: bias}
	return net, net.Validate()
}

// Validate reports a network whose gates and blocks do not match.
func (net *Network) Validate() error {
	if net == nil || net.Gates == nil || len(net.W) == 0 {
		return errors.New("gated: network without gates or weights")
	}
	d, np := net.Gates.Dims()
	if np != len(net.W) {
		return fmt.Errorf("gated: network has %d gates but %d weight blocks", np, len(net.W))
	}
	if net.W[0] == nil {
		return errors.New("gated: weight block 0 is missing")
	}
	_, c := net.W[0].Dims()
	if err := checkWeights(net.W, np, d, c); err != nil {
		return err
	}
	if net.Bias && d < 2 {
		return errors.New("gated: network with bias needs at least one input feature")
	}
	return solvers.CheckFinite("gated: gates", net.Gates)
}

// InputDim returns the number of raw features the network takes.
func (net *Network) InputDim() int {
	d, _ := net.Gates.Dims()
	if net.Bias {
		return d - 1
	}
	return d
}

// Outputs returns c.
func (net *Network) Outputs() int { _, c := net.W[0].Dims(); return c }

// Width returns the number of gates with a nonzero block (active neurons).
func (net *Network) Width() int {
	k := 0
	for _, b := range net.W {
		if mat.Norm(b, 2) > 0 {
			k++
		}
	}
	return k
}

// Scores returns f(x_k) for every row of x (raw features), n×c.
func (net *Network) Scores(x *mat.Dense) (*mat.Dense, error) {
	if err := net.Validate(); err != nil {
		return nil, err
	}
	if x == nil {
		return nil, errors.New("gated: no data")
	}
	n, d := x.Dims()
	if d != net.InputDim() {
		return nil, fmt.Errorf("gated: data has %d features, the network takes %d", d, net.InputDim())
	}
	if err := solvers.CheckFinite("gated: X", x); err != nil {
		return nil, err
	}
	xt := x
	if net.Bias {
		xt = solvers.WithOnes(x)
	}
	// Row blocks of at most scoreBlock rows: the gates' responses and all
	// blocks' outputs X̃_B[W_1 … W_P] in one product each.
	_, c := net.W[0].Dims()
	np := len(net.W)
	d1, _ := net.Gates.Dims()
	wall := mat.NewDense(d1, np*c, nil)
	for i, b := range net.W {
		wall.Slice(0, d1, i*c, (i+1)*c).(*mat.Dense).Copy(b)
	}
	f := mat.NewDense(n, c, nil)
	var z, out mat.Dense
	for lo := 0; lo < n; lo += scoreBlock {
		hi := min(n, lo+scoreBlock)
		xb := xt.Slice(lo, hi, 0, d1)
		z.Reset()
		z.Mul(xb, net.Gates)
		out.Reset()
		out.Mul(xb, wall)
		for k := lo; k < hi; k++ {
			zr, or, fr := z.RawRowView(k-lo), out.RawRowView(k-lo), f.RawRowView(k)
			for i := 0; i < np; i++ {
				if zr[i] >= 0 {
					floats64Add(fr, or[i*c:(i+1)*c])
				}
			}
		}
	}
	return f, nil
}

// scoreBlock is the number of rows Scores forms at once.
const scoreBlock = 4096

// Predict returns, per row, the score of a one-output network or the
// predicted class (index of the largest score) of a multi-output one.
func (net *Network) Predict(x *mat.Dense) ([]float64, error) {
	f, err := net.Scores(x)
	if err != nil {
		return nil, err
	}
	return Decide(f), nil
}

// Decide returns the scores' single column, or each row's class (the
// index of its largest score, the first on ties).
func Decide(f *mat.Dense) []float64 {
	if _, c := f.Dims(); c > 1 {
		return solvers.ArgmaxRows(f)
	}
	return mat.Col(nil, 0, f)
}
