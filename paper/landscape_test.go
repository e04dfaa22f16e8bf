package paper

import (
	"math"
	"strings"
	"testing"
)

// TestLandscape checks fig. landscapes' library at a small size: the chosen
// point is certified, inside its ε-box the convex objective's output equals
// the recovered network's (no activation flips there), the grid spans the
// box, and bad settings are refused.
func TestLandscape(t *testing.T) {
	s := LandscapeSettingsFor(SizeSmall)
	s.Patterns, s.Steps = 24, 11
	l, err := TrainLandscape(s)
	if err != nil {
		t.Fatal(err)
	}
	if l.Margin < 0 || l.K < 0 || l.K >= len(l.X) {
		t.Fatalf("point %d with margin %g", l.K, l.Margin)
	}
	inside := MaxAbs(l.Box(s.Eps, l.OutputGap))
	if inside > 1e-8 {
		t.Errorf("the convex output and the network differ by %.3g inside the ε-box", inside)
	}
	g := l.Box(0.3, l.ConvexLoss)
	if len(g.X) != s.Steps || len(g.Z) != s.Steps || g.X[0] != -0.3 || math.Abs(g.X[s.Steps-1]-0.3) > 1e-15 {
		t.Errorf("grid %v × %d rows, want %d points over [−0.3, 0.3]", g.X, len(g.Z), s.Steps)
	}
	if got, want := g.Z[s.Steps/2][s.Steps/2], l.ConvexLoss(0, 0); got != want {
		t.Errorf("grid centre %g, loss at δ = 0 %g", got, want)
	}
	t.Logf("k = %d, margin %.4g, gap inside %.2g, outside %.3g", l.K, l.Margin, inside, MaxAbs(l.Box(0.3, l.LossGap)))
	for _, bad := range []LandscapeSettings{{Eps: 0, Patterns: 4, Steps: 5}, {Eps: 0.1, Patterns: 0, Steps: 5}, {Eps: 0.1, Patterns: 4, Steps: 1}} {
		if _, err := TrainLandscape(bad); err == nil || !strings.Contains(err.Error(), "landscape settings") {
			t.Errorf("settings %+v: error %v", bad, err)
		}
	}
}
