// Package solvers holds the shared vocabulary of convexnn's numerics: the
// activation patterns, the convex programs of Bai, Gautam and Sojoudi
// ("Efficient Global Optimization of Two-layer ReLU Networks: Quadratic-time
// Algorithms and Adversarial Training") as Program with its Loss, the
// perturbation sets (Perturbation, Norm) and robust objectives, the
// two-layer Network and its recovery from a program's weights
// (Program.Recover), on gonum matrices.
//
// The methods that solve the programs are in the subpackages: admm (the
// ADMM variants), ipm (the interior-point method), scp (the sampled convex
// program) and backprop (back-propagation and the FGSM and PGD attacks);
// importing solvers/openblas in a build with -tags openblas makes them all
// use OpenBLAS.
//
// The packages know nothing about notebooks or charts. Every solver keeps its
// whole iteration state in an exported, serializable value so that a caller can
// stop after any finished step and continue later from exactly that point.
package solvers
