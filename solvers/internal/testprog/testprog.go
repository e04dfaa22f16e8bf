// Package testprog holds what the solvers' tests share: random convex
// programs with a planted two-layer teacher, and the independent oracle,
// Debian's python3-cvxopt, run on the same programs (cvxopt_oracle.py, in
// mode "general" for eq. convex_general and in mode "robust" for the robust
// programs). Tests only.
package testprog

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"

	"github.com/convexnn/convexnn/internal/testenv"
	"github.com/convexnn/convexnn/solvers"
	"gonum.org/v1/gonum/mat"
)

//go:embed cvxopt_oracle.py
var oracleScript string

// Instance describes a random program for the interior-point tests.
type Instance struct {
	N, D, P int // D counts the bias column when Bias is set
	Loss    solvers.Loss
	Bias    bool
	Beta    float64
	Seed    uint64
}

func (c Instance) String() string {
	return fmt.Sprintf("%v n=%d d=%d P=%d bias=%v β=%g", c.Loss, c.N, c.D, c.P, c.Bias, c.Beta)
}

// Random returns a program on Gaussian data (with a last column of
// ones when c.Bias) whose targets come from a random two-layer teacher
// network (plus noise; signs for the hinge loss) and whose patterns are
// D = diag(1[Xa ≥ 0]) for random Gaussian directions a, without repeats.
func Random(t testing.TB, c Instance) *solvers.Program {
	t.Helper()
	rng := rand.New(rand.NewPCG(c.Seed, 11))
	x := mat.NewDense(c.N, c.D, nil)
	for k := 0; k < c.N; k++ {
		for l := 0; l < c.D; l++ {
			x.Set(k, l, rng.NormFloat64())
		}
		if c.Bias {
			x.Set(k, c.D-1, 1)
		}
	}
	dot := func(k int, a []float64) float64 { return mat.Dot(x.RowView(k), mat.NewVecDense(c.D, a)) }
	randDir := func() []float64 {
		a := make([]float64, c.D)
		for l := range a {
			a[l] = rng.NormFloat64()
		}
		return a
	}
	const teacher = 3
	us := make([][]float64, teacher)
	for j := range us {
		us[j] = randDir()
	}
	y := make([]float64, c.N)
	for k := range y {
		var f float64
		for j, u := range us {
			f += math.Max(0, dot(k, u)) * float64(1-2*(j%2))
		}
		if c.Loss == solvers.HingeLoss {
			y[k] = 1
			if f+0.3*rng.NormFloat64() < 0 {
				y[k] = -1
			}
		} else {
			y[k] = f + 0.1*rng.NormFloat64()
		}
	}
	p := &solvers.Program{X: x, Y: y, Loss: c.Loss, Beta: c.Beta, Bias: c.Bias}
	seen := map[string]bool{}
	for tries := 0; len(p.D) < c.P && tries < 1000; tries++ {
		a := randDir()
		pat := make(solvers.Pattern, c.N)
		key := make([]byte, c.N)
		for k := range pat {
			pat[k] = dot(k, a) >= 0
			key[k] = '0'
			if pat[k] {
				key[k] = '1'
			}
		}
		if !seen[string(key)] {
			seen[string(key)] = true
			p.D = append(p.D, pat)
		}
	}
	if err := p.Validate(); err != nil {
		t.Fatal(err)
	}
	return p
}

// Square2D returns n points (a_k, b_k) drawn from rng uniformly in the square
// [−1, 1]², with a bias column (d = 3), and the targets y_k = f(a_k, b_k).
func Square2D(n int, rng *rand.Rand, f func(a, b float64) float64) (*mat.Dense, []float64) {
	x := mat.NewDense(n, 3, nil)
	y := make([]float64, n)
	for k := range y {
		a, b := 2*rng.Float64()-1, 2*rng.Float64()-1
		x.SetRow(k, []float64{a, b, 1})
		y[k] = f(a, b)
	}
	return x, y
}

