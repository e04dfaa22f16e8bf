// Package npyhead checks the preamble of a NumPy .npy stream before a
// parser trusts it: the magic string, the version and a header length that
// fits in the bytes there are (and in 1 MiB), so that a few corrupt bytes
// cannot make the parser allocate gigabytes.
package npyhead

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// MaxHeader is the longest header accepted.
const MaxHeader = 1 << 20

// Guard reads the preamble of an .npy stream of size bytes from r, checks
// it, and returns a reader that yields the whole stream again.
func Guard(r io.Reader, size int64) (io.Reader, error) {
	pre := make([]byte, 8)
	if _, err := io.ReadFull(r, pre); err != nil {
		return nil, errors.New("not a valid .npy array: too short")
	}
	if !bytes.Equal(pre[:6], []byte("\x93NUMPY")) {
		return nil, errors.New("not a valid .npy array: no NumPy magic string")
	}
	var hlen int64
	switch pre[6] {
	case 1:
		b := make([]byte, 2)
		if _, err := io.ReadFull(r, b); err != nil {
			return nil, errors.New("not a valid .npy array: truncated preamble")
		}
		pre = append(pre, b...)
		hlen = int64(binary.LittleEndian.Uint16(b))
	case 2, 3:
		b := make([]byte, 4)
		if _, err := io.ReadFull(r, b); err != nil {
			return nil, errors.New("not a valid .npy array: truncated preamble")
		}
		pre = append(pre, b...)
		hlen = int64(binary.LittleEndian.Uint32(b))
	default:
		return nil, fmt.Errorf("not a valid .npy array: format version %d.%d", pre[6], pre[7])
	}
	if hlen > MaxHeader || hlen > size-int64(len(pre)) {
		return nil, fmt.Errorf("not a valid .npy array: header of %d bytes in a stream of %d", hlen, size)
	}
	return io.MultiReader(bytes.NewReader(pre), r), nil
}
