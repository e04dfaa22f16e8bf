// Package cnn trains two-layer convolutional ReLU networks with global
// average or max pooling through their convex programs (the appendix
// "Convex Adversarial Training for ConvNets", after Ergen and Pilanci,
// "Implicit convex regularizers of CNN architectures", ICLR 2021):
//
//	f(x) = Σ_j α_j pool_k (x_kᵀu_j)_+,
//
// where x_k (k = 1 … K) are the patches of the image x that the filters u_j
// (C·s·s entries) see, and pool is the mean over k (average pooling) or the
// maximum (max pooling). Both programs are instances of eq. (ct_general)
// (package general), with one group per sampled pattern:
//
//	average:  F_i = (1/K) Σ_k D_ik X_k,  G_i = [(2D_ik − I) X_k]_k
//	max:      F_i = D_i X_{a_i},         G_i = [(2D_i − I) X_{a_i};  X_{a_i} − X_k for k ≠ a_i(n)]
//
// where X_k stacks patch k of every image, D_ik are the signs of the
// filter's responses on patch k, a_i(n) the patch where its response on
// image n is largest and D_i the sign of that largest response. At every
// feasible point the recovered network (u = v_i/√‖v_i‖, α = ±√‖v_i‖) has the
// convex objective.
package cnn

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"

	"github.com/convexnn/convexnn/solvers"
	"github.com/convexnn/convexnn/solvers/general"
	"gonum.org/v1/gonum/floats"
	"gonum.org/v1/gonum/mat"
)

// Shape is an image's channels, height and width; a data row holds one image
// in CHW order (as data.Set.Shape).
type Shape struct{ C, H, W int }

// Conv is the filters' geometry: Size×Size over all channels, moved by
// Stride, over the image padded with Pad zeros on every side; with Bias
// every patch gets a last entry 1 (not a pixel: no perturbation moves it),
// so that each filter has a bias. Robust training needs it on images with
// blank patches: a filter without bias answers 0 on an all-zero patch, and
// a perturbation can move that answer to either sign, so the robust sign
// constraint forces it to zero.
type Conv struct {
	Size, Stride, Pad int
	Bias              bool
}

// Pooling is the second layer's pooling over the patches.
type Pooling int

const (
	// AvgPool averages the filter's rectified responses over the patches.
	AvgPool Pooling = iota
	// MaxPool takes their maximum.
	MaxPool
)

func (p Pooling) String() string {
	switch p {
	case AvgPool:
		return "average pooling"
	case MaxPool:
		return "max pooling"
	}
	return fmt.Sprintf("Pooling(%d)", int(p))
}

// Validate reports a geometry that does not fit the shape.
func (cv Conv) Validate(s Shape) error {
	if s.C < 1 || s.H < 1 || s.W < 1 {
		return fmt.Errorf("cnn: image shape %d×%d×%d (channels×height×width) must be positive", s.C, s.H, s.W)
	}
	if cv.Size < 1 || cv.Stride < 1 || cv.Pad < 0 {
		return fmt.Errorf("cnn: filter size %d and stride %d must be ≥ 1 and padding %d ≥ 0", cv.Size, cv.Stride, cv.Pad)
	}
	if cv.Pad >= cv.Size {
		return fmt.Errorf("cnn: padding %d with %d×%d filters: the padding must be smaller than the filter (corner patches would lie wholly in the padding)", cv.Pad, cv.Size, cv.Size)
	}
	if cv.Size > s.H+2*cv.Pad || cv.Size > s.W+2*cv.Pad {
		return fmt.Errorf("cnn: %d×%d filters do not fit %d×%d images padded by %d", cv.Size, cv.Size, s.H, s.W, cv.Pad)
	}
	return nil
}

// Positions returns the number of patch rows and columns.
func (cv Conv) Positions(s Shape) (rows, cols int) {
	return (s.H+2*cv.Pad-cv.Size)/cv.Stride + 1, (s.W+2*cv.Pad-cv.Size)/cv.Stride + 1
}

