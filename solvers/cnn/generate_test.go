package cnn_test

import (
	"context"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/convexnn/convexnn/solvers"
	"github.com/convexnn/convexnn/solvers/cnn"
	"github.com/convexnn/convexnn/solvers/general"
	"gonum.org/v1/gonum/floats"
	"gonum.org/v1/gonum/mat"
)

// dualValue is Σ_n θ_n pool_k (x_nkᵀu)_+ computed directly from the patches.
func dualValue(p *cnn.Problem, theta, u []float64) float64 {
	n, _ := p.X.Dims()
	var v float64
	for m := 0; m < n; m++ {
		var pool float64
		for k, xk := range p.Patches {
			r := math.Max(0, floats.Dot(xk.RawRowView(m), u))
			if p.Pool == cnn.AvgPool {
				pool += r / float64(len(p.Patches))
			} else if r > pool || k == 0 {
				pool = math.Max(pool, r)
			}
		}
		v += theta[m] * pool
	}
	return v
}

func randomImages(rng *rand.Rand, n, c, h, w int) (*mat.Dense, []float64) {
	x := mat.NewDense(n, c*h*w, nil)
	y := make([]float64, n)
	for m := range n {
		row := x.RawRowView(m)
		for l := range row {
			row[l] = rng.Float64()
		}
		y[m] = 1
		if row[0]+row[len(row)-1] < 1 {
			y[m] = -1
		}
	}
	return x, y
}

// Price finds the maximum of the pricing problem where it can be found by
// brute force (filters of two entries: a fine grid of the circle), for both
// poolings and random duals, and its values are those of its directions.
func TestPriceFindsTheDualMaximum(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 3))
	for trial := range 12 {
		pool := []cnn.Pooling{cnn.AvgPool, cnn.MaxPool}[trial%2]
		x, y := randomImages(rng, 12, 2, 3, 3)
		for l := range x.RawMatrix().Data {
			x.RawMatrix().Data[l] -= 0.5 // responses of both signs
		}
		p, err := cnn.New(x, cnn.Shape{C: 2, H: 3, W: 3}, cnn.Conv{Size: 1, Stride: 1}, pool, y, solvers.HingeLoss, 1e-3)
		if err != nil {
			t.Fatal(err)
		}
		theta := make([]float64, len(y))
		for m := range theta {
			theta[m] = rng.NormFloat64()
		}
		got, err := p.Price(theta, cnn.PriceOptions{Starts: 32, Seed: uint64(trial)})
		if err != nil {
			t.Fatal(err)
		}
		best := 0.0
		for a := 0; a < 200000; a++ {
			phi := 2 * math.Pi * float64(a) / 200000
			u := []float64{math.Cos(phi), math.Sin(phi)}
			best = math.Max(best, math.Abs(dualValue(p, theta, u)))
		}
		if got[0].Value < best*(1-1e-4) {
			t.Errorf("trial %d (%v): Price's best %.8g, the circle's %.8g", trial, pool, got[0].Value, best)
		}
		for _, c := range got[:5] {
			if v := math.Abs(dualValue(p, theta, c.U)); math.Abs(v-c.Value) > 1e-9*math.Max(1, v) {
				t.Errorf("trial %d: value %.12g reported, %.12g at its direction", trial, c.Value, v)
			}
			if nm := floats.Norm(c.U, 2); math.Abs(nm-1) > 1e-12 {
				t.Errorf("trial %d: direction of norm %v", trial, nm)
			}
		}
	}
}

