package main

import (
	"context"
	"io"
	"os"
	"runtime/pprof"
	"strings"

	"github.com/convexnn/convexnn/paper"
)

// reproduceCommand is `convexnn reproduce`: it parses the flags and runs
// paper.Reproduce.
func reproduceCommand(ctx context.Context, args []string, stdout io.Writer) error {
	fs := quietFlags("reproduce")
	size := fs.String("size", "paper", "paper (the paper's sizes) or small (every experiment in seconds)")
	out := fs.String("out", "out", "output directory: writes <out>/<experiment>/result.json and report.html")
	runs := fs.Int("runs", 1, "independent runs (seeds 1 … N) per method; the table shows means")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the whole run to this file (go tool pprof)")
	if err := fs.Parse(args); err != nil {
		return badInput("reproduce: %v\n%s", err, reproduceUsage())
	}
	if *size != string(paper.SizePaper) && *size != string(paper.SizeSmall) {
		return badInput("reproduce: -size %q: want paper or small", *size)
	}
	if *runs < 1 {
		return badInput("reproduce: -runs %d: need at least one run", *runs)
	}
	names := fs.Args()
	if len(names) == 0 {
		return badInput("reproduce: name the experiments (or all): %s\n%s", strings.Join(paper.Names(), ", "), reproduceUsage())
	}
	for _, n := range names {
		if strings.HasPrefix(n, "-") {
			return badInput("reproduce: flag %s after the experiment names: put flags first\n%s", n, reproduceUsage())
		}
	}
	todo, err := paper.Resolve(names)
	if err != nil {
		return badInput("reproduce: %v", err)
	}
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	return paper.Reproduce(ctx, todo, paper.Size(*size), *runs, *out, stdout)
}

func reproduceUsage() string {
	return `usage: convexnn reproduce [-size paper|small] [-out out] [-runs N] [-cpuprofile file] <experiment>... (or all)
experiments: ` + strings.Join(paper.Names(), ", ")
}
