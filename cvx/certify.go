package cvx

import (
	"context"
	"errors"
	"fmt"
	"html"
	"math"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/convexnn/convexnn/plots"
	"github.com/convexnn/convexnn/solvers/scp"
)

// Certify configures the paper's Algorithm "iterative sampling of
// hidden-layer weights" (appendix "SCP-based convex training"): start from
// N0 neurons uniform on the unit sphere, solve the sampled program eq. (SCP2)
// (squared loss) to the duality gap, recover the dual v = y − Hα, draw N1
// fresh neurons, and stop when the Hoeffding bound on the probability that a
// fresh neuron violates the dual constraint |vᵀ(Xu)_+| ≤ β,
//
//	θ ≤ Z̄ + √(log(1/ξ)/(2·N1))   with probability ≥ 1 − ξ,
//
// is at most Psi; otherwise add the violating neurons and repeat. (The paper
// prints the bound without the square root, which is not a valid confidence
// bound; the table shows both.)
type Certify struct {
	N0, N1    int     // initial neurons; fresh neurons drawn per round
	Psi, Xi   float64 // target violation probability ψ; confidence 1 − ξ
	MaxRounds int     // 0 means 20
	AddAll    bool    // add all N1 fresh neurons instead of the violators
	Seed      uint64
	// GapTol is the relative duality gap each round's FISTA solve reaches
	// (0 means 1e-9); MaxIter caps its iterations (0 means 200000). A
	// looser solve is faster and its dual v less exact, which the violation
	// test absorbs only to its relative slack 1e-6: keep GapTol small when
	// the certificate matters.
	GapTol  float64
	MaxIter int
}

// Certificate is the outcome of SampleIteratively.
type Certificate struct {
	Options    Certify
	Rounds     []scp.Round
	Certified  bool
	StopReason string  // certified, max-rounds or canceled
	Guidance   float64 // the paper's sample size min{(n+1)/(ψξ) − 1, (2/ξ)(n+1 − log ψ)}
	net        *Network
}

// SampleIteratively runs iterative sampling on a problem with the squared
// loss (the problem's own SampleNeurons and patterns are not used), showing
// each round live. Interrupting the cell returns the rounds finished so far
// with an error wrapping ErrInterrupted.
func SampleIteratively(p *Problem, c Certify) (*Certificate, error) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return SampleIterativelyContext(ctx, p, c)
}

// SampleIterativelyContext is SampleIteratively with cancellation through ctx.
func SampleIterativelyContext(ctx context.Context, p *Problem, c Certify) (*Certificate, error) {
	if err := p.Err(); err != nil {
		report(err)
		return nil, err
	}
	if p.loss != Squared {
		err := fmt.Errorf("cvx: iterative sampling recovers the dual of the squared-loss program (v = y − Hα); the problem has the %s loss", p.loss)
		report(err)
		return nil, err
	}
	x := p.design()
	n, _ := x.Dims()
	cert := &Certificate{Options: c}
	g, err := scp.SampleSizeGuidance(n, c.Psi, c.Xi)
	if err != nil {
		report(err)
		return nil, err
	}
	cert.Guidance = g
	var live *Progress
	if InNotebook() {
		live = NewProgress("iterative sampling")
	}
	o := scp.IterativeOptions{N0: c.N0, N1: c.N1, Psi: c.Psi, Xi: c.Xi, MaxRounds: c.MaxRounds, AddAll: c.AddAll, Seed: c.Seed, GapTol: c.GapTol, MaxIter: c.MaxIter,
		OnRound: func(r scp.Round) {
			cert.Rounds = append(cert.Rounds, r)
			line := fmt.Sprintf("round %d: %d neurons, objective %.6g, %d/%d fresh neurons violate, bound %.4f (ψ = %g)", r.Round, r.Neurons, r.Objective, r.Violations, c.N1, r.Bound, c.Psi)
			if live != nil {
				live.Update(line, cert.Figure)
			} else {
				fmt.Fprintln(stderr, line)
			}
		}}
	res, err := scp.Iterative(ctx, x, p.y, p.beta, o)
	if res != nil {
		cert.Certified, cert.StopReason = res.Certified, res.StopReason
		if res.U != nil {
			cert.net, _ = scp.Network(res.U, res.Alpha, p.bias)
		}
	}
	if err != nil {
		if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
			err = fmt.Errorf("cvx: iterative sampling %w after %d rounds", ErrInterrupted, len(cert.Rounds))
		}
		report(err)
		return cert, err
	}
	if live != nil {
		live.Done(cert.summary(), cert.Figure)
	}
	return cert, nil
}

