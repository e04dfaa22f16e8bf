package cvx

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/convexnn/convexnn/plots"
	"github.com/convexnn/convexnn/solvers"
	"github.com/convexnn/convexnn/solvers/backprop"
	"github.com/convexnn/convexnn/solvers/gated"
	"gonum.org/v1/gonum/mat"
)

// Softmax is the mean softmax cross-entropy of a multi-class problem,
// (1/n) Σ_k (log Σ_j e^{f_j(x_k)} − f_{y_k}(x_k)).
const Softmax Loss = "softmax"

// Groups is the group structure of a gated program's regularizer.
type Groups = gated.Groups

// Groupings of the gated program's regularizer: JointGroups drops a
// neuron for all classes at once (‖W_i‖_F), PerClassGroups per class
// (Σ_j ‖W_i e_j‖, one-vs-all).
const (
	JointGroups    = gated.Joint
	PerClassGroups = gated.PerClass
)

// Multiclass starts a classification problem of c ≥ 2 classes on the rows
// of X with labels y_k ∈ {0, …, c−1}: the gated ReLU program with c outputs
// (Gated is implied; package solvers/gated), whose network predicts the
// class of the largest output. Defaults: softmax loss, joint groups,
// β = 1e-3, no bias; SamplePatterns(P, seed) draws its gates.
func Multiclass(x *mat.Dense, y []float64, c int) *Problem {
	p := &Problem{x: x, y: y, beta: 1e-3, loss: Softmax, classify: true, classes: c, gated: true}
	p.err = validateData(x, y, false)
	if p.err == nil && c < 2 {
		p.err = fmt.Errorf("cvx: Multiclass: %d classes, need at least 2", c)
	}
	if p.err == nil {
		p.err = checkClassIndices("cvx: Multiclass", y, c)
	}
	return p
}

// checkClassIndices reports the first label that is not a class index
// 0…c−1.
func checkClassIndices(what string, y []float64, c int) error {
	for k, v := range y {
		if v < 0 || v >= float64(c) || v != math.Trunc(v) {
			return fmt.Errorf("%s: label y[%d] = %v is not a class index 0…%d", what, k, v, c-1)
		}
	}
	return nil
}

// Softmax selects the softmax cross-entropy of a Multiclass problem.
func (p *Problem) Softmax() *Problem {
	if p.err == nil && p.classes == 0 {
		p.err = errors.New("cvx: Softmax is the loss of a Multiclass(X, y, c) problem (binary problems: Logistic)")
	}
	p.loss = Softmax
	return p
}

// Gated selects the gated ReLU program (Mishkin, Sahiner and Pilanci
// 2022): the convex program without its cone constraints, an unconstrained
// group lasso over gates drawn by SamplePatterns(P, seed), solved by
// SolveGated. A binary problem takes the squared loss (one output).
func (p *Problem) Gated() *Problem { p.gated = true; return p }

// GroupBy sets the gated program's groups (JointGroups by default).
func (p *Problem) GroupBy(g Groups) *Problem {
	if p.err == nil && g != JointGroups && g != PerClassGroups {
		p.err = fmt.Errorf("cvx: GroupBy(%v): unknown grouping", g)
	}
	p.groups = g
	return p
}

// Classes returns the number of classes of a Multiclass problem (0 for a
// binary or regression problem).
func (p *Problem) Classes() int { return p.classes }

// refuseGated is the error of a method that does not solve gated programs.
func (p *Problem) refuseGated(method string) error {
	if p.gated {
		return fmt.Errorf("cvx: %s: a Gated or Multiclass problem is the gated ReLU program: solve it with cvx.SolveGated", method)
	}
	return nil
}

// BetaMax returns β_max of a gated problem (Gated, Multiclass): the
// smallest β at which the zero network is optimal, so that a notebook can
// set β relative to it, p.Beta(1e-2 * β_max).
func (p *Problem) BetaMax() (float64, error) {
	gp, _, err := p.GatedProgram()
	if err != nil {
		return 0, err
	}
	return gp.BetaMax()
}

