package data

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"gonum.org/v1/gonum/mat"
)

// Labels selects how class labels are coded.
type Labels int

const (
	// PlusMinus codes the two classes as −1 (negative) and +1 (positive), for
	// the hinge and squared losses.
	PlusMinus Labels = iota
	// ZeroOne codes them as 0 and 1, for the binary cross-entropy loss.
	ZeroOne
	// ClassIndex codes c classes as 0, 1, …, c−1 (multi-class sets, and
	// tables as read, before Recode).
	ClassIndex
)

func (l Labels) String() string {
	switch l {
	case PlusMinus:
		return "±1"
	case ZeroOne:
		return "0/1"
	case ClassIndex:
		return "class index"
	}
	return fmt.Sprintf("Labels(%d)", int(l))
}

func (l Labels) values() (neg, pos float64) {
	if l == ZeroOne || l == ClassIndex {
		return 0, 1
	}
	return -1, 1
}

// Set is a labelled data matrix: row k of X is the feature vector x_k and
// Y[k] its label or target. Preprocessing steps return new Sets and leave
// their input unchanged, so they compose: train, test := …; train.Standardize(test)…
type Set struct {
	Name string
	X    *mat.Dense
	Y    []float64
	// Shape is (channels, height, width) when the rows are images in CHW
	// order, and zero otherwise; Stride and Resize need it.
	Shape [3]int
	// Features names the columns of a tabular set (nil for images).
	Features []string
	// Classes names the classes: for a binary set (Coding PlusMinus or
	// ZeroOne) the negative and the positive class, for ClassIndex class
	// c is Classes[c]. Nil for regression targets.
	Classes []string
	// Coding says how Y codes the classes.
	Coding Labels
	// Bias is true when the last column of X is a column of ones.
	Bias bool
	// Scaling is the affine map the features went through (nil: none).
	Scaling *Scaling
}

// Dims returns the number of rows n and features d.
func (s *Set) Dims() (n, d int) { return s.X.Dims() }

// ClassCounts returns how many rows have each label value.
func (s *Set) ClassCounts() map[float64]int {
	c := map[float64]int{}
	for _, v := range s.Y {
		c[v]++
	}
	return c
}

func (s *Set) clone(x *mat.Dense, y []float64) *Set {
	t := *s
	t.X, t.Y = x, y
	t.Features = slices.Clone(s.Features)
	t.Classes = slices.Clone(s.Classes)
	return &t
}

// Binary returns the images of the classes neg and pos as a Set with labels
// coded by l, pixels as they are stored (0–255; see ScalePixels).
func (im *Images) Binary(neg, pos uint8, l Labels) (*Set, error) {
	if neg == pos {
		return nil, fmt.Errorf("data: Binary: the two classes are the same (%d)", neg)
	}
	vn, vp := l.values()
	var rows []int
	var y []float64
	nneg, npos := 0, 0
	for k, c := range im.Labels {
		switch c {
		case neg:
			rows, y = append(rows, k), append(y, vn)
			nneg++
		case pos:
			rows, y = append(rows, k), append(y, vp)
			npos++
		}
	}
	if nneg == 0 || npos == 0 {
		return nil, fmt.Errorf("data: Binary: class %s has %d images and class %s has %d; both must be present", im.ClassName(neg), nneg, im.ClassName(pos), npos)
	}
	d := im.Size()
	x := mat.NewDense(len(rows), d, nil)
	raw := x.RawMatrix()
	for i, k := range rows {
		dst := raw.Data[i*raw.Stride : i*raw.Stride+d]
		for j, p := range im.Image(k) {
			dst[j] = float64(p)
		}
	}
	return &Set{X: x, Y: y, Shape: [3]int{im.Channels, im.Height, im.Width}, Classes: []string{im.ClassName(neg), im.ClassName(pos)}, Coding: l}, nil
}

