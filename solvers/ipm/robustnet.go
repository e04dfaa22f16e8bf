package ipm

import (
	"errors"
	"math"
	"runtime"
	"sync"

	"github.com/convexnn/convexnn/solvers"
	"github.com/convexnn/convexnn/solvers/certify"
	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"
	gonumblas "gonum.org/v1/gonum/blas/gonum"
	"gonum.org/v1/gonum/floats"
	gonumlapack "gonum.org/v1/gonum/lapack/gonum"
	"gonum.org/v1/gonum/lapack/lapack64"
	"gonum.org/v1/gonum/mat"
)

// robustNet is the robust cone program of SolveRobust as operators, with a
// structured KKT solver; nothing of size rows × variables is formed.
//
// Variables x: u_j = x[j·d : (j+1)·d] for the 2P groups (v_1 … v_P,
// w_1 … w_P), t_j at 2Pd + j, the loss slack of sample k (ξ_k, z_k or v_k)
// at 2Pd + 2P + k, then the dual-norm auxiliaries: na per epigraph (f for
// the ℓ∞ set, whose ρ ≥ ‖e‖₁ is −a ≤ e ≤ a, ρ = 1ᵀa; one for the ℓ₂ and
// ℓ₁ sets), first group j's (ρ_j ≥ ‖u_j^f‖_*), then sample k's
// (r_k ≥ ‖g_k^f‖_*). Orthant rows: per group j, the 2f epigraph rows
// (a_l − u_jl, a_l + u_jl; ℓ∞ and ℓ₁ sets) and the n robust rows
// S_i[k] x_kᵀu_j − ε ρ_j; then per sample k its 2f epigraph rows on g_k and
// its two loss rows (hinge: ξ_k, ξ_k + y_k ŷ_k − ε r_k − 1; squared:
// z_k ∓ (ŷ_k − y_k) − ε r_k; BCE and logistic: v_k − c_k ŷ_k − ε|c_k| r_k,
// v_k − m*_k). Second-order cones: per group (ρ_j, u_j^f) (ℓ₂ set) and
// (t_j, u_j), then per sample (r_k, g_k^f) (ℓ₂ set).
//
// The KKT solve (see factor) eliminates every auxiliary in closed form: the
// normal matrix H = Q + GᵀW⁻²G is a sum of local blocks, one per group on
// (u_j, t_j, ρ_j) and one per sample on (g_k, slack_k, r_k), where
// g_k = Σ_i d_ik(v_i − w_i). The local variables of each block are
// eliminated by a small Cholesky factorization (the ℓ∞ set's f auxiliaries
// first reduced to their sum in closed form, addInfEpigraph), leaving a d×d
// matrix B_j per group and M_k per sample; the samples couple the groups only through
// p_i = v_i − w_i, by C = Σ_k (d_k d_kᵀ) ⊗ M_k (dP×dP, one matrix product
// over pattern pairs), and eliminating v_i + w_i pattern by pattern leaves
// the dense dP×dP matrix blockdiag((B_vi⁻¹ + B_wi⁻¹)⁻¹) + C.
type robustNet struct {
	noEqualities
	p               *solvers.Program
	kind            solvers.Norm
	eps             float64
	n, d, np, ng, f int
	na              int // auxiliaries per epigraph (0 when not robust)
	epiOrth, epiSOC bool
	nu, nx0, nx     int // nx0: the first auxiliary
	gr, sr, eo, so  int // orthant rows per group and per sample, epigraph rows per block, first sample row
	orth, gs, smSOC int // orthant rows, SOC rows per group, first sample SOC row
	x, dn           blas64.General
	sgn             []float64 // P×n: S_i[k] = ±1
	la, le          []float64 // n×2: coefficients of ŷ_k and of r_k in the two loss rows
	qdiag           []float64 // n: Q on the loss slacks
	c, h            []float64
	k               Cone
	offset          float64
	smooth, hinge   bool
	xu, pm, gk, ggr blas64.General // n×2P, P×d, n×d, n×d
	zs, ug          blas64.General // 2P×n, 2P×d
	val, grad       []float64      // m, nx
	mg, ms, nl      int            // local block sizes: group, sample, eliminated
	nla             int            // local auxiliaries per block: na, or 1 for the ℓ∞ set (their sum)
	// The ℓ∞ set's closed-form elimination (addInfEpigraph), per block
	// (groups, then samples): δ_l, e_l (f each), σ, and in a solve ρ_a.
	epiD, epiE, epiS, epiR []float64
	grpN                   []float64      // per group mg×mg: B_j, W_j = L_j⁻¹N_Lu, L_j
	smpN                   []float64      // per sample nl×ms: rows d… of the local matrix after elimination
	mstack                 blas64.General // n×d(d+1)/2: M_k, packed (packedIndex)
	xxt                    blas64.General // n×d(d+1)/2: x_kx_kᵀ, packed
	gw, ggram              blas64.General // 2P×n: the groups' pattern-row weights ω_j; 2P×d(d+1)/2: Xᵀdiag(ω_j)X, packed
	pairs                  [][2]int
	dpairs, cpairs         blas64.General
	bfull, sig, lam        []float64 // 2P×d×d: B_j; P×d×d: chol(Σ_i), Λ_i
	sm, smf                blas64.Symmetric
	smTri                  blas64.Triangular
	w                      *ntScaling
	work                   []robustWork
	rl                     []float64 // (2P + n)·nl
	pr, pp                 []float64 // dP
}

// The local blocks are small (d ≲ 150, at most two eliminated variables)
// and factored by several goroutines at once: they use gonum's native BLAS,
// whose calls cost no cgo transition and wake no OpenBLAS threads (measured:
// OpenBLAS called from two goroutines at once was slower than pure Go
// here), and gonum's LAPACK; the large products and the dP×dP
// factorization use blas64's (OpenBLAS with -tags openblas).
var (
	localBLAS   gonumblas.Implementation
	localLAPACK gonumlapack.Implementation
)

// robustWork is one worker's scratch for factor.
type robustWork struct {
	n, xw, b1 []float64 // xw: one group's rows √ω·x_k, when !gramProduct
}

