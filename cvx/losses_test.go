package cvx

import (
	"strings"
	"testing"

	"github.com/convexnn/convexnn/internal/testenv"
)

// lossCases are the loss/method pairs beyond the squared loss: each must
// resume exactly and train a network that fits the disk.
func lossCases(t *testing.T) map[string]func() (*Problem, Method) {
	x, y := disk(t, 50, 4)
	pat := func() *Problem { return Classify(x, y).Beta(1e-3).Bias().SamplePatterns(8, 3) }
	return map[string]func() (*Problem, Method){
		"hinge-split":       func() (*Problem, Method) { return pat().Hinge(), ADMM{} },
		"bce-split":         func() (*Problem, Method) { return pat().BCE(), ADMM{Inner: "split"} },
		"bce-rbcd":          func() (*Problem, Method) { return pat().BCE(), ADMM{} },
		"logistic-rbcd":     func() (*Problem, Method) { return pat().Logistic(), ADMM{Inner: "rbcd", Blocks: 2, Seed: 5} },
		"logistic-split":    func() (*Problem, Method) { return pat().Logistic(), ADMM{Inner: "split"} },
		"squared-cg":        func() (*Problem, Method) { return pat(), ADMM{Route: "cg"} },
		"squared-relaxed":   func() (*Problem, Method) { return pat(), ADMM{Relax: 1.7} },
		"hinge-split-cg":    func() (*Problem, Method) { return pat().Hinge(), ADMM{Route: "cg"} },
		"hinge-robust":      func() (*Problem, Method) { return pat().Hinge().Robust(0.05, LInf), ADMM{} },
		"bce-robust-l2":     func() (*Problem, Method) { return pat().BCE().Robust(0.05, "2"), ADMM{} },
		"squared-robust-l1": func() (*Problem, Method) { return pat().Squared().Robust(0.02, "1"), ADMM{Inner: "robust"} },
		"bce-fista": func() (*Problem, Method) {
			return Classify(x, y).Beta(1e-3).Bias().BCE().SampleNeurons(60, 2), FISTA{Tol: 1e-300}
		},
	}
}

func TestOtherLossesResumeExactly(t *testing.T) {
	for name, mk := range lossCases(t) {
		t.Run(name, func(t *testing.T) {
			t.Setenv("CONVEXNN_STATE_DIR", t.TempDir())
			p, m := mk()
			whole := Start("whole", p, m)
			whole.Quiet = true
			if err := whole.Iterate(60); err != nil {
				t.Fatal(err)
			}
			p, m = mk()
			a := Start("part", p, m)
			a.Quiet = true
			if err := a.Iterate(23); err != nil {
				t.Fatal(err)
			}
			p, m = mk()
			b := Resume("part", p, m)
			b.Quiet = true
			if err := b.Iterate(37); err != nil {
				t.Fatal(err)
			}
			if b.ResumedAt() != 23 || b.Iter() != 60 || b.Objective() != whole.Objective() {
				t.Fatalf("resumed at %d, iteration %d, objective %v; whole run objective %v", b.ResumedAt(), b.Iter(), b.Objective(), whole.Objective())
			}
			net, err := b.Network()
			if err != nil {
				t.Fatal(err)
			}
			x, y := p.Data()
			acc, err := Accuracy(net, x, y)
			if err != nil {
				t.Fatal(err)
			}
			if acc < 0.8 {
				t.Fatalf("training accuracy %.2f after 60 iterations", acc)
			}
		})
	}
}

