package general_test

import (
	"context"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/convexnn/convexnn/solvers/general"
	"github.com/convexnn/convexnn/solvers/ipm"
	"gonum.org/v1/gonum/mat"
)

// randomCone returns a random feasible, bounded cone QP: orthant rows and
// second-order cones, Q positive definite, h = Gx₀ + s₀ with s₀ inside K.
func randomCone(rng *rand.Rand, nx, orth int, soc []int) *ipm.ConeQP {
	k := ipm.Cone{Orthant: orth, SOC: soc}
	m := k.Dim()
	g := mat.NewDense(m, nx, nil)
	for r := 0; r < m; r++ {
		for j := 0; j < nx; j++ {
			if rng.Float64() < 0.5 {
				g.Set(r, j, rng.NormFloat64())
			}
		}
	}
	x0 := make([]float64, nx)
	for j := range x0 {
		x0[j] = rng.NormFloat64()
	}
	h := make([]float64, m)
	gx := mat.NewVecDense(m, nil)
	gx.MulVec(g, mat.NewVecDense(nx, x0))
	for r := 0; r < orth; r++ {
		h[r] = gx.AtVec(r) + rng.Float64()
	}
	off := orth
	for _, q := range soc {
		h[off] = gx.AtVec(off) + float64(q) + 1 // s₀ = (q+1, e) with ‖e‖ < q+1
		for r := off + 1; r < off+q; r++ {
			h[r] = gx.AtVec(r) + rng.Float64()
		}
		off += q
	}
	a := mat.NewDense(nx, nx, nil)
	for j := range nx * nx {
		a.RawMatrix().Data[j] = rng.NormFloat64()
	}
	q := mat.NewSymDense(nx, nil)
	q.SymOuterK(0.1, a)
	c := make([]float64, nx)
	for j := range c {
		c[j] = 3 * rng.NormFloat64()
	}
	return &ipm.ConeQP{Q: q, C: c, G: g, H: h, K: k}
}