// GatedProgram returns the problem's gated program and the gate vectors
// (columns of the d̃×P matrix, on X with its bias column when Bias is set).
func (p *Problem) GatedProgram() (*gated.Problem, *mat.Dense, error) {
	if err := p.Err(); err != nil {
		return nil, nil, err
	}
	if !p.gated {
		return nil, nil, errors.New("cvx: GatedProgram: the problem is not gated (Gated() or Multiclass)")
	}
	if p.bn || p.conv != nil || p.twoHidden > 0 || p.robust() || p.sampled || p.exact {
		return nil, nil, errors.New("cvx: the gated program is of two-layer fully connected networks with sampled gates: drop BatchNorm, Conv, TwoHidden, Robust, SampleNeurons and ExactPatterns")
	}
	if p.patterns < 1 {
		return nil, nil, errors.New("cvx: the gated program needs gates: call SamplePatterns(P, seed) on the problem")
	}
	x := p.design()
	d, g, err := solvers.SampleGates(x, p.patterns, p.patternSeed, 0)
	var few *solvers.FewPatternsError
	if errors.As(err, &few) {
		note(fmt.Sprintf("cvx: note: %v; using the %d found", err, len(d)))
		err = nil
	}
	if err != nil {
		return nil, nil, err
	}
	var targets *mat.Dense
	loss := gated.Squared
	switch {
	case p.classes >= 2:
		targets, err = gated.OneHot(p.y, p.classes)
		if err != nil {
			return nil, nil, err
		}
		switch p.loss {
		case Softmax:
			loss = gated.Softmax
		case Squared:
		default:
			return nil, nil, fmt.Errorf("cvx: a Multiclass problem takes the softmax or squared loss, not %s", p.loss)
		}
	case p.loss == Squared:
		targets = mat.NewDense(len(p.y), 1, append([]float64(nil), p.y...))
	default:
		return nil, nil, fmt.Errorf("cvx: a binary Gated problem takes the squared loss (one output), not %s: or build it with Multiclass(X, y, 2) for the softmax loss", p.loss)
	}
	return &gated.Problem{X: x, Gates: d, Targets: targets, Loss: loss, Groups: p.groups, Beta: p.beta}, g, nil
}

// GatedMethod picks SolveGated's algorithm.
type GatedMethod int

const (
	// GatedAuto is gated.Problem.Choose's pick: for the squared loss without
	// Rank the kernel method when n is moderate, else Newton's method;
	// accelerated proximal gradient otherwise.
	GatedAuto GatedMethod = iota
	// GatedProxGradient is gated.Solve: accelerated proximal gradient in
	// the metric of XᵀX, any loss.
	GatedProxGradient
	// GatedNewton is gated.SolveNewton: Newton's method on the active
	// groups with preconditioned conjugate gradients, the squared loss.
	GatedNewton
	// GatedKernel is gated.SolveKernel: Newton's method on the P kernel
	// weights of the program's multiple-kernel form, the squared loss,
	// n ≤ gated.KernelMaxRows.
	GatedKernel
)

// GatedOptions control SolveGated.
type GatedOptions struct {
	// Method is the algorithm (GatedAuto by default).
	Method GatedMethod
	// Tol is the certified relative gap to stop at (1e-6 when 0).
	Tol float64
	// MaxIter caps the proximal steps (10 000 when 0).
	MaxIter int
	// Seconds stops the solve after this long with the best certified
	// point so far (0: no limit).
	Seconds float64
	// Start warm-starts from an earlier solution of a problem with the same
	// gates (same data, P and seed).
	Start *GatedSolution
	// Rank, when positive, restricts the weights to the top Rank principal
	// directions of the (uncentered) data, a step costing about Rank/d of
	// a full one; the certificate stays that of the full program
	// (gated.Options.Rank).
	Rank int
}

