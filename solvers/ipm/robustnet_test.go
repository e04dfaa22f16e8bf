package ipm

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"testing"

	"github.com/convexnn/convexnn/solvers"
	"github.com/convexnn/convexnn/solvers/internal/testprog"
	"gonum.org/v1/gonum/mat"
)

// robustCases are the programs of the robustNet tests: every instance of
// testprog.RobustInstances with its own loss and with a smooth one, for
// every perturbation set and for ε = 0.
func robustCases(t *testing.T) (ps []*solvers.Program, perts []solvers.Perturbation, names []string) {
	for _, c := range testprog.RobustInstances {
		for _, loss := range []solvers.Loss{c.Loss, solvers.LogisticLoss, solvers.BCELoss} {
			p := testprog.Random(t, c)
			p.Loss = loss
			for i, y := range p.Y {
				switch loss {
				case solvers.LogisticLoss:
					p.Y[i] = math.Copysign(1, y)
				case solvers.BCELoss:
					p.Y[i] = math.Max(0, math.Copysign(1, y))
				}
			}
			for _, pert := range []solvers.Perturbation{{}, {Eps: 0.1}, {Eps: 0.1, Norm: solvers.L2}, {Eps: 0.1, Norm: solvers.L1}} {
				ps, perts = append(ps, p), append(perts, pert)
				names = append(names, fmt.Sprintf("%v %v %v", c, loss, pert))
			}
		}
	}
	return ps, perts, names
}

// denseOf returns robustNet's program as a dense ConeQP: G and the cone from
// the written-out rows of robustCone, c, h and Q from rn (a smooth loss's
// model lives there).
func denseOf(t *testing.T, rn *robustNet, rb *robustCone) *ConeQP {
	t.Helper()
	g, h, k := rb.assemble()
	if rows, _ := g.Dims(); rows != rn.k.Dim() || rb.nx != rn.nx || k.Orthant != rn.k.Orthant || fmt.Sprint(k.SOC) != fmt.Sprint(rn.k.SOC) {
		t.Fatalf("layout: dense %d rows, %d variables, cone %v; structured %d, %d, %v", rows, rb.nx, k, rn.k.Dim(), rn.nx, rn.k)
	}
	if !rn.smooth {
		for i := range h {
			if h[i] != rn.h[i] {
				t.Fatalf("h[%d]: dense %v, structured %v", i, h[i], rn.h[i])
			}
		}
		qp := rb.coneQP()
		for i := range qp.C {
			if qp.C[i] != rn.c[i] {
				t.Fatalf("c[%d]: dense %v, structured %v", i, qp.C[i], rn.c[i])
			}
		}
	}
	q := mat.NewSymDense(rn.nx, nil)
	for kk, v := range rn.qdiag {
		q.SetSym(rn.slack(kk), rn.slack(kk), v)
	}
	return &ConeQP{Q: q, C: rn.c, G: g, H: rn.h, K: rn.k}
}

// TestRobustNetMatchesDense checks robustNet, the structured operators and
// KKT solver of SolveRobust, against the dense program written out row by
// row: the layout, c and h, the products with G, Gᵀ and Q, and the KKT
// solution at random Nesterov–Todd scalings, for every loss, norm and ε = 0.
func TestRobustNetMatchesDense(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	ps, perts, names := robustCases(t)
	for c, p := range ps {
		rn, rb := newRobustNet(p, perts[c]), newRobustCone(p, perts[c])
		if rn.smooth {
			a0 := make([]float64, rn.n)
			for k := range a0 {
				a0[k] = rng.NormFloat64()
			}
			rn.setSmoothModel(a0, make([]float64, rn.n), make([]float64, rn.n))
		}
		qp := denseOf(t, rn, rb)
		m, nx := rn.k.Dim(), rn.nx
		randv := func(n int) []float64 {
			v := make([]float64, n)
			for i := range v {
				v[i] = rng.NormFloat64()
			}
			return v
		}
		dq := newDenseQP(qp)
		x, z := randv(nx), randv(m)
		for _, op := range []struct {
			name     string
			in, out  []float64
			got, ref func(out, in []float64)
		}{
			{"G", x, randv(m), func(o, i []float64) { rn.mulG(o, i, 0.7, -1.3) }, func(o, i []float64) { dq.mulG(o, i, 0.7, -1.3) }},
			{"Gᵀ", z, randv(nx), func(o, i []float64) { rn.mulGT(o, i, 0.7, -1.3) }, func(o, i []float64) { dq.mulGT(o, i, 0.7, -1.3) }},
			{"Q", x, randv(nx), rn.mulQ, dq.mulQ},
		} {
			got, ref := append([]float64(nil), op.out...), append([]float64(nil), op.out...)
			op.got(got, op.in)
			op.ref(ref, op.in)
			if e := testprog.RelDiff(got, ref); e > 1e-12 {
				t.Errorf("%s: product with %s differs by %.2g", names[c], op.name, e)
			}
		}
		// A random interior pair (s, z) and its scaling.
		s, zz := make([]float64, m), make([]float64, m)
		for i := 0; i < rn.k.Orthant; i++ {
			s[i], zz[i] = math.Exp(2*rng.NormFloat64()), math.Exp(2*rng.NormFloat64())
		}
		off := rn.k.Orthant
		for _, q := range rn.k.SOC {
			for _, v := range [][]float64{s[off : off+q], zz[off : off+q]} {
				var nrm float64
				for i := 1; i < q; i++ {
					v[i] = rng.NormFloat64()
					nrm += v[i] * v[i]
				}
				v[0] = math.Sqrt(nrm) + math.Exp(rng.NormFloat64())
			}
			off += q
		}
		w := newNTScaling(rn.k)
		if err := w.compute(s, zz); err != nil {
			t.Fatal(err)
		}
		if err := dq.factor(w); err != nil {
			t.Fatalf("%s: dense: %v", names[c], err)
		}
		bx, bz := randv(nx), randv(m)
		rx, rz := append([]float64(nil), bx...), append([]float64(nil), bz...)
		if err := dq.solve(rx, nil, rz); err != nil {
			t.Fatal(err)
		}
		// The groups' Gram matrices group by group and in one product.
		for _, prod := range []bool{false, true} {
			rn.setGramProduct(prod)
			if err := rn.factor(w); err != nil {
				t.Fatalf("%s: %v", names[c], err)
			}
			gx, gz := append([]float64(nil), bx...), append([]float64(nil), bz...)
			if err := rn.solve(gx, nil, gz); err != nil {
				t.Fatal(err)
			}
			if e := math.Max(testprog.RelDiff(gx, rx), testprog.RelDiff(gz, rz)); e > 1e-6 {
				t.Errorf("%s, Gram product %v: KKT solutions differ by %.2g", names[c], prod, e)
			}
		}
	}
}

