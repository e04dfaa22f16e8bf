package netfile

import (
	"archive/zip"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"

	"codeberg.org/sbinet/npyio/npy"
	"github.com/convexnn/convexnn/internal/atomicfile"
	"github.com/convexnn/convexnn/internal/npyhead"
	"github.com/convexnn/convexnn/solvers"
	"github.com/convexnn/convexnn/solvers/batchnorm"
	"github.com/convexnn/convexnn/solvers/cnn"
	"github.com/convexnn/convexnn/solvers/gated"
	"github.com/convexnn/convexnn/solvers/twohidden"
	"gonum.org/v1/gonum/mat"
)

// The file's JSON. Matrices are row-major; in an .npz archive their data
// is the float64 array named by NPY instead of Data.
type wireMatrix struct {
	Rows int       `json:"rows"`
	Cols int       `json:"cols"`
	Data []float64 `json:"data,omitempty"`
	NPY  string    `json:"npy,omitempty"`
}

type wireFile struct {
	Format    string         `json:"format"`
	Version   int            `json:"version"`
	Model     string         `json:"model"`
	Input     wireInput      `json:"input"`
	Output    wireOutput     `json:"output"`
	ReLU      *wireReLU      `json:"relu,omitempty"`
	Gated     *wireGated     `json:"gated,omitempty"`
	BatchNorm *wireBatchNorm `json:"batchnorm,omitempty"`
	TwoHidden *wireTwoHidden `json:"two_hidden,omitempty"`
	CNN       *wireCNN       `json:"cnn,omitempty"`
	MultiReLU *wireMultiReLU `json:"relu_multi,omitempty"`
}

type wireMultiReLU struct {
	U    *wireMatrix `json:"u"`
	A    *wireMatrix `json:"a"`
	Bias bool        `json:"bias"`
}

type wireInput struct {
	Features int       `json:"features"`
	Names    []string  `json:"names,omitempty"`
	Shape    *[3]int   `json:"shape,omitempty"`
	Shift    []float64 `json:"shift,omitempty"`
	Scale    []float64 `json:"scale,omitempty"`
}

type wireOutput struct {
	Decision string   `json:"decision"`
	Classes  []string `json:"classes,omitempty"`
}

type wireReLU struct {
	U     *wireMatrix `json:"u"`
	Alpha []float64   `json:"alpha"`
	Bias  bool        `json:"bias"`
}

type wireGated struct {
	Gates *wireMatrix   `json:"gates"`
	W     []*wireMatrix `json:"w"`
	Bias  bool          `json:"bias"`
}

type wireBatchNorm struct {
	W     *wireMatrix `json:"w"`
	Mean  []float64   `json:"mean"`
	Scale []float64   `json:"scale"`
	Gamma []float64   `json:"gamma"`
	Alpha []float64   `json:"alpha"`
	A     []float64   `json:"a"`
	N     int         `json:"n"`
}

type wireSub struct {
	W1 *wireMatrix `json:"w1"`
	W2 []float64   `json:"w2"`
	W3 float64     `json:"w3"`
}

type wireTwoHidden struct {
	Subs []wireSub `json:"subs"`
	Bias bool      `json:"bias"`
}

type wireCNN struct {
	Shape [3]int      `json:"shape"`
	Size  int         `json:"size"`
	Strd  int         `json:"stride"`
	Pad   int         `json:"pad"`
	Bias  bool        `json:"bias"`
	Pool  string      `json:"pool"`
	U     *wireMatrix `json:"u"`
	Alpha []float64   `json:"alpha"`
}

var poolNames = map[cnn.Pooling]string{cnn.AvgPool: "avg", cnn.MaxPool: "max"}

// matrices collects a file's matrices under their archive names when it is
// written as .npz (nil: inline JSON).
type matrices map[string]*mat.Dense

func (ms matrices) put(name string, m *mat.Dense) *wireMatrix {
	r, c := m.Dims()
	w := &wireMatrix{Rows: r, Cols: c}
	if ms != nil {
		ms[name] = m
		w.NPY = name
		return w
	}
	w.Data = make([]float64, 0, r*c)
	for i := 0; i < r; i++ {
		w.Data = append(w.Data, m.RawRowView(i)...)
	}
	return w
}

