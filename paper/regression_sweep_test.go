package paper

import (
	"math"
	"testing"
)

// TestAdvRegressionSweep runs fig. exp_sl's comparison at a tiny size: every
// figure is where the fits put it, and a sweep whose robust trials outnumber
// the standard ones is refused.
func TestAdvRegressionSweep(t *testing.T) {
	a := AdvRegressionSettings(SizeSmall)
	a.StdTrials, a.RobTrials, a.Epsilons = 2, 1, []float64{0.1, 0.5}
	s, err := a.Sweep()
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Std) != 2 || len(s.Eps) != 2 || len(s.RobMean) != 2 || len(s.RobSD) != 2 || len(s.Wins) != 2 {
		t.Fatalf("sweep %+v: want 2 standard trials and 2 radii", s)
	}
	for k, e := range a.Epsilons {
		_, mse, _, err := a.Fit(1, e)
		if err != nil {
			t.Fatal(err)
		}
		if s.RobMean[k] != mse || s.RobSD[k] != 0 {
			t.Errorf("ε = %g: mean %v sd %v, the one trial's MSE %v", e, s.RobMean[k], s.RobSD[k], mse)
		}
		if want := map[bool]int{true: 1, false: 0}[mse < s.Std[0]]; s.Wins[k] != want {
			t.Errorf("ε = %g: %d wins, want %d", e, s.Wins[k], want)
		}
	}
	if s.PairedMean != s.Std[0] || math.Abs(s.StdMean-(s.Std[0]+s.Std[1])/2) > 1e-15 {
		t.Errorf("standard means %v, paired %v, from %v", s.StdMean, s.PairedMean, s.Std)
	}
	if e, m := s.Best(); m != math.Min(s.RobMean[0], s.RobMean[1]) || (e != 0.1 && e != 0.5) {
		t.Errorf("best ε %v with %v, means %v", e, m, s.RobMean)
	}
	a.RobTrials = 3
	if _, err := a.Sweep(); err == nil {
		t.Error("3 robust trials against 2 standard ones: no error")
	}
}
