// Package data provides the data sets of convexnn's experiments as gonum
// matrices: synthetic sets generated from a seed, and (in later work) the
// paper's image and tabular data sets with download-and-verify.
//
// The package knows nothing about solvers, charts or notebooks.
package data
