// Package floatbits reads and writes float64 vectors as little-endian bytes
// and fingerprints them: the binary form of the prepared-set cache, the run
// states' fingerprints and the ADMM set-up kept with a run.
package floatbits

import (
	"encoding/binary"
	"hash"
	"hash/crc32"
	"math"
	"unsafe"
)

// littleEndian is true on machines that store a float64's low byte first.
var littleEndian = func() bool {
	one := uint16(1)
	return *(*byte)(unsafe.Pointer(&one)) == 1
}()

// Bytes is v as little-endian bytes: v's own memory on little-endian
// machines (writes to it write v), a copy on others.
func Bytes(v []float64) []byte {
	if len(v) == 0 {
		return nil
	}
	if littleEndian {
		return unsafe.Slice((*byte)(unsafe.Pointer(&v[0])), 8*len(v))
	}
	b := make([]byte, 0, 8*len(v))
	for _, x := range v {
		b = binary.LittleEndian.AppendUint64(b, math.Float64bits(x))
	}
	return b
}

// Read fills v from the little-endian bytes that read(b) puts into b, a
// slice of 8·len(v) bytes (v's own memory on little-endian machines).
func Read(v []float64, read func(b []byte) error) error {
	if len(v) == 0 {
		return nil
	}
	b := Bytes(v)
	if err := read(b); err != nil {
		return err
	}
	if !littleEndian {
		for i := range v {
			v[i] = math.Float64frombits(binary.LittleEndian.Uint64(b[8*i:]))
		}
	}
	return nil
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// CRC32C updates the CRC-32C crc (0 to start) with b: the checksum of the
// binary files (run states, prepared data sets).
func CRC32C(crc uint32, b []byte) uint32 { return crc32.Update(crc, castagnoli, b) }

// Digest fingerprints a sequence of float64 vectors by two CRC-32s of
// different polynomials over their little-endian bytes (both computed in
// hardware on amd64 and arm64, over 10 GB/s): it tells data apart from
// other data a user built, it is no defence against forgery.
type Digest struct {
	c, ieee hash.Hash32
}

// NewDigest returns an empty Digest.
func NewDigest() *Digest {
	return &Digest{c: crc32.New(castagnoli), ieee: crc32.NewIEEE()}
}

// Write adds v to the digest.
func (d *Digest) Write(v []float64) {
	b := Bytes(v)
	d.c.Write(b)
	d.ieee.Write(b)
}

// WriteBytes adds raw bytes to the digest.
func (d *Digest) WriteBytes(b []byte) {
	d.c.Write(b)
	d.ieee.Write(b)
}

// Sum64 is the digest of everything written.
func (d *Digest) Sum64() uint64 { return uint64(d.c.Sum32())<<32 | uint64(d.ieee.Sum32()) }

// Rows is the digest of the rows×cols matrix stored row-major in data with
// the given stride. On large matrices its two CRCs run on two cores.
func Rows(data []float64, rows, cols, stride int) uint64 {
	d := NewDigest()
	each := func(h hash.Hash32) {
		for i := 0; i < rows; i++ {
			h.Write(Bytes(data[i*stride : i*stride+cols]))
		}
	}
	if rows*cols < 1<<18 {
		each(d.c)
		each(d.ieee)
		return d.Sum64()
	}
	done := make(chan struct{})
	go func() { each(d.ieee); close(done) }()
	each(d.c)
	<-done
	return d.Sum64()
}
