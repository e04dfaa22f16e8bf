package paper

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/convexnn/convexnn/cvx"
)

// Size is how large an experiment runs.
type Size string

// The sizes.
const (
	// SizePaper is the paper's: its data sets, widths and iterations.
	SizePaper Size = "paper"
	// SizeSmall runs every experiment in seconds, on subsampled or
	// downsampled stand-ins: convexnn reproduce -size small and the tests.
	SizeSmall Size = "small"
	// SizeNotebook is what the notebooks run by default (make notebooks):
	// SizeSmall, except where a notebook needs more to show its point
	// (Table 5: 150 images, P_s = 12, several hundred iterations).
	SizeNotebook Size = "notebook"
)

// ParseSize returns the size named s ("paper", "small" or "notebook").
func ParseSize(s string) (Size, error) {
	switch z := Size(s); z {
	case SizePaper, SizeSmall, SizeNotebook:
		return z, nil
	}
	return "", fmt.Errorf("paper: size %q: want paper, small or notebook", s)
}

// Experiment is one of the paper's tables or figures: its settings at each
// size, the paper's own table for comparison, and how to run it.
type Experiment struct {
	// Name is the experiment's name on the command line (convexnn
	// reproduce NAME), Title what it reproduces.
	Name, Title string
	// PaperHead and Paper are the paper's table: its header and rows, as
	// printed.
	PaperHead []string
	Paper     [][]string
	// Setup returns the settings of a table experiment at a size (nil for
	// the experiments run otherwise: the sweeps of fig. ADMMCom and the
	// figure notebooks).
	Setup func(size Size) Settings
	// run, when set, replaces the table runner.
	run func(ctx context.Context, size Size, runs int, outDir string, stdout io.Writer) error
}

// Settings are a table experiment's data set, program and methods; they
// are written into result.json.
type Settings struct {
	Dataset  string    `json:"dataset"`
	Train    int       `json:"train_images,omitempty"` // subsample of the training set (0: all)
	Loss     cvx.Loss  `json:"loss"`
	Ps       int       `json:"P_s"`
	Beta     float64   `json:"beta"`
	Rho      float64   `json:"rho"`
	Gamma    float64   `json:"gamma"`
	ADMMIter int       `json:"admm_iterations"`
	Inner    cvx.Inner `json:"admm_inner,omitempty"`
	Blocks   int       `json:"rbcd_blocks,omitempty"`    // ADMM-RBCD: patterns updated together per RBCD step
	InnerMax int       `json:"rbcd_steps_max,omitempty"` // ADMM-RBCD: RBCD steps per ADMM iteration at most (0: the solver's 20)
	Route    cvx.Route `json:"admm_route,omitempty"`     // how the u-update solves its system (cvx.ADMM.Route; cvx.AutoRoute chooses)
	// MorePs are extra ADMM rows with more sampled patterns than the
	// paper's P_s (same iterations and hyper-parameters): what the method
	// reaches within the time budget when the paper's width falls short.
	MorePs []int `json:"more_admm_P_s,omitempty"`
	// Back-propagation baselines: width 2P_s, Adam.
	BPEpochs   int     `json:"backprop_epochs"`
	BPBatch    int     `json:"backprop_batch,omitempty"` // 0: full batches
	BPRate     float64 `json:"backprop_learning_rate"`
	Eps        float64 `json:"eps,omitempty"` // > 0: an adversarial experiment (Table 5), ℓ_∞ radius
	RobustADMM int     `json:"robust_admm_iterations,omitempty"`
	RobustS    int     `json:"robust_S,omitempty"`
	Neurons    int     `json:"scp_neurons,omitempty"` // N of eq. (SCP2): the one-shot sampled hidden layer
	FISTAIter  int     `json:"fista_iterations,omitempty"`
	// Runs is how many seeds the notebooks average at paper size: the
	// paper's seven for Table 5, three for Tables 2 and 3 (the paper's
	// five-run means would take a notebook too long); 0 where no notebook
	// runs the experiment. convexnn reproduce -runs sets its own.
	Runs  int    `json:"-"`
	Notes string `json:"notes,omitempty"`
}

