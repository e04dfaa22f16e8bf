package admm

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/convexnn/convexnn/solvers"
	"gonum.org/v1/gonum/mat"
)

// benchShapes are (n, d, P): the paper's d = 100 MNIST of fig. ADMMCom
// with few and many patterns, and the full MNIST 2 vs 8 of table ADMMMnist
// (n = 11809, d = 784, P_s = 24).
var benchShapes = [][3]int{{1000, 100, 8}, {11809, 100, 8}, {1000, 100, 50}, {11809, 784, 24}}

// benchProgram returns a deterministic squared-loss program: Gaussian X,
// patterns of Gaussian directions, labels sign(x_1 x_2).
func benchProgram(n, d, np int) *solvers.Program {
	rng := rand.New(rand.NewPCG(uint64(n*1000+d), uint64(np)))
	xd := make([]float64, n*d)
	for q := range xd {
		xd[q] = rng.NormFloat64()
	}
	x := mat.NewDense(n, d, xd)
	y := make([]float64, n)
	for k := range y {
		y[k] = math.Copysign(1, xd[k*d]*xd[k*d+1])
	}
	a := mat.NewDense(d, np, nil)
	for i := 0; i < d; i++ {
		for j := 0; j < np; j++ {
			a.Set(i, j, rng.NormFloat64())
		}
	}
	var z mat.Dense
	z.Mul(x, a)
	p := &solvers.Program{X: x, Y: y, Loss: solvers.SquaredLoss, Beta: 1e-3}
	for j := 0; j < np; j++ {
		pat := make(solvers.Pattern, n)
		for k := range pat {
			pat[k] = z.At(k, j) >= 0
		}
		p.D = append(p.D, pat)
	}
	return p
}

// benchName names a shape and the route NewClosedForm chooses for it.
func benchName(p *solvers.Program) string {
	n, d, np := p.Dims()
	counts := make([]int, n)
	for _, pat := range p.D {
		for k, on := range pat {
			if on {
				counts[k]++
			}
		}
	}
	w, dr := routeCosts(n, d, np, counts)
	return fmt.Sprintf("n=%d,d=%d,P=%d,%s", n, d, np, chooseRoute(w, dr, cgCost(n, d, np), 1000))
}

// benchCache keeps one program and one set-up solver per shape, so the
// iteration benchmark does not factor again (the largest shape takes about
// a minute).
var benchCache struct {
	sync.Mutex
	prog map[[3]int]*solvers.Program
	sol  map[[3]int]*ClosedForm
}

func benchProgramCached(sh [3]int) *solvers.Program {
	benchCache.Lock()
	defer benchCache.Unlock()
	if benchCache.prog == nil {
		benchCache.prog = map[[3]int]*solvers.Program{}
		benchCache.sol = map[[3]int]*ClosedForm{}
	}
	p := benchCache.prog[sh]
	if p == nil {
		p = benchProgram(sh[0], sh[1], sh[2])
		benchCache.prog[sh] = p
	}
	return p
}

func benchSolver(b *testing.B, sh [3]int) *ClosedForm {
	p := benchProgramCached(sh)
	benchCache.Lock()
	defer benchCache.Unlock()
	if a := benchCache.sol[sh]; a != nil {
		return a
	}
	a, err := NewClosedForm(p, Options{}, nil)
	if err != nil {
		b.Fatal(err)
	}
	benchCache.sol[sh] = a
	return a
}

// BenchmarkADMMSetup times NewClosedForm (the factorization of the u-update
// system, route chosen automatically) and reports the GFLOP/s of its
// heaviest part, the Cholesky factorization of S (woodbury) or of the
// dP×dP matrix (direct), and of the Gram products before it.
func BenchmarkADMMSetup(b *testing.B) {
	for _, sh := range benchShapes {
		p := benchProgramCached(sh)
		b.Run(benchName(p), func(b *testing.B) {
			var a *ClosedForm
			var chol, gram, gramF, cholF float64
			for i := 0; i < b.N; i++ {
				a = nil
				var err error
				a, err = NewClosedForm(p, Options{}, nil)
				if err != nil {
					b.Fatal(err)
				}
				chol += a.sys.prof.cholSec
				gram += a.sys.prof.gramSec
				gramF, cholF = a.sys.prof.gramFlops, a.sys.prof.cholFlops
			}
			b.ReportMetric(cholF*float64(b.N)/chol/1e9, "chol-GFLOP/s")
			b.ReportMetric(gramF*float64(b.N)/gram/1e9, "gram-GFLOP/s")
			benchCache.Lock()
			benchCache.sol[sh] = a
			benchCache.Unlock()
		})
	}
}

// BenchmarkADMMIteration times Step and reports the GFLOP/s of its
// heaviest part, the products with X (G u, Gᵀ[s; ν], X v: 16ndP flops), and
// of the u-solve.
func BenchmarkADMMIteration(b *testing.B) {
	for _, sh := range benchShapes {
		b.Run(benchName(benchProgramCached(sh)), func(b *testing.B) {
			a := benchSolver(b, sh)
			n, d, np := float64(sh[0]), float64(sh[1]), float64(sh[2])
			a.prof = iterProfile{}
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				a.Step()
			}
			b.StopTimer()
			solveF := 2*np*d*d + 2*d*np*d*np // direct
			if a.Route() == "woodbury" {
				solveF = 6*np*d*d + 4*n*d*np + 2*n*n
			}
			prodF := 16 * n * d * np
			bn := float64(b.N)
			b.ReportMetric(prodF*bn/a.prof.prodSec/1e9, "prod-GFLOP/s")
			b.ReportMetric(solveF*bn/a.prof.solveSec/1e9, "solve-GFLOP/s")
			b.ReportMetric((prodF+solveF)*bn/b.Elapsed().Seconds()/1e9, "GFLOP/s")
		})
	}
}