func (f *File) wire(ms matrices) *wireFile {
	w := &wireFile{Format: Format, Version: Version, Model: f.Model.String(),
		Input:  wireInput{Features: f.Input.Features, Names: f.Input.Names, Shift: f.Input.Shift, Scale: f.Input.Scale},
		Output: wireOutput{Decision: f.Output.Decision.String(), Classes: f.Output.Classes}}
	if f.Input.Shape != [3]int{} {
		s := f.Input.Shape
		w.Input.Shape = &s
	}
	switch f.Model {
	case ReLU:
		w.ReLU = &wireReLU{U: ms.put("relu.u", f.ReLU.U), Alpha: f.ReLU.Alpha, Bias: f.ReLU.Bias}
	case Gated:
		g := &wireGated{Gates: ms.put("gated.gates", f.Gated.Gates), Bias: f.Gated.Bias}
		for i, b := range f.Gated.W {
			g.W = append(g.W, ms.put(fmt.Sprintf("gated.w%d", i), b))
		}
		w.Gated = g
	case BatchNorm:
		b := f.BatchNorm
		w.BatchNorm = &wireBatchNorm{W: ms.put("batchnorm.w", b.W), Mean: b.Mean, Scale: b.Scale, Gamma: b.Gamma, Alpha: b.Alpha, A: b.A, N: b.N}
	case TwoHidden:
		t := &wireTwoHidden{Bias: f.TwoHidden.Bias}
		for k, s := range f.TwoHidden.Subs {
			t.Subs = append(t.Subs, wireSub{W1: ms.put(fmt.Sprintf("two_hidden.w1_%d", k), s.W1), W2: s.W2, W3: s.W3})
		}
		w.TwoHidden = t
	case MultiReLU:
		w.MultiReLU = &wireMultiReLU{U: ms.put("relu_multi.u", f.MultiReLU.U), A: ms.put("relu_multi.a", f.MultiReLU.A), Bias: f.MultiReLU.Bias}
	case CNN:
		c := f.CNN
		w.CNN = &wireCNN{Shape: [3]int{c.Shape.C, c.Shape.H, c.Shape.W}, Size: c.Conv.Size, Strd: c.Conv.Stride, Pad: c.Conv.Pad,
			Bias: c.Conv.Bias, Pool: poolNames[c.Pool], U: ms.put("cnn.u", c.U), Alpha: c.Alpha}
	}
	return w
}

// Save writes the file to path: JSON when path ends in .json, a NumPy
// archive when it ends in .npz.
func (f *File) Save(path string) error {
	if err := f.Validate(); err != nil {
		return err
	}
	var buf bytes.Buffer
	switch strings.ToLower(filepath.Ext(path)) {
	case ".json":
		enc := json.NewEncoder(&buf)
		enc.SetIndent("", " ")
		if err := enc.Encode(f.wire(nil)); err != nil {
			return fmt.Errorf("netfile: %w", err)
		}
	case ".npz":
		ms := matrices{}
		meta, err := json.Marshal(f.wire(ms))
		if err != nil {
			return fmt.Errorf("netfile: %w", err)
		}
		zw := zip.NewWriter(&buf)
		if err := writeNPY(zw, "meta", meta); err != nil {
			return err
		}
		for name, m := range ms {
			r, c := m.Dims()
			data := make([]float64, 0, r*c)
			for i := 0; i < r; i++ {
				data = append(data, m.RawRowView(i)...)
			}
			if err := writeNPY(zw, name, data); err != nil {
				return err
			}
		}
		if err := zw.Close(); err != nil {
			return fmt.Errorf("netfile: %w", err)
		}
	default:
		return fmt.Errorf("netfile: %s: save a network as .json or .npz", path)
	}
	// A reader sees the old file or the new one, never a torn one.
	if err := atomicfile.WriteBytes(path, 0o644, buf.Bytes()); err != nil {
		return fmt.Errorf("netfile: %w", err)
	}
	return nil
}

func writeNPY(zw *zip.Writer, name string, v any) error {
	w, err := zw.Create(name + ".npy")
	if err != nil {
		return fmt.Errorf("netfile: %w", err)
	}
	if err := npy.Write(w, v); err != nil {
		return fmt.Errorf("netfile: writing %s: %w", name, err)
	}
	return nil
}

// maxFile bounds the files Load reads (4 GiB).
const maxFile = 4 << 30

// Load reads a network file written by Save (.json or .npz, told apart by
// their first bytes). A file of another format or version, a corrupt or
// truncated one, or one whose parts do not fit together is an error that
// names the file and the field.
func Load(path string) (*File, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("netfile: %w", err)
	}
	f, err := Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("netfile: %s: %w", path, err)
	}
	return f, nil
}

