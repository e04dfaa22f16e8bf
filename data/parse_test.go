package data

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/convexnn/convexnn/internal/testenv"
)

var updateParseFixtures = flag.Bool("update-parse-fixtures", false,
	"rewrite the parser fixtures and fuzz seed corpora in testdata")

// The tiny fixtures: 2 images of 3x4 pixels with labels 3 and 7, 2 CIFAR
// records (bird, ship) and a few mammographic lines.

func tinyIDXImagesFile() []byte {
	b := idxHeader(idxImagesMagic, 2, 3, 4)
	for i := range 2 * 3 * 4 {
		b = append(b, byte(10*i+1))
	}
	return b
}

func tinyIDXLabelsFile() []byte { return append(idxHeader(idxLabelsMagic, 2), 3, 7) }

func tinyCIFARFile() []byte {
	var b []byte
	for k, l := range []byte{2, 8} {
		b = append(b, l)
		for i := range cifarPixels {
			b = append(b, byte((k*cifarPixels+i)%251))
		}
	}
	return b
}

const tinyMammographicFile = "5,67,3,5,3,1\n" +
	"4,43,1,1,?,1\r\n" +
	"55,46,4,3,3,1\n" +
	"0,?,?,?,?,0\n" +
	"3, 28 ,1,1,3,0\n" +
	"\n"

// idxHeader returns an IDX header: the magic number then the sizes.
func idxHeader(magic uint32, dims ...uint32) []byte {
	b := binary.BigEndian.AppendUint32(nil, magic)
	for _, d := range dims {
		b = binary.BigEndian.AppendUint32(b, d)
	}
	return b
}

// gzipped returns b gzip-compressed.
func gzipped(tb testing.TB, b []byte) []byte {
	tb.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if _, err := zw.Write(b); err != nil {
		tb.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		tb.Fatal(err)
	}
	return buf.Bytes()
}

// gunzipped returns b decompressed.
func gunzipped(tb testing.TB, b []byte) []byte {
	tb.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		tb.Fatal(err)
	}
	out, err := io.ReadAll(zr)
	if err != nil {
		tb.Fatal(err)
	}
	return out
}

// wantError fails unless err is non-nil and its text contains every one of
// parts.
func wantError(tb testing.TB, err error, parts ...string) {
	tb.Helper()
	if err == nil {
		tb.Fatalf("no error, want one mentioning %q", parts)
	}
	for _, p := range parts {
		if !strings.Contains(err.Error(), p) {
			tb.Fatalf("error %q does not mention %q", err, p)
		}
	}
}

// requireSharedData returns the shared data folder (testenv.SharedData).
func requireSharedData(tb testing.TB) string {
	tb.Helper()
	return testenv.SharedData(tb)
}

// openShared opens a file of the shared data folder.
func openShared(tb testing.TB, dir, name string) *os.File {
	tb.Helper()
	f, err := os.Open(filepath.Join(dir, filepath.FromSlash(name)))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { f.Close() })
	return f
}

// readShared returns the contents of a file of the shared data folder.
func readShared(tb testing.TB, dir, name string) []byte {
	tb.Helper()
	b, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(name)))
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

// labelCounts returns how many times each label 0…n-1 occurs.
func labelCounts(labels []uint8, n int) []int {
	c := make([]int, n)
	for _, l := range labels {
		c[l]++
	}
	return c
}

// readers returns the ways the tests feed a byte slice to a parser: a
// bytes.Reader (size known in advance), and readers hiding the size and
// returning short reads, which take the growing-buffer path.
func readers(b []byte) map[string]io.Reader {
	return map[string]io.Reader{
		"bytes":   bytes.NewReader(b),
		"half":    iotest.HalfReader(bytes.NewReader(b)),
		"onebyte": iotest.OneByteReader(bytes.NewReader(b)),
	}
}

