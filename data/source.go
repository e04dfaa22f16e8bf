package data

import (
	"context"
	"crypto/md5"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strings"
)

// EnvDataDir names the environment variable that DefaultSource reads the
// data folder from.
const EnvDataDir = "CONVEXNN_DATA"

// File is one dataset file.
type File struct {
	Dataset string // "mnist", "fashion-mnist", "cifar10", "mammographic"
	Path    string // path in the shared layout, slash-separated, e.g. "mnist/train-images-idx3-ubyte.gz"
	Size    int64  // bytes, 0 = unknown
	SHA256  string // hex, "" = none published
	MD5     string // hex, the published checksum where the upstream publishes MD5
	// URLs are the canonical download URLs, tried in order.
	URLs []string
}

// Source says where data set files come from: a data folder laid out like
// the shared data folder (see its README.md), else a download cache, else
// the network.
//
// A file found in Dir or in Cache is used only when its size and checksum
// verify: the SHA-256 when the File has one, else the MD5 when it has one.
// A corrupt file in Dir is an error, never replaced; a corrupt file in
// Cache is downloaded again unless Offline is set.
type Source struct {
	Dir     string // a folder laid out like shared/data; "" = none
	Cache   string // download cache; "" = os.UserCacheDir()/convexnn
	Offline bool   // never download
	// Client makes the downloads; nil means a client with connection,
	// handshake and response-header timeouts and no overall timeout (a
	// download that receives nothing for two minutes fails).
	Client *http.Client
	// Progress receives a line about once a second during downloads that
	// take longer than a second; nil means os.Stderr. Use io.Discard to
	// silence it.
	Progress io.Writer
	// NoPrepared turns off the prepared-set cache of Paper (Cache/prepared:
	// the built matrices, reused while this package's code and the source
	// files are unchanged; see prepared.go).
	NoPrepared bool

	used *fileLog // records the files a build reads (the prepared-set cache)
}

// DefaultSource returns the Source with Dir from $CONVEXNN_DATA (empty when
// unset), Cache os.UserCacheDir()/convexnn (empty when the system has no
// cache directory) and Offline false.
func DefaultSource() Source {
	s := Source{Dir: os.Getenv(EnvDataDir)}
	if c, err := os.UserCacheDir(); err == nil {
		s.Cache = filepath.Join(c, "convexnn")
	}
	return s
}

// cacheDir returns the download cache folder.
func (s Source) cacheDir() (string, error) {
	if s.Cache != "" {
		return s.Cache, nil
	}
	c, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("data: no download cache folder (set Source.Cache): %w", err)
	}
	return filepath.Join(c, "convexnn"), nil
}

func (s Source) progress() io.Writer {
	if s.Progress == nil {
		return os.Stderr
	}
	return s.Progress
}

// localPath checks that f.Path is a relative slash-separated path inside
// the data layout and returns it in the operating system's form.
func localPath(f File) (string, error) {
	if f.Path == "" || !fs.ValidPath(f.Path) || f.Path == "." {
		return "", fmt.Errorf("data: invalid file path %q: want a relative slash-separated path such as \"mnist/train-images-idx3-ubyte.gz\"", f.Path)
	}
	return filepath.FromSlash(f.Path), nil
}

// Fetch returns the path of a verified local copy of f: Dir/f.Path if
// present (size and checksum verified), else Cache/f.Path if present
// (verified), else downloaded into Cache/f.Path from f.URLs, tried in order.
//
// A corrupt copy in Dir is an error. A download is written to a temporary
// file next to its destination and renamed into place only once it
// verifies, so no partial file is left behind on any error or when ctx is
// canceled.
func (s Source) Fetch(ctx context.Context, f File) (string, error) {
	local, err := localPath(f)
	if err != nil {
		return "", err
	}
	if s.Dir != "" {
		p := filepath.Join(s.Dir, local)
		err := verifyFile(p, f)
		if err == nil {
			s.used.add(p)
			return p, nil
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return "", withRemedy(err, "replace it with a good copy")
		}
	}
	cache, err := s.cacheDir()
	if err != nil {
		if s.Dir != "" {
			return "", fmt.Errorf("data: %s is not in %s, and %w", f.Path, s.Dir, err)
		}
		return "", err
	}
	p := filepath.Join(cache, local)
	cacheErr := verifyFile(p, f)
	if cacheErr == nil {
		s.used.add(p)
		return p, nil
	}
	corrupt := !errors.Is(cacheErr, fs.ErrNotExist)
	if corrupt && (s.Offline || len(f.URLs) == 0) {
		return "", withRemedy(cacheErr, "delete it and retry")
	}
	if s.Offline || len(f.URLs) == 0 {
		return "", &missingError{s: s, cache: cache, f: f}
	}
	if err := s.download(ctx, f, p); err != nil {
		if corrupt {
			return "", fmt.Errorf("%w; downloading it again failed: %w", withRemedy(cacheErr, "delete it and retry"), err)
		}
		return "", &missingError{s: s, cache: cache, f: f, err: err}
	}
	s.used.add(p)
	return p, nil
}