// GatedSolution is the result of SolveGated.
type GatedSolution struct {
	// Status says why the solve stopped: "certified" (the gap reached
	// Tol), "time limit" (Seconds), "iteration limit" or "cancelled".
	Status  string
	Network *gated.Network
	// Objective is the program's objective at the weights; Lower ≤ p* ≤
	// Objective certify its optimum p*, Gap = (Objective − Lower)/|Objective|.
	Objective, Lower, Gap float64
	Iterations            int
	Seconds               float64
	// History holds the certified steps.
	History []gated.Iterate
	// Weights are the program's blocks W_i.
	Weights gated.Weights
}

// SolveGated solves the gated program of a Gated or Multiclass problem to
// a certified gap by the method o asks for (GatedAuto: gated.Problem.
// Choose, the kernel method or Newton's method on the groups for the
// squared loss, accelerated proximal gradient otherwise), showing its
// convergence live in a notebook (or on stderr).
func SolveGated(p *Problem, o GatedOptions) (*GatedSolution, error) {
	return SolveGatedContext(context.Background(), p, o)
}

// SolveGatedContext is SolveGated with a context: cancelling it returns
// the best certified solution so far together with the context's error.
func SolveGatedContext(ctx context.Context, p *Problem, o GatedOptions) (*GatedSolution, error) {
	if o.Seconds < 0 || math.IsNaN(o.Seconds) {
		return nil, fmt.Errorf("cvx: GatedOptions{Seconds: %v}: need ≥ 0", o.Seconds)
	}
	prog, gv, err := p.GatedProgram()
	if err != nil {
		report(err)
		return nil, err
	}
	parent := ctx.Err // the caller's context, before the time limit
	if o.Seconds > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, time.Duration(o.Seconds*float64(time.Second)))
		defer cancel()
	}
	opt := gated.Options{Tol: o.Tol, MaxIter: o.MaxIter, Rank: o.Rank}
	if o.Start != nil {
		opt.Start = o.Start.Weights
	}
	prog2 := NewProgress("gated program")
	var hist []gated.Iterate
	line := func(it gated.Iterate) string {
		return fmt.Sprintf("step %d: objective %.6g, certified gap %.2e, %d of %d gates active, %.1fs", it.Iter, it.Objective, it.Cert.Gap, it.Active, len(prog.Gates), it.Elapsed.Seconds())
	}
	fig := func() (*plots.Figure, error) { return gatedConvergence(hist) }
	opt.Progress = func(it gated.Iterate) {
		hist = append(hist, it)
		prog2.Update(line(it), fig)
	}
	start := time.Now()
	res, err := solveGatedProgram(ctx, prog, o, opt)
	if res == nil {
		report(err)
		return nil, err
	}
	timedOut := err != nil && parent() == nil && o.Seconds > 0
	status := gatedStatus(res, o.Tol, timedOut)
	switch {
	case timedOut:
		err = nil // the caller's own limit: not an error
	case err != nil && status != "certified":
		status = "cancelled"
	}
	net, nerr := gated.NewNetwork(gv, res.W, p.bias)
	if nerr != nil {
		return nil, nerr
	}
	if len(hist) > 0 {
		prog2.Done(line(hist[len(hist)-1]), fig)
	}
	sol := &GatedSolution{Status: status, Network: net, Objective: res.Objective, Lower: res.Cert.Lower, Gap: res.Cert.Gap,
		Iterations: res.Iterations, Seconds: time.Since(start).Seconds(), History: res.History, Weights: res.W}
	return sol, err
}

// gatedConvergence charts a gated solve's objective, lower bound and
// certified gap against the step.
func gatedConvergence(h []gated.Iterate) (*plots.Figure, error) {
	obj := plots.Series{Name: "objective"}
	low := plots.Series{Name: "lower bound"}
	gap := plots.Series{Name: "certified gap (upper − lower)/|upper|"}
	for _, it := range h {
		x := float64(it.Iter)
		obj.X, obj.Y = append(obj.X, x), append(obj.Y, it.Objective)
		if it.Cert.Lower > 0 {
			low.X, low.Y = append(low.X, x), append(low.Y, it.Cert.Lower)
		}
		if it.Cert.Gap > 0 {
			gap.X, gap.Y = append(gap.X, x), append(gap.Y, it.Cert.Gap)
		}
	}
	series := []plots.Series{obj}
	for _, s := range []plots.Series{low, gap} {
		if len(s.X) > 0 {
			series = append(series, s)
		}
	}
	return plots.Line(plots.LineOptions{Title: "Gated program: certified convergence", XLabel: "step", YLabel: "value", LogY: true}, series...)
}

