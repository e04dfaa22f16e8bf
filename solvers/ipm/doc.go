// Package ipm is a primal-dual interior-point method for cone quadratic
// programs (SolveConeQP: nonnegative orthant and second-order cones, the
// Nesterov–Todd scaling with Mehrotra's predictor-corrector, after the
// method of CVXOPT's coneqp), and its uses on the paper's programs: Solve
// for the convex program eq. (convex_general) with the squared or hinge loss
// (the paper's "CVX" baseline, with a structured KKT solver), SolveRobust for
// the robust programs of section "Convex Adversarial Training" (eq.
// hinge_adv_D, hinge_adv_D_lp, SOCP3; dense, small problems) and
// RestoreRobust, which makes weights exactly robust-feasible group by group.
// Results report how the method ended (Status) and its relative gap.
package ipm