// A method or option that does not fit the problem's loss or robustness
// is refused by Start with an error naming it.
func TestLossMethodMismatchIsNamed(t *testing.T) {
	t.Setenv("CONVEXNN_STATE_DIR", t.TempDir())
	x, y := disk(t, 30, 4)
	for _, c := range []struct {
		p    *Problem
		m    Method
		want string
	}{
		{Classify(x, y).Hinge().SampleNeurons(10, 1), FISTA{}, "squared or BCE"},
		{Classify(x, y).Logistic().SampleNeurons(10, 1), FISTA{}, "squared or BCE"},
		{Classify(x, y).Hinge().SamplePatterns(4, 1), ADMM{Inner: "rbcd"}, "smooth loss"},
		{Classify(x, y).BCE().SamplePatterns(4, 1), ADMM{Inner: "closed-form"}, "squared loss"},
		{Classify(x, y).SamplePatterns(4, 1), ADMM{Inner: "newton"}, `Inner: "newton"`},
		{Classify(x, y).SamplePatterns(4, 1), ADMM{Blocks: 2}, "options of Inner"},
		{Classify(x, y).SamplePatterns(4, 1), ADMM{Route: "lu"}, `Route: "lu"`},
		{Classify(x, y).SamplePatterns(4, 1), ADMM{Relax: 2.5}, "must be in (0, 2)"},
		{Classify(x, y).SamplePatterns(4, 1), ADMM{Relax: 1.5, Rho: 0.1, Gamma: 0.05}, "unit dual step"},
		{Classify(x, y).Hinge().SamplePatterns(4, 1), ADMM{Relax: 1.5}, "split u-update over-relaxes with its own fixed α = 1.6"},
		{Classify(x, y).Hinge().Robust(0.05, LInf).SamplePatterns(4, 1), ADMM{Relax: 1.5}, "robust u-update over-relaxes with its own fixed α = 1.6"},
		{Classify(x, y).BCE().SamplePatterns(4, 1), ADMM{Route: "cg"}, "RBCD solves no linear system"},
		{Regress(x, y).BCE().SamplePatterns(4, 1), ADMM{}, "for classification"},
		// Methods and options that do not solve robust problems, and the
		// robust inner solver on a standard one.
		{Classify(x, y).Hinge().Robust(0.05, LInf).SamplePatterns(4, 1), ADMM{Inner: "split"}, "robust"},
		{Classify(x, y).Hinge().Robust(0.05, LInf).SamplePatterns(4, 1), ADMM{Blocks: 2}, "robust"},
		{Classify(x, y).Hinge().Robust(0.05, LInf).SamplePatterns(4, 1), ADMM{Route: "cg"}, "robust"},
		{Classify(x, y).Hinge().SamplePatterns(4, 1), ADMM{Inner: "robust"}, "robust"},
		{Classify(x, y).Robust(0.05, LInf).SampleNeurons(10, 1), FISTA{}, "robust"},
	} {
		r := Start("bad", c.p, c.m)
		if r.Err() == nil || !strings.Contains(r.Err().Error(), c.want) {
			t.Errorf("%s with %s: want an error with %q, got %v", c.p.Loss(), c.m.method(), c.want, r.Err())
		}
	}
}

func TestSampleIterativelyCertifies(t *testing.T) {
	x, y := disk(t, 40, 5)
	if _, err := SampleIteratively(Classify(x, y).Hinge(), Certify{N0: 5, N1: 10, Psi: 0.1, Xi: 0.1}); err == nil || !strings.Contains(err.Error(), "squared-loss") {
		t.Fatalf("hinge loss: %v", err)
	}
	if _, err := SampleIteratively(Classify(x, y), Certify{N0: 5, N1: 10, Psi: 2, Xi: 0.1}); err == nil {
		t.Fatal("ψ = 2 accepted")
	}
	if testenv.Race {
		// Sequential numerics (solvers/scp starts no goroutine), 37 of the
		// package's 85 s under -race: make test runs them without it.
		return
	}
	c, err := SampleIteratively(Classify(x, y).Beta(1e-2).Bias(), Certify{N0: 20, N1: 400, Psi: 0.15, Xi: 0.05, Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	if !c.Certified || c.StopReason != "certified" || len(c.Rounds) == 0 {
		t.Fatalf("not certified: %s, %d rounds", c.StopReason, len(c.Rounds))
	}
	last := c.Rounds[len(c.Rounds)-1]
	if last.Bound > 0.15 || c.PaperBound(last) >= last.Bound {
		t.Fatalf("bound %v, paper's bound %v", last.Bound, c.PaperBound(last))
	}
	net, err := c.Network()
	if err != nil {
		t.Fatal(err)
	}
	if acc, _ := Accuracy(net, x, y); acc < 0.8 {
		t.Fatalf("certified network's training accuracy %.2f", acc)
	}
	if !strings.Contains(c.Table(), "paper&#39;s bound") && !strings.Contains(c.Table(), "paper's bound") {
		t.Fatal("table lacks the paper's bound column")
	}
	if _, err := c.Figure(); err != nil {
		t.Fatal(err)
	}
}