func TestReadIDXImagesTiny(t *testing.T) {
	raw := tinyIDXImagesFile()
	for name, in := range map[string][]byte{"raw": raw, "gz": gzipped(t, raw)} {
		for rname, r := range readers(in) {
			im, err := ReadIDXImages(r)
			if err != nil {
				t.Fatalf("%s/%s: %v", name, rname, err)
			}
			if im.Channels != 1 || im.Height != 3 || im.Width != 4 || im.Labels != nil || im.Classes != nil {
				t.Fatalf("%s/%s: got %d×%d×%d, labels %v, classes %v", name, rname,
					im.Channels, im.Height, im.Width, im.Labels, im.Classes)
			}
			if !bytes.Equal(im.Pix, raw[16:]) {
				t.Fatalf("%s/%s: pixels %v, want %v", name, rname, im.Pix, raw[16:])
			}
		}
	}
	labels, err := ReadIDXLabels(bytes.NewReader(gzipped(t, tinyIDXLabelsFile())), 9)
	if err != nil || !slices.Equal(labels, []uint8{3, 7}) {
		t.Fatalf("labels %v, %v", labels, err)
	}
	im, _ := ReadIDXImages(bytes.NewReader(raw))
	im.Labels = labels
	if im.Len() != 2 || im.Size() != 12 || !bytes.Equal(im.Image(1), raw[16+12:]) {
		t.Fatalf("Len %d, Size %d, image 1 %v", im.Len(), im.Size(), im.Image(1))
	}
}

// TestReadIDXGrowing reads a payload larger than the first allocation of the
// growing path, from readers that hide their size.
func TestReadIDXGrowing(t *testing.T) {
	const n, rows, cols = 300, 28, 28 // 235200 bytes > growStart
	raw := idxHeader(idxImagesMagic, n, rows, cols)
	for i := range n * rows * cols {
		raw = append(raw, byte(i*7))
	}
	gz := gzipped(t, raw)
	// Three gzip members, the payload split across them, as bgzip writes.
	members := slices.Concat(gzipped(t, raw[:1000]), gzipped(t, nil), gzipped(t, raw[1000:]))
	for name, r := range map[string]io.Reader{
		"members":  bytes.NewReader(members),
		"raw":      iotest.HalfReader(bytes.NewReader(raw)),
		"gz":       iotest.HalfReader(bytes.NewReader(gz)),
		"raw-file": struct{ io.Reader }{bytes.NewReader(raw)},
	} {
		im, err := ReadIDXImages(r)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !bytes.Equal(im.Pix, raw[16:]) {
			t.Fatalf("%s: pixels differ", name)
		}
	}
	// Truncated on the growing path: the count found is exact.
	_, err := ReadIDXImages(iotest.HalfReader(bytes.NewReader(raw[:len(raw)-1000])))
	wantError(t, err, "truncated", fmt.Sprint(n*rows*cols), fmt.Sprint(n*rows*cols-1000))
}

func TestReadIDXFile(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "tiny.gz")
	if err := os.WriteFile(p, gzipped(t, tinyIDXImagesFile()), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if inputSizeHint(f) <= 0 {
		t.Fatalf("no size hint for a regular file")
	}
	im, err := ReadIDXImages(f)
	if err != nil || len(im.Pix) != 24 {
		t.Fatalf("%v, %v", im, err)
	}
}

