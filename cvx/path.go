package cvx

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"slices"
	"time"

	"github.com/convexnn/convexnn/internal/floatbits"
	"github.com/convexnn/convexnn/plots"
	"github.com/convexnn/convexnn/solvers/gated"
	"gonum.org/v1/gonum/mat"
)

// PathOptions describe a regularization path of a gated problem.
type PathOptions struct {
	// Betas is the grid, solved in the order given (largest first is
	// fastest: each solve starts from the one before). Empty: Points values
	// spaced geometrically from β_max (the smallest β whose optimum is the
	// zero network) down to MinRatio·β_max.
	Betas    []float64
	Points   int     // 20 when 0
	MinRatio float64 // 1e-3 when 0
	// Solve controls each point's solve (its Start is the path's own).
	Solve GatedOptions
	// ValX and ValY, when set, give every point a validation accuracy.
	ValX *mat.Dense
	ValY []float64
	// OnPoint, when set, is called after every point is solved and saved.
	OnPoint func(PathPoint)
}

// PathPoint is one solved β of a path.
type PathPoint struct {
	Beta       float64 `json:"beta"`
	Objective  float64 `json:"objective"`
	Lower      float64 `json:"lower_bound"`
	Gap        float64 `json:"certified_gap"`
	Status     string  `json:"status"`
	Active     int     `json:"active_gates"`
	Iterations int     `json:"iterations"`
	Seconds    float64 `json:"seconds"`
	Train      float64 `json:"train_accuracy"`
	// Validation is the validation accuracy, −1 without a validation set.
	Validation float64 `json:"validation_accuracy"`
}

// PathResult is a path: its points in grid order and the network of the
// last one solved.
type PathResult struct {
	Points  []PathPoint
	Network *gated.Network
}

// pathFile is a path's saved progress: its finished points and the last
// point's weights, from which it continues.
type pathFile struct {
	Format      string      `json:"format"`
	Version     int         `json:"version"`
	Fingerprint string      `json:"fingerprint"`
	Betas       []float64   `json:"betas"`
	Points      []PathPoint `json:"points"`
	// Weights are the last point's blocks, d×c each, row-major.
	Weights [][]float64 `json:"weights"`
	// Checksum is the CRC-32C of the file's JSON with Checksum 0: a
	// damaged digit is refused, not read as a result or a warm start.
	Checksum uint32 `json:"checksum"`
}

// sum returns the file's checksum (see Checksum).
func (f *pathFile) sum() (uint32, error) {
	c := *f
	c.Checksum = 0
	b, err := json.Marshal(&c)
	if err != nil {
		return 0, err
	}
	return floatbits.CRC32C(0, b), nil
}

const pathFormat = "convexnn-path"

// pathVersion is the version of the path file format (2: the problem's
// fingerprint hashes the data with CRCs instead of SHA-256; 3: the file's
// checksum).
const pathVersion = 3

// Path solves the gated problem's regularization path (see PathOptions),
// showing it live, and keeps its progress in StateDir under name: running
// the cell again continues after the last finished point (a point cut
// short is solved again from the point before it).
func Path(name string, p *Problem, o PathOptions) (*PathResult, error) {
	return RunDir(StateDir()).Path(context.Background(), name, p, o)
}

// Path is the package's Path with the progress kept in d and a context:
// cancelling it keeps every finished point.
func (d RunDir) Path(ctx context.Context, name string, p *Problem, o PathOptions) (*PathResult, error) {
	res, err := d.path(ctx, name, p, o)
	if err != nil {
		report(err)
	}
	return res, err
}

