package backprop

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/convexnn/convexnn/solvers"
	"gonum.org/v1/gonum/mat"
)

// attackNet returns a network with N(0, 1) weights.
func attackNet(rng *rand.Rand, d0, m int, bias bool) *solvers.Network {
	d := d0
	if bias {
		d++
	}
	u := mat.NewDense(d, m, nil)
	for i := 0; i < d; i++ {
		for j := 0; j < m; j++ {
			u.Set(i, j, rng.NormFloat64())
		}
	}
	a := make([]float64, m)
	for j := range a {
		a[j] = rng.NormFloat64()
	}
	return &solvers.Network{U: u, Alpha: a, Bias: bias}
}

// attackData returns n points uniform in [lo, hi]^d0 and labels ±1 (0/1
// for BCE) from the sign of net's output, with every fifth label flipped.
func attackData(rng *rand.Rand, net *solvers.Network, n, d0 int, lo, hi float64, l solvers.Loss) (*mat.Dense, []float64) {
	x := mat.NewDense(n, d0, nil)
	y := make([]float64, n)
	for k := 0; k < n; k++ {
		for i := 0; i < d0; i++ {
			x.Set(k, i, lo+(hi-lo)*rng.Float64())
		}
		f, _ := net.Eval(x.RawRowView(k))
		y[k] = 1
		if (f < 0) != (k%5 == 0) {
			y[k] = -1
		}
		if l == solvers.BCELoss {
			y[k] = (y[k] + 1) / 2
		}
	}
	return x, y
}

// exactBoxMax returns the largest attackScore of net over the box
// [x − ε, x + ε]² (d0 = 2). The score is |·| or a monotone function of a
// piecewise-linear function whose pieces are cut by the lines
// u_jᵀ[p; 1] = 0, so its maximum is attained at a vertex of a piece: a box
// vertex, a line–edge intersection or a line–line intersection in the box.
func exactBoxMax(t *testing.T, net *solvers.Network, x []float64, y, eps float64, l solvers.Loss) float64 {
	t.Helper()
	lo := []float64{x[0] - eps, x[1] - eps}
	hi := []float64{x[0] + eps, x[1] + eps}
	in := func(p []float64) bool {
		const tol = 1e-12
		return p[0] >= lo[0]-tol && p[0] <= hi[0]+tol && p[1] >= lo[1]-tol && p[1] <= hi[1]+tol
	}
	best := math.Inf(-1)
	try := func(p0, p1 float64) {
		p := []float64{math.Min(math.Max(p0, lo[0]), hi[0]), math.Min(math.Max(p1, lo[1]), hi[1])}
		if !in([]float64{p0, p1}) {
			return
		}
		f, err := net.Eval(p)
		if err != nil {
			t.Fatal(err)
		}
		best = math.Max(best, attackScore(l, f, y))
	}
	for _, p0 := range []float64{lo[0], hi[0]} {
		for _, p1 := range []float64{lo[1], hi[1]} {
			try(p0, p1)
		}
	}
	m := net.Width()
	line := func(j int) (a, b, c float64) { // a p0 + b p1 + c = 0
		return net.U.At(0, j), net.U.At(1, j), net.U.At(2, j)
	}
	for j := 0; j < m; j++ {
		a, b, c := line(j)
		for _, p0 := range []float64{lo[0], hi[0]} {
			if b != 0 {
				try(p0, -(a*p0+c)/b)
			}
		}
		for _, p1 := range []float64{lo[1], hi[1]} {
			if a != 0 {
				try(-(b*p1+c)/a, p1)
			}
		}
		for i := 0; i < j; i++ {
			a2, b2, c2 := line(i)
			if det := a*b2 - a2*b; det != 0 {
				try((-c*b2+c2*b)/det, (-a*c2+a2*c)/det)
			}
		}
	}
	return best
}

func attackScoreAt(t *testing.T, net *solvers.Network, p []float64, y float64, l solvers.Loss) float64 {
	t.Helper()
	f, err := net.Eval(p)
	if err != nil {
		t.Fatal(err)
	}
	return attackScore(l, f, y)
}

