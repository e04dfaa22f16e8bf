package cvx

import (
	"strings"
	"testing"

	"github.com/convexnn/convexnn/data"
	"github.com/convexnn/convexnn/plots"
	"gonum.org/v1/gonum/mat"
)

func TestImagesAndClassBalance(t *testing.T) {
	im := &data.Images{Channels: 3, Height: 4, Width: 4, Classes: []string{"a", "b", "bird"}}
	for k := 0; k < 6; k++ {
		for i := 0; i < 48; i++ {
			im.Pix = append(im.Pix, uint8(i*5))
		}
		im.Labels = append(im.Labels, uint8(2*(k%2)))
	}
	s, err := im.Binary(0, 2, data.PlusMinus)
	if err != nil {
		t.Fatal(err)
	}
	s.Name = "train"
	h, err := imagesHTML(s.ScalePixels(), 4)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Count(h, "<img") != 4 || strings.Count(h, ">bird<") != 2 || strings.Count(h, ">a<") != 2 {
		t.Fatalf("image grid: %d images, captions wrong", strings.Count(h, "<img"))
	}
	if _, err := imagesHTML(&data.Set{X: s.X, Y: s.Y}, 3); err == nil {
		t.Fatal("non-image set accepted")
	}
	f, err := ClassBalanceFigure(s)
	if err != nil {
		t.Fatal(err)
	}
	out, err := f.HTML(plotsAssetsForTest(), plotsNoStatic())
	if err != nil || !strings.Contains(out, `"bird"`) {
		t.Fatalf("class balance: %v", err)
	}
}

func plotsAssetsForTest() plots.Assets { return plots.Assets{BaseURL: plots.DefaultBaseURL} }
func plotsNoStatic() plots.HTMLOptions { return plots.HTMLOptions{NoStatic: true} }

func TestPixelRangeToleratesRounding(t *testing.T) {
	x := mat.NewDense(1, 3, []float64{0, 0.5, 1 + 1e-15})
	if lo, hi := pixelRange(x); lo != 0 || hi != 1 {
		t.Fatalf("range [%v, %v] for pixels in [0, 1] with rounding", lo, hi)
	}
}