// Parse reads a network file's bytes (JSON or NumPy archive).
func Parse(raw []byte) (*File, error) {
	if len(raw) > maxFile {
		return nil, fmt.Errorf("%d bytes is larger than a network file may be", len(raw))
	}
	var zr *zip.Reader
	var meta []byte
	if bytes.HasPrefix(raw, []byte("PK")) {
		var err error
		zr, err = zip.NewReader(bytes.NewReader(raw), int64(len(raw)))
		if err != nil {
			return nil, fmt.Errorf("corrupt NumPy archive: %w", err)
		}
		var m []uint8
		if err := readEntry(zr, "meta", 1<<26, &m); err != nil {
			return nil, err
		}
		meta = m
	} else {
		meta = raw
	}
	var probe struct {
		Format  string `json:"format"`
		Version int    `json:"version"`
	}
	if err := json.Unmarshal(meta, &probe); err != nil {
		return nil, fmt.Errorf("not a network file (corrupt JSON: %v)", err)
	}
	if probe.Format != Format {
		return nil, fmt.Errorf("not a network file (format %q, want %q)", probe.Format, Format)
	}
	if probe.Version != Version {
		return nil, fmt.Errorf("network file version %d; this convexnn reads version %d", probe.Version, Version)
	}
	dec := json.NewDecoder(bytes.NewReader(meta))
	dec.DisallowUnknownFields()
	var w wireFile
	if err := dec.Decode(&w); err != nil {
		return nil, fmt.Errorf("corrupt network file: %v", err)
	}
	return w.file(zr)
}

// readEntry reads the .npy entry name of the archive into ptr, refusing an
// entry larger than limit bytes before reading it.
func readEntry(zr *zip.Reader, name string, limit uint64, ptr any) error {
	for _, e := range zr.File {
		if e.Name != name+".npy" {
			continue
		}
		if e.UncompressedSize64 > limit {
			return fmt.Errorf("array %s has %d bytes, more than its %d", name, e.UncompressedSize64, limit)
		}
		rc, err := e.Open()
		if err != nil {
			return fmt.Errorf("array %s: %w", name, err)
		}
		defer rc.Close()
		body, err := io.ReadAll(io.LimitReader(rc, int64(limit)+1))
		if err != nil {
			return fmt.Errorf("array %s: %w", name, err)
		}
		return decodeNPY(name, body, ptr)
	}
	return fmt.Errorf("the archive has no array %s", name)
}

func decodeNPY(name string, body []byte, ptr any) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("array %s is corrupt (%v)", name, p)
		}
	}()
	g, err := npyhead.Guard(bytes.NewReader(body), int64(len(body)))
	if err != nil {
		return fmt.Errorf("array %s: %w", name, err)
	}
	r, err := npy.NewReader(g)
	if err != nil {
		return fmt.Errorf("array %s: %w", name, err)
	}
	elems := 1
	for _, d := range r.Header.Descr.Shape {
		if d < 0 || d > len(body) {
			return fmt.Errorf("array %s has shape %v", name, r.Header.Descr.Shape)
		}
		elems *= d
		if elems > len(body) {
			return fmt.Errorf("array %s: shape %v is larger than its %d bytes", name, r.Header.Descr.Shape, len(body))
		}
	}
	if err := r.Read(ptr); err != nil {
		return fmt.Errorf("array %s: %w", name, err)
	}
	return nil
}

