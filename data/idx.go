package data

import (
	"bufio"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
)

// IDX magic numbers: two zero bytes, the element type (0x08, unsigned byte)
// and the number of dimensions.
const (
	idxImagesMagic = 0x00000803
	idxLabelsMagic = 0x00000801
)

// maxIDXPayload is the largest payload, in bytes, an IDX header may announce.
// Larger headers are refused before anything is allocated.
const maxIDXPayload = 1 << 31

// readBufferSize is the size of the buffered reader put under the parsers.
// compress/flate reads a *bufio.Reader byte by byte through its buffer, so
// this is also the read size on the compressed input.
const readBufferSize = 64 << 10

// maxDeflateRatio bounds how many bytes one compressed byte can inflate to:
// deflate's densest code is a 258-byte match in 2 bits, a ratio of 1032.
const maxDeflateRatio = 1032

// growStart is the first allocation for a payload whose presence cannot be
// checked in advance (an input of unknown size): the buffer then doubles as
// the data arrive, so a hostile header cannot make the reader allocate more
// than about twice what the input really holds.
const growStart = 64 << 10

// ReadIDXImages reads an IDX3 image file (magic 0x00000803, then the number
// of images, rows and columns as big-endian uint32, then one byte per pixel,
// image after image, row-major), as MNIST and Fashion-MNIST distribute them.
// The input may be gzip-compressed or not: the gzip magic 1f 8b is detected.
//
// The result has Channels 1; Labels and Classes are nil (the labels are in a
// separate file: see ReadIDXLabels). The input must hold exactly the pixels
// its header announces: a truncated input or gzip stream, extra bytes after
// the last image, a gzip checksum mismatch, a wrong magic number and a header
// announcing more than 2³¹ bytes are errors.
func ReadIDXImages(r io.Reader) (*Images, error) {
	var h [16]byte
	in, err := openIDX(r, "images", h[:], idxImagesMagic)
	if err != nil {
		return nil, err
	}
	count := uint64(binary.BigEndian.Uint32(h[4:]))
	rows := uint64(binary.BigEndian.Uint32(h[8:]))
	cols := uint64(binary.BigEndian.Uint32(h[12:]))
	if rows == 0 || cols == 0 {
		return nil, fmt.Errorf("data: IDX images: header gives images of %dx%d pixels", rows, cols)
	}
	size := rows * cols
	if size > maxIDXPayload || count > maxIDXPayload/size {
		return nil, fmt.Errorf("data: IDX images: header claims %d images of %dx%d pixels, more than the %d-byte limit",
			count, rows, cols, uint64(maxIDXPayload))
	}
	total := count * size
	if total > math.MaxInt {
		return nil, fmt.Errorf("data: IDX images: %d bytes of pixels do not fit in an int", total)
	}
	pix, err := in.payload(int(total), "pixels")
	if err != nil {
		return nil, err
	}
	return &Images{Channels: 1, Height: int(rows), Width: int(cols), Pix: pix}, nil
}

// ReadIDXLabels reads an IDX1 label file (magic 0x00000801, then the number
// of labels as a big-endian uint32, then one byte per label), gzip-compressed
// or not (the gzip magic 1f 8b is detected). Every label must be ≤ maxLabel.
// The input must hold exactly the labels its header announces; see
// ReadIDXImages for the other checks.
func ReadIDXLabels(r io.Reader, maxLabel uint8) ([]uint8, error) {
	var h [8]byte
	in, err := openIDX(r, "labels", h[:], idxLabelsMagic)
	if err != nil {
		return nil, err
	}
	count := uint64(binary.BigEndian.Uint32(h[4:]))
	if count > maxIDXPayload || count > math.MaxInt {
		return nil, fmt.Errorf("data: IDX labels: header claims %d labels, more than the %d-byte limit",
			count, uint64(maxIDXPayload))
	}
	labels, err := in.payload(int(count), "labels")
	if err != nil {
		return nil, err
	}
	for k, l := range labels {
		if l > maxLabel {
			return nil, fmt.Errorf("data: IDX labels: item %d has label %d, want ≤ %d", k, l, maxLabel)
		}
	}
	return labels, nil
}

