package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"math"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"

	"github.com/convexnn/convexnn/internal/testenv"
	"github.com/convexnn/convexnn/solvers"
	"github.com/convexnn/convexnn/solvers/netfile"
	"gonum.org/v1/gonum/mat"
)

// A batch-normalized problem: the raw X, the program on U′, the BN network
// in the result with the convex objective.
func TestSolveBatchNorm(t *testing.T) {
	body := withFields(t, randomProblem(40, 3, "hinge", 5), map[string]any{"bias": nil, "model": "batchnorm"})
	for _, solver := range []string{"ipm", "auto"} {
		res := solveJSON(t, "-problem", writeProblem(t, body), "-solver", solver)
		if res.Model != "batchnorm" || res.BatchNorm == nil {
			t.Fatalf("%s: result without the BN network: model %q", solver, res.Model)
		}
		bn := res.BatchNorm
		if bn.Rank != 3 || bn.N != 40 || len(bn.W) != len(bn.Gamma) || len(bn.W[0]) != 3 {
			t.Errorf("%s: BN network rank %d, n %d, %d neurons of %d weights", solver, bn.Rank, bn.N, len(bn.W), len(bn.W[0]))
		}
		if math.Abs(res.NonconvexObjective-res.Objective) > 1e-6*math.Max(1, res.Objective) {
			t.Errorf("%s: BN network objective %.10g, convex objective %.10g", solver, res.NonconvexObjective, res.Objective)
		}
		if *res.CertifiedGap > 1e-6 {
			t.Errorf("%s: certified gap %.1e", solver, *res.CertifiedGap)
		}
	}
}

// cnnProblem returns n random c×h×w images with labels for the loss.
func cnnProblem(n int, shape []int, loss, model string, seed uint64) string {
	rng := rand.New(rand.NewPCG(seed, 3))
	d := shape[0] * shape[1] * shape[2]
	x := make([][]float64, n)
	y := make([]float64, n)
	for k := range x {
		x[k] = make([]float64, d)
		for j := range x[k] {
			x[k][j] = rng.Float64()
		}
		y[k] = x[k][0] + x[k][d-1] - 1
		if loss != "squared" {
			y[k] = math.Copysign(1, y[k])
		}
		if loss == "bce" {
			y[k] = (y[k] + 1) / 2
		}
	}
	b, _ := json.Marshal(map[string]any{"X": x, "y": y, "loss": loss, "beta": 0.01, "model": model, "shape": shape, "filter": 2, "P": 4, "seed": seed})
	return string(b)
}

// CNN problems: the certified optimum by -solver auto (the dense
// interior-point method), ADMM's certificate enclosing it, and the
// recovered CNN with the convex objective.
func TestSolveCNN(t *testing.T) {
	for _, model := range []string{"cnn-avg", "cnn-max"} {
		for _, loss := range []string{"squared", "hinge"} {
			prob := writeProblem(t, cnnProblem(12, []int{1, 3, 4}, loss, model, 2))
			opt := solveJSON(t, "-problem", prob, "-solver", "auto")
			if opt.Solver != "ipm" || !opt.Auto || opt.CNN == nil || opt.Model != model {
				t.Fatalf("%s %s: solver %q auto %v model %q", model, loss, opt.Solver, opt.Auto, opt.Model)
			}
			if *opt.CertifiedGap > 1e-6 || opt.Status != "gap reached" {
				t.Errorf("%s %s: %s, certified gap %.1e", model, loss, opt.Status, *opt.CertifiedGap)
			}
			if math.Abs(opt.NonconvexObjective-opt.Objective) > 1e-6*math.Max(1, opt.Objective) {
				t.Errorf("%s %s: CNN objective %.10g, convex %.10g", model, loss, opt.NonconvexObjective, opt.Objective)
			}
			if len(opt.Network.U) != len(opt.Network.Alpha) || len(opt.Network.U[0]) != 4 {
				t.Errorf("%s %s: %d filters of %d entries, %d output weights", model, loss, len(opt.Network.U), len(opt.Network.U[0]), len(opt.Network.Alpha))
			}
			// predict and attack refuse the result: its "network" holds the
			// filters as rows, not a ReLU network on the data.
			raw, err := json.Marshal(opt)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := readNetwork(bytes.NewReader(raw)); err == nil || !strings.Contains(err.Error(), model) {
				t.Errorf("%s %s: readNetwork of the result: %v", model, loss, err)
			}
			ad := solveJSON(t, "-problem", prob, "-solver", "admm", "-max-iter", "300")
			if *ad.LowerBound > *opt.UpperBound+1e-9 || *ad.UpperBound < *opt.LowerBound-1e-9 {
				t.Errorf("%s %s: ADMM's bounds [%v, %v] miss the optimum in [%v, %v]", model, loss, *ad.LowerBound, *ad.UpperBound, *opt.LowerBound, *opt.UpperBound)
			}
		}
	}
}

