package solvers

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"time"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/gonum/floats"
	"gonum.org/v1/gonum/lapack/lapack64"
)

// IPMStatus is how an interior-point run ended. The zero value is not a
// status (it is never "optimal" by accident).
type IPMStatus int

const (
	// IPMOptimal: relative gap and primal and dual residuals are within
	// the tolerance.
	IPMOptimal IPMStatus = iota + 1
	// IPMInaccurate: the method stalled (short steps, no progress, or a
	// numerical breakdown) before reaching the tolerance; the result is its
	// best iterate.
	IPMInaccurate
	// IPMIterationLimit: the iteration limit was reached, or the context
	// was done, before convergence; the result is the best iterate.
	IPMIterationLimit
	// IPMPrimalInfeasible: a certificate of primal infeasibility was found.
	IPMPrimalInfeasible
	// IPMDualInfeasible: a certificate of dual infeasibility (an unbounded
	// primal) was found.
	IPMDualInfeasible
)

func (s IPMStatus) String() string {
	switch s {
	case IPMOptimal:
		return "optimal"
	case IPMInaccurate:
		return "inaccurate"
	case IPMIterationLimit:
		return "iteration limit"
	case IPMPrimalInfeasible:
		return "primal infeasible"
	case IPMDualInfeasible:
		return "dual infeasible"
	}
	return fmt.Sprintf("IPMStatus(%d)", int(s))
}

// IPMOptions configure the interior-point method.
type IPMOptions struct {
	// MaxIter is the iteration limit; 0 means 100.
	MaxIter int
	// Tol bounds the relative duality gap and the relative primal and dual
	// residuals at termination; 0 means 1e-8.
	Tol float64
	// Verbose, when not nil, receives one line per iteration.
	Verbose io.Writer
}

func (o IPMOptions) resolve() (IPMOptions, error) {
	if o.MaxIter < 0 {
		return o, fmt.Errorf("solvers: interior point iteration limit %d < 0", o.MaxIter)
	}
	if o.MaxIter == 0 {
		o.MaxIter = 100
	}
	if math.IsNaN(o.Tol) || o.Tol < 0 || math.IsInf(o.Tol, 0) {
		return o, fmt.Errorf("solvers: interior point tolerance %v, need 0 ≤ tol < ∞", o.Tol)
	}
	if o.Tol == 0 {
		o.Tol = 1e-8
	}
	return o, nil
}

// IPMResult is the outcome of SolveIPM.
type IPMResult struct {
	Status     IPMStatus
	Weights    Weights // v_i, w_i
	Objective  float64 // l^{v,w} at Weights, recomputed with Program.Objective
	Gap        float64 // final relative duality gap
	Iterations int
	Seconds    float64
}

