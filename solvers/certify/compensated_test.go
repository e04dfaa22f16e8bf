package certify

import (
	"math"
	"math/big"
	"math/rand/v2"
	"testing"

	"github.com/convexnn/convexnn/solvers"
	"github.com/convexnn/convexnn/solvers/internal/testprog"
	"gonum.org/v1/gonum/mat"
)

// TestCompensatedResidual: group residuals whose terms cancel to about
// 10⁻¹² of their size (μ_k ≈ σ_j α_jk on the pattern's rows, as near a
// solver's optimum) are summed to within Dot2's bound of the exact value
// (big.Float), where plain summation misses it; and compensatedS bounds the
// exact s_j from above, tightly.
func TestCompensatedResidual(t *testing.T) {
	p := testprog.Random(t, testprog.Instance{N: 400, D: 5, P: 3, Loss: solvers.SquaredLoss, Bias: true, Beta: 1e-3, Seed: 11})
	c, err := New(p, solvers.Perturbation{})
	if err != nil {
		t.Fatal(err)
	}
	n, np, d := c.n, c.np, c.d
	rng := rand.New(rand.NewPCG(1, 2))
	mu := make([]float64, n)
	alpha := mat.NewDense(n, 2*np, nil)
	for k := 0; k < n; k++ {
		mu[k] = 1e4 * rng.NormFloat64()
	}
	for j := 0; j < 2*np; j++ {
		sigma := 1.0
		if j >= np {
			sigma = -1
		}
		for k := 0; k < n; k++ {
			if c.dm.At(k, j%np) == 1 && sigma*mu[k] > 0 {
				alpha.Set(k, j, sigma*mu[k]*(1+1e-12*rng.NormFloat64()))
			}
		}
	}
	const u = 0x1p-53
	g2 := gammaN(2 * n)
	g2 *= g2
	hi, lo := make([]float64, d), make([]float64, d)
	beatsPlain := false
	exactS := make([]float64, 2*np)
	mag := mat.NewDense(d, 2*np, nil)
	for j := 0; j < 2*np; j++ {
		sigma := 1.0
		if j >= np {
			sigma = -1
		}
		c.compensatedResidual(hi, lo, mu, alpha, j)
		var norm2 big.Float
		norm2.SetPrec(4096)
		for a := 0; a < d; a++ {
			exact := new(big.Float).SetPrec(4096)
			var plain, m float64
			for k := 0; k < n; k++ {
				x := p.X.At(k, a)
				for _, v := range []float64{sigma * c.dm.At(k, j%np) * mu[k], -c.sgn.At(k, j%np) * alpha.At(k, j)} {
					term := new(big.Float).SetPrec(4096).SetFloat64(x)
					term.Mul(term, new(big.Float).SetPrec(4096).SetFloat64(v))
					exact.Add(exact, term)
					plain += x * v
					m += math.Abs(x * v)
				}
			}
			mag.Set(a, j, m)
			e, _ := exact.Float64()
			got := hi[a] + lo[a]
			bound := u*math.Abs(e) + g2*m*(1+1e-12)
			if err := math.Abs(got - e); err > bound {
				t.Errorf("group %d, coordinate %d: compensated %v, exact %v: error %.3g > bound %.3g", j, a, got, e, err, bound)
			}
			if math.Abs(plain-e) > 10*bound {
				beatsPlain = true
			}
			sq := new(big.Float).SetPrec(4096).Mul(exact, exact)
			norm2.Add(&norm2, sq)
		}
		v, _ := norm2.Float64()
		exactS[j] = math.Sqrt(v)
	}
	if !beatsPlain {
		t.Error("plain summation met the compensated bound everywhere: the test does not exercise cancellation")
	}
	s := make([]float64, 2*np)
	for j := range s {
		s[j] = math.Inf(1)
	}
	redo := make([]bool, 2*np)
	for j := range redo {
		redo[j] = true
	}
	magNorm := make([]float64, 2*np)
	for j := range magNorm {
		magNorm[j] = mat.Norm(mag.ColView(j), 2)
	}
	c.compensatedS(s, mu, magNorm, alpha, redo)
	for j := range s {
		if !(s[j] >= exactS[j]) || s[j] > exactS[j]*(1+1e-13)+1e-20 {
			t.Errorf("group %d: bound %.17g, exact s_j %.17g", j, s[j], exactS[j])
		}
	}
}