// Multiclass returns every image as a Set with class-index labels
// 0 … c−1 (Coding ClassIndex; Classes names them), pixels as stored.
func (im *Images) Multiclass() (*Set, error) {
	n, d := im.Len(), im.Size()
	if n == 0 || len(im.Labels) != n {
		return nil, fmt.Errorf("data: Multiclass: %d images with %d labels", n, len(im.Labels))
	}
	c := 0
	for _, l := range im.Labels {
		c = max(c, int(l)+1)
	}
	classes := make([]string, c)
	for l := range classes {
		classes[l] = im.ClassName(uint8(l))
	}
	x := mat.NewDense(n, d, nil)
	y := make([]float64, n)
	for k := 0; k < n; k++ {
		row := x.RawRowView(k)
		for j, p := range im.Image(k) {
			row[j] = float64(p)
		}
		y[k] = float64(im.Labels[k])
	}
	return &Set{X: x, Y: y, Shape: [3]int{im.Channels, im.Height, im.Width}, Classes: classes, Coding: ClassIndex}, nil
}

// ScalePixels divides every entry by 255, mapping 8-bit pixels to [0, 1].
func (s *Set) ScalePixels() *Set {
	x := mat.DenseCopyOf(s.X)
	x.Scale(1.0/255, x)
	t := s.clone(x, append([]float64(nil), s.Y...))
	_, d := x.Dims()
	if s.Bias {
		d--
	}
	shift, scale := make([]float64, d), make([]float64, d)
	for j := range scale {
		scale[j] = 255
	}
	t.Scaling = s.Scaling.then(shift, scale)
	return t
}

// Stride downsamples images by keeping every k-th row and column of every
// channel, starting at the first: the "DS" (stride 2) of the paper's Table 3
// turns 28×28 into 14×14 (d = 196).
func (s *Set) Stride(k int) (*Set, error) {
	c, h, w := s.Shape[0], s.Shape[1], s.Shape[2]
	if c == 0 {
		return nil, errors.New("data: Stride needs image rows (the set has no image shape)")
	}
	if k < 1 {
		return nil, fmt.Errorf("data: Stride(%d): the stride must be ≥ 1", k)
	}
	h2, w2 := (h+k-1)/k, (w+k-1)/k
	n, _ := s.X.Dims()
	x := mat.NewDense(n, c*h2*w2, nil)
	for r := 0; r < n; r++ {
		src, dst := s.X.RawRowView(r), x.RawRowView(r)
		for ch := 0; ch < c; ch++ {
			for i := 0; i < h2; i++ {
				for j := 0; j < w2; j++ {
					dst[(ch*h2+i)*w2+j] = src[(ch*h+i*k)*w+j*k]
				}
			}
		}
	}
	t := s.clone(x, append([]float64(nil), s.Y...))
	t.Shape, t.Scaling = [3]int{c, h2, w2}, nil
	if sc := s.Scaling; sc != nil && len(sc.Shift) == c*h*w {
		// The kept pixels keep their scaling.
		t.Scaling = &Scaling{Shift: make([]float64, c*h2*w2), Scale: make([]float64, c*h2*w2)}
		for ch := 0; ch < c; ch++ {
			for i := 0; i < h2; i++ {
				for j := 0; j < w2; j++ {
					dst, src := (ch*h2+i)*w2+j, (ch*h+i*k)*w+j*k
					t.Scaling.Shift[dst], t.Scaling.Scale[dst] = sc.Shift[src], sc.Scale[src]
				}
			}
		}
	}
	return t, nil
}

