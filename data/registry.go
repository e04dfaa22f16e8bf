package data

import (
	"fmt"
	"slices"
	"strings"
)

// The registry: every data set file convexnn reads, with its size and
// checksums as listed in the shared data folder's README.md and, for MD5, as
// published upstream.

// URL prefixes of the canonical downloads.
const (
	mnistMirror       = "https://ossci-datasets.s3.amazonaws.com/mnist/"
	mnistOriginal     = "http://yann.lecun.com/exdb/mnist/"
	fashionMNISTURL   = "http://fashion-mnist.s3-website.eu-central-1.amazonaws.com/"
	mammographicURL   = "https://archive.ics.uci.edu/ml/machine-learning-databases/mammographic-masses/mammographic_masses.data"
	cifarBinaryURL    = "https://www.cs.toronto.edu/~kriz/cifar-10-binary.tar.gz"
	cifarBinaryMD5    = "c32a1d4ab5d03f1284b67883e8d87530" // published on https://www.cs.toronto.edu/~kriz/cifar.html
	cifarBinaryBytes  = 170052171
	cifarRecordBytes  = 3073 // 1 label byte + 3×32×32 pixel bytes
	cifarBatchDir     = "cifar-10-batches-bin"
	cifarSubsetDir    = "cifar10-bird-ship"
	cifarTestBatch    = "test_batch.bin"
	cifarTrainPattern = "data_batch_*.bin"
)

// registry lists the files of each data set, keyed by data set name.
var registry = map[string][]File{
	"mnist": idxFiles("mnist", []string{mnistMirror, mnistOriginal}, []idxSum{
		{"train-images-idx3-ubyte.gz", 9912422, "440fcabf73cc546fa21475e81ea370265605f56be210a4024d2ca8f203523609", "f68b3c2dcbeaaa9fbdd348bbdeb94873"},
		{"train-labels-idx1-ubyte.gz", 28881, "3552534a0a558bbed6aed32b30c495cca23d567ec52cac8be1a0730e8010255c", "d53e105ee54ea40749a09fcbcd1e9432"},
		{"t10k-images-idx3-ubyte.gz", 1648877, "8d422c7b0a1c1c79245a5bcf07fe86e33eeafee792b84584aec276f5a2dbc4e6", "9fb629c4189551a2d022fa330f9573f3"},
		{"t10k-labels-idx1-ubyte.gz", 4542, "f7ae60f92e00ec6debd23a6088c31dbd2371eca3ffa0defaefb259924204aec6", "ec29112dd5afa0611ce80d1b7f02629c"},
	}),
	"fashion-mnist": idxFiles("fashion-mnist", []string{fashionMNISTURL}, []idxSum{
		{"train-images-idx3-ubyte.gz", 26421880, "3aede38d61863908ad78613f6a32ed271626dd12800ba2636569512369268a84", "8d4fb7e6c68d591d4c3dfef9ec88bf0d"},
		{"train-labels-idx1-ubyte.gz", 29515, "a04f17134ac03560a47e3764e11b92fc97de4d1bfaf8ba1a3aa29af54cc90845", "25c81989df183df01b3e8a0aad5dffbe"},
		{"t10k-images-idx3-ubyte.gz", 4422102, "346e55b948d973a97e58d2351dde16a484bd415d4595297633bb08f03db6a073", "bef4ecab320f06d8554ea6380940ec79"},
		{"t10k-labels-idx1-ubyte.gz", 5148, "67da17c76eaffca5446c3361aaab5c3cd6d1c2608764d35dfb1850b086bf8dd5", "bb300cfdad3c16e7a12a480ee83cd310"},
	}),
	// The bird/ship subset of the shared folder. It has no download URL:
	// Source.CIFARFiles downloads the full CIFAR-10 archive instead.
	"cifar10": {
		{
			Dataset: "cifar10",
			Path:    cifarSubsetDir + "/train.bin",
			Size:    30730000,
			SHA256:  "de15d02802dfac9508e00b7f11673f85dbc67c30abce0d1092aab4a871c22ad5",
		},
		{
			Dataset: "cifar10",
			Path:    cifarSubsetDir + "/test_first1000_partial.bin",
			Size:    633038,
			SHA256:  "c637ec1e5102c6276df0dcc08f1fd0235a64b898c0806a252a4c636be9549b68",
		},
	},
	// UCI publishes no checksum; the SHA-256 is that of the shared folder's
	// copy, which its README.md describes as the original UCI file.
	"mammographic": {
		{
			Dataset: "mammographic",
			Path:    "mammographic/mammographic_masses.data",
			Size:    12489,
			SHA256:  "2ed8bb60a517f631256d218a4885c56ef196d41023c63307ab40d69985be3b4a",
			URLs:    []string{mammographicURL},
		},
	},
}

