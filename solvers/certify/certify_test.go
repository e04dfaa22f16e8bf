package certify

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"testing"
	"time"

	"github.com/convexnn/convexnn/internal/testenv"
	"github.com/convexnn/convexnn/solvers"
	"github.com/convexnn/convexnn/solvers/internal/testprog"
	"gonum.org/v1/gonum/mat"
)

// instance is a random program with its perturbation set (ε = 0: standard).
type instance struct {
	p    *solvers.Program
	pert solvers.Perturbation
	name string
}

// randomInstances returns count small random programs with the given loss,
// robust (ε > 0, the ℓ_∞, ℓ₂ and ℓ₁ sets in turn) or standard, with labels
// of the loss's kind: teacher-network targets for the squared loss, their
// signs for hinge and logistic, 0/1 for BCE.
func randomInstances(t *testing.T, loss solvers.Loss, robust bool, count int, seed uint64) []instance {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 7))
	norms := []solvers.Norm{solvers.LInf, solvers.L2, solvers.L1}
	var out []instance
	for len(out) < count {
		c := testprog.Instance{N: 6 + rng.IntN(19), D: 2 + rng.IntN(3), P: 2 + rng.IntN(5),
			Loss: solvers.SquaredLoss, Bias: rng.IntN(2) == 0, Beta: math.Pow(10, -3+2*rng.Float64()), Seed: rng.Uint64()}
		p := testprog.Random(t, c)
		for k, y := range p.Y {
			switch loss {
			case solvers.HingeLoss, solvers.LogisticLoss:
				p.Y[k] = math.Copysign(1, y)
			case solvers.BCELoss:
				p.Y[k] = 0
				if y > 0 {
					p.Y[k] = 1
				}
			}
		}
		p.Loss = loss
		var pert solvers.Perturbation
		if robust {
			pert = solvers.Perturbation{Eps: 0.02 + 0.2*rng.Float64(), Norm: norms[len(out)%3]}
		}
		out = append(out, instance{p: p, pert: pert, name: fmt.Sprintf("#%d %v %v", len(out), c, pert)})
	}
	return out
}

// oracleOptima solves every instance with the cvxopt oracle (one run).
func oracleOptima(t *testing.T, ins []instance) []testprog.CVXOPTRobustResult {
	t.Helper()
	ps := make([]*solvers.Program, len(ins))
	perts := make([]solvers.Perturbation, len(ins))
	for k, in := range ins {
		ps[k], perts[k] = in.p, in.pert
	}
	start := time.Now()
	defer func() { t.Logf("oracle: %d programs in %.1f s", len(ins), time.Since(start).Seconds()) }()
	return testprog.CVXOPTRobustBatch(t, ps, perts)
}

func weightsOf(v, w [][]float64) solvers.Weights {
	np, d := len(v), len(v[0])
	out := solvers.Weights{V: mat.NewDense(np, d, nil), W: mat.NewDense(np, d, nil)}
	for i := range v {
		out.V.SetRow(i, v[i])
		out.W.SetRow(i, w[i])
	}
	return out
}