// SolveIPM solves p with a primal-dual interior-point method for its
// second-order cone form (the paper's "CVX" baseline). With u_j the 2P
// groups (v_1 … v_P, w_1 … w_P), σ_j = ±1 their sign in the prediction,
// i(j) their pattern, S_i = 2D_i − I and F = [D_1X … D_PX −D_1X … −D_PX],
// the squared loss is the cone QP
//
//	minimize   ½‖Fu‖² − yᵀFu + ½‖y‖² + β Σ_j t_j
//	subject to S_{i(j)} X u_j ≥ 0,  (t_j, u_j) ∈ Q^{d+1},  j = 1 … 2P,
//
// and the hinge loss the cone LP
//
//	minimize   (1/n) Σ_k ξ_k + β Σ_j t_j
//	subject to S_{i(j)} X u_j ≥ 0,  (t_j, u_j) ∈ Q^{d+1},
//	           ξ ≥ 0,  ξ_k + y_k(Fu)_k ≥ 1,  k = 1 … n.
//
// Both are solved by the method of SolveConeQP (Nesterov–Todd scaling,
// Mehrotra predictor–corrector, homogeneous embedding) with a KKT solver
// that exploits the structure: the orthant constraints of group j add the
// weighted Gram matrix Xᵀdiag(ω_j)X to a d×d diagonal block, t_j and ξ are
// eliminated in closed form, and what remains is a dense 2dP×2dP positive
// definite system, block diagonal plus the coupling FᵀCF (C = I for the
// squared loss, C = diag(ω₀ω_m/(ω₀ + ω_m)) from the weights of ξ ≥ 0 and of
// the margin rows for the hinge loss), factored by Cholesky once per
// iteration. An iteration costs the factorization, (2dP)³/3 flops, plus
// 2P·n·d² for the Gram blocks, n(dP)² for the hinge coupling, and about a
// dozen solves of O(nPd + (dP)²) each; the normal matrix and its factor take
// 2·(2dP)² floats.
//
// p is validated first. The result carries the status; anything but
// IPMOptimal is not an answer to the tolerance. When ctx is done between
// iterations the best iterate so far is returned with an error wrapping
// ctx.Err().
func SolveIPM(ctx context.Context, p *Program, o IPMOptions) (*IPMResult, error) {
	start := time.Now()
	if p == nil {
		return nil, errors.New("solvers: nil program")
	}
	if err := p.Validate(); err != nil {
		return nil, err
	}
	o, err := o.resolve()
	if err != nil {
		return nil, err
	}
	nc := newNetCone(p)
	sol, err := solveCone(ctx, nc.problem(), o)
	if sol == nil {
		return nil, err
	}
	res := &IPMResult{Status: sol.status, Gap: sol.relgap, Iterations: sol.iters}
	switch sol.status {
	case IPMPrimalInfeasible, IPMDualInfeasible:
		// The program is feasible (u = 0) and bounded below (by 0): an
		// infeasibility certificate is a numerical failure.
		res.Weights = p.NewWeights()
		if err == nil {
			err = fmt.Errorf("solvers: interior point reports the program %v, which it is not: numerical failure", sol.status)
		}
	default:
		res.Weights = nc.weights(sol.x)
	}
	if obj, oerr := p.Objective(res.Weights); oerr == nil {
		res.Objective = obj
	} else if err == nil {
		err = oerr
	}
	res.Seconds = time.Since(start).Seconds()
	return res, err
}

// netCone is the cone program of SolveIPM as operators, with its KKT solver.
//
// Variables x = (u, t, ξ): u_j = x[j·d : (j+1)·d] for the 2P groups, t_j at
// 2Pd + j, and for the hinge loss ξ_k at 2Pd + 2P + k. Cone rows (s = h − Gx):
// the pattern rows s[j·n + k] = (S_{i(j)}Xu_j)_k of group j, for the hinge
// loss n rows ξ ≥ 0 and n rows ξ_k + y_k(Fu)_k − 1 ≥ 0, then one
// second-order cone (t_j, u_j) per group.
//
// Robust programs (section 4) fit the same mould: constraints local to a
// group (the ℓ₁ epigraph of (2D_i − I)Xv_i ≥ ε‖v_i‖₁) enlarge the group's
// eliminated auxiliaries beside t_j; constraints per sample that mix the
// groups (the hinge margin with ε‖Σ_i d_ik(v_i − w_i)‖₁) add rows to the
// coupling term FᵀCF.
type netCone struct {
	p             *Program
	n, d, np, ng  int // ng = 2P groups
	hinge         bool
	nu, nx, m     int
	rowXi, rowMar int // first ξ ≥ 0 row and first margin row
	rowSOC        int // first second-order cone row
	x             blas64.General
	sgn, dm       []float64 // P×n: S_i[k] and D_i[k]
	c, h          []float64
	offset        float64

	m0 []float64 // squared loss: F_vᵀF_v (dP×dP), F_v = [D_1X … D_PX]

	// workspace
	zt, yt blas64.General // 2P×n
	fu     []float64      // n
	tz     []float64      // m

	// KKT
	w     *ntScaling
	hm    blas64.Symmetric // 2dP×2dP normal matrix (lower)
	hf    blas64.Symmetric // its factor's storage
	chol  blas64.Triangular
	fs    blas64.General // hinge: n×dP, √c_k·F_v
	gx    blas64.General // n×d, √ω·X
	cw    []float64      // hinge: per sample ω_m/(ω₀ + ω_m)
	tcoef []float64      // per group 2w̄₀/(1 + 2‖w̄₁‖²)
	tden  []float64      // per group 1 + 2‖w̄₁‖²
}

