package data

import (
	"archive/zip"
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"codeberg.org/sbinet/npyio/npy"
	"github.com/convexnn/convexnn/internal/npyhead"
	"gonum.org/v1/gonum/mat"
)

// NumPy says how ReadNumPy finds the features and labels in NumPy files.
type NumPy struct {
	// Labels is a separate .npy file of n labels. When empty, the labels
	// are the array YKey of an .npz file, or the column Label of a 2-D .npy
	// array holding features and labels.
	Labels string
	// Label is the label column of a 2-D .npy array that holds the labels
	// among its columns (the last column when zero).
	Label Column
	// XKey and YKey name the features and the labels in an .npz archive;
	// empty keys try the usual names (x, X, features, data; y, Y, labels,
	// target).
	XKey, YKey string
	// Unlabelled says the file holds features only (data to predict on):
	// the Set has no labels.
	Unlabelled bool
}

var (
	npzFeatureKeys = []string{"x", "X", "features", "data", "x_train", "X_train"}
	npzLabelKeys   = []string{"y", "Y", "labels", "target", "y_train"}
)

// numpyArray is an array read from a NumPy file: its shape and its entries
// in C order, as numbers, or as strings for a string dtype.
type numpyArray struct {
	shape   []int
	values  []float64
	strings []string
	dtype   string
}

// ReadNumPy reads a data set from a .npy or .npz file (the NumPy format,
// through codeberg.org/sbinet/npyio). Features are a 2-D array (n×d) or
// images (n×H×W, n×C×H×W, or n×H×W×C with C ∈ {1, 3, 4}, stored CHW in the
// Set with its Shape); entries of any integer, float or bool dtype become
// float64. Labels of any dtype (strings too) become classes as in ReadCSV.
// Unsupported dtypes (complex, object, structured), non-finite features,
// shapes that do not match and truncated or corrupt files are errors that
// name the file.
func ReadNumPy(path string, opt NumPy) (*Set, error) {
	var feat, lab *numpyArray
	var err error
	switch strings.ToLower(filepath.Ext(path)) {
	case ".npz":
		feat, lab, err = readNPZ(path, opt)
	case ".npy":
		feat, err = readNPYFile(path)
		if err == nil && opt.Labels != "" && !opt.Unlabelled {
			lab, err = readNPYFile(opt.Labels)
		}
	default:
		return nil, fmt.Errorf("data: %s: not a NumPy file (.npy or .npz)", path)
	}
	if err != nil {
		return nil, fmt.Errorf("data: %w", err)
	}
	s, err := numpySet(feat, lab, opt)
	if err != nil {
		return nil, fmt.Errorf("data: %s: %w", path, err)
	}
	s.Name = strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
	return s, nil
}

func readNPYFile(path string) (*numpyArray, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	a, err := readNPY(bufio.NewReaderSize(f, 1<<16), st.Size())
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return a, nil
}

func readNPZ(path string, opt NumPy) (feat, lab *numpyArray, err error) {
	z, err := zip.OpenReader(path)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: not a readable .npz archive: %w", path, err)
	}
	defer z.Close()
	entries := map[string]*zip.File{}
	var names []string
	for _, f := range z.File {
		k := strings.TrimSuffix(f.Name, ".npy")
		entries[k] = f
		names = append(names, k)
	}
	pick := func(key string, usual []string, what string) (*zip.File, error) {
		if key != "" {
			if f, ok := entries[key]; ok {
				return f, nil
			}
			return nil, fmt.Errorf("%s: no array %q (arrays: %s)", path, key, shortList(names))
		}
		for _, k := range usual {
			if f, ok := entries[k]; ok {
				return f, nil
			}
		}
		return nil, fmt.Errorf("%s: no %s array among %s (name it with the %s key)", path, what, shortList(names), what)
	}
	read := func(f *zip.File) (*numpyArray, error) {
		rc, err := f.Open()
		if err != nil {
			return nil, fmt.Errorf("%s: array %s: %w", path, f.Name, err)
		}
		defer rc.Close()
		a, err := readNPY(bufio.NewReaderSize(rc, 1<<16), int64(min(f.UncompressedSize64, 1<<62)))
		if err != nil {
			return nil, fmt.Errorf("%s: array %s: %w", path, f.Name, err)
		}
		return a, nil
	}
	ff, err := pick(opt.XKey, npzFeatureKeys, "features")
	if err != nil {
		return nil, nil, err
	}
	if feat, err = read(ff); err != nil {
		return nil, nil, err
	}
	if opt.Unlabelled {
		return feat, nil, nil
	}
	if opt.Labels != "" {
		lab, err = readNPYFile(opt.Labels)
		return feat, lab, err
	}
	lf, err := pick(opt.YKey, npzLabelKeys, "labels")
	if err != nil {
		return nil, nil, err
	}
	lab, err = read(lf)
	return feat, lab, err
}