// "generate": the rounds of pattern generation in the result, the first
// the sampled patterns' optimum, each lower than the one before, and the
// certificate and network of the program it ends with.
func TestSolveCNNGenerate(t *testing.T) {
	for _, model := range []string{"cnn-avg", "cnn-max"} {
		body := withFields(t, cnnProblem(20, []int{1, 4, 4}, "hinge", model, 3), map[string]any{"P": 2, "generate": map[string]int{"rounds": 2, "per_round": 2}})
		res := solveJSON(t, "-problem", writeProblem(t, body), "-solver", "auto")
		plain := solveJSON(t, "-problem", writeProblem(t, withFields(t, body, map[string]any{"generate": nil})), "-solver", "auto")
		g := res.Generated
		if len(g) < 2 || math.Abs(g[0].Objective-plain.Objective) > 1e-5*plain.Objective || g[len(g)-1].Objective != res.Objective {
			t.Fatalf("%s: rounds %+v, the sampled optimum %.9g, the result's %.9g", model, g, plain.Objective, res.Objective)
		}
		for k := 1; k < len(g); k++ {
			if g[k].Objective > g[k-1].Objective*(1+1e-7) {
				t.Errorf("%s: round %d's optimum %.9g above round %d's %.9g", model, k, g[k].Objective, k-1, g[k-1].Objective)
			}
		}
		if *res.CertifiedGap > 1e-6 || math.Abs(res.NonconvexObjective-res.Objective) > 1e-6*res.Objective || len(res.Network.U) != len(res.Network.Alpha) {
			t.Errorf("%s: certified gap %.1e, CNN objective %.10g against %.10g", model, *res.CertifiedGap, res.NonconvexObjective, res.Objective)
		}
	}
}

