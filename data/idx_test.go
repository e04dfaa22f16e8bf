package data

import (
	"bytes"
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
	rejectAll(t, ReadIDXImages, gz, []badInput{
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
	})
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
		if testenv.Race && strings.HasSuffix(c.set, "/train") {
			// The reader starts no goroutine: the test files under the
			// race detector, the training files in make test's pass
			// without it (a minute under -race for the two).
			continue
		}
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