// readNPY reads one array of at most size bytes (header included): the
// header's shape is checked against size before anything is allocated.
func readNPY(r io.Reader, size int64) (a *numpyArray, err error) {
	defer func() {
		// The reader is a third-party parser of untrusted bytes: a panic in
		// it is a corrupt file, not a crash.
		if p := recover(); p != nil {
			a, err = nil, fmt.Errorf("corrupt NumPy data (%v)", p)
		}
	}()
	g, err := npyhead.Guard(r, size)
	if err != nil {
		return nil, err
	}
	cr := &countingReader{r: g}
	rd, err := npy.NewReader(cr)
	if err != nil {
		return nil, fmt.Errorf("not a valid .npy array: %w", err)
	}
	size -= cr.n // the data's bytes
	h := rd.Header.Descr
	item, err := itemSize(h.Type)
	if err != nil {
		return nil, err
	}
	elems := int64(1)
	for _, d := range h.Shape {
		if d < 0 {
			return nil, fmt.Errorf("corrupt header: shape %v", h.Shape)
		}
		if d > 0 && elems > size/int64(d) {
			return nil, fmt.Errorf("header shape %v needs more bytes than the file's %d", h.Shape, size)
		}
		elems *= int64(d)
	}
	if elems*item > size {
		return nil, fmt.Errorf("header shape %v of %s needs %d bytes of data, the file has %d: truncated", h.Shape, h.Type, elems*item, size)
	}
	var arr npy.Array
	if err := rd.Read(&arr); err != nil {
		return nil, fmt.Errorf("reading %v entries of %s: %w", h.Shape, h.Type, err)
	}
	out := &numpyArray{shape: slices.Clone(h.Shape), dtype: h.Type}
	switch v := arr.Data().(type) {
	case []string:
		out.strings = v
	case []bool:
		out.values = make([]float64, len(v))
		for i, b := range v {
			if b {
				out.values[i] = 1
			}
		}
	case []float64:
		out.values = v
	case []float32:
		out.values = toFloat64s(v)
	case []int8:
		out.values = toFloat64s(v)
	case []int16:
		out.values = toFloat64s(v)
	case []int32:
		out.values = toFloat64s(v)
	case []int64:
		out.values = toFloat64s(v)
	case []uint8:
		out.values = toFloat64s(v)
	case []uint16:
		out.values = toFloat64s(v)
	case []uint32:
		out.values = toFloat64s(v)
	case []uint64:
		out.values = toFloat64s(v)
	default:
		return nil, fmt.Errorf("dtype %s is not supported (use integers, floats, bools or strings)", h.Type)
	}
	if n := max(len(out.values), len(out.strings)); int64(n) != elems {
		return nil, fmt.Errorf("header shape %v has %d entries, the data %d: truncated", h.Shape, elems, n)
	}
	if h.Fortran && len(h.Shape) > 1 {
		if len(h.Shape) > 2 || out.strings != nil {
			return nil, fmt.Errorf("a Fortran-order array of shape %v is not supported: save it with numpy.ascontiguousarray", h.Shape)
		}
		r, c := h.Shape[0], h.Shape[1]
		t := make([]float64, len(out.values))
		for j := 0; j < c; j++ {
			for i := 0; i < r; i++ {
				t[i*c+j] = out.values[j*r+i]
			}
		}
		out.values = t
	}
	return out, nil
}

// countingReader counts the bytes read through it.
type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	k, err := c.r.Read(p)
	c.n += int64(k)
	return k, err
}

func toFloat64s[T int8 | int16 | int32 | int64 | uint8 | uint16 | uint32 | uint64 | float32](v []T) []float64 {
	out := make([]float64, len(v))
	for i, x := range v {
		out[i] = float64(x)
	}
	return out
}

// itemSize returns the bytes per entry of a simple dtype such as '<f8',
// '|u1' or '<U12', and an error for the others.
func itemSize(dtype string) (int64, error) {
	t := strings.Trim(dtype, "'\"")
	if len(t) >= 3 && strings.ContainsRune("<>|=", rune(t[0])) {
		k := t[1]
		n, err := strconv.Atoi(t[2:])
		if err == nil && n > 0 && n <= 1<<20 {
			switch k {
			case 'b', 'i', 'u', 'f':
				if n == 1 || n == 2 || n == 4 || n == 8 {
					return int64(n), nil
				}
			case 'U':
				return 4 * int64(n), nil
			case 'S':
				return int64(n), nil
			}
		}
	}
	return 0, fmt.Errorf("dtype %s is not supported (use integers, floats, bools or strings)", dtype)
}

