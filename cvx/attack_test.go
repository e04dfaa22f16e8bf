package cvx

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/convexnn/convexnn/data"
	"github.com/convexnn/convexnn/solvers"
	"gonum.org/v1/gonum/mat"
)

// trainedNet trains a small GD-std network on the disk.
func trainedNet(t *testing.T) (*Network, *mat.Dense, []float64) {
	t.Helper()
	t.Setenv("CONVEXNN_STATE_DIR", t.TempDir())
	p := diskProblem(t, 80, 2)
	_, net := trained(t, "net", p, Backprop{Width: 16, LearningRate: 1e-2, Seed: 1}, 60)
	x, y := p.Data()
	return net, x, y
}

func TestAttackAccuracyAndAttacked(t *testing.T) {
	net, x, y := trainedNet(t)
	clean, err := Accuracy(net, x, y)
	if err != nil {
		t.Fatal(err)
	}
	n, d := x.Dims()
	for _, loss := range []Loss{Hinge, BCE, Logistic} {
		for _, a := range []Attack{
			{Method: "fgsm", Eps: 0.1},
			{Method: "pgd", Eps: 0.1},
			{Method: "pgd", Eps: 0.15, Norm: "2", Steps: 10},
			{Method: "pgd", Eps: 0.1, Clip: &[2]float64{-1, 1}},
		} {
			acc, err := AttackAccuracy(net, x, y, loss, a)
			if err != nil {
				t.Fatalf("%v %s: %v", loss, a, err)
			}
			if acc < 0 || acc > clean {
				t.Fatalf("%v %s: accuracy %v, clean %v", loss, a, acc, clean)
			}
			xa, err := Attacked(net, x, y, loss, a)
			if err != nil {
				t.Fatal(err)
			}
			if r, c := xa.Dims(); r != n || c != d {
				t.Fatalf("attacked data %d×%d", r, c)
			}
			// Every perturbation lies in the ball and the box.
			for k := 0; k < n; k++ {
				var dist float64
				for j := 0; j < d; j++ {
					e := xa.At(k, j) - x.At(k, j)
					if a.Norm == "2" {
						dist += e * e
					} else {
						dist = math.Max(dist, math.Abs(e))
					}
					if a.Clip != nil && math.Abs(xa.At(k, j)) > 1 {
						t.Fatalf("%s: x̃[%d,%d] = %v outside the clip box", a, k, j, xa.At(k, j))
					}
				}
				if a.Norm == "2" {
					dist = math.Sqrt(dist)
				}
				if dist > a.Eps*(1+1e-12) {
					t.Fatalf("%s: ‖δ_%d‖ = %v > ε", a, k, dist)
				}
			}
			// The accuracy is that on the attacked inputs.
			got, err := Accuracy(net, xa, y)
			if err != nil {
				t.Fatal(err)
			}
			if got != acc {
				t.Fatalf("%v %s: AttackAccuracy %v, accuracy on Attacked %v", loss, a, acc, got)
			}
		}
	}
	// ε = 0 leaves the data alone.
	if acc, err := AttackAccuracy(net, x, y, Hinge, Attack{Method: "pgd"}); err != nil || acc != clean {
		t.Fatalf("ε = 0: accuracy %v (%v), clean %v", acc, err, clean)
	}
}