func newNetCone(p *Program) *netCone {
	n, d, np := p.Dims()
	ng := 2 * np
	nc := &netCone{p: p, n: n, d: d, np: np, ng: ng, hinge: p.Loss == HingeLoss, x: p.X.RawMatrix()}
	nc.nu = ng * d
	nc.nx = nc.nu + ng
	nc.rowXi = ng * n
	nc.rowMar = nc.rowXi
	nc.rowSOC = nc.rowXi
	if nc.hinge {
		nc.nx += n
		nc.rowMar += n
		nc.rowSOC += 2 * n
	}
	nc.m = nc.rowSOC + ng*(d+1)
	nc.sgn = make([]float64, np*n)
	nc.dm = make([]float64, np*n)
	for i, di := range p.D {
		for k, on := range di {
			nc.sgn[i*n+k] = -1
			if on {
				nc.sgn[i*n+k], nc.dm[i*n+k] = 1, 1
			}
		}
	}
	gen := func(r, c int) blas64.General {
		return blas64.General{Rows: r, Cols: c, Stride: c, Data: make([]float64, r*c)}
	}
	nc.zt, nc.yt = gen(ng, n), gen(ng, n)
	nc.fu = make([]float64, n)
	nc.tz = make([]float64, nc.m)
	nu := nc.nu
	nc.hm = blas64.Symmetric{N: nu, Stride: nu, Uplo: blas.Lower, Data: make([]float64, nu*nu)}
	nc.hf = blas64.Symmetric{N: nu, Stride: nu, Uplo: blas.Lower, Data: make([]float64, nu*nu)}
	nc.gx = gen(n, d)
	nc.tcoef = make([]float64, ng)
	nc.tden = make([]float64, ng)

	// c, h and the constant of the objective.
	nc.c = make([]float64, nc.nx)
	nc.h = make([]float64, nc.m)
	for j := 0; j < ng; j++ {
		nc.c[nu+j] = p.Beta
	}
	dp := d * np
	fv := gen(n, dp) // F_v
	for k := 0; k < n; k++ {
		for i := 0; i < np; i++ {
			if nc.dm[i*n+k] != 0 {
				copy(fv.Data[k*dp+i*d:k*dp+(i+1)*d], nc.x.Data[k*nc.x.Stride:k*nc.x.Stride+d])
			}
		}
	}
	if nc.hinge {
		for k := 0; k < n; k++ {
			nc.c[nu+ng+k] = 1 / float64(n)
			nc.h[nc.rowMar+k] = -1
		}
		nc.fs = fv
		nc.cw = make([]float64, n)
	} else {
		// c_u = −Fᵀy, offset ½‖y‖², and F_vᵀF_v for the KKT matrix.
		nc.fuT(nc.c[:nu], p.Y, -1, 0)
		nc.offset = 0.5 * floats.Dot(p.Y, p.Y)
		nc.m0 = make([]float64, dp*dp)
		m0 := blas64.Symmetric{N: dp, Stride: dp, Uplo: blas.Lower, Data: nc.m0}
		blas64.Syrk(blas.Trans, 1, fv, 0, m0)
		for a := 0; a < dp; a++ {
			for b := 0; b < a; b++ {
				nc.m0[b*dp+a] = nc.m0[a*dp+b]
			}
		}
	}
	return nc
}

func (nc *netCone) problem() *coneProblem {
	k := Cone{Orthant: nc.rowSOC, SOC: make([]int, nc.ng)}
	for j := range k.SOC {
		k.SOC[j] = nc.d + 1
	}
	return &coneProblem{c: nc.c, h: nc.h, b: []float64{}, k: k, offset: nc.offset, ops: nc}
}

// weights returns v_i = u_i and w_i = u_{P+i}.
func (nc *netCone) weights(x []float64) Weights {
	wt := nc.p.NewWeights()
	d, np := nc.d, nc.np
	for i := 0; i < np; i++ {
		copy(wt.V.RawRowView(i), x[i*d:(i+1)*d])
		copy(wt.W.RawRowView(i), x[(np+i)*d:(np+i+1)*d])
	}
	return wt
}