func TestSolveModelBadInput(t *testing.T) {
	bn := randomProblem(10, 2, "hinge", 1)
	img := cnnProblem(6, []int{1, 3, 3}, "hinge", "cnn-avg", 1)
	for _, c := range []struct {
		body string
		args []string
		want string
	}{
		{withFields(t, bn, map[string]any{"model": "batchnorm"}), nil, `"bias" must be false`},
		{withFields(t, bn, map[string]any{"model": "batchnorm", "bias": nil, "eps": 0.1}), nil, `no robust`},
		{withFields(t, bn, map[string]any{"model": "transformer"}), nil, `field "model" = "transformer"`},
		{withFields(t, bn, map[string]any{"model": "two-hidden"}), nil, `needs field "m1"`},
		{withFields(t, bn, map[string]any{"m1": 2}), nil, `belongs to the model "two-hidden"`},
		{withFields(t, bn, map[string]any{"model": "two-hidden", "m1": 2, "eps": 0.1}), nil, `robust (adversarial) training is available for "cnn-avg" and "cnn-max"`},
		{withFields(t, bn, map[string]any{"filter": 2}), nil, `belong to the models "cnn-avg" and "cnn-max"`},
		{withFields(t, img, map[string]any{"shape": nil}), nil, `needs field "shape"`},
		{withFields(t, img, map[string]any{"shape": []int{1, 2, 2}}), nil, `images of shape 1×2×2 have 4`},
		{withFields(t, img, map[string]any{"filter": 4}), nil, `do not fit`},
		{withFields(t, img, map[string]any{"D": [][]int{{1, 0, 1, 0, 1, 0}}, "P": nil}), nil, `not "D"`},
		{withFields(t, img, map[string]any{"eps": 0.1, "model": "cnn-max", "norm": "2"}), nil, `"norm": "inf" only`},
		{img, []string{"-solver", "newton"}, `solved by -solver admm, ipm or auto`},
		{img, []string{"-solver", "ipm", "-max-iter", "50"}, `-max-iter and -rho are options of -solver admm`},
		{withFields(t, img, map[string]any{"eps": 0.1}), []string{"-solver", "admm", "-tol", "1e-4"}, `-tol does not apply`},
		{withFields(t, img, map[string]any{"pad": 2}), nil, `padding must be smaller than the filter`},
		{img, []string{"-solver", "scp", "-neurons", "3"}, `not -solver scp`},
		{withFields(t, img, map[string]any{"loss": "logistic"}), []string{"-solver", "ipm"}, `squared and hinge losses`},
		{withFields(t, bn, map[string]any{"model": "batchnorm", "bias": nil, "P": nil, "seed": nil}), []string{"-solver", "scp", "-neurons", "3"}, `not scp`},
		{withFields(t, bn, map[string]any{"generate": map[string]int{"rounds": 2, "per_round": 2}}), nil, `fields "generate" and "backprop_patterns" belong to the models "cnn-avg" and "cnn-max"`},
		{withFields(t, img, map[string]any{"generate": map[string]int{"rounds": 0, "per_round": 2}}), nil, `need ≥ 1 round`},
		{withFields(t, img, map[string]any{"generate": map[string]int{"rounds": 2, "per_round": 2}, "eps": 0.05}), nil, `for standard CNNs`},
		{withFields(t, img, map[string]any{"generate": map[string]int{"rounds": 2, "per_round": 2}}), []string{"-solver", "admm"}, `runs with -solver ipm or auto`},
	} {
		args := append([]string{"-problem", writeProblem(t, c.body)}, c.args...)
		err := solveCommand(context.Background(), args, io.Discard)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: error %v, want one naming %q", c.args, err, c.want)
		}
		if c.want != `squared and hinge losses` && !errors.As(err, new(usageError)) {
			t.Errorf("%v: %v is not a usage error", c.args, err)
		}
	}
}

// Two-hidden-layer sub-networks: the certified optimum by -solver auto, and
// the recovered sub-networks with the convex objective.
func TestSolveTwoHidden(t *testing.T) {
	for _, loss := range []string{"squared", "hinge"} {
		body := withFields(t, randomProblem(16, 2, loss, 3), map[string]any{"model": "two-hidden", "m1": 2, "P": 5})
		res := solveJSON(t, "-problem", writeProblem(t, body), "-solver", "auto")
		if res.Solver != "ipm" || res.Model != "two-hidden" || len(res.SubNetworks) == 0 {
			t.Fatalf("%s: solver %q, model %q, %d sub-networks", loss, res.Solver, res.Model, len(res.SubNetworks))
		}
		if *res.CertifiedGap > 1e-6 || res.Status != "gap reached" {
			t.Errorf("%s: %s, certified gap %.1e", loss, res.Status, *res.CertifiedGap)
		}
		if math.Abs(res.NonconvexObjective-res.Objective) > 1e-6*math.Max(1, res.Objective) {
			t.Errorf("%s: network objective %.10g, convex %.10g", loss, res.NonconvexObjective, res.Objective)
		}
		if s := res.SubNetworks[0]; len(s.W1) != 2 || len(s.W1[0]) != 3 || len(s.W2) != 2 {
			t.Errorf("%s: sub-network of %d×%d first layer, %d second-layer weights", loss, len(s.W1), len(s.W1[0]), len(s.W2))
		}
		ad := solveJSON(t, "-problem", writeProblem(t, body), "-solver", "admm", "-max-iter", "200")
		if *ad.LowerBound > *res.UpperBound+1e-9 || *ad.UpperBound < *res.LowerBound-1e-9 {
			t.Errorf("%s: ADMM's bounds [%v, %v] miss the optimum in [%v, %v]", loss, *ad.LowerBound, *ad.UpperBound, *res.LowerBound, *res.UpperBound)
		}
	}
}

