package ipm

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"runtime"
	"strings"
	"testing"

	"github.com/convexnn/convexnn/solvers"
	"github.com/convexnn/convexnn/solvers/internal/testprog"
	"gonum.org/v1/gonum/mat"
)

// TestRobustDimsMatchTheProgram checks the dimensions behind
// RobustMemoryEstimate against the program SolveRobust builds, for every
// norm, with and without a bias, and for ε = 0.
func TestRobustDimsMatchTheProgram(t *testing.T) {
	for k, c := range testprog.RobustInstances {
		p := testprog.Random(t, c)
		if k == 0 { // a smooth loss: its rows v_k ≥ a_k and v_k ≥ the model's vertex
			p.Loss = solvers.LogisticLoss
			for i, y := range p.Y {
				p.Y[i] = math.Copysign(1, y)
			}
		}
		for _, pert := range []solvers.Perturbation{{}, {Eps: 0.1}, {Eps: 0.1, Norm: solvers.L2}, {Eps: 0.1, Norm: solvers.L1}} {
			rb := newRobustCone(p, pert)
			rows := len(rb.lin)
			for _, c := range rb.soc {
				rows += len(c)
			}
			if r, nx := robustDims(p, pert); r != rows || nx != rb.nx {
				t.Errorf("%v, %v: estimated %d rows × %d variables, built %d × %d", c, pert, r, nx, rows, rb.nx)
			}
		}
	}
}

// TestTooLargeIsRefusedBeforeAllocating checks that a program the size of
// Table 5 (600 points, d = 148, P = 36, robust) is refused by SolveRobust
// with the estimate and the method that fits, allocating almost nothing,
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
	_, err = SolveRobust(context.Background(), p, solvers.Perturbation{Eps: 10.0 / 255}, Options{MaxMemory: 20 << 30})
	runtime.ReadMemStats(&after)
	var me *MemoryError
	if !errors.As(err, &me) || !strings.Contains(err.Error(), "GiB") || !strings.Contains(err.Error(), "robust ADMM") {
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