// sigma returns the sign of group j in Fu.
func (nc *netCone) sigma(j int) float64 {
	if j < nc.np {
		return 1
	}
	return -1
}

// xu sets zt = U Xᵀ (row j is X u_j) for the groups u in x[:nu].
func (nc *netCone) xu(u []float64) {
	ug := blas64.General{Rows: nc.ng, Cols: nc.d, Stride: nc.d, Data: u[:nc.nu]}
	blas64.Gemm(blas.NoTrans, blas.Trans, 1, ug, nc.x, 0, nc.zt)
}

// fuFromZt sets fu = Fu from zt = U Xᵀ.
func (nc *netCone) fuFromZt() {
	n := nc.n
	clear(nc.fu)
	for j := 0; j < nc.ng; j++ {
		sg, dm, row := nc.sigma(j), nc.dm[(j%nc.np)*n:(j%nc.np+1)*n], nc.zt.Data[j*n:(j+1)*n]
		for k, on := range dm {
			if on != 0 {
				nc.fu[k] += sg * row[k]
			}
		}
	}
}

// fuT sets out = α Fᵀr + β·out on the u part (out has length nu).
func (nc *netCone) fuT(out, r []float64, alpha, beta float64) {
	n := nc.n
	for j := 0; j < nc.ng; j++ {
		sg, dm, row := nc.sigma(j), nc.dm[(j%nc.np)*n:(j%nc.np+1)*n], nc.yt.Data[j*n:(j+1)*n]
		for k := range row {
			row[k] = sg * dm[k] * r[k]
		}
	}
	og := blas64.General{Rows: nc.ng, Cols: nc.d, Stride: nc.d, Data: out[:nc.nu]}
	blas64.Gemm(blas.NoTrans, blas.NoTrans, alpha, nc.yt, nc.x, beta, og)
}

// mulQ: Q = FᵀF on u for the squared loss, 0 otherwise.
func (nc *netCone) mulQ(out, x []float64) {
	clear(out)
	if nc.hinge {
		return
	}
	nc.xu(x)
	nc.fuFromZt()
	nc.fuT(out, nc.fu, 1, 0)
}

func (nc *netCone) mulG(out, x []float64, alpha, beta float64) {
	n, d, nu := nc.n, nc.d, nc.nu
	if beta == 0 {
		clear(out)
	} else if beta != 1 {
		floats.Scale(beta, out)
	}
	nc.xu(x)
	for j := 0; j < nc.ng; j++ {
		sg, row, o := nc.sgn[(j%nc.np)*n:(j%nc.np+1)*n], nc.zt.Data[j*n:(j+1)*n], out[j*n:(j+1)*n]
		for k := range o {
			o[k] -= alpha * sg[k] * row[k]
		}
	}
	if nc.hinge {
		nc.fuFromZt()
		xi := x[nu+nc.ng:]
		for k := 0; k < n; k++ {
			out[nc.rowXi+k] -= alpha * xi[k]
			out[nc.rowMar+k] -= alpha * (nc.p.Y[k]*nc.fu[k] + xi[k])
		}
	}
	for j := 0; j < nc.ng; j++ {
		o := out[nc.rowSOC+j*(d+1):]
		o[0] -= alpha * x[nu+j]
		for l := 0; l < d; l++ {
			o[1+l] -= alpha * x[j*d+l]
		}
	}
}

