// Package netfile saves trained networks of every model of the project to
// a versioned file and loads them back bit-identically: JSON (.json) for
// small networks, or a NumPy archive (.npz) whose entry meta.npy holds the
// same JSON (as bytes) with every matrix stored as its own float64 .npy
// array, readable by numpy.load. A file records, beside the weights, how
// raw inputs are prepared (the per-feature scaling fitted on the training
// data) and how scores become classes, so that `convexnn predict` needs
// only the file and raw data.
package netfile

import (
	"errors"
	"fmt"
	"math"

	"github.com/convexnn/convexnn/solvers"
	"github.com/convexnn/convexnn/solvers/batchnorm"
	"github.com/convexnn/convexnn/solvers/cnn"
	"github.com/convexnn/convexnn/solvers/gated"
	"github.com/convexnn/convexnn/solvers/twohidden"
	"gonum.org/v1/gonum/mat"
)

// Format and Version identify the files this package writes; Load refuses
// other versions.
const (
	Format  = "convexnn-network"
	Version = 1
)

// Model is the kind of network a file holds.
type Model int

const (
	ReLU      Model = iota + 1 // solvers.Network: f(x) = Σ_j (xᵀu_j)_+ α_j
	Gated                      // gated.Network, one or more outputs
	BatchNorm                  // batchnorm.Network
	TwoHidden                  // twohidden.Network
	CNN                        // cnn.Network
	MultiReLU                  // solvers.MultiNetwork: c outputs
)

var modelNames = map[Model]string{ReLU: "relu", Gated: "gated", BatchNorm: "batchnorm", TwoHidden: "two-hidden", CNN: "cnn", MultiReLU: "relu-multi"}

func (m Model) String() string {
	if s, ok := modelNames[m]; ok {
		return s
	}
	return fmt.Sprintf("Model(%d)", int(m))
}

func parseModel(s string) (Model, error) {
	for m, name := range modelNames {
		if name == s {
			return m, nil
		}
	}
	return 0, fmt.Errorf("unknown model %q", s)
}

// Decision says how scores become predictions.
type Decision int

const (
	// Sign: one output, class Classes[1] when f(x) ≥ 0, else Classes[0].
	Sign Decision = iota + 1
	// Argmax: c outputs, the class of the largest score.
	Argmax
	// Value: one output, a real value (regression).
	Value
)

var decisionNames = map[Decision]string{Sign: "sign", Argmax: "argmax", Value: "value"}

func (d Decision) String() string {
	if s, ok := decisionNames[d]; ok {
		return s
	}
	return fmt.Sprintf("Decision(%d)", int(d))
}

// Input describes the raw inputs a network takes: their number, optional
// names and image shape, and the scaling x_j ← (x_j − Shift_j)/Scale_j
// fitted on the training data (both nil: none).
type Input struct {
	Features     int
	Names        []string
	Shape        [3]int
	Shift, Scale []float64
}

// Output describes the predictions: the decision rule and the classes'
// names (two for Sign, c for Argmax, none for Value).
type Output struct {
	Decision Decision
	Classes  []string
}

// File is a network with its input and output descriptions. Exactly one
// of the model fields is set, the one Model names.
type File struct {
	Model     Model
	Input     Input
	Output    Output
	ReLU      *solvers.Network
	Gated     *gated.Network
	BatchNorm *batchnorm.Network
	TwoHidden *twohidden.Network
	CNN       *cnn.Network
	MultiReLU *solvers.MultiNetwork
}

// New wraps a trained network (one of the model types above, as a pointer)
// with its input and output descriptions; in.Features is filled in from
// the network when 0.
func New(net any, in Input, out Output) (*File, error) {
	f := &File{Input: in, Output: out}
	switch v := net.(type) {
	case *solvers.Network:
		f.Model, f.ReLU = ReLU, v
	case *gated.Network:
		f.Model, f.Gated = Gated, v
	case *batchnorm.Network:
		f.Model, f.BatchNorm = BatchNorm, v
	case *twohidden.Network:
		f.Model, f.TwoHidden = TwoHidden, v
	case *cnn.Network:
		f.Model, f.CNN = CNN, v
	case *solvers.MultiNetwork:
		f.Model, f.MultiReLU = MultiReLU, v
	default:
		return nil, fmt.Errorf("netfile: cannot save a %T (models: relu, relu-multi, gated, batchnorm, two-hidden, cnn)", net)
	}
	if f.Input.Features == 0 {
		f.Input.Features = f.inputDim()
	}
	if err := f.Validate(); err != nil {
		return nil, err
	}
	return f, nil
}