// ConeADMM reaches the interior-point optimum of random cone QPs, its
// multipliers stay in the dual cone, and loss rows with a quadratic φ
// match the same program with φ moved into Q and c.
func TestConeADMMAgainstInteriorPoint(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for trial := 0; trial < 12; trial++ {
		nx := 3 + rng.IntN(6)
		qp := randomCone(rng, nx, 2+rng.IntN(8), []int{2 + rng.IntN(3), 1 + rng.IntN(4)})
		ref, err := ipm.SolveConeQP(context.Background(), qp, ipm.Options{Tol: 1e-12})
		if err != nil || ref.Status != ipm.Optimal {
			t.Fatalf("trial %d: interior point: %v %v", trial, ref.Status, err)
		}
		a, err := general.NewConeADMM(&general.ConeProgram{Q: qp.Q, C: qp.C, G: qp.G, H: qp.H, K: qp.K}, general.ConeOptions{}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := a.Run(context.Background(), 20000, 0, nil); err != nil {
			t.Fatal(err)
		}
		x := a.State.X
		var obj float64
		qx := mat.NewVecDense(nx, nil)
		qx.MulVec(qp.Q, mat.NewVecDense(nx, x))
		for j := range x {
			obj += 0.5*x[j]*qx.AtVec(j) + qp.C[j]*x[j]
		}
		if d := math.Abs(obj - ref.PrimalObjective); d > 1e-6*math.Max(1, math.Abs(ref.PrimalObjective)) {
			t.Errorf("trial %d: ADMM objective %.10g, interior point %.10g", trial, obj, ref.PrimalObjective)
		}
		z := a.Z()
		for r := 0; r < qp.K.Orthant; r++ {
			if z[r] < 0 {
				t.Errorf("trial %d: multiplier %d = %g < 0", trial, r, z[r])
			}
		}
		off := qp.K.Orthant
		for _, q := range qp.K.SOC {
			var nu float64
			for _, v := range z[off+1 : off+q] {
				nu += v * v
			}
			if math.Sqrt(nu) > z[off]*(1+1e-12)+1e-15 {
				t.Errorf("trial %d: multipliers outside the second-order cone", trial)
			}
			off += q
		}
		// ½‖s‖² on rows s = h₂ − G₂x as loss rows, against Q + G₂ᵀG₂ and
		// c − G₂ᵀh₂.
		m2 := 3
		g2 := mat.NewDense(m2, nx, nil)
		h2 := make([]float64, m2)
		for r := 0; r < m2; r++ {
			h2[r] = rng.NormFloat64()
			for j := 0; j < nx; j++ {
				g2.Set(r, j, rng.NormFloat64())
			}
		}
		mk := qp.K.Dim()
		gAll := mat.NewDense(mk+m2, nx, nil)
		gAll.Slice(0, mk, 0, nx).(*mat.Dense).Copy(qp.G)
		gAll.Slice(mk, mk+m2, 0, nx).(*mat.Dense).Copy(g2)
		lp := &general.ConeProgram{Q: qp.Q, C: qp.C, G: gAll, H: append(append([]float64(nil), qp.H...), h2...), K: qp.K,
			LossRows: m2, Prox: func(_ int, v, rho float64) float64 { return rho * v / (1 + rho) }}
		la, err := general.NewConeADMM(lp, general.ConeOptions{}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := la.Run(context.Background(), 20000, 0, nil); err != nil {
			t.Fatal(err)
		}
		q2 := mat.NewSymDense(nx, nil)
		q2.SymOuterK(1, g2.T())
		q2.AddSym(q2, qp.Q)
		c2 := make([]float64, nx)
		gh := mat.NewVecDense(nx, nil)
		gh.MulVec(g2.T(), mat.NewVecDense(m2, h2))
		for j := range c2 {
			c2[j] = qp.C[j] - gh.AtVec(j)
		}
		ref2, err := ipm.SolveConeQP(context.Background(), &ipm.ConeQP{Q: q2, C: c2, G: qp.G, H: qp.H, K: qp.K}, ipm.Options{Tol: 1e-12})
		if err != nil || ref2.Status != ipm.Optimal {
			t.Fatalf("trial %d: interior point with the loss: %v %v", trial, ref2.Status, err)
		}
		var dx float64
		for j := range ref2.X {
			dx = math.Max(dx, math.Abs(ref2.X[j]-la.State.X[j]))
		}
		if dx > 1e-5 {
			t.Errorf("trial %d: loss rows: ADMM's x differs from the interior point's by %g", trial, dx)
		}
	}
}

func TestConeADMMRefusals(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	qp := randomCone(rng, 4, 3, []int{3})
	ok := general.ConeProgram{Q: qp.Q, C: qp.C, G: qp.G, H: qp.H, K: qp.K}
	for _, tc := range []struct {
		mod  func(p *general.ConeProgram, o *general.ConeOptions)
		want string
	}{
		{func(p *general.ConeProgram, o *general.ConeOptions) { p.C = p.C[1:] }, "c of"},
		{func(p *general.ConeProgram, o *general.ConeOptions) { p.K.Orthant++ }, "rows"},
		{func(p *general.ConeProgram, o *general.ConeOptions) { p.K.Orthant--; p.LossRows = 1 }, "Prox"},
		{func(p *general.ConeProgram, o *general.ConeOptions) { p.H = append([]float64{math.NaN()}, p.H[1:]...) }, "non-finite"},
		{func(p *general.ConeProgram, o *general.ConeOptions) { o.Relax = 2 }, "relaxation"},
		{func(p *general.ConeProgram, o *general.ConeOptions) {
			g := mat.DenseCopyOf(p.G)
			g.Set(1, 2, math.Inf(1))
			p.G = g
		}, "row 1 of G"},
		{func(p *general.ConeProgram, o *general.ConeOptions) { o.Rho = -1 }, "ρ"},
		{func(p *general.ConeProgram, o *general.ConeOptions) {
			p.K = ipm.Cone{Orthant: p.K.Orthant + p.K.SOC[0], SOC: []int{0}}
		}, "dimension 0 < 1"},
		{func(p *general.ConeProgram, o *general.ConeOptions) {
			p.K = ipm.Cone{Orthant: -1, SOC: []int{p.K.Orthant + 1, p.K.SOC[0]}}
		}, "orthant dimension -1"},
	} {
		p, o := ok, general.ConeOptions{}
		tc.mod(&p, &o)
		if _, err := general.NewConeADMM(&p, o, nil); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("error %v, want one about %q", err, tc.want)
		}
	}
	// A saved state with a non-finite entry.
	m, n := ok.G.Dims()
	st := &general.ConeState{Rho: 0.1, X: make([]float64, n), S: make([]float64, m), Z: make([]float64, m)}
	if _, err := general.NewConeADMM(&ok, general.ConeOptions{}, st); err != nil {
		t.Fatalf("a zero state: %v", err)
	}
	st.Z[2] = math.NaN()
	if _, err := general.NewConeADMM(&ok, general.ConeOptions{}, st); err == nil || !strings.Contains(err.Error(), "z[2] is NaN") {
		t.Errorf("state with z[2] = NaN: %v", err)
	}
}