// TestAttackMatchesBruteForce2D compares FGSM and PGD (l_inf) with the exact
// maximum of the loss over each box and with a 51×51 grid of it.
func TestAttackMatchesBruteForce2D(t *testing.T) {
	const (
		n    = 60
		eps  = 0.1
		grid = 51
	)
	for _, l := range []solvers.Loss{solvers.HingeLoss, solvers.LogisticLoss, solvers.BCELoss, solvers.SquaredLoss} {
		rng := rand.New(rand.NewPCG(11, uint64(l)))
		net := attackNet(rng, 2, 8, true)
		x, y := attackData(rng, net, n, 2, -1, 1, l)
		fg, err := FGSM(net, x, y, AttackOptions{Eps: eps, Loss: l})
		if err != nil {
			t.Fatal(err)
		}
		pg, err := PGD(net, x, y, AttackOptions{Eps: eps, Loss: l})
		if err != nil {
			t.Fatal(err)
		}
		pb, err := PGD(net, x, y, AttackOptions{Eps: eps, Loss: l, KeepBest: true})
		if err != nil {
			t.Fatal(err)
		}
		var linear, pgHit, pbHit, vertexMax, pgVertex int
		var worstGap float64
		for k := 0; k < n; k++ {
			xk := x.RawRowView(k)
			star := exactBoxMax(t, net, xk, y[k], eps, l)
			// The grid never beats the exact maximum.
			var gmax float64 = math.Inf(-1)
			for a := 0; a < grid; a++ {
				for b := 0; b < grid; b++ {
					p := []float64{xk[0] - eps + 2*eps*float64(a)/(grid-1), xk[1] - eps + 2*eps*float64(b)/(grid-1)}
					gmax = math.Max(gmax, attackScoreAt(t, net, p, y[k], l))
				}
			}
			if gmax > star+1e-12 {
				t.Fatalf("%v: point %d: grid max %v above the exact max %v", l, k, gmax, star)
			}
			var vmax float64 = math.Inf(-1)
			for _, s0 := range []float64{-eps, eps} {
				for _, s1 := range []float64{-eps, eps} {
					vmax = math.Max(vmax, attackScoreAt(t, net, []float64{xk[0] + s0, xk[1] + s1}, y[k], l))
				}
			}
			for _, adv := range []*mat.Dense{fg, pg, pb} {
				for i := 0; i < 2; i++ {
					if d := math.Abs(adv.At(k, i) - xk[i]); d > eps*(1+1e-12) {
						t.Fatalf("%v: point %d: |δ_%d| = %v > ε", l, k, i, d)
					}
				}
			}
			sf := attackScoreAt(t, net, fg.RawRowView(k), y[k], l)
			sp := attackScoreAt(t, net, pg.RawRowView(k), y[k], l)
			sb := attackScoreAt(t, net, pb.RawRowView(k), y[k], l)
			clean := attackScoreAt(t, net, xk, y[k], l)
			if sp > star+1e-9 || sb > star+1e-9 || sf > star+1e-9 {
				t.Fatalf("%v: point %d: attack score above the exact max %v: FGSM %v, PGD %v, best %v", l, k, star, sf, sp, sb)
			}
			if sb < clean {
				t.Fatalf("%v: point %d: KeepBest PGD score %v below the clean %v", l, k, sb, clean)
			}
			// No ReLU kink in the box: the (leaky-)loss is linear in it, so
			// its maximum is at the vertex x + ε sgn(∇), which FGSM and PGD
			// must find exactly (not for the squared loss, |linear − y|).
			kinkFree := true
			for j := 0; j < net.Width(); j++ {
				zc := net.U.At(0, j)*xk[0] + net.U.At(1, j)*xk[1] + net.U.At(2, j)
				if math.Abs(zc) <= eps*(math.Abs(net.U.At(0, j))+math.Abs(net.U.At(1, j)))+1e-9 {
					kinkFree = false
				}
			}
			if kinkFree {
				// For the squared loss ŷ − y is linear in the box and both
				// ends of |ŷ − y| are local maxima; the ascent from x goes
				// to the end on the side of sgn(ŷ(x) − y).
				want := star
				if l == solvers.SquaredLoss {
					f0, _ := net.Eval(xk)
					sg := math.Copysign(1, f0-y[k])
					want = math.Inf(-1)
					for _, s0 := range []float64{-eps, eps} {
						for _, s1 := range []float64{-eps, eps} {
							f, _ := net.Eval([]float64{xk[0] + s0, xk[1] + s1})
							want = math.Max(want, sg*(f-y[k]))
						}
					}
				}
				linear++
				if math.Abs(sf-want) > 1e-12*(1+math.Abs(want)) || math.Abs(sp-want) > 1e-12*(1+math.Abs(want)) {
					t.Errorf("%v: point %d has no kink in its box, yet FGSM %v, PGD %v differ from the max %v", l, k, sf, sp, want)
				}
			}
			if sp >= star-1e-6 {
				pgHit++
			}
			if sb >= star-1e-6 {
				pbHit++
			}
			if vmax >= star-1e-12 {
				vertexMax++
				if sp >= vmax-1e-6 {
					pgVertex++
				}
			}
			worstGap = math.Max(worstGap, star-sp)
		}
		t.Logf("%v: PGD within 1e-6 of the exact box max at %d/%d points (KeepBest %d/%d), largest shortfall %.3g; max at a vertex for %d points, PGD reaches it at %d; FGSM and PGD exact at all %d kink-free boxes",
			l, pgHit, n, pbHit, n, worstGap, vertexMax, pgVertex, linear)
		// The squared loss has two competing local maxima per linear piece
		// (see above), so sign ascent misses the global one more often.
		need := 8 * n / 10
		if l == solvers.SquaredLoss {
			need = n / 2
		}
		if pgHit < need || pbHit < pgHit {
			t.Errorf("%v: PGD found the box maximum at only %d/%d points (KeepBest %d)", l, pgHit, n, pbHit)
		}
		if linear < n/5 {
			t.Errorf("%v: only %d kink-free boxes: the test lost its power", l, linear)
		}
	}
}

