package solvers

import (
	"errors"
	"fmt"
	"math"

	"gonum.org/v1/gonum/floats"
	"gonum.org/v1/gonum/mat"
)

// Network is a two-layer ReLU network with scalar output,
//
//	f(x) = Σ_j (xᵀ u_j)_+ α_j,
//
// the non-convex model of eq. (nonconvex_general). U is d×m, column j is the
// hidden neuron u_j; Alpha holds the m output weights α_j. When Bias is true
// the model's input is [x; 1], so U has one more row than the raw data has
// columns and the last row of U holds the hidden biases.
type Network struct {
	U     *mat.Dense
	Alpha []float64
	Bias  bool
}

// Width returns the number of hidden neurons m.
func (n *Network) Width() int { return len(n.Alpha) }

// InputDim returns the number of raw input features the network expects.
func (n *Network) InputDim() int {
	d, _ := n.U.Dims()
	if n.Bias {
		return d - 1
	}
	return d
}

// Validate reports a network without a hidden layer, with output weights
// that do not match its neurons, or with a bias but no input feature.
func (n *Network) Validate() error {
	if n == nil || n.U == nil {
		return errors.New("solvers: network has no hidden layer")
	}
	d, m := n.U.Dims()
	if m != len(n.Alpha) {
		return fmt.Errorf("solvers: network has %d hidden neurons but %d output weights", m, len(n.Alpha))
	}
	if n.Bias && d < 2 {
		return errors.New("solvers: network with bias needs at least one input feature")
	}
	return nil
}

// Eval returns f(x) for one raw input x (without the bias entry).
func (n *Network) Eval(x []float64) (float64, error) {
	if err := n.Validate(); err != nil {
		return 0, err
	}
	if len(x) != n.InputDim() {
		return 0, fmt.Errorf("solvers: input has %d features, network expects %d", len(x), n.InputDim())
	}
	d, m := n.U.Dims()
	var f float64
	for j := 0; j < m; j++ {
		var z float64
		for i, xi := range x {
			z += xi * n.U.At(i, j)
		}
		if n.Bias {
			z += n.U.At(d-1, j)
		}
		if z > 0 {
			f += z * n.Alpha[j]
		}
	}
	return f, nil
}

// Predict returns f(x_k) for every row x_k of X (raw features, no bias
// column). The hidden pre-activations are formed as matrix products
// X_B U over blocks B of at most predictBlock rows.
func (n *Network) Predict(x *mat.Dense) ([]float64, error) {
	if err := n.Validate(); err != nil {
		return nil, err
	}
	rows, cols := x.Dims()
	if cols != n.InputDim() {
		return nil, fmt.Errorf("solvers: data has %d features, network expects %d", cols, n.InputDim())
	}
	out := make([]float64, rows)
	d, m := n.U.Dims()
	if rows == 0 || m == 0 {
		return out, nil
	}
	w := n.U.Slice(0, cols, 0, m)
	bs := min(rows, predictBlock)
	z := mat.NewDense(bs, m, nil)
	for r0 := 0; r0 < rows; r0 += bs {
		r1 := min(r0+bs, rows)
		zb := z.Slice(0, r1-r0, 0, m).(*mat.Dense)
		zb.Mul(x.Slice(r0, r1, 0, cols), w)
		for k := r0; k < r1; k++ {
			var f float64
			for j, v := range zb.RawRowView(k - r0) {
				if n.Bias {
					v += n.U.At(d-1, j)
				}
				if v > 0 {
					f += v * n.Alpha[j]
				}
			}
			out[k] = f
		}
	}
	return out, nil
}

// predictBlock is the number of rows whose hidden layer Predict forms at once.
const predictBlock = 512

// Accuracy returns the fraction of points classified right: f(x_k) ≥ 0
// predicts the positive class, y_k > 0 (labels −1/+1 or 0/1).
func Accuracy(pred, y []float64) (float64, error) {
	if err := checkScored(pred, y, "labels", "accuracy"); err != nil {
		return 0, err
	}
	var ok int
	for k := range y {
		if (pred[k] >= 0) == (y[k] > 0) {
			ok++
		}
	}
	return float64(ok) / float64(len(y)), nil
}

// CheckFinite returns an error naming the first NaN or Inf entry of X.
func CheckFinite(name string, x *mat.Dense) error {
	r, c := x.Dims()
	for i := 0; i < r; i++ {
		row := x.RawRowView(i)[:c]
		// The sum of a row is finite when every entry is (or overflows:
		// then the entries are checked one by one).
		if s := floats.Sum(row); !math.IsNaN(s) && !math.IsInf(s, 0) {
			continue
		}
		for j, v := range row {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return fmt.Errorf("%s[%d,%d] is %v", name, i, j, v)
			}
		}
	}
	return nil
}

// MSE returns the mean squared error (1/n) Σ_k (pred_k − y_k)².
func MSE(pred, y []float64) (float64, error) {
	if err := checkScored(pred, y, "targets", "MSE"); err != nil {
		return 0, err
	}
	var s float64
	for k := range y {
		d := pred[k] - y[k]
		s += d * d
	}
	return s / float64(len(y)), nil
}

// checkScored checks that there is one prediction per label (or target)
// and at least one point before a score of them is taken.
func checkScored(pred, y []float64, labels, score string) error {
	if len(pred) != len(y) {
		return fmt.Errorf("solvers: %d predictions for %d %s", len(pred), len(y), labels)
	}
	if len(y) == 0 {
		return fmt.Errorf("solvers: %s of an empty set", score)
	}
	return nil
}
