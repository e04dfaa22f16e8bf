package main

import (
	"context"
	"io"
	"math"
	"os"
	"strconv"
	"strings"

	"github.com/convexnn/convexnn/paper"
)

// benchCommand is `convexnn bench <cvxopt|torch|accuracy|all> [flags]`: side-by-side
// measurements against independent peers run in the same invocation, printed
// as ratios (paper.BenchCVXOPT, paper.BenchTorch). Not part of `make test`
// (paper-scale runs, minutes each).
func benchCommand(ctx context.Context, args []string, stdout io.Writer) error {
	if len(args) == 0 {
		return badInput("bench: name a benchmark: cvxopt, torch, accuracy or all\n%s", benchUsage)
	}
	switch args[0] {
	case "cvxopt":
		return benchCVXOPT(ctx, args[1:], stdout)
	case "torch":
		return benchTorch(ctx, args[1:], stdout)
	case "accuracy":
		return benchAccuracy(ctx, args[1:], stdout)
	case "all":
		if len(args) > 1 {
			return badInput("bench all runs both benchmarks with their defaults and takes no flags (got %s): run bench cvxopt and bench torch one by one to set flags\n%s", strings.Join(args[1:], " "), benchUsage)
		}
		if err := benchCVXOPT(ctx, nil, stdout); err != nil {
			return err
		}
		return benchTorch(ctx, nil, stdout)
	}
	return badInput("bench: unknown benchmark %q; known: %s\n%s", args[0], strings.Join([]string{"cvxopt", "torch", "accuracy", "all"}, ", "), benchUsage)
}

const benchUsage = `usage: convexnn bench cvxopt [-out out/bench] [-runs N]
       convexnn bench torch [-out out/bench] [-size paper|small] [-lrs list] [experiment ...]
       convexnn bench accuracy [-out out/bench] [-size paper|small] [-targets 1e-4,1e-6] [-seconds 120] [-peer-seconds 600]
       [-solvers ipm,working-set,admm,cvxopt] [family ...]
       convexnn bench all`

const benchCVXOPTUsage = `usage: convexnn bench cvxopt [-out out/bench] [-runs N] [-size paper|small] [-n 500] [-d 20] [-ps 40]
       [-beta 1e-3] [-seed 1] [-loss squared|hinge|squared,hinge] [-target 1e-4] [-viol 1e-6] [-rho R] [-relax 1.8] [-admm-max-iter N]
       [-python /usr/bin/python3] [-script bench/cvxopt_convex.py]`