// gramProduct reports whether robustNet forms the groups' Gram matrices
// Xᵀdiag(ω_j)X as one matrix product of the 2P×n weights with the n×d(d+1)/2
// products x_kx_kᵀ (n·d(d+1)/2 more floats) rather than group by group:
// when they are large. Mid-size robust hinge (n = 2000, d = 50, P = 48):
// 16.4 s to a certified 10⁻⁶ instead of 20.2 s. (On a small robust BCE
// program with the ℓ₂ set, n = 200, d = 11, the product's rounding left
// the interior-point method stalled at a primal residual of 5·10⁻⁷, where
// the groups' own products reach the optimum: that program's end-game,
// whose model is rebuilt at every iterate, is fragile in either form.)
func gramProduct(n, d int) bool { return n*d*d >= 1<<20 }

// setGramProduct allocates the buffers of the groups' Gram matrices: for
// the one product when on, else each worker's rows.
func (rn *robustNet) setGramProduct(on bool) {
	n, d, ng := rn.n, rn.d, rn.ng
	dd := d * (d + 1) / 2
	rn.xxt, rn.gw, rn.ggram = blas64.General{}, blas64.General{}, blas64.General{}
	for t := range rn.work {
		rn.work[t].xw = nil
	}
	if !on {
		for t := range rn.work {
			rn.work[t].xw = make([]float64, n*d)
		}
		return
	}
	gen := func(r, c int) blas64.General {
		return blas64.General{Rows: r, Cols: c, Stride: max(1, c), Data: make([]float64, r*c)}
	}
	rn.xxt, rn.gw, rn.ggram = gen(n, dd), gen(ng, n), gen(ng, dd)
	for k := 0; k < n; k++ {
		xk, row := rn.x.Data[k*rn.x.Stride:k*rn.x.Stride+d], rn.xxt.Data[k*dd:(k+1)*dd]
		for a := 0; a < d; a++ {
			for b := 0; b <= a; b++ {
				row[packedIndex(a, b)] = xk[a] * xk[b]
			}
		}
	}
}

// packedIndex is the position of entry (a, b), b ≤ a, of a symmetric
// matrix stored as its lower triangle row by row.
func packedIndex(a, b int) int { return a*(a+1)/2 + b }

func newRobustNet(p *solvers.Program, pert solvers.Perturbation) *robustNet {
	n, d, np := p.Dims()
	rn := &robustNet{p: p, kind: pert.Norm.Canonical(), eps: pert.Eps, n: n, d: d, np: np, ng: 2 * np,
		f: solvers.PerturbedFeatures(d, p.Bias)}
	ng := rn.ng
	rn.smooth = p.Loss == solvers.BCELoss || p.Loss == solvers.LogisticLoss
	rn.hinge = p.Loss == solvers.HingeLoss
	if pert.Eps > 0 && rn.f > 0 {
		rn.na = 1
		if rn.kind == solvers.LInf {
			rn.na = rn.f
		}
		rn.epiOrth = rn.kind != solvers.L2
		rn.epiSOC = rn.kind == solvers.L2
	}
	rn.nu = ng * d
	rn.nx0 = rn.nu + ng + n
	rn.nx = rn.nx0 + (ng+n)*rn.na
	if rn.epiOrth {
		rn.eo = 2 * rn.f
	}
	rn.gr, rn.sr = n+rn.eo, 2+rn.eo
	rn.so = ng * rn.gr
	rn.orth = rn.so + n*rn.sr
	rn.gs = d + 1
	if rn.epiSOC {
		rn.gs += rn.f + 1
	}
	rn.smSOC = rn.orth + ng*rn.gs
	rn.k = Cone{Orthant: rn.orth}
	for j := 0; j < ng; j++ {
		if rn.epiSOC {
			rn.k.SOC = append(rn.k.SOC, rn.f+1)
		}
		rn.k.SOC = append(rn.k.SOC, d+1)
	}
	if rn.epiSOC {
		for k := 0; k < n; k++ {
			rn.k.SOC = append(rn.k.SOC, rn.f+1)
		}
	}
	m := rn.k.Dim()

	rn.x = blas64.General{Rows: n, Cols: d, Stride: p.X.RawMatrix().Stride, Data: p.X.RawMatrix().Data}
	rn.dn = blas64.General{Rows: n, Cols: np, Stride: np, Data: make([]float64, n*np)}
	rn.sgn = make([]float64, np*n)
	for i := 0; i < np; i++ {
		for k := 0; k < n; k++ {
			rn.sgn[i*n+k] = -1
			if p.D[i][k] {
				rn.sgn[i*n+k] = 1
				rn.dn.Data[k*np+i] = 1
			}
		}
	}
	rn.la, rn.le = make([]float64, 2*n), make([]float64, 2*n)
	rn.qdiag = make([]float64, n)
	rn.c, rn.h = make([]float64, rn.nx), make([]float64, m)
	for j := 0; j < ng; j++ {
		rn.c[rn.nu+j] = p.Beta
	}
	for k := 0; k < n; k++ {
		r := rn.so + k*rn.sr + rn.eo
		switch {
		case rn.smooth:
			ck := p.Loss.MarginScale(p.Y[k])
			rn.la[2*k], rn.le[2*k] = -ck, pert.Eps*math.Abs(ck)
		case rn.hinge:
			rn.la[2*k+1], rn.le[2*k+1] = p.Y[k], pert.Eps
			rn.h[r+1] = -1
			rn.c[rn.nu+ng+k] = 1 / float64(n)
		default:
			rn.la[2*k], rn.la[2*k+1] = -1, 1
			rn.le[2*k], rn.le[2*k+1] = pert.Eps, pert.Eps
			rn.h[r], rn.h[r+1] = p.Y[k], -p.Y[k]
			rn.qdiag[k] = 1
		}
	}
	if rn.na == 0 {
		rn.le = make([]float64, 2*n)
	}

	gen := func(r, c int) blas64.General {
		return blas64.General{Rows: r, Cols: c, Stride: max(1, c), Data: make([]float64, r*c)}
	}
	rn.xu, rn.pm, rn.gk, rn.ggr = gen(n, ng), gen(np, d), gen(n, d), gen(n, d)
	rn.zs, rn.ug = gen(ng, n), gen(ng, d)
	rn.val, rn.grad = make([]float64, m), make([]float64, rn.nx)

	rn.nla = rn.na
	if rn.na > 1 {
		// The ℓ∞ set's f auxiliaries of a block reduce to their sum (see
		// addInfEpigraph).
		rn.nla = 1
		rn.epiD, rn.epiE = make([]float64, (ng+n)*rn.f), make([]float64, (ng+n)*rn.f)
		rn.epiS, rn.epiR = make([]float64, ng+n), make([]float64, ng+n)
	}
	rn.nl = 1 + rn.nla
	rn.mg, rn.ms = d+rn.nl, d+rn.nl
	rn.grpN = make([]float64, ng*rn.mg*rn.mg)
	rn.smpN = make([]float64, n*rn.nl*rn.ms)
	dd := d * (d + 1) / 2
	rn.mstack = gen(n, dd)
	for i := 0; i < np; i++ {
		for i2 := 0; i2 <= i; i2++ {
			rn.pairs = append(rn.pairs, [2]int{i, i2})
		}
	}
	rn.dpairs = gen(len(rn.pairs), n)
	for q, pr := range rn.pairs {
		for k := 0; k < n; k++ {
			rn.dpairs.Data[q*n+k] = rn.dn.Data[k*np+pr[0]] * rn.dn.Data[k*np+pr[1]]
		}
	}
	rn.cpairs = gen(len(rn.pairs), dd)
	rn.lam, rn.sig, rn.bfull = make([]float64, np*d*d), make([]float64, np*d*d), make([]float64, ng*d*d)
	dp := d * np
	sym := func(n int) blas64.Symmetric {
		return blas64.Symmetric{N: n, Stride: max(1, n), Uplo: blas.Lower, Data: make([]float64, n*n)}
	}
	rn.sm, rn.smf = sym(dp), sym(dp)
	rn.work = make([]robustWork, max(1, min(runtime.GOMAXPROCS(0), n)))
	for t := range rn.work {
		rn.work[t] = robustWork{n: make([]float64, rn.ms*rn.ms), b1: make([]float64, d*d)}
	}
	rn.setGramProduct(gramProduct(n, d))
	rn.rl = make([]float64, (ng+n)*rn.nl)
	rn.pr, rn.pp = make([]float64, dp), make([]float64, dp)
	return rn
}