// Confusion returns the confusion matrix of a classifier on (X, y): entry
// (i, j) counts the rows of class i predicted as class j. The network
// predicts class indices (multi-class) or scores whose sign picks class 1
// over class 0 of labels −1/+1 or 0/1 (binary; c = 2).
func Confusion(net Predictor, x *mat.Dense, y []float64, c int) ([][]int, error) {
	if c < 2 {
		return nil, fmt.Errorf("cvx: Confusion: %d classes, need at least 2", c)
	}
	pred, err := net.Predict(x)
	if err != nil {
		return nil, err
	}
	if len(pred) != len(y) {
		return nil, fmt.Errorf("cvx: Confusion: %d predictions for %d labels", len(pred), len(y))
	}
	m := make([][]int, c)
	for i := range m {
		m[i] = make([]int, c)
	}
	multi := isMultiOutput(net)
	for k, v := range y {
		t, p := int(v), int(pred[k])
		if !multi {
			t, p = 0, 0
			if v > 0 {
				t = 1
			}
			if pred[k] >= 0 {
				p = 1
			}
		}
		if t < 0 || t >= c || float64(t) != v && multi {
			return nil, fmt.Errorf("cvx: Confusion: label y[%d] = %v is not a class index 0…%d", k, v, c-1)
		}
		if p < 0 || p >= c {
			return nil, fmt.Errorf("cvx: Confusion: prediction %d is %v, not a class index 0…%d", k, pred[k], c-1)
		}
		m[t][p]++
	}
	return m, nil
}

// isMultiOutput reports whether the network predicts class indices (a
// network of several outputs: gated.Network, solvers.MultiNetwork).
func isMultiOutput(net Predictor) bool {
	g, ok := net.(interface{ Outputs() int })
	return ok && g.Outputs() >= 2
}

// BackpropMulticlass trains the back-prop baseline of a Multiclass problem:
// a two-layer ReLU network of the given width with c outputs, the problem's
// loss, bias and weight decay β (backprop.MulticlassModel), by full-batch
// Adam for epochs steps (learning rate lr; 0 means 0.01). It returns the
// network and the final training objective.
func BackpropMulticlass(ctx context.Context, p *Problem, width, epochs int, lr float64, seed uint64) (*solvers.MultiNetwork, float64, error) {
	if err := p.Err(); err != nil {
		return nil, 0, err
	}
	if p.classes < 2 {
		return nil, 0, errors.New("cvx: BackpropMulticlass is for Multiclass problems")
	}
	if lr == 0 {
		lr = 0.01
	}
	t, err := gated.OneHot(p.y, p.classes)
	if err != nil {
		return nil, 0, err
	}
	loss := gated.Softmax
	if p.loss == Squared {
		loss = gated.Squared
	}
	m, err := backprop.NewMulticlassModel(p.x, t, loss, p.beta, width, p.bias, seed)
	if err != nil {
		return nil, 0, err
	}
	hist, err := backprop.Minimize(ctx, m, lr, epochs)
	if len(hist) == 0 {
		return m.Network(), math.NaN(), err
	}
	// Cancelled: the network of the epochs finished, with the error.
	return m.Network(), hist[len(hist)-1], err
}

