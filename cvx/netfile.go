package cvx

import (
	"fmt"

	"github.com/convexnn/convexnn/data"
	"github.com/convexnn/convexnn/solvers/netfile"
)

// SaveNetwork saves a trained network (any model of the project) to path,
// .json or .npz (package solvers/netfile), with what predicting on new raw
// data needs, taken from its training set: the feature names, the image
// shape, the scaling fitted on it (data.Set.Scaling) and the class names.
// The decision rule follows the network: the largest of c outputs for a
// multi-class network, the sign for a binary one, a value for regression.
func SaveNetwork(path string, net any, train *data.Set) error {
	if train == nil {
		return fmt.Errorf("cvx: SaveNetwork: no training set")
	}
	in := netfile.Input{Names: train.Features, Shape: train.Shape}
	if train.Bias {
		return fmt.Errorf("cvx: SaveNetwork: the training set holds a bias column; give the set without it (the network's Bias handles it)")
	}
	if sc := train.Scaling; sc != nil {
		in.Shift, in.Scale = sc.Shift, sc.Scale
	}
	out := netfile.Output{Decision: netfile.Value}
	if c := train.NumClasses(); c >= 2 {
		out.Classes = train.Classes
		out.Decision = netfile.Sign
		if o, ok := net.(interface{ Outputs() int }); ok && o.Outputs() >= 2 {
			out.Decision = netfile.Argmax
		}
	}
	f, err := netfile.New(net, in, out)
	if err != nil {
		return err
	}
	return f.Save(path)
}

// LoadNetwork loads a network file written by SaveNetwork (or netfile):
// its Scores and Classes predict on raw rows.
func LoadNetwork(path string) (*netfile.File, error) { return netfile.Load(path) }