// inputDim returns the raw features the model takes (0 when unknown).
func (f *File) inputDim() int {
	switch f.Model {
	case ReLU:
		if f.ReLU != nil && f.ReLU.U != nil {
			return f.ReLU.InputDim()
		}
	case Gated:
		if f.Gated != nil && f.Gated.Gates != nil {
			return f.Gated.InputDim()
		}
	case BatchNorm:
		if f.BatchNorm != nil && f.BatchNorm.W != nil {
			d, _ := f.BatchNorm.W.Dims()
			return d
		}
	case TwoHidden:
		if f.TwoHidden != nil && len(f.TwoHidden.Subs) > 0 && f.TwoHidden.Subs[0].W1 != nil {
			d, _ := f.TwoHidden.Subs[0].W1.Dims()
			if f.TwoHidden.Bias {
				d--
			}
			return d
		}
	case CNN:
		if f.CNN != nil {
			s := f.CNN.Shape
			return s.C * s.H * s.W
		}
	case MultiReLU:
		if f.MultiReLU != nil && f.MultiReLU.U != nil {
			return f.MultiReLU.InputDim()
		}
	}
	return 0
}

// outputs returns the number of scores per input.
func (f *File) outputs() int {
	if f.Model == Gated && f.Gated != nil && len(f.Gated.W) > 0 {
		return f.Gated.Outputs()
	}
	if f.Model == MultiReLU && f.MultiReLU != nil && f.MultiReLU.A != nil {
		return f.MultiReLU.Outputs()
	}
	return 1
}

// Validate reports a file whose parts do not fit together: the model's
// own checks, an input description of another width, a scaling of another
// length or not positive and finite, a decision rule that does not match
// the outputs or the classes.
func (f *File) Validate() error {
	var err error
	switch f.Model {
	case ReLU:
		if f.ReLU == nil {
			return errors.New("netfile: relu model without its network")
		}
		err = f.ReLU.Validate()
	case Gated:
		if f.Gated == nil {
			return errors.New("netfile: gated model without its network")
		}
		err = f.Gated.Validate()
	case BatchNorm:
		err = validBatchNorm(f.BatchNorm)
	case TwoHidden:
		err = validTwoHidden(f.TwoHidden)
	case CNN:
		err = validCNN(f.CNN)
	case MultiReLU:
		if f.MultiReLU == nil {
			return errors.New("netfile: relu-multi model without its network")
		}
		err = f.MultiReLU.Validate()
	default:
		return fmt.Errorf("netfile: unknown model %v", f.Model)
	}
	if err != nil {
		return fmt.Errorf("netfile: %v network: %w", f.Model, err)
	}
	if d := f.inputDim(); f.Input.Features != d {
		return fmt.Errorf("netfile: input has %d features, the %v network takes %d", f.Input.Features, f.Model, d)
	}
	if f.Input.Names != nil && len(f.Input.Names) != f.Input.Features {
		return fmt.Errorf("netfile: %d feature names for %d features", len(f.Input.Names), f.Input.Features)
	}
	if (f.Input.Shift == nil) != (f.Input.Scale == nil) || f.Input.Shift != nil && (len(f.Input.Shift) != f.Input.Features || len(f.Input.Scale) != f.Input.Features) {
		return fmt.Errorf("netfile: scaling has %d shifts and %d scales for %d features", len(f.Input.Shift), len(f.Input.Scale), f.Input.Features)
	}
	for j, s := range f.Input.Scale {
		if !(s > 0) || math.IsInf(s, 0) || math.IsNaN(f.Input.Shift[j]) || math.IsInf(f.Input.Shift[j], 0) {
			return fmt.Errorf("netfile: scaling of feature %d is (x − %v)/%v: need a finite shift and a positive finite scale", j, f.Input.Shift[j], s)
		}
	}
	c := f.outputs()
	switch f.Output.Decision {
	case Sign:
		if c != 1 || len(f.Output.Classes) != 2 {
			return fmt.Errorf("netfile: decision sign needs 1 output and 2 classes, the file has %d outputs and %d classes", c, len(f.Output.Classes))
		}
	case Argmax:
		if c < 2 || len(f.Output.Classes) != c {
			return fmt.Errorf("netfile: decision argmax needs one class per output (≥ 2), the file has %d outputs and %d classes", c, len(f.Output.Classes))
		}
	case Value:
		if c != 1 || len(f.Output.Classes) != 0 {
			return fmt.Errorf("netfile: decision value needs 1 output and no classes, the file has %d outputs and %d classes", c, len(f.Output.Classes))
		}
	default:
		return fmt.Errorf("netfile: unknown decision %v", f.Output.Decision)
	}
	return nil
}