// FileStatus reports where a File would come from and whether it verifies.
type FileStatus struct {
	File File
	// Path is the local copy, or where Fetch would download the file to
	// when Where is "missing" ("" when there is no cache folder).
	Path string
	// Where is "dir" (found in Source.Dir), "cache" (found in the download
	// cache) or "missing".
	Where string
	// Size and SHA256 describe the local copy (zero when missing).
	Size   int64
	SHA256 string
	// Verified reports whether the local copy has the expected size and
	// checksum.
	Verified bool
	// Problem explains, when not Verified, what is wrong or, for a
	// missing file, what Fetch would do.
	Problem string
}

// Status reports, without downloading, where f would come from and whether
// it verifies. Unlike Fetch it hashes the whole local copy even when its
// size is wrong, so that Size and SHA256 always describe the file.
func (s Source) Status(f File) FileStatus {
	st := FileStatus{File: f, Where: "missing"}
	local, err := localPath(f)
	if err != nil {
		st.Problem = err.Error()
		return st
	}
	look := func(where, p, remedy string) bool {
		d, err := hashFile(p)
		if errors.Is(err, fs.ErrNotExist) {
			return false
		}
		st.Where, st.Path, st.Size, st.SHA256 = where, p, d.size, d.sha256
		if err == nil {
			if problem := f.problem(d); problem != "" {
				err = &corruptError{path: p, problem: problem, remedy: remedy}
			}
		}
		if err != nil {
			st.Problem = err.Error()
		} else {
			st.Verified = true
		}
		return true
	}
	if s.Dir != "" && look("dir", filepath.Join(s.Dir, local), "replace it with a good copy") {
		return st
	}
	cache, err := s.cacheDir()
	if err != nil {
		st.Problem = err.Error()
		if s.Dir != "" {
			st.Problem = fmt.Sprintf("%s is not in %s, and %v", f.Path, s.Dir, err)
		}
		return st
	}
	st.Path = filepath.Join(cache, local)
	if look("cache", st.Path, "delete it and retry") {
		return st
	}
	st.Problem = f.Path + " is " + s.notFoundIn(cache)
	switch {
	case len(f.URLs) == 0:
		st.Problem += "; " + noURL(f)
	case s.Offline:
		st.Problem += "; downloading is off (Source.Offline)"
	default:
		st.Problem += "; Fetch would download it from " + f.URLs[0]
	}
	return st
}

// notFoundIn describes the places searched for a missing file.
func (s Source) notFoundIn(cache string) string {
	if s.Dir == "" {
		return fmt.Sprintf("not in the cache %s (no data folder: Source.Dir and %s are empty)", cache, EnvDataDir)
	}
	return fmt.Sprintf("not in %s nor in the cache %s", s.Dir, cache)
}

// noURL explains why a File without URLs cannot be downloaded.
func noURL(f File) string {
	if f.Dataset == "cifar10" {
		return "it has no download URL (it is part of the shared folder's CIFAR-10 subset; Source.CIFARFiles downloads the full CIFAR-10 archive instead)"
	}
	return "it has no download URL"
}

// missingError reports a file that is neither in the data folder nor in the
// cache and could not be downloaded. It matches fs.ErrNotExist and the
// download error.
type missingError struct {
	s     Source
	cache string
	f     File
	err   error // the download failure; nil when no download was tried
}