func (nc *netCone) mulGT(out, z []float64, alpha, beta float64) {
	n, d, nu, np := nc.n, nc.d, nc.nu, nc.np
	for j := 0; j < nc.ng; j++ {
		sg, row, zz := nc.sgn[(j%np)*n:(j%np+1)*n], nc.yt.Data[j*n:(j+1)*n], z[j*n:(j+1)*n]
		for k := range row {
			row[k] = -sg[k] * zz[k]
		}
		if nc.hinge {
			s, dm, zm := nc.sigma(j), nc.dm[(j%np)*n:(j%np+1)*n], z[nc.rowMar:nc.rowMar+n]
			for k := range row {
				row[k] -= s * dm[k] * nc.p.Y[k] * zm[k]
			}
		}
	}
	og := blas64.General{Rows: nc.ng, Cols: d, Stride: d, Data: out[:nu]}
	blas64.Gemm(blas.NoTrans, blas.NoTrans, alpha, nc.yt, nc.x, beta, og)
	for j := 0; j < nc.ng; j++ {
		zs := z[nc.rowSOC+j*(d+1):]
		out[nu+j] = beta*out[nu+j] - alpha*zs[0]
		for l := 0; l < d; l++ {
			out[j*d+l] -= alpha * zs[1+l]
		}
	}
	if nc.hinge {
		for k := 0; k < n; k++ {
			o := &out[nu+nc.ng+k]
			*o = beta**o - alpha*(z[nc.rowXi+k]+z[nc.rowMar+k])
		}
	}
}

func (nc *netCone) mulA(out, x []float64, alpha, beta float64) {}

func (nc *netCone) mulAT(out, y []float64, alpha, beta float64) {
	if beta == 0 {
		clear(out)
	} else if beta != 1 {
		floats.Scale(beta, out)
	}
}

// factor assembles and factors the normal matrix on u,
//
//	H = FᵀCF + blkdiag_j( Xᵀdiag(ω_j)X + β_j⁻²(I − 2w̄₁w̄₁ᵀ/(1 + 2‖w̄₁‖²)) ),
//
// where ω_j = z/s on the pattern rows of group j and the second term is the
// Schur complement, after eliminating t_j, of the second-order cone block
// W_j⁻² = β_j⁻²(2Jw̄w̄ᵀJ − J) (w̄ = (w̄₀, w̄₁) the NT point). For the squared
// loss C = I and FᵀF is a precomputed constant; for the hinge loss
// eliminating ξ leaves C = diag(ω₀ω_m/(ω₀ + ω_m)) with ω₀, ω_m the weights of
// ξ ≥ 0 and of the margin rows. Cost: 2P·n·d² for the blocks, n(dP)² for the
// hinge coupling, (2dP)³/3 for the Cholesky factorization.
func (nc *netCone) factor(w *ntScaling) error {
	nc.w = w
	n, d, np := nc.n, nc.d, nc.np
	dp := d * np
	hs := nc.hm.Stride
	hd := nc.hm.Data
	// Coupling FᵀCF = [M −M; −M M] with M = F_vᵀ C F_v.
	var msrc []float64
	if nc.hinge {
		for k := 0; k < n; k++ {
			w0, wm := 1/square(w.d[nc.rowXi+k]), 1/square(w.d[nc.rowMar+k])
			nc.cw[k] = wm / (w0 + wm)
			ck := math.Sqrt(w0 * nc.cw[k])
			row := nc.fs.Data[k*dp : (k+1)*dp]
			xk := nc.x.Data[k*nc.x.Stride : k*nc.x.Stride+d]
			for i := 0; i < np; i++ {
				if nc.dm[i*n+k] != 0 {
					floats.ScaleTo(row[i*d:(i+1)*d], ck, xk)
				}
			}
		}
		top := blas64.Symmetric{N: dp, Stride: hs, Uplo: blas.Lower, Data: hd}
		blas64.Syrk(blas.Trans, 1, nc.fs, 0, top)
		for a := 0; a < dp; a++ {
			for b := 0; b < a; b++ {
				hd[b*hs+a] = hd[a*hs+b]
			}
		}
		msrc = hd
	} else {
		for a := 0; a < dp; a++ {
			copy(hd[a*hs:a*hs+dp], nc.m0[a*dp:(a+1)*dp])
		}
		msrc = hd
	}
	for a := 0; a < dp; a++ {
		src := msrc[a*hs : a*hs+dp]
		lo, br := hd[(dp+a)*hs:(dp+a)*hs+dp], hd[(dp+a)*hs+dp:(dp+a)*hs+2*dp]
		for b, v := range src {
			lo[b] = -v
			br[b] = v
		}
	}
	// Group blocks.
	for j := 0; j < nc.ng; j++ {
		wd := w.d[j*n : (j+1)*n]
		for k := 0; k < n; k++ {
			floats.ScaleTo(nc.gx.Data[k*d:(k+1)*d], 1/wd[k], nc.x.Data[k*nc.x.Stride:k*nc.x.Stride+d])
		}
		blk := blas64.Symmetric{N: d, Stride: hs, Uplo: blas.Lower, Data: hd[j*d*hs+j*d:]}
		blas64.Syrk(blas.Trans, 1, nc.gx, 1, blk)
		wb := w.wbar[j*(d+1) : (j+1)*(d+1)]
		w1 := wb[1:]
		den := 1 + 2*floats.Dot(w1, w1)
		ib2 := 1 / square(w.beta[j])
		nc.tcoef[j] = 2 * wb[0] / den
		nc.tden[j] = den
		for a := 0; a < d; a++ {
			r := hd[(j*d+a)*hs+j*d:]
			for b := 0; b <= a; b++ {
				r[b] -= ib2 * 2 * w1[a] * w1[b] / den
			}
			r[a] += ib2
		}
	}
	var ok bool
	if nc.chol, ok = cholesky(nc.hm, nc.hf); !ok {
		return errors.New("solvers: the normal matrix of the interior-point step is not positive definite")
	}
	return nil
}

