package data

import "fmt"

// Images is a set of images with integer class labels, as the IDX and
// CIFAR-10 files store them: image k occupies Pix[k*Size() : (k+1)*Size()],
// channel-major (CHW: all of channel 0 row by row, then channel 1, …), one
// byte per pixel, 0 = black.
type Images struct {
	Channels, Height, Width int
	Pix                     []uint8
	Labels                  []uint8
	// Classes names the labels: Classes[l] is the name of label l (nil when
	// unknown).
	Classes []string
}

// Size returns the number of bytes (features) per image.
func (im *Images) Size() int { return im.Channels * im.Height * im.Width }

// Len returns the number of images (counted from the pixels, so it holds
// before labels are attached).
func (im *Images) Len() int {
	if im.Size() == 0 {
		return 0
	}
	return len(im.Pix) / im.Size()
}

// Image returns the pixels of image k (a view, not a copy).
func (im *Images) Image(k int) []uint8 { s := im.Size(); return im.Pix[k*s : (k+1)*s] }

// ClassName returns the name of label l, or its number when unnamed.
func (im *Images) ClassName(l uint8) string {
	if int(l) < len(im.Classes) {
		return im.Classes[l]
	}
	return fmt.Sprint(l)
}

// Table is a numeric table read from a text file; missing values are NaN.
type Table struct {
	Columns []string
	Rows    [][]float64
}