func (e *missingError) Error() string {
	var b strings.Builder
	b.WriteString("data: " + e.f.Path + " is " + e.s.notFoundIn(e.cache))
	switch {
	case len(e.f.URLs) == 0:
		b.WriteString(", and " + noURL(e.f))
	case e.s.Offline:
		b.WriteString(", and downloading is off (Source.Offline)")
	default:
		fmt.Fprintf(&b, ", and downloading from %s failed: %v", strings.Join(e.f.URLs, " and "), e.err)
	}
	b.WriteString(". Set " + EnvDataDir + " to a folder with the files")
	if len(e.f.URLs) > 0 {
		if e.s.Offline {
			b.WriteString(" or allow downloads")
		} else {
			b.WriteString(" or connect to the network")
		}
	}
	return b.String()
}

func (e *missingError) Unwrap() []error {
	if e.err == nil {
		return []error{fs.ErrNotExist}
	}
	return []error{fs.ErrNotExist, e.err}
}

// corruptError reports a local file whose size or checksum is wrong.
type corruptError struct {
	path    string // the file
	problem string // e.g. "sha256 ab12…, want 3552…"
	remedy  string // what the user should do, "" = none given
}

func (e *corruptError) Error() string {
	msg := "data: " + e.path + ": " + e.problem + "; the file is corrupt"
	if e.remedy != "" {
		msg += ": " + e.remedy
	}
	return msg
}

// withRemedy returns err with the remedy attached when err is a
// corruptError.
func withRemedy(err error, remedy string) error {
	var c *corruptError
	if errors.As(err, &c) {
		cc := *c
		cc.remedy = remedy
		return &cc
	}
	return err
}

// digest is the size and checksums of some bytes.
type digest struct {
	size   int64
	sha256 string
	md5    string
}

// hasher computes a digest of what is written to it.
type hasher struct {
	n       int64
	sha, md hash.Hash
}

func newHasher() *hasher { return &hasher{sha: sha256.New(), md: md5.New()} }

func (h *hasher) Write(p []byte) (int, error) {
	h.n += int64(len(p))
	h.sha.Write(p)
	h.md.Write(p)
	return len(p), nil
}

func (h *hasher) digest() digest {
	return digest{
		size:   h.n,
		sha256: hex.EncodeToString(h.sha.Sum(nil)),
		md5:    hex.EncodeToString(h.md.Sum(nil)),
	}
}

// hashFile returns the digest of the regular file at p.
func hashFile(p string) (digest, error) {
	r, err := openRegular(p)
	if err != nil {
		return digest{}, err
	}
	defer r.Close()
	h := newHasher()
	if _, err := io.Copy(h, r); err != nil {
		return digest{}, fmt.Errorf("data: reading %s: %w", p, err)
	}
	return h.digest(), nil
}

// openRegular opens p for reading when it is a regular file (following
// symbolic links).
func openRegular(p string) (*os.File, error) {
	r, err := os.Open(p)
	if err != nil {
		return nil, err
	}
	fi, err := r.Stat()
	if err != nil {
		r.Close()
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		r.Close()
		return nil, fmt.Errorf("data: %s is not a regular file", p)
	}
	return r, nil
}

// verifyFile checks the file at p against f: its size, then its SHA-256
// when f has one, else its MD5 when f has one. The error matches
// fs.ErrNotExist when there is no file at p.
func verifyFile(p string, f File) error {
	fi, err := os.Stat(p)
	if err != nil {
		return err
	}
	if fi.Mode().IsRegular() && f.Size > 0 && fi.Size() != f.Size {
		return &corruptError{path: p, problem: sizeProblem(fi.Size(), f.Size)}
	}
	d, err := hashFile(p)
	if err != nil {
		return err
	}
	if problem := f.problem(d); problem != "" {
		return &corruptError{path: p, problem: problem}
	}
	return nil
}

