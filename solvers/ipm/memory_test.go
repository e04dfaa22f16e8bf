package ipm

import (
	"context"
	"errors"
	"math/rand/v2"
	"runtime"
	"strings"
	"testing"

	"github.com/convexnn/convexnn/solvers"
	"gonum.org/v1/gonum/mat"
)

// TestTooLargeIsRefusedBeforeAllocating checks that a program the size of
// Table 5 (600 points, d = 148, P = 36, robust) is refused by SolveRobust
// under a 256 MiB limit with the estimate and the method that fits,
// allocating almost nothing,
// and that a small limit refuses Solve the same way.
func TestTooLargeIsRefusedBeforeAllocating(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	n, d, np := 600, 148, 36
	x := mat.NewDense(n, d, nil)
	x.Apply(func(_, j int, _ float64) float64 {
		if j == d-1 {
			return 1
		}
		return rng.Float64()
	}, x)
	y := make([]float64, n)
	for k := range y {
		y[k] = float64(1 - 2*(k%2))
	}
	pats, err := solvers.SamplePatterns(x, np, 3, 0)
	if err != nil {
		t.Fatal(err)
	}
	p := &solvers.Program{X: x, Y: y, Loss: solvers.HingeLoss, Beta: 1e-4, D: pats, Bias: true}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err = SolveRobust(context.Background(), p, solvers.Perturbation{Eps: 10.0 / 255}, Options{MaxMemory: 256 << 20})
	runtime.ReadMemStats(&after)
	var me *MemoryError
	if !errors.As(err, &me) || !strings.Contains(err.Error(), "MiB") || !strings.Contains(err.Error(), "robust ADMM") {
		t.Fatalf("Table-5-size robust program: want a MemoryError naming the robust ADMM, got %v", err)
	}
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 64<<20 {
		t.Fatalf("the refusal allocated %d MB", grew>>20)
	}
	t.Log(err)
	if _, err := Solve(context.Background(), p, Options{MaxMemory: 1 << 20}); !errors.As(err, &me) || !strings.Contains(err.Error(), "ADMM") {
		t.Fatalf("Solve under a 1 MiB limit: want a MemoryError, got %v", err)
	}
	if _, err := Solve(context.Background(), p, Options{MaxMemory: -1}); err == nil || !strings.Contains(err.Error(), "memory limit") {
		t.Fatalf("negative limit: %v", err)
	}
}
