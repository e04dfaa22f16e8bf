package cvx

// Notebooks and programs built with -tags openblas (the kernel sets it when
// libopenblas-dev is installed) run on OpenBLAS; see solvers/openblas.
import _ "github.com/convexnn/convexnn/solvers/openblas"