// robustNetFloats is the number of floats newRobustNet and the
// interior-point method allocate for p and pert (see RobustMemoryEstimate).
func robustNetFloats(p *solvers.Program, pert solvers.Perturbation) (floats float64, dp int) {
	n, d, np := p.Dims()
	f := solvers.PerturbedFeatures(d, p.Bias)
	ng := 2 * np
	na, orth, soc := 0, ng*n+2*n, ng*(d+1)
	if pert.Eps > 0 && f > 0 {
		switch pert.Norm.Canonical() {
		case solvers.L2:
			na = 1
			soc += (ng + n) * (f + 1)
		case solvers.L1:
			na = 1
			orth += (ng + n) * 2 * f
		default:
			na = f
			orth += (ng + n) * 2 * f
		}
	}
	nl := float64(1 + min(na, 1)) // the ℓ∞ set's f auxiliaries reduce to one (addInfEpigraph)
	fd, fn := float64(d), float64(n)
	mg := fd + nl
	npairs := float64(np * (np + 1) / 2)
	dp = d * np
	nx := float64(ng*d + ng + n + (ng+n)*na)
	dd := fd * (fd + 1) / 2
	gram := float64(runtime.GOMAXPROCS(0)) * fn * fd // robustWork.xw
	if gramProduct(n, d) {
		gram = fn*dd + float64(ng)*(fn+dd)
	}
	floats = 2*float64(dp)*float64(dp) + float64(ng)*mg*mg + fn*nl*mg + fn*dd + gram +
		npairs*(fn+dd) + 2*float64((ng+n)*f) + float64(4*np)*fd*fd + 4*fn*fd + 4*float64(ng)*fn +
		float64(runtime.GOMAXPROCS(0))*(mg*mg+fd*fd) + 30*float64(orth+soc) + 30*nx
	return floats, dp
}

// coneProblem returns the program with its operators.
func (rn *robustNet) coneProblem() *coneProblem {
	return &coneProblem{c: rn.c, h: rn.h, b: []float64{}, k: rn.k, ops: rn, offset: rn.offset, linear: rn.hinge}
}

func (rn *robustNet) slack(k int) int     { return rn.nu + rn.ng + k }
func (rn *robustNet) groupAux(j int) int  { return rn.nx0 + j*rn.na }
func (rn *robustNet) sampleAux(k int) int { return rn.nx0 + (rn.ng+k)*rn.na }
func (rn *robustNet) groupRow(j int) int  { return j*rn.gr + rn.eo }
func (rn *robustNet) sampleRow(k int) int { return rn.so + k*rn.sr }
func (rn *robustNet) lossRow(k int) int   { return rn.so + k*rn.sr + rn.eo }
func (rn *robustNet) groupSOC(j int) int  { return rn.orth + j*rn.gs }
func (rn *robustNet) sampleSOC(k int) int { return rn.smSOC + k*(rn.f+1) }
func (rn *robustNet) auxIndex(l int) int  { return min(l, rn.na-1) }
func (rn *robustNet) sumAux(a []float64) float64 {
	var s float64
	for _, v := range a {
		s += v
	}
	return s
}