// TestAttackGradient checks the input gradient the attacks step along
// against central differences of each point's loss.
func TestAttackGradient(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 5))
	const n, d0, m = 12, 4, 7
	for _, l := range []solvers.Loss{solvers.SquaredLoss, solvers.HingeLoss, solvers.LogisticLoss, solvers.BCELoss} {
		for _, bias := range []bool{false, true} {
			net := attackNet(rng, d0, m, bias)
			x, y := attackData(rng, net, n, d0, -1, 1, l)
			p, err := AttackOptions{Eps: 1, Loss: l}.resolve(true)
			if err != nil {
				t.Fatal(err)
			}
			v := netView(net)
			a := newAttacker(n, d0, m, false)
			a.run(&v, x.RawMatrix(), y, &p, mat.NewDense(n, d0, nil).RawMatrix())
			// The leaky hinge at ζ → 0 is 1 − yŷ; the others are ℓ itself.
			loss := func(p []float64, yk float64) float64 {
				f, _ := net.Eval(p)
				switch l {
				case solvers.SquaredLoss:
					return (f - yk) * (f - yk) / 2
				case solvers.HingeLoss:
					return 1 - yk*f
				}
				return solvers.Softplus(l.MarginScale(yk) * f)
			}
			const h = 1e-6
			for k := 0; k < n; k++ {
				xk := x.RawRowView(k)
				p := append([]float64(nil), xk...)
				for i := 0; i < d0; i++ {
					p[i] = xk[i] + h
					fp := loss(p, y[k])
					p[i] = xk[i] - h
					fm := loss(p, y[k])
					p[i] = xk[i]
					fd := (fp - fm) / (2 * h)
					if g := a.g[k*d0+i]; math.Abs(g-fd) > 1e-6*(1+math.Abs(fd)) {
						t.Errorf("%v bias=%v: ∂ℓ_%d/∂x_%d = %v, finite difference %v", l, bias, k, i, g, fd)
					}
				}
			}
		}
	}
}

