// Command convexnn is the command line of convexnn.
//
//	convexnn notebooks [-out out/notebooks] [-size small|paper] [notebook.ipynb ...]
//	    executes notebooks headless (all of notebooks/ by default), writing
//	    executed .ipynb and offline-viewable .html files; exits 1 naming every
//	    failed cell.
//	convexnn data info <mnist|fashion-mnist|cifar10|mammographic> [-dir D] [-download]
//	    prints a JSON summary of a data set: files and checksum status,
//	    shapes, class counts, and the paper's training/validation splits.
//	convexnn solve -problem problem.json -solver ipm|working-set|newton|admm|scp|auto [-gap T] [-max-iter N] [-tol T]
//	        [-rho R] [-relax A] [-inner closed-form|split|rbcd|robust] [-neurons N -seed S] [-out result.json]
//	        [-save net.npz]
//	    solves the convex training program (eq. convex_general) given as JSON
//	    ("loss": squared, hinge, bce or logistic) and writes the solution, the
//	    recovered network and its objectives; -solver scp samples N neurons and
//	    trains the output layer (eq. SCP2, squared or bce); -save FILE writes
//	    the trained network of any model to a network file for predict. With
//	    "gated": true or "classes": c the problem is the gated program (one or
//	    c outputs; -solver auto|kernel|newton|fista), and
//	    -problem data.csv|.npy|.npz -label-column NAME [-loss L -beta B
//	    -patterns P -pattern-seed S -gated] solves a user's data file.
//	convexnn attack -network result.json -data problem.json -method pgd|fgsm -eps E [-norm inf|2] [-steps T]
//	    attacks the network of a solve result on the problem's data (FGSM or
//	    PGD on its loss) and prints the clean and attacked accuracies as JSON.
//	convexnn predict -network FILE -data FILE.csv|.npy|.npz [-label-column NAME] [-out predictions.json]
//	    scores a data file with a saved network (a network file of package
//	    solvers/netfile, or a solve result): per row the predicted class or
//	    value and the scores; with labels, the accuracy and confusion matrix.
//	convexnn reproduce [-size paper|small] [-out out] [-runs N] [-cpuprofile F] <experiment>...
//	    runs experiments of the paper (the tables table2-mnist … table5-cifar-adv
//	    and scp-mnist, fig-admm-complexity, the figure notebooks fig-*, or all)
//	    through the cvx API, writing out/<experiment>/result.json and a
//	    standalone report.html.
//	convexnn bench cvxopt|torch|accuracy|all [flags]
//	    measures us side by side against cvxopt (our IPM and ADMM, time to a
//	    1e-4 relative objective) and PyTorch back-propagation (time to our
//	    ADMM's validation accuracy on Tables 2 and 3), printing the ratios.
//	convexnn version
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/debug"

	"github.com/convexnn/convexnn/internal/nbrun"
	checkout "github.com/convexnn/convexnn/internal/repo"
)

const usage = `usage:
  convexnn notebooks [-out DIR] [-size small|paper] [notebook.ipynb ...]
  convexnn data info <mnist|fashion-mnist|cifar10|mammographic> [-dir D] [-download]
  convexnn solve -problem problem.json -solver ipm|working-set|newton|admm|scp|auto [-gap T] [-max-iter N] [-tol T]
        [-rho R] [-relax A] [-inner closed-form|split|rbcd|robust] [-neurons N -seed S] [-out result.json] [-save net.npz]
  convexnn solve -problem problem.json ("gated": true or "classes": c) [-solver auto|kernel|newton|fista] [-save net.npz]
  convexnn solve -problem data.csv|.npy|.npz -label-column NAME [-loss L] [-beta B] [-patterns P] [-pattern-seed S] [-gated]
  convexnn attack -network result.json -data problem.json -method pgd|fgsm -eps E [-norm inf|2] [-steps T]
  convexnn predict -network FILE -data FILE.csv|.npy|.npz [-label-column NAME|INDEX] [-labels FILE.npy] [-delimiter C] [-no-header] [-out predictions.json]
  convexnn reproduce [-size paper|small] [-out out] [-runs N] [-cpuprofile F] <experiment>... (table2-mnist,
        table3-fmnist, table3-fmnist-ds, table3-cifar-ds, table4-bce, table5-cifar-adv, scp-mnist,
        fig-admm-complexity, fig-admm-conv, fig-stability, fig-admm-acc, fig-scp, fig-2d-toy, fig-landscapes,
        fig-adv-regression, fig-learning-curves, all)
  convexnn bench cvxopt|torch|accuracy|all [flags]
  convexnn version`

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, usage)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	var err error
	switch os.Args[1] {
	case "notebooks":
		err = notebooks(ctx, os.Args[2:])
	case "solve":
		err = solveCommand(ctx, os.Args[2:], os.Stdout)
	case "attack":
		err = attackCommand(ctx, os.Args[2:], os.Stdout)
	case "data":
		err = dataCommand(ctx, os.Args[2:], os.Stdout)
	case "predict":
		err = predictCommand(ctx, os.Args[2:], os.Stdout)
	case "reproduce":
		err = reproduceCommand(ctx, os.Args[2:], os.Stdout)
	case "bench":
		err = benchCommand(ctx, os.Args[2:], os.Stdout)
	case "version":
		v := "(devel)"
		if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
			v = bi.Main.Version
		}
		fmt.Println("convexnn", v)
	case "-h", "-help", "--help", "help":
		fmt.Println(usage)
	default:
		err = fmt.Errorf("unknown command %q\n%s", os.Args[1], usage)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "convexnn:", err)
		var ue usageError
		if errors.As(err, &ue) {
			os.Exit(2)
		}
		os.Exit(1)
	}
}

func notebooks(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("notebooks", flag.ContinueOnError)
	out := fs.String("out", "out/notebooks", "directory for executed notebooks and HTML")
	size := fs.String("size", "small", "problem size: small (seconds) or paper (the paper's experiments)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	repo, err := checkout.Root()
	if err != nil {
		return err
	}
	list := fs.Args()
	if len(list) == 0 {
		if list, err = nbrun.List(filepath.Join(repo, "notebooks")); err != nil {
			return err
		}
	}
	failed := 0
	for _, nb := range list {
		fmt.Fprintf(os.Stderr, "executing %s (size %s) ...\n", nb, *size)
		res, err := nbrun.Execute(ctx, nb, nbrun.Options{Repo: repo, OutDir: *out, Size: *size})
		if err != nil {
			return err
		}
		for _, e := range res.Errors {
			fmt.Fprintln(os.Stderr, e.Error())
		}
		failed += len(res.Errors)
		fmt.Fprintf(os.Stderr, "  %s: %d failed cells, %.1f s → %s, %s\n", filepath.Base(nb), len(res.Errors), res.Duration.Seconds(), res.Executed, res.HTML)
	}
	if failed > 0 {
		return fmt.Errorf("%d notebook cells failed", failed)
	}
	return nil
}

// quietFlags returns a flag set for a subcommand that reports parse errors
// only as its returned error (main prints them with the usage).
func quietFlags(name string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	return fs
}
