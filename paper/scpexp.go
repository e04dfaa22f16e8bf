package paper

import (
	"context"
	"fmt"
	"io"
	"math"

	"github.com/convexnn/convexnn/cvx"
	"github.com/convexnn/convexnn/data"
	"github.com/convexnn/convexnn/plots"
)

// SCPExp are the settings of fig. SCPexp (appendix "SCP-based convex
// training", notebook 04): one-shot sampling of N neurons on the UCI
// mammographic masses, eq. (SCP2) with the squared loss at each β of Betas
// solved by FISTA (at most FISTAIters iterations, relative duality gap
// 10⁻⁶), averaged over Trials random 70/30 splits; beside it practical
// convex training (P_s = 120, ADMMIters ADMM iterations) and back-prop
// (GD-std: width 240, Adam, 5·ADMMIters epochs).
type SCPExp struct {
	Trials                int
	Ns                    []int
	Betas                 []float64
	FISTAIters, ADMMIters int
}

// SCPExpSettings returns the paper's settings at SizePaper (20 trials, N
// from 5 to 5000) and 3 trials, N ∈ {5, 20, 100, 500} otherwise.
func SCPExpSettings(size Size) SCPExp {
	if size == SizePaper {
		return SCPExp{Trials: 20, Ns: []int{5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000}, Betas: []float64{1e-4, 1e-2}, FISTAIters: 20000, ADMMIters: 300}
	}
	return SCPExp{Trials: 3, Ns: []int{5, 20, 100, 500}, Betas: []float64{1e-4, 1e-2}, FISTAIters: 3000, ADMMIters: 80}
}

// Split returns trial r's split: the complete rows, labels ±1 by Severity,
// 70 % for training (seed r), standardized with the training statistics.
func (e SCPExp) Split(r int) (train, test *data.Set, err error) {
	t, err := data.Mammographic(context.Background(), data.DefaultSource())
	if err != nil {
		return nil, nil, err
	}
	s, err := t.Complete().Binary("Severity", data.PlusMinus)
	if err != nil {
		return nil, nil, err
	}
	tr, te, err := s.Split(0.7, uint64(r))
	if err != nil {
		return nil, nil, err
	}
	tr, others, err := tr.Standardize(te)
	if err != nil {
		return nil, nil, err
	}
	return tr, others[0], nil
}

// SCPResult is fig. SCPexp's outcome: the mean test accuracy (a fraction)
// and cost (objective / n) of the references and, per β, of SCP against
// log₁₀ N (series named by β, accuracy in %).
type SCPResult struct {
	RefAcc, RefCost, BPAcc, BPCost float64
	Acc, Cost                      []plots.Series
}