// TestRobustMemoryEstimateCovers checks that RobustMemoryEstimate is at
// least what building the structured program allocates, on a program of a
// few hundred points.
func TestRobustMemoryEstimateCovers(t *testing.T) {
	p := testprog.Random(t, testprog.Instance{N: 300, D: 12, P: 10, Loss: solvers.HingeLoss, Bias: true, Beta: 0.01, Seed: 3})
	for _, pert := range []solvers.Perturbation{{Eps: 0.1}, {Eps: 0.1, Norm: solvers.L2}} {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		rn := newRobustNet(p, pert)
		runtime.ReadMemStats(&after)
		need, _ := RobustMemoryEstimate(p, pert)
		if got := int64(after.TotalAlloc - before.TotalAlloc); got > need {
			t.Errorf("%v: building allocated %d bytes, the estimate is %d", pert, got, need)
		}
		runtime.KeepAlive(rn)
	}
}

// TestSolveToGap checks the one rule of solving to a certified gap on a
// standard and a robust program: the certified gap meets the target, the
// bounds enclose the returned objective, and a memory refusal leaves NaN
// bounds and the refusal as the error.
func TestSolveToGap(t *testing.T) {
	p := testprog.RandomSampled(t, testprog.RobustInstances[0])
	for _, pert := range []solvers.Perturbation{{}, {Eps: 0.05}} {
		res, b, err := SolveToGap(context.Background(), p, pert, 1e-7, Options{}, nil)
		if err != nil || res == nil {
			t.Fatalf("%v: %v", pert, err)
		}
		if !(b.Gap <= 1e-7) || !(b.Lower <= res.Objective+1e-12) || !(res.Objective <= b.Upper+1e-9*math.Max(1, b.Upper)) {
			t.Errorf("%v: bounds %v ≤ %v ≤ %v, gap %v", pert, b.Lower, res.Objective, b.Upper, b.Gap)
		}
	}
	_, b, err := SolveToGap(context.Background(), p, solvers.Perturbation{Eps: 0.05}, 1e-6, Options{MaxMemory: 1 << 10}, nil)
	var me *MemoryError
	if !errors.As(err, &me) || !math.IsNaN(b.Gap) || !math.IsNaN(b.Lower) {
		t.Errorf("refused: bounds %+v, error %v", b, err)
	}
	for _, bad := range []float64{0, -1, math.NaN(), 2} {
		if _, b, err := SolveToGap(context.Background(), p, solvers.Perturbation{}, bad, Options{}, nil); err == nil || !math.IsNaN(b.Gap) {
			t.Errorf("gap %v: no error (bounds %+v)", bad, b)
		}
	}
	if _, err := Solve(context.Background(), p, Options{Gap: math.NaN()}); err == nil {
		t.Error("Options.Gap NaN: no error")
	}
}

// TestGapContinues: with Options.Gap the method tightens its tolerance in
// place, so reaching a tight certified gap from a loose tolerance costs
// fewer iterations than a loose solve followed by a tight one from scratch
// (the rule it replaced), and the certificate is the returned solution's.
func TestGapContinues(t *testing.T) {
	for i, c := range testprog.RobustInstances[:3] {
		p := testprog.RandomSampled(t, c)
		for _, pert := range []solvers.Perturbation{{}, {Eps: 0.05}} {
			ctx := context.Background()
			res, err := SolveProgram(ctx, p, pert, Options{Gap: 1e-9, Tol: 1e-4})
			if err != nil || res.Bound == nil {
				t.Fatalf("instance %d, %v: %v", i, pert, err)
			}
			if !(res.Bound.Gap <= 1e-9) || res.Bound.Objective != res.Objective {
				t.Errorf("instance %d, %v: certified gap %g, bound's objective %v, result's %v", i, pert, res.Bound.Gap, res.Bound.Objective, res.Objective)
			}
			loose, err := SolveProgram(ctx, p, pert, Options{Tol: 1e-4})
			if err != nil {
				t.Fatal(err)
			}
			tight, err := SolveProgram(ctx, p, pert, Options{Tol: 1e-9})
			if err != nil {
				t.Fatal(err)
			}
			if res.Iterations >= loose.Iterations+tight.Iterations {
				t.Errorf("instance %d, %v: %d iterations with Gap, %d + %d solving twice", i, pert, res.Iterations, loose.Iterations, tight.Iterations)
			}
		}
	}
}
