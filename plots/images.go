package plots

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"html"
	"image"
	"image/png"
	"strings"
)

// ImageGridOptions configures ImageGrid.
type ImageGridOptions struct {
	Title string
	// Columns per row; 0 means 10.
	Columns int
	// Scale is the on-screen size of one image pixel in CSS pixels; 0
	// means 2 (a 28×28 digit shows as 56×56).
	Scale int
}

// ImageGrid returns notebook HTML showing images in a grid, each with its
// caption (for example the class name), pixels kept sharp when enlarged.
// The images are embedded as PNG, so the grid needs no JavaScript and shows
// in every viewer.
func ImageGrid(o ImageGridOptions, imgs []image.Image, captions []string) (string, error) {
	if len(imgs) == 0 {
		return "", fmt.Errorf("plots: ImageGrid: no images")
	}
	if captions != nil && len(captions) != len(imgs) {
		return "", fmt.Errorf("plots: ImageGrid: %d captions for %d images", len(captions), len(imgs))
	}
	cols, scale := o.Columns, o.Scale
	if cols <= 0 {
		cols = 10
	}
	if scale <= 0 {
		scale = 2
	}
	var b strings.Builder
	b.WriteString(`<div class="convexnn-images" style="font-family:sans-serif">`)
	if o.Title != "" {
		fmt.Fprintf(&b, `<div style="font-weight:bold;margin:4px 0">%s</div>`, html.EscapeString(o.Title))
	}
	fmt.Fprintf(&b, `<div style="display:grid;grid-template-columns:repeat(%d,max-content);gap:6px">`, cols)
	for i, im := range imgs {
		if im == nil {
			return "", fmt.Errorf("plots: ImageGrid: image %d is nil", i)
		}
		var buf bytes.Buffer
		if err := png.Encode(&buf, im); err != nil {
			return "", fmt.Errorf("plots: ImageGrid: image %d: %v", i, err)
		}
		r := im.Bounds()
		cap := ""
		if captions != nil {
			cap = captions[i]
		}
		fmt.Fprintf(&b, `<figure style="margin:0;text-align:center"><img alt="%s" src="data:image/png;base64,%s" style="width:%dpx;height:%dpx;image-rendering:pixelated;border:1px solid #ddd"><figcaption style="font-size:11px">%s</figcaption></figure>`,
			html.EscapeString(cap), base64.StdEncoding.EncodeToString(buf.Bytes()), r.Dx()*scale, r.Dy()*scale, html.EscapeString(cap))
	}
	b.WriteString(`</div></div>`)
	return b.String(), nil
}