// TestAttackRespectsBounds checks ‖δ‖ ≤ ε (inf and 2) and the clip box on
// 6-feature data in [0, 1], and that the l2 attack uses its budget.
func TestAttackRespectsBounds(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 9))
	const n, d0 = 200, 6
	net := attackNet(rng, d0, 10, true)
	x, y := attackData(rng, net, n, d0, 0, 1, solvers.LogisticLoss)
	for _, norm := range []solvers.Norm{solvers.LInf, solvers.L2} {
		for _, clip := range []*[2]float64{nil, {0, 1}} {
			for _, method := range []string{"fgsm", "pgd"} {
				o := AttackOptions{Norm: norm, Eps: 0.3, Loss: solvers.LogisticLoss, Clip: clip}
				f := PGD
				if method == "fgsm" {
					f = FGSM
				}
				adv, err := f(net, x, y, o)
				if err != nil {
					t.Fatal(err)
				}
				full := 0
				for k := 0; k < n; k++ {
					var dn float64
					for i := 0; i < d0; i++ {
						v, e := adv.At(k, i), adv.At(k, i)-x.At(k, i)
						if norm == "inf" {
							dn = math.Max(dn, math.Abs(e))
						} else {
							dn += e * e
						}
						if clip != nil && (v < 0 || v > 1) {
							t.Fatalf("%s %s: x̃[%d,%d] = %v outside the clip box", method, norm, k, i, v)
						}
					}
					if norm == "2" {
						dn = math.Sqrt(dn)
					}
					if dn > o.Eps*(1+1e-12) {
						t.Fatalf("%s %s clip=%v: ‖δ_%d‖ = %v > ε = %v", method, norm, clip != nil, k, dn, o.Eps)
					}
					if dn >= o.Eps*(1-1e-9) {
						full++
					}
				}
				t.Logf("%s %s clip=%v: %d/%d perturbations on the sphere ‖δ‖ = ε", method, norm, clip != nil, full, n)
				if clip == nil && full < n*9/10 {
					t.Errorf("%s %s: only %d/%d perturbations use the budget ε", method, norm, full, n)
				}
			}
		}
	}
	// ε = 0 returns x.
	adv, err := PGD(net, x, y, AttackOptions{Eps: 0, Loss: solvers.LogisticLoss})
	if err != nil || !mat.Equal(adv, x) {
		t.Fatalf("ε = 0 changed x (err %v)", err)
	}
}

// TestAttackLowersAccuracy checks clean ≥ FGSM, PGD accuracy on random
// networks for the classification losses, and that the vectorized forward
// pass matches Network.Predict.
func TestAttackLowersAccuracy(t *testing.T) {
	for _, l := range []solvers.Loss{solvers.HingeLoss, solvers.LogisticLoss, solvers.BCELoss} {
		var drop float64
		for seed := uint64(0); seed < 3; seed++ {
			rng := rand.New(rand.NewPCG(seed, 77))
			net := attackNet(rng, 5, 12, seed%2 == 0)
			x, y := attackData(rng, net, 300, 5, -1, 1, l)
			pred, err := net.Predict(x)
			if err != nil {
				t.Fatal(err)
			}
			v := netView(net)
			yhat := make([]float64, 300)
			v.forward(x.RawMatrix(), make([]float64, 300*12), yhat)
			for k := range yhat {
				if math.Abs(yhat[k]-pred[k]) > 1e-12*(1+math.Abs(pred[k])) {
					t.Fatalf("forward ŷ_%d = %v, Predict %v", k, yhat[k], pred[k])
				}
			}
			acc := map[string]float64{}
			for _, c := range []struct {
				name   string
				method Adversary
				best   bool
			}{{"clean", NoAdversary, false}, {"fgsm", FGSMAdversary, false}, {"pgd", PGDAdversary, false}, {"fgsm-best", FGSMAdversary, true}, {"pgd-best", PGDAdversary, true}} {
				a, err := RobustAccuracy(net, x, y, c.method, AttackOptions{Eps: 0.2, Loss: l, KeepBest: c.best})
				if err != nil {
					t.Fatal(err)
				}
				acc[c.name] = a
			}
			t.Logf("%v seed %d: accuracy clean %.3f, FGSM %.3f, PGD %.3f (KeepBest FGSM %.3f, PGD %.3f)", l, seed, acc["clean"], acc["fgsm"], acc["pgd"], acc["fgsm-best"], acc["pgd-best"])
			if acc["fgsm"] > acc["clean"] || acc["pgd"] > acc["clean"] || acc["fgsm-best"] > acc["clean"] || acc["pgd-best"] > acc["clean"] {
				t.Errorf("%v seed %d: an attack raised the accuracy: %v", l, seed, acc)
			}
			if acc["pgd-best"] > acc["pgd"] {
				t.Errorf("%v seed %d: KeepBest weakened PGD: %v", l, seed, acc)
			}
			drop += acc["clean"] - acc["pgd"]
		}
		if drop < 0.1 {
			t.Errorf("%v: PGD lowered the accuracy by only %.3f over the three networks", l, drop)
		}
	}
}