// Adversarial reports whether the experiment trains against attacks (Table
// 5): its methods are then scored clean and under FGSM and PGD.
func (s Settings) Adversarial() bool { return s.Eps > 0 }

// bpRate and bpBatch are the back-propagation baseline of Tables 2–4: Adam, learning
// rate 1e-3, minibatches of 100 (the paper's "SGD" settings are not given).
const (
	bpRate  = 1e-3
	bpBatch = 100
)

// squaredSetup is a squared-loss table: ADMM with the closed-form u-update,
// its linear system solved by route (cvx.CG: no factorization, for tens of
// iterations on d ≈ 800; cvx.AutoRoute: the flop model's choice).
func squaredSetup(dataset string, ps, iters int, rho, gamma float64, smallSet string, route cvx.Route) func(Size) Settings {
	return func(size Size) Settings {
		s := Settings{Dataset: dataset, Loss: cvx.Squared, Ps: ps, Beta: 1e-3, Rho: rho, Gamma: gamma, ADMMIter: iters,
			BPEpochs: 20, BPBatch: bpBatch, BPRate: bpRate, Route: route, Runs: 3}
		if route == cvx.CG {
			s.Notes = "the u-update's linear system is solved by warm-started conjugate gradients preconditioned with I + XᵀX (route cg: relative residual 10⁻²/(k+1)² at iteration k) instead of the paper's Cholesky factor, which costs more to form than all the iterations here; the iterates stay within 0.5 % of the exact ones in objective (Table 2 after 10 iterations: 228.7 against 227.6)"
		}
		if size != SizePaper {
			s.Dataset, s.Train, s.Ps, s.ADMMIter, s.BPEpochs = smallSet, 400, 6, min(iters, 10), 5
		}
		return s
	}
}

