// Copyright ©2026 The convexnn Authors. All rights reserved.

package plots

import (
	"bytes"
	"image"
	"image/color"
	"image/png"
	"math"
	"testing"

	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/vgimg"
)

// TestPalettedPNG checks the static twins' 256-color encoding: an image of
// few colors is kept exactly, and a smooth gradient with small markers on it
// keeps the markers' colors and every pixel close, in a fraction of the
// 32-bit PNG's size.
func TestPalettedPNG(t *testing.T) {
	decode := func(b []byte) image.Image {
		t.Helper()
		img, err := png.Decode(bytes.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := img.(*image.Paletted); !ok {
			t.Fatalf("decoded %T, want *image.Paletted", img)
		}
		return img
	}
	nrgba := func(img image.Image, x, y int) color.NRGBA {
		return color.NRGBAModel.Convert(img.At(x, y)).(color.NRGBA)
	}

	// Few colors, one of them translucent: kept exactly.
	few := image.NewNRGBA(image.Rect(0, 0, 40, 30))
	cols := []color.NRGBA{{255, 255, 255, 255}, {84, 112, 198, 255}, {127, 0, 0, 255}, {10, 20, 30, 128}}
	for y := 0; y < 30; y++ {
		for x := 0; x < 40; x++ {
			few.SetNRGBA(x, y, cols[(x/7+y/5)%len(cols)])
		}
	}
	b, err := palettedPNG(few)
	if err != nil {
		t.Fatal(err)
	}
	got := decode(b)
	for y := 0; y < 30; y++ {
		for x := 0; x < 40; x++ {
			if c := nrgba(got, x, y); c != few.NRGBAAt(x, y) {
				t.Fatalf("pixel (%d,%d): %v, want %v exactly", x, y, c, few.NRGBAAt(x, y))
			}
		}
	}

	// A smooth surface in 720·400 pixels of many colors, with two small markers.
	w, h := 720, 400
	grad := image.NewNRGBA(image.Rect(0, 0, w, h))
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			z := 0.5 + 0.5*math.Sin(float64(x)/90)*math.Cos(float64(y)/60)
			grad.SetNRGBA(x, y, color.NRGBA{uint8(40 + 200*z), uint8(60 + 150*z*z), uint8(255 - 200*z), 255})
		}
	}
	marks := map[image.Point]color.NRGBA{{100, 100}: {8, 48, 107, 255}, {600, 300}: {127, 0, 0, 255}}
	for p, c := range marks {
		for dy := -4; dy <= 4; dy++ {
			for dx := -4; dx <= 4; dx++ {
				grad.SetNRGBA(p.X+dx, p.Y+dy, c)
			}
		}
	}
	b, err = palettedPNG(grad)
	if err != nil {
		t.Fatal(err)
	}
	got = decode(b)
	worst := 0
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			c, want := nrgba(got, x, y), grad.NRGBAAt(x, y)
			for k := 0; k < 4; k++ {
				if d := channel(c, k) - channel(want, k); d > worst || -d > worst {
					worst = max(d, -d)
				}
			}
		}
	}
	if worst > 16 {
		t.Errorf("a pixel's channel moved by %d, want at most 16", worst)
	}
	for p, c := range marks {
		if g := nrgba(got, p.X, p.Y); g != c {
			t.Errorf("marker at %v: %v, want %v", p, g, c)
		}
	}

	// A decision-region chart's twin: at most half its 32-bit PNG.
	n := 100
	g := Grid{}
	for i := 0; i < n; i++ {
		v := -1.2 + 2.4*float64(i)/float64(n-1)
		g.X, g.Y = append(g.X, v), append(g.Y, v)
	}
	for i := 0; i < n; i++ {
		row := make([]float64, n)
		for j := range row {
			row[j] = math.Sin(3*g.X[j]) * math.Cos(2*g.Y[i])
		}
		g.Z = append(g.Z, row)
	}
	f, err := Heatmap(HeatmapOptions{Title: "regions", Diverging: true}, g,
		Points{Name: "y = -1", X: []float64{0.1, 0.5}, Y: []float64{0.2, -0.4}},
		Points{Name: "y = +1", X: []float64{-0.7, 0.8}, Y: []float64{-0.6, 0.1}})
	if err != nil {
		t.Fatal(err)
	}
	c, err := f.drawStatic(func(w, h vg.Length) vg.CanvasWriterTo {
		return vgimg.PngCanvas{Canvas: vgimg.NewWith(vgimg.UseWH(w, h), vgimg.UseDPI(staticDPI))}
	})
	if err != nil {
		t.Fatal(err)
	}
	var full bytes.Buffer
	if _, err := c.WriteTo(&full); err != nil {
		t.Fatal(err)
	}
	twin, err := f.PNG()
	if err != nil {
		t.Fatal(err)
	}
	decode(twin)
	t.Logf("heat map twin: %d bytes paletted, %d bytes 32-bit", len(twin), full.Len())
	if len(twin) > full.Len()/2 {
		t.Errorf("heat map twin of %d bytes, want at most half the 32-bit %d", len(twin), full.Len())
	}
}

