package cnn

// The tests run on OpenBLAS when built with -tags openblas, as the command
// line and the notebooks do.
import _ "github.com/convexnn/convexnn/solvers/openblas"