// TestBoundsEncloseTheOptimum checks Lower ≤ p* ≤ Upper on 100 random
// instances per loss, standard and robust, at points from far (zero, random
// weights) to near the optimum (the oracle's solution, and that solution
// disturbed), and with a hint of random numbers, against the optimum of
// Debian's cvxopt; and that the restored point is feasible with an
// objective within Upper.
func TestBoundsEncloseTheOptimum(t *testing.T) {
	testprog.RequireCVXOPT(t)
	count := 100 // per loss, standard and robust: the pure-Go pass of make test
	if testing.Short() || testenv.Race {
		count = 12
	}
	for _, loss := range []solvers.Loss{solvers.SquaredLoss, solvers.HingeLoss, solvers.BCELoss, solvers.LogisticLoss} {
		for _, robust := range []bool{false, true} {
			const parts = 4 // the oracle's Python is most of the time: parts of a setting run side by side
			for part := 0; part < parts; part++ {
				t.Run(fmt.Sprintf("%v/robust=%v/part=%d", loss, robust, part), func(t *testing.T) {
					t.Parallel()
					all := randomInstances(t, loss, robust, count, uint64(loss)*10+map[bool]uint64{false: 1, true: 2}[robust])
					ins := all[part*len(all)/parts : (part+1)*len(all)/parts]
					opts := oracleOptima(t, ins)
					var gaps, exactGaps []float64
					worse := 0
					for k, in := range ins {
						opt := opts[k]
						if opt.Status != "optimal" {
							t.Logf("%s: oracle status %s, skipped", in.name, opt.Status)
							continue
						}
						tol := 1e-7 * math.Max(1, math.Abs(opt.Objective))
						cert, err := New(in.p, in.pert)
						if err != nil {
							t.Fatal(err)
						}
						// A certifier that refines only to 1 % of β over: its
						// bounds must be as valid.
						rough, err := New(in.p, in.pert)
						if err != nil {
							t.Fatal(err)
						}
						rough.Enough = 0.01
						// With the exact multipliers (an interior-point solver,
						// set by exact_test.go) and with a solver of junk.
						exact, err := New(in.p, in.pert)
						if err != nil {
							t.Fatal(err)
						}
						exact.Exact = ExactSolverForTest
						junkQP, err := New(in.p, in.pert)
						if err != nil {
							t.Fatal(err)
						}
						junkQP.Exact = junkSolver(uint64(k))
						rng := rand.New(rand.NewPCG(uint64(k), 3))
						sol := weightsOf(opt.V, opt.W)
						noisy := solvers.Weights{V: mat.DenseCopyOf(sol.V), W: mat.DenseCopyOf(sol.W)}
						scale := mat.Norm(sol.V, 2) + mat.Norm(sol.W, 2) + 1e-3
						noisy.V.Apply(func(_, _ int, v float64) float64 { return v + 1e-3*scale*rng.NormFloat64() }, noisy.V)
						random := in.p.NewWeights()
						random.V.Apply(func(_, _ int, v float64) float64 { return rng.NormFloat64() }, random.V)
						random.W.Apply(func(_, _ int, v float64) float64 { return rng.NormFloat64() }, random.W)
						// A hint of random numbers: the certifier must project it
						// into the dual's domain, whatever it holds.
						n, d, np := in.p.Dims()
						junk := &Hint{Mu: make([]float64, n), Lambda: make([]float64, n),
							Slopes: mat.NewDense(n, d, nil), Alpha: mat.NewDense(2*np, n, nil)}
						for k := range junk.Mu {
							junk.Mu[k], junk.Lambda[k] = rng.NormFloat64(), math.Abs(rng.NormFloat64())
						}
						junk.Slopes.Apply(func(_, _ int, v float64) float64 { return rng.NormFloat64() }, junk.Slopes)
						junk.Alpha.Apply(func(_, _ int, v float64) float64 { return rng.NormFloat64() }, junk.Alpha)
						for _, pt := range []struct {
							name string
							wt   solvers.Weights
							hint *Hint
						}{{"zero", in.p.NewWeights(), nil}, {"random", random, nil}, {"noisy", noisy, nil}, {"oracle", sol, nil}, {"oracle with a random hint", sol, junk}} {
							b, err := cert.Bound(pt.wt, pt.hint)
							if err != nil {
								t.Fatalf("%s at %s: %v", in.name, pt.name, err)
							}
							if b.Lower > opt.Objective+tol || b.Upper < opt.Objective-tol {
								t.Errorf("%s at %s: bounds [%.12g, %.12g] miss the optimum %.12g", in.name, pt.name, b.Lower, b.Upper, opt.Objective)
							}
							if rb, err := rough.Bound(pt.wt, pt.hint); err != nil || rb.Lower > opt.Objective+tol {
								t.Errorf("%s at %s with Enough = %g: lower bound %.12g above the optimum %.12g (%v)", in.name, pt.name, rough.Enough, rb.Lower, opt.Objective, err)
							}
							if jb, err := junkQP.Bound(pt.wt, pt.hint); err != nil || jb.Lower > opt.Objective+tol {
								t.Errorf("%s at %s with junk exact multipliers: lower bound %.12g above the optimum %.12g (%v)", in.name, pt.name, jb.Lower, opt.Objective, err)
							}
							eb, err := exact.Bound(pt.wt, pt.hint)
							if err != nil || eb.Lower > opt.Objective+tol || eb.Upper < opt.Objective-tol {
								t.Errorf("%s at %s with exact multipliers: bounds [%.12g, %.12g] miss the optimum %.12g (%v)", in.name, pt.name, eb.Lower, eb.Upper, opt.Objective, err)
							}
							if pt.name == "oracle" {
								exactGaps = append(exactGaps, eb.Gap)
								if eb.Gap > b.Gap*(1+1e-3)+1e-9 {
									worse++
									t.Logf("%s: gap %.3g with exact multipliers, %.3g without", in.name, eb.Gap, b.Gap)
								}
							}
							viol, _ := solvers.RobustViolation(in.p, b.Feasible, in.pert)
							obj, _ := cert.objective(b.Feasible)
							if viol > 0 || obj > b.Upper {
								t.Errorf("%s at %s: restored point violates by %g, objective %g > upper %g", in.name, pt.name, viol, obj, b.Upper)
							}
							if pt.name == "oracle" {
								gaps = append(gaps, b.Gap)
							}
						}
					}
					sort.Float64s(gaps)
					sort.Float64s(exactGaps)
					if len(gaps) > 0 {
						t.Logf("certified gap at the oracle's solution: median %.2g, 90%% %.2g, max %.2g over %d instances; with exact multipliers: median %.2g, 90%% %.2g, max %.2g", gaps[len(gaps)/2], gaps[len(gaps)*9/10], gaps[len(gaps)-1], len(gaps),
							exactGaps[len(gaps)/2], exactGaps[len(gaps)*9/10], exactGaps[len(gaps)-1])
					}
					// The exact multipliers, polished by the same steps, are
					// the best for the point's μ: on a standard program they
					// may leave a larger gap than the steps alone at no more
					// than a tenth of the points. On a robust one the slopes
					// W move with α after them and may end elsewhere (in one
					// run, at 11 of the 400 robust oracle points, by up to
					// 50 %); there the median and the 90 % point may not be
					// larger.
					switch {
					case !robust && worse > len(exactGaps)/10:
						t.Errorf("the exact multipliers left a larger gap than the projected-gradient steps at %d of %d oracle solutions", worse, len(exactGaps))
					case len(gaps) > 0 && (exactGaps[len(gaps)/2] > gaps[len(gaps)/2]*(1+1e-3)+1e-9 || exactGaps[len(gaps)*9/10] > gaps[len(gaps)*9/10]*(1+1e-3)+1e-9):
						t.Errorf("the exact multipliers left larger gaps than the projected-gradient steps: median %.3g against %.3g, 90 %% %.3g against %.3g",
							exactGaps[len(gaps)/2], gaps[len(gaps)/2], exactGaps[len(gaps)*9/10], gaps[len(gaps)*9/10])
					}
				})
			}
		}
	}
}

