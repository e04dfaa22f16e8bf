package data

import (
	"crypto/sha256"
	"embed"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	"github.com/convexnn/convexnn/internal/atomicfile"
	"github.com/convexnn/convexnn/internal/floatbits"
	"gonum.org/v1/gonum/mat"
)

// The prepared-set cache keeps what Paper builds (the decoded, selected,
// scaled and resized matrices) in one binary file per data set and label
// coding, so that a notebook cell that needs Table 2's 87 MB of matrices
// reads them in tens of milliseconds instead of decompressing and
// preprocessing the source files again (half a second).
//
// An entry can never go stale: it is used only when
//   - it was written by a build of this package with the same source code
//     (the digest of the package's own .go files, embedded at build time, is
//     part of the entry's name), and
//   - it was built from the same places (Source.Dir and the download cache
//     are part of its key), and
//   - every source file the build read (found through Fetch or CIFARFiles,
//     and verified there) and the folder holding it still have the path,
//     size and modification time they had then (a file added to or removed
//     from such a folder, as a CIFAR test file that changes the split,
//     changes the folder's time), and
//   - its payload's CRC-32C still matches.
//
// Anything else (a missing, foreign, torn or corrupt entry) is a miss: the
// set is built from its verified sources and the entry rewritten,
// atomically.

//go:embed *.go
var packageSources embed.FS

const preparedMagic = "convexnn-prepared-set v2\n"

var (
	codeDigestOnce sync.Once
	codeDigestHex  string
)

// codeDigest is the SHA-256 of this package's non-test source files, the
// version of the preprocessing that wrote an entry.
func codeDigest() string {
	codeDigestOnce.Do(func() {
		ents, _ := packageSources.ReadDir(".")
		h := sha256.New()
		for _, e := range ents {
			if strings.HasSuffix(e.Name(), "_test.go") {
				continue
			}
			b, _ := packageSources.ReadFile(e.Name())
			fmt.Fprintf(h, "%s %d\n", e.Name(), len(b))
			h.Write(b)
		}
		codeDigestHex = hex.EncodeToString(h.Sum(nil))
	})
	return codeDigestHex
}

// fileLog records the local files a build read (Source.Fetch, CIFARFiles).
type fileLog struct {
	mu    sync.Mutex
	paths []string
}

func (l *fileLog) add(paths ...string) {
	if l == nil {
		return
	}
	l.mu.Lock()
	l.paths = append(l.paths, paths...)
	l.mu.Unlock()
}

// fileStamp identifies one version of a source file.
type fileStamp struct {
	Path    string `json:"path"`
	Size    int64  `json:"size"`
	ModTime int64  `json:"mtime_ns"`
}

func stampOf(p string) (fileStamp, error) {
	abs, err := filepath.Abs(p)
	if err != nil {
		return fileStamp{}, err
	}
	fi, err := os.Stat(abs)
	if err != nil {
		return fileStamp{}, err
	}
	return fileStamp{Path: abs, Size: fi.Size(), ModTime: fi.ModTime().UnixNano()}, nil
}

// preparedSet is a Set's description in an entry's header; its X and Y
// follow the header as little-endian float64s.
type preparedSet struct {
	Name     string   `json:"name"`
	Rows     int      `json:"rows"`
	Cols     int      `json:"cols"`
	Shape    [3]int   `json:"shape"`
	Features []string `json:"features,omitempty"`
	Classes  []string `json:"classes,omitempty"`
	Coding   Labels   `json:"coding"`
	Bias     bool     `json:"bias"`
	Scaling  *Scaling `json:"scaling,omitempty"`
}

type preparedHeader struct {
	Code  string      `json:"code"`
	Key   string      `json:"key"`
	Files []fileStamp `json:"files"`
	Name  string      `json:"name"`
	Notes string      `json:"notes"`
	// Sets are Train, Test and, when present, Holdout.
	Sets []preparedSet `json:"sets"`
	// Payload is the payload's length in bytes and CRCs the CRC-32C of
	// each of its parts (preparedParts), which are read in parallel.
	Payload int64    `json:"payload"`
	CRCs    []uint32 `json:"crc32c"`
}

// preparedPart is a piece of the payload: rows lo…hi−1 of a set's X, or
// (y) its Y.
type preparedPart struct {
	set, lo, hi int
	y           bool
}