func TestReadIDXErrors(t *testing.T) {
	raw := tinyIDXImagesFile()
	gz := gzipped(t, raw)
	badCRC := slices.Clone(gz)
	badCRC[len(badCRC)-8] ^= 0xff // CRC-32 in the trailer
	badLen := slices.Clone(gz)
	badLen[len(badLen)-4]++ // ISIZE in the trailer: the payload length
	for _, c := range []struct {
		name string
		in   []byte
		want []string
	}{
		{"empty", nil, []string{"IDX images: empty input"}},
		{"short header", raw[:10], []string{"header is 10 bytes, want 16"}},
		{"label file", tinyIDXLabelsFile(), []string{"IDX magic 0x00000801, want 0x00000803 (images): is this a label file?"}},
		{"3 dims", append(idxHeader(0x0804, 2, 3, 4, 1), raw[16:]...), []string{"IDX magic 0x00000804", "4 dimensions, want 3"}},
		{"floats", append(idxHeader(0x0d03, 2, 3, 4), raw[16:]...), []string{"element type 0x0d, want 0x08"}},
		{"not IDX", []byte("hello, world, this is text"), []string{"IDX magic 0x68656c6c", "not an IDX file"}},
		{"zero rows", idxHeader(idxImagesMagic, 2, 0, 4), []string{"images of 0x4 pixels"}},
		{"truncated", raw[:len(raw)-5], []string{"truncated", "announces 24 bytes of pixels, found 19"}},
		{"more images than present", append(idxHeader(idxImagesMagic, 200, 3, 4), raw[16:]...),
			[]string{"truncated", "announces 2400 bytes of pixels, found 24"}},
		{"huge header", idxHeader(idxImagesMagic, 0xffffffff, 28, 28), []string{"4294967295 images of 28x28", "2147483648-byte limit"}},
		{"huge image", idxHeader(idxImagesMagic, 1, 0xffffffff, 0xffffffff), []string{"limit"}},
		{"trailing bytes", append(slices.Clone(raw), 1, 2, 3), []string{"3 extra bytes after the pixels"}},
		{"gz cut in the middle", gz[:len(gz)/2], []string{"gzip stream truncated"}},
		{"gz cut in the gzip header", gz[:5], []string{"gzip header", "unexpected EOF"}},
		{"gz cut in the IDX header", gz[:12], []string{"gzip stream truncated in the header"}},
		{"gz trailer missing", gz[:len(gz)-8], []string{"gzip stream truncated after the pixels: its end or trailer is missing"}},
		{"gz short payload", gzipped(t, raw[:len(raw)-5]), []string{"truncated", "announces 24 bytes of pixels, found 19"}},
		{"gz long payload", gzipped(t, append(slices.Clone(raw), 0, 0)), []string{"2 extra bytes after the pixels"}},
		{"gz wrong length in trailer", badLen, []string{"gzip trailer does not match", "checksum"}},
		{"gz wrong CRC", badCRC, []string{"gzip trailer does not match", "checksum"}},
		{"gz then garbage", append(slices.Clone(gz), "garbage"...), []string{"after the pixels: bytes after the gzip stream do not start a gzip member: unexpected EOF"}},
		{"gz then more garbage", append(slices.Clone(gz), "more garbage"...), []string{"do not start a gzip member: gzip: invalid header"}},
		{"gz then a gzip member", append(slices.Clone(gz), gzipped(t, []byte{1, 2})...), []string{"2 extra bytes after the pixels"}},
		{"gz cut in the 2nd member", append(slices.Clone(gz), gzipped(t, []byte{1, 2})[:14]...), []string{"gzip stream truncated after the pixels"}},
	} {
		for rname, r := range readers(c.in) {
			im, err := ReadIDXImages(r)
			if im != nil {
				t.Errorf("%s/%s: got images with error %v", c.name, rname, err)
			}
			wantError(t, err, c.want...)
		}
	}
	// An I/O error is wrapped, not hidden.
	_, err := ReadIDXImages(iotest.TimeoutReader(iotest.OneByteReader(bytes.NewReader(gz))))
	if !errors.Is(err, iotest.ErrTimeout) {
		t.Fatalf("error %v does not wrap the reader's", err)
	}
}