// values sets rn.val to the linear part of every row at x (s = h − Gx, so
// Gx = −val) and rn.gk to the g_k.
func (rn *robustNet) values(x []float64) {
	n, d, np, ng := rn.n, rn.d, rn.np, rn.ng
	u := blas64.General{Rows: ng, Cols: d, Stride: d, Data: x[:rn.nu]}
	blas64.Gemm(blas.NoTrans, blas.Trans, 1, rn.x, u, 0, rn.xu)
	for i := 0; i < np; i++ {
		pv, vi, wi := rn.pm.Data[i*d:(i+1)*d], x[i*d:(i+1)*d], x[(np+i)*d:(np+i+1)*d]
		for l := range pv {
			pv[l] = vi[l] - wi[l]
		}
	}
	blas64.Gemm(blas.NoTrans, blas.NoTrans, 1, rn.dn, rn.pm, 0, rn.gk)
	val := rn.val
	for j := 0; j < ng; j++ {
		i := j % np
		uj := x[j*d : (j+1)*d]
		var rho float64
		if rn.na > 0 {
			aux := x[rn.groupAux(j) : rn.groupAux(j)+rn.na]
			rho = rn.sumAux(aux)
			rn.epigraphValues(val, j*rn.gr, rn.groupSOC(j), aux, uj)
		}
		r := rn.groupRow(j)
		sg := rn.sgn[i*n : (i+1)*n]
		for k := 0; k < n; k++ {
			val[r+k] = sg[k]*rn.xu.Data[k*ng+j] - rn.eps*rho
		}
		s := rn.groupSOC(j) + rn.gs - (d + 1)
		val[s] = x[rn.nu+j]
		copy(val[s+1:s+1+d], uj)
	}
	for k := 0; k < n; k++ {
		gk := rn.gk.Data[k*d : (k+1)*d]
		var yhat float64
		for l, xv := range rn.x.Data[k*rn.x.Stride : k*rn.x.Stride+d] {
			yhat += xv * gk[l]
		}
		var r float64
		if rn.na > 0 {
			aux := x[rn.sampleAux(k) : rn.sampleAux(k)+rn.na]
			r = rn.sumAux(aux)
			rn.epigraphValues(val, rn.sampleRow(k), rn.sampleSOC(k), aux, gk)
		}
		lr, sl := rn.lossRow(k), x[rn.slack(k)]
		for q := 0; q < 2; q++ {
			val[lr+q] = sl + rn.la[2*k+q]*yhat - rn.le[2*k+q]*r
		}
	}
}

func (rn *robustNet) mulG(out, x []float64, alpha, beta float64) {
	rn.values(x)
	for i, v := range rn.val {
		out[i] = beta*out[i] - alpha*v
	}
}

// mulGT sets out = αGᵀz + β·out through rn.grad = (coefficients)ᵀz = −Gᵀz.
func (rn *robustNet) mulGT(out, z []float64, alpha, beta float64) {
	n, d, np, ng := rn.n, rn.d, rn.np, rn.ng
	g := rn.grad
	clear(g)
	for j := 0; j < ng; j++ {
		i := j % np
		r := rn.groupRow(j)
		zr, sg, zs := z[r:r+n], rn.sgn[i*n:(i+1)*n], rn.zs.Data[j*n:(j+1)*n]
		var sum float64
		for k := range zr {
			zs[k] = sg[k] * zr[k]
			sum += zr[k]
		}
		s := rn.groupSOC(j) + rn.gs - (d + 1)
		g[rn.nu+j] += z[s]
		if rn.na == 0 {
			continue
		}
		aux := g[rn.groupAux(j) : rn.groupAux(j)+rn.na]
		for q := range aux {
			aux[q] -= rn.eps * sum
		}
		rn.epigraphT(z, j*rn.gr, rn.groupSOC(j), aux, g[j*d:(j+1)*d])
	}
	ugr := blas64.General{Rows: ng, Cols: d, Stride: d, Data: rn.ug.Data}
	blas64.Gemm(blas.NoTrans, blas.NoTrans, 1, rn.zs, rn.x, 0, ugr)
	for j := 0; j < ng; j++ {
		s := rn.groupSOC(j) + rn.gs - (d + 1)
		uj, ur := g[j*d:(j+1)*d], ugr.Data[j*d:(j+1)*d]
		for l := range uj {
			uj[l] += ur[l] + z[s+1+l]
		}
	}
	for k := 0; k < n; k++ {
		gg := rn.ggr.Data[k*d : (k+1)*d]
		lr := rn.lossRow(k)
		z0, z1 := z[lr], z[lr+1]
		g[rn.slack(k)] += z0 + z1
		a := rn.la[2*k]*z0 + rn.la[2*k+1]*z1
		for l, xv := range rn.x.Data[k*rn.x.Stride : k*rn.x.Stride+d] {
			gg[l] = a * xv
		}
		if rn.na == 0 {
			continue
		}
		aux := g[rn.sampleAux(k) : rn.sampleAux(k)+rn.na]
		e := rn.le[2*k]*z0 + rn.le[2*k+1]*z1
		for q := range aux {
			aux[q] -= e
		}
		rn.epigraphT(z, rn.sampleRow(k), rn.sampleSOC(k), aux, gg)
	}
	blas64.Gemm(blas.Trans, blas.NoTrans, 1, rn.dn, rn.ggr, 0, rn.pm)
	for i := 0; i < np; i++ {
		vi, wi, pg := g[i*d:(i+1)*d], g[(np+i)*d:(np+i+1)*d], rn.pm.Data[i*d:(i+1)*d]
		for l := range pg {
			vi[l] += pg[l]
			wi[l] -= pg[l]
		}
	}
	for i, v := range g {
		out[i] = beta*out[i] - alpha*v
	}
}

// epigraphT adds the transposed dual-norm epigraph rows of one block, with
// multipliers z at its orthant rows from base (ℓ∞ and ℓ₁ sets) or its cone
// from soc (ℓ₂ set), to the block's auxiliaries aux and core (u_j or g_k).
func (rn *robustNet) epigraphT(z []float64, base, soc int, aux, core []float64) {
	if rn.epiOrth {
		for l := 0; l < rn.f; l++ {
			zm, zp := z[base+2*l], z[base+2*l+1]
			aux[rn.auxIndex(l)] += zm + zp
			core[l] += zp - zm
		}
		return
	}
	aux[0] += z[soc]
	for l := 0; l < rn.f; l++ {
		core[l] += z[soc+1+l]
	}
}

// epigraphValues sets the values of one block's dual-norm epigraph rows
// (see epigraphT) at its auxiliaries aux and core.
func (rn *robustNet) epigraphValues(val []float64, base, soc int, aux, core []float64) {
	if rn.epiOrth {
		for l := 0; l < rn.f; l++ {
			a := aux[rn.auxIndex(l)]
			val[base+2*l], val[base+2*l+1] = a-core[l], a+core[l]
		}
		return
	}
	val[soc] = aux[0]
	copy(val[soc+1:soc+1+rn.f], core[:rn.f])
}

func (rn *robustNet) mulQ(out, x []float64) {
	clear(out)
	for k, q := range rn.qdiag {
		out[rn.slack(k)] = q * x[rn.slack(k)]
	}
}

