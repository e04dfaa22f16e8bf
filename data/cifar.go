package data

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"slices"
)

// CIFAR-10 binary record layout: one label byte, then 3×32×32 pixel bytes.
const (
	cifarSide   = 32
	cifarPixels = 3 * cifarSide * cifarSide
	cifarRecord = 1 + cifarPixels
)

// cifar10Classes names the CIFAR-10 labels 0-9.
var cifar10Classes = []string{
	"airplane", "automobile", "bird", "cat", "deer",
	"dog", "frog", "horse", "ship", "truck",
}

// ReadCIFAR reads CIFAR-10 binary records, as in the data_batch_N.bin and
// test_batch.bin files: each record is 1 label byte (0-9) followed by 3072
// pixel bytes (3×32×32, channel-major: the red plane, then green, then blue,
// each row-major). There is no header; the input must be a whole, non-zero
// number of records.
//
// The result has Channels 3, Height 32, Width 32, one label per record, and
// Classes set to the CIFAR-10 class names.
func ReadCIFAR(r io.Reader) (*Images, error) {
	var pix, labels []uint8
	if avail := inputSizeHint(r); avail > 0 {
		n := min((avail+cifarRecord-1)/cifarRecord, maxIDXPayload/cifarPixels)
		pix = make([]uint8, 0, n*cifarPixels)
		labels = make([]uint8, 0, n)
	}
	br := bufio.NewReaderSize(r, readBufferSize)
	magic, err := br.Peek(2)
	switch {
	case err != nil && err != io.EOF:
		return nil, fmt.Errorf("data: CIFAR: %w", err)
	case len(magic) == 2 && magic[0] == 0x1f && magic[1] == 0x8b: // not a record: its label would be 31
		return nil, errors.New("data: CIFAR: the input is gzip-compressed (starts with 1f 8b): decompress it first")
	}
	var rec [cifarRecord]byte
	for k := 0; ; k++ {
		n, err := readExact(br, rec[:])
		switch {
		case n == 0 && err == io.EOF:
			if k == 0 {
				return nil, errors.New("data: CIFAR: empty input, no records")
			}
			return &Images{
				Channels: 3, Height: cifarSide, Width: cifarSide,
				Pix: pix, Labels: labels, Classes: slices.Clone(cifar10Classes),
			}, nil
		case err == io.EOF:
			return nil, fmt.Errorf("data: CIFAR: record %d is partial: %d bytes, want %d (the input is not a whole number of records)",
				k, n, cifarRecord)
		case err != nil:
			return nil, fmt.Errorf("data: CIFAR: reading record %d: %w", k, err)
		}
		if l := rec[0]; l > 9 {
			return nil, fmt.Errorf("data: CIFAR: record %d: label %d, want 0-9", k, l)
		}
		labels = append(labels, rec[0])
		pix = append(pix, rec[1:]...)
	}
}