// preparedParts lists the payload's parts in order: for each set the two
// halves of X, then Y.
func preparedParts(sets []preparedSet) []preparedPart {
	var parts []preparedPart
	for k, s := range sets {
		parts = append(parts, preparedPart{set: k, lo: 0, hi: s.Rows / 2}, preparedPart{set: k, lo: s.Rows / 2, hi: s.Rows},
			preparedPart{set: k, y: true})
	}
	return parts
}

// floats is the part's values in x and y, the sets' matrices (dense) and
// labels.
func (pt preparedPart) floats(x, y [][]float64, cols []int) []float64 {
	if pt.y {
		return y[pt.set]
	}
	c := cols[pt.set]
	return x[pt.set][pt.lo*c : pt.hi*c]
}

// preparedDir is the folder of the prepared-set cache, "" when off.
func (s Source) preparedDir() string {
	if s.NoPrepared {
		return ""
	}
	c, err := s.cacheDir()
	if err != nil {
		return ""
	}
	return filepath.Join(c, "prepared")
}

// preparedPath is the entry of name (a data set and its label coding) and
// its full key: the name, and the places its files come from (another data
// folder may hold other files, as a CIFAR folder without its test file).
func (s Source) preparedPath(name string) (path, key string) {
	dir := s.preparedDir()
	if dir == "" {
		return "", ""
	}
	cache, _ := s.cacheDir()
	key = name + "\n" + absOrEmpty(s.Dir) + "\n" + absOrEmpty(cache)
	h := sha256.Sum256([]byte(codeDigest() + "\n" + key))
	return filepath.Join(dir, name+"-"+hex.EncodeToString(h[:8])+".bin"), key
}

// cachedBuild returns the split called name from its entry when the entry is
// current, and otherwise builds it with build (which reads its sources
// through the Source it is given) and writes the entry. A cache that
// cannot be read or written only costs time: build's result is returned.
func (s Source) cachedBuild(name string, build func(Source) (*Split, error)) (*Split, error) {
	path, key := s.preparedPath(name)
	if path == "" {
		return build(s)
	}
	if sp, err := readPrepared(path, key); err == nil {
		return sp, nil
	}
	log := &fileLog{}
	rec := s
	rec.used = log
	sp, err := build(rec)
	if err != nil {
		return nil, err
	}
	writePrepared(path, key, log.paths, sp)
	return sp, nil
}

func (sp *Split) sets() []*Set {
	sets := []*Set{sp.Train, sp.Test}
	if sp.Holdout != nil {
		sets = append(sets, sp.Holdout)
	}
	return sets
}

// writePrepared writes sp's entry atomically; failures are ignored (the
// next load builds the set again).
func writePrepared(path, key string, used []string, sp *Split) {
	hd := preparedHeader{Code: codeDigest(), Key: key, Name: sp.Name, Notes: sp.Notes}
	seen := map[string]bool{}
	for _, p := range used {
		abs, err := filepath.Abs(p)
		if err != nil {
			return
		}
		for _, q := range []string{abs, filepath.Dir(abs)} {
			st, err := stampOf(q)
			if err != nil {
				return
			}
			if !seen[st.Path] {
				seen[st.Path] = true
				hd.Files = append(hd.Files, st)
			}
		}
	}
	if len(hd.Files) == 0 {
		return // a build that read nothing cannot be checked for staleness
	}
	sort.Slice(hd.Files, func(i, j int) bool { return hd.Files[i].Path < hd.Files[j].Path })
	// part calls f with the bytes of one part of the payload, row by row.
	part := func(pt preparedPart, f func([]byte) error) error {
		set := sp.sets()[pt.set]
		if pt.y {
			return f(floatbits.Bytes(set.Y))
		}
		raw := set.X.RawMatrix()
		for i := pt.lo; i < pt.hi; i++ {
			if err := f(floatbits.Bytes(raw.Data[i*raw.Stride : i*raw.Stride+raw.Cols])); err != nil {
				return err
			}
		}
		return nil
	}
	for _, set := range sp.sets() {
		if set == nil || set.X == nil {
			return
		}
		r, c := set.X.Dims()
		if len(set.Y) != r {
			return
		}
		hd.Sets = append(hd.Sets, preparedSet{Name: set.Name, Rows: r, Cols: c, Shape: set.Shape, Features: set.Features,
			Classes: set.Classes, Coding: set.Coding, Bias: set.Bias, Scaling: set.Scaling})
		hd.Payload += 8 * int64(r) * int64(c+1)
	}
	parts := preparedParts(hd.Sets)
	for _, pt := range parts {
		crc := uint32(0)
		part(pt, func(b []byte) error { crc = floatbits.CRC32C(crc, b); return nil })
		hd.CRCs = append(hd.CRCs, crc)
	}
	head, err := json.Marshal(hd)
	if err != nil {
		return
	}
	// A failed write only costs the next load a rebuild.
	atomicfile.Write(path, 0o644, func(w io.Writer) error {
		for _, b := range [][]byte{[]byte(preparedMagic), binary.LittleEndian.AppendUint64(nil, uint64(len(head))), head} {
			if _, err := w.Write(b); err != nil {
				return err
			}
		}
		for _, pt := range parts {
			if err := part(pt, func(b []byte) error { _, err := w.Write(b); return err }); err != nil {
				return err
			}
		}
		return nil
	})
}

