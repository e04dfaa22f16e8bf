package ipm

import (
	"context"
	"fmt"

	"github.com/convexnn/convexnn/solvers"
	"github.com/convexnn/convexnn/solvers/certify"
)

// NewCertifier returns certify.New(p, pert) with Certifier.Exact set to
// SolveProjection: the groups' multipliers that the projected-gradient
// steps do not bring to s_j ≤ β are solved for exactly.
func NewCertifier(p *solvers.Program, pert solvers.Perturbation) (*certify.Certifier, error) {
	c, err := certify.New(p, pert)
	if err != nil {
		return nil, err
	}
	c.Exact = SolveProjection
	return c, nil
}

// SolveProjection solves a group's projection program (certify.ProjectionQP)
// by SolveConeQP at tolerance 10⁻⁹ and returns its multipliers z; an
// iterate that stopped short (Inaccurate, IterationLimit) is returned too,
// since the certifier uses z only where it lowers s_j.
func SolveProjection(q *certify.ProjectionQP) ([]float64, error) {
	res, err := SolveConeQP(context.Background(), &ConeQP{Q: q.Q, C: q.C, G: q.G, H: q.H, K: Cone{Orthant: q.Orthant, SOC: q.SOC}}, Options{Tol: 1e-9})
	if err != nil {
		return nil, err
	}
	switch res.Status {
	case Optimal, Inaccurate, IterationLimit:
		if res.Z != nil {
			return res.Z, nil
		}
	}
	return nil, fmt.Errorf("ipm: projection program: %v", res.Status)
}