// ClassAccuracy returns the fraction of rows of (X, y) classified right
// (multi-class: the predicted index equals the label; binary: the sign).
func ClassAccuracy(net Predictor, x *mat.Dense, y []float64) (float64, error) {
	if !isMultiOutput(net) {
		pred, err := net.Predict(x)
		if err != nil {
			return 0, err
		}
		return solvers.Accuracy(pred, y)
	}
	pred, err := net.Predict(x)
	if err != nil {
		return 0, err
	}
	if len(pred) != len(y) {
		return 0, fmt.Errorf("cvx: ClassAccuracy: %d predictions for %d labels", len(pred), len(y))
	}
	ok := 0
	for k, v := range y {
		if pred[k] == v {
			ok++
		}
	}
	return float64(ok) / float64(len(y)), nil
}

// ConfusionFigure charts the confusion matrix of net on (X, y) with the
// classes' names (rows: true class, columns: predicted).
func ConfusionFigure(net Predictor, x *mat.Dense, y []float64, classes []string) (*plots.Figure, error) {
	m, err := Confusion(net, x, y, len(classes))
	if err != nil {
		return nil, err
	}
	v := make([][]float64, len(m))
	right := 0
	for i, r := range m {
		v[i] = make([]float64, len(r))
		for j, c := range r {
			v[i][j] = float64(c)
		}
		right += r[i]
	}
	title := fmt.Sprintf("Confusion matrix (accuracy %.2f %%)", 100*float64(right)/float64(len(y)))
	return plots.Matrix(plots.MatrixOptions{Title: title, XLabel: "predicted class", YLabel: "true class"}, classes, classes, v)
}

// ConfusionMatrix displays ConfusionFigure.
func ConfusionMatrix(net Predictor, x *mat.Dense, y []float64, classes []string) error {
	return showFigure(ConfusionFigure(net, x, y, classes))
}

// Decompose turns a gated solution of the problem into a ReLU network with
// the same outputs on the training data, by the cone decomposition of
// gated.Decompose, and reports its objective against the gated one.
func Decompose(p *Problem, sol *GatedSolution) (*gated.Decomposition, error) {
	if sol == nil || sol.Network == nil {
		return nil, errors.New("cvx: Decompose: no gated solution")
	}
	prog, _, err := p.GatedProgram()
	if err != nil {
		return nil, err
	}
	return gated.Decompose(prog, sol.Network.Gates, sol.Weights, p.bias)
}

// Labelled is a named network, as the per-class accuracy chart compares
// them.
type Labelled struct {
	Name string
	Net  Predictor
}

// PerClassAccuracy returns, per class, the share of its rows of (X, y) the
// network classifies right (the recall of each class).
func PerClassAccuracy(net Predictor, x *mat.Dense, y []float64, c int) ([]float64, error) {
	m, err := Confusion(net, x, y, c)
	if err != nil {
		return nil, err
	}
	out := make([]float64, c)
	for i, r := range m {
		tot := 0
		for _, v := range r {
			tot += v
		}
		if tot > 0 {
			out[i] = float64(r[i]) / float64(tot)
		}
	}
	return out, nil
}

// PerClassFigure charts the per-class accuracy (%) of several networks on
// (X, y) side by side, one group of bars per network.
func PerClassFigure(x *mat.Dense, y []float64, classes []string, nets ...Labelled) (*plots.Figure, error) {
	if len(nets) == 0 {
		return nil, errors.New("cvx: PerClassFigure: no network")
	}
	var groups []plots.Bars
	for _, n := range nets {
		acc, err := PerClassAccuracy(n.Net, x, y, len(classes))
		if err != nil {
			return nil, err
		}
		for j := range acc {
			acc[j] = math.Round(1000*acc[j]) / 10
		}
		groups = append(groups, plots.Bars{Name: n.Name, Values: acc})
	}
	return plots.Bar(plots.BarOptions{Title: "Accuracy per class (%)", XLabel: "class", YLabel: "%"}, classes, groups...)
}

// PerClassChart displays PerClassFigure.
func PerClassChart(x *mat.Dense, y []float64, classes []string, nets ...Labelled) error {
	return showFigure(PerClassFigure(x, y, classes, nets...))
}
