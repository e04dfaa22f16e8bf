//go:build !openblas

package solvers

// BLASImplementation names the BLAS in use: gonum's pure Go unless built
// with -tags openblas.
const BLASImplementation = "gonum (pure Go)"
