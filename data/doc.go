// Package data provides the data sets of convexnn's experiments as gonum
// matrices: loaders for MNIST, Fashion-MNIST, CIFAR-10 (binary records) and
// the UCI mammographic masses, with files taken from a data folder
// ($CONVEXNN_DATA), the download cache, or downloaded and verified against
// the published checksums (Source); the paper's preprocessing as composable
// steps on a Set (Binary, ScalePixels, Stride, Resize, Standardize, AddBias,
// Split, Subsample) and the paper's splits by name (Paper); the small
// synthetic sets of its figures; and a user's own data: ReadCSV and
// ReadNumPy, whose labels of any type become classes (ClassLabels,
// Set.Classes), with the scaling fitted on training data kept for new rows
// (Scaling).
//
// The package knows nothing about solvers, charts or notebooks.
package data