func TestAttackBadInput(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	net := attackNet(rng, 3, 4, true)
	x, y := attackData(rng, net, 10, 3, 0, 1, solvers.HingeLoss)
	nanX := mat.DenseCopyOf(x)
	nanX.Set(2, 1, math.NaN())
	nanNet := attackNet(rng, 3, 4, true)
	nanNet.Alpha[1] = math.Inf(1)
	bce := append([]float64(nil), y...)
	ok := AttackOptions{Eps: 0.1, Loss: solvers.HingeLoss}
	with := func(f func(*AttackOptions)) AttackOptions { o := ok; f(&o); return o }
	cases := []struct {
		net  *solvers.Network
		x    *mat.Dense
		y    []float64
		o    AttackOptions
		want string
	}{
		{net, x, y, with(func(o *AttackOptions) { o.Eps = -0.1 }), "radius ε = -0.1"},
		{net, x, y, with(func(o *AttackOptions) { o.Eps = math.NaN() }), "radius ε = NaN"},
		{net, x, y, with(func(o *AttackOptions) { o.Norm = "1" }), `unknown norm "1"`},
		{net, x, y, with(func(o *AttackOptions) { o.Steps = -1 }), "Steps = -1"},
		{net, x, y, with(func(o *AttackOptions) { o.StepSize = -1 }), "step size γ_p = -1"},
		{net, x, y, with(func(o *AttackOptions) { o.Loss = solvers.Loss(9) }), "unknown loss"},
		{net, x, y, with(func(o *AttackOptions) { o.Clip = &[2]float64{1, 0} }), "clip box [1, 0]"},
		{net, x, y, with(func(o *AttackOptions) { o.Clip = &[2]float64{0.2, 1} }), "outside the clip box [0.2, 1]"},
		{net, x, bce, with(func(o *AttackOptions) { o.Loss = solvers.BCELoss }), "needs labels 0 or 1"},
		{net, nanX, y, ok, "x[2,1] is NaN"},
		{net, x, y[:9], ok, "10 rows but y has 9 labels"},
		{net, mat.NewDense(10, 2, nil), y, ok, "data has 2 features, network expects 3"},
		{nanNet, x, y, ok, "α[1] is +Inf"},
		{nil, x, y, ok, "no hidden layer"},
		{net, nil, y, ok, "no data"},
	}
	for _, c := range cases {
		for _, f := range []func(*solvers.Network, *mat.Dense, []float64, AttackOptions) (*mat.Dense, error){FGSM, PGD} {
			if c.want == "Steps = -1" || c.want == "step size γ_p = -1" {
				f = PGD // FGSM ignores them
			}
			_, err := f(c.net, c.x, c.y, c.o)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("%q: error %v", c.want, err)
			}
		}
		if _, err := RobustAccuracy(c.net, c.x, c.y, "pgd", c.o); err == nil {
			t.Errorf("%q: RobustAccuracy accepted it", c.want)
		}
	}
	if _, err := RobustAccuracy(net, x, y, "cw", ok); err == nil || !strings.Contains(err.Error(), `unknown attack method "cw"`) {
		t.Errorf("unknown method: %v", err)
	}
	if _, err := RobustAccuracy(net, nanX, y, NoAdversary, ok); err == nil {
		t.Error("clean accuracy accepted NaN data")
	}
	if _, err := FGSM(net, x, y, with(func(o *AttackOptions) { o.Steps = -1 })); err != nil {
		t.Errorf("FGSM should ignore Steps: %v", err)
	}
}

// TestAttackStridedX attacks a submatrix view (row stride > columns) and
// compares with the same data copied.
func TestAttackStridedX(t *testing.T) {
	rng := rand.New(rand.NewPCG(8, 8))
	net := attackNet(rng, 3, 5, true)
	wide, y := attackData(rng, attackNet(rng, 5, 5, true), 30, 5, -1, 1, solvers.HingeLoss)
	view := wide.Slice(0, 30, 1, 4).(*mat.Dense)
	for _, f := range []func(*solvers.Network, *mat.Dense, []float64, AttackOptions) (*mat.Dense, error){FGSM, PGD} {
		a, err := f(net, view, y, AttackOptions{Eps: 0.1, Loss: solvers.HingeLoss})
		if err != nil {
			t.Fatal(err)
		}
		b, err := f(net, mat.DenseCopyOf(view), y, AttackOptions{Eps: 0.1, Loss: solvers.HingeLoss})
		if err != nil {
			t.Fatal(err)
		}
		if !mat.Equal(a, b) {
			t.Fatal("the attack of a strided view differs from that of its copy")
		}
	}
}
