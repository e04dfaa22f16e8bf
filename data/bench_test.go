package data

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/convexnn/convexnn/internal/testenv"
)

// BenchmarkReadMNISTTrainImages parses the MNIST training images
// (9.9 MB gzip, 47 MB of pixels): "memory" from the compressed bytes already
// in memory, "file" including opening and reading the file. MB/s counts the
// decompressed bytes.
func BenchmarkReadMNISTTrainImages(b *testing.B) {
	dir := testenv.SharedData(b)
	path := filepath.Join(dir, "mnist", "train-images-idx3-ubyte.gz")
	const size = 16 + 60000*28*28
	b.Run("memory", func(b *testing.B) {
		gz, err := os.ReadFile(path)
		if err != nil {
			b.Fatal(err)
		}
		b.SetBytes(size)
		for b.Loop() {
			if _, err := ReadIDXImages(bytes.NewReader(gz)); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("file", func(b *testing.B) {
		b.SetBytes(size)
		for b.Loop() {
			f, err := os.Open(path)
			if err != nil {
				b.Fatal(err)
			}
			_, err = ReadIDXImages(f)
			f.Close()
			if err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkReadCIFAR parses the 10000 records (30.7 MB) of the bird/ship
// training file from memory.
func BenchmarkReadCIFAR(b *testing.B) {
	dir := testenv.SharedData(b)
	raw, err := os.ReadFile(filepath.Join(dir, "cifar10-bird-ship", "train.bin"))
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(raw)))
	for b.Loop() {
		if _, err := ReadCIFAR(bytes.NewReader(raw)); err != nil {
			b.Fatal(err)
		}
	}
}