func TestReadIDXLabelsErrors(t *testing.T) {
	raw := tinyIDXLabelsFile()
	for _, c := range []struct {
		name string
		in   []byte
		max  uint8
		want []string
	}{
		{"image file", tinyIDXImagesFile(), 9, []string{"IDX magic 0x00000803, want 0x00000801 (labels): is this an image file?"}},
		{"out of range", raw, 5, []string{"item 1 has label 7, want ≤ 5"}},
		{"truncated", raw[:9], 9, []string{"truncated", "announces 2 bytes of labels, found 1"}},
		{"short header", raw[:3], 9, []string{"header is 3 bytes, want 8"}},
		{"huge count", idxHeader(idxLabelsMagic, 0xffffffff), 9, []string{"4294967295 labels", "limit"}},
		{"trailing", append(slices.Clone(raw), 0), 9, []string{"1 extra bytes after the labels"}},
		{"gz cut", gzipped(t, raw)[:20], 9, []string{"gzip stream truncated"}},
	} {
		for rname, r := range readers(c.in) {
			l, err := ReadIDXLabels(r, c.max)
			if l != nil {
				t.Errorf("%s/%s: got labels with error %v", c.name, rname, err)
			}
			wantError(t, err, c.want...)
		}
	}
	l, err := ReadIDXLabels(bytes.NewReader(idxHeader(idxLabelsMagic, 0)), 0)
	if err != nil || len(l) != 0 {
		t.Fatalf("no labels: %v, %v", l, err)
	}
}

// TestReadIDXHostileHeaderMemory checks that a header announcing 2 GiB of
// pixels over a few bytes of input allocates little before failing.
func TestReadIDXHostileHeaderMemory(t *testing.T) {
	in := append(idxHeader(idxImagesMagic, 1<<21, 32, 32), 1, 2, 3) // exactly 2³¹ bytes announced
	gz := gzipped(t, in)
	for name, r := range map[string]io.Reader{
		"bytes":    bytes.NewReader(in),
		"gz":       bytes.NewReader(gz),
		"unknown":  struct{ io.Reader }{bytes.NewReader(in)},
		"gz-unkn.": struct{ io.Reader }{bytes.NewReader(gz)},
	} {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		_, err := ReadIDXImages(r)
		runtime.ReadMemStats(&after)
		wantError(t, err, "truncated", "2147483648 bytes of pixels, found 3")
		if d := after.TotalAlloc - before.TotalAlloc; d > 16<<20 {
			t.Errorf("%s: %d bytes allocated for a 2 GiB header over %d bytes", name, d, len(in))
		}
	}
}

func TestReadCIFARTiny(t *testing.T) {
	raw := tinyCIFARFile()
	for rname, r := range readers(raw) {
		im, err := ReadCIFAR(r)
		if err != nil {
			t.Fatalf("%s: %v", rname, err)
		}
		if im.Channels != 3 || im.Height != 32 || im.Width != 32 || im.Len() != 2 {
			t.Fatalf("%s: %d×%d×%d, %d images", rname, im.Channels, im.Height, im.Width, im.Len())
		}
		if !slices.Equal(im.Labels, []uint8{2, 8}) || im.ClassName(2) != "bird" || im.ClassName(8) != "ship" {
			t.Fatalf("%s: labels %v, classes %v", rname, im.Labels, im.Classes)
		}
		if !bytes.Equal(im.Image(1), raw[cifarRecord+1:]) || !bytes.Equal(im.Image(0), raw[1:cifarRecord]) {
			t.Fatalf("%s: pixels differ", rname)
		}
	}
}

func TestReadCIFARErrors(t *testing.T) {
	raw := tinyCIFARFile()
	badLabel := slices.Clone(raw)
	badLabel[cifarRecord] = 10
	for _, c := range []struct {
		name string
		in   []byte
		want []string
	}{
		{"empty", nil, []string{"CIFAR: empty input"}},
		{"partial record", append(slices.Clone(raw), raw[:100]...), []string{"record 2 is partial: 100 bytes, want 3073"}},
		{"short single record", raw[:3000], []string{"record 0 is partial: 3000 bytes, want 3073"}},
		{"label > 9", badLabel, []string{"record 1: label 10, want 0-9"}},
		{"gzip", gzipped(t, raw), []string{"CIFAR: the input is gzip-compressed (starts with 1f 8b)"}},
	} {
		for rname, r := range readers(c.in) {
			im, err := ReadCIFAR(r)
			if im != nil {
				t.Errorf("%s/%s: got images with error %v", c.name, rname, err)
			}
			wantError(t, err, c.want...)
		}
	}
	_, err := ReadCIFAR(iotest.TimeoutReader(iotest.OneByteReader(bytes.NewReader(raw))))
	if !errors.Is(err, iotest.ErrTimeout) {
		t.Fatalf("error %v does not wrap the reader's", err)
	}
	_, err = ReadCIFAR(iotest.TimeoutReader(bytes.NewReader(slices.Concat(raw, raw, raw, raw, raw, raw, raw, raw, raw, raw, raw, raw))))
	wantError(t, err, "reading record")
	if !errors.Is(err, iotest.ErrTimeout) {
		t.Fatalf("error %v does not wrap the reader's", err)
	}
}

