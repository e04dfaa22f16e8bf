package general

import (
	"context"
	"fmt"

	"github.com/convexnn/convexnn/solvers"
	"github.com/convexnn/convexnn/solvers/ipm"
	"gonum.org/v1/gonum/mat"
)

// IPMResult is the outcome of SolveInteriorPoint: the point (w, w′), its
// objective, the interior-point method's status and its certificate.
type IPMResult struct {
	W, Wp      []float64
	Objective  float64
	Status     ipm.Status
	Iterations int
	Bound      Bound
}

// MaxIPMVariables bounds the variables 2N + 2K (+ n for the hinge loss) of
// SolveInteriorPoint's dense cone program, and MaxIPMEntries the entries of
// its constraint matrix (2M + 2(N + K) rows, + 2n for the hinge loss; 2 GB).
const (
	MaxIPMVariables = 4000
	MaxIPMEntries   = 2.5e8
)

// SolveInteriorPoint solves p (squared or hinge loss) as a dense cone
// program by the interior-point method of ipm.SolveConeQP, variables
// x = (w, w′, t, ξ):
//
//	squared: min ½‖F(w − w′)‖² − yᵀF(w − w′) + β Σ_g (t_g + t′_g) + ½‖y‖²
//	hinge:   min (1/n) Σ_k ξ_k + β Σ_g (t_g + t′_g),  ξ ≥ 0,  ξ_k + y_k(F(w − w′))_k ≥ 1
//
// subject to G_g w_g ≥ 0, G_g w′_g ≥ 0 and (t_g, w_g), (t′_g, w′_g) in
// second-order cones, and certifies the result (Certify). It is the ground
// truth of small instances of eq. (ct_general) (at most MaxIPMVariables
// variables); ADMM is the method for larger ones. When ctx ends the solve,
// its best iterate so far is returned, certified, with ctx's error.
func SolveInteriorPoint(ctx context.Context, p *Program, tol float64) (*IPMResult, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	if p.Loss != solvers.SquaredLoss && p.Loss != solvers.HingeLoss {
		return nil, fmt.Errorf("general: the interior-point method solves the squared and hinge losses (cone programs), not %v: use ADMM", p.Loss)
	}
	n, nv, m := p.Dims()
	k := len(p.Groups)
	hinge := p.Loss == solvers.HingeLoss
	nx, rows := ipmSize(p)
	if nx > MaxIPMVariables {
		return nil, fmt.Errorf("general: the dense interior-point method takes up to %d variables, this program has %d: use ADMM", MaxIPMVariables, nx)
	}
	if float64(rows)*float64(nx) > MaxIPMEntries {
		return nil, fmt.Errorf("general: the dense interior-point method's constraint matrix is %d×%d (%.1f GB); it takes up to %.0e entries: use ADMM", rows, nx, 8*float64(rows)*float64(nx)/1e9, float64(MaxIPMEntries))
	}
	lay := p.layout()
	fd := dense(p.F)
	// Orthant rows: −G_g w_g ≤ 0 and −G_g w′_g ≤ 0, then for the hinge loss
	// −ξ ≤ 0 and −ξ_k − y_k(F(w − w′))_k ≤ −1; then the cones −(t, w_g) ≤_Q 0.
	orth := rows - 2*(nv+k)
	g := mat.NewDense(rows, nx, nil)
	h := make([]float64, rows)
	c := make([]float64, nx)
	gd, _ := groupBlocks(p)
	for half := 0; half < 2; half++ {
		for gi := range p.Groups {
			if gd[gi] == nil {
				continue
			}
			r0 := half*m + lay.roff[gi]
			c0 := half*nv + lay.off[gi]
			gr, gc := gd[gi].Dims()
			for a := 0; a < gr; a++ {
				for b := 0; b < gc; b++ {
					g.Set(r0+a, c0+b, -gd[gi].At(a, b))
				}
			}
		}
	}
	tOff := 2 * nv
	for gi := 0; gi < 2*k; gi++ {
		c[tOff+gi] = p.Beta
	}
	if hinge {
		xi := 2*nv + 2*k
		for kk := 0; kk < n; kk++ {
			c[xi+kk] = 1 / float64(n)
			g.Set(2*m+kk, xi+kk, -1)
			r := 2*m + n + kk
			g.Set(r, xi+kk, -1)
			h[r] = -1
			y := p.Y[kk]
			for j := 0; j < nv; j++ {
				f := fd.At(kk, j)
				g.Set(r, j, -y*f)
				g.Set(r, nv+j, y*f)
			}
		}
	}
	cone := ipm.Cone{Orthant: orth}
	r := orth
	for half := 0; half < 2; half++ {
		for gi, gr := range p.Groups {
			cone.SOC = append(cone.SOC, gr.Size+1)
			g.Set(r, tOff+half*k+gi, -1)
			for j := 0; j < gr.Size; j++ {
				g.Set(r+1+j, half*nv+lay.off[gi]+j, -1)
			}
			r += gr.Size + 1
		}
	}
	qp := &ipm.ConeQP{C: c, G: g, H: h, K: cone}
	if !hinge {
		// Q = [FᵀF −FᵀF; −FᵀF FᵀF] on (w, w′), c = (−Fᵀy, Fᵀy).
		var ftf mat.SymDense
		ftf.SymOuterK(1, fd.T())
		q := mat.NewSymDense(nx, nil)
		for a := 0; a < nv; a++ {
			for b := a; b < nv; b++ {
				v := ftf.At(a, b)
				q.SetSym(a, b, v)
				q.SetSym(nv+a, nv+b, v)
				q.SetSym(a, nv+b, -v)
				q.SetSym(b, nv+a, -v)
			}
		}
		qp.Q = q
		fty := make([]float64, nv)
		p.F.ApplyT(fty, p.Y)
		for j := 0; j < nv; j++ {
			c[j], c[nv+j] = -fty[j], fty[j]
		}
	}
	res, err := ipm.SolveConeQP(ctx, qp, ipm.Options{Tol: tol})
	stopped := err != nil && ctx.Err() != nil && res != nil && res.X != nil // its best iterate so far, certified below
	if err != nil && !stopped {
		return nil, err
	}
	if res.X == nil {
		return nil, fmt.Errorf("general: the interior-point method ended %v", res.Status)
	}
	stop := err
	out := &IPMResult{W: append([]float64(nil), res.X[:nv]...), Wp: append([]float64(nil), res.X[nv:2*nv]...), Status: res.Status, Iterations: res.Iterations}
	if out.Objective, err = p.Objective(out.W, out.Wp); err != nil {
		return nil, err
	}
	// The multipliers of the rows −G_g w_g ≤ 0 are α, α′; the hinge
	// margins' are −y_k θ_k.
	var theta []float64
	if hinge && res.Z != nil {
		theta = make([]float64, n)
		for kk, y := range p.Y {
			theta[kk] = -y * res.Z[2*m+n+kk]
		}
	}
	var alpha, alphap []float64
	if res.Z != nil {
		alpha, alphap = res.Z[:m], res.Z[m:2*m]
	}
	_, gl := groupBlocks(p)
	if out.Bound, err = newCertifier(p, fd, gd, gl, 200).bound(out.W, out.Wp, theta, alpha, alphap); err != nil {
		return nil, err
	}
	return out, stop
}

// ipmSize returns the variables and constraint rows of p's dense cone
// program (see SolveInteriorPoint).
func ipmSize(p *Program) (nx, rows int) {
	n, nv, m := p.Dims()
	k := len(p.Groups)
	nx, rows = 2*nv+2*k, 2*m+2*(nv+k)
	if p.Loss == solvers.HingeLoss {
		nx += n
		rows += 2 * n
	}
	return nx, rows
}

// InteriorPointFits reports whether SolveInteriorPoint takes p: the squared
// or hinge loss, within MaxIPMVariables and MaxIPMEntries.
func InteriorPointFits(p *Program) bool {
	if p.Loss != solvers.SquaredLoss && p.Loss != solvers.HingeLoss {
		return false
	}
	nx, rows := ipmSize(p)
	return nx <= MaxIPMVariables && float64(rows)*float64(nx) <= MaxIPMEntries
}
