package ipm

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/convexnn/convexnn/solvers"
)

// MemoryError is a refusal to solve a program whose matrices would not fit
// in the memory limit: nothing large has been allocated when it is
// returned.
type MemoryError struct {
	Need, Limit int64  // bytes: the estimate and the limit (Options.MaxMemory)
	What        string // the dominant allocation
	Instead     string // a method that fits
}

func (e *MemoryError) Error() string {
	return fmt.Sprintf("ipm: this program needs about %s (%s), more than the limit of %s (Options.MaxMemory, by default 80%% of the available memory): %s",
		bytesText(e.Need), e.What, bytesText(e.Limit), e.Instead)
}

func bytesText(b int64) string {
	switch {
	case b >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(b)/(1<<30))
	case b >= 1<<20:
		return fmt.Sprintf("%.0f MiB", float64(b)/(1<<20))
	}
	return fmt.Sprintf("%d B", b)
}

// MemoryEstimate returns the bytes Solve allocates for p's matrices (the
// structured factor of the normal matrix, the scaled rows of the coupling,
// the method's vectors), and the dominant one in words. For an X with
// columns that are zero in every row it is an upper bound: Solve leaves
// them out. Solve also keeps the coupling's Gram matrix, (dP)² floats
// more, when that fits too.
func MemoryEstimate(p *solvers.Program) (int64, string) {
	n, d, np := p.Dims()
	return netConeMemory(n, n, d, np)
}

// netConeMemory is MemoryEstimate for nr pattern rows per group and n
// samples (SolvePooled: nr distinct rows of its stacked matrix).
func netConeMemory(nr, n, d, np int) (int64, string) {
	dp := float64(d * np)
	nf, rf := float64(n), float64(nr)
	m := float64(2*np)*rf + float64(2*n) + float64(2*np*(d+1))
	floats := 3*dp*dp + 2*dp*nf + 4*float64(np)*rf + float64(d)*(rf+float64(d)) + 2*float64(d*d*np) + 30*m
	return int64(8 * floats), fmt.Sprintf("a dense dP×dP = %d×%d factor and dP×n = %d×%d rows", d*np, d*np, d*np, n)
}

// RobustMemoryEstimate returns the bytes SolveRobust allocates for the
// robust program of p and pert: the dense dP×dP reduced normal matrix and
// its factor, the local blocks of the groups and samples, the samples'
// d×d blocks and their sums over pattern pairs (see robustNet).
func RobustMemoryEstimate(p *solvers.Program, pert solvers.Perturbation) (int64, string) {
	floats, dp := robustNetFloats(p, pert)
	n, d, np := p.Dims()
	return int64(8 * floats), fmt.Sprintf("a dense dP×dP = %d×%d factor, %d samples' %d×%d blocks and their sums over %d pattern pairs", dp, dp, n, d, d, np*(np+1)/2)
}

// memoryLimit resolves Options.MaxMemory (DefaultMemoryLimit for 0).
func (o Options) memoryLimit() int64 {
	if o.MaxMemory > 0 {
		return o.MaxMemory
	}
	return DefaultMemoryLimit()
}

// DefaultMemoryLimit is the limit of a zero Options.MaxMemory: 80% of
// MemAvailable in /proc/meminfo, or 16 GiB where that is unknown.
func DefaultMemoryLimit() int64 {
	if avail := availableMemory(); avail > 0 {
		return avail / 5 * 4
	}
	return 16 << 30
}

func availableMemory() int64 {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) >= 2 && fields[0] == "MemAvailable:" {
			kb, err := strconv.ParseInt(fields[1], 10, 64)
			if err == nil {
				return kb << 10
			}
		}
	}
	return 0
}

// fits refuses an estimate above the limit with a MemoryError.
func (o Options) fits(need int64, what, instead string) error {
	if limit := o.memoryLimit(); need > limit {
		return &MemoryError{Need: need, Limit: limit, What: what, Instead: instead}
	}
	return nil
}

// Fits reports whether the interior-point method solves p (Solve, or
// SolveRobust when pert.Eps > 0) within DefaultMemoryLimit: a squared or
// hinge loss, or any loss of a robust program, whose estimate is at most
// the limit.
func Fits(p *solvers.Program, pert solvers.Perturbation) bool {
	if pert.Eps > 0 {
		need, _ := RobustMemoryEstimate(p, pert)
		return need <= DefaultMemoryLimit()
	}
	if p.Loss != solvers.SquaredLoss && p.Loss != solvers.HingeLoss {
		return false
	}
	need, _ := MemoryEstimate(p)
	return need <= DefaultMemoryLimit()
}

// Method is a method of this package that solves a program to a certified
// gap.
type Method int

const (
	// NoMethod: none fits (a first-order method, ADMM, is left).
	NoMethod Method = iota
	// InteriorPoint: Solve or SolveRobust.
	InteriorPoint
	// ProximalNewton: Newton.
	ProximalNewton
	// PatternWorkingSet: WorkingSet (interior-point solves of the program
	// restricted to a growing set of patterns).
	PatternWorkingSet
)

// MethodFor is the rule by which the command line's -solver auto and
// cvx.Optimum choose: the interior-point method when it fits (Fits: the
// squared and hinge losses, and every loss of a robust program), and of it
// the working set over patterns when workingSetPays; the proximal Newton
// method for a standard program with the BCE or logistic loss whose
// interior-point solves fit (MemoryEstimate); else NoMethod.
func MethodFor(p *solvers.Program, pert solvers.Perturbation) Method {
	switch {
	case Fits(p, pert) && workingSetPays(p, pert):
		return PatternWorkingSet
	case Fits(p, pert):
		return InteriorPoint
	case pert.Eps == 0 && p.Loss.Smooth():
		if need, _ := MemoryEstimate(p); need <= DefaultMemoryLimit() {
			return ProximalNewton
		}
	}
	return NoMethod
}

// workingSetPays reports whether WorkingSet beats the interior-point method
// on the whole program: robust programs with the squared or hinge loss and
// the ℓ∞ set whose whole-program iteration costs at least 10⁹ flops (the
// dP×dP Cholesky factorization, (dP)³/3, and the samples' sums over pattern
// pairs, P²nd²/2). Their optima use few of the patterns, and each zero
// group of the whole program, with all n robust rows active at zero, costs
// the interior-point method iterations; small programs, the ℓ₂ set and
// standard programs (whose optima use most patterns) gain nothing
// (docs/performance.md, "fourth round").
func workingSetPays(p *solvers.Program, pert solvers.Perturbation) bool {
	if pert.Eps <= 0 || pert.Norm.Canonical() != solvers.LInf || (p.Loss != solvers.SquaredLoss && p.Loss != solvers.HingeLoss) {
		return false
	}
	n, d, np := p.Dims()
	dp := float64(d * np)
	return dp*dp*dp/3+float64(np*np)*float64(n)*float64(d*d)/2 >= 1e9
}