// Patches returns X_k (n × C·Size·Size, plus 1 with Bias) for the K patch
// positions, row-major over the positions; a patch's entries are in CHW
// order, padding zero, then the bias entry 1.
func Patches(x *mat.Dense, s Shape, cv Conv) ([]*mat.Dense, error) {
	if x == nil {
		return nil, errors.New("cnn: no data matrix")
	}
	if err := cv.Validate(s); err != nil {
		return nil, err
	}
	n, d := x.Dims()
	if d != s.C*s.H*s.W {
		return nil, fmt.Errorf("cnn: data rows have %d entries, images of shape %d×%d×%d have %d", d, s.C, s.H, s.W, s.C*s.H*s.W)
	}
	if err := solvers.CheckFinite("cnn: X", x); err != nil {
		return nil, err
	}
	pr, pc := cv.Positions(s)
	f := s.C * cv.Size * cv.Size
	if cv.Bias {
		f++
	}
	out := make([]*mat.Dense, 0, pr*pc)
	for a := 0; a < pr; a++ {
		for b := 0; b < pc; b++ {
			m := mat.NewDense(n, f, nil)
			for k := 0; k < n; k++ {
				img, row := x.RawRowView(k), m.RawRowView(k)
				e := 0
				for c := 0; c < s.C; c++ {
					for i := 0; i < cv.Size; i++ {
						for j := 0; j < cv.Size; j++ {
							h, w := a*cv.Stride+i-cv.Pad, b*cv.Stride+j-cv.Pad
							if h >= 0 && h < s.H && w >= 0 && w < s.W {
								row[e] = img[(c*s.H+h)*s.W+w]
							}
							e++
						}
					}
				}
				if cv.Bias {
					row[e] = 1
				}
			}
			out = append(out, m)
		}
	}
	return out, nil
}

// Problem is the convex program of a two-layer CNN on images X with labels
// Y: its patches and, once sampled, its patterns.
type Problem struct {
	Shape   Shape
	Conv    Conv
	Pool    Pooling
	X       *mat.Dense
	Y       []float64
	Loss    solvers.Loss
	Beta    float64
	Patches []*mat.Dense
	// Average pooling: Signs[i][k] is D_ik. Max pooling: Signs[i][0] is D_i
	// and Argmax[i][n] is a_i(n).
	Signs  [][]solvers.Pattern
	Argmax [][]int
	// MaxRobust selects max pooling's robust program (SolveRobust):
	// WinnerRows, the appendix's, by default.
	MaxRobust MaxRobustForm
}

// MaxRobustForm is the robust program of a max-pooling CNN.
type MaxRobustForm int

const (
	// WinnerRows is the appendix's program: each pattern's winning patch
	// must stay the winner, and its sign hold, on the whole ℓ∞ ball (robust
	// sign and winner rows); the network is then linear on the ball and the
	// worst-case loss exact.
	WinnerRows MaxRobustForm = iota
	// WinnerBound drops those rows and bounds the worst-case loss instead
	// (SolveRobust): a pattern (D_i, a_i) only gives the filters on the
	// favourable side of the margin the lower bound d·(x_aᵀu − ε‖P_aᵀu‖₁)
	// of max_k (x_kᵀu)_+ on the ball, which holds for every u, and the
	// filters on the other side enter by the upper bound
	// max_k (x_kᵀu + ε‖P_kᵀu‖₁)_+. Every point is feasible, and the
	// recovered network's worst loss on each ball is at most its term.
	WinnerBound
)

func (f MaxRobustForm) String() string {
	switch f {
	case WinnerRows:
		return "winner rows"
	case WinnerBound:
		return "winner bound"
	}
	return fmt.Sprintf("MaxRobustForm(%d)", int(f))
}

// New returns the problem without patterns (SamplePatterns sets them).
func New(x *mat.Dense, s Shape, cv Conv, pool Pooling, y []float64, loss solvers.Loss, beta float64) (*Problem, error) {
	if pool != AvgPool && pool != MaxPool {
		return nil, fmt.Errorf("cnn: unknown pooling %v", pool)
	}
	pt, err := Patches(x, s, cv)
	if err != nil {
		return nil, err
	}
	n, _ := x.Dims()
	if len(y) != n {
		return nil, fmt.Errorf("cnn: %d images but %d labels", n, len(y))
	}
	if err := loss.CheckLabels(y); err != nil {
		return nil, fmt.Errorf("cnn: %w", err)
	}
	if !(beta > 0) || math.IsInf(beta, 0) {
		return nil, fmt.Errorf("cnn: β = %v, need 0 < β < ∞", beta)
	}
	return &Problem{Shape: s, Conv: cv, Pool: pool, X: x, Y: y, Loss: loss, Beta: beta, Patches: pt}, nil
}