func TestReadMammographicTiny(t *testing.T) {
	tab, err := ReadMammographic(strings.NewReader(tinyMammographicFile))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(tab.Columns, []string{"BI-RADS", "Age", "Shape", "Margin", "Density", "Severity"}) {
		t.Fatalf("columns %v", tab.Columns)
	}
	nan := math.NaN()
	want := [][]float64{
		{5, 67, 3, 5, 3, 1},
		{4, 43, 1, 1, nan, 1},
		{55, 46, 4, 3, 3, 1},
		{0, nan, nan, nan, nan, 0},
		{3, 28, 1, 1, 3, 0},
	}
	same := func(a, b float64) bool { return a == b || math.IsNaN(a) && math.IsNaN(b) }
	if len(tab.Rows) != len(want) {
		t.Fatalf("%d rows, want %d", len(tab.Rows), len(want))
	}
	for i, r := range tab.Rows {
		if !slices.EqualFunc(r, want[i], same) {
			t.Fatalf("row %d: %v, want %v", i, r, want[i])
		}
	}
	// Several trailing blank lines, no final newline, a byte order mark.
	for _, in := range []string{"1,2,3,4,5,0\n\n\r\n  \n", "1,2,3,4,5,0", "\ufeff1,2,3,4,5,0\n"} {
		tab, err := ReadMammographic(strings.NewReader(in))
		if err != nil || len(tab.Rows) != 1 {
			t.Fatalf("%q: %v, %v", in, tab, err)
		}
	}
}

func TestReadMammographicErrors(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"", "mammographic: no rows"},
		{"\n\n", "mammographic: no rows"},
		{"5,67,3,5,3,1\n4,43,1,1,1\n", "line 2: 5 fields, want 6"},
		{"5,67,3,5,3,1,0\n", "line 1: 7 fields, want 6"},
		{"5,67,3,5,3,1\n5,67,3,5,3,1\n4,abc,1,1,1,0\n", `line 3, field Age: "abc" is not a number`},
		{"5,67,3,5,3,?\n", "line 1, field Severity: missing"},
		{"5,67,3,5,3,2\n", "line 1, field Severity: 2, want 0 or 1"},
		{"5,67,3,5,3,0.5\n", "line 1, field Severity: 0.5, want 0 or 1"},
		{"5,67,,5,3,1\n", "line 1, field Shape: empty"},
		{"5,67,3,5,Inf,1\n", `line 1, field Density: "Inf" is not a number`},
		{"5,67,3,5,NaN,1\n", `line 1, field Density: "NaN" is not a number`},
		{"5,67,3,5,3,1\n\n5,67,3,5,3,1\n", "line 2: blank line before more data (line 3)"},
		{"5,67,3,5,3,1\n" + strings.Repeat("1", 70000) + "\n", "line 2: longer than 65536 bytes"},
	} {
		for rname, r := range readers([]byte(c.in)) {
			tab, err := ReadMammographic(r)
			if tab != nil {
				t.Errorf("%q/%s: got a table with error %v", c.in, rname, err)
			}
			wantError(t, err, c.want)
		}
	}
	_, err := ReadMammographic(iotest.TimeoutReader(iotest.OneByteReader(strings.NewReader(tinyMammographicFile))))
	if !errors.Is(err, iotest.ErrTimeout) {
		t.Fatalf("error %v does not wrap the reader's", err)
	}
}

