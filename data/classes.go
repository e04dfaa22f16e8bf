package data

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
)

// ClassLabels maps labels of any type to class indices 0 … c−1 and returns
// them with the class names (names[y[k]] = labels[k]). Numeric labels are
// ordered by value ("1" and "1.0" are one class, named by its first
// spelling), others lexically. Fewer than two classes is an error.
func ClassLabels(labels []string) (y []float64, names []string, err error) {
	if len(labels) == 0 {
		return nil, nil, errors.New("no labels")
	}
	numeric := true
	value := make(map[string]float64, 16)
	for _, l := range labels {
		if _, seen := value[l]; seen {
			continue
		}
		v, err := strconv.ParseFloat(l, 64)
		if err != nil || math.IsNaN(v) {
			numeric = false
			break
		}
		value[l] = v
	}
	type class struct {
		name string
		v    float64
	}
	index := make(map[string]int, 16) // label spelling → class
	var classes []class
	if numeric {
		byValue := map[float64]int{}
		for _, l := range labels {
			if _, ok := index[l]; ok {
				continue
			}
			v := value[l]
			c, ok := byValue[v]
			if !ok {
				c = len(classes)
				byValue[v] = c
				classes = append(classes, class{l, v})
			}
			index[l] = c
		}
	} else {
		for _, l := range labels {
			if _, ok := index[l]; !ok {
				index[l] = len(classes)
				classes = append(classes, class{name: l})
			}
		}
	}
	if len(classes) < 2 {
		return nil, nil, fmt.Errorf("every row has the label %q: need at least 2 classes", labels[0])
	}
	order := make([]int, len(classes))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int {
		if numeric {
			return cmp.Compare(classes[a].v, classes[b].v)
		}
		return cmp.Compare(classes[a].name, classes[b].name)
	})
	rank := make([]int, len(classes))
	names = make([]string, len(classes))
	for r, c := range order {
		rank[c] = r
		names[r] = classes[c].name
	}
	y = make([]float64, len(labels))
	for k, l := range labels {
		y[k] = float64(rank[index[l]])
	}
	return y, names, nil
}

// NumClasses returns the number of classes c of a classification set (0
// for regression targets).
func (s *Set) NumClasses() int { return len(s.Classes) }

// Recode returns a copy of a two-class set with its labels coded by l
// (the first class negative, the second positive), or of any class-index
// set as class indices. A set of more than two classes cannot be coded as
// binary labels: pick two with Classes first.
func (s *Set) Recode(l Labels) (*Set, error) {
	if l != PlusMinus && l != ZeroOne && l != ClassIndex {
		return nil, fmt.Errorf("data: Recode: unknown coding %v", l)
	}
	if len(s.Classes) < 2 {
		return nil, errors.New("data: Recode: the set has no classes (regression targets)")
	}
	if l != ClassIndex && len(s.Classes) != 2 {
		return nil, fmt.Errorf("data: Recode(%v): the set has %d classes, binary labels need 2 (pick two with PickClasses)", l, len(s.Classes))
	}
	idx, err := s.classIndices()
	if err != nil {
		return nil, err
	}
	y := make([]float64, len(idx))
	for k, c := range idx {
		y[k] = float64(c)
		if l != ClassIndex {
			neg, pos := l.values()
			y[k] = neg
			if c == 1 {
				y[k] = pos
			}
		}
	}
	t := s.clone(s.X, y)
	t.X = s.X // rows are shared: Recode changes labels only
	t.Coding = l
	return t, nil
}

// classIndices returns each row's class index under the set's coding.
func (s *Set) classIndices() ([]int, error) {
	out := make([]int, len(s.Y))
	neg, pos := s.Coding.values()
	for k, v := range s.Y {
		switch {
		case s.Coding == ClassIndex:
			if v < 0 || v >= float64(len(s.Classes)) || v != math.Trunc(v) {
				return nil, fmt.Errorf("data: row %d has label %v, not a class index 0…%d", k, v, len(s.Classes)-1)
			}
			out[k] = int(v)
		case v == neg:
			out[k] = 0
		case v == pos:
			out[k] = 1
		default:
			return nil, fmt.Errorf("data: row %d has label %v, not %v or %v", k, v, neg, pos)
		}
	}
	return out, nil
}

// PickClasses returns the rows of the named classes (at least two), coded
// by l (PlusMinus or ZeroOne need exactly two: the first named negative).
func (s *Set) PickClasses(l Labels, names ...string) (*Set, error) {
	if len(names) < 2 {
		return nil, fmt.Errorf("data: PickClasses: %d classes named, need at least 2", len(names))
	}
	idx, err := s.classIndices()
	if err != nil {
		return nil, err
	}
	newIndex := map[int]int{}
	for i, nm := range names {
		c := slices.Index(s.Classes, nm)
		if c < 0 {
			return nil, fmt.Errorf("data: PickClasses: no class %q (classes: %s)", nm, shortList(s.Classes))
		}
		if _, dup := newIndex[c]; dup {
			return nil, fmt.Errorf("data: PickClasses: class %q named twice", nm)
		}
		newIndex[c] = i
	}
	var rows []int
	for k, c := range idx {
		if _, ok := newIndex[c]; ok {
			rows = append(rows, k)
		}
	}
	if len(rows) == 0 {
		return nil, fmt.Errorf("data: PickClasses: no row has class %s", strings.Join(names, " or "))
	}
	t := s.Rows(rows)
	for i, k := range rows {
		t.Y[i] = float64(newIndex[idx[k]])
	}
	t.Classes, t.Coding = slices.Clone(names), ClassIndex
	if l == ClassIndex {
		return t, nil
	}
	return t.Recode(l)
}