// Filter returns the number of a filter's entries, C·Size·Size.
func (p *Problem) Filter() int { _, f := p.Patches[0].Dims(); return f }

// AddPattern adds the patterns of the filter direction u and reports
// whether they are new.
func (p *Problem) AddPattern(u []float64) (bool, error) {
	if len(u) != p.Filter() {
		return false, fmt.Errorf("cnn: filter direction has %d entries, filters have %d", len(u), p.Filter())
	}
	n, _ := p.X.Dims()
	resp := make([][]float64, len(p.Patches))
	for k, xk := range p.Patches {
		resp[k] = make([]float64, n)
		mat.NewVecDense(n, resp[k]).MulVec(xk, mat.NewVecDense(len(u), u))
	}
	var signs []solvers.Pattern
	var arg []int
	if p.Pool == AvgPool {
		for k := range p.Patches {
			pat := make(solvers.Pattern, n)
			for m, v := range resp[k] {
				pat[m] = v >= 0
			}
			signs = append(signs, pat)
		}
	} else {
		arg = make([]int, n)
		pat := make(solvers.Pattern, n)
		for m := 0; m < n; m++ {
			best := 0
			for k := range p.Patches {
				if resp[k][m] > resp[best][m] {
					best = k
				}
			}
			arg[m], pat[m] = best, resp[best][m] >= 0
		}
		signs = []solvers.Pattern{pat}
	}
	return p.addDistinct(signs, arg), nil
}

// addDistinct adds the pattern (signs, and for max pooling the winners
// arg) unless the problem has it, and reports whether it added it.
func (p *Problem) addDistinct(signs []solvers.Pattern, arg []int) bool {
	for i := range p.Signs {
		if samePatterns(p.Signs[i], signs) && (arg == nil || equalInts(p.Argmax[i], arg)) {
			return false
		}
	}
	p.Signs = append(p.Signs, signs)
	if arg != nil {
		p.Argmax = append(p.Argmax, arg)
	}
	return true
}

func samePatterns(a, b []solvers.Pattern) bool {
	for k := range a {
		for m := range a[k] {
			if a[k][m] != b[k][m] {
				return false
			}
		}
	}
	return true
}

