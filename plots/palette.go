// Copyright ©2026 The convexnn Authors. All rights reserved.

package plots

import (
	"bytes"
	"image"
	"image/color"
	"image/png"
	"sort"
)

// paletteSize is the number of colors of a static twin's PNG: enough for
// smooth heat maps to show gentle bands, few enough that a notebook's
// twins stay small (a decision-region twin is about 15 KB, against 100 KB
// in 32-bit color).
const paletteSize = 64

// palettedPNG encodes img as a paletted PNG. An image with at most
// paletteSize distinct colors keeps them exactly. Otherwise the palette comes
// from a median cut of the colors weighted by their pixel counts: the first
// half of the boxes split where range × pixels is largest (the large smooth
// areas, such as a heat map's gradient), the second half where the range alone
// is (the rare colors of markers and lines, which a pixel-weighted cut would
// merge into their surroundings). Each pixel takes the nearest palette color;
// there is no dithering, which keeps flat areas flat and the file small.
func palettedPNG(img image.Image) ([]byte, error) {
	q := quantize(img, paletteSize)
	var buf bytes.Buffer
	enc := png.Encoder{CompressionLevel: png.BestCompression}
	if err := enc.Encode(&buf, q); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// quantize maps img to at most n ≤ 256 colors (see palettedPNG).
func quantize(img image.Image, n int) *image.Paletted {
	b := img.Bounds()
	counts := make(map[color.NRGBA]int)
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			counts[color.NRGBAModel.Convert(img.At(x, y)).(color.NRGBA)]++
		}
	}
	colors := make([]color.NRGBA, 0, len(counts))
	for c := range counts {
		colors = append(colors, c)
	}
	// A fixed order, so the same image always gives the same file.
	sort.Slice(colors, func(i, j int) bool { return less(colors[i], colors[j]) })

	var pal color.Palette
	if len(colors) <= n {
		pal = make(color.Palette, len(colors))
		for i, c := range colors {
			pal[i] = c
		}
	} else {
		pal = medianCut(colors, counts, n)
	}
	out := image.NewPaletted(b, pal)
	index := make(map[color.NRGBA]uint8, len(colors))
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			c := color.NRGBAModel.Convert(img.At(x, y)).(color.NRGBA)
			i, ok := index[c]
			if !ok {
				i = uint8(nearest(pal, c))
				index[c] = i
			}
			out.SetColorIndex(x, y, i)
		}
	}
	return out
}

// channel returns channel k (0 red, 1 green, 2 blue, 3 alpha) of c.
func channel(c color.NRGBA, k int) int {
	switch k {
	case 0:
		return int(c.R)
	case 1:
		return int(c.G)
	case 2:
		return int(c.B)
	}
	return int(c.A)
}

func less(a, b color.NRGBA) bool {
	for k := 0; k < 4; k++ {
		if x, y := channel(a, k), channel(b, k); x != y {
			return x < y
		}
	}
	return false
}

// medianCut splits the color set into n boxes (see palettedPNG) and returns
// each box's pixel-weighted mean color.
func medianCut(colors []color.NRGBA, counts map[color.NRGBA]int, n int) color.Palette {
	boxes := [][]color.NRGBA{colors}
	for len(boxes) < n {
		best, bi, bk := 0, -1, 0
		for i, box := range boxes {
			if len(box) < 2 {
				continue
			}
			pixels := 0
			for _, c := range box {
				pixels += counts[c]
			}
			for k := 0; k < 4; k++ {
				lo, hi := 255, 0
				for _, c := range box {
					v := channel(c, k)
					lo, hi = min(lo, v), max(hi, v)
				}
				score := hi - lo
				if len(boxes) < n/2 {
					score *= pixels
				}
				if hi > lo && score > best {
					best, bi, bk = score, i, k
				}
			}
		}
		if bi < 0 {
			break
		}
		box := boxes[bi]
		sort.Slice(box, func(i, j int) bool {
			x, y := channel(box[i], bk), channel(box[j], bk)
			if x != y {
				return x < y
			}
			return less(box[i], box[j])
		})
		total := 0
		for _, c := range box {
			total += counts[c]
		}
		// Cut at the weighted median, keeping both halves non-empty.
		cut, acc := 1, 0
		for i := 0; i < len(box)-1; i++ {
			acc += counts[box[i]]
			cut = i + 1
			if 2*acc >= total {
				break
			}
		}
		boxes[bi] = box[:cut]
		boxes = append(boxes, box[cut:])
	}
	pal := make(color.Palette, 0, len(boxes))
	for _, box := range boxes {
		var sum [4]float64
		w := 0.0
		for _, c := range box {
			f := float64(counts[c])
			for k := 0; k < 4; k++ {
				sum[k] += f * float64(channel(c, k))
			}
			w += f
		}
		pal = append(pal, color.NRGBA{
			R: uint8(sum[0]/w + 0.5), G: uint8(sum[1]/w + 0.5),
			B: uint8(sum[2]/w + 0.5), A: uint8(sum[3]/w + 0.5),
		})
	}
	return pal
}

// nearest returns the index of the palette color closest to c in squared
// distance over the four channels.
func nearest(pal color.Palette, c color.NRGBA) int {
	best, bi := -1, 0
	for i, p := range pal {
		q := p.(color.NRGBA)
		d := 0
		for k := 0; k < 4; k++ {
			e := channel(q, k) - channel(c, k)
			d += e * e
		}
		if best < 0 || d < best {
			best, bi = d, i
		}
	}
	return bi
}