// addLower adds v to entry (a, b) of the lower triangle of the row-major
// s×s matrix m.
func addLower(m []float64, s, a, b int, v float64) {
	if a < b {
		a, b = b, a
	}
	m[a*s+b] += v
}

// addSOC adds the block W⁻² = β⁻²(2ŵŵᵀ − J), ŵ = Jw̄, of the second-order
// cone at rows [start, start+q) to the local matrix m (s×s, lower), whose
// coordinate of cone entry c is at(c).
func (rn *robustNet) addSOC(m []float64, s, start, q int, at func(c int) int) {
	w := rn.w
	j := rn.socIndex(start)
	wb := w.wbar[start-rn.orth : start-rn.orth+q]
	ib := 1 / (w.beta[j] * w.beta[j])
	for a := 0; a < q; a++ {
		wa := wb[a]
		if a > 0 {
			wa = -wa
		}
		for b := 0; b <= a; b++ {
			wbv := wb[b]
			if b > 0 {
				wbv = -wbv
			}
			v := 2 * wa * wbv
			if a == b {
				if a == 0 {
					v--
				} else {
					v++
				}
			}
			addLower(m, s, at(a), at(b), ib*v)
		}
	}
}

// socIndex returns the index among the second-order cones of the cone that
// starts at row start.
func (rn *robustNet) socIndex(start int) int {
	if start >= rn.smSOC {
		return rn.ng*(1+b2i(rn.epiSOC)) + (start-rn.smSOC)/(rn.f+1)
	}
	j := (start - rn.orth) / rn.gs
	idx := j * (1 + b2i(rn.epiSOC))
	if rn.epiSOC && start-rn.groupSOC(j) > 0 {
		idx++
	}
	return idx
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// orthWeight returns the weight 1/d_r² of orthant row r in W⁻².
func (rn *robustNet) orthWeight(r int) float64 { return 1 / square(rn.w.d[r]) }

// addEpigraph adds the orthant epigraph rows a − e_l, a + e_l (l < f) at
// rows base… to the local matrix m (s×s): e_l at coordinate l, the
// auxiliaries at aux….
func (rn *robustNet) addEpigraph(m []float64, s, base, aux int) {
	for l := 0; l < rn.f; l++ {
		wm, wp := rn.orthWeight(base+2*l), rn.orthWeight(base+2*l+1)
		a := aux + rn.auxIndex(l)
		m[l*s+l] += wm + wp
		addLower(m, s, a, a, wm+wp)
		addLower(m, s, a, l, wp-wm)
	}
}

// addInfEpigraph adds the ℓ∞ set's epigraph rows a_l − y_l, a_l + y_l
// (l < f; weights α_l, γ_l) of block b at rows base… to the local matrix m
// (s×s) in which a block's auxiliaries a enter only through their sum
// ρ = 1ᵀa, at coordinate aux. With δ = α + γ, e = (γ − α)/δ and
// σ = Σ 1/δ_l, minimizing ½Σ_l[α_l(a_l − y_l)² + γ_l(a_l + y_l)²] − r_aᵀa
// over a with 1ᵀa = ρ leaves
//
//	½Σ_l φ_l y_l² + ½(ρ + eᵀy − ρ_a)²/σ + Σ_l r_al e_l y_l + const,
//
// φ = 4αγ/δ, ρ_a = Σ r_al/δ_l, attained at a_l = (λ + r_al − (γ_l − α_l)y_l)/δ_l,
// λ = (ρ + eᵀy − ρ_a)/σ: the f auxiliaries leave the normal equations in
// closed form, every quantity without cancellation (solve applies the
// right-hand side terms and recovers a).
func (rn *robustNet) addInfEpigraph(m []float64, s, base, aux, b int) {
	f := rn.f
	dl, el := rn.epiD[b*f:(b+1)*f], rn.epiE[b*f:(b+1)*f]
	var sigma float64
	for l := 0; l < f; l++ {
		wm, wp := rn.orthWeight(base+2*l), rn.orthWeight(base+2*l+1)
		dl[l] = wm + wp
		el[l] = (wp - wm) / dl[l]
		sigma += 1 / dl[l]
		m[l*s+l] += 4 * wm * wp / dl[l]
	}
	rn.epiS[b] = sigma
	is := 1 / sigma
	row := m[aux*s : aux*s+f]
	for l := 0; l < f; l++ {
		row[l] += is * el[l]
		yr := m[l*s : l*s+l+1]
		for c := 0; c <= l; c++ {
			yr[c] += is * el[l] * el[c]
		}
	}
	m[aux*s+aux] += is
}

// infRHS applies the ℓ∞ elimination of addInfEpigraph to the right-hand
// side of block b: it stores ρ_a, returns the reduced right-hand side of ρ,
// ρ_a/σ, and adds (ρ_a/σ)e − r_a∘e to the core's ry.
func (rn *robustNet) infRHS(b int, ra, ry []float64) float64 {
	f := rn.f
	dl, el := rn.epiD[b*f:(b+1)*f], rn.epiE[b*f:(b+1)*f]
	var rho float64
	for l, r := range ra[:f] {
		rho += r / dl[l]
	}
	rn.epiR[b] = rho
	c := rho / rn.epiS[b]
	for l, r := range ra[:f] {
		ry[l] += (c - r) * el[l]
	}
	return c
}

// infRecover overwrites the right-hand side ra of block b by the
// auxiliaries a_l = (λ + r_al − (γ_l − α_l)y_l)/δ_l, λ = (ρ + eᵀy − ρ_a)/σ.
func (rn *robustNet) infRecover(b int, ra, y []float64, rho float64) {
	f := rn.f
	dl, el := rn.epiD[b*f:(b+1)*f], rn.epiE[b*f:(b+1)*f]
	lam := rho - rn.epiR[b]
	for l := 0; l < f; l++ {
		lam += el[l] * y[l]
	}
	lam /= rn.epiS[b]
	for l := 0; l < f; l++ {
		ra[l] = (lam + ra[l] - el[l]*dl[l]*y[l]) / dl[l]
	}
}

// eliminate factors the local matrix m (s×s, lower, the first d coordinates
// kept): L = chol(m_LL), m_Ld ← L⁻¹m_Ld, m_dd ← m_dd − m_Ldᵀm_Ld.
func (rn *robustNet) eliminate(m []float64, s int) error {
	d, nl := rn.d, s-rn.d
	if !localLAPACK.Dpotrf(blas.Lower, nl, m[d*s+d:], s) {
		return errors.New("ipm: a local block of the robust normal matrix is not positive definite")
	}
	localBLAS.Dtrsm(blas.Left, blas.Lower, blas.NoTrans, blas.NonUnit, nl, d, 1, m[d*s+d:], s, m[d*s:], s)
	localBLAS.Dsyrk(blas.Lower, blas.Trans, d, nl, -1, m[d*s:], s, 1, m, s)
	return nil
}

// factorGroup forms group j's local matrix on (u_j, t_j, ρ_j), eliminates
// (t_j, ρ_j) and factors B_j in place in rn.grpN.
func (rn *robustNet) factorGroup(j int, wk *robustWork) error {
	n, d, mg := rn.n, rn.d, rn.mg
	m := rn.grpN[j*mg*mg : (j+1)*mg*mg]
	clear(m)
	i := j % rn.np
	r := rn.groupRow(j)
	var sw float64
	q := wk.b1[:d]
	clear(q)
	xw := wk.xw // nil when factor has formed the Gram matrix (gramProduct)
	for k := 0; k < n; k++ {
		om := rn.orthWeight(r + k)
		xk := rn.x.Data[k*rn.x.Stride : k*rn.x.Stride+d]
		floats.AddScaled(q, om*rn.sgn[i*n+k], xk)
		sw += om
		if xw != nil {
			floats.ScaleTo(xw[k*d:(k+1)*d], math.Sqrt(om), xk)
		}
	}
	if xw != nil {
		localBLAS.Dsyrk(blas.Lower, blas.Trans, d, n, 1, xw, d, 1, m, mg)
	} else {
		gram := rn.ggram.Data[j*rn.ggram.Stride:]
		for a := 0; a < d; a++ {
			copy(m[a*mg:a*mg+a+1], gram[packedIndex(a, 0):packedIndex(a, a)+1])
		}
	}
	aux := d + 1
	if rn.na > 0 {
		e := rn.eps
		for a := 0; a < rn.nla; a++ {
			row := m[(aux+a)*mg : (aux+a)*mg+d]
			for l := range row {
				row[l] -= e * q[l]
			}
			for b := 0; b <= a; b++ {
				m[(aux+a)*mg+aux+b] += e * e * sw
			}
		}
		if rn.nla < rn.na {
			rn.addInfEpigraph(m, mg, j*rn.gr, aux, j)
		} else if rn.epiOrth {
			rn.addEpigraph(m, mg, j*rn.gr, aux)
		} else {
			rn.addSOC(m, mg, rn.groupSOC(j), rn.f+1, func(c int) int {
				if c == 0 {
					return aux
				}
				return c - 1
			})
		}
	}
	rn.addSOC(m, mg, rn.groupSOC(j)+rn.gs-(d+1), d+1, func(c int) int {
		if c == 0 {
			return d
		}
		return c - 1
	})
	if err := rn.eliminate(m, mg); err != nil {
		return err
	}
	b := rn.bfull[j*d*d : (j+1)*d*d]
	for a := 0; a < d; a++ {
		for c := 0; c <= a; c++ {
			b[a*d+c], b[c*d+a] = m[a*mg+c], m[a*mg+c]
		}
	}
	return nil
}

// factorSample forms sample k's local matrix on (g_k, slack_k, r_k),
// eliminates (slack_k, r_k), stores the eliminated rows in rn.smpN and M_k
// in rn.mstack.
func (rn *robustNet) factorSample(k int, wk *robustWork) error {
	d, ms := rn.d, rn.ms
	m := wk.n[:ms*ms]
	clear(m)
	lr := rn.lossRow(k)
	w0, w1 := rn.orthWeight(lr), rn.orthWeight(lr+1)
	a0, a1, e0, e1 := rn.la[2*k], rn.la[2*k+1], rn.le[2*k], rn.le[2*k+1]
	xk := rn.x.Data[k*rn.x.Stride : k*rn.x.Stride+d]
	localBLAS.Dsyr(blas.Lower, d, w0*a0*a0+w1*a1*a1, xk, 1, m, ms)
	ga, ge := w0*a0+w1*a1, -(w0*a0*e0 + w1*a1*e1)
	srow := m[d*ms : d*ms+d]
	for l, v := range xk {
		srow[l] += ga * v
	}
	m[d*ms+d] += w0 + w1 + rn.qdiag[k]
	aux := d + 1
	if rn.na > 0 {
		se, ee := -(w0*e0 + w1*e1), w0*e0*e0+w1*e1*e1
		for a := 0; a < rn.nla; a++ {
			row := m[(aux+a)*ms : (aux+a)*ms+d]
			for l, v := range xk {
				row[l] += ge * v
			}
			m[(aux+a)*ms+d] += se
			for b := 0; b <= a; b++ {
				m[(aux+a)*ms+aux+b] += ee
			}
		}
		if rn.nla < rn.na {
			rn.addInfEpigraph(m, ms, rn.sampleRow(k), aux, rn.ng+k)
		} else if rn.epiOrth {
			rn.addEpigraph(m, ms, rn.sampleRow(k), aux)
		} else {
			rn.addSOC(m, ms, rn.sampleSOC(k), rn.f+1, func(c int) int {
				if c == 0 {
					return aux
				}
				return c - 1
			})
		}
	}
	if err := rn.eliminate(m, ms); err != nil {
		return err
	}
	copy(rn.smpN[k*rn.nl*ms:(k+1)*rn.nl*ms], m[d*ms:])
	mk := rn.mstack.Data[k*rn.mstack.Stride:]
	for a := 0; a < d; a++ {
		copy(mk[packedIndex(a, 0):packedIndex(a, a)+1], m[a*ms:a*ms+a+1])
	}
	return nil
}

// each runs body(i) for i < count, in contiguous ranges, one per worker.
func (rn *robustNet) each(count int, body func(i int)) {
	nw := len(rn.work)
	var wg sync.WaitGroup
	for t := 0; t < nw; t++ {
		lo, hi := t*count/nw, (t+1)*count/nw
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := lo; i < hi; i++ {
				body(i)
			}
		}()
	}
	wg.Wait()
}