// TestThinLine checks the interactive chart's thinning of long lines: short
// lines are kept whole; a long one keeps its ends and, in every run, its
// extremes, in order, in at most 2·buckets+2 points.
func TestThinLine(t *testing.T) {
	x := []float64{1, 2, 3}
	if tx, _ := thinLine(x, x, 10); len(tx) != 3 {
		t.Fatalf("a short line was thinned to %d points", len(tx))
	}
	n, buckets := 20000, 360
	x, y := make([]float64, n), make([]float64, n)
	for i := range x {
		x[i] = float64(i + 1)
		y[i] = math.Exp(-float64(i)/3000) * (1 + 0.3*math.Sin(float64(i)))
	}
	y[12345] = 5 // a spike
	y[777] = -1  // a dip
	tx, ty := thinLine(x, y, buckets)
	if len(tx) > 2*buckets+2 || len(tx) != len(ty) {
		t.Fatalf("thinned to %d x and %d y, want at most %d", len(tx), len(ty), 2*buckets+2)
	}
	if tx[0] != 1 || tx[len(tx)-1] != float64(n) {
		t.Errorf("ends %v and %v, want 1 and %d", tx[0], tx[len(tx)-1], n)
	}
	has := map[float64]float64{}
	for i := range tx {
		if i > 0 && tx[i] <= tx[i-1] {
			t.Fatalf("points out of order at %d: %v after %v", i, tx[i], tx[i-1])
		}
		if y[int(tx[i])-1] != ty[i] {
			t.Fatalf("point %v has y %v, the line %v", tx[i], ty[i], y[int(tx[i])-1])
		}
		has[tx[i]] = ty[i]
	}
	if has[12346] != 5 || has[778] != -1 {
		t.Error("the spike or the dip was lost")
	}
	for b := 0; b < buckets; b++ {
		lo, hi := b*n/buckets, (b+1)*n/buckets
		mn, mx := math.Inf(1), math.Inf(-1)
		for i := lo; i < hi; i++ {
			mn, mx = math.Min(mn, y[i]), math.Max(mx, y[i])
		}
		low, high := false, false
		for i := lo; i < hi; i++ {
			if v, ok := has[x[i]]; ok {
				low, high = low || v == mn, high || v == mx
			}
		}
		if !low || !high {
			t.Fatalf("run %d kept its lowest point %v, its highest %v", b, low, high)
		}
	}
}

func TestRoundIn(t *testing.T) {
	for _, c := range []struct{ v, lo, hi, want float64 }{
		{20.08812, -40, 40, 20.09},
		{0.087717, -40, 40, 0.09},
		{-1.73051, -40, 40, -1.73},
		{0.1234567, 0, 1, 0.123},
		{0.1234567, 0, 0.999, 0.1235},
		{123456.7, 0, 5e6, 123000},
		{3.14159265, 3.14159265, 3.14159265, 3.1416},
	} {
		if got := roundIn(c.v, c.lo, c.hi); math.Abs(got-c.want) > 1e-12*math.Max(1, math.Abs(c.want)) {
			t.Errorf("roundIn(%v, %v, %v) = %v, want %v", c.v, c.lo, c.hi, got, c.want)
		}
	}
	// The error is at most half a step of (hi − lo)/10000.
	for i := 0; i < 1000; i++ {
		lo, hi := -math.Exp(float64(i%17)-8), math.Exp(float64(i%13)-6)
		v := lo + (hi-lo)*float64(i)/999
		if d := math.Abs(roundIn(v, lo, hi) - v); d > (hi-lo)/1000*0.5+1e-15 {
			t.Fatalf("roundIn(%v, %v, %v) moved by %v", v, lo, hi, d)
		}
	}
}
