package gated

import (
	"context"
	"fmt"
)

// Method names an algorithm for gated programs.
type Method int

const (
	// Auto is Choose's pick.
	Auto Method = iota
	// ProxGradient is Solve: accelerated proximal gradient, any loss.
	ProxGradient
	// Newton is SolveNewton: Newton's method on the active groups, the
	// squared loss.
	Newton
	// Kernel is SolveKernel: Newton's method on the kernel weights, the
	// squared loss, n ≤ KernelMaxRows.
	Kernel
)

func (m Method) String() string {
	switch m {
	case Auto:
		return "auto"
	case ProxGradient:
		return "proximal gradient"
	case Newton:
		return "newton"
	case Kernel:
		return "kernel"
	}
	return fmt.Sprintf("Method(%d)", int(m))
}

// Choose picks the method for p: with the squared loss and all of X (no
// Rank), the kernel method when its n×n factorizations are cheap, n ≤
// 4000, or no larger than the P·d·c unknowns (n ≤ KernelMaxRows), else
// Newton's method on the groups; accelerated
// proximal gradient for the softmax loss or a Rank.
func (p *Problem) Choose(opt Options) Method {
	if p.Loss != Squared || opt.Rank > 0 {
		return ProxGradient
	}
	n, d, np, c := p.Dims()
	if n <= KernelMaxRows && (n <= 4000 || n <= np*d*c) {
		return Kernel
	}
	return Newton
}

// SolveWith solves p by method m (Auto: p.Choose(opt)).
func SolveWith(ctx context.Context, p *Problem, m Method, opt Options) (*Result, error) {
	if _, err := opt.withDefaults(1); err != nil {
		return nil, err
	}
	if m == Auto {
		if err := p.Validate(); err != nil {
			return nil, err
		}
		m = p.Choose(opt)
	}
	switch m {
	case ProxGradient:
		return Solve(ctx, p, opt)
	case Newton, Kernel:
		if opt.Rank != 0 {
			return nil, fmt.Errorf("gated: the %v method works with all of X: drop Rank (or use proximal gradient)", m)
		}
		if m == Newton {
			return SolveNewton(ctx, p, opt)
		}
		return SolveKernel(ctx, p, opt)
	}
	return nil, fmt.Errorf("gated: unknown method %v", m)
}