// Resize downsamples images to h2×w2 by area averaging: each output pixel is
// the mean of the input area it covers, with fractional weights for input
// pixels cut by the output pixel's edges (exact for any ratio, e.g. 28→10
// for the d = 100 MNIST of fig. ADMMCom, or 32→7 for the 7×7×3 = 147 CIFAR of
// Table 5). A constant image stays constant.
func (s *Set) Resize(h2, w2 int) (*Set, error) {
	c, h, w := s.Shape[0], s.Shape[1], s.Shape[2]
	if c == 0 {
		return nil, errors.New("data: Resize needs image rows (the set has no image shape)")
	}
	if h2 < 1 || w2 < 1 || h2 > h || w2 > w {
		return nil, fmt.Errorf("data: Resize(%d, %d): the size must be between 1×1 and the image size %d×%d", h2, w2, h, w)
	}
	wy, wx := areaWeights(h, h2), areaWeights(w, w2)
	n, _ := s.X.Dims()
	x := mat.NewDense(n, c*h2*w2, nil)
	tmp := make([]float64, h*w2)
	for r := 0; r < n; r++ {
		src, dst := s.X.RawRowView(r), x.RawRowView(r)
		for ch := 0; ch < c; ch++ {
			plane := src[ch*h*w : (ch+1)*h*w]
			// Columns first: tmp[i][j2] = Σ_j wx[j2][j] plane[i][j].
			for i := 0; i < h; i++ {
				for j2, ws := range wx {
					var v float64
					for _, e := range ws {
						v += e.w * plane[i*w+e.i]
					}
					tmp[i*w2+j2] = v
				}
			}
			out := dst[ch*h2*w2 : (ch+1)*h2*w2]
			for i2, ws := range wy {
				for j2 := 0; j2 < w2; j2++ {
					var v float64
					for _, e := range ws {
						v += e.w * tmp[e.i*w2+j2]
					}
					out[i2*w2+j2] = v
				}
			}
		}
	}
	t := s.clone(x, append([]float64(nil), s.Y...))
	t.Shape, t.Scaling = [3]int{c, h2, w2}, s.Scaling.uniformTo(c*h2*w2)
	return t, nil
}

type weight struct {
	i int
	w float64
}

// areaWeights returns, for each of m output cells over n input cells, the
// input cells it overlaps and the overlap fractions, normalized to sum 1.
func areaWeights(n, m int) [][]weight {
	out := make([][]weight, m)
	scale := float64(n) / float64(m)
	for o := 0; o < m; o++ {
		lo, hi := float64(o)*scale, float64(o+1)*scale
		for i := int(math.Floor(lo)); i < n && float64(i) < hi; i++ {
			ov := math.Min(hi, float64(i+1)) - math.Max(lo, float64(i))
			if ov > 1e-12 {
				out[o] = append(out[o], weight{i, ov / scale})
			}
		}
	}
	return out
}

// Standardize returns copies of s and of every other set (typically the
// validation set) with each feature shifted and scaled by the mean and
// standard deviation measured on s alone: x ← (x − μ_train)/σ_train. Features
// constant on s (σ = 0) are only centred. A bias column is left as it is.
func (s *Set) Standardize(others ...*Set) (*Set, []*Set, error) {
	n, d := s.X.Dims()
	if n < 2 {
		return nil, nil, fmt.Errorf("data: Standardize needs at least 2 training rows, has %d", n)
	}
	for i, o := range others {
		if _, od := o.X.Dims(); od != d {
			return nil, nil, fmt.Errorf("data: Standardize: set %d has %d features, the training set %d", i, od, d)
		}
	}
	mean := make([]float64, d)
	sd := make([]float64, d)
	for r := 0; r < n; r++ {
		for j, v := range s.X.RawRowView(r) {
			mean[j] += v
		}
	}
	for j := range mean {
		mean[j] /= float64(n)
	}
	for r := 0; r < n; r++ {
		for j, v := range s.X.RawRowView(r) {
			sd[j] += (v - mean[j]) * (v - mean[j])
		}
	}
	for j := range sd {
		sd[j] = math.Sqrt(sd[j] / float64(n))
		if sd[j] < 1e-12 {
			sd[j] = 1
		}
	}
	if s.Bias {
		mean[d-1], sd[d-1] = 0, 1
	}
	fd := d
	if s.Bias {
		fd--
	}
	apply := func(t *Set) *Set {
		x := mat.DenseCopyOf(t.X)
		rows, _ := x.Dims()
		for r := 0; r < rows; r++ {
			row := x.RawRowView(r)
			for j := range row {
				row[j] = (row[j] - mean[j]) / sd[j]
			}
		}
		u := t.clone(x, append([]float64(nil), t.Y...))
		u.Scaling = s.Scaling.then(mean[:fd], sd[:fd])
		return u
	}
	out := make([]*Set, len(others))
	for i, o := range others {
		out[i] = apply(o)
	}
	return apply(s), out, nil
}

