package certify_test

import (
	"github.com/convexnn/convexnn/solvers/certify"
	"github.com/convexnn/convexnn/solvers/ipm"
)

func init() { certify.ExactSolverForTest = ipm.SolveProjection }