func (d RunDir) path(ctx context.Context, name string, p *Problem, o PathOptions) (*PathResult, error) {
	path, err := d.statePath(name+".path", ".json")
	if err != nil {
		return nil, err
	}
	if err := p.Err(); err != nil {
		return nil, err
	}
	if o.ValX != nil || o.ValY != nil {
		if o.ValX == nil {
			return nil, errors.New("cvx: Path: ValY without ValX")
		}
		vn, vd := o.ValX.Dims()
		if _, d := p.x.Dims(); vd != d || vn != len(o.ValY) {
			return nil, fmt.Errorf("cvx: Path: validation set of %d×%d with %d labels; the problem has %d features", vn, vd, len(o.ValY), d)
		}
		// The validation labels are the problem's kind: class indices, ±1
		// for a binary classifier, any finite value for regression.
		if err := validateData(o.ValX, o.ValY, p.classify && p.classes == 0); err != nil {
			return nil, fmt.Errorf("cvx: Path: validation set: %w", err)
		}
		if p.classes > 0 {
			if err := checkClassIndices("cvx: Path: validation set", o.ValY, p.classes); err != nil {
				return nil, err
			}
		}
	}
	if o.Solve.Seconds < 0 || math.IsNaN(o.Solve.Seconds) {
		return nil, fmt.Errorf("cvx: Path: Solve.Seconds = %v, need ≥ 0", o.Solve.Seconds)
	}
	prog, gv, err := p.GatedProgram()
	if err != nil {
		return nil, err
	}
	betas := slices.Clone(o.Betas)
	if len(betas) == 0 {
		pts, ratio := o.Points, o.MinRatio
		if pts == 0 {
			pts = 20
		}
		if ratio == 0 {
			ratio = 1e-3
		}
		if pts < 2 || !(ratio > 0 && ratio < 1) {
			return nil, fmt.Errorf("cvx: Path: %d points down to %v·β_max: need ≥ 2 points and a ratio in (0, 1)", pts, ratio)
		}
		bmax, err := prog.BetaMax()
		if err != nil {
			return nil, err
		}
		for k := 0; k < pts; k++ {
			betas = append(betas, bmax*math.Pow(ratio, float64(k)/float64(pts-1)))
		}
	}
	for k, b := range betas {
		if !(b > 0) || math.IsInf(b, 0) {
			return nil, fmt.Errorf("cvx: Path: β[%d] = %v, need 0 < β < ∞", k, b)
		}
	}
	fp := pathFingerprint(p, o.Solve)
	st := &pathFile{Format: pathFormat, Version: pathVersion, Fingerprint: fp, Betas: betas}
	var start gated.Weights
	if raw, err := os.ReadFile(path); err == nil {
		var old pathFile
		if err := json.Unmarshal(raw, &old); err != nil || old.Format != pathFormat || old.Version != pathVersion {
			return nil, fmt.Errorf("cvx: saved path %s is corrupt or of another version: remove it to start afresh", path)
		}
		if sum, err := old.sum(); err != nil || sum != old.Checksum {
			return nil, fmt.Errorf("cvx: saved path %s is corrupt (checksum mismatch: damaged): remove it to start afresh", path)
		}
		if old.Fingerprint != fp || !slices.Equal(old.Betas, betas) {
			return nil, fmt.Errorf("cvx: saved path %s was made for another problem, β grid or solver options: use another name or remove it", path)
		}
		st = &old
		if start, err = pathWeights(st.Weights, prog); err != nil {
			return nil, fmt.Errorf("cvx: saved path %s: %w", path, err)
		}
		if len(st.Points) > 0 {
			note(fmt.Sprintf("cvx: path %q continues after %d of %d points", name, len(st.Points), len(betas)))
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("cvx: reading saved path: %w", err)
	}
	show := NewProgress("path " + name)
	figs := func() (*plots.Figure, error) { return PathFigure(&PathResult{Points: st.Points}) }
	var net *gated.Network
	if start != nil {
		if net, err = gated.NewNetwork(gv, start, p.bias); err != nil {
			return nil, err
		}
	}
	carry := &gated.KernelPath{} // the kernel method's state from point to point
	for k := len(st.Points); k < len(betas); k++ {
		if err := ctx.Err(); err != nil {
			return &PathResult{Points: st.Points, Network: net}, err
		}
		prog.Beta = betas[k]
		opt := gated.Options{Tol: o.Solve.Tol, MaxIter: o.Solve.MaxIter, Rank: o.Solve.Rank, Start: start, Path: carry}
		t0 := time.Now()
		pctx, cancel := ctx, context.CancelFunc(func() {})
		if o.Solve.Seconds > 0 {
			// Each point's own time limit; reaching it is not an error.
			pctx, cancel = context.WithTimeout(ctx, time.Duration(o.Solve.Seconds*float64(time.Second)))
		}
		res, err := solveGatedProgram(pctx, prog, o.Solve, opt)
		cancel()
		if res == nil || (err != nil && ctx.Err() != nil) {
			return &PathResult{Points: st.Points, Network: net}, err
		}
		if err != nil && !errors.Is(err, context.DeadlineExceeded) {
			return &PathResult{Points: st.Points, Network: net}, err
		}
		if net, err = gated.NewNetwork(gv, res.W, p.bias); err != nil {
			return nil, err
		}
		pt := PathPoint{Beta: betas[k], Objective: res.Objective, Lower: res.Cert.Lower, Gap: res.Cert.Gap,
			Status: gatedStatus(res, o.Solve.Tol, err != nil), Active: net.Width(), Iterations: res.Iterations, Seconds: time.Since(t0).Seconds(), Validation: -1}
		if pt.Train, err = ClassAccuracy(net, p.x, p.y); err != nil {
			return nil, err
		}
		if o.ValX != nil {
			if pt.Validation, err = ClassAccuracy(net, o.ValX, o.ValY); err != nil {
				return nil, err
			}
		}
		st.Points = append(st.Points, pt)
		start = res.W
		st.Weights = make([][]float64, len(res.W))
		for i, b := range res.W {
			st.Weights[i] = slices.Clone(b.RawMatrix().Data)
		}
		if st.Checksum, err = st.sum(); err != nil {
			return nil, err
		}
		data, err := json.Marshal(st)
		if err != nil {
			return nil, err
		}
		if err := writeAtomic(path, data); err != nil {
			return nil, err
		}
		if o.OnPoint != nil {
			o.OnPoint(pt)
		}
		show.Update(fmt.Sprintf("β = %.3g (%d of %d): objective %.6g, certified gap %.1e, %d gates active, %.1fs", pt.Beta, k+1, len(betas), pt.Objective, pt.Gap, pt.Active, pt.Seconds), figs)
	}
	show.Done(fmt.Sprintf("path of %d points", len(st.Points)), figs)
	return &PathResult{Points: st.Points, Network: net}, nil
}

// solveGatedProgram runs the method o asks for (GatedAuto:
// gated.Problem.Choose) on a gated program.
func solveGatedProgram(ctx context.Context, prog *gated.Problem, o GatedOptions, opt gated.Options) (*gated.Result, error) {
	m, ok := map[GatedMethod]gated.Method{GatedAuto: gated.Auto, GatedProxGradient: gated.ProxGradient, GatedNewton: gated.Newton, GatedKernel: gated.Kernel}[o.Method]
	if !ok {
		return nil, fmt.Errorf("cvx: GatedOptions{Method: %d}: unknown method", o.Method)
	}
	res, err := gated.SolveWith(ctx, prog, m, opt)
	if err != nil && res == nil {
		return nil, fmt.Errorf("cvx: %w", err)
	}
	return res, err
}

// gatedStatus says why a gated solve stopped: its gap reached tol (1e-6
// when 0), its time limit, or its step limit.
func gatedStatus(res *gated.Result, tol float64, timedOut bool) string {
	if tol == 0 {
		tol = 1e-6
	}
	switch {
	case res.Cert.Gap <= tol:
		return "certified"
	case timedOut:
		return "time limit"
	}
	return "iteration limit"
}

// pathWeights rebuilds saved weights for the program (nil when none).
func pathWeights(raw [][]float64, prog *gated.Problem) (gated.Weights, error) {
	if raw == nil {
		return nil, nil
	}
	_, d, np, c := prog.Dims()
	if len(raw) != np {
		return nil, fmt.Errorf("%d weight blocks for %d gates", len(raw), np)
	}
	w := make(gated.Weights, np)
	for i, b := range raw {
		if len(b) != d*c {
			return nil, fmt.Errorf("weight block %d has %d entries, want %d", i, len(b), d*c)
		}
		w[i] = mat.NewDense(d, c, slices.Clone(b))
	}
	return w, nil
}

// pathFingerprint identifies a path's problem (all but β) and solver
// options.
func pathFingerprint(p *Problem, o GatedOptions) string {
	q := *p
	q.beta = 1
	h := sha256.Sum256([]byte(fmt.Sprintf("%s|%v|%d|%d|%d|%v|%d|%d", q.fingerprint("gated-path"), o.Tol, o.MaxIter, o.Rank, o.Method, q.groups, q.classes, b2i(q.gated))))
	return fmt.Sprintf("%x", h[:16])
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// PathFigure charts a path against log₁₀ β: the training and validation
// accuracy and the share of active gates (%), with the certified gap of
// each point in its tooltip series.
func PathFigure(r *PathResult) (*plots.Figure, error) {
	if r == nil || len(r.Points) == 0 {
		return nil, errors.New("cvx: PathFigure: no points")
	}
	train := plots.Series{Name: "training accuracy (%)"}
	val := plots.Series{Name: "validation accuracy (%)"}
	act := plots.Series{Name: "active gates (% of the largest count)"}
	most := 1
	for _, pt := range r.Points {
		most = max(most, pt.Active)
	}
	for _, pt := range r.Points {
		x := math.Log10(pt.Beta)
		train.X, train.Y = append(train.X, x), append(train.Y, 100*pt.Train)
		if pt.Validation >= 0 {
			val.X, val.Y = append(val.X, x), append(val.Y, 100*pt.Validation)
		}
		act.X, act.Y = append(act.X, x), append(act.Y, 100*float64(pt.Active)/float64(most))
	}
	series := []plots.Series{train}
	if len(val.X) > 0 {
		series = append(series, val)
	}
	series = append(series, act)
	return plots.Line(plots.LineOptions{Title: "Regularization path", XLabel: "log₁₀ β", YLabel: "%"}, series...)
}

// PathTable displays a path's points as a table.
func PathTable(r *PathResult) error {
	if r == nil {
		return errors.New("cvx: PathTable: no path")
	}
	head := []string{"β", "objective", "certified gap", "active gates", "steps", "seconds", "training accuracy", "validation accuracy"}
	var rows [][]string
	for _, pt := range r.Points {
		v := "–"
		if pt.Validation >= 0 {
			v = fmt.Sprintf("%.2f %%", 100*pt.Validation)
		}
		rows = append(rows, []string{fmt.Sprintf("%.3g", pt.Beta), fmt.Sprintf("%.6g", pt.Objective), fmt.Sprintf("%.1e", pt.Gap),
			fmt.Sprint(pt.Active), fmt.Sprint(pt.Iterations), fmt.Sprintf("%.2f", pt.Seconds), fmt.Sprintf("%.2f %%", 100*pt.Train), v})
	}
	return Table("Regularization path", head, rows)
}

// PathChart displays PathFigure.
func PathChart(r *PathResult) error { return showFigure(PathFigure(r)) }
