// Package scp solves the sampled convex program eq. (SCP2) of the appendix
// "SCP-based convex training": N hidden neurons u_j drawn uniformly on the
// unit sphere (SampleSphere), the features H = (XU)_+ (ReLUFeatures, or
// Features32 in float32), and the output layer α of
//
//	minimize_α ℓ(Hα, y) + β‖α‖₁
//
// for the squared loss (Lasso) and the paper's BCE loss (BCELasso), by FISTA
// with backtracking and adaptive restart, each step reporting the duality
// gap, an upper bound on the distance to the optimum. Iterative grows the
// sample round by round and certifies the result with the Hoeffding bound of
// the appendix (HoeffdingBound). Network turns (U, α) into the two-layer
// network.
package scp
