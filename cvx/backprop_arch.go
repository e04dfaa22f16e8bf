package cvx

import (
	"context"
	"errors"
	"fmt"

	"github.com/convexnn/convexnn/solvers"
	"github.com/convexnn/convexnn/solvers/backprop"
)

// BackpropArchitecture trains the problem's architecture (BatchNorm, Conv
// or TwoHidden) by back-propagation, full-batch Adam with learning rate lr
// (0: 0.02) for epochs steps from a Gaussian initialization (seed): width
// is its hidden neurons (BatchNorm), filters (Conv) or sub-networks
// (TwoHidden, each with the problem's first-layer width, projected onto
// the unit ball). It returns the network and its training objective, the
// same objective the convex program's recovered network is measured by.
// On a robust Conv problem (Robust(ε, LInf)) it trains by GD-PGD
// (backprop.AdversarialCNN: every step attacks every image with 10 PGD
// steps in the ε-ball first), and the objective returned is the standard
// one on the clean images.
func BackpropArchitecture(ctx context.Context, p *Problem, width, epochs int, lr float64, seed uint64) (Predictor, float64, error) {
	if err := p.Err(); err != nil {
		return nil, 0, err
	}
	if lr == 0 {
		lr = 0.02
	}
	loss, err := solvers.ParseLoss(string(p.loss))
	if err != nil {
		return nil, 0, err
	}
	y := p.targets()
	var m backprop.Model
	var result func() (Predictor, float64, error)
	switch {
	case p.bn:
		bm, err := backprop.NewBNModel(p.x, y, loss, p.beta, width, seed)
		if err != nil {
			return nil, 0, err
		}
		m = bm
		result = func() (Predictor, float64, error) {
			net := bm.Network()
			obj, err := net.Objective(p.x, y, loss, p.beta)
			return net, obj, err
		}
	case p.conv != nil:
		conv := p.conv.conv
		conv.Bias = p.bias
		cm, err := backprop.NewCNNModel(p.x, y, p.conv.shape, conv, p.conv.pool, loss, p.beta, width, seed)
		if err != nil {
			return nil, 0, err
		}
		m = cm
		result = func() (Predictor, float64, error) {
			net := cm.Network()
			obj, err := net.Objective(p.x, y, loss, p.beta)
			return net, obj, err
		}
		if p.robust() {
			if p.Perturbation().Norm != solvers.LInf {
				return nil, 0, errors.New("cvx: BackpropArchitecture: GD-PGD on a CNN attacks in the ℓ∞ ball (Robust(ε, cvx.LInf))")
			}
			if _, err := backprop.AdversarialCNN(ctx, cm, p.x, p.Perturbation().Eps, 10, lr, epochs); err != nil {
				return nil, 0, fmt.Errorf("cvx: BackpropArchitecture: %w", err)
			}
			return result()
		}
	case p.twoHidden > 0:
		tm, err := backprop.NewTwoHiddenModel(p.design(), y, loss, p.beta, width, p.twoHidden, seed)
		if err != nil {
			return nil, 0, err
		}
		m = tm
		result = func() (Predictor, float64, error) {
			net := tm.Network()
			net.Bias = p.bias
			obj, err := net.Objective(p.x, y, loss, p.beta)
			return net, obj, err
		}
	default:
		return nil, 0, errors.New("cvx: BackpropArchitecture is for BatchNorm, Conv and TwoHidden problems; the two-layer network's back-prop is a run: cvx.Start(name, problem, cvx.Backprop{…})")
	}
	if _, err := backprop.Minimize(ctx, m, lr, epochs); err != nil {
		return nil, 0, fmt.Errorf("cvx: BackpropArchitecture: %w", err)
	}
	return result()
}