func equalInts(a, b []int) bool {
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// AddSigns adds the average-pooling pattern signs[k] = D_k (one per patch
// position, over the images) and reports whether it is new; with every
// sign pattern of the stacked patches (solvers.ExactPatterns of the nK×f
// matrix of all patches, cut in K blocks) the program is exact.
func (p *Problem) AddSigns(signs []solvers.Pattern) (bool, error) {
	if p.Pool != AvgPool {
		return false, errors.New("cnn: AddSigns is for average pooling (max pooling's patterns also hold the winning patches: AddPattern)")
	}
	n, _ := p.X.Dims()
	if len(signs) != len(p.Patches) {
		return false, fmt.Errorf("cnn: %d sign patterns for %d patch positions", len(signs), len(p.Patches))
	}
	for k, s := range signs {
		if len(s) != n {
			return false, fmt.Errorf("cnn: sign pattern %d has %d entries for %d images", k, len(s), n)
		}
	}
	for i := range p.Signs {
		if samePatterns(p.Signs[i], signs) {
			return false, nil
		}
	}
	p.Signs = append(p.Signs, signs)
	return true, nil
}

// SamplePatterns adds the distinct patterns of up to np filter directions
// u ~ N(0, I) (seeded; at most 20·np draws) and returns their number.
func (p *Problem) SamplePatterns(np int, seed uint64) (int, error) {
	if np < 1 {
		return 0, fmt.Errorf("cnn: %d patterns, need ≥ 1", np)
	}
	rng := rand.New(rand.NewPCG(seed, 0x636e6e))
	u := make([]float64, p.Filter())
	added := 0
	for draws := 0; added < np && draws < 20*np; draws++ {
		for l := range u {
			u[l] = rng.NormFloat64()
		}
		ok, err := p.AddPattern(u)
		if err != nil {
			return added, err
		}
		if ok {
			added++
		}
	}
	return added, nil
}

// Program returns the problem as eq. (ct_general) (see the package
// comment): one group of C·Size·Size entries per pattern.
func (p *Problem) Program() (*general.Program, error) {
	if len(p.Signs) == 0 {
		return nil, errors.New("cnn: no patterns (SamplePatterns)")
	}
	if p.Pool == AvgPool {
		return p.avgProgram()
	}
	n, _ := p.X.Dims()
	f, nk := p.Filter(), len(p.Patches)
	gp := &general.Program{Y: p.Y, Loss: p.Loss, Beta: p.Beta}
	var fb general.Blocks
	for i, signs := range p.Signs {
		fi := mat.NewDense(n, f, nil)
		var gi *mat.Dense
		if p.Pool == AvgPool {
			gi = mat.NewDense(n*nk, f, nil)
			for k, xk := range p.Patches {
				for m := 0; m < n; m++ {
					row := xk.RawRowView(m)
					if signs[k][m] {
						floats.AddScaled(fi.RawRowView(m), 1/float64(nk), row)
						copy(gi.RawRowView(k*n+m), row)
					} else {
						floats.ScaleTo(gi.RawRowView(k*n+m), -1, row)
					}
				}
			}
		} else {
			arg := p.Argmax[i]
			gi = mat.NewDense(n*nk, f, nil)
			for m := 0; m < n; m++ {
				top := p.Patches[arg[m]].RawRowView(m)
				if signs[0][m] {
					copy(fi.RawRowView(m), top)
					copy(gi.RawRowView(m), top)
				} else {
					floats.ScaleTo(gi.RawRowView(m), -1, top)
				}
				r := n + m*(nk-1)
				for k, xk := range p.Patches {
					if k == arg[m] {
						continue
					}
					floats.SubTo(gi.RawRowView(r), top, xk.RawRowView(m))
					r++
				}
			}
		}
		fb = append(fb, fi)
		gp.Groups = append(gp.Groups, general.Group{Size: f, G: general.Matrix{M: gi}})
	}
	gp.F = fb
	return gp, gp.Validate()
}

// avgProgram is Program for average pooling. Every block is a masked copy
// of the stacked patches X (row k·n + m: patch k of image m), so F, the G_i
// and the whole G are general.Masked operators on X: G_i = (2D_i − I)X and
// F_i sums each image's patches masked by D_i/K (Fold K).
func (p *Problem) avgProgram() (*general.Program, error) {
	n, _ := p.X.Dims()
	f, nk := p.Filter(), len(p.Patches)
	x := p.stackedPatches()
	gp := &general.Program{Y: p.Y, Loss: p.Loss, Beta: p.Beta}
	var fterms []general.MaskTerm
	var gs []*general.Masked
	for i, signs := range p.Signs {
		fm, gm := make([]float64, n*nk), make([]float64, n*nk)
		for k := range p.Patches {
			for m := 0; m < n; m++ {
				gm[k*n+m] = -1
				if signs[k][m] {
					gm[k*n+m], fm[k*n+m] = 1, 1/float64(nk)
				}
			}
		}
		g, err := general.NewMasked(x, 1, 1, 1, []general.MaskTerm{{Mask: gm}})
		if err != nil {
			return nil, err
		}
		gp.Groups = append(gp.Groups, general.Group{Size: f, G: g})
		gs = append(gs, g)
		fterms = append(fterms, general.MaskTerm{In: i, Mask: fm})
	}
	np := len(p.Signs)
	var err error
	if gp.F, err = general.NewMasked(x, nk, np, 1, fterms); err != nil {
		return nil, err
	}
	if gp.BlockG, err = general.BlockDiagonal(gs); err != nil {
		return nil, err
	}
	return gp, gp.Validate()
}

// stackedPatches returns the patches of every image as the rows of one
// matrix (nK×f), row k·n + m patch k of image m.
func (p *Problem) stackedPatches() *mat.Dense {
	n, _ := p.X.Dims()
	f := p.Filter()
	x := mat.NewDense(n*len(p.Patches), f, nil)
	for k, xk := range p.Patches {
		x.Slice(k*n, (k+1)*n, 0, f).(*mat.Dense).Copy(xk)
	}
	return x
}

// Network is a two-layer CNN: f(x) = Σ_j α_j pool_k (x_kᵀu_j)_+; U holds the
// filters as columns (C·Size·Size × m).
type Network struct {
	Shape Shape
	Conv  Conv
	Pool  Pooling
	U     *mat.Dense
	Alpha []float64
}

// Recover returns the network of the point (w, w′) of Program by the one
// rule of recovery (solvers.Neurons): each group above
// solvers.RecoveryTol·max‖·‖ becomes a filter u = v/√‖v‖ with output weight
// √‖v‖ (−√‖v‖ for w′).
func (p *Problem) Recover(w, wp []float64) (*Network, error) {
	if err := p.checkPoint(0, w, wp); err != nil {
		return nil, err
	}
	f, np := p.Filter(), len(p.Signs)
	groups := func(x []float64) [][]float64 {
		out := make([][]float64, np)
		for i := range out {
			out[i] = x[i*f : (i+1)*f]
		}
		return out
	}
	cols, alpha := solvers.Neurons(groups(w), groups(wp))
	net := &Network{Shape: p.Shape, Conv: p.Conv, Pool: p.Pool}
	if len(cols) == 0 {
		net.U, net.Alpha = mat.NewDense(f, 1, nil), []float64{0}
		return net, nil
	}
	net.U = mat.NewDense(f, len(cols), nil)
	for j, c := range cols {
		net.U.SetCol(j, c)
	}
	net.Alpha = alpha
	return net, nil
}

// Predict returns f(x_n) for the images in the rows of x.
func (net *Network) Predict(x *mat.Dense) ([]float64, error) {
	pt, err := Patches(x, net.Shape, net.Conv)
	if err != nil {
		return nil, err
	}
	f, m := net.U.Dims()
	if _, pf := pt[0].Dims(); pf != f {
		return nil, fmt.Errorf("cnn: patches have %d entries, the filters %d", pf, f)
	}
	if m != len(net.Alpha) {
		return nil, fmt.Errorf("cnn: %d filters but %d output weights", m, len(net.Alpha))
	}
	n, _ := x.Dims()
	pooled := mat.NewDense(n, m, nil)
	var r mat.Dense
	for k, xk := range pt {
		r.Mul(xk, net.U)
		for a := 0; a < n; a++ {
			for j := 0; j < m; j++ {
				v := math.Max(0, r.At(a, j))
				switch net.Pool {
				case AvgPool:
					pooled.Set(a, j, pooled.At(a, j)+v/float64(len(pt)))
				default:
					if k == 0 || v > pooled.At(a, j) {
						pooled.Set(a, j, v)
					}
				}
			}
		}
	}
	out := make([]float64, n)
	mat.NewVecDense(n, out).MulVec(pooled, mat.NewVecDense(m, net.Alpha))
	return out, nil
}

// Objective returns the non-convex training objective
// ℓ(f(X), y) + (β/2) Σ_j (‖u_j‖² + α_j²).
func (net *Network) Objective(x *mat.Dense, y []float64, loss solvers.Loss, beta float64) (float64, error) {
	out, err := net.Predict(x)
	if err != nil {
		return 0, err
	}
	if len(y) != len(out) {
		return 0, fmt.Errorf("cnn: %d labels for %d images", len(y), len(out))
	}
	reg := floats.Dot(net.Alpha, net.Alpha)
	for _, v := range net.U.RawMatrix().Data {
		reg += v * v
	}
	return loss.Value(out, y) + beta/2*reg, nil
}

// String describes the architecture.
func (net *Network) String() string {
	var b strings.Builder
	_, m := net.U.Dims()
	fmt.Fprintf(&b, "two-layer CNN: %d filters %d×%d×%d, stride %d, padding %d, %v", m, net.Shape.C, net.Conv.Size, net.Conv.Size, net.Conv.Stride, net.Conv.Pad, net.Pool)
	if net.Conv.Bias {
		b.WriteString(", with biases")
	}
	return b.String()
}

// Width returns the number of filters.
func (net *Network) Width() int { return len(net.Alpha) }