// ExactSolverForTest is the projection solver of the exact multipliers
// (ipm.SolveProjection, set by exact_test.go: package ipm imports certify).
var ExactSolverForTest QPSolver

// junkSolver returns a QPSolver of random numbers, NaN and infinities
// among them: bounds must stay valid whatever it returns.
func junkSolver(seed uint64) QPSolver {
	rng := rand.New(rand.NewPCG(seed, 11))
	return func(q *ProjectionQP) ([]float64, error) {
		r, _ := q.G.Dims()
		z := make([]float64, r)
		for k := range z {
			switch rng.IntN(20) {
			case 0:
				z[k] = math.NaN()
			case 1:
				z[k] = math.Inf(1)
			default:
				z[k] = 10 * rng.NormFloat64()
			}
		}
		if rng.IntN(3) == 0 {
			clear(z) // zeros: finite, and all of them valid
		}
		return z, nil
	}
}

// TestProjectL1 checks the ℓ₁-ball projection against its defining
// properties, radius 0 included.
func TestProjectL1(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 5))
	for trial := 0; trial < 200; trial++ {
		r := make([]float64, 1+rng.IntN(6))
		for j := range r {
			r[j] = rng.NormFloat64()
		}
		rad := []float64{0, 0.1, 1, 10}[trial%4]
		p := append([]float64(nil), r...)
		projectL1(p, rad)
		var l1 float64
		for _, v := range p {
			l1 += math.Abs(v)
		}
		if l1 > rad*(1+1e-12)+1e-15 {
			t.Fatalf("projection of %v onto radius %v has ℓ₁ norm %v", r, rad, l1)
		}
		// Optimality: no point of the ball on the segment to a random point of
		// the ball is closer.
		q := make([]float64, len(r))
		var lq float64
		for j := range q {
			q[j] = rng.NormFloat64()
			lq += math.Abs(q[j])
		}
		for j := range q {
			q[j] *= rad / math.Max(lq, 1e-300)
		}
		var dot float64
		for j := range r {
			dot += (r[j] - p[j]) * (q[j] - p[j])
		}
		if dot > 1e-12 {
			t.Fatalf("projection of %v onto radius %v: %v is not the nearest point (⟨r − p, q − p⟩ = %v)", r, rad, p, dot)
		}
	}
}