func validBatchNorm(n *batchnorm.Network) error {
	if n == nil || n.W == nil {
		return errors.New("no first layer")
	}
	_, m := n.W.Dims()
	for name, v := range map[string][]float64{"mean": n.Mean, "scale": n.Scale, "gamma": n.Gamma, "alpha": n.Alpha, "a": n.A} {
		if len(v) != m {
			return fmt.Errorf("%s has %d entries for %d neurons", name, len(v), m)
		}
	}
	if n.N < 1 {
		return fmt.Errorf("batch size %d", n.N)
	}
	return nil
}

func validTwoHidden(n *twohidden.Network) error {
	if n == nil || len(n.Subs) == 0 {
		return errors.New("no sub-network")
	}
	d := -1
	for k, s := range n.Subs {
		if s.W1 == nil {
			return fmt.Errorf("sub-network %d has no first layer", k)
		}
		r, m1 := s.W1.Dims()
		if d >= 0 && r != d {
			return fmt.Errorf("sub-network %d takes %d inputs, sub-network 0 %d", k, r, d)
		}
		d = r
		if len(s.W2) != m1 {
			return fmt.Errorf("sub-network %d has %d first-layer units but %d second-layer weights", k, m1, len(s.W2))
		}
	}
	if n.Bias && d < 2 {
		return errors.New("bias without input features")
	}
	return nil
}

func validCNN(n *cnn.Network) error {
	if n == nil || n.U == nil {
		return errors.New("no filters")
	}
	if err := n.Conv.Validate(n.Shape); err != nil {
		return err
	}
	if n.Pool != cnn.AvgPool && n.Pool != cnn.MaxPool {
		return fmt.Errorf("unknown pooling %v", n.Pool)
	}
	f, m := n.U.Dims()
	want := n.Shape.C * n.Conv.Size * n.Conv.Size
	if n.Conv.Bias {
		want++
	}
	if f != want {
		return fmt.Errorf("filters have %d entries, the geometry %d", f, want)
	}
	if len(n.Alpha) != m {
		return fmt.Errorf("%d filters but %d output weights", m, len(n.Alpha))
	}
	return nil
}

// Prepare applies the input scaling to raw rows x (a new matrix).
func (f *File) Prepare(x *mat.Dense) (*mat.Dense, error) {
	if x == nil {
		return nil, errors.New("netfile: no data")
	}
	n, d := x.Dims()
	if d != f.Input.Features {
		return nil, fmt.Errorf("netfile: the data has %d features, the network takes %d", d, f.Input.Features)
	}
	if err := solvers.CheckFinite("netfile: data", x); err != nil {
		return nil, err
	}
	out := mat.DenseCopyOf(x)
	if f.Input.Shift == nil {
		return out, nil
	}
	for k := 0; k < n; k++ {
		row := out.RawRowView(k)
		for j := range row {
			row[j] = (row[j] - f.Input.Shift[j]) / f.Input.Scale[j]
		}
	}
	return out, nil
}

// Scores returns the network's outputs on raw rows x (n×c; c = 1 for the
// scalar models), after the input scaling.
func (f *File) Scores(x *mat.Dense) (*mat.Dense, error) {
	if err := f.Validate(); err != nil {
		return nil, err
	}
	xp, err := f.Prepare(x)
	if err != nil {
		return nil, err
	}
	switch f.Model {
	case Gated:
		return f.Gated.Scores(xp)
	case MultiReLU:
		return f.MultiReLU.Scores(xp)
	}
	var s []float64
	switch f.Model {
	case ReLU:
		s, err = f.ReLU.Predict(xp)
	case BatchNorm:
		s, err = f.BatchNorm.Predict(xp)
	case TwoHidden:
		s, err = f.TwoHidden.Predict(xp)
	case CNN:
		s, err = f.CNN.Predict(xp)
	}
	if err != nil {
		return nil, err
	}
	return mat.NewDense(len(s), 1, s), nil
}

// Classes returns the predicted class index of every row of the scores
// (Sign: 1 when f ≥ 0; Argmax: the largest score, the first on ties); nil
// for Value.
func (f *File) Classes(scores *mat.Dense) []int {
	n, _ := scores.Dims()
	switch f.Output.Decision {
	case Sign:
		out := make([]int, n)
		for k := range out {
			if scores.At(k, 0) >= 0 {
				out[k] = 1
			}
		}
		return out
	case Argmax:
		d := gated.Decide(scores)
		out := make([]int, n)
		for k, v := range d {
			out[k] = int(v)
		}
		return out
	}
	return nil
}
