package paper

import (
	"errors"

	"github.com/convexnn/convexnn/cvx"
	"github.com/convexnn/convexnn/data"
	"github.com/convexnn/convexnn/plots"
)

// Curve is a training run's learning curves against wall time: the
// training loss l^{u,α} of the recovered network and the validation
// accuracy (%) after each iteration, and their last values.
type Curve struct {
	Name                   string
	Loss, Accuracy         plots.Series
	LastLoss, LastAccuracy float64 // LastAccuracy a fraction
	Seconds                float64 // of the iterations
}

// TrainCurve starts the run called run (in dir) of method m on prob for
// iters iterations, scoring the network on the validation set va after
// each, and returns its curves named name (fig. Tab4 and notebook 05's
// comparison of ADMM variants).
func TrainCurve(dir cvx.RunDir, run, name string, prob *cvx.Problem, m cvx.Method, va *data.Set, iters int) (*Curve, error) {
	if va == nil {
		return nil, errors.New("paper: TrainCurve needs a validation set")
	}
	r := dir.Start(run, prob, m)
	r.Quiet = true
	var scoreErr error
	r.Validate = func(net *cvx.Network) (float64, bool) {
		acc, err := cvx.Accuracy(net, va.X, va.Y)
		if err != nil && scoreErr == nil {
			scoreErr = err
		}
		return acc, false
	}
	if err := r.Iterate(iters); err != nil {
		return nil, err
	}
	if scoreErr != nil {
		return nil, scoreErr
	}
	h := r.History()
	if len(h) == 0 {
		return nil, errors.New("paper: TrainCurve: no iterations")
	}
	c := &Curve{Name: name, Loss: plots.Series{Name: name}, Accuracy: plots.Series{Name: name}}
	for _, p := range h {
		c.Loss.X, c.Loss.Y = append(c.Loss.X, p.Seconds), append(c.Loss.Y, p.Nonconvex)
		c.Accuracy.X, c.Accuracy.Y = append(c.Accuracy.X, p.Seconds), append(c.Accuracy.Y, 100*p.Validation)
	}
	last := h[len(h)-1]
	c.LastAccuracy, c.LastLoss, c.Seconds = last.Validation, last.Nonconvex, last.Seconds
	return c, nil
}
