// Package backprop is back-propagation on the non-convex two-layer ReLU
// network of eq. (nonconvex_general): the paper's baselines GD-std, GD-FGSM
// and GD-PGD (Trainer, Train: minibatch Adam or SGD, optionally on the FGSM
// or PGD perturbations of every batch, Madry et al.'s approximation of eq.
// robust_general), and the attacks themselves, FGSM and PGD (eq. PGD) in
// the ℓ_∞ and ℓ₂ balls, which back-propagate the loss to the inputs;
// RobustAccuracy scores any solvers.Network clean and under attack.
package backprop
