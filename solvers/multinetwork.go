package solvers

import (
	"errors"
	"fmt"
	"sync"

	"gonum.org/v1/gonum/mat"
)

// MultiNetwork is a two-layer ReLU network with c outputs,
//
//	f(x) = Σ_j (x̃ᵀu_j)_+ a_j,   x̃ = [x; 1] with Bias, x otherwise,
//
// the vector-output model of a multi-class problem: U is d̃×m (column j
// is the hidden neuron u_j), A is m×c (row j its output weights a_jᵀ). The
// predicted class is the largest output.
type MultiNetwork struct {
	U, A *mat.Dense
	Bias bool
}

// Width returns the number of hidden neurons m.
func (n *MultiNetwork) Width() int { _, m := n.U.Dims(); return m }

// Outputs returns c.
func (n *MultiNetwork) Outputs() int { _, c := n.A.Dims(); return c }

// InputDim returns the number of raw features the network takes.
func (n *MultiNetwork) InputDim() int {
	d, _ := n.U.Dims()
	if n.Bias {
		return d - 1
	}
	return d
}

// Validate reports a network whose layers do not fit together.
func (n *MultiNetwork) Validate() error {
	if n == nil || n.U == nil || n.A == nil {
		return errors.New("solvers: multi-output network without its layers")
	}
	d, m := n.U.Dims()
	if am, _ := n.A.Dims(); am != m {
		return fmt.Errorf("solvers: multi-output network has %d hidden neurons but %d rows of output weights", m, am)
	}
	if n.Bias && d < 2 {
		return errors.New("solvers: network with bias needs at least one input feature")
	}
	if err := CheckFinite("solvers: U", n.U); err != nil {
		return err
	}
	return CheckFinite("solvers: A", n.A)
}

// Scores returns f(x_k) for every row of x (raw features), n×c.
func (n *MultiNetwork) Scores(x *mat.Dense) (*mat.Dense, error) {
	if err := n.Validate(); err != nil {
		return nil, err
	}
	if x == nil {
		return nil, errors.New("solvers: no data")
	}
	rows, d := x.Dims()
	if d != n.InputDim() {
		return nil, fmt.Errorf("solvers: data has %d features, the network takes %d", d, n.InputDim())
	}
	if err := CheckFinite("solvers: X", x); err != nil {
		return nil, err
	}
	var h mat.Dense
	h.Mul(x, n.U.Slice(0, d, 0, n.Width()))
	if n.Bias {
		b := n.U.RawRowView(d)
		for k := 0; k < rows; k++ {
			row := h.RawRowView(k)
			for j := range row {
				row[j] += b[j]
			}
		}
	}
	for k := 0; k < rows; k++ {
		row := h.RawRowView(k)
		for j, v := range row {
			if v < 0 {
				row[j] = 0
			}
		}
	}
	f := mat.NewDense(rows, n.Outputs(), nil)
	f.Mul(&h, n.A)
	return f, nil
}

// Predict returns each row's predicted class, the index of its largest
// output (the first on ties), or its score when the network has one
// output.
func (n *MultiNetwork) Predict(x *mat.Dense) ([]float64, error) {
	f, err := n.Scores(x)
	if err != nil {
		return nil, err
	}
	if n.Outputs() == 1 {
		return mat.Col(nil, 0, f), nil
	}
	return ArgmaxRows(f), nil
}

// ArgmaxRows returns the index of each row's largest entry (the first on
// ties), as float64 class labels.
func ArgmaxRows(f *mat.Dense) []float64 {
	r, _ := f.Dims()
	out := make([]float64, r)
	for k := 0; k < r; k++ {
		row := f.RawRowView(k)
		best := 0
		for j, v := range row {
			if v > row[best] {
				best = j
			}
		}
		out[k] = float64(best)
	}
	return out
}

// WithOnes returns x with a column of ones appended: the input [x; 1] of a
// network whose neurons have biases.
func WithOnes(x *mat.Dense) *mat.Dense {
	n, d := x.Dims()
	a := mat.NewDense(n, d+1, nil)
	// Two halves at once on large data: most of the time goes to the
	// first touch of the new memory (Table 2's 74 MB: 50 ms alone).
	fill := func(k0, k1 int) {
		for k := k0; k < k1; k++ {
			row := a.RawRowView(k)
			copy(row, x.RawRowView(k))
			row[d] = 1
		}
	}
	if n*d < 1<<20 {
		fill(0, n)
		return a
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); fill(0, n/2) }()
	fill(n/2, n)
	wg.Wait()
	return a
}