// benchCVXOPT parses the flags of `convexnn bench cvxopt` and runs
// paper.BenchCVXOPT.
func benchCVXOPT(ctx context.Context, args []string, stdout io.Writer) error {
	def := paper.DefaultCVXOPTConfig(paper.SizePaper)
	fs := quietFlags("bench cvxopt")
	out := fs.String("out", "out/bench", "output directory: writes <out>/cvxopt/result.json")
	runs := fs.Int("runs", def.Runs, "timed runs per solver; the table shows medians")
	size := fs.String("size", "paper", "paper (n = 500, d = 20, P_s = 40) or small (n = 60, d = 5, P_s = 6); -n, -d, -ps override")
	n := fs.Int("n", 0, "data points (0: by -size)")
	d := fs.Int("d", 0, "features (0: by -size)")
	ps := fs.Int("ps", 0, "sampled activation patterns P_s (0: by -size)")
	beta := fs.Float64("beta", def.Beta, "regularization β")
	seed := fs.Uint64("seed", def.Seed, "seed of the data and the patterns")
	losses := fs.String("loss", "squared", "comma-separated losses: squared, hinge (slow for CVXOPT at the paper size)")
	target := fs.Float64("target", def.Target, "relative objective gap to reach")
	viol := fs.Float64("viol", def.ViolTol, "largest constraint violation at the target, relative to max |x_kᵀu*_j|")
	rho := fs.Float64("rho", def.Rho, "ADMM penalty ρ (the starting ρ of the adaptive loss-split ADMM for the hinge loss)")
	admmMax := fs.Int("admm-max-iter", def.ADMMMaxIter, "iteration cap of an ADMM run")
	relax := fs.Float64("relax", def.Relax, "over-relaxation α of an extra ADMM row for the squared loss (1: no extra row)")
	python := fs.String("python", def.Python, "Python interpreter with cvxopt and numpy")
	script := fs.String("script", "", "the CVXOPT script (default: bench/cvxopt_convex.py of the repository)")
	if err := fs.Parse(args); err != nil {
		return badInput("bench cvxopt: %v\n%s", err, benchCVXOPTUsage)
	}
	if fs.NArg() > 0 {
		return badInput("bench cvxopt: unexpected argument %q\n%s", fs.Arg(0), benchCVXOPTUsage)
	}
	if *size != string(paper.SizePaper) && *size != string(paper.SizeSmall) {
		return badInput("bench cvxopt: -size %q: want paper or small", *size)
	}
	cfg := paper.DefaultCVXOPTConfig(paper.Size(*size))
	cfg.Beta, cfg.Seed, cfg.Runs, cfg.Target, cfg.ViolTol, cfg.Rho, cfg.ADMMMaxIter, cfg.Relax, cfg.Python, cfg.Script =
		*beta, *seed, *runs, *target, *viol, *rho, *admmMax, *relax, *python, *script
	for _, f := range []struct {
		name string
		v    int
		dst  *int
	}{{"n", *n, &cfg.N}, {"d", *d, &cfg.D}, {"ps", *ps, &cfg.Ps}} {
		if f.v < 0 {
			return badInput("bench cvxopt: -%s %d: need a positive number", f.name, f.v)
		}
		if f.v > 0 {
			*f.dst = f.v
		}
	}
	switch {
	case cfg.Runs < 1:
		return badInput("bench cvxopt: -runs %d: need at least one run", cfg.Runs)
	case !(cfg.Beta > 0) || math.IsInf(cfg.Beta, 0):
		return badInput("bench cvxopt: -beta %v: need 0 < β < ∞", cfg.Beta)
	case !(cfg.Target > 0 && cfg.Target < 1):
		return badInput("bench cvxopt: -target %v: need 0 < target < 1", cfg.Target)
	case !(cfg.ViolTol > 0) || math.IsInf(cfg.ViolTol, 0):
		return badInput("bench cvxopt: -viol %v: need a positive tolerance", cfg.ViolTol)
	case !(cfg.Rho > 0) || math.IsInf(cfg.Rho, 0):
		return badInput("bench cvxopt: -rho %v: need 0 < ρ < ∞", cfg.Rho)
	case !(cfg.Relax > 0 && cfg.Relax < 2):
		return badInput("bench cvxopt: -relax %v: the over-relaxation α must be in (0, 2)", cfg.Relax)
	case cfg.ADMMMaxIter < 1:
		return badInput("bench cvxopt: -admm-max-iter %d: need at least one iteration", cfg.ADMMMaxIter)
	}
	cfg.Losses = nil
	for _, l := range strings.Split(*losses, ",") {
		switch l = strings.TrimSpace(l); l {
		case "squared", "hinge":
			cfg.Losses = append(cfg.Losses, l)
		default:
			return badInput("bench cvxopt: -loss %q: the losses are squared and hinge (the interior-point methods' cone programs)", l)
		}
	}
	if cfg.Script != "" {
		if _, err := os.Stat(cfg.Script); err != nil {
			return badInput("bench cvxopt: -script: %v", err)
		}
	}
	return paper.BenchCVXOPT(ctx, cfg, *out, stdout)
}

const benchTorchUsage = `usage: convexnn bench torch [-out out/bench] [-size paper|small] [-lrs 1e-4,3e-4,1e-3,3e-3,1e-2]
       [-epochs N] [-seconds S] [-dtype float32|float64] [-threads 2] [-python /usr/bin/python3] [-script bench/torch_backprop.py]
       [experiment ...]
experiments (default all four): table2-mnist, table3-fmnist, table3-fmnist-ds, table3-cifar-ds`

// benchTorch parses the flags of `convexnn bench torch` and runs
// paper.BenchTorch.
func benchTorch(ctx context.Context, args []string, stdout io.Writer) error {
	fs := quietFlags("bench torch")
	out := fs.String("out", "out/bench", "output directory: writes <out>/torch/result.json")
	size := fs.String("size", "paper", "paper (the experiments' paper settings) or small (seconds)")
	lrs := fs.String("lrs", paper.TorchDefaultLRs, "comma-separated Adam learning rates of the PyTorch grid")
	epochs := fs.Int("epochs", 0, "epoch cap per learning rate (0: the experiment's back-prop epochs, 20 at paper size, 5 small)")
	seconds := fs.Float64("seconds", 60, "training-time cap per learning rate, seconds")
	dtype := fs.String("dtype", "float32", "PyTorch's floating-point type: float32 (its default) or float64")
	threads := fs.Int("threads", paper.TorchThreads, "PyTorch's intra-op threads (torch.set_num_threads)")
	python := fs.String("python", paper.DebianPython, "the Python interpreter with torch")
	script := fs.String("script", "", "the PyTorch script (default: bench/torch_backprop.py of the repository)")
	if err := fs.Parse(args); err != nil {
		return badInput("bench torch: %v\n%s", err, benchTorchUsage)
	}
	if *size != string(paper.SizePaper) && *size != string(paper.SizeSmall) {
		return badInput("bench torch: -size %q: want paper or small", *size)
	}
	grid, err := paper.ParseLRs(*lrs)
	if err != nil {
		return badInput("bench torch: -lrs %q: %v", *lrs, err)
	}
	switch {
	case *epochs < 0:
		return badInput("bench torch: -epochs %d: must be ≥ 0 (0 for the experiment's)", *epochs)
	case !(*seconds > 0) || math.IsInf(*seconds, 0):
		return badInput("bench torch: -seconds %v: must be positive and finite", *seconds)
	case *dtype != "float32" && *dtype != "float64":
		return badInput("bench torch: -dtype %q: want float32 or float64", *dtype)
	case *threads < 1:
		return badInput("bench torch: -threads %d: need at least one", *threads)
	}
	for _, n := range fs.Args() {
		if strings.HasPrefix(n, "-") {
			return badInput("bench torch: flag %s after the experiment names: put flags first\n%s", n, benchTorchUsage)
		}
	}
	todo, err := paper.TorchExperiments(fs.Args())
	if err != nil {
		return badInput("%v", err)
	}
	if *script != "" {
		if _, err := os.Stat(*script); err != nil {
			return badInput("bench torch: -script: %v", err)
		}
	}
	opts := paper.TorchOptions{Python: *python, Script: *script, LRs: grid, Epochs: *epochs, Seconds: *seconds, DType: *dtype, Threads: *threads}
	return paper.BenchTorch(ctx, todo, paper.Size(*size), opts, *out, stdout)
}

