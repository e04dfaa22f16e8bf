package scp_test

import (
	"fmt"
	"log"

	"github.com/convexnn/convexnn/data"
	"github.com/convexnn/convexnn/solvers/scp"
)

// The sampled convex program eq. (SCP2): N hidden neurons drawn on the unit
// sphere, the output layer α by FISTA on the l1-regularized least squares;
// the duality gap bounds the distance to the optimum.
func ExampleNewFISTA() {
	x, y, err := data.Disk2D(50, 1)
	if err != nil {
		log.Fatal(err)
	}
	_, d := x.Dims()
	u, err := scp.SampleSphere(d, 200, 1)
	if err != nil {
		log.Fatal(err)
	}
	h, err := scp.ReLUFeatures(x, u)
	if err != nil {
		log.Fatal(err)
	}
	f, err := scp.NewFISTA(&scp.Lasso{H: h, Y: y, Beta: 0.1}, nil)
	if err != nil {
		log.Fatal(err)
	}
	var st scp.FISTAStep
	for st = f.Step(); st.Gap > 1e-8*max(1, st.Objective); st = f.Step() {
	}
	net, err := scp.Network(u, f.State.Alpha, false)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("objective %.5f, duality gap ≤ 1e-8, %d of 200 neurons active\n", st.Objective, net.Width())
	// Output:
	// objective 15.89856, duality gap ≤ 1e-8, 9 of 200 neurons active
}
