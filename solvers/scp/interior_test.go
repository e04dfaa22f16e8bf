package scp

import (
	"context"
	"math"
	"strings"
	"testing"

	"github.com/convexnn/convexnn/solvers"
	"github.com/convexnn/convexnn/solvers/ipm"
)

// TestInteriorPointCertifiesTheOptimum checks SolveInteriorPoint on a Lasso
// and a BCE program: a relative duality gap below 1e-8, and an objective
// FISTA, run long, cannot beat.
func TestInteriorPointCertifiesTheOptimum(t *testing.T) {
	p, _ := randomLasso(t, 60, 3, 40, 3)
	res, err := SolveInteriorPoint(context.Background(), p.H, p.Y, solvers.SquaredLoss, p.Beta, ipm.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Gap > 1e-8*res.Objective || res.Gap < 0 {
		t.Fatalf("Lasso: duality gap %.3g at objective %.10g (%s, %d iterations)", res.Gap, res.Objective, res.Status, res.Iterations)
	}
	f, err := NewFISTA(p, nil)
	if err != nil {
		t.Fatal(err)
	}
	st := runUntil(f, 50000, gapAtMost(1e-9))
	if st.Objective < res.Objective-1e-8*res.Objective {
		t.Fatalf("FISTA %.12g below the interior point's %.12g", st.Objective, res.Objective)
	}
	t.Logf("Lasso: %d iterations, gap %.2e; FISTA %d iterations to gap %.2e", res.Iterations, res.Gap, st.Iter, st.Gap)

	x, y := twoD(80, 4)
	for k := range y {
		y[k] = (y[k] + 1) / 2
	}
	_, h := sampledFeatures(t, x, 60, 5)
	b, err := SolveInteriorPoint(context.Background(), h, y, solvers.BCELoss, 1e-3, ipm.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if b.Gap > 1e-8 || b.Gap < 0 || math.IsNaN(b.Objective) {
		t.Fatalf("BCE: duality gap %.3g at objective %.10g (%s, %d iterations)", b.Gap, b.Objective, b.Status, b.Iterations)
	}
	t.Logf("BCE: %d iterations, gap %.2e", b.Iterations, b.Gap)
	if _, err := SolveInteriorPoint(context.Background(), h, y, solvers.HingeLoss, 1e-3, ipm.Options{}); err == nil || !strings.Contains(err.Error(), "squared and bce") {
		t.Fatalf("hinge loss: %v", err)
	}
	if _, err := SolveInteriorPoint(context.Background(), h, y, solvers.BCELoss, 1e-3, ipm.Options{MaxMemory: 1000}); err == nil || !strings.Contains(err.Error(), "FISTA") {
		t.Fatalf("memory limit: %v", err)
	}
}
