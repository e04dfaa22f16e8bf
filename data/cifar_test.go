package data

import (
	"bytes"
	"errors"
	"slices"
	"testing"
	"testing/iotest"
)

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
	rejectAll(t, ReadCIFAR, raw, []badInput{
		{"empty", nil, []string{"CIFAR: empty input"}},
		{"partial record", append(slices.Clone(raw), raw[:100]...), []string{"record 2 is partial: 100 bytes, want 3073"}},
		{"short single record", raw[:3000], []string{"record 0 is partial: 3000 bytes, want 3073"}},
		{"label > 9", badLabel, []string{"record 1: label 10, want 0-9"}},
		{"gzip", gzipped(t, raw), []string{"CIFAR: the input is gzip-compressed (starts with 1f 8b)"}},
	})
	_, err := ReadCIFAR(iotest.TimeoutReader(bytes.NewReader(slices.Concat(raw, raw, raw, raw, raw, raw, raw, raw, raw, raw, raw, raw))))
	wantError(t, err, "reading record")
	if !errors.Is(err, iotest.ErrTimeout) {
		t.Fatalf("error %v does not wrap the reader's", err)
	}
}

// The real files of ../shared/data (see its README for sizes and counts).

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
