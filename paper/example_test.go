package paper_test

import (
	"fmt"
	"log"

	"github.com/convexnn/convexnn/paper"
)

// Every experiment of the paper is a value: its settings at a size and the
// paper's own table, the same for convexnn reproduce and the notebooks.
func ExampleLookup() {
	e, err := paper.Lookup("table2-mnist")
	if err != nil {
		log.Fatal(err)
	}
	s := e.Setup(paper.SizePaper)
	fmt.Printf("%s: %s, P_s = %d, %d ADMM iterations, ρ = %g, β = %g\n", e.Name, s.Dataset, s.Ps, s.ADMMIter, s.Rho, s.Beta)
	for _, row := range e.Paper {
		fmt.Println(row)
	}
	// Output:
	// table2-mnist: mnist-2-8, P_s = 24, 10 ADMM iterations, ρ = 0.1, β = 0.001
	// [Back-prop 98.86 % 74.09 422.4]
	// [CVX 70.99 % 14879 1.146]
	// [ADMM 98.90 % 802.2 223.2]
}
