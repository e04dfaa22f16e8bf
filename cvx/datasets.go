package cvx

import (
	"fmt"
	"image"
	"image/color"
	"math"
	"slices"

	"github.com/convexnn/convexnn/data"
	"github.com/convexnn/convexnn/plots"
	"gonum.org/v1/gonum/mat"
)

// Images displays up to n images of an image set (rows in CHW order, as the
// data loaders and their preprocessing give them), alternating the two
// classes, each captioned with its class name: a look at what the network
// will see after downsampling.
func Images(s *data.Set, n int) error {
	return showHTML(imagesHTML(s, n))
}

func imagesHTML(s *data.Set, n int) (string, error) {
	if s == nil || s.X == nil {
		return "", fmt.Errorf("cvx: Images: no data")
	}
	c, hgt, wid := s.Shape[0], s.Shape[1], s.Shape[2]
	if c != 1 && c != 3 {
		return "", fmt.Errorf("cvx: Images: the set's rows are not images (shape %v); show tabular data with Scatter or ClassBalance", s.Shape)
	}
	if n < 1 {
		return "", fmt.Errorf("cvx: Images(%d): ask for at least one image", n)
	}
	rows, _ := s.X.Dims()
	// Alternate the classes: the k-th row of each label value in turn.
	byClass := map[float64][]int{}
	var order []float64
	for k := 0; k < rows; k++ {
		v := s.Y[k]
		if _, ok := byClass[v]; !ok {
			order = append(order, v)
		}
		byClass[v] = append(byClass[v], k)
	}
	slices.Sort(order)
	var pick []int
	for i := 0; len(pick) < n; i++ {
		added := false
		for _, v := range order {
			if i < len(byClass[v]) && len(pick) < n {
				pick = append(pick, byClass[v][i])
				added = true
			}
		}
		if !added {
			break
		}
	}
	lo, hi := pixelRange(s.X)
	imgs := make([]image.Image, len(pick))
	caps := make([]string, len(pick))
	for i, k := range pick {
		row := s.X.RawRowView(k)
		px := func(ch, y, x int) uint8 {
			v := (row[(ch*hgt+y)*wid+x] - lo) / (hi - lo) * 255
			return uint8(math.Max(0, math.Min(255, math.Round(v))))
		}
		if c == 1 {
			g := image.NewGray(image.Rect(0, 0, wid, hgt))
			for y := 0; y < hgt; y++ {
				for x := 0; x < wid; x++ {
					g.SetGray(x, y, color.Gray{Y: px(0, y, x)})
				}
			}
			imgs[i] = g
		} else {
			g := image.NewRGBA(image.Rect(0, 0, wid, hgt))
			for y := 0; y < hgt; y++ {
				for x := 0; x < wid; x++ {
					g.SetRGBA(x, y, color.RGBA{R: px(0, y, x), G: px(1, y, x), B: px(2, y, x), A: 255})
				}
			}
			imgs[i] = g
		}
		caps[i] = className(s, s.Y[k])
	}
	scale := 2
	if hgt <= 16 {
		scale = 4
	}
	return plots.ImageGrid(plots.ImageGridOptions{Title: fmt.Sprintf("%s: %d of %d images, %d×%d×%d", setName(s), len(pick), rows, c, hgt, wid), Columns: 10, Scale: scale}, imgs, caps)
}

// pixelRange returns the range to map to black..white: [0, 1] or [0, 255]
// for pixel data, otherwise the data's own range (standardized data).
func pixelRange(x *mat.Dense) (lo, hi float64) {
	lo, hi = mat.Min(x), mat.Max(x)
	switch {
	case lo >= -1e-6 && hi <= 1+1e-6: // tolerance: area averaging rounds
		return 0, 1
	case lo >= -1e-6 && hi <= 255+1e-6:
		return 0, 255
	case hi == lo:
		return lo - 1, hi + 1
	}
	return lo, hi
}

func className(s *data.Set, v float64) string {
	switch {
	case s.Coding == data.ClassIndex && v >= 0 && int(v) < len(s.Classes) && float64(int(v)) == v:
		return s.Classes[int(v)]
	case s.Coding == data.ClassIndex:
	case v > 0 && len(s.Classes) == 2 && s.Classes[1] != "":
		return s.Classes[1]
	case v <= 0 && len(s.Classes) == 2 && s.Classes[0] != "":
		return s.Classes[0]
	}
	return fmt.Sprintf("y = %g", v)
}

func setName(s *data.Set) string {
	if s.Name != "" {
		return s.Name
	}
	return "data"
}

// ClassBalanceFigure draws how many rows of each class every set has.
func ClassBalanceFigure(sets ...*data.Set) (*plots.Figure, error) {
	if len(sets) == 0 {
		return nil, fmt.Errorf("cvx: ClassBalance: no sets")
	}
	var values []float64
	for _, s := range sets {
		for v := range s.ClassCounts() {
			if !slices.Contains(values, v) {
				values = append(values, v)
			}
		}
	}
	slices.Sort(values)
	cats := make([]string, len(values))
	for i, v := range values {
		cats[i] = className(sets[0], v)
	}
	groups := make([]plots.Bars, len(sets))
	for i, s := range sets {
		counts := s.ClassCounts()
		groups[i].Name = setName(s)
		for _, v := range values {
			groups[i].Values = append(groups[i].Values, float64(counts[v]))
		}
	}
	return plots.Bar(plots.BarOptions{Title: "Class balance", YLabel: "rows"}, cats, groups...)
}

// ClassBalance displays the class counts of the sets side by side (for
// example the training and validation splits).
func ClassBalance(sets ...*data.Set) error {
	return showFigure(ClassBalanceFigure(sets...))
}

// RegressionFigure draws a 1-D regression set: training and test points
// (x, y), with the target function of data.Step1D traced for reference.
func RegressionFigure(train, test *data.Set) (*plots.Figure, error) {
	groups := []plots.Points{{Name: "target f(x)"}}
	for i := 0; i <= 200; i++ {
		x := -1 + float64(i)/100
		groups[0].X = append(groups[0].X, x)
		groups[0].Y = append(groups[0].Y, data.Step1D(x))
	}
	for _, s := range []*data.Set{train, test} {
		if s == nil {
			continue
		}
		if _, d := s.Dims(); d != 1 {
			return nil, fmt.Errorf("cvx: Regression: %s has %d features, want 1", setName(s), d)
		}
		g := plots.Points{Name: setName(s), X: mat.Col(nil, 0, s.X), Y: s.Y}
		groups = append(groups, g)
	}
	return plots.Scatter(plots.ScatterOptions{Title: "1-D regression set", XLabel: "x", YLabel: "y"}, groups...)
}

// Regression displays a 1-D regression set with its target function.
func Regression(train, test *data.Set) error {
	return showFigure(RegressionFigure(train, test))
}