// Robust CNN training from the command line, both poolings, hinge and
// BCE: the robust objective above the clean one at the solution, the
// robust constraints kept, the certificate tight.
func TestSolveRobustCNN(t *testing.T) {
	cases := []struct{ loss, model string }{{"hinge", "cnn-avg"}, {"bce", "cnn-max"}}
	if testenv.Race { // the second runs in make test's pass without -race
		cases = cases[:1]
	}
	for _, c := range cases {
		body := withFields(t, cnnProblem(10, []int{1, 4, 4}, c.loss, c.model, 4), map[string]any{"eps": 0.03, "P": 3})
		res := solveJSON(t, "-problem", writeProblem(t, body), "-solver", "auto")
		if res.Eps != 0.03 || res.Norm != "inf" || res.CleanObjective == nil || res.LowerBound == nil || res.CertifiedGap == nil {
			t.Fatalf("%v: eps %v norm %q clean %v lower bound %v", c, res.Eps, res.Norm, res.CleanObjective, res.LowerBound)
		}
		if *res.CleanObjective > res.Objective+1e-9 || res.MaxViolation > 0 || *res.CertifiedGap > 1e-6 || *res.LowerBound > res.Objective {
			t.Errorf("%v: robust objective %v, clean %v, violation %v, certificate [%v, %v] gap %v", c, res.Objective, *res.CleanObjective, res.MaxViolation, *res.LowerBound, *res.UpperBound, *res.CertifiedGap)
		}
		// The interior-point method to a gap: the status says whether the
		// certificate met it.
		if g := solveJSON(t, "-problem", writeProblem(t, body), "-solver", "ipm", "-gap", "1e-6"); g.Status != "gap reached" || *g.CertifiedGap > 1e-6 {
			t.Errorf("%v: ipm to a gap of 1e-6: %s, certified gap %v", c, g.Status, *g.CertifiedGap)
		}
		// Interrupted before its first step, the ADMM splitting still writes
		// its certified (zero) point.
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		var out bytes.Buffer
		if err := solveCommand(ctx, []string{"-problem", writeProblem(t, body), "-solver", "admm"}, &out); err != nil {
			t.Fatalf("%v: interrupted ADMM: %v", c, err)
		}
		var cut resultJSON
		if err := json.Unmarshal(out.Bytes(), &cut); err != nil || cut.Status != "interrupted" || cut.LowerBound == nil || *cut.LowerBound > *res.UpperBound+1e-9 || cut.MaxViolation > 0 {
			t.Errorf("%v: interrupted ADMM: %v, result %+v", c, err, cut)
		}
		// The ADMM splitting: a certificate that holds the interior-point
		// optimum, the robust constraints kept.
		ad := solveJSON(t, "-problem", writeProblem(t, body), "-solver", "admm", "-gap", "1e-4", "-max-iter", "20000")
		if ad.Solver != "admm" || ad.MaxViolation > 0 || *ad.LowerBound > *res.UpperBound+1e-9 || *ad.UpperBound < *res.LowerBound-1e-9 || ad.Status != "gap reached" || *ad.CertifiedGap > 1e-4 {
			t.Errorf("%v: ADMM %q: status %q, violation %v, bounds [%v, %v] (gap %v) against the optimum in [%v, %v]", c, ad.Solver, ad.Status, ad.MaxViolation, *ad.LowerBound, *ad.UpperBound, *ad.CertifiedGap, *res.LowerBound, *res.UpperBound)
		}
	}
}