func (w *wireFile) file(zr *zip.Reader) (*File, error) {
	model, err := parseModel(w.Model)
	if err != nil {
		return nil, err
	}
	dec, ok := Decision(0), false
	for d, name := range decisionNames {
		if name == w.Output.Decision {
			dec, ok = d, true
		}
	}
	if !ok {
		return nil, fmt.Errorf("output.decision %q is not sign, argmax or value", w.Output.Decision)
	}
	f := &File{Model: model,
		Input:  Input{Features: w.Input.Features, Names: w.Input.Names, Shift: w.Input.Shift, Scale: w.Input.Scale},
		Output: Output{Decision: dec, Classes: w.Output.Classes}}
	if w.Input.Shape != nil {
		f.Input.Shape = *w.Input.Shape
	}
	get := func(field string, m *wireMatrix) (*mat.Dense, error) {
		if m == nil {
			return nil, fmt.Errorf("%s is missing", field)
		}
		if m.Rows < 1 || m.Cols < 1 || m.Rows > maxFile/8/m.Cols {
			return nil, fmt.Errorf("%s is %d×%d", field, m.Rows, m.Cols)
		}
		data := m.Data
		if m.NPY != "" {
			if zr == nil {
				return nil, fmt.Errorf("%s refers to array %s outside a NumPy archive", field, m.NPY)
			}
			if err := readEntry(zr, m.NPY, uint64(m.Rows*m.Cols*8+4096), &data); err != nil {
				return nil, fmt.Errorf("%s: %w", field, err)
			}
		}
		if len(data) != m.Rows*m.Cols {
			return nil, fmt.Errorf("%s is %d×%d but holds %d numbers", field, m.Rows, m.Cols, len(data))
		}
		for i, v := range data {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return nil, fmt.Errorf("%s[%d] is %v", field, i, v)
			}
		}
		return mat.NewDense(m.Rows, m.Cols, data), nil
	}
	present := 0
	for _, p := range []bool{w.ReLU != nil, w.Gated != nil, w.BatchNorm != nil, w.TwoHidden != nil, w.CNN != nil, w.MultiReLU != nil} {
		if p {
			present++
		}
	}
	if present != 1 {
		return nil, fmt.Errorf("model %s: the file holds %d networks, want exactly 1", w.Model, present)
	}
	switch model {
	case ReLU:
		if w.ReLU == nil {
			return nil, errors.New("model relu without its relu field")
		}
		u, err := get("relu.u", w.ReLU.U)
		if err != nil {
			return nil, err
		}
		f.ReLU = &solvers.Network{U: u, Alpha: w.ReLU.Alpha, Bias: w.ReLU.Bias}
	case Gated:
		if w.Gated == nil {
			return nil, errors.New("model gated without its gated field")
		}
		g, err := get("gated.gates", w.Gated.Gates)
		if err != nil {
			return nil, err
		}
		net := &gated.Network{Gates: g, Bias: w.Gated.Bias}
		for i, b := range w.Gated.W {
			m, err := get(fmt.Sprintf("gated.w[%d]", i), b)
			if err != nil {
				return nil, err
			}
			net.W = append(net.W, m)
		}
		f.Gated = net
	case BatchNorm:
		b := w.BatchNorm
		if b == nil {
			return nil, errors.New("model batchnorm without its batchnorm field")
		}
		m, err := get("batchnorm.w", b.W)
		if err != nil {
			return nil, err
		}
		f.BatchNorm = &batchnorm.Network{W: m, Mean: b.Mean, Scale: b.Scale, Gamma: b.Gamma, Alpha: b.Alpha, A: b.A, N: b.N}
	case TwoHidden:
		t := w.TwoHidden
		if t == nil {
			return nil, errors.New("model two-hidden without its two_hidden field")
		}
		net := &twohidden.Network{Bias: t.Bias}
		for k, s := range t.Subs {
			m, err := get(fmt.Sprintf("two_hidden.subs[%d].w1", k), s.W1)
			if err != nil {
				return nil, err
			}
			net.Subs = append(net.Subs, twohidden.SubNetwork{W1: m, W2: s.W2, W3: s.W3})
		}
		f.TwoHidden = net
	case MultiReLU:
		r := w.MultiReLU
		if r == nil {
			return nil, errors.New("model relu-multi without its relu_multi field")
		}
		u, err := get("relu_multi.u", r.U)
		if err != nil {
			return nil, err
		}
		a, err := get("relu_multi.a", r.A)
		if err != nil {
			return nil, err
		}
		f.MultiReLU = &solvers.MultiNetwork{U: u, A: a, Bias: r.Bias}
	case CNN:
		c := w.CNN
		if c == nil {
			return nil, errors.New("model cnn without its cnn field")
		}
		u, err := get("cnn.u", c.U)
		if err != nil {
			return nil, err
		}
		pool := cnn.AvgPool
		switch c.Pool {
		case poolNames[cnn.AvgPool]:
		case poolNames[cnn.MaxPool]:
			pool = cnn.MaxPool
		default:
			return nil, fmt.Errorf("cnn.pool %q is not avg or max", c.Pool)
		}
		f.CNN = &cnn.Network{Shape: cnn.Shape{C: c.Shape[0], H: c.Shape[1], W: c.Shape[2]},
			Conv: cnn.Conv{Size: c.Size, Stride: c.Strd, Pad: c.Pad, Bias: c.Bias}, Pool: pool, U: u, Alpha: c.Alpha}
	}
	if err := f.Validate(); err != nil {
		return nil, strip(err)
	}
	return f, nil
}

// strip drops the package prefix of a Validate error inside Load's.
func strip(err error) error {
	return errors.New(strings.TrimPrefix(err.Error(), "netfile: "))
}