// Recovered returns the network p.Recover builds from w and its non-convex
// objective l^{u,α} (eq. nonconvex_general), failing the test on an error.
func Recovered(t testing.TB, p *solvers.Program, w solvers.Weights) (*solvers.Network, float64) {
	t.Helper()
	var obj float64
	net, err := p.Recover(w)
	if err == nil {
		obj, err = p.NonconvexObjective(net)
	}
	if err != nil {
		t.Fatal(err)
	}
	return net, obj
}

// Saved returns a copy of a solver's state made as a saved run makes it:
// through JSON.
func Saved[S any](t testing.TB, st S) S {
	t.Helper()
	raw, err := json.Marshal(st)
	if err != nil {
		t.Fatal(err)
	}
	var out S
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// Python is Debian's Python, which has python3-cvxopt.
const Python = "/usr/bin/python3"

var cvxoptCheck = sync.OnceValue(func() error {
	out, err := exec.Command(Python, "-c", "import cvxopt").CombinedOutput()
	if err != nil {
		if msg := bytes.TrimSpace(out); len(msg) > 0 {
			err = fmt.Errorf("%v: %s", err, msg)
		}
		return fmt.Errorf("%s cannot import cvxopt (apt-get install python3-cvxopt): %v", Python, err)
	}
	return nil
})

// RequireCVXOPT skips the test when the oracle is missing, or fails it under
// CONVEXNN_REQUIRE_E2E=1 (make test).
func RequireCVXOPT(t *testing.T) {
	t.Helper()
	if err := cvxoptCheck(); err != nil {
		testenv.Missing(t, "the CVXOPT oracle is unavailable: %v", err)
	}
}

// CVXOPTResult is the oracle's answer for a program.
type CVXOPTResult struct {
	Status          string      `json:"status"`
	Objective       float64     `json:"objective"`
	SolverObjective float64     `json:"solver_objective"`
	Iterations      int         `json:"iterations"`
	Tolerance       float64     `json:"tolerance"`
	V               [][]float64 `json:"v"`
	W               [][]float64 `json:"w"`
}

// CVXOPTRobustResult is the robust oracle's answer, with the largest
// violation of the robust constraints at its solution.
type CVXOPTRobustResult struct {
	CVXOPTResult
	Violation float64 `json:"violation"`
}

// oracleInput is a program as the oracle reads it on stdin.
type oracleInput struct {
	solvers.ProgramRows
	Eps  float64 `json:"eps,omitempty"`
	Norm string  `json:"norm,omitempty"`
	Bias bool    `json:"bias,omitempty"`
}

func inputOf(p *solvers.Program) oracleInput {
	return oracleInput{ProgramRows: p.Rows()}
}

// runOracle runs the oracle script in mode on in and decodes its answer
// into out.
func runOracle(t *testing.T, mode string, in any, out any) {
	t.Helper()
	js, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(Python, "-c", oracleScript, mode)
	// One BLAS thread: the oracle's programs are small, and OpenBLAS's
	// threads spin on them (measured: the certify tests' 800 programs took
	// 35 s instead of 80–90 s).
	cmd.Env = append(os.Environ(), "OPENBLAS_NUM_THREADS=1", "OMP_NUM_THREADS=1")
	cmd.Stdin = bytes.NewReader(js)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	res, err := cmd.Output()
	if err != nil {
		t.Fatalf("cvxopt oracle: %v: %s", err, stderr.String())
	}
	if err := json.Unmarshal(res, out); err != nil {
		t.Fatalf("cvxopt oracle output %q: %v", res, err)
	}
}

// CVXOPT solves p (eq. convex_general) with the oracle.
func CVXOPT(t *testing.T, p *solvers.Program) CVXOPTResult {
	t.Helper()
	var res CVXOPTResult
	runOracle(t, "general", inputOf(p), &res)
	return res
}

// CVXOPTBatchNormResult is the batch-normalization oracle's answer: its
// solution in its own basis U′ and the numerical rank r it found.
type CVXOPTBatchNormResult struct {
	CVXOPTResult
	Rank int `json:"rank"`
}

// CVXOPTBatchNorm solves eq. (BNregularizedtrainingconvex) for the raw data
// x (no bias column), labels y, patterns d, the loss and β with the oracle,
// which centres x and computes U′ itself.
func CVXOPTBatchNorm(t *testing.T, x *mat.Dense, y []float64, d solvers.Patterns, loss solvers.Loss, beta float64) CVXOPTBatchNormResult {
	t.Helper()
	p := &solvers.Program{X: x, Y: y, D: d, Loss: loss, Beta: beta}
	var res CVXOPTBatchNormResult
	runOracle(t, "batchnorm", inputOf(p), &res)
	return res
}

// Operator is a linear map as CVXOPTGeneral reads it (general.Operator;
// testprog cannot import solvers/general, which the tests of ipm and
// certify below it use testprog).
type Operator interface {
	Dims() (r, c int)
	Apply(dst, x []float64)
}

// CVXOPTGeneral solves eq. (ct_general) with F, the groups' sizes and
// constraint blocks (nil: none; general.Program.Blocks gives both), y, the
// loss and β with the oracle, which gets F and the blocks as dense
// matrices.
func CVXOPTGeneral[B Operator](t *testing.T, f Operator, sizes []int, blocks []B, y []float64, loss solvers.Loss, beta float64) CVXOPTResult {
	t.Helper()
	dense := func(op Operator) [][]float64 {
		r, c := op.Dims()
		out := make([][]float64, r)
		for i := range out {
			out[i] = make([]float64, c)
		}
		e, col := make([]float64, c), make([]float64, r)
		for j := 0; j < c; j++ {
			e[j] = 1
			op.Apply(col, e)
			for i, v := range col {
				out[i][j] = v
			}
			e[j] = 0
		}
		return out
	}
	in := struct {
		F     [][]float64   `json:"F"`
		Y     []float64     `json:"y"`
		Sizes []int         `json:"sizes"`
		G     [][][]float64 `json:"G"`
		Loss  string        `json:"loss"`
		Beta  float64       `json:"beta"`
	}{F: dense(f), Y: y, Sizes: sizes, Loss: loss.String(), Beta: beta}
	for _, b := range blocks {
		blk := [][]float64{}
		if any(b) != nil {
			blk = dense(b)
		}
		in.G = append(in.G, blk)
	}
	for len(in.G) < len(sizes) {
		in.G = append(in.G, [][]float64{}) // no constraint on this group
	}
	var res CVXOPTResult
	runOracle(t, "ctgeneral", in, &res)
	return res
}

// CVXOPTRobustCNNInput is a robust CNN program as the oracle reads it: the
// images (rows, CHW), their shape (C, H, W), the filters' size, stride and
// padding, whether the filters have biases, the pooling ("avg" or "max"),
// the groups' patterns Signs[i][k][m] (filter group i, patch k, image m;
// max pooling: Signs[i][0][m] and the winners Argmax[i][m]), the labels,
// the loss, β and ε.
type CVXOPTRobustCNNInput struct {
	Pool   string      `json:"pool"`
	Argmax [][]int     `json:"argmax,omitempty"`
	X      [][]float64 `json:"X"`
	Y      []float64   `json:"y"`
	Shape  [3]int      `json:"shape"`
	Conv   [3]int      `json:"conv"`
	Bias   bool        `json:"bias"`
	Loss   string      `json:"loss"`
	Signs  [][][]bool  `json:"signs"`
	Beta   float64     `json:"beta"`
	Eps    float64     `json:"eps"`
}

// CVXOPTRobustCNN solves the robust CNN program with the oracle and returns
// its status and optimal value.
func CVXOPTRobustCNN(t *testing.T, in CVXOPTRobustCNNInput) (status string, objective float64) {
	t.Helper()
	var res struct {
		Status    string  `json:"status"`
		Objective float64 `json:"objective"`
	}
	runOracle(t, "robustcnn", in, &res)
	return res.Status, res.Objective
}

// CVXOPTRobust solves the robust program of p and pert with the robust
// oracle.
func CVXOPTRobust(t *testing.T, p *solvers.Program, pert solvers.Perturbation) CVXOPTRobustResult {
	t.Helper()
	in := inputOf(p)
	in.Eps, in.Norm, in.Bias = pert.Eps, string(pert.Norm.Canonical()), p.Bias
	var res CVXOPTRobustResult
	runOracle(t, "robust", in, &res)
	return res
}

// CVXOPTRobustBatch solves the robust program of every ps[k] with
// perts[k] in one run of the robust oracle (one Python start for all).
func CVXOPTRobustBatch(t *testing.T, ps []*solvers.Program, perts []solvers.Perturbation) []CVXOPTRobustResult {
	t.Helper()
	ins := make([]oracleInput, len(ps))
	for k, p := range ps {
		ins[k] = inputOf(p)
		ins[k].Eps, ins[k].Norm, ins[k].Bias = perts[k].Eps, string(perts[k].Norm.Canonical()), p.Bias
	}
	var res []CVXOPTRobustResult
	runOracle(t, "robust", ins, &res)
	if len(res) != len(ps) {
		t.Fatalf("cvxopt oracle answered %d of %d programs", len(res), len(ps))
	}
	return res
}

// RobustInstances are small random programs; D counts the bias column.
var RobustInstances = []Instance{
	{N: 24, D: 3, P: 5, Loss: solvers.HingeLoss, Bias: true, Beta: 0.01, Seed: 21},
	{N: 20, D: 2, P: 4, Loss: solvers.HingeLoss, Beta: 0.05, Seed: 22},
	{N: 30, D: 3, P: 6, Loss: solvers.SquaredLoss, Bias: true, Beta: 0.1, Seed: 23},
	{N: 22, D: 3, P: 4, Loss: solvers.SquaredLoss, Beta: 0.05, Seed: 24},
}

// RandomSampled is Random's data with the patterns replaced by
// solvers.SamplePatterns' draws.
func RandomSampled(t *testing.T, c Instance) *solvers.Program {
	t.Helper()
	p := Random(t, c)
	pats, err := solvers.SamplePatterns(p.X, c.P, c.Seed, 0)
	if err != nil {
		t.Fatalf("SamplePatterns: %v", err)
	}
	p.D = pats
	if err := p.Validate(); err != nil {
		t.Fatal(err)
	}
	return p
}

// Optimal runs solve, which logs its progress to the writer it is given,
// and fails the test with that log unless solve returns no error and check
// accepts the result.
func Optimal[R any](t testing.TB, what string, solve func(log io.Writer) (R, error), check func(R) error) R {
	t.Helper()
	var log strings.Builder
	res, err := solve(&log)
	if err == nil {
		err = check(res)
	}
	if err != nil {
		t.Fatalf("%s: %v\n%s", what, err, log.String())
	}
	return res
}

// RelDiff returns ‖a − b‖₂/‖b‖₂.
func RelDiff(a, b []float64) float64 {
	var num, den float64
	for i := range a {
		num += (a[i] - b[i]) * (a[i] - b[i])
		den += b[i] * b[i]
	}
	return math.Sqrt(num / den)
}

// CheckIPM is the acceptance of an interior-point result: optimal (status
// says how it ended otherwise) with a relative gap of at most maxGap.
func CheckIPM(optimal bool, status fmt.Stringer, iters int, gap, maxGap float64) error {
	switch {
	case !optimal:
		return fmt.Errorf("status %v after %d iterations", status, iters)
	case gap > maxGap:
		return fmt.Errorf("optimal with gap %v > %v", gap, maxGap)
	}
	return nil
}
