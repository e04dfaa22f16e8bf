package backprop

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/convexnn/convexnn/solvers/cnn"
)

// winnerBoundModel is a max-pooling CNN of filters u_j with output signs
// σ_j as a Model whose objective is the winner bound
// (cnn.Problem.WinnerBoundObjective).
type winnerBoundModel struct {
	p     *cnn.Problem
	eps   float64
	sigma []float64
	u     []float64
	err   error
}

func (b *winnerBoundModel) Params() []float64 { return b.u }

func (b *winnerBoundModel) Objective(grad []float64) float64 {
	v, err := b.p.WinnerBoundObjective(b.eps, b.u, b.sigma, grad)
	if err != nil && b.err == nil {
		b.err = err
	}
	return v
}

// BoundPatterns finds patterns for max pooling's winner-bound program
// (cnn.WinnerBound) by back-prop: width filters (output signs alternating
// +1, −1, Gaussian start) trained by full-batch Adam (learning rate lr,
// epochs steps) on the bound itself (cnn.Problem.WinnerBoundObjective at
// radius eps), a certified upper bound of the network's worst-case loss,
// from starts Gaussian starts (seeded by seed); each nonzero filter of the
// start that ends lowest then adds its pattern to p (AddBoundPattern).
// Several starts because a start can end with its filters dead, every
// image's lower bound at zero (measured on 600 CIFAR images: one start in
// three). The program's optimum over p's patterns is then at most the bound
// those filters reached, which it returns with the number of patterns
// added. ctx stops the training between steps; the patterns of the best
// filters so far are added all the same.
func BoundPatterns(ctx context.Context, p *cnn.Problem, eps float64, width, starts, epochs int, lr float64, seed uint64) (int, float64, error) {
	switch {
	case width < 1 || starts < 1:
		return 0, 0, fmt.Errorf("backprop: BoundPatterns: %d filters from %d starts, need ≥ 1 of each", width, starts)
	case epochs < 0 || !(lr > 0) || math.IsInf(lr, 0):
		return 0, 0, fmt.Errorf("backprop: BoundPatterns(%d epochs, learning rate %v): need epochs ≥ 0 and 0 < lr < ∞", epochs, lr)
	case p.Pool != cnn.MaxPool:
		return 0, 0, errors.New("backprop: BoundPatterns: the winner bound is max pooling's")
	}
	f := p.Filter()
	sigma := make([]float64, width)
	for j := range sigma {
		sigma[j] = float64(1 - 2*(j%2))
	}
	var best []float64
	bound := math.Inf(1)
	var stop error
	for s := 0; s < starts && stop == nil; s++ {
		b := &winnerBoundModel{p: p, eps: eps, sigma: sigma, u: make([]float64, width*f)}
		gaussian(rand.New(rand.NewPCG(seed, 0xb0d+uint64(s))), b.u, 1/math.Sqrt(float64(f)))
		if _, err := b.p.WinnerBoundObjective(eps, b.u, b.sigma, make([]float64, len(b.u))); err != nil {
			return 0, 0, fmt.Errorf("backprop: BoundPatterns: %w", err)
		}
		_, stop = Minimize(ctx, b, lr, epochs)
		if b.err != nil {
			return 0, 0, fmt.Errorf("backprop: BoundPatterns: %w", b.err)
		}
		if stop != nil && ctx.Err() == nil {
			return 0, 0, stop
		}
		v, err := b.p.WinnerBoundObjective(eps, b.u, b.sigma, make([]float64, len(b.u)))
		if err != nil {
			return 0, 0, fmt.Errorf("backprop: BoundPatterns: %w", err)
		}
		if v < bound {
			bound, best = v, b.u
		}
	}
	if best == nil {
		return 0, bound, fmt.Errorf("backprop: BoundPatterns: no start reached a finite bound (%d starts, learning rate %v: try a smaller one)", starts, lr)
	}
	added, err := addFilterPatterns(best, f, func(u []float64) (bool, error) { return p.AddBoundPattern(u, eps) })
	if err != nil {
		return added, bound, fmt.Errorf("backprop: BoundPatterns: %w", err)
	}
	return added, bound, stop
}

// addFilterPatterns calls add on each nonzero filter of u (filters of f
// entries, one after another) and returns how many patterns it added.
func addFilterPatterns(u []float64, f int, add func([]float64) (bool, error)) (int, error) {
	added := 0
	for j := 0; j+f <= len(u); j += f {
		uj := u[j : j+f]
		zero := true
		for _, v := range uj {
			zero = zero && v == 0
		}
		if zero {
			continue
		}
		ok, err := add(uj)
		if err != nil {
			return added, err
		}
		if ok {
			added++
		}
	}
	return added, nil
}
