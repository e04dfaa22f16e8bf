package data

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"flag"
	"io"
	"os"
	"path/filepath"
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

// badInput is an input that a reader must refuse with an error mentioning
// every one of want.
type badInput struct {
	name string
	in   []byte
	want []string
}

// rejectAll checks that read refuses every one of cases, fed through each of
// readers, returning no images, and that it wraps the error of a reader that
// fails while it reads the valid input good.
func rejectAll(t *testing.T, read func(io.Reader) (*Images, error), good []byte, cases []badInput) {
	t.Helper()
	for _, c := range cases {
		for rname, r := range readers(c.in) {
			im, err := read(r)
			if im != nil {
				t.Errorf("%s/%s: got images with error %v", c.name, rname, err)
			}
			wantError(t, err, c.want...)
		}
	}
	// An I/O error is wrapped, not hidden.
	_, err := read(iotest.TimeoutReader(iotest.OneByteReader(bytes.NewReader(good))))
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
