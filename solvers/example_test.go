package solvers_test

import (
	"context"
	"fmt"
	"log"

	"github.com/convexnn/convexnn/data"
	"github.com/convexnn/convexnn/solvers"
	"github.com/convexnn/convexnn/solvers/ipm"
	"gonum.org/v1/gonum/mat"
)

// The convex program of eq. (convex_general) on sampled activation patterns
// (eq. prac_clean): X with a bias column, the patterns D_i = diag(1[X a_i ≥ 0]),
// the loss and β. A solver gives the weights (v_i, w_i); Recover turns them
// into the two-layer network, whose non-convex objective l^{u,α} equals the
// convex one l^{v,w} at a feasible point.
func ExampleProgram_Recover() {
	x, y, err := data.Disk2D(30, 1)
	if err != nil {
		log.Fatal(err)
	}
	n, d := x.Dims()
	xb := mat.NewDense(n, d+1, nil) // X with its bias column of ones
	for k := 0; k < n; k++ {
		xb.Set(k, 0, x.At(k, 0))
		xb.Set(k, 1, x.At(k, 1))
		xb.Set(k, d, 1)
	}
	pats, err := solvers.SamplePatterns(xb, 10, 1, 0)
	if err != nil {
		log.Fatal(err)
	}
	p := &solvers.Program{X: xb, Y: y, Loss: solvers.SquaredLoss, Beta: 1e-2, D: pats, Bias: true}
	res, err := ipm.Solve(context.Background(), p, ipm.Options{})
	if err != nil {
		log.Fatal(err)
	}
	net, err := p.Recover(res.Weights)
	if err != nil {
		log.Fatal(err)
	}
	nc, err := p.NonconvexObjective(net)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("n = %d, P = %d: convex %.5f, recovered network %.5f\n", n, len(pats), res.Objective, nc)
	// Output:
	// n = 30, P = 10: convex 0.76589, recovered network 0.76589
}
