// Package paper is the paper's experiments as a library, shared by
// `convexnn reproduce`, `convexnn bench` and the notebooks: every
// experiment's settings at each size and the paper's own table (Experiment,
// Settings, Lookup), the methods of its rows (Settings.Methods), a table run
// that a notebook can build cell by cell and the command line runs at once
// (Table, Reproduce), the evaluation (clean and under FGSM and PGD), the
// statistics over runs (MeanSD), the reports (text and HTML tables, charts),
// the sweeps of fig. ADMMCom, the 1-D regression of figs. te and exp_sl
// (AdvRegression), and the side-by-side benchmarks against Debian's cvxopt
// (BenchCVXOPT) and PyTorch (BenchTorch).
//
//	t, _ := paper.NotebookTable(ctx, "table5-cifar-adv", paper.NotebookSize(), true) // or StartTable, ResumeTable
//	t.Train(ctx, os.Stdout, "GD-std", "GD-PGD")   // rows cell by cell; results saved as they finish
//	res := t.Result()                            // means over runs, the paper's table beside
package paper