// AddBias returns a copy with a column of ones appended (x_k ← [x_k; 1]).
func (s *Set) AddBias() (*Set, error) {
	if s.Bias {
		return nil, errors.New("data: AddBias: the set already has a bias column")
	}
	n, d := s.X.Dims()
	x := mat.NewDense(n, d+1, nil)
	for r := 0; r < n; r++ {
		row := x.RawRowView(r)
		copy(row, s.X.RawRowView(r))
		row[d] = 1
	}
	t := s.clone(x, append([]float64(nil), s.Y...))
	t.Bias, t.Shape = true, [3]int{}
	if t.Features != nil {
		t.Features = append(t.Features, "bias")
	}
	return t, nil
}

// Split shuffles the rows with the seed and returns the first ⌊frac·n⌉ as
// the training set and the rest as the validation set (frac = 0.7 gives the
// paper's 70/30 split of the mammographic data).
func (s *Set) Split(frac float64, seed uint64) (train, test *Set, err error) {
	n, _ := s.X.Dims()
	if !(frac > 0 && frac < 1) {
		return nil, nil, fmt.Errorf("data: Split(%v): the training fraction must be in (0, 1)", frac)
	}
	k := int(math.Round(frac * float64(n)))
	if k < 1 || k >= n {
		return nil, nil, fmt.Errorf("data: Split(%v) of %d rows leaves an empty part", frac, n)
	}
	perm := permutation(n, seed)
	return s.Rows(perm[:k]), s.Rows(perm[k:]), nil
}

// Subsample returns m rows chosen uniformly at random without replacement
// with the seed, in their original order (e.g. the 600 CIFAR images of
// Table 5).
func (s *Set) Subsample(m int, seed uint64) (*Set, error) {
	n, _ := s.X.Dims()
	if m < 1 || m > n {
		return nil, fmt.Errorf("data: Subsample(%d): the set has %d rows", m, n)
	}
	perm := permutation(n, seed)[:m]
	slices.Sort(perm)
	return s.Rows(perm), nil
}

// SortedBy returns the rows in increasing order of feature j (ties in their
// original order), for reading or drawing a 1-D data set.
func (s *Set) SortedBy(j int) (*Set, error) {
	n, d := s.X.Dims()
	if j < 0 || j >= d {
		return nil, fmt.Errorf("data: SortedBy(%d): the set has %d features", j, d)
	}
	idx := make([]int, n)
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(a, b int) int { return cmp.Compare(s.X.At(a, j), s.X.At(b, j)) })
	return s.Rows(idx), nil
}

// SubsampleHoldout returns the m rows Subsample(m, seed) returns and, as
// holdout, every other row, both in their original order: a held-out set
// disjoint from the subsample and drawn from the same distribution (Table 5
// trains on 600 CIFAR images; the other 9400 bird/ship training records
// estimate its accuracy far more precisely than the 206 test records at
// hand).
func (s *Set) SubsampleHoldout(m int, seed uint64) (sub, holdout *Set, err error) {
	n, _ := s.X.Dims()
	if m < 1 || m >= n {
		return nil, nil, fmt.Errorf("data: SubsampleHoldout(%d): the set has %d rows; need 1 ≤ m < %d", m, n, n)
	}
	perm := permutation(n, seed)
	in, out := slices.Clone(perm[:m]), slices.Clone(perm[m:])
	slices.Sort(in)
	slices.Sort(out)
	return s.Rows(in), s.Rows(out), nil
}

// Rows returns a copy holding the given rows, in the given order.
func (s *Set) Rows(idx []int) *Set {
	_, d := s.X.Dims()
	x := mat.NewDense(len(idx), d, nil)
	y := make([]float64, len(idx))
	for i, k := range idx {
		copy(x.RawRowView(i), s.X.RawRowView(k))
		y[i] = s.Y[k]
	}
	return s.clone(x, y)
}

func permutation(n int, seed uint64) []int {
	rng := rand.New(rand.NewPCG(seed, 0x5eed))
	return rng.Perm(n)
}
