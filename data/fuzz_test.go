package data

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/iotest"
)

// The seeds below are added with f.Add and also written, by
// go test -run TestParseFixtures -update-parse-fixtures ./data/, as the seed
// corpora testdata/fuzz/<FuzzName>/<seed>.

func fuzzIDXImagesSeeds(tb testing.TB) map[string][]byte {
	raw := tinyIDXImagesFile()
	gz := gzipped(tb, raw)
	return map[string][]byte{
		"tiny-raw":                 raw,
		"tiny-gz":                  gz,
		"empty":                    {},
		"label-file":               tinyIDXLabelsFile(),
		"truncated":                raw[:30],
		"truncated-gz":             gz[:len(gz)/2],
		"trailing-byte":            append(slices.Clone(raw), 9),
		"more-images-than-present": append(idxHeader(idxImagesMagic, 200, 3, 4), raw[16:]...),
		"huge-header":              idxHeader(idxImagesMagic, 0xffffffff, 28, 28),
		"2GiB-claim":               idxHeader(idxImagesMagic, 1<<21, 32, 32),
		"2GiB-claim-gz":            gzipped(tb, idxHeader(idxImagesMagic, 1<<21, 32, 32)),
	}
}

type labelSeed struct {
	in  []byte
	max uint8
}

func fuzzIDXLabelsSeeds(tb testing.TB) map[string]labelSeed {
	raw := tinyIDXLabelsFile()
	gz := gzipped(tb, raw)
	return map[string]labelSeed{
		"tiny-raw":     {raw, 9},
		"tiny-gz":      {gz, 9},
		"out-of-range": {raw, 5},
		"image-file":   {tinyIDXImagesFile(), 9},
		"truncated":    {raw[:9], 9},
		"truncated-gz": {gz[:len(gz)-6], 9},
		"huge-count":   {idxHeader(idxLabelsMagic, 0xffffffff), 9},
		"2GiB-claim":   {idxHeader(idxLabelsMagic, 1<<31), 255},
	}
}

func fuzzCIFARSeeds(tb testing.TB) map[string][]byte {
	raw := tinyCIFARFile()
	bad := slices.Clone(raw)
	bad[cifarRecord] = 10
	return map[string][]byte{
		"tiny":           raw,
		"one-record":     raw[:cifarRecord],
		"partial-record": raw[:cifarRecord+100],
		"bad-label":      bad,
		"empty":          {},
		"gzip":           gzipped(tb, raw),
	}
}

func fuzzMammographicSeeds() map[string][]byte {
	return map[string][]byte{
		"tiny":             []byte(tinyMammographicFile),
		"crlf":             []byte("5,67,3,5,3,1\r\n4,43,1,1,?,1\r\n"),
		"few-fields":       []byte("5,67,3,5,3,1\n4,43,1,1,1\n"),
		"not-a-number":     []byte("5,abc,3,5,3,1\n"),
		"missing-severity": []byte("5,67,3,5,3,?\n"),
		"blank-inside":     []byte("5,67,3,5,3,1\n\n5,67,3,5,3,1\n"),
		"empty":            {},
	}
}

// writeFuzzCorpora writes the seeds as corpus files in Go's format.
func writeFuzzCorpora(tb testing.TB) {
	write := func(fuzz, name string, args ...any) {
		var b strings.Builder
		b.WriteString("go test fuzz v1\n")
		for _, a := range args {
			switch v := a.(type) {
			case []byte:
				fmt.Fprintf(&b, "[]byte(%q)\n", v)
			case uint8:
				fmt.Fprintf(&b, "uint8(%d)\n", v)
			default:
				tb.Fatalf("no corpus encoding for %T", a)
			}
		}
		writeTestdata(tb, filepath.Join("testdata", "fuzz", fuzz, name), []byte(b.String()))
	}
	for name, in := range fuzzIDXImagesSeeds(tb) {
		write("FuzzReadIDXImages", name, in)
	}
	for name, s := range fuzzIDXLabelsSeeds(tb) {
		write("FuzzReadIDXLabels", name, s.in, s.max)
	}
	for name, in := range fuzzCIFARSeeds(tb) {
		write("FuzzReadCIFAR", name, in)
	}
	for name, in := range fuzzMammographicSeeds() {
		write("FuzzReadMammographic", name, in)
	}
}