// -save writes the trained network of every model to a network file that
// is that network: loaded back, the CNN, batch-norm and two-hidden
// networks have the result's non-convex objective on the problem's data,
// and the ReLU network scores the rows as the result's "network" does.
func TestSolveSaveEveryModel(t *testing.T) {
	for _, c := range []struct {
		name, body string
		args       []string
		model      netfile.Model
	}{
		{"relu", randomProblem(20, 2, "hinge", 2), []string{"-solver", "ipm"}, netfile.ReLU},
		{"batchnorm", withFields(t, randomProblem(30, 3, "squared", 5), map[string]any{"bias": nil, "model": "batchnorm"}), []string{"-solver", "ipm"}, netfile.BatchNorm},
		{"cnn-avg", cnnProblem(12, []int{1, 3, 4}, "hinge", "cnn-avg", 2), []string{"-solver", "auto"}, netfile.CNN},
		{"cnn-max bce", cnnProblem(12, []int{1, 3, 4}, "bce", "cnn-max", 3), []string{"-solver", "admm", "-max-iter", "200"}, netfile.CNN},
		{"robust cnn-avg", withFields(t, cnnProblem(10, []int{1, 4, 4}, "hinge", "cnn-avg", 4), map[string]any{"eps": 0.03, "P": 3}), []string{"-solver", "auto"}, netfile.CNN},
		{"two-hidden", withFields(t, randomProblem(16, 2, "squared", 3), map[string]any{"model": "two-hidden", "m1": 2, "P": 5}), []string{"-solver", "auto"}, netfile.TwoHidden},
	} {
		save := filepath.Join(t.TempDir(), "net.npz")
		res := solveJSON(t, append([]string{"-problem", writeProblem(t, c.body), "-save", save}, c.args...)...)
		f, err := netfile.Load(save)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if f.Model != c.model {
			t.Fatalf("%s: saved a %v network", c.name, f.Model)
		}
		var pj problemJSON
		if err := json.Unmarshal([]byte(c.body), &pj); err != nil {
			t.Fatal(err)
		}
		x := mat.NewDense(len(pj.X), len(pj.X[0]), nil)
		for k, row := range pj.X {
			x.SetRow(k, row)
		}
		loss, _ := solvers.ParseLoss(pj.Loss)
		var obj float64
		switch f.Model {
		case netfile.CNN:
			obj, err = f.CNN.Objective(x, pj.Y, loss, *pj.Beta)
		case netfile.BatchNorm:
			obj, err = f.BatchNorm.Objective(x, pj.Y, loss, *pj.Beta)
		case netfile.TwoHidden:
			obj, err = f.TwoHidden.Objective(x, pj.Y, loss, *pj.Beta)
		case netfile.ReLU:
			raw, _ := json.Marshal(res)
			net, err := readNetwork(bytes.NewReader(raw))
			if err != nil {
				t.Fatal(err)
			}
			want, _ := net.Predict(x)
			got, err := f.Scores(x)
			if err != nil {
				t.Fatal(err)
			}
			for k := range want {
				if got.At(k, 0) != want[k] {
					t.Fatalf("%s: row %d scored %v by the file, %v by the result", c.name, k, got.At(k, 0), want[k])
				}
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if math.Abs(obj-res.NonconvexObjective) > 1e-9*math.Max(1, math.Abs(obj)) {
			t.Errorf("%s: the saved network's objective %.12g, the result's %.12g", c.name, obj, res.NonconvexObjective)
		}
	}
}

// A β far beyond the largest useful one: the interior-point method ends
// inaccurate at a point worth 10²⁹⁸, and the result is the certificate's
// zero network instead, for the two-layer and the CNN programs.
func TestSolveBeyondBetaMax(t *testing.T) {
	for name, body := range map[string]string{
		"relu": withFields(t, randomProblem(20, 2, "hinge", 2), map[string]any{"beta": 1e300}),
		"cnn":  withFields(t, cnnProblem(6, []int{1, 4, 4}, "hinge", "cnn-avg", 1), map[string]any{"beta": 1e300, "P": 3}),
	} {
		res := solveJSON(t, "-problem", writeProblem(t, body), "-solver", "ipm")
		if res.Objective != 1 || res.NonconvexObjective != 1 || res.MaxViolation != 0 || *res.LowerBound > 1 || *res.UpperBound < 1 {
			t.Errorf("%s: objective %v (network %v), violation %v, certificate [%v, %v]; want the zero network's 1", name, res.Objective, res.NonconvexObjective, res.MaxViolation, *res.LowerBound, *res.UpperBound)
		}
	}
}

// The winner bound from the command line: "winner_bound" with
// "bound_patterns" on a robust cnn-max problem, certified, below the
// appendix's program on the same sampled patterns; misplaced fields
// refused.
func TestSolveRobustCNNWinnerBound(t *testing.T) {
	body := withFields(t, cnnProblem(12, []int{1, 4, 4}, "hinge", "cnn-max", 4), map[string]any{"eps": 0.03, "P": 2})
	rows := solveJSON(t, "-problem", writeProblem(t, body), "-solver", "ipm")
	bound := solveJSON(t, "-problem", writeProblem(t, withFields(t, body, map[string]any{"winner_bound": true, "bound_patterns": 4})), "-solver", "ipm")
	if bound.LowerBound == nil || *bound.CertifiedGap > 1e-6 || bound.MaxViolation != 0 || !(bound.Objective < rows.Objective) || bound.CleanObjective == nil || *bound.CleanObjective > bound.Objective+1e-9 {
		t.Errorf("winner bound: objective %v (the appendix's program %v), clean %v, certified gap %v, violation %v", bound.Objective, rows.Objective, bound.CleanObjective, bound.CertifiedGap, bound.MaxViolation)
	}
	for _, c := range []struct {
		fields map[string]any
		want   string
	}{
		{map[string]any{"winner_bound": true, "eps": 0}, `robust program of "cnn-max"`},
		{map[string]any{"bound_patterns": 3}, `with "winner_bound": true`},
		{map[string]any{"winner_bound": true, "bound_patterns": -1}, `"bound_patterns": -1`},
		{map[string]any{"winner_bound": true, "model": "cnn-avg"}, `belong to the model "cnn-max"`},
	} {
		var out bytes.Buffer
		err := solveCommand(context.Background(), []string{"-problem", writeProblem(t, withFields(t, body, c.fields)), "-solver", "ipm"}, &out)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: error %v, want one naming %s", c.fields, err, c.want)
		}
	}
}

// "backprop_patterns" adds a back-prop CNN's patterns: the certified
// optimum is lower than over the sampled patterns alone, on both poolings;
// robust problems and other models refuse the field.
func TestSolveCNNBackpropPatterns(t *testing.T) {
	for _, model := range []string{"cnn-avg", "cnn-max"} {
		body := withFields(t, cnnProblem(12, []int{1, 4, 4}, "hinge", model, 4), map[string]any{"P": 2})
		sampled := solveJSON(t, "-problem", writeProblem(t, body), "-solver", "ipm")
		trained := solveJSON(t, "-problem", writeProblem(t, withFields(t, body, map[string]any{"backprop_patterns": 3})), "-solver", "ipm")
		if trained.LowerBound == nil || *trained.CertifiedGap > 1e-6 || !(trained.Objective < sampled.Objective) {
			t.Errorf("%s: objective %v with back-prop patterns (certified gap %v), %v without", model, trained.Objective, trained.CertifiedGap, sampled.Objective)
		}
	}
	body := cnnProblem(12, []int{1, 4, 4}, "hinge", "cnn-max", 4)
	for _, c := range []struct {
		fields map[string]any
		want   string
	}{
		{map[string]any{"backprop_patterns": -2}, `"backprop_patterns": -2`},
		{map[string]any{"backprop_patterns": 2, "eps": 0.03}, `on a standard CNN`},
		{map[string]any{"backprop_patterns": 2, "model": "relu", "shape": nil, "filter": 0, "stride": 0}, `belong to the models "cnn-avg" and "cnn-max"`},
	} {
		var out bytes.Buffer
		err := solveCommand(context.Background(), []string{"-problem", writeProblem(t, withFields(t, body, c.fields)), "-solver", "ipm"}, &out)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: error %v, want one naming %s", c.fields, err, c.want)
		}
	}
}