// problem compares the digest of a copy of f with f's size and checksum
// and describes the first mismatch, or returns "" when the copy verifies.
func (f File) problem(d digest) string {
	switch {
	case f.Size > 0 && d.size != f.Size:
		return sizeProblem(d.size, f.Size)
	case f.SHA256 != "" && !strings.EqualFold(d.sha256, f.SHA256):
		return fmt.Sprintf("sha256 %s, want %s", d.sha256, strings.ToLower(f.SHA256))
	case f.SHA256 == "" && f.MD5 != "" && !strings.EqualFold(d.md5, f.MD5):
		return fmt.Sprintf("md5 %s, want %s", d.md5, strings.ToLower(f.MD5))
	}
	return ""
}

func sizeProblem(got, want int64) string {
	if got < want {
		return fmt.Sprintf("truncated: %d bytes, want %d", got, want)
	}
	return fmt.Sprintf("%d bytes, want %d", got, want)
}

// CIFARFiles returns the CIFAR-10 binary record files to read, each a
// sequence of 3073-byte records (a label byte, then 3×32×32 pixel bytes):
//
//   - from Dir, the .bin files of Dir/cifar10-bird-ship (those whose names
//     start with "test" are the test split, the others the training split)
//     or, when that folder has none, those of Dir/cifar-10-batches-bin
//     (data_batch_*.bin training, test_batch.bin test);
//   - else the six files of Cache/cifar-10-batches-bin when all are there
//     with their full size;
//   - else, unless Offline, it downloads the CIFAR-10 binary archive into
//     the cache (or takes it from Dir when there), verifies its MD5, extracts
//     the six record files into Cache/cifar-10-batches-bin (all or none,
//     each checked to be 10000 records long) and deletes the downloaded
//     archive.
//
// Files of the subset listed in the shared folder's README.md are verified
// by size and SHA-256; of other files in Dir, which have no published
// checksum, only that their size is a whole number of records.
func (s Source) CIFARFiles(ctx context.Context) (train, test []string, err error) {
	train, test, err = s.cifarFiles(ctx)
	if err == nil {
		s.used.add(train...)
		s.used.add(test...)
	}
	return train, test, err
}

func (s Source) cifarFiles(ctx context.Context) (train, test []string, err error) {
	if s.Dir != "" {
		train, test, found, err := cifarFromDir(s.Dir)
		if found || err != nil {
			return train, test, err
		}
	}
	cache, err := s.cacheDir()
	if err != nil {
		return nil, nil, err
	}
	dir := filepath.Join(cache, cifarBatchDir)
	train, test = cifarBatchPaths(dir)
	problem := cifarIncomplete(dir)
	if problem == "" {
		return train, test, nil
	}
	where := "not in the cache"
	if s.Dir != "" {
		where = fmt.Sprintf("not in %s (neither %s/ nor %s/) nor in the cache", s.Dir, cifarSubsetDir, cifarBatchDir)
	}
	if s.Offline {
		return nil, nil, fmt.Errorf("data: CIFAR-10 is %s (%s), and downloading is off (Source.Offline). Set %s to a folder with %s/ or %s/ or allow downloads",
			where, problem, EnvDataDir, cifarSubsetDir, cifarBatchDir)
	}
	archive, err := s.Fetch(ctx, cifarArchive)
	var miss *missingError
	if errors.As(err, &miss) && miss.err != nil {
		return nil, nil, fmt.Errorf("data: CIFAR-10 is %s (%s), and downloading %s failed: %w. Set %s to a folder with %s/ or %s/ or connect to the network",
			where, problem, strings.Join(cifarArchive.URLs, " and "), miss.err, EnvDataDir, cifarSubsetDir, cifarBatchDir)
	}
	if err != nil {
		return nil, nil, err
	}
	if err := extractCIFAR(ctx, archive, dir); err != nil {
		return nil, nil, err
	}
	if archive == filepath.Join(cache, filepath.FromSlash(cifarArchive.Path)) {
		// The records are extracted; the archive only takes space. An
		// archive found in Dir belongs to the caller and stays.
		os.Remove(archive)
	}
	return train, test, nil
}

// cifarBatchPaths returns the paths of the files cifarBatches in dir.
func cifarBatchPaths(dir string) (train, test []string) {
	for _, name := range cifarBatches {
		p := filepath.Join(dir, name)
		if name == cifarTestBatch {
			test = append(test, p)
		} else {
			train = append(train, p)
		}
	}
	return train, test
}