// checkIDXMagic returns an error naming the magic number found, the one
// wanted and, when it can tell, what the input is instead.
func checkIDXMagic(got, want uint32, what string) error {
	if got == want {
		return nil
	}
	var hint string
	switch {
	case want == idxImagesMagic && got == idxLabelsMagic:
		hint = ": is this a label file?"
	case want == idxLabelsMagic && got == idxImagesMagic:
		hint = ": is this an image file?"
	case got>>8 == want>>8:
		hint = fmt.Sprintf(": %d dimensions, want %d", got&0xff, want&0xff)
	case got>>16 == 0:
		hint = fmt.Sprintf(": element type 0x%02x, want 0x08 (unsigned bytes)", got>>8&0xff)
	default:
		hint = ": not an IDX file"
	}
	return fmt.Errorf("data: IDX magic 0x%08x, want 0x%08x (%s)%s", got, want, what, hint)
}

// idxInput is the decompressed byte stream of an IDX file.
type idxInput struct {
	what string    // "images" or "labels", for errors
	src  io.Reader // the IDX bytes
	gz   bool      // src decompresses a gzip stream
	// avail is an upper bound on the bytes src can deliver, or -1 when
	// unknown. It only decides whether a payload is allocated at once.
	avail int64
}

// openIDX returns the IDX bytes of r, decompressing them when r starts with
// the gzip magic, after the fixed-size header, which it reads into h and
// whose magic number it checks against magic (see idxInput.header).
func openIDX(r io.Reader, what string, h []byte, magic uint32) (*idxInput, error) {
	avail := inputSizeHint(r)
	br := bufio.NewReaderSize(r, readBufferSize)
	sig, err := br.Peek(2)
	switch {
	case len(sig) == 0 && err == io.EOF:
		return nil, fmt.Errorf("data: IDX %s: empty input", what)
	case err != nil && err != io.EOF:
		return nil, fmt.Errorf("data: IDX %s: %w", what, err)
	}
	in := &idxInput{what: what, src: br, avail: avail}
	if len(sig) == 2 && sig[0] == 0x1f && sig[1] == 0x8b {
		zr, err := gzip.NewReader(br)
		if err != nil {
			return nil, fmt.Errorf("data: IDX %s: gzip header: %w", what, err)
		}
		zr.Multistream(false)
		in.src, in.gz = &gzipMembers{br: br, zr: zr}, true
		if avail >= 0 {
			if avail > math.MaxInt64/maxDeflateRatio {
				in.avail = math.MaxInt64
			} else {
				in.avail = avail * maxDeflateRatio
			}
		}
	}
	if err := in.header(h, magic); err != nil {
		return nil, err
	}
	return in, nil
}

// gzipMembers reads the members of a gzip stream one after the other, as
// gzip.Reader does in multistream mode, but tells bytes after a member that
// do not start another one from a member cut short: the former is an error
// wrapping the header error, the latter io.ErrUnexpectedEOF.
type gzipMembers struct {
	br  *bufio.Reader
	zr  *gzip.Reader // in single-stream mode, at a member of br
	err error        // sticky
}

func (g *gzipMembers) Read(p []byte) (int, error) {
	if g.err != nil {
		return 0, g.err
	}
	for {
		n, err := g.zr.Read(p)
		if err != io.EOF {
			g.err = err
			return n, err
		}
		// The member ended and its trailer matched: is there another?
		if _, err := g.br.Peek(1); err != nil {
			g.err = err
			return n, err
		}
		if err := g.zr.Reset(g.br); err != nil {
			g.err = fmt.Errorf("bytes after the gzip stream do not start a gzip member: %w", err)
			return n, g.err
		}
		g.zr.Multistream(false)
		if n > 0 {
			return n, nil
		}
	}
}