var experiments = []*Experiment{
	{
		Name:      "table2-mnist",
		Title:     "Table 2: squared loss, MNIST 2 vs 8 (n = 11809, d = 784), P_s = 24, 10 ADMM iterations",
		PaperHead: []string{"Method", "Validation accuracy", "CPU time (s)", "Training loss"},
		Paper: [][]string{
			{"Back-prop", "98.86 %", "74.09", "422.4"},
			{"CVX", "70.99 %", "14879", "1.146"},
			{"ADMM", "98.90 %", "802.2", "223.2"},
		},
		Setup: func(size Size) Settings {
			s := squaredSetup("mnist-2-8", 24, 10, 0.1, 0.1, "mnist-2-8-d100", cvx.CG)(size)
			// P_s = 24 falls short of 98.8 % here (docs/performance.md);
			// the row with 4× the patterns shows what 30 s buy.
			s.MorePs = []int{96}
			if size != SizePaper {
				s.MorePs = []int{12}
			}
			s.Notes += "; the row \"ADMM, P_s = 96\" is ours, not the paper's: 4× the sampled patterns (network width ≤ 192), same iterations and hyper-parameters"
			return s
		},
	},
	{
		Name:      "table3-fmnist",
		Title:     "Table 3: squared loss, Fashion-MNIST pullover vs bag (d = 784), P_s = 18, 42 ADMM iterations",
		PaperHead: []string{"Method", "Validation accuracy", "CPU time (s)", "Training loss"},
		Paper: [][]string{
			{"Back-prop", "99.04 % (0.0735)", "183.6", "175.1 (4.246)"},
			{"ADMM", "98.73 % (0.0200)", "167.1", "129.7 (13.24)"},
		},
		Setup: squaredSetup("fashion-pullover-bag", 18, 42, 0.4, 0.16, "fashion-pullover-bag-ds", cvx.CG),
	},
	{
		Name:      "table3-fmnist-ds",
		Title:     "Table 3: squared loss, Fashion-MNIST pullover vs bag downsampled (DS, d = 196), P_s = 18, 42 ADMM iterations",
		PaperHead: []string{"Method", "Validation accuracy", "CPU time (s)", "Training loss"},
		Paper: [][]string{
			{"Back-prop (DS)", "98.34 % (0.0917)", "18.31", "433.0 (10.40)"},
			{"ADMM (DS)", "98.80 % (0.0585)", "6.840", "380.1 (17.74)"},
		},
		Setup: squaredSetup("fashion-pullover-bag-ds", 18, 42, 0.4, 0.16, "fashion-pullover-bag-ds", cvx.AutoRoute),
	},
	{
		Name:      "table3-cifar-ds",
		Title:     "Table 3: squared loss, CIFAR-10 bird vs ship downsampled (DS, 16×16×3, d = 768), P_s = 18, 30 ADMM iterations",
		PaperHead: []string{"Method", "Validation accuracy", "CPU time (s)", "Training loss"},
		Paper: [][]string{
			{"Back-prop (DS)", "90.90 % (0.305)", "122.7", "991.5 (11.68)"},
			{"ADMM (DS)", "86.89 % (0.132)", "118.6", "607.6 (10.76)"},
		},
		Setup: squaredSetup("cifar-bird-ship-ds", 18, 30, 0.4, 0.16, "cifar-bird-ship-600", cvx.CG),
	},
	{
		Name:      "table4-bce",
		Title:     "Table 4: binary cross-entropy (tanh output), MNIST 2 vs 8, ADMM-RBCD, P_s = 24, 34 ADMM iterations",
		PaperHead: []string{"Method", "Validation accuracy", "CPU time (s)", "Training loss"},
		Paper: [][]string{
			{"Back-prop", "98.91 %", "62.06", "437.6"},
			{"CVX", "98.21 %", "14217", "1.007"},
			{"ADMM-RBCD", "98.89 %", "555.8", "310.3"},
		},
		Setup: func(size Size) Settings {
			// The paper's β = 1e-3 and ρ = γ_a = 0.01 are for its summed
			// loss; ours is a mean, so both are divided by n (set once n is
			// known: see Load).
			s := Settings{Dataset: "mnist-2-8", Loss: cvx.BCE, Ps: 24, Beta: 1e-3, Rho: 0.01, Gamma: 0.01, ADMMIter: 34, Inner: cvx.RBCD, Blocks: 24, InnerMax: 1,
				BPEpochs: 20, BPBatch: bpBatch, BPRate: bpRate,
				Notes: "β, ρ and γ_a are the paper's (1e-3, 0.01, 0.01) divided by n: the BCE loss here is a mean, the paper's a sum; the training loss is reported as the sum, like the paper's. Each RBCD step updates all P_s patterns at once (Blocks = P_s: X is streamed once per step as a matrix product) where the paper updates one: faster per ADMM iteration, and a higher validation accuracy here (98.31 % against 98.06 % with one block, seed 1; docs/performance.md). One RBCD step (a sweep over all 24 patterns) per ADMM iteration: the paper does not give its inner budget, and one sweep reproduces its training loss (310.3; ours 316 and 315 for seeds 1 and 2) where the solver's default of up to 20 steps goes far below it (45.8) and scores lower (98.34 % against 98.42 %, seeds 1–3) in 5× the time"}
			if size != SizePaper {
				s.Dataset, s.Train, s.Ps, s.ADMMIter, s.BPEpochs, s.Blocks = "mnist-2-8-d100", 400, 6, 8, 5, 6
			}
			return s
		},
	},
	{
		Name:      "table5-cifar-adv",
		Title:     "Table 5: hinge loss, adversarial training on CIFAR-10 bird vs ship (600 images, 7×7×3), ε = 10/255, β = 1e-4, P_s = 36",
		PaperHead: []string{"Method", "Clean accuracy", "FGSM adv.", "PGD adv.", "Objective", "CPU time (s)"},
		Paper: [][]string{
			{"GD-std", "79.56 % (0.414)", "47.09 % (0.4290)", "45.60 % (0.4796)", "0.3146", "108.4"},
			{"GD-FGSM", "75.30 % (3.10)", "61.03 % (4.763)", "60.99 % (4.769)", "0.8370", "154.9"},
			{"GD-PGD", "76.56 % (0.604)", "62.48 % (0.2215)", "62.44 % (0.1988)", "0.8220", "1764"},
			{"practical convex training (alg. train)", "81.01 % (0.809)", "0.4857 % (0.1842)", "0.3571 % (0.1239)", "6.910e-3", "37.77"},
			{"convex adversarial training (alg. adv_train)", "78.36 % (0.325)", "66.95 % (0.4564)", "66.81 % (0.4862)", "0.6511", "1544"},
		},
		Setup: func(size Size) Settings {
			// notebooks/09-cifar-adversarial.ipynb, paper size.
			s := Settings{Dataset: "cifar-bird-ship-600", Train: 600, Loss: cvx.Hinge, Ps: 36, Beta: 1e-4, ADMMIter: 1000, RobustADMM: 5000, RobustS: 1,
				BPEpochs: 500, BPRate: 1e-3, Eps: 10.0 / 255, Runs: 7,
				Notes: "as notebooks/09-cifar-adversarial.ipynb: ADMM with the solver's default ρ and tolerance (stops when the residuals meet it), the robust patterns by Algorithm adv_train with P_a = 10 P_s directions and S = 1; back-propagation full-batch Adam, width 2P_s"}
			switch size {
			case SizeSmall:
				s.Train, s.Ps, s.ADMMIter, s.RobustADMM, s.BPEpochs = 100, 6, 100, 300, 40
			case SizeNotebook:
				s.Train, s.Ps, s.ADMMIter, s.RobustADMM, s.BPEpochs = 150, 12, 300, 1500, 200
			}
			return s
		},
	},
	{
		Name:      "scp-mnist",
		Title:     "SCP (eq. SCP2, appendix \"The SCP Convex Training Formulation\"): binary cross-entropy, MNIST 2 vs 8 (n = 11809, d = 784), N = 39365 sampled neurons, FISTA",
		PaperHead: []string{"Method", "Test accuracy"},
		Paper:     [][]string{{"SCP (ISTA), N = 39365", "99.45 %"}},
		Setup: func(size Size) Settings {
			// β: the paper does not state it; ours is for its summed loss
			// and divided by n like Table 4's (the loss here is a mean).
			s := Settings{Dataset: "mnist-2-8", Loss: cvx.BCE, Beta: 0.1, Neurons: 39365, FISTAIter: 150,
				Notes: "one-shot sampling of N neurons uniformly on the sphere (bias column included), eq. (SCP2) with the BCE loss solved by FISTA (backtracking, adaptive restart) instead of the paper's ISTA; β (not given in the paper) is for the summed loss and divided by n; the accuracy is on the MNIST test images of 2 and 8"}
			if size != SizePaper {
				s.Dataset, s.Train, s.Neurons, s.FISTAIter = "mnist-2-8-d100", 400, 2000, 100
			}
			return s
		},
	},
}

// Experiments returns every experiment, in the order `all` runs them.
func Experiments() []*Experiment { return slices.Clone(experiments) }

// Names returns the experiments' names.
func Names() []string {
	var n []string
	for _, e := range experiments {
		n = append(n, e.Name)
	}
	return n
}

// Lookup returns the experiment called name.
func Lookup(name string) (*Experiment, error) {
	for _, e := range experiments {
		if e.Name == name {
			return e, nil
		}
	}
	return nil, fmt.Errorf("paper: unknown experiment %q; known: %s, all", name, strings.Join(Names(), ", "))
}

// Resolve returns the experiments named (all of them for "all"), or the
// first unknown name as an error.
func Resolve(names []string) ([]*Experiment, error) {
	var todo []*Experiment
	for _, n := range names {
		if n == "all" {
			todo = append(todo, experiments...)
			continue
		}
		e, err := Lookup(n)
		if err != nil {
			return nil, err
		}
		todo = append(todo, e)
	}
	return todo, nil
}
