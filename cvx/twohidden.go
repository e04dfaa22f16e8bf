package cvx

import (
	"errors"
	"fmt"

	"github.com/convexnn/convexnn/solvers"
	"github.com/convexnn/convexnn/solvers/general"
	"github.com/convexnn/convexnn/solvers/twohidden"
)

// TwoHiddenNetwork is K parallel two-hidden-layer sub-networks
// f(x) = Σ_k w_3k (Σ_j w_2kj (xᵀw_1kj)_+)_+.
type TwoHiddenNetwork = twohidden.Network

// TwoHidden makes the problem a network of parallel two-hidden-layer
// sub-networks with m1 first-layer neurons each (the appendix "Two-Hidden-
// Layer Sub-Networks"), trained through its convex program
// (solvers/twohidden, an instance of eq. ct_general): one group per pattern
// tuple of a random sub-network (SamplePatterns(P, seed)). Bias gives the
// first layer biases. ADMM runs the general ADMM, Solve the dense
// interior-point method (small programs).
func (p *Problem) TwoHidden(m1 int) *Problem {
	if p.err == nil && m1 < 1 {
		p.err = fmt.Errorf("cvx: TwoHidden(%d): need at least one first-layer neuron per sub-network", m1)
	}
	p.twoHidden = m1
	return p
}

// TwoHiddenProgram builds a TwoHidden problem's program with its sampled
// pattern tuples.
func (p *Problem) TwoHiddenProgram() (*twohidden.Problem, *general.Program, error) {
	if err := p.Err(); err != nil {
		return nil, nil, err
	}
	if err := p.refuseGated("the CNN and two-hidden-layer programs"); err != nil {
		return nil, nil, err
	}
	switch {
	case p.twoHidden < 1:
		return nil, nil, errors.New("cvx: the problem has no two-hidden-layer sub-networks (TwoHidden)")
	case p.conv != nil || p.bn:
		return nil, nil, errors.New("cvx: TwoHidden does not combine with Conv or BatchNorm")
	case p.robust():
		return nil, nil, errors.New("cvx: TwoHidden: robust (adversarial) training is not available for it yet")
	case p.exact:
		return nil, nil, errors.New("cvx: TwoHidden: exact patterns are not available; use SamplePatterns(P, seed)")
	case p.patterns < 1:
		return nil, nil, errors.New("cvx: TwoHidden: the program needs patterns: call SamplePatterns(P, seed)")
	}
	loss, err := solvers.ParseLoss(string(p.loss))
	if err != nil {
		return nil, nil, err
	}
	tp, err := twohidden.New(p.design(), p.targets(), p.twoHidden, loss, p.beta)
	if err != nil {
		return nil, nil, err
	}
	tp.Bias = p.bias
	got, err := tp.SamplePatterns(p.patterns, p.patternSeed)
	if err != nil {
		return nil, nil, err
	}
	if got < p.patterns {
		note(fmt.Sprintf("cvx: note: %d distinct pattern tuples of the %d asked; using those", got, p.patterns))
	}
	gp, err := tp.Program()
	return tp, gp, err
}

// twoHiddenModel is a TwoHidden problem's program.
type twoHiddenModel struct {
	tp *twohidden.Problem
	gp *general.Program
}

func (m twoHiddenModel) program() (*general.Program, error) { return m.gp, nil }
func (m twoHiddenModel) nonconvex(w, wp []float64) (float64, error) {
	net, err := m.tp.Recover(w, wp)
	if err != nil {
		return 0, err
	}
	return net.Objective(m.tp.Raw(), m.tp.Y, m.tp.Loss, m.tp.Beta)
}
func (m twoHiddenModel) fill(s *Solution, w, wp []float64) (err error) {
	s.TwoHidden, err = m.tp.Recover(w, wp)
	return err
}
func (m twoHiddenModel) describe() string {
	return fmt.Sprintf("two-hidden-layer sub-networks of %d first-layer neurons (%d pattern tuples)", m.tp.M1, len(m.tp.Tuples))
}

// TwoHidden returns the trained network of a run of a TwoHidden problem.
func (r *Run) TwoHidden() (*TwoHiddenNetwork, error) {
	s, err := r.generalSolution()
	if err != nil {
		return nil, err
	}
	if s.TwoHidden == nil {
		return nil, errors.New("cvx: the run's problem is not a TwoHidden one")
	}
	return s.TwoHidden, nil
}