// TestParseFixtures checks the files in testdata against the generators
// above; -update-parse-fixtures rewrites them and the fuzz seed corpora.
func TestParseFixtures(t *testing.T) {
	files := map[string][]byte{
		"tiny-images-idx3-ubyte":    tinyIDXImagesFile(),
		"tiny-images-idx3-ubyte.gz": gzipped(t, tinyIDXImagesFile()),
		"tiny-labels-idx1-ubyte":    tinyIDXLabelsFile(),
		"tiny-labels-idx1-ubyte.gz": gzipped(t, tinyIDXLabelsFile()),
		"tiny-cifar.bin":            tinyCIFARFile(),
		"tiny-mammographic.data":    []byte(tinyMammographicFile),
	}
	if *updateParseFixtures {
		for name, b := range files {
			writeTestdata(t, filepath.Join("testdata", name), b)
		}
		writeFuzzCorpora(t)
	}
	for name, want := range files {
		got, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			t.Fatalf("%v (run go test -run TestParseFixtures -update-parse-fixtures ./data/)", err)
		}
		if strings.HasSuffix(name, ".gz") { // compressed bytes may differ between Go versions
			got, want = gunzipped(t, got), gunzipped(t, want)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("testdata/%s is not what the generator gives: run with -update-parse-fixtures", name)
		}
	}
	// The committed files parse.
	open := func(name string) *os.File {
		f, err := os.Open(filepath.Join("testdata", name))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.Close() })
		return f
	}
	for _, name := range []string{"tiny-images-idx3-ubyte", "tiny-images-idx3-ubyte.gz"} {
		if im, err := ReadIDXImages(open(name)); err != nil || len(im.Pix) != 24 {
			t.Errorf("%s: %v", name, err)
		}
	}
	for _, name := range []string{"tiny-labels-idx1-ubyte", "tiny-labels-idx1-ubyte.gz"} {
		if l, err := ReadIDXLabels(open(name), 9); err != nil || len(l) != 2 {
			t.Errorf("%s: %v", name, err)
		}
	}
	if im, err := ReadCIFAR(open("tiny-cifar.bin")); err != nil || im.Len() != 2 {
		t.Errorf("tiny-cifar.bin: %v", err)
	}
	if tab, err := ReadMammographic(open("tiny-mammographic.data")); err != nil || len(tab.Rows) != 5 {
		t.Errorf("tiny-mammographic.data: %v", err)
	}
}

// writeTestdata writes b to path, creating its folder.
func writeTestdata(tb testing.TB, path string, b []byte) {
	tb.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		tb.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		tb.Fatal(err)
	}
}

// The real files of ../shared/data (see its README for sizes and counts).

func TestReadMNIST(t *testing.T) {
	dir := requireSharedData(t)
	for _, c := range []struct {
		set    string
		n      int
		counts []int
		mean   float64 // of the pixels / 255
	}{
		{"mnist/train", 60000, []int{5923, 6742, 5958, 6131, 5842, 5421, 5918, 6265, 5851, 5949}, 0.1307},
		{"mnist/t10k", 10000, []int{980, 1135, 1032, 1010, 982, 892, 958, 1028, 974, 1009}, 0.1325},
		{"fashion-mnist/train", 60000, slices.Repeat([]int{6000}, 10), 0.2860},
		{"fashion-mnist/t10k", 10000, slices.Repeat([]int{1000}, 10), 0.2868},
	} {
		im, err := ReadIDXImages(openShared(t, dir, c.set+"-images-idx3-ubyte.gz"))
		if err != nil {
			t.Fatal(err)
		}
		labels, err := ReadIDXLabels(openShared(t, dir, c.set+"-labels-idx1-ubyte.gz"), 9)
		if err != nil {
			t.Fatal(err)
		}
		if im.Channels != 1 || im.Height != 28 || im.Width != 28 || len(im.Pix) != c.n*28*28 {
			t.Fatalf("%s: %d×%d×%d, %d bytes", c.set, im.Channels, im.Height, im.Width, len(im.Pix))
		}
		if got := labelCounts(labels, 10); len(labels) != c.n || !slices.Equal(got, c.counts) {
			t.Fatalf("%s: %d labels, class counts %v, want %v", c.set, len(labels), got, c.counts)
		}
		var sum int
		for _, p := range im.Pix {
			sum += int(p)
		}
		if m := float64(sum) / float64(len(im.Pix)) / 255; math.Abs(m-c.mean) > 0.001 {
			t.Errorf("%s: mean pixel %.4f, want %.4f", c.set, m, c.mean)
		}
	}
}