// header reads the fixed-size IDX header into h and checks that it starts
// with the magic number want. A wrong magic number is reported even when
// the rest of the header is missing.
func (in *idxInput) header(h []byte, want uint32) error {
	n, err := readExact(in.src, h)
	if n >= 4 {
		if err := checkIDXMagic(binary.BigEndian.Uint32(h), want, in.what); err != nil {
			return err
		}
	}
	switch {
	case err == nil:
		return nil
	case err == io.EOF:
		return fmt.Errorf("data: IDX %s: header is %d bytes, want %d", in.what, n, len(h))
	case in.gz && err == io.ErrUnexpectedEOF:
		return fmt.Errorf("data: IDX %s: gzip stream truncated in the header (%d of %d bytes)", in.what, n, len(h))
	default:
		return fmt.Errorf("data: IDX %s: reading the header: %w", in.what, err)
	}
}

// payload reads the n bytes that follow the header and checks with end that
// nothing follows them. The buffer is allocated at once when the input is
// known to be able to hold n bytes and grows with the data otherwise.
func (in *idxInput) payload(n int, what string) ([]byte, error) {
	size := n
	if in.avail < 0 || int64(n) > in.avail {
		size = min(n, growStart)
	}
	buf := make([]byte, size)
	got := 0
	for {
		m, err := readExact(in.src, buf[got:])
		got += m
		if err != nil {
			return nil, in.shortError(what, n, got, err)
		}
		if got == n {
			if err := in.end(what); err != nil {
				return nil, err
			}
			return buf, nil
		}
		grown := make([]byte, min(n, 2*len(buf)))
		copy(grown, buf)
		buf = grown
	}
}

// shortError describes a payload read that stopped with err after got of the
// want bytes.
func (in *idxInput) shortError(what string, want, got int, err error) error {
	switch {
	case err == io.EOF:
		return fmt.Errorf("data: IDX %s: truncated: the header announces %d bytes of %s, found %d", in.what, want, what, got)
	case in.gz && err == io.ErrUnexpectedEOF:
		return fmt.Errorf("data: IDX %s: gzip stream truncated: the header announces %d bytes of %s, found %d", in.what, want, what, got)
	default:
		return fmt.Errorf("data: IDX %s: reading %s (after %d of %d bytes): %w", in.what, what, got, want, err)
	}
}

// end checks that nothing follows the payload. For a gzip stream it reads to
// the end of the stream, which checks the CRC and length in its trailer.
func (in *idxInput) end(what string) error {
	const limit = 1 << 20
	extra, err := io.Copy(io.Discard, io.LimitReader(in.src, limit+1))
	switch {
	case in.gz && err == io.ErrUnexpectedEOF:
		return fmt.Errorf("data: IDX %s: gzip stream truncated after the %s: its end or trailer is missing", in.what, what)
	case errors.Is(err, gzip.ErrChecksum):
		return fmt.Errorf("data: IDX %s: gzip trailer does not match the data (CRC or length): %w", in.what, err)
	case err != nil:
		return fmt.Errorf("data: IDX %s: after the %s: %w", in.what, what, err)
	case extra > limit:
		return fmt.Errorf("data: IDX %s: more than %d bytes after the %s the header announces", in.what, limit, what)
	case extra > 0:
		return fmt.Errorf("data: IDX %s: %d extra bytes after the %s the header announces", in.what, extra, what)
	}
	return nil
}

// readExact reads len(p) bytes from r. Unlike io.ReadFull it returns the
// reader's own error when it stops short: io.EOF when the input ended cleanly
// (also after a partial read), io.ErrUnexpectedEOF only when r says so (a
// truncated gzip stream). Like io.ReadFull it returns nil once p is full,
// leaving an error that came with the last bytes to the next read (the gzip
// and bufio readers return it again).
func readExact(r io.Reader, p []byte) (int, error) {
	n := 0
	for n < len(p) {
		m, err := r.Read(p[n:])
		n += m
		if err != nil && n < len(p) {
			return n, err
		}
	}
	return n, nil
}

// inputSizeHint returns how many bytes r holds from its current position
// when r can tell (a bytes or strings reader, a regular file), or -1.
func inputSizeHint(r io.Reader) int64 {
	switch v := r.(type) {
	case interface{ Len() int }:
		return int64(v.Len())
	case *os.File:
		fi, err := v.Stat()
		if err != nil || !fi.Mode().IsRegular() {
			return -1
		}
		off, err := v.Seek(0, io.SeekCurrent)
		if err != nil || off > fi.Size() {
			return -1
		}
		return fi.Size() - off
	}
	return -1
}