// Run trains every trial (runs kept in dir), printing a line per point to
// w.
func (e SCPExp) Run(dir cvx.RunDir, w io.Writer) (*SCPResult, error) {
	res := &SCPResult{}
	// mean trains the method on every trial (the run name-r) and returns
	// the mean test accuracy and cost: the network's l^{u,α} / n when
	// nonconvex, the objective / n otherwise.
	mean := func(name string, prob func(tr *data.Set, r int) *cvx.Problem, m func(r int) cvx.Method, iters int, nonconvex bool) (acc, cost float64, err error) {
		for r := 0; r < e.Trials; r++ {
			tr, te, err := e.Split(r)
			if err != nil {
				return 0, 0, err
			}
			run := dir.Start(fmt.Sprintf("%s-%d", name, r), prob(tr, r), m(r))
			run.Quiet = true
			if err := run.Iterate(iters); err != nil {
				return 0, 0, err
			}
			net, err := run.Network()
			if err != nil {
				return 0, 0, err
			}
			a, err := cvx.Accuracy(net, te.X, te.Y)
			if err != nil {
				return 0, 0, err
			}
			c := run.Objective()
			if h := run.History(); nonconvex && len(h) > 0 {
				c = h[len(h)-1].Nonconvex
			}
			n, _ := tr.X.Dims()
			acc, cost = acc+a/float64(e.Trials), cost+c/float64(n)/float64(e.Trials)
		}
		return acc, cost, nil
	}
	var err error
	// Practical convex training: P_s = 120 patterns (seed r).
	res.RefAcc, res.RefCost, err = mean("pct120", func(tr *data.Set, r int) *cvx.Problem {
		return cvx.Classify(tr.X, tr.Y).Beta(1e-4).Bias().SamplePatterns(120, uint64(r))
	}, func(int) cvx.Method { return cvx.ADMM{Rho: 0.1, Gamma: 0.1, Tol: 1e-7} }, e.ADMMIters, true)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(w, "practical convex training, P_s = 120: test accuracy %.2f%%, cost/n %.4f (%d trials)\n", 100*res.RefAcc, res.RefCost, e.Trials)
	// Back-prop (GD-std): the same network, width 2P_s = 240, Adam on the
	// non-convex objective with weight decay (β/2)(‖u‖² + α²).
	res.BPAcc, res.BPCost, err = mean("gdstd", func(tr *data.Set, _ int) *cvx.Problem { return cvx.Classify(tr.X, tr.Y).Beta(1e-4).Bias() },
		func(r int) cvx.Method { return cvx.Backprop{Width: 240, LearningRate: 1e-3, Seed: uint64(r)} }, 5*e.ADMMIters, false)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(w, "back-prop (GD-std, width 240, Adam):  test accuracy %.2f%%, cost/n %.4f (%d trials)\n", 100*res.BPAcc, res.BPCost, e.Trials)
	for _, beta := range e.Betas {
		acc := plots.Series{Name: fmt.Sprintf("SCP, β = %g", beta)}
		cost := plots.Series{Name: acc.Name}
		for _, nn := range e.Ns {
			a, c, err := mean(fmt.Sprintf("scp-%g-%d", beta, nn), func(tr *data.Set, r int) *cvx.Problem {
				return cvx.Classify(tr.X, tr.Y).Beta(beta).Bias().SampleNeurons(nn, uint64(10000*r+nn))
			}, func(int) cvx.Method { return cvx.FISTA{Tol: 1e-6} }, e.FISTAIters, false)
			if err != nil {
				return nil, err
			}
			fmt.Fprintf(w, "β = %-6g N = %5d: test accuracy %.2f%%, cost/n %.4f\n", beta, nn, 100*a, c)
			x := math.Log10(float64(nn))
			acc.X, acc.Y = append(acc.X, x), append(acc.Y, 100*a)
			cost.X, cost.Y = append(cost.X, x), append(cost.Y, c)
		}
		res.Acc, res.Cost = append(res.Acc, acc), append(res.Cost, cost)
	}
	return res, nil
}

// Figures are fig. SCPexp's two panels: test accuracy and training cost
// against log₁₀ N, the references as flat lines.
func (r *SCPResult) Figures() (acc, cost *plots.Figure, err error) {
	if len(r.Acc) == 0 || len(r.Acc[0].X) == 0 {
		return nil, nil, fmt.Errorf("paper: fig. SCPexp has no points")
	}
	lo, hi := r.Acc[0].X[0], r.Acc[0].X[len(r.Acc[0].X)-1]
	flat := func(name string, v float64) plots.Series {
		return plots.Series{Name: name, X: []float64{lo, hi}, Y: []float64{v, v}}
	}
	as := append(append([]plots.Series(nil), r.Acc...), flat("practical convex training, P_s = 120", 100*r.RefAcc), flat("back-prop (GD-std), width 240", 100*r.BPAcc))
	cs := append(append([]plots.Series(nil), r.Cost...), flat("practical convex training, P_s = 120", r.RefCost), flat("back-prop (GD-std), width 240", r.BPCost))
	if acc, err = plots.Line(plots.LineOptions{Title: "Test accuracy against the number of sampled neurons", XLabel: "log₁₀ N", YLabel: "test accuracy (%)"}, as...); err != nil {
		return nil, nil, err
	}
	cost, err = plots.Line(plots.LineOptions{Title: "Training cost against the number of sampled neurons", XLabel: "log₁₀ N", YLabel: "objective / n", LogY: true}, cs...)
	return acc, cost, err
}