// datasetOrder is the order in which Datasets lists the registry.
var datasetOrder = []string{"mnist", "fashion-mnist", "cifar10", "mammographic"}

// cifarArchive is the CIFAR-10 binary archive that Source.CIFARFiles
// downloads when no copy of the record files is at hand. It is a variable so
// that tests can serve a small archive.
var cifarArchive = File{
	Dataset: "cifar10",
	Path:    "cifar-10-binary.tar.gz",
	Size:    cifarBinaryBytes,
	MD5:     cifarBinaryMD5,
	URLs:    []string{cifarBinaryURL},
}

// cifarBatchBytes is the size of each record file of the CIFAR-10 archive:
// 10000 records of cifarRecordBytes. A variable for tests.
var cifarBatchBytes int64 = 10000 * cifarRecordBytes

// cifarBatches names the record files that Source.CIFARFiles extracts from
// cifarArchive into the cache, training files first, then the test file.
var cifarBatches = []string{
	"data_batch_1.bin", "data_batch_2.bin", "data_batch_3.bin",
	"data_batch_4.bin", "data_batch_5.bin", cifarTestBatch,
}

// idxSum is the name, size and checksums of a gzipped IDX file.
type idxSum struct {
	name   string
	size   int64
	sha256 string
	md5    string
}

// idxFiles returns the registry entries of the IDX files of dataset, kept in
// a folder named after the data set and downloaded from the URL prefixes
// mirrors, in order.
func idxFiles(dataset string, mirrors []string, sums []idxSum) []File {
	files := make([]File, len(sums))
	for i, f := range sums {
		urls := make([]string, len(mirrors))
		for j, m := range mirrors {
			urls[j] = m + f.name
		}
		files[i] = File{
			Dataset: dataset,
			Path:    dataset + "/" + f.name,
			Size:    f.size,
			SHA256:  f.sha256,
			MD5:     f.md5,
			URLs:    urls,
		}
	}
	return files
}

// Datasets returns the names of the data sets in the registry: "mnist",
// "fashion-mnist", "cifar10" and "mammographic".
func Datasets() []string { return slices.Clone(datasetOrder) }

// Files returns the registry's files of the named data set (case is
// ignored). The files of "cifar10" are the bird/ship subset of the shared
// data folder, which has no download URL; read CIFAR-10 through
// Source.CIFARFiles, which downloads the full archive when needed.
func Files(dataset string) ([]File, error) {
	files, ok := registry[strings.ToLower(dataset)]
	if !ok {
		return nil, fmt.Errorf("data: unknown data set %q; the known ones are %s",
			dataset, strings.Join(datasetOrder, ", "))
	}
	out := make([]File, len(files))
	for i, f := range files {
		f.URLs = slices.Clone(f.URLs)
		out[i] = f
	}
	return out, nil
}

// registryFile returns the registry's entry whose Path is p.
func registryFile(p string) (File, bool) {
	for _, files := range registry {
		for _, f := range files {
			if f.Path == p {
				return f, true
			}
		}
	}
	return File{}, false
}