func square(x float64) float64 { return x * x }

// solve solves the KKT system (no y): with r = x + GᵀW⁻²z it eliminates t
// and ξ, solves H Δu = r_u' by the Cholesky factor, recovers Δt and Δξ, and
// sets z = W⁻²(GΔx − z).
func (nc *netCone) solve(x, y, z []float64) error {
	w := nc.w
	n, d, nu, ng := nc.n, nc.d, nc.nu, nc.ng
	copy(nc.tz, z)
	w.unscale2(nc.tz)
	nc.mulGT(x, nc.tz, 1, 1)
	rt := x[nu : nu+ng]
	// Eliminate t_j: r_u_j += 2w̄₀/(1 + 2‖w̄₁‖²)·r_t_j·w̄₁.
	for j := 0; j < ng; j++ {
		w1 := w.wbar[j*(d+1)+1 : (j+1)*(d+1)]
		floats.AddScaled(x[j*d:(j+1)*d], nc.tcoef[j]*rt[j], w1)
	}
	var rxi []float64
	if nc.hinge {
		// Eliminate ξ: r_u −= Fᵀ(y∘ω_m∘r_ξ/(ω₀ + ω_m)).
		rxi = x[nu+ng:]
		for k := 0; k < n; k++ {
			wsum := 1/square(w.d[nc.rowXi+k]) + 1/square(w.d[nc.rowMar+k])
			nc.fu[k] = nc.p.Y[k] * nc.cw[k] * rxi[k]
			rxi[k] /= wsum
		}
		nc.fuT(x, nc.fu, -1, 1)
	}
	lapack64.Potrs(nc.chol, blas64.General{Rows: nu, Cols: 1, Stride: 1, Data: x[:nu]})
	// Δt_j = (β_j² r_t_j + 2w̄₀ w̄₁ᵀΔu_j)/(1 + 2‖w̄₁‖²).
	for j := 0; j < ng; j++ {
		wb := w.wbar[j*(d+1) : (j+1)*(d+1)]
		rt[j] = (square(w.beta[j])*rt[j] + 2*wb[0]*floats.Dot(wb[1:], x[j*d:(j+1)*d])) / nc.tden[j]
	}
	if nc.hinge {
		// Δξ_k = (r_ξk − ω_m y_k (FΔu)_k)/(ω₀ + ω_m).
		nc.xu(x)
		nc.fuFromZt()
		for k := 0; k < n; k++ {
			rxi[k] -= nc.cw[k] * nc.p.Y[k] * nc.fu[k]
		}
	}
	nc.mulG(nc.tz, x, 1, 0)
	for i := range z {
		z[i] = nc.tz[i] - z[i]
	}
	w.unscale2(z)
	return nil
}
