package plots

import (
	"image"
	"image/color"
	"strings"
	"testing"
)

func TestBar(t *testing.T) {
	f, err := Bar(BarOptions{Title: "Class balance"}, []string{"pullover", "bag"}, Bars{Name: "train", Values: []float64{6000, 6000}}, Bars{Name: "test", Values: []float64{1000, 1000}})
	if err != nil {
		t.Fatal(err)
	}
	h, err := f.HTML(Assets{BaseURL: DefaultBaseURL}, HTMLOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"pullover"`, `"type":"bar"`, "convexnn-chart", "data:image/png;base64,"} {
		if !strings.Contains(h, want) {
			t.Errorf("bar HTML lacks %s", want)
		}
	}
	if _, err := Bar(BarOptions{}, []string{"a", "b"}, Bars{Values: []float64{1}}); err == nil || !strings.Contains(err.Error(), "1 values for 2 categories") {
		t.Fatalf("mismatched bars: %v", err)
	}
}

func TestImageGrid(t *testing.T) {
	g := image.NewGray(image.Rect(0, 0, 3, 2))
	g.SetGray(1, 1, color.Gray{Y: 200})
	h, err := ImageGrid(ImageGridOptions{Title: "<digits>", Columns: 2}, []image.Image{g, g}, []string{"two", "<b>eight</b>"})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Count(h, "<img") != 2 || !strings.Contains(h, "&lt;b&gt;eight") || strings.Contains(h, "<digits>") || !strings.Contains(h, "width:6px") {
		t.Fatalf("grid HTML: %s", h)
	}
	if _, err := ImageGrid(ImageGridOptions{}, []image.Image{g}, []string{"a", "b"}); err == nil {
		t.Fatal("caption count mismatch accepted")
	}
}

func TestMatrix(t *testing.T) {
	f, err := Matrix(MatrixOptions{Title: "Confusion", XLabel: "predicted", YLabel: "true"}, []string{"cat", "dog"}, []string{"cat", "dog"}, [][]float64{{7, 1}, {2, 9}})
	if err != nil {
		t.Fatal(err)
	}
	h, err := f.HTML(Assets{BaseURL: DefaultBaseURL}, HTMLOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"type":"heatmap"`, `"cat"`, `"dog"`, `"value":[0,0,2]`, `"value":[1,1,1]`, "data:image/png;base64,"} {
		if !strings.Contains(h, want) {
			t.Errorf("matrix HTML lacks %s", want)
		}
	}
	png, err := f.PNG()
	if err != nil || len(png) < 1000 {
		t.Fatalf("static twin: %d bytes, %v", len(png), err)
	}
	if _, err := Matrix(MatrixOptions{}, []string{"a", "b"}, []string{"a", "b"}, [][]float64{{1, 2}, {3}}); err == nil || !strings.Contains(err.Error(), "row 1 has 1 values") {
		t.Fatalf("ragged matrix: %v", err)
	}
}