// absOrEmpty is p made absolute ("" stays "").
func absOrEmpty(p string) string {
	if p == "" {
		return ""
	}
	if a, err := filepath.Abs(p); err == nil {
		return a
	}
	return p
}

// errStale is a prepared entry that must not be used.
var errStale = errors.New("data: prepared set is stale or corrupt")

// readPrepared reads the entry at path when it is current (see the cache's
// rules above).
func readPrepared(path, key string) (*Split, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	magic := make([]byte, len(preparedMagic)+8)
	if _, err := io.ReadFull(f, magic); err != nil || string(magic[:len(preparedMagic)]) != preparedMagic {
		return nil, errStale
	}
	hlen := binary.LittleEndian.Uint64(magic[len(preparedMagic):])
	if hlen > 1<<24 {
		return nil, errStale
	}
	head := make([]byte, hlen)
	if _, err := io.ReadFull(f, head); err != nil {
		return nil, errStale
	}
	var hd preparedHeader
	if err := json.Unmarshal(head, &hd); err != nil || hd.Code != codeDigest() || hd.Key != key || len(hd.Files) == 0 || len(hd.Sets) < 2 || len(hd.Sets) > 3 {
		return nil, errStale
	}
	for _, want := range hd.Files {
		if got, err := stampOf(want.Path); err != nil || got != want {
			return nil, errStale
		}
	}
	var size int64
	for _, s := range hd.Sets {
		if s.Rows <= 0 || s.Cols <= 0 || s.Rows > 1<<26 || s.Cols > 1<<26 {
			return nil, errStale
		}
		size += 8 * int64(s.Rows) * int64(s.Cols+1)
	}
	if size != hd.Payload {
		return nil, errStale
	}
	if fi, err := f.Stat(); err != nil || fi.Size() != int64(len(preparedMagic))+8+int64(hlen)+size {
		return nil, errStale
	}
	parts := preparedParts(hd.Sets)
	if len(hd.CRCs) != len(parts) {
		return nil, errStale
	}
	// The parts are read by two workers at once: most of the time goes to
	// the first touch of the new memory, which then runs on both cores.
	xs, ys, cols := make([][]float64, len(hd.Sets)), make([][]float64, len(hd.Sets)), make([]int, len(hd.Sets))
	for k, s := range hd.Sets {
		xs[k], ys[k], cols[k] = make([]float64, s.Rows*s.Cols), make([]float64, s.Rows), s.Cols
	}
	offsets := make([]int64, len(parts))
	at := int64(len(preparedMagic)) + 8 + int64(hlen)
	for i, pt := range parts {
		offsets[i] = at
		at += 8 * int64(len(pt.floats(xs, ys, cols)))
	}
	bad := make([]bool, len(parts))
	var wg sync.WaitGroup
	for w := 0; w < 2; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < len(parts); i += 2 {
				err := floatbits.Read(parts[i].floats(xs, ys, cols), func(b []byte) error {
					if _, err := f.ReadAt(b, offsets[i]); err != nil {
						return err
					}
					if floatbits.CRC32C(0, b) != hd.CRCs[i] {
						return errStale
					}
					return nil
				})
				bad[i] = err != nil
			}
		}()
	}
	wg.Wait()
	for _, b := range bad {
		if b {
			return nil, errStale
		}
	}
	sp := &Split{Name: hd.Name, Notes: hd.Notes}
	for k, s := range hd.Sets {
		set := &Set{Name: s.Name, X: mat.NewDense(s.Rows, s.Cols, xs[k]), Y: ys[k], Shape: s.Shape, Features: s.Features,
			Classes: s.Classes, Coding: s.Coding, Bias: s.Bias, Scaling: s.Scaling}
		switch k {
		case 0:
			sp.Train = set
		case 1:
			sp.Test = set
		case 2:
			sp.Holdout = set
		}
	}
	return sp, nil
}