func (c *Certificate) summary() string {
	if len(c.Rounds) == 0 {
		return "iterative sampling: no rounds"
	}
	r := c.Rounds[len(c.Rounds)-1]
	verdict := "not certified"
	if c.Certified {
		// Each round's bound holds with probability ≥ 1 − ξ; stopping at the
		// first certified round of R makes the union bound 1 − Rξ.
		verdict = fmt.Sprintf("certified: a fresh neuron lowers the objective with probability ≤ %g, with confidence ≥ %g for this round (≥ %g over all %d rounds, union bound)",
			c.Options.Psi, 1-c.Options.Xi, math.Max(0, 1-float64(len(c.Rounds))*c.Options.Xi), len(c.Rounds))
	}
	return fmt.Sprintf("iterative sampling: %s after %d rounds (%s), %d neurons (theorem SCP's guidance: %.0f), objective %.6g", verdict, len(c.Rounds), c.StopReason, r.Neurons, c.Guidance, r.Objective)
}

// Network returns the network of the last round: the kept neurons with
// non-zero output weight.
func (c *Certificate) Network() (*Network, error) {
	if c == nil || c.net == nil {
		return nil, errors.New("cvx: no certificate network (the run stopped before its first round)")
	}
	return c.net, nil
}

// PaperBound is the bound as printed in the paper, Z̄ + log(1/ξ)/(2N1),
// without the square root: shown for comparison only.
func (c *Certificate) PaperBound(r scp.Round) float64 {
	return r.Zbar + math.Log(1/c.Options.Xi)/(2*float64(c.Options.N1))
}

// Figure draws, per round, the fraction Z̄ of violating fresh neurons, the
// Hoeffding bound, the paper's uncorrected bound and the target ψ.
func (c *Certificate) Figure() (*plots.Figure, error) {
	z := plots.Series{Name: "violating fraction Z̄"}
	b := plots.Series{Name: "bound Z̄ + √(log(1/ξ)/2N₁)"}
	pb := plots.Series{Name: "paper's bound (no √)"}
	psi := plots.Series{Name: "ψ"}
	for _, r := range c.Rounds {
		x := float64(r.Round)
		z.X, z.Y = append(z.X, x), append(z.Y, r.Zbar)
		b.X, b.Y = append(b.X, x), append(b.Y, r.Bound)
		pb.X, pb.Y = append(pb.X, x), append(pb.Y, c.PaperBound(r))
		psi.X, psi.Y = append(psi.X, x), append(psi.Y, c.Options.Psi)
	}
	return plots.Line(plots.LineOptions{Title: "Iterative sampling: certificate by round", XLabel: "round", YLabel: "probability"}, z, b, pb, psi)
}

// Table returns the rounds as an HTML table.
func (c *Certificate) Table() string {
	var sb strings.Builder
	sb.WriteString(`<table style="border-collapse:collapse;font-family:monospace;font-size:12px"><tr>`)
	for _, h := range []string{"round", "neurons", "objective", "duality gap", "FISTA its", "active", "violators", "Z̄", "bound", "paper's bound", "added", "s"} {
		sb.WriteString(`<th style="padding:2px 8px;border-bottom:1px solid #999">` + html.EscapeString(h) + `</th>`)
	}
	sb.WriteString("</tr>")
	for _, r := range c.Rounds {
		sb.WriteString("<tr>")
		for _, v := range []string{
			fmt.Sprint(r.Round), fmt.Sprint(r.Neurons), fmt.Sprintf("%.6g", r.Objective), fmt.Sprintf("%.1e", r.Gap),
			fmt.Sprint(r.Iters), fmt.Sprint(r.Nonzeros), fmt.Sprintf("%d/%d", r.Violations, c.Options.N1),
			fmt.Sprintf("%.4f", r.Zbar), fmt.Sprintf("%.4f", r.Bound), fmt.Sprintf("%.4f", c.PaperBound(r)),
			fmt.Sprint(r.Added), fmt.Sprintf("%.2f", r.Seconds),
		} {
			sb.WriteString(`<td style="padding:2px 8px;text-align:right">` + v + `</td>`)
		}
		sb.WriteString("</tr>")
	}
	sb.WriteString("</table><p style=\"font-family:monospace;font-size:12px\">" + html.EscapeString(c.summary()) + "</p>")
	return sb.String()
}

// Show displays the table and the chart in the notebook.
func (c *Certificate) Show() error {
	if !InNotebook() {
		return nil
	}
	display(c.Table())
	return showFigure(c.Figure())
}