// Pattern generation: the loss dual of each solve meets the dual
// constraint on the program's own filters (|value| ≤ β‖u‖, the convention
// Price compares with β), the optimum falls with every round that adds
// patterns, and the last solve's certificate encloses the dense
// interior-point optimum of the program on the patterns it ends with.
func TestSolveGenerating(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 8))
	for trial := range 8 {
		loss := []solvers.Loss{solvers.HingeLoss, solvers.SquaredLoss}[trial%2]
		pool := []cnn.Pooling{cnn.AvgPool, cnn.MaxPool}[trial/2%2]
		x, y := randomImages(rng, 24, 1, 5, 5)
		p, err := cnn.New(x, cnn.Shape{C: 1, H: 5, W: 5}, cnn.Conv{Size: 3, Stride: 2, Bias: true}, pool, y, loss, 1e-3)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := p.SamplePatterns(2, uint64(trial)); err != nil {
			t.Fatal(err)
		}
		var objs []float64
		res, err := p.SolveGenerating(context.Background(), cnn.GenerateOptions{Rounds: 3, PerRound: 2, Price: cnn.PriceOptions{Seed: uint64(trial)}, Round: func(r cnn.GenerateRound) {
			objs = append(objs, r.Objective)
			if r.Patterns != len(p.Signs) {
				t.Errorf("trial %d round %d: %d patterns reported, the problem holds %d", trial, r.Round, r.Patterns, len(p.Signs))
			}
		}})
		if err != nil {
			t.Fatal(err)
		}
		if len(objs) < 2 {
			t.Fatalf("trial %d: %d rounds, the pricing added nothing", trial, len(objs))
		}
		for k := 1; k < len(objs); k++ {
			if objs[k] > objs[k-1]*(1+1e-7) {
				t.Errorf("trial %d: the optimum rose from %.9g to %.9g in round %d", trial, objs[k-1], objs[k], k)
			}
		}
		if objs[len(objs)-1] > objs[0]*(1-1e-3) {
			t.Errorf("trial %d: generation lowered the optimum from %.9g only to %.9g", trial, objs[0], objs[len(objs)-1])
		}
		gp, err := p.Program()
		if err != nil {
			t.Fatal(err)
		}
		dense, err := general.SolveInteriorPoint(context.Background(), gp, 1e-10)
		if err != nil {
			t.Fatal(err)
		}
		b := res.Bound
		tol := 1e-7 * math.Max(1, dense.Objective)
		if b.Lower > dense.Objective+tol || b.Upper < dense.Objective-tol || b.Gap > 1e-6 {
			t.Errorf("trial %d: certificate [%.10g, %.10g] (gap %.2g) against the dense optimum %.10g", trial, b.Lower, b.Upper, b.Gap, dense.Objective)
		}
	}
}

// A round's filters are Separation apart: at π a round adds one pattern,
// while nearly no separation lets it add several.
func TestGenerateSeparation(t *testing.T) {
	for _, pool := range []cnn.Pooling{cnn.AvgPool, cnn.MaxPool} {
		most := map[float64]int{}
		for _, sep := range []float64{math.Pi, 1e-6} {
			rng := rand.New(rand.NewPCG(3, 9))
			x, y := randomImages(rng, 24, 1, 5, 5)
			p, err := cnn.New(x, cnn.Shape{C: 1, H: 5, W: 5}, cnn.Conv{Size: 3, Stride: 2, Bias: true}, pool, y, solvers.HingeLoss, 1e-3)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := p.SamplePatterns(2, 1); err != nil {
				t.Fatal(err)
			}
			last := -1
			_, err = p.SolveGenerating(context.Background(), cnn.GenerateOptions{Rounds: 3, PerRound: 4, KeepZero: true, Separation: sep, Round: func(r cnn.GenerateRound) {
				if last >= 0 {
					most[sep] = max(most[sep], r.Patterns-last)
				}
				last = r.Patterns
			}})
			if err != nil {
				t.Fatal(err)
			}
		}
		if most[math.Pi] != 1 || most[1e-6] < 2 {
			t.Errorf("%v pooling: most patterns added in a round: %d at separation π (want 1), %d at 1e-6 (want ≥ 2)", pool, most[math.Pi], most[1e-6])
		}
	}
}

