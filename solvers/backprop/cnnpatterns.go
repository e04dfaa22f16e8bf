package backprop

import (
	"context"
	"errors"
	"fmt"
	"math"

	"github.com/convexnn/convexnn/solvers/cnn"
	"gonum.org/v1/gonum/mat"
)

// CNNPatterns finds patterns for the CNN program p (average or max
// pooling, standard) by back-prop on the architecture itself: a CNN of width
// filters (NewCNNModel, Gaussian start from seed) trained by full-batch Adam
// (learning rate lr, epochs steps) on p's images, labels, loss and β, whose
// nonzero filters then add their patterns to p (cnn.Problem.AddPattern).
// It returns the number of patterns added and the trained network's
// objective ℓ(f(X), y) + (β/2)(‖U‖_F² + ‖α‖²).
//
// The trained network is then a point of the program: filter j goes to
// group w (α_j > 0) or w′ (α_j < 0) of its pattern as |α_j|u_j, with the same
// outputs, and β|α_j|‖u_j‖ ≤ (β/2)(‖u_j‖² + α_j²). So the program's optimum
// over p's patterns is at most the returned objective: the certified
// optimum starts where back-prop ended, and pattern generation
// (cnn.Problem.SolveGenerating) continues from there. Random filters'
// patterns fix winners (max pooling) and signs that no trained filter has:
// on 2000 MNIST digits the sampled patterns' optimum stays 2–2.5× back-prop's
// objective at the same width after rounds of generation. ctx stops the
// training between steps; the patterns of the filters so far are added all
// the same.
func CNNPatterns(ctx context.Context, p *cnn.Problem, width, epochs int, lr float64, seed uint64) (int, float64, error) {
	switch {
	case p == nil:
		return 0, 0, errors.New("backprop: CNNPatterns: no problem")
	case width < 1:
		return 0, 0, fmt.Errorf("backprop: CNNPatterns: %d filters, need ≥ 1", width)
	case p.MaxRobust == cnn.WinnerBound:
		return 0, 0, errors.New("backprop: CNNPatterns: the winner bound's patterns come from its own bound (BoundPatterns)")
	}
	m, err := NewCNNModel(p.X, p.Y, p.Shape, p.Conv, p.Pool, p.Loss, p.Beta, width, seed)
	if err != nil {
		return 0, 0, fmt.Errorf("backprop: CNNPatterns: %w", err)
	}
	_, stop := Minimize(ctx, m, lr, epochs)
	if stop != nil && ctx.Err() == nil {
		return 0, 0, fmt.Errorf("backprop: CNNPatterns: %w", stop)
	}
	net := m.Network()
	obj, err := net.Objective(p.X, p.Y, p.Loss, p.Beta)
	if err != nil {
		return 0, 0, fmt.Errorf("backprop: CNNPatterns: %w", err)
	}
	if math.IsNaN(obj) || math.IsInf(obj, 0) {
		return 0, obj, fmt.Errorf("backprop: CNNPatterns: the training diverged (objective %v after %d steps at learning rate %v: try a smaller one)", obj, epochs, lr)
	}
	f, _ := net.U.Dims()
	filters := mat.NewDense(width, f, nil)
	filters.Copy(net.U.T())
	added, err := addFilterPatterns(filters.RawMatrix().Data, f, p.AddPattern)
	if err != nil {
		return added, obj, fmt.Errorf("backprop: CNNPatterns: %w", err)
	}
	return added, obj, stop
}

// The training that the notebook facade and the command line give
// BoundPatterns and CNNPatterns: full-batch Adam for PatternSteps steps at
// learning rate PatternRate, and BoundPatterns' best of PatternStarts
// starts.
const (
	PatternSteps  = 1000
	PatternRate   = 0.02
	PatternStarts = 3
)