// fuzzGzipWriters keeps gzip writers between executions: a new one costs
// about a megabyte of state.
var fuzzGzipWriters = sync.Pool{New: func() any {
	zw, _ := gzip.NewWriterLevel(nil, gzip.BestSpeed)
	return zw
}}

// fuzzGzip returns b gzip-compressed.
func fuzzGzip(t *testing.T, b []byte) []byte {
	var buf bytes.Buffer
	zw := fuzzGzipWriters.Get().(*gzip.Writer)
	defer fuzzGzipWriters.Put(zw)
	zw.Reset(&buf)
	if _, err := zw.Write(b); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func isGzip(b []byte) bool { return len(b) >= 2 && b[0] == 0x1f && b[1] == 0x8b }

// sameOutcome fails unless two reads of the same input, through different
// readers, gave the same error text or equal results.
func sameOutcome[T any](t *testing.T, what string, a T, errA error, b T, errB error, equal func(a, b T) bool) {
	t.Helper()
	switch {
	case (errA == nil) != (errB == nil):
		t.Fatalf("%s: errors differ: %v and %v", what, errA, errB)
	case errA != nil && errA.Error() != errB.Error():
		t.Fatalf("%s: error texts differ:\n%v\n%v", what, errA, errB)
	case errA == nil && !equal(a, b):
		t.Fatalf("%s: results differ", what)
	}
}

func sameImages(a, b *Images) bool {
	return a.Channels == b.Channels && a.Height == b.Height && a.Width == b.Width &&
		bytes.Equal(a.Pix, b.Pix) && bytes.Equal(a.Labels, b.Labels) && slices.Equal(a.Classes, b.Classes)
}

func FuzzReadIDXImages(f *testing.F) {
	for _, in := range fuzzIDXImagesSeeds(f) {
		f.Add(in)
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		im, err := ReadIDXImages(bytes.NewReader(in))
		if err == nil {
			if im.Channels != 1 || im.Height <= 0 || im.Width <= 0 || im.Labels != nil ||
				len(im.Pix)%im.Size() != 0 {
				t.Fatalf("inconsistent images: %d×%d×%d, %d bytes, labels %v",
					im.Channels, im.Height, im.Width, len(im.Pix), im.Labels)
			}
			if !isGzip(in) {
				n := int(binary.BigEndian.Uint32(in[4:]))
				if len(im.Pix) != n*im.Size() || !bytes.Equal(im.Pix, in[16:]) {
					t.Fatalf("pixels are not the %d×%d bytes after the header", n, im.Size())
				}
			}
		} else if im != nil {
			t.Fatalf("images returned with error %v", err)
		}
		im2, err2 := ReadIDXImages(iotest.HalfReader(bytes.NewReader(in)))
		sameOutcome(t, "size known and unknown", im, err, im2, err2, sameImages)
		if !isGzip(in) {
			im3, err3 := ReadIDXImages(bytes.NewReader(fuzzGzip(t, in)))
			if (err == nil) != (err3 == nil) || err == nil && !sameImages(im, im3) {
				t.Fatalf("raw and gzip-compressed input differ: %v and %v", err, err3)
			}
		}
	})
}

