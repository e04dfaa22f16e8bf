package cvx

import (
	"context"
	"github.com/convexnn/convexnn/data"
	"github.com/convexnn/convexnn/internal/testenv"
	"math"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"

	"github.com/convexnn/convexnn/solvers/gated"
	"gonum.org/v1/gonum/mat"
)

// threeClasses draws n points in the plane labelled by angle sector.
func threeClasses(n int, seed uint64) (*mat.Dense, []float64) {
	rng := rand.New(rand.NewPCG(seed, 1))
	x := mat.NewDense(n, 2, nil)
	y := make([]float64, n)
	for k := 0; k < n; k++ {
		a, b := rng.NormFloat64(), rng.NormFloat64()
		x.Set(k, 0, a)
		x.Set(k, 1, b)
		ang := math.Atan2(b, a) + math.Pi
		y[k] = math.Min(2, math.Floor(3*ang/(2*math.Pi)))
	}
	return x, y
}

func TestSolveGatedMulticlass(t *testing.T) {
	x, y := threeClasses(150, 1)
	losses, groups := []Loss{Softmax, Squared}, []Groups{JointGroups, PerClassGroups}
	if testenv.Race {
		// The race run checks one of each; the run without it checks all.
		losses, groups = []Loss{Softmax}, []Groups{PerClassGroups}
	}
	for _, loss := range losses {
		for _, g := range groups {
			prob := Multiclass(x, y, 3).Bias().Beta(1e-2).SamplePatterns(12, 2).GroupBy(g)
			if loss == Squared {
				prob.Squared()
			}
			sol, err := SolveGated(prob, GatedOptions{Tol: 1e-6})
			if err != nil {
				t.Fatal(err)
			}
			acc, err := ClassAccuracy(sol.Network, x, y)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%s %v: objective %.6g, certified %.1e in %d steps, training accuracy %.3f", loss, g, sol.Objective, sol.Gap, sol.Iterations, acc)
			if sol.Gap > 1e-6 || sol.Lower > sol.Objective || acc < 0.9 {
				t.Errorf("%s %v: gap %v, lower %v > objective %v, or accuracy %v", loss, g, sol.Gap, sol.Lower, sol.Objective, acc)
			}
			m, err := Confusion(sol.Network, x, y, 3)
			if err != nil {
				t.Fatal(err)
			}
			diag, tot := 0, 0
			for i, r := range m {
				for j, c := range r {
					tot += c
					if i == j {
						diag += c
					}
				}
			}
			if tot != 150 || float64(diag)/150 != acc {
				t.Errorf("confusion %v against accuracy %v", m, acc)
			}
		}
	}
	prob := Multiclass(x, y, 3).Bias().Beta(1e-3).SamplePatterns(12, 2)
	first, err := SolveGated(prob, GatedOptions{Tol: 1e-4})
	if err != nil {
		t.Fatal(err)
	}
	warm, err := SolveGated(prob, GatedOptions{Tol: 1e-4, Start: first})
	if err != nil || warm.Iterations > 1 {
		t.Fatalf("warm start: %d steps, %v", warm.Iterations, err)
	}
	f, err := ConfusionFigure(first.Network, x, y, []string{"a", "b", "c"})
	if err != nil || f == nil {
		t.Fatalf("confusion figure: %v", err)
	}
	bp, obj, err := BackpropMulticlass(context.Background(), prob, 8, 300, 0, 1)
	if err != nil {
		t.Fatal(err)
	}
	bacc, _ := ClassAccuracy(bp, x, y)
	t.Logf("back-prop, 8 neurons: objective %.4g, accuracy %.3f", obj, bacc)
	if bacc < 0.8 {
		t.Errorf("back-prop accuracy %v", bacc)
	}
}

// A binary Gated problem has one output, the squared loss, and its network
// classifies by sign.
func TestSolveGatedBinary(t *testing.T) {
	x, y := threeClasses(80, 3)
	for k := range y {
		y[k] = 2*math.Min(y[k], 1) - 1
	}
	sol, err := SolveGated(Classify(x, y).Gated().Bias().Beta(1e-2).SamplePatterns(10, 1), GatedOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if sol.Network.Outputs() != 1 || sol.Gap > 1e-6 {
		t.Fatalf("outputs %d, gap %v", sol.Network.Outputs(), sol.Gap)
	}
	acc, _ := ClassAccuracy(sol.Network, x, y)
	if acc < 0.85 {
		t.Fatalf("binary gated accuracy %v", acc)
	}
}

func TestGatedBadInput(t *testing.T) {
	x, y := threeClasses(30, 4)
	for _, c := range []struct {
		prob *Problem
		want string
	}{
		{Multiclass(x, y, 2), "not a class index 0…1"},
		{Multiclass(x, y, 1), "need at least 2"},
		{Classify(x, append(make([]float64, 29), 1)).Softmax(), "label y[0] = 0"},
		{Multiclass(x, y, 3), "needs gates"},
		{Multiclass(x, y, 3).SamplePatterns(4, 1).Hinge(), "softmax or squared"},
		{Multiclass(x, y, 3).SamplePatterns(4, 1).GroupBy(gated.Groups(7)), "unknown grouping"},
		{Multiclass(x, y, 3).SamplePatterns(4, 1).BatchNorm(), "drop BatchNorm"},
	} {
		_, err := SolveGated(c.prob, GatedOptions{})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("error %v, want one containing %q", err, c.want)
		}
	}
	p := Multiclass(x, y, 3).SamplePatterns(4, 1)
	if _, err := p.Convex(); err == nil || !strings.Contains(err.Error(), "SolveGated") {
		t.Errorf("Convex of a gated problem: %v", err)
	}
	run := RunDir(t.TempDir()).Start("g", p, ADMM{})
	if run.Err() == nil || !strings.Contains(run.Err().Error(), "SolveGated") {
		t.Errorf("ADMM run of a gated problem: %v", run.Err())
	}
}