const benchAccuracyUsage = `usage: convexnn bench accuracy [-out out/bench] [-size paper|small] [-targets 1e-4,1e-6] [-seconds 120]
       [-peer-seconds 600] [-solvers ipm,working-set,admm,cvxopt] [-python /usr/bin/python3] [-script bench/cvxopt_convex.py]
       [family ...]
families (default: all but the paper-scale ones): `

// benchAccuracy parses the flags of `convexnn bench accuracy` and runs
// paper.BenchAccuracy.
func benchAccuracy(ctx context.Context, args []string, stdout io.Writer) error {
	names, paperScale := paper.AccuracyFamilies()
	var listed []string
	for i, n := range names {
		if paperScale[i] {
			n += " (paper scale)"
		}
		listed = append(listed, n)
	}
	usage := benchAccuracyUsage + strings.Join(listed, ", ")
	def := paper.DefaultAccuracyConfig()
	fs := quietFlags("bench accuracy")
	out := fs.String("out", "out/bench", "output directory: writes <out>/accuracy/result.json")
	size := fs.String("size", "paper", "paper (the sizes of issue 18's targets) or small (tiny instances of the same families)")
	targets := fs.String("targets", "1e-4,1e-6", "certified relative gaps to time, loosest first")
	seconds := fs.Float64("seconds", def.Seconds, "time cap of each of our solvers on each instance, seconds")
	peer := fs.Float64("peer-seconds", def.PeerSeconds, "time cap of each CVXOPT run, seconds")
	solverList := fs.String("solvers", strings.Join(paper.AccuracySolvers(), ","), "comma-separated solvers to run")
	python := fs.String("python", def.Python, "Python interpreter with cvxopt and numpy")
	script := fs.String("script", "", "the CVXOPT script (default: bench/cvxopt_convex.py of the repository)")
	if err := fs.Parse(args); err != nil {
		return badInput("bench accuracy: %v\n%s", err, usage)
	}
	for _, n := range fs.Args() {
		if strings.HasPrefix(n, "-") {
			return badInput("bench accuracy: flag %s after the family names: put flags first\n%s", n, usage)
		}
	}
	cfg := def
	cfg.Families, cfg.Seconds, cfg.PeerSeconds, cfg.Python, cfg.Script = fs.Args(), *seconds, *peer, *python, *script
	var err error
	if cfg.Size, err = paper.ParseSize(*size); err != nil || cfg.Size == paper.SizeNotebook {
		return badInput("bench accuracy: -size %q: want paper or small", *size)
	}
	cfg.Targets = nil
	for _, t := range strings.Split(*targets, ",") {
		v, err := strconv.ParseFloat(strings.TrimSpace(t), 64)
		if err != nil {
			return badInput("bench accuracy: -targets %q: %v", *targets, err)
		}
		cfg.Targets = append(cfg.Targets, v)
	}
	cfg.Solvers = nil
	for _, s := range strings.Split(*solverList, ",") {
		cfg.Solvers = append(cfg.Solvers, strings.TrimSpace(s))
	}
	if err := paper.CheckAccuracyConfig(cfg); err != nil {
		return badInput("%v\n%s", err, usage)
	}
	if *script != "" {
		if _, err := os.Stat(*script); err != nil {
			return badInput("bench accuracy: -script: %v", err)
		}
	}
	return paper.BenchAccuracy(ctx, cfg, *out, stdout)
}