// cifarIncomplete describes what is missing from the extracted CIFAR-10
// record files in dir, or returns "" when all are there with their full
// size.
func cifarIncomplete(dir string) string {
	if _, err := os.Stat(dir); err != nil {
		return fmt.Sprintf("no %s", dir)
	}
	for _, name := range cifarBatches {
		p := filepath.Join(dir, name)
		fi, err := os.Stat(p)
		switch {
		case err != nil:
			return fmt.Sprintf("no %s", p)
		case !fi.Mode().IsRegular():
			return fmt.Sprintf("%s is not a regular file", p)
		case fi.Size() != cifarBatchBytes:
			return fmt.Sprintf("%s: %s", p, sizeProblem(fi.Size(), cifarBatchBytes))
		}
	}
	return ""
}

// cifarFromDir finds the CIFAR-10 record files of a data folder; found
// reports whether it has any.
func cifarFromDir(root string) (train, test []string, found bool, err error) {
	// The bird/ship subset of the shared layout.
	sub := filepath.Join(root, cifarSubsetDir)
	names, err := binFiles(sub)
	if err != nil {
		return nil, nil, true, err
	}
	for _, name := range names {
		p := filepath.Join(sub, name)
		if err := verifyRecords(p, cifarSubsetDir+"/"+name); err != nil {
			return nil, nil, true, err
		}
		if strings.HasPrefix(name, "test") {
			test = append(test, p)
		} else {
			train = append(train, p)
		}
	}
	if len(names) > 0 {
		return train, test, true, bothSplits(sub, train, test, `.bin files whose names start with "test"`)
	}

	// The folder of the CIFAR-10 binary archive.
	batches := filepath.Join(root, cifarBatchDir)
	if names, err = binFiles(batches); err != nil {
		return nil, nil, true, err
	}
	for _, name := range names {
		p := filepath.Join(batches, name)
		isTrain, _ := filepath.Match(cifarTrainPattern, name)
		if !isTrain && name != cifarTestBatch {
			continue
		}
		if err := verifyRecords(p, cifarBatchDir+"/"+name); err != nil {
			return nil, nil, true, err
		}
		if isTrain {
			train = append(train, p)
		} else {
			test = append(test, p)
		}
	}
	if len(train)+len(test) == 0 {
		return nil, nil, false, nil
	}
	return train, test, true, bothSplits(batches, train, test, cifarTestBatch)
}

// bothSplits reports an error when a CIFAR-10 folder lacks the training
// split. A missing test split is allowed: data.Paper then holds out part of
// the training records for validation.
func bothSplits(dir string, train, test []string, testFiles string) error {
	if len(train) == 0 {
		return fmt.Errorf("data: %s has CIFAR-10 test files but no training files", dir)
	}
	return nil
}

// binFiles returns the sorted names of the regular (or linked) .bin files
// in dir, skipping hidden ones; none when dir does not exist.
func binFiles(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("data: %w", err)
	}
	var names []string
	for _, e := range entries {
		name := e.Name()
		if !strings.HasSuffix(name, ".bin") || strings.HasPrefix(name, ".") {
			continue
		}
		if fi, err := os.Stat(filepath.Join(dir, name)); err == nil && fi.Mode().IsRegular() {
			names = append(names, name)
		}
	}
	return names, nil
}

// verifyRecords checks a CIFAR-10 record file of a data folder: against
// the registry when it lists rel, else only that its size is a positive
// whole number of records.
func verifyRecords(p, rel string) error {
	if f, ok := registryFile(rel); ok {
		return withRemedy(verifyFile(p, f), "replace it with a good copy")
	}
	fi, err := os.Stat(p)
	if err != nil {
		return fmt.Errorf("data: %w", err)
	}
	if fi.Size() == 0 || fi.Size()%cifarRecordBytes != 0 {
		return &corruptError{
			path:    p,
			problem: fmt.Sprintf("%d bytes, not a whole number of %d-byte CIFAR-10 records", fi.Size(), cifarRecordBytes),
			remedy:  "replace it with a good copy",
		}
	}
	return nil
}