// A saved multi-class network loads back with the training set's classes
// and scaling and predicts on raw rows as the network does on scaled ones.
func TestSaveNetworkMulticlass(t *testing.T) {
	x, y := threeClasses(60, 5)
	raw := mat.DenseCopyOf(x)
	raw.Scale(10, raw)
	set := &data.Set{X: raw, Y: y, Classes: []string{"a", "b", "c"}, Coding: data.ClassIndex}
	std, _, err := set.Standardize()
	if err != nil {
		t.Fatal(err)
	}
	sol, err := SolveGated(Multiclass(std.X, std.Y, 3).Bias().Beta(1e-2).SamplePatterns(6, 1), GatedOptions{Tol: 1e-4, Seconds: 30})
	if err != nil || sol.Status != "certified" {
		t.Fatalf("solve: %v, status %q", err, sol.Status)
	}
	path := filepath.Join(t.TempDir(), "net.npz")
	if err := SaveNetwork(path, sol.Network, std); err != nil {
		t.Fatal(err)
	}
	f, err := LoadNetwork(path)
	if err != nil {
		t.Fatal(err)
	}
	got, err := f.Scores(raw)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := sol.Network.Scores(std.X)
	if !mat.EqualApprox(got, want, 1e-9) {
		t.Fatal("the loaded network scores raw rows differently")
	}
	if cls := f.Classes(got); f.Output.Classes[cls[0]] != std.Classes[int(gated.Decide(want)[0])] {
		t.Fatalf("class names: %v", f.Output.Classes)
	}
}

func TestDecomposeGated(t *testing.T) {
	x, y := threeClasses(80, 6)
	prob := Multiclass(x, y, 3).Bias().Beta(1e-2).SamplePatterns(8, 1)
	sol, err := SolveGated(prob, GatedOptions{Tol: 1e-6})
	if err != nil {
		t.Fatal(err)
	}
	dec, err := Decompose(prob, sol)
	if err != nil {
		t.Fatal(err)
	}
	a1, _ := ClassAccuracy(sol.Network, x, y)
	a2, _ := ClassAccuracy(dec.Network, x, y)
	if dec.Mismatch > 1e-9 || a1 != a2 || dec.Objective < sol.Lower {
		t.Fatalf("decomposition: mismatch %v, accuracies %v and %v, objective %v below %v", dec.Mismatch, a1, a2, dec.Objective, sol.Lower)
	}
}

func TestPerClassAccuracy(t *testing.T) {
	x, y := threeClasses(90, 11)
	sol, err := SolveGated(Multiclass(x, y, 3).Bias().Beta(1e-2).SamplePatterns(8, 1), GatedOptions{Tol: 1e-4})
	if err != nil {
		t.Fatal(err)
	}
	acc, err := PerClassAccuracy(sol.Network, x, y, 3)
	if err != nil {
		t.Fatal(err)
	}
	all, _ := ClassAccuracy(sol.Network, x, y)
	counts := make([]float64, 3)
	for _, v := range y {
		counts[int(v)]++
	}
	var mean float64
	for j := range acc {
		mean += acc[j] * counts[j] / 90
	}
	if math.Abs(mean-all) > 1e-12 {
		t.Fatalf("per-class accuracies %v average to %v, overall %v", acc, mean, all)
	}
	if _, err := PerClassFigure(x, y, []string{"a", "b", "c"}, Labelled{"convex", sol.Network}); err != nil {
		t.Fatal(err)
	}
}

// TestBetaMaxZeroesTheNetwork: at β = β_max the gated program's solution
// is the zero network, and just below it is not; a problem that is not
// gated has no β_max.
func TestBetaMaxZeroesTheNetwork(t *testing.T) {
	x, y := threeClasses(60, 2)
	prob := Multiclass(x, y, 3).Bias().SamplePatterns(6, 1)
	bmax, err := prob.BetaMax()
	if err != nil || !(bmax > 0) {
		t.Fatalf("β_max = %v, %v", bmax, err)
	}
	at, err := SolveGated(prob.Beta(bmax*1.0001), GatedOptions{Tol: 1e-8})
	if err != nil {
		t.Fatal(err)
	}
	below, err := SolveGated(prob.Beta(bmax*0.5), GatedOptions{Tol: 1e-8})
	if err != nil {
		t.Fatal(err)
	}
	if at.Network.Width() != 0 || below.Network.Width() == 0 {
		t.Errorf("active gates at β_max: %d, at β_max/2: %d", at.Network.Width(), below.Network.Width())
	}
	xb, yb := disk(t, 20, 1)
	if _, err := Classify(xb, yb).BetaMax(); err == nil || !strings.Contains(err.Error(), "not gated") {
		t.Errorf("β_max of a problem that is not gated: %v", err)
	}
}
