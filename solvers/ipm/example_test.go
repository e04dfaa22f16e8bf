package ipm_test

import (
	"context"
	"fmt"
	"math"

	"github.com/convexnn/convexnn/solvers"
	"github.com/convexnn/convexnn/solvers/ipm"
	"gonum.org/v1/gonum/mat"
)

// ExampleWarmWorkingSet solves the hinge program at β = 10⁻² by the
// working-set method, then at β = 10⁻³ from that solution: the first
// working set holds the patterns the earlier solution uses, and the
// certificate on the whole program proves the round's point optimal.
func ExampleWarmWorkingSet() {
	// 24 points on a circle with a bias column, labelled by the sign of
	// sin(3θ).
	x := mat.NewDense(24, 3, nil)
	y := make([]float64, 24)
	for k := range y {
		th := 2 * math.Pi * float64(k) / 24
		x.SetRow(k, []float64{math.Cos(th), math.Sin(th), 1})
		y[k] = math.Copysign(1, math.Sin(3*th+0.1))
	}
	patterns, err := solvers.SamplePatterns(x, 16, 1, 0)
	if err != nil {
		panic(err)
	}
	program := func(beta float64) *solvers.Program {
		return &solvers.Program{X: x, Y: y, Loss: solvers.HingeLoss, Beta: beta, D: patterns, Bias: true}
	}
	solve := func(p *solvers.Program, st *ipm.WorkingSetState) ipm.WorkingSetStep {
		ws, err := ipm.NewWorkingSet(p, solvers.Perturbation{}, 1e-7, 0, ipm.Options{}, st, nil)
		if err != nil {
			panic(err)
		}
		last, err := ws.Solve(context.Background(), 0, nil)
		if err != nil {
			panic(err)
		}
		return last
	}
	before := program(1e-2)
	first := solve(before, nil)
	after := program(1e-3)
	start, err := ipm.WarmWorkingSet(after, solvers.Perturbation{}, before, solvers.Perturbation{}, first.Weights)
	if err != nil {
		panic(err)
	}
	second := solve(after, &ipm.WorkingSetState{Patterns: start})
	fmt.Printf("β = 0.01:  %d round(s), gap ≤ 1e-7: %v\n", first.Round, first.Bound.Gap <= 1e-7)
	fmt.Printf("β = 0.001: warm start from %d of %d patterns, %d round(s), gap ≤ 1e-7: %v\n", len(start), len(patterns), second.Round, second.Bound.Gap <= 1e-7)
	// Output:
	// β = 0.01:  1 round(s), gap ≤ 1e-7: true
	// β = 0.001: warm start from 14 of 16 patterns, 1 round(s), gap ≤ 1e-7: true
}