func TestAttackBadInputIsNamed(t *testing.T) {
	net, x, y := trainedNet(t)
	bad := append([]float64{0}, y[1:]...)
	x3 := mat.NewDense(3, 3, nil)
	cases := []struct {
		net  *Network
		x    *mat.Dense
		y    []float64
		loss Loss
		a    Attack
		want string
	}{
		{net, x, y, Hinge, Attack{Eps: 0.1}, `choose "fgsm" or "pgd"`},
		{net, x, y, Hinge, Attack{Method: "cw", Eps: 0.1}, `Method: "cw"`},
		{net, x, y, Hinge, Attack{Method: "pgd", Eps: -1}, "Eps: -1"},
		{net, x, y, Hinge, Attack{Method: "pgd", Eps: math.NaN()}, "Eps: NaN"},
		{net, x, y, Hinge, Attack{Method: "pgd", Eps: 0.1, Norm: "1"}, `Norm: "1"`},
		{net, x, y, Hinge, Attack{Method: "pgd", Eps: 0.1, Steps: -2}, "Steps = -2"},
		{net, x, y, Hinge, Attack{Method: "pgd", Eps: 0.1, Clip: &[2]float64{0, 1}}, "outside the clip box"},
		{net, x, y, "cross", Attack{Method: "pgd", Eps: 0.1}, `loss "cross"`},
		{nil, x, y, Hinge, Attack{Method: "fgsm", Eps: 0.1}, "nil network"},
		{net, x, bad, Hinge, Attack{Method: "fgsm", Eps: 0.1}, "label y[0] = 0"},
		{net, x, y[1:], Hinge, Attack{Method: "fgsm", Eps: 0.1}, "but y has"},
		{net, x3, []float64{1, 1, -1}, Hinge, Attack{Method: "fgsm", Eps: 0.1}, "network expects 2"},
	}
	for _, c := range cases {
		_, err := AttackAccuracy(c.net, c.x, c.y, c.loss, c.a)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("AttackAccuracy(%+v): %v, want an error containing %q", c.a, err, c.want)
		}
		if _, err2 := Attacked(c.net, c.x, c.y, c.loss, c.a); err2 == nil || (err != nil && err2.Error() != err.Error()) {
			t.Errorf("Attacked(%+v): %v, AttackAccuracy: %v", c.a, err2, err)
		}
	}
}

func TestCertifiedAgreesWithSolvers(t *testing.T) {
	net, x, y := trainedNet(t)
	for _, c := range []struct {
		eps  float64
		norm Norm
	}{{0, ""}, {0.02, "inf"}, {0.05, "2"}, {0.05, "1"}, {0.5, "inf"}} {
		cert, margin, err := Certified(net, x, c.eps, c.norm)
		if err != nil {
			t.Fatal(err)
		}
		wc, wm, err := solvers.CertifiedPoints(net, x, solvers.Perturbation{Eps: c.eps, Norm: c.norm})
		if err != nil {
			t.Fatal(err)
		}
		k := 0
		for i := range cert {
			if cert[i] != wc[i] || margin[i] != wm[i] || cert[i] != (margin[i] >= 0) {
				t.Fatalf("ε %v %q point %d: %v %v, solvers %v %v", c.eps, c.norm, i, cert[i], margin[i], wc[i], wm[i])
			}
			if cert[i] {
				k++
			}
		}
		tab, err := CertificateTable(net, x, y, c.eps, c.norm)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(tab, fmt.Sprintf("%d of 80 points certified", k)) || strings.Count(tab, "<tr>") != 81 {
			t.Fatalf("ε %v: table does not count %d certified points or lacks rows:\n%.300s", c.eps, k, tab)
		}
		f, err := CertifiedScatterFigure(net, x, y, c.eps, c.norm)
		if err != nil {
			t.Fatal(err)
		}
		if f == nil {
			t.Fatal("nil figure")
		}
		if c.eps == 0.5 && k == len(cert) {
			t.Fatalf("every point certified at ε = 0.5 on the disk")
		}
	}
	if _, _, err := Certified(net, x, -1, "inf"); err == nil || !strings.Contains(err.Error(), "ε = -1") {
		t.Fatalf("negative ε: %v", err)
	}
	if _, _, err := Certified(net, x, 0.1, "3"); err == nil || !strings.Contains(err.Error(), `norm "3"`) {
		t.Fatalf("norm 3: %v", err)
	}
	if _, _, err := Certified(nil, x, 0.1, ""); err == nil || !strings.Contains(err.Error(), "nil network") {
		t.Fatalf("nil network: %v", err)
	}
	if _, err := CertificateTable(net, x, y[1:], 0.1, ""); err == nil {
		t.Fatal("table with short y: no error")
	}
	x3, y3, _ := data.Disk2D(5, 1)
	x3 = mat.NewDense(5, 3, append(append([]float64{}, x3.RawMatrix().Data...), 1, 2, 3, 4, 5))
	if _, err := CertifiedScatterFigure(net, x3, y3, 0.1, LInf); err == nil || !strings.Contains(err.Error(), "2 features") {
		t.Fatalf("3-D data: %v", err)
	}
}