func TestReadCIFARShared(t *testing.T) {
	dir := requireSharedData(t)
	for _, c := range []struct {
		name       string
		n          int
		bird, ship int
	}{
		{"cifar10-bird-ship/train.bin", 10000, 5000, 5000},
		{"cifar10-bird-ship/test_first1000_partial.bin", 206, 100, 106},
	} {
		im, err := ReadCIFAR(openShared(t, dir, c.name))
		if err != nil {
			t.Fatal(err)
		}
		counts := labelCounts(im.Labels, 10)
		if im.Len() != c.n || len(im.Pix) != c.n*3072 || counts[2] != c.bird || counts[8] != c.ship {
			t.Fatalf("%s: %d records, %d bytes, counts %v", c.name, im.Len(), len(im.Pix), counts)
		}
		for ch := range 3 {
			var sum int
			for k := range im.Len() {
				for _, p := range im.Image(k)[ch*1024 : (ch+1)*1024] {
					sum += int(p)
				}
			}
			if m := float64(sum) / float64(im.Len()*1024) / 255; m < 0.3 || m > 0.6 {
				t.Errorf("%s: channel %d mean %.3f, want within [0.3, 0.6]", c.name, ch, m)
			}
		}
	}
}

func TestReadMammographicShared(t *testing.T) {
	dir := requireSharedData(t)
	tab, err := ReadMammographic(openShared(t, dir, "mammographic/mammographic_masses.data"))
	if err != nil {
		t.Fatal(err)
	}
	var all, complete [2]int
	for _, r := range tab.Rows {
		s := int(r[5])
		all[s]++
		if !slices.ContainsFunc(r, math.IsNaN) {
			complete[s]++
		}
	}
	if len(tab.Rows) != 961 || all != [2]int{516, 445} || complete != [2]int{427, 403} {
		t.Fatalf("%d rows, benign/malignant %v, complete %v", len(tab.Rows), all, complete)
	}
	if r := tab.Rows[340]; r[0] != 55 { // line 341 keeps its odd BI-RADS
		t.Fatalf("line 341: BI-RADS %v, want 55", r[0])
	}
}

// TestReadIDXSharedCorrupt cuts and alters the real gzip files.
func TestReadIDXSharedCorrupt(t *testing.T) {
	dir := requireSharedData(t)
	gz := readShared(t, dir, "mnist/t10k-images-idx3-ubyte.gz")
	_, err := ReadIDXImages(bytes.NewReader(gz[:len(gz)/2]))
	wantError(t, err, "IDX images: gzip stream truncated: the header announces 7840000 bytes of pixels, found")

	_, err = ReadIDXLabels(bytes.NewReader(readShared(t, dir, "mnist/t10k-images-idx3-ubyte.gz")), 9)
	wantError(t, err, "IDX magic 0x00000803, want 0x00000801 (labels): is this an image file?")

	labels := gunzipped(t, readShared(t, dir, "mnist/t10k-labels-idx1-ubyte.gz"))
	_, err = ReadIDXLabels(bytes.NewReader(gzipped(t, labels[:len(labels)-5])), 9)
	wantError(t, err, "truncated: the header announces 10000 bytes of labels, found 9995")

	_, err = ReadIDXLabels(bytes.NewReader(labels), 8)
	wantError(t, err, "has label 9, want ≤ 8")
}