// parallel runs body(worker, i) for i < count on the workers.
func (rn *robustNet) parallel(count int, body func(wk *robustWork, i int) error) error {
	errs := make([]error, len(rn.work))
	var wg sync.WaitGroup
	nw := len(rn.work)
	for t := 0; t < nw; t++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := t; i < count; i += nw {
				if err := body(&rn.work[t], i); err != nil {
					errs[t] = err
					return
				}
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

func (rn *robustNet) factor(w *ntScaling) error {
	rn.w = w
	d, np := rn.d, rn.np
	// The groups' Gram matrices Xᵀdiag(ω_j)X, in one product when they
	// are large (see gramProduct).
	if rn.ggram.Data != nil {
		for j := 0; j < rn.ng; j++ {
			r := rn.groupRow(j)
			row := rn.gw.Data[j*rn.gw.Stride : j*rn.gw.Stride+rn.n]
			for k := range row {
				row[k] = rn.orthWeight(r + k)
			}
		}
		blas64.Gemm(blas.NoTrans, blas.NoTrans, 1, rn.gw, rn.xxt, 0, rn.ggram)
	}
	if err := rn.parallel(rn.ng, func(wk *robustWork, j int) error { return rn.factorGroup(j, wk) }); err != nil {
		return err
	}
	if err := rn.parallel(rn.n, func(wk *robustWork, k int) error { return rn.factorSample(k, wk) }); err != nil {
		return err
	}
	blas64.Gemm(blas.NoTrans, blas.NoTrans, 1, rn.dpairs, rn.mstack, 0, rn.cpairs)
	sm := rn.sm
	for q, pr := range rn.pairs {
		src := rn.cpairs.Data[q*rn.cpairs.Stride:]
		for a := 0; a < d; a++ {
			row := sm.Data[(pr[0]*d+a)*sm.Stride+pr[1]*d : (pr[0]*d+a)*sm.Stride+pr[1]*d+d]
			copy(row[:a+1], src[packedIndex(a, 0):packedIndex(a, a)+1])
			for b := a + 1; b < d; b++ {
				row[b] = src[packedIndex(b, a)]
			}
		}
	}
	// Λ_i = (B_vi⁻¹ + B_wi⁻¹)⁻¹ = B_vi Σ_i⁻¹ B_wi, Σ_i = B_vi + B_wi, on
	// the diagonal blocks (see solve).
	err := rn.parallel(np, func(wk *robustWork, i int) error {
		bv, bw := rn.bfull[i*d*d:(i+1)*d*d], rn.bfull[(np+i)*d*d:(np+i+1)*d*d]
		sig := rn.sig[i*d*d : (i+1)*d*d]
		for a := range sig {
			sig[a] = bv[a] + bw[a]
		}
		if !localLAPACK.Dpotrf(blas.Lower, d, sig, d) {
			return errors.New("ipm: a pattern block of the robust normal matrix is not positive definite")
		}
		y := wk.b1
		copy(y, bw)
		localLAPACK.Dpotrs(blas.Lower, d, d, sig, d, y, d)
		lam := blas64.General{Rows: d, Cols: d, Stride: d, Data: rn.lam[i*d*d : (i+1)*d*d]}
		localBLAS.Dgemm(blas.NoTrans, blas.NoTrans, d, d, d, 1, bv, d, y, d, 0, lam.Data, d)
		for a := 0; a < d; a++ {
			for b := 0; b <= a; b++ {
				v := 0.5 * (lam.Data[a*d+b] + lam.Data[b*d+a])
				lam.Data[a*d+b], lam.Data[b*d+a] = v, v
				sm.Data[(i*d+a)*sm.Stride+i*d+b] += v
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	var ok bool
	if rn.smTri, ok = cholesky(rn.sm, rn.smf); !ok {
		return errors.New("ipm: the reduced normal matrix of the robust program is not positive definite")
	}
	return nil
}

// solveSigma overwrites x (d) by Σ_i⁻¹x.
func (rn *robustNet) solveSigma(i int, x []float64) {
	d := rn.d
	localLAPACK.Dpotrs(blas.Lower, d, 1, rn.sig[i*d*d:], d, x, 1)
}

func (rn *robustNet) solve(x, y, z []float64) error {
	n, d, np, ng, nl := rn.n, rn.d, rn.np, rn.ng, rn.nl
	mg, ms := rn.mg, rn.ms
	tz := append(rn.val[:0], z...) // rn.val as scratch until values(x) below
	rn.w.unscale2(tz)
	rn.mulGT(x, tz, 1, 1)
	// Local right-hand sides: y_L = L⁻¹r_L, and r_u −= W_Lᵀy_L.
	local := func(j int) []float64 { return rn.rl[j*nl : (j+1)*nl] }
	// gather sets the local right-hand side of block b (core ry, slack or
	// t at x[t], auxiliaries at x[aux…]).
	gather := func(dst []float64, t, aux, b int, ry []float64) {
		dst[0] = x[t]
		if rn.nla < rn.na {
			dst[1] = rn.infRHS(b, x[aux:aux+rn.na], ry)
			return
		}
		copy(dst[1:], x[aux:aux+rn.na])
	}
	rn.each(ng, func(j int) {
		yl := local(j)
		gather(yl, rn.nu+j, rn.groupAux(j), j, x[j*d:(j+1)*d])
		m := rn.grpN[j*mg*mg:]
		localBLAS.Dtrsv(blas.Lower, blas.NoTrans, blas.NonUnit, nl, m[d*mg+d:], mg, yl, 1)
		localBLAS.Dgemv(blas.Trans, nl, d, -1, m[d*mg:], mg, yl, 1, 1, x[j*d:(j+1)*d], 1)
	})
	rn.each(n, func(k int) {
		yl := local(ng + k)
		gg := rn.ggr.Data[k*d : (k+1)*d]
		clear(gg)
		gather(yl, rn.slack(k), rn.sampleAux(k), ng+k, gg)
		// gg holds the ℓ∞ terms to add to g_k's right-hand side; the
		// subtraction below through A_kᵀ wants their negative.
		for l := range gg {
			gg[l] = -gg[l]
		}
		m := rn.smpN[k*nl*ms:]
		localBLAS.Dtrsv(blas.Lower, blas.NoTrans, blas.NonUnit, nl, m[d:], ms, yl, 1)
		localBLAS.Dgemv(blas.Trans, nl, d, 1, m, ms, yl, 1, 1, gg, 1)
	})
	blas64.Gemm(blas.Trans, blas.NoTrans, 1, rn.dn, rn.ggr, 0, rn.pm)
	for i := 0; i < np; i++ {
		vi, wi, pg := x[i*d:(i+1)*d], x[(np+i)*d:(np+i+1)*d], rn.pm.Data[i*d:(i+1)*d]
		for l := range pg {
			vi[l] -= pg[l]
			wi[l] += pg[l]
		}
	}
	// H_u u = r_u pattern by pattern in q = v + w, p = v − w, with
	// Σ = B_v + B_w, Δ = B_v − B_w: a = Σ⁻¹r_v, b = Σ⁻¹r_w,
	// (Λ + C)p = B_w a − B_v b, q = 2(a + b) − Σ⁻¹Δp, v = (q + p)/2,
	// w = (q − p)/2.
	for i := 0; i < np; i++ {
		rv, rw := x[i*d:(i+1)*d], x[(np+i)*d:(np+i+1)*d]
		rn.solveSigma(i, rv)
		rn.solveSigma(i, rw)
		pp := rn.pp[i*d : (i+1)*d]
		localBLAS.Dgemv(blas.NoTrans, d, d, 1, rn.bfull[(np+i)*d*d:], d, rv, 1, 0, pp, 1)
		localBLAS.Dgemv(blas.NoTrans, d, d, -1, rn.bfull[i*d*d:], d, rw, 1, 1, pp, 1)
	}
	lapack64.Potrs(rn.smTri, blas64.General{Rows: d * np, Cols: 1, Stride: 1, Data: rn.pp})
	for i := 0; i < np; i++ {
		a, b := x[i*d:(i+1)*d], x[(np+i)*d:(np+i+1)*d]
		pv, dq := rn.pp[i*d:(i+1)*d], rn.pr[i*d:(i+1)*d]
		localBLAS.Dgemv(blas.NoTrans, d, d, 1, rn.bfull[i*d*d:], d, pv, 1, 0, dq, 1)
		localBLAS.Dgemv(blas.NoTrans, d, d, -1, rn.bfull[(np+i)*d*d:], d, pv, 1, 1, dq, 1)
		rn.solveSigma(i, dq)
		for l := range pv {
			q := 2*(a[l]+b[l]) - dq[l]
			a[l], b[l] = 0.5*(q+pv[l]), 0.5*(q-pv[l])
		}
	}
	// Local unknowns: x_L = L⁻ᵀ(y_L − W_L u_loc).
	rn.each(ng, func(j int) {
		yl := local(j)
		m := rn.grpN[j*mg*mg:]
		localBLAS.Dgemv(blas.NoTrans, nl, d, -1, m[d*mg:], mg, x[j*d:(j+1)*d], 1, 1, yl, 1)
		localBLAS.Dtrsv(blas.Lower, blas.Trans, blas.NonUnit, nl, m[d*mg+d:], mg, yl, 1)
		x[rn.nu+j] = yl[0]
		if rn.nla < rn.na {
			rn.infRecover(j, x[rn.groupAux(j):rn.groupAux(j)+rn.na], x[j*d:(j+1)*d], yl[1])
			return
		}
		copy(x[rn.groupAux(j):rn.groupAux(j)+rn.na], yl[1:])
	})
	for i := 0; i < np; i++ {
		pv, vi, wi := rn.pm.Data[i*d:(i+1)*d], x[i*d:(i+1)*d], x[(np+i)*d:(np+i+1)*d]
		for l := range pv {
			pv[l] = vi[l] - wi[l]
		}
	}
	blas64.Gemm(blas.NoTrans, blas.NoTrans, 1, rn.dn, rn.pm, 0, rn.gk)
	rn.each(n, func(k int) {
		yl := local(ng + k)
		m := rn.smpN[k*nl*ms:]
		localBLAS.Dgemv(blas.NoTrans, nl, d, -1, m, ms, rn.gk.Data[k*d:(k+1)*d], 1, 1, yl, 1)
		localBLAS.Dtrsv(blas.Lower, blas.Trans, blas.NonUnit, nl, m[d:], ms, yl, 1)
		x[rn.slack(k)] = yl[0]
		if rn.nla < rn.na {
			rn.infRecover(ng+k, x[rn.sampleAux(k):rn.sampleAux(k)+rn.na], rn.gk.Data[k*d:(k+1)*d], yl[1])
			return
		}
		copy(x[rn.sampleAux(k):rn.sampleAux(k)+rn.na], yl[1:])
	})
	// z ← W⁻²(Gx − z).
	rn.values(x)
	for i := range z {
		z[i] = -rn.val[i] - z[i]
	}
	rn.w.unscale2(z)
	return nil
}

// dual returns the certificate's hint from the multipliers z (see
// robustCone's dual in the tests for the dense layout it mirrors).
func (rn *robustNet) dual(z []float64) *certify.Hint {
	n, d := rn.n, rn.d
	a := mat.NewDense(rn.ng, n, nil)
	for j := 0; j < rn.ng; j++ {
		copy(a.RawRowView(j), z[rn.groupRow(j):rn.groupRow(j)+n])
	}
	h := &certify.Hint{Mu: make([]float64, n), Alpha: a}
	if rn.p.Loss == solvers.SquaredLoss {
		h.Lambda = make([]float64, n)
	}
	for k := 0; k < n; k++ {
		r := rn.lossRow(k)
		switch {
		case rn.hinge:
			h.Mu[k] = -rn.p.Y[k] * z[r+1]
		case rn.smooth:
			h.Mu[k] = rn.p.Loss.MarginScale(rn.p.Y[k]) * z[r]
		default:
			h.Mu[k], h.Lambda[k] = z[r]-z[r+1], z[r]+z[r+1]
		}
	}
	if rn.na > 0 {
		h.Slopes = mat.NewDense(n, d, nil)
		for k := 0; k < n; k++ {
			row := h.Slopes.RawRowView(k)
			for l := 0; l < rn.f; l++ {
				if rn.epiSOC {
					row[l] = -z[rn.sampleSOC(k)+1+l]
				} else {
					b := rn.sampleRow(k)
					row[l] = z[b+2*l] - z[b+2*l+1]
				}
			}
		}
	}
	return h
}