func FuzzReadIDXLabels(f *testing.F) {
	for _, s := range fuzzIDXLabelsSeeds(f) {
		f.Add(s.in, s.max)
	}
	f.Fuzz(func(t *testing.T, in []byte, maxLabel uint8) {
		labels, err := ReadIDXLabels(bytes.NewReader(in), maxLabel)
		if err == nil {
			if i := slices.IndexFunc(labels, func(l uint8) bool { return l > maxLabel }); i >= 0 {
				t.Fatalf("label %d is %d > %d", i, labels[i], maxLabel)
			}
			if !isGzip(in) && !bytes.Equal(labels, in[8:]) {
				t.Fatalf("labels are not the bytes after the header")
			}
		} else if labels != nil {
			t.Fatalf("labels returned with error %v", err)
		}
		labels2, err2 := ReadIDXLabels(iotest.HalfReader(bytes.NewReader(in)), maxLabel)
		sameOutcome(t, "size known and unknown", labels, err, labels2, err2, bytes.Equal)
		if !isGzip(in) {
			labels3, err3 := ReadIDXLabels(bytes.NewReader(fuzzGzip(t, in)), maxLabel)
			if (err == nil) != (err3 == nil) || !bytes.Equal(labels, labels3) {
				t.Fatalf("raw and gzip-compressed input differ: %v and %v", err, err3)
			}
		}
	})
}

func FuzzReadCIFAR(f *testing.F) {
	for _, in := range fuzzCIFARSeeds(f) {
		f.Add(in)
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		im, err := ReadCIFAR(bytes.NewReader(in))
		valid := len(in) > 0 && len(in)%cifarRecord == 0
		for k := 0; valid && k < len(in); k += cifarRecord {
			valid = in[k] <= 9
		}
		if valid != (err == nil) {
			t.Fatalf("valid input %v, error %v", valid, err)
		}
		if err != nil {
			if im != nil {
				t.Fatalf("images returned with error %v", err)
			}
		} else {
			n := len(in) / cifarRecord
			if im.Channels != 3 || im.Height != 32 || im.Width != 32 || im.Len() != n || len(im.Pix) != n*cifarPixels {
				t.Fatalf("%d×%d×%d, %d labels, %d bytes for %d records",
					im.Channels, im.Height, im.Width, im.Len(), len(im.Pix), n)
			}
			for k := range n {
				rec := in[k*cifarRecord : (k+1)*cifarRecord]
				if im.Labels[k] != rec[0] || !bytes.Equal(im.Image(k), rec[1:]) {
					t.Fatalf("record %d differs", k)
				}
			}
		}
		im2, err2 := ReadCIFAR(iotest.HalfReader(bytes.NewReader(in)))
		sameOutcome(t, "size known and unknown", im, err, im2, err2, sameImages)
	})
}

func FuzzReadMammographic(f *testing.F) {
	for _, in := range fuzzMammographicSeeds() {
		f.Add(in)
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		tab, err := ReadMammographic(bytes.NewReader(in))
		if err == nil {
			if !slices.Equal(tab.Columns, mammographicColumns) || len(tab.Rows) == 0 ||
				len(tab.Rows) > bytes.Count(in, []byte("\n"))+1 {
				t.Fatalf("columns %v, %d rows", tab.Columns, len(tab.Rows))
			}
			for i, r := range tab.Rows {
				if len(r) != 6 || (r[5] != 0 && r[5] != 1) || slices.ContainsFunc(r, func(v float64) bool { return math.IsInf(v, 0) }) {
					t.Fatalf("row %d: %v", i, r)
				}
			}
		} else if tab != nil {
			t.Fatalf("table returned with error %v", err)
		}
		tab2, err2 := ReadMammographic(iotest.HalfReader(bytes.NewReader(in)))
		sameOutcome(t, "size known and unknown", tab, err, tab2, err2, func(a, b *Table) bool {
			return slices.Equal(a.Columns, b.Columns) && slices.EqualFunc(a.Rows, b.Rows, func(x, y []float64) bool {
				return slices.EqualFunc(x, y, func(u, v float64) bool { return u == v || math.IsNaN(u) && math.IsNaN(v) })
			})
		})
	})
}