// The loss dual returned to the pricing is dual feasible for the program's
// own patterns: no filter of theirs has a value above β (up to the
// solver's tolerance), while a random pattern's filters may.
func TestGeneratingDualConvention(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 9))
	x, y := randomImages(rng, 30, 1, 5, 5)
	p, err := cnn.New(x, cnn.Shape{C: 1, H: 5, W: 5}, cnn.Conv{Size: 3, Stride: 2, Bias: true}, cnn.AvgPool, y, solvers.HingeLoss, 1e-3)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.SamplePatterns(3, 1); err != nil {
		t.Fatal(err)
	}
	var first *cnn.GenerateRound
	if _, err := p.SolveGenerating(context.Background(), cnn.GenerateOptions{Rounds: 1, PerRound: 1, Round: func(r cnn.GenerateRound) {
		if first == nil {
			first = &r
		}
	}}); err != nil {
		t.Fatal(err)
	}
	if first == nil || !(first.Violation > 1) {
		t.Fatalf("first round %+v: the pricing found nothing to add", first)
	}
	f := p.Filter()
	checked := 0
	for _, w := range [][]float64{first.Result.W, first.Result.Wp} {
		for i := 0; i+f <= len(w); i += f {
			u := w[i : i+f]
			nu := floats.Norm(u, 2)
			if nu < 1e-6 {
				continue
			}
			checked++
			// p has gained patterns since; the values need only the patches.
			if v := math.Abs(dualValue(p, first.Theta, u)); v > p.Beta*nu*(1+1e-5) {
				t.Errorf("a filter of the program has dual value %.9g > β‖u‖ = %.9g", v, p.Beta*nu)
			}
		}
	}
	if checked == 0 {
		t.Fatal("the first solve has no nonzero group")
	}
}

func TestGenerateBadInput(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 1))
	x, y := randomImages(rng, 6, 1, 4, 4)
	avg, err := cnn.New(x, cnn.Shape{C: 1, H: 4, W: 4}, cnn.Conv{Size: 2, Stride: 2}, cnn.AvgPool, y, solvers.HingeLoss, 1e-3)
	if err != nil {
		t.Fatal(err)
	}
	bce, err := cnn.New(x, cnn.Shape{C: 1, H: 4, W: 4}, cnn.Conv{Size: 2, Stride: 2}, cnn.MaxPool, y, solvers.LogisticLoss, 1e-3)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := bce.SamplePatterns(2, 1); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		run  func() error
		want string
	}{
		{func() error { _, err := avg.Price(make([]float64, 5), cnn.PriceOptions{}); return err }, "5 dual values for 6 images"},
		{func() error {
			_, err := avg.Price([]float64{1, math.NaN(), 0, 0, 0, 0}, cnn.PriceOptions{})
			return err
		}, "dual value 1 is NaN"},
		{func() error { _, err := avg.Price(make([]float64, 6), cnn.PriceOptions{Steps: -1}); return err }, "need ≥ 0"},
		{func() error {
			_, err := avg.Price(make([]float64, 6), cnn.PriceOptions{From: [][]float64{{1, 2}}})
			return err
		}, "start 0 has 2 entries, filters have 4"},
		{func() error { _, err := bce.SolveGenerating(context.Background(), cnn.GenerateOptions{}); return err }, "squared and hinge losses"},
		{func() error {
			_, err := avg.SolveGenerating(context.Background(), cnn.GenerateOptions{Rounds: -1})
			return err
		}, "need ≥ 0"},
		{func() error {
			_, err := avg.SolveGenerating(context.Background(), cnn.GenerateOptions{Separation: 4})
			return err
		}, "separation 4 rad"},
		{func() error {
			_, err := avg.SolveGenerating(context.Background(), cnn.GenerateOptions{Separation: math.NaN()})
			return err
		}, "separation NaN rad"},
	} {
		if err := tc.run(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("error %v, want one mentioning %q", err, tc.want)
		}
	}
}
