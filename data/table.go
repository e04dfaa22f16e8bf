package data

import (
	"fmt"
	"math"
	"slices"

	"gonum.org/v1/gonum/mat"
)

// Complete returns the rows of t without any missing (NaN) value.
func (t *Table) Complete() *Table {
	out := &Table{Columns: t.Columns}
	for _, r := range t.Rows {
		if !slices.ContainsFunc(r, math.IsNaN) {
			out.Rows = append(out.Rows, r)
		}
	}
	return out
}

// Binary returns the table as a Set: the column named label (values 0 and 1)
// becomes Y, coded by l; every other column is a feature. A missing value
// anywhere is an error naming its row and column: call Complete first to
// drop such rows, as the paper does.
func (t *Table) Binary(label string, l Labels) (*Set, error) {
	li := slices.Index(t.Columns, label)
	if li < 0 {
		return nil, fmt.Errorf("data: no column %q (columns: %v)", label, t.Columns)
	}
	if len(t.Rows) == 0 {
		return nil, fmt.Errorf("data: the table has no rows")
	}
	vn, vp := l.values()
	d := len(t.Columns) - 1
	x := mat.NewDense(len(t.Rows), d, nil)
	y := make([]float64, len(t.Rows))
	var feats []string
	for j, c := range t.Columns {
		if j != li {
			feats = append(feats, c)
		}
	}
	for i, r := range t.Rows {
		if len(r) != len(t.Columns) {
			return nil, fmt.Errorf("data: row %d has %d values for %d columns", i, len(r), len(t.Columns))
		}
		row := x.RawRowView(i)
		jj := 0
		for j, v := range r {
			if math.IsNaN(v) {
				return nil, fmt.Errorf("data: row %d, column %s is missing: drop incomplete rows with Complete()", i, t.Columns[j])
			}
			if j == li {
				switch v {
				case 0:
					y[i] = vn
				case 1:
					y[i] = vp
				default:
					return nil, fmt.Errorf("data: row %d: label %s = %v, want 0 or 1", i, label, v)
				}
				continue
			}
			row[jj] = v
			jj++
		}
	}
	return &Set{X: x, Y: y, Features: feats, Coding: l}, nil
}
