// Package solvers holds the numerics of convexnn: activation patterns, the
// convex programs of Bai, Gautam and Sojoudi ("Efficient Global Optimization of
// Two-layer ReLU Networks: Quadratic-time Algorithms and Adversarial Training")
// and the methods that solve them, on gonum matrices.
//
// The package knows nothing about notebooks or charts. Every solver keeps its
// whole iteration state in an exported, serializable value so that a caller can
// stop after any finished step and continue later from exactly that point.
package solvers