// numpySet assembles the Set from the features and, when given, the label
// array.
func numpySet(feat, lab *numpyArray, opt NumPy) (*Set, error) {
	if feat.strings != nil {
		return nil, fmt.Errorf("features of dtype %s: need numbers", feat.dtype)
	}
	sh := feat.shape
	var labels []string
	var x *mat.Dense
	var shape [3]int
	var featNames []string
	switch {
	case len(sh) < 2:
		return nil, fmt.Errorf("features of shape %v: need a 2-D array (rows × features) or images", sh)
	case len(sh) == 2 && lab == nil && !opt.Unlabelled:
		n, c := sh[0], sh[1]
		if n == 0 {
			return nil, fmt.Errorf("array of shape %v has no rows", sh)
		}
		if c < 2 {
			return nil, fmt.Errorf("array of shape %v holds no feature beside its label column (give the labels separately)", sh)
		}
		header := make([]string, c)
		for j := range header {
			header[j] = strconv.Itoa(j)
		}
		li, err := opt.Label.resolve(header)
		if err != nil {
			return nil, fmt.Errorf("label column: %w", err)
		}
		x = mat.NewDense(n, c-1, nil)
		labels = make([]string, n)
		for i := 0; i < n; i++ {
			row, dst := feat.values[i*c:(i+1)*c], x.RawRowView(i)
			copy(dst[:li], row[:li])
			copy(dst[li:], row[li+1:])
			labels[i] = strconv.FormatFloat(row[li], 'g', -1, 64)
		}
		featNames = slices.Delete(header, li, li+1)
	default:
		n := sh[0]
		d := len(feat.values) / max(n, 1)
		switch len(sh) {
		case 2:
		case 3:
			shape = [3]int{1, sh[1], sh[2]}
		case 4:
			switch {
			case sh[1] == 1 || sh[1] == 3 || sh[1] == 4:
				shape = [3]int{sh[1], sh[2], sh[3]}
			case sh[3] == 1 || sh[3] == 3 || sh[3] == 4:
				shape = [3]int{sh[3], sh[1], sh[2]}
				feat.values = hwcToCHW(feat.values, n, sh[1], sh[2], sh[3])
			default:
				return nil, fmt.Errorf("images of shape %v: need 1, 3 or 4 channels first (n×C×H×W) or last (n×H×W×C)", sh)
			}
		default:
			return nil, fmt.Errorf("features of shape %v: need 2 to 4 dimensions", sh)
		}
		if n == 0 || d == 0 {
			return nil, fmt.Errorf("features of shape %v are empty", sh)
		}
		x = mat.NewDense(n, d, feat.values)
		if opt.Unlabelled {
			break
		}
		if lab == nil {
			return nil, fmt.Errorf("features of shape %v need their labels in a separate array (the Labels file or an .npz label key)", sh)
		}
		if len(lab.shape) != 1 && !(len(lab.shape) == 2 && lab.shape[1] == 1) {
			return nil, fmt.Errorf("labels of shape %v: need one label per row (shape (%d,))", lab.shape, n)
		}
		if lab.shape[0] != n {
			return nil, fmt.Errorf("%d feature rows but %d labels", n, lab.shape[0])
		}
		labels = lab.strings
		if labels == nil {
			labels = make([]string, n)
			for i, v := range lab.values {
				labels[i] = strconv.FormatFloat(v, 'g', -1, 64)
			}
		}
	}
	n, _ := x.Dims()
	if n == 0 {
		return nil, errors.New("no rows")
	}
	for i := 0; i < n; i++ {
		for j, v := range x.RawRowView(i) {
			if v-v != 0 {
				return nil, fmt.Errorf("row %d, feature %d is %v: features must be finite", i, j, v)
			}
		}
	}
	if opt.Unlabelled {
		return &Set{X: x, Shape: shape}, nil
	}
	for i, l := range labels {
		if l == "NaN" || strings.TrimSpace(l) == "" {
			return nil, fmt.Errorf("row %d: missing label %q", i, l)
		}
	}
	y, classes, err := ClassLabels(labels)
	if err != nil {
		return nil, fmt.Errorf("labels: %w", err)
	}
	return &Set{X: x, Y: y, Shape: shape, Features: featNames, Classes: classes, Coding: ClassIndex}, nil
}

// hwcToCHW reorders n images from height×width×channel to channel-major.
func hwcToCHW(v []float64, n, h, w, c int) []float64 {
	out := make([]float64, len(v))
	size := h * w * c
	for k := 0; k < n; k++ {
		src, dst := v[k*size:(k+1)*size], out[k*size:(k+1)*size]
		for i := 0; i < h; i++ {
			for j := 0; j < w; j++ {
				for ch := 0; ch < c; ch++ {
					dst[(ch*h+i)*w+j] = src[(i*w+j)*c+ch]
				}
			}
		}
	}
	return out
}
