package cvx_test

import (
	"context"
	"fmt"
	"log"
	"math"
	"os"

	"github.com/convexnn/convexnn/cvx"
	"github.com/convexnn/convexnn/data"
	"github.com/convexnn/convexnn/solvers"
	"gonum.org/v1/gonum/mat"
)

// A problem is built by chaining, then solved to the global optimum of its
// convex program in one call by the interior-point method; the trained
// two-layer network comes with the solution.
func ExampleSolve() {
	x, y, err := data.Disk2D(40, 1) // 40 labelled points in the plane
	if err != nil {
		log.Fatal(err)
	}
	prob := cvx.Classify(x, y).Beta(1e-2).Bias().SamplePatterns(20, 1)
	sol, err := cvx.Solve(prob, cvx.IPM{})
	if err != nil {
		log.Fatal(err)
	}
	acc, err := cvx.Accuracy(sol.Network, x, y)
	if err != nil {
		log.Fatal(err)
	}
	// The recovered network attains the convex optimum (eq. recover_weights).
	fmt.Printf("status %s, training accuracy %.2f, l^{u,α} − l^{v,w} below 1e-6: %v\n",
		sol.Status, acc, sol.Nonconvex-sol.Objective < 1e-6*sol.Objective)
	// Output:
	// status optimal, training accuracy 1.00, l^{u,α} − l^{v,w} below 1e-6: true
}

// A run lives across notebook cells: Start (or Resume) opens it, Iterate
// takes steps and saves them, and a later cell continues where it stopped.
func ExampleRunDir_Resume() {
	dir, err := os.MkdirTemp("", "runs")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	x, y, err := data.Disk2D(40, 1)
	if err != nil {
		log.Fatal(err)
	}
	prob := cvx.Classify(x, y).Beta(1e-2).Bias().SamplePatterns(20, 1)

	run := cvx.RunDir(dir).Start("disk", prob, cvx.ADMM{})
	run.Quiet = true
	if err := run.Iterate(30); err != nil {
		log.Fatal(err)
	}
	// … a new cell, a new process:
	again := cvx.RunDir(dir).Resume("disk", prob, cvx.ADMM{})
	again.Quiet = true
	if err := again.Iterate(20); err != nil {
		log.Fatal(err)
	}
	fmt.Println("resumed at iteration", again.ResumedAt(), "now at", again.Iter())
	// Output:
	// resumed at iteration 30 now at 50
}

// Robust (adversarial) training: the robust convex program of a perturbation
// set, its network certified at every training point.
func ExampleProblem_Robust() {
	x, y, err := data.Disk2D(30, 2)
	if err != nil {
		log.Fatal(err)
	}
	const eps = 0.05
	prob := cvx.Classify(x, y).Hinge().Beta(1e-2).Bias().Robust(eps, cvx.LInf).SamplePatterns(12, 1)
	sol, err := cvx.Solve(prob, cvx.IPM{})
	if err != nil {
		log.Fatal(err)
	}
	certified, _, err := cvx.Certified(sol.Network, x, eps, cvx.LInf)
	if err != nil {
		log.Fatal(err)
	}
	n := 0
	for _, c := range certified {
		if c {
			n++
		}
	}
	fmt.Printf("%d of %d training points certified\n", n, len(certified))
	// Output:
	// 30 of 30 training points certified
}

// Robust max pooling by the winner bound: patterns from filters trained on
// the bound, the program's certified optimum over them, and its network's
// loss under PGD never above the certified robust objective.
func ExampleProblem_WinnerBound() {
	shape := cvx.ImageShape{C: 1, H: 4, W: 4}
	x := mat.NewDense(20, 16, nil)
	y := make([]float64, 20)
	for k := 0; k < 20; k++ {
		for l := 0; l < 16; l++ {
			x.Set(k, l, math.Mod(float64(7*k+3*l*l+k*l), 10)/10) // pixels in [0, 1)
		}
		y[k] = math.Copysign(1, x.At(k, 0)+x.At(k, 15)-0.9)
	}
	const eps = 0.02
	prob := cvx.Classify(x, y).Hinge().Beta(1e-3).Bias().Conv(shape, 2, 2).MaxPool().Robust(eps, cvx.LInf).BoundPatterns(4, 1)
	sol, err := cvx.Solve(prob, cvx.IPM{})
	if err != nil {
		log.Fatal(err)
	}
	var attacked float64 // the mean hinge loss PGD reaches
	for k := 0; k < 20; k++ {
		l, err := sol.CNN.PGD(x.RawRowView(k), y[k], eps, 20, solvers.HingeLoss)
		if err != nil {
			log.Fatal(err)
		}
		attacked += l / 20
	}
	fmt.Println("certified to 1e-6:", sol.Gap <= 1e-6)
	fmt.Println("PGD's mean loss within the certified objective:", attacked <= sol.Objective)
	// Output:
	// certified to 1e-6: true
	// PGD's mean loss within the certified objective: true
}

// A CNN program given the patterns of a back-prop CNN of 4 filters: the
// certified optimum over them is at most that network's objective
// (BackpropArchitecture with the same width, steps and seed trains it).
func ExampleProblem_BackpropPatterns() {
	shape := cvx.ImageShape{C: 1, H: 4, W: 4}
	x := mat.NewDense(20, 16, nil)
	y := make([]float64, 20)
	for k := 0; k < 20; k++ {
		for l := 0; l < 16; l++ {
			x.Set(k, l, math.Mod(float64(7*k+3*l*l+k*l), 10)/10)
		}
		y[k] = math.Copysign(1, x.At(k, 0)+x.At(k, 15)-0.9)
	}
	prob := func() *cvx.Problem {
		return cvx.Classify(x, y).Hinge().Beta(1e-3).Bias().Conv(shape, 2, 2).MaxPool()
	}
	sol, err := cvx.Solve(prob().BackpropPatterns(4, 1), cvx.IPM{})
	if err != nil {
		log.Fatal(err)
	}
	_, backprop, err := cvx.BackpropArchitecture(context.Background(), prob(), 4, 1000, 0.02, 1)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("certified to 1e-6:", sol.Gap <= 1e-6)
	fmt.Println("at most back-prop's objective:", sol.Objective <= backprop*(1+1e-9))
	// Output:
	// certified to 1e-6: true
	// at most back-prop's objective: true
}
