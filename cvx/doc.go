// Package cvx is the notebook-facing facade of convexnn: problem builders,
// training runs that continue from cell to cell, and displayers that render
// interactive charts inline in GoNB notebooks.
//
// A typical notebook:
//
//	prob := cvx.Classify(X, y).Beta(1e-3).Bias().SampleNeurons(300, 1)
//	run := cvx.Start("quickstart", prob, cvx.FISTA{})   // a fresh run
//	cvx.Check(run.Iterate(100))                          // live chart, state saved
//	// … next cell, a new process:
//	run := cvx.Resume("quickstart", prob, cvx.FISTA{})  // continues at iteration 100
//
// GoNB runs every cell as a new process, so a Run lives in a state file under
// the notebook's directory (see StateDir), written atomically after finished
// steps and when the cell is interrupted.
package cvx
