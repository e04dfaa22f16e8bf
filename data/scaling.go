package data

import (
	"errors"
	"fmt"

	"gonum.org/v1/gonum/mat"
)

// Scaling is the per-feature affine map x_j ← (x_j − Shift_j)/Scale_j that
// a set's features went through since they were read (ScalePixels and
// Standardize compose into it; Stride keeps it for the kept pixels; Resize
// keeps a scaling that is the same for every pixel, and drops any other,
// which averaging does not preserve), so that new raw data can be prepared
// exactly alike: a saved network keeps it. A bias column is not covered.
// Nil is the identity (or, after such a Resize, unknown).
type Scaling struct {
	Shift, Scale []float64
}

// Features returns the number of features the scaling applies to.
func (sc *Scaling) Features() int { return len(sc.Shift) }

// Validate reports mismatched lengths or a scale that is not a positive
// finite number.
func (sc *Scaling) Validate() error {
	if len(sc.Shift) != len(sc.Scale) {
		return fmt.Errorf("data: scaling has %d shifts but %d scales", len(sc.Shift), len(sc.Scale))
	}
	for j, s := range sc.Scale {
		if !(s > 0) || s-s != 0 || sc.Shift[j]-sc.Shift[j] != 0 {
			return fmt.Errorf("data: scaling of feature %d is (x − %v)/%v: need a finite shift and a positive finite scale", j, sc.Shift[j], s)
		}
	}
	return nil
}

// Apply returns (x − Shift)/Scale row by row, as a new matrix.
func (sc *Scaling) Apply(x *mat.Dense) (*mat.Dense, error) {
	if x == nil {
		return nil, errors.New("data: Scaling.Apply: no data")
	}
	out := mat.DenseCopyOf(x)
	if sc == nil {
		return out, nil
	}
	if err := sc.Validate(); err != nil {
		return nil, err
	}
	n, d := out.Dims()
	if d != len(sc.Shift) {
		return nil, fmt.Errorf("data: the data has %d features, the scaling was fitted on %d", d, len(sc.Shift))
	}
	for i := 0; i < n; i++ {
		row := out.RawRowView(i)
		for j := range row {
			row[j] = (row[j] - sc.Shift[j]) / sc.Scale[j]
		}
	}
	return out, nil
}

// then returns the scaling followed by x ← (x − shift)/scale.
func (sc *Scaling) then(shift, scale []float64) *Scaling {
	out := &Scaling{Shift: make([]float64, len(shift)), Scale: make([]float64, len(shift))}
	for j := range shift {
		s0, m0 := 1.0, 0.0
		if sc != nil {
			s0, m0 = sc.Scale[j], sc.Shift[j]
		}
		// ((x − m0)/s0 − m)/s = (x − (m0 + s0·m))/(s0·s)
		out.Shift[j] = m0 + s0*shift[j]
		out.Scale[j] = s0 * scale[j]
	}
	return out
}

// uniformTo returns the scaling for d features when it is the same for
// every feature (as ScalePixels'), which averaging pixels keeps; nil
// otherwise (a Standardize scaling does not survive Resize).
func (sc *Scaling) uniformTo(d int) *Scaling {
	if sc == nil || len(sc.Shift) == 0 {
		return nil
	}
	for j := range sc.Shift {
		if sc.Shift[j] != sc.Shift[0] || sc.Scale[j] != sc.Scale[0] {
			return nil
		}
	}
	out := &Scaling{Shift: make([]float64, d), Scale: make([]float64, d)}
	for j := 0; j < d; j++ {
		out.Shift[j], out.Scale[j] = sc.Shift[0], sc.Scale[0]
	}
	return out
}
