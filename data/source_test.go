package data

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/md5"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/convexnn/convexnn/internal/testenv"
)

// These tests never touch the network: downloads come from httptest
// servers, and the registry's real files are only read from the shared data
// folder.

// fixture returns n deterministic bytes.
func fixture(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*7 + i/251)
	}
	return b
}

func sha256Hex(b []byte) string { s := sha256.Sum256(b); return hex.EncodeToString(s[:]) }
func md5Hex(b []byte) string    { s := md5.Sum(b); return hex.EncodeToString(s[:]) }

// server serves handler and counts its requests.
func server(t *testing.T, handler http.HandlerFunc) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		handler(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv, &n
}

// serveBytes returns a handler sending body with its Content-Length.
func serveBytes(body []byte) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		w.Write(body)
	}
}

// regularFiles returns the regular files under dir, relative to it.
func regularFiles(t *testing.T, dir string) []string {
	t.Helper()
	var files []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type().IsRegular() {
			rel, _ := filepath.Rel(dir, p)
			files = append(files, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		t.Fatal(err)
	}
	return files
}

// testSource returns an online Source with an empty cache, recording its
// progress output.
func testSource(t *testing.T) (Source, *bytes.Buffer) {
	var progress bytes.Buffer
	return Source{Cache: t.TempDir(), Progress: &progress}, &progress
}

func testFile(body []byte, urls ...string) File {
	return File{
		Dataset: "test",
		Path:    "test/blob.bin",
		Size:    int64(len(body)),
		SHA256:  sha256Hex(body),
		URLs:    urls,
	}
}

func TestFetchDownload(t *testing.T) {
	body := fixture(100000)
	srv, requests := server(t, serveBytes(body))
	s, progress := testSource(t)
	f := testFile(body, srv.URL+"/blob.bin")

	p, err := s.Fetch(context.Background(), f)
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(s.Cache, "test", "blob.bin"); p != want {
		t.Errorf("path %s, want %s", p, want)
	}
	got, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, body) {
		t.Error("downloaded bytes differ from the served ones")
	}
	if files := regularFiles(t, s.Cache); !slices.Equal(files, []string{"test/blob.bin"}) {
		t.Errorf("cache holds %q, want only test/blob.bin", files)
	}
	if progress.Len() != 0 {
		t.Errorf("progress output for a fast download: %q", progress)
	}

	// Now cached: no second request, even offline.
	for _, offline := range []bool{false, true} {
		s.Offline = offline
		if p2, err := s.Fetch(context.Background(), f); err != nil || p2 != p {
			t.Errorf("Fetch from the cache (offline %v) = %q, %v; want %q", offline, p2, err, p)
		}
	}
	if n := requests.Load(); n != 1 {
		t.Errorf("%d requests, want 1", n)
	}
	st := s.Status(f)
	if st.Where != "cache" || !st.Verified || st.Path != p || st.Size != f.Size || st.SHA256 != f.SHA256 {
		t.Errorf("Status = %+v, want verified in the cache", st)
	}
}

func TestFetchMD5Only(t *testing.T) {
	body := fixture(5000)
	srv, _ := server(t, serveBytes(body))
	s, _ := testSource(t)
	f := File{Dataset: "test", Path: "test/md5.bin", Size: int64(len(body)), MD5: md5Hex(body), URLs: []string{srv.URL}}
	if _, err := s.Fetch(context.Background(), f); err != nil {
		t.Fatal(err)
	}
	f.Path, f.MD5 = "test/md5-bad.bin", md5Hex(body[1:])
	_, err := s.Fetch(context.Background(), f)
	if err == nil || !strings.Contains(err.Error(), "md5 "+md5Hex(body)+", want "+f.MD5) {
		t.Errorf("error %v, want an md5 mismatch", err)
	}
}

func TestFetchChecksumMismatch(t *testing.T) {
	body := fixture(4096)
	srv, _ := server(t, serveBytes(body))
	s, _ := testSource(t)
	f := testFile(body, srv.URL+"/blob.bin")
	f.SHA256 = sha256Hex([]byte("something else"))

	_, err := s.Fetch(context.Background(), f)
	if err == nil {
		t.Fatal("no error for a corrupt download")
	}
	for _, want := range []string{"test/blob.bin", srv.URL + "/blob.bin", "sha256 " + sha256Hex(body), "want " + f.SHA256, "corrupt"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not contain %q", err, want)
		}
	}
	if files := regularFiles(t, s.Cache); len(files) != 0 {
		t.Errorf("files left in the cache: %q", files)
	}
}

func TestFetchTruncated(t *testing.T) {
	body := fixture(10000)
	for _, tc := range []struct {
		name    string
		handler http.HandlerFunc
		want    string
	}{
		{
			// The server announces more than it sends and closes the
			// connection.
			name: "content-length",
			handler: func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Length", strconv.Itoa(len(body)))
				w.Write(body[:len(body)/2])
			},
			want: "unexpected EOF",
		},
		{
			// No Content-Length: only the registry's size tells.
			name: "chunked",
			handler: func(w http.ResponseWriter, r *http.Request) {
				w.Write(body[:len(body)/2])
				w.(http.Flusher).Flush()
			},
			want: fmt.Sprintf("truncated: %d bytes, want %d", len(body)/2, len(body)),
		},
		{
			name:    "announced-size",
			handler: serveBytes(body[:len(body)-1]),
			want:    fmt.Sprintf("the server sends %d bytes, want %d", len(body)-1, len(body)),
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv, _ := server(t, tc.handler)
			s, _ := testSource(t)
			_, err := s.Fetch(context.Background(), testFile(body, srv.URL+"/blob.bin"))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one containing %q", err, tc.want)
			}
			if files := regularFiles(t, s.Cache); len(files) != 0 {
				t.Errorf("files left in the cache: %q", files)
			}
		})
	}
}

func TestFetchHTTPStatus(t *testing.T) {
	srv, _ := server(t, http.NotFound)
	s, _ := testSource(t)
	f := testFile(fixture(10), srv.URL+"/missing.bin")
	_, err := s.Fetch(context.Background(), f)
	if err == nil {
		t.Fatal("no error for HTTP 404")
	}
	for _, want := range []string{srv.URL + "/missing.bin", "404 Not Found", "test/blob.bin is not in the cache " + s.Cache, "Set CONVEXNN_DATA"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not contain %q", err, want)
		}
	}
	if !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("error %v does not match fs.ErrNotExist", err)
	}
	if files := regularFiles(t, s.Cache); len(files) != 0 {
		t.Errorf("files left in the cache: %q", files)
	}
}

func TestFetchSecondURL(t *testing.T) {
	body := fixture(3000)
	srv, _ := server(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/good" {
			serveBytes(body)(w, r)
			return
		}
		http.Error(w, "gone", http.StatusGone)
	})
	s, _ := testSource(t)
	p, err := s.Fetch(context.Background(), testFile(body, srv.URL+"/bad", srv.URL+"/good"))
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(p); !bytes.Equal(got, body) {
		t.Error("wrong bytes from the second URL")
	}

	// Both failing: both are named.
	s, _ = testSource(t)
	_, err = s.Fetch(context.Background(), testFile(body, srv.URL+"/bad", srv.URL+"/worse"))
	if err == nil || !strings.Contains(err.Error(), srv.URL+"/bad: 410 Gone") || !strings.Contains(err.Error(), srv.URL+"/worse: 410 Gone") {
		t.Errorf("error %v, want both URLs named", err)
	}
}

func TestFetchCanceled(t *testing.T) {
	body := fixture(1 << 20)
	sent := make(chan struct{})
	srv, _ := server(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		w.Write(body[:1000])
		w.(http.Flusher).Flush()
		close(sent)
		<-r.Context().Done()
	})
	s, _ := testSource(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		<-sent
		time.Sleep(50 * time.Millisecond) // let the client write the first bytes
		cancel()
	}()
	_, err := s.Fetch(ctx, testFile(body, srv.URL+"/blob.bin"))
	if !errors.Is(err, context.Canceled) {
		t.Errorf("error %v, want context.Canceled", err)
	}
	if files := regularFiles(t, s.Cache); len(files) != 0 {
		t.Errorf("files left in the cache: %q", files)
	}

	// Canceled before it starts.
	_, err = s.Fetch(ctx, testFile(body, srv.URL+"/blob.bin"))
	if !errors.Is(err, context.Canceled) {
		t.Errorf("error %v, want context.Canceled", err)
	}
}

func TestFetchProgress(t *testing.T) {
	body := fixture(200000)
	srv, _ := server(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		w.Write(body[:len(body)/2])
		w.(http.Flusher).Flush()
		time.Sleep(progressInterval + 300*time.Millisecond)
		w.Write(body[len(body)/2:])
	})
	s, progress := testSource(t)
	if _, err := s.Fetch(context.Background(), testFile(body, srv.URL+"/blob.bin")); err != nil {
		t.Fatal(err)
	}
	out := progress.String()
	for _, want := range []string{"downloading test/blob.bin: 100.0 kB / 200.0 kB (50%)", "kB/s", "downloaded test/blob.bin: 200.0 kB in"} {
		if !strings.Contains(out, want) {
			t.Errorf("progress output %q does not contain %q", out, want)
		}
	}
}

func TestFetchOffline(t *testing.T) {
	srv, requests := server(t, serveBytes(fixture(10)))
	s, _ := testSource(t)
	s.Offline = true
	s.Dir = t.TempDir()
	f := testFile(fixture(10), srv.URL)
	_, err := s.Fetch(context.Background(), f)
	want := fmt.Sprintf("data: test/blob.bin is not in %s nor in the cache %s, and downloading is off (Source.Offline). Set CONVEXNN_DATA to a folder with the files or allow downloads", s.Dir, s.Cache)
	if err == nil || err.Error() != want {
		t.Errorf("error\n%v\nwant\n%s", err, want)
	}
	if !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("error %v does not match fs.ErrNotExist", err)
	}
	if n := requests.Load(); n != 0 {
		t.Errorf("%d requests while offline", n)
	}
	st := s.Status(f)
	if st.Where != "missing" || st.Verified || st.Path != filepath.Join(s.Cache, "test", "blob.bin") || !strings.Contains(st.Problem, "downloading is off") {
		t.Errorf("Status = %+v", st)
	}
}

func TestFetchCorruptCache(t *testing.T) {
	body := fixture(2000)
	srv, requests := server(t, serveBytes(body))
	s, _ := testSource(t)
	f := testFile(body, srv.URL)
	p := filepath.Join(s.Cache, "test", "blob.bin")
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	bad := slices.Clone(body)
	bad[7] ^= 1
	if err := os.WriteFile(p, bad, 0o644); err != nil {
		t.Fatal(err)
	}

	st := s.Status(f)
	if st.Where != "cache" || st.Verified || !strings.Contains(st.Problem, "sha256 "+sha256Hex(bad)+", want "+f.SHA256) {
		t.Errorf("Status = %+v, want a corrupt cached copy", st)
	}
	s.Offline = true
	_, err := s.Fetch(context.Background(), f)
	if want := p + ": sha256 " + sha256Hex(bad) + ", want " + f.SHA256 + "; the file is corrupt: delete it and retry"; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("error %v, want one containing %q", err, want)
	}
	// Online, the corrupt copy is replaced.
	s.Offline = false
	if _, err := s.Fetch(context.Background(), f); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(p); !bytes.Equal(got, body) || requests.Load() != 1 {
		t.Error("the corrupt cached copy was not replaced")
	}
}

func TestFetchInvalidPath(t *testing.T) {
	s, _ := testSource(t)
	for _, p := range []string{"", ".", "../x", "/etc/passwd", "a//b"} {
		if _, err := s.Fetch(context.Background(), File{Path: p, URLs: []string{"http://127.0.0.1:1/"}}); err == nil || !strings.Contains(err.Error(), "invalid file path") {
			t.Errorf("Fetch with path %q: error %v, want an invalid path", p, err)
		}
	}
}

func TestSourceDefault(t *testing.T) {
	t.Setenv("CONVEXNN_DATA", "/some/data")
	s := DefaultSource()
	if s.Dir != "/some/data" || s.Offline || s.Client != nil || s.Progress != nil {
		t.Errorf("DefaultSource() = %+v", s)
	}
	if c, err := os.UserCacheDir(); err == nil && s.Cache != filepath.Join(c, "convexnn") {
		t.Errorf("cache %q, want %q", s.Cache, filepath.Join(c, "convexnn"))
	}
	t.Setenv("CONVEXNN_DATA", "")
	if s := DefaultSource(); s.Dir != "" {
		t.Errorf("Dir %q without CONVEXNN_DATA", s.Dir)
	}
}

func TestFiles(t *testing.T) {
	want := map[string]int{"mnist": 4, "fashion-mnist": 4, "cifar10": 2, "mammographic": 1}
	if got := Datasets(); len(got) != len(want) {
		t.Errorf("Datasets() = %q", got)
	}
	for _, name := range Datasets() {
		files, err := Files(name)
		if err != nil {
			t.Fatal(err)
		}
		if len(files) != want[name] {
			t.Errorf("%s: %d files, want %d", name, len(files), want[name])
		}
		for _, f := range files {
			if f.Dataset != name || !strings.HasPrefix(f.Path, strings.TrimSuffix(name, "10")) ||
				f.Size <= 0 || len(f.SHA256) != 64 || (f.MD5 != "" && len(f.MD5) != 32) {
				t.Errorf("bad registry entry %+v", f)
			}
			if name != "cifar10" && len(f.URLs) == 0 {
				t.Errorf("%s has no URL", f.Path)
			}
		}
	}
	files, _ := Files("MNIST")
	files[0].URLs[0] = "changed"
	if again, _ := Files("mnist"); again[0].URLs[0] == "changed" {
		t.Error("Files returns the registry's own slices")
	}
	_, err := Files("imagenet")
	if err == nil || !strings.Contains(err.Error(), `"imagenet"`) || !strings.Contains(err.Error(), "mnist, fashion-mnist, cifar10, mammographic") {
		t.Errorf("error %v, want the known names", err)
	}
}

func TestStatusSharedData(t *testing.T) {
	shared := testenv.SharedData(t)
	s := Source{Dir: shared, Cache: t.TempDir(), Offline: true}
	for _, name := range Datasets() {
		files, err := Files(name)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			want := filepath.Join(shared, filepath.FromSlash(f.Path))
			st := s.Status(f)
			if st.Where != "dir" || !st.Verified || st.Path != want || st.Size != f.Size || st.SHA256 != f.SHA256 || st.Problem != "" {
				t.Errorf("Status(%s) = %+v, want verified in the folder", f.Path, st)
			}
			if p, err := s.Fetch(context.Background(), f); err != nil || p != want {
				t.Errorf("Fetch(%s) = %q, %v; want %q", f.Path, p, err, want)
			}
		}
	}
}

func TestFetchSharedDataCorrupt(t *testing.T) {
	shared := testenv.SharedData(t)
	files, _ := Files("mnist")
	f := files[1] // mnist/train-labels-idx1-ubyte.gz
	good, err := os.ReadFile(filepath.Join(shared, filepath.FromSlash(f.Path)))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	p := filepath.Join(dir, filepath.FromSlash(f.Path))
	os.MkdirAll(filepath.Dir(p), 0o755)
	s := Source{Dir: dir, Cache: t.TempDir(), Offline: true}

	bad := slices.Clone(good)
	bad[len(bad)/2] ^= 0x10
	if err := os.WriteFile(p, bad, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = s.Fetch(context.Background(), f)
	want := fmt.Sprintf("data: %s: sha256 %s, want %s; the file is corrupt: replace it with a good copy", p, sha256Hex(bad), f.SHA256)
	if err == nil || err.Error() != want {
		t.Errorf("error\n%v\nwant\n%s", err, want)
	}
	if st := s.Status(f); st.Where != "dir" || st.Verified || st.Problem != want {
		t.Errorf("Status = %+v", st)
	}

	if err := os.WriteFile(p, good[:1000], 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = s.Fetch(context.Background(), f)
	if want := fmt.Sprintf("%s: truncated: 1000 bytes, want %d", p, f.Size); err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("error %v, want one containing %q", err, want)
	}

	// Missing from the folder, offline, nothing cached.
	_, err = s.Fetch(context.Background(), files[0])
	if err == nil || !strings.Contains(err.Error(), "mnist/train-images-idx3-ubyte.gz is not in "+dir+" nor in the cache "+s.Cache) ||
		!strings.Contains(err.Error(), "Set CONVEXNN_DATA") {
		t.Errorf("error %v, want a missing file", err)
	}
}

func TestCIFARFilesSharedData(t *testing.T) {
	shared := testenv.SharedData(t)
	s := Source{Dir: shared, Cache: t.TempDir(), Offline: true}
	train, test, err := s.CIFARFiles(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	sub := filepath.Join(shared, "cifar10-bird-ship")
	if want := []string{filepath.Join(sub, "train.bin")}; !slices.Equal(train, want) {
		t.Errorf("train %q, want %q", train, want)
	}
	if want := []string{filepath.Join(sub, "test_first1000_partial.bin")}; !slices.Equal(test, want) {
		t.Errorf("test %q, want %q", test, want)
	}
}

// writeFile writes b to dir/rel, creating folders.
func writeFile(t *testing.T, dir, rel string, b []byte) string {
	t.Helper()
	p := filepath.Join(dir, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestCIFARFilesDir(t *testing.T) {
	s := Source{Cache: t.TempDir(), Offline: true}

	// The folder of the CIFAR-10 archive.
	s.Dir = t.TempDir()
	rec := fixture(2 * cifarRecordBytes)
	var wantTrain []string
	for _, name := range []string{"data_batch_1.bin", "data_batch_2.bin"} {
		wantTrain = append(wantTrain, writeFile(t, s.Dir, "cifar-10-batches-bin/"+name, rec))
	}
	wantTest := []string{writeFile(t, s.Dir, "cifar-10-batches-bin/test_batch.bin", rec)}
	writeFile(t, s.Dir, "cifar-10-batches-bin/batches.meta.txt", []byte("airplane\n"))
	train, test, err := s.CIFARFiles(context.Background())
	if err != nil || !slices.Equal(train, wantTrain) || !slices.Equal(test, wantTest) {
		t.Errorf("CIFARFiles = %q, %q, %v; want %q, %q", train, test, err, wantTrain, wantTest)
	}

	// A subset folder takes precedence; any .bin file is read.
	wantTrain = []string{writeFile(t, s.Dir, "cifar10-bird-ship/a.bin", rec), writeFile(t, s.Dir, "cifar10-bird-ship/b.bin", rec)}
	wantTest = []string{writeFile(t, s.Dir, "cifar10-bird-ship/test.bin", rec[:cifarRecordBytes])}
	writeFile(t, s.Dir, "cifar10-bird-ship/notes.txt", []byte("x"))
	train, test, err = s.CIFARFiles(context.Background())
	if err != nil || !slices.Equal(train, wantTrain) || !slices.Equal(test, wantTest) {
		t.Errorf("CIFARFiles = %q, %q, %v; want %q, %q", train, test, err, wantTrain, wantTest)
	}

	// Not a whole number of records.
	p := writeFile(t, s.Dir, "cifar10-bird-ship/b.bin", rec[1:])
	_, _, err = s.CIFARFiles(context.Background())
	if want := fmt.Sprintf("%s: %d bytes, not a whole number of 3073-byte CIFAR-10 records", p, len(rec)-1); err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("error %v, want one containing %q", err, want)
	}
	os.Remove(p)

	// A subset file listed in the registry is verified by its checksum.
	p = writeFile(t, s.Dir, "cifar10-bird-ship/test_first1000_partial.bin", fixture(633038))
	_, _, err = s.CIFARFiles(context.Background())
	if err == nil || !strings.Contains(err.Error(), p+": sha256 ") {
		t.Errorf("error %v, want a checksum error for %s", err, p)
	}
	os.Remove(p)

	// No test split: allowed (the caller holds out part of the training
	// records instead).
	os.Remove(wantTest[0])
	tr, te, err := s.CIFARFiles(context.Background())
	if err != nil || len(tr) == 0 || len(te) != 0 {
		t.Errorf("no test files: train %v test %v err %v, want training files only", tr, te, err)
	}

	// Neither in the folder nor cached, offline.
	s.Dir = t.TempDir()
	_, _, err = s.CIFARFiles(context.Background())
	if err == nil || !strings.Contains(err.Error(), "CIFAR-10 is not in "+s.Dir) || !strings.Contains(err.Error(), "downloading is off") {
		t.Errorf("error %v, want CIFAR-10 missing offline", err)
	}
}

// cifarTarball builds a small CIFAR-10 binary archive whose record files
// hold records records each and returns it with its members' contents.
func cifarTarball(t *testing.T, records int, skip string) ([]byte, map[string][]byte) {
	t.Helper()
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	add := func(name string, b []byte) {
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(b)), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		tw.Write(b)
	}
	tw.WriteHeader(&tar.Header{Name: "cifar-10-batches-bin/", Mode: 0o755, Typeflag: tar.TypeDir})
	add("cifar-10-batches-bin/batches.meta.txt", []byte("airplane\nautomobile\n"))
	members := map[string][]byte{}
	for i, name := range cifarBatches {
		b := fixture(records * cifarRecordBytes)
		b[0] = byte(i) // distinct files
		members[name] = b
		if name != skip {
			add("cifar-10-batches-bin/"+name, b)
		}
	}
	add("cifar-10-batches-bin/readme.html", []byte("<html></html>"))
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := gz.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes(), members
}

// useCIFARArchive makes CIFARFiles download archive from a test server.
func useCIFARArchive(t *testing.T, archive []byte, records int) *atomic.Int64 {
	t.Helper()
	srv, requests := server(t, serveBytes(archive))
	oldArchive, oldBytes := cifarArchive, cifarBatchBytes
	t.Cleanup(func() { cifarArchive, cifarBatchBytes = oldArchive, oldBytes })
	cifarArchive = File{
		Dataset: "cifar10",
		Path:    "cifar-10-binary.tar.gz",
		Size:    int64(len(archive)),
		MD5:     md5Hex(archive),
		URLs:    []string{srv.URL + "/cifar-10-binary.tar.gz"},
	}
	cifarBatchBytes = int64(records * cifarRecordBytes)
	return requests
}

func TestCIFARFilesDownload(t *testing.T) {
	const records = 3
	archive, members := cifarTarball(t, records, "")
	requests := useCIFARArchive(t, archive, records)
	s, _ := testSource(t)
	s.Dir = t.TempDir() // has no CIFAR-10

	train, test, err := s.CIFARFiles(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(s.Cache, "cifar-10-batches-bin")
	var wantTrain []string
	for i := 1; i <= 5; i++ {
		wantTrain = append(wantTrain, filepath.Join(dir, fmt.Sprintf("data_batch_%d.bin", i)))
	}
	if !slices.Equal(train, wantTrain) || !slices.Equal(test, []string{filepath.Join(dir, "test_batch.bin")}) {
		t.Errorf("CIFARFiles = %q, %q", train, test)
	}
	for _, p := range append(train, test...) {
		if got, err := os.ReadFile(p); err != nil || !bytes.Equal(got, members[filepath.Base(p)]) {
			t.Errorf("%s: wrong content (%v)", p, err)
		}
	}
	want := []string{"cifar-10-batches-bin/data_batch_1.bin", "cifar-10-batches-bin/data_batch_2.bin",
		"cifar-10-batches-bin/data_batch_3.bin", "cifar-10-batches-bin/data_batch_4.bin",
		"cifar-10-batches-bin/data_batch_5.bin", "cifar-10-batches-bin/test_batch.bin"}
	if files := regularFiles(t, s.Cache); !slices.Equal(files, want) {
		t.Errorf("cache holds %q, want only the six record files (the archive deleted)", files)
	}

	// Now cached.
	s.Offline = true
	train2, test2, err := s.CIFARFiles(context.Background())
	if err != nil || !slices.Equal(train2, train) || !slices.Equal(test2, test) {
		t.Errorf("cached CIFARFiles = %q, %q, %v", train2, test2, err)
	}
	if n := requests.Load(); n != 1 {
		t.Errorf("%d requests, want 1", n)
	}

	// A truncated record file in the cache is extracted again.
	s.Offline = false
	os.Truncate(test[0], 10)
	if _, _, err := s.CIFARFiles(context.Background()); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(test[0]); err != nil || fi.Size() != int64(records*cifarRecordBytes) || requests.Load() != 2 {
		t.Errorf("the truncated file was not replaced")
	}
}

func TestCIFARFilesBadArchive(t *testing.T) {
	const records = 2
	t.Run("md5", func(t *testing.T) {
		archive, _ := cifarTarball(t, records, "")
		useCIFARArchive(t, archive, records)
		cifarArchive.MD5 = md5Hex([]byte("other"))
		s, _ := testSource(t)
		_, _, err := s.CIFARFiles(context.Background())
		if err == nil || !strings.Contains(err.Error(), "md5 "+md5Hex(archive)+", want "+cifarArchive.MD5) {
			t.Errorf("error %v, want an md5 mismatch", err)
		}
		if files := regularFiles(t, s.Cache); len(files) != 0 {
			t.Errorf("files left in the cache: %q", files)
		}
	})
	t.Run("member-missing", func(t *testing.T) {
		archive, _ := cifarTarball(t, records, "data_batch_4.bin")
		useCIFARArchive(t, archive, records)
		s, _ := testSource(t)
		_, _, err := s.CIFARFiles(context.Background())
		if err == nil || !strings.Contains(err.Error(), "lacks cifar-10-batches-bin/data_batch_4.bin") {
			t.Errorf("error %v, want the missing member named", err)
		}
		// The verified archive stays for a retry; no record file is placed.
		if files := regularFiles(t, s.Cache); !slices.Equal(files, []string{"cifar-10-binary.tar.gz"}) {
			t.Errorf("cache holds %q, want only the archive", files)
		}
	})
	t.Run("member-size", func(t *testing.T) {
		archive, _ := cifarTarball(t, records, "")
		useCIFARArchive(t, archive, records)
		cifarBatchBytes = records*cifarRecordBytes + 1
		s, _ := testSource(t)
		_, _, err := s.CIFARFiles(context.Background())
		if want := fmt.Sprintf("has %d bytes, want %d", records*cifarRecordBytes, cifarBatchBytes); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v, want one containing %q", err, want)
		}
		if files := regularFiles(t, s.Cache); !slices.Equal(files, []string{"cifar-10-binary.tar.gz"}) {
			t.Errorf("cache holds %q, want only the archive", files)
		}
	})
	t.Run("canceled", func(t *testing.T) {
		archive, _ := cifarTarball(t, records, "")
		useCIFARArchive(t, archive, records)
		s, _ := testSource(t)
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		_, _, err := s.CIFARFiles(ctx)
		if !errors.Is(err, context.Canceled) {
			t.Errorf("error %v, want context.Canceled", err)
		}
		if files := regularFiles(t, s.Cache); len(files) != 0 {
			t.Errorf("files left in the cache: %q", files)
		}
	})
}

func TestFetchStalled(t *testing.T) {
	old := stallTimeout
	stallTimeout = 200 * time.Millisecond
	t.Cleanup(func() { stallTimeout = old })
	body := fixture(10000)
	srv, _ := server(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		w.Write(body[:100])
		w.(http.Flusher).Flush()
		select {
		case <-r.Context().Done():
		case <-time.After(5 * time.Second):
		}
	})
	s, _ := testSource(t)
	start := time.Now()
	_, err := s.Fetch(context.Background(), testFile(body, srv.URL))
	if err == nil || !strings.Contains(err.Error(), "no data received for 200ms") {
		t.Errorf("error %v, want a stall", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("the stall was detected after %v", d)
	}
	if files := regularFiles(t, s.Cache); len(files) != 0 {
		t.Errorf("files left in the cache: %q", files)
	}
}

func TestFetchRemovesStale(t *testing.T) {
	body := fixture(1000)
	srv, _ := server(t, serveBytes(body))
	s, _ := testSource(t)
	old := writeFile(t, s.Cache, "test/.blob.bin.111.part", []byte("left by a killed process"))
	writeFile(t, s.Cache, "test/.blob.bin.222.part", []byte("another download, running"))
	long := time.Now().Add(-2 * staleAge)
	if err := os.Chtimes(old, long, long); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Fetch(context.Background(), testFile(body, srv.URL)); err != nil {
		t.Fatal(err)
	}
	if files := regularFiles(t, s.Cache); !slices.Equal(files, []string{"test/.blob.bin.222.part", "test/blob.bin"}) {
		t.Errorf("cache holds %q; want the stale temporary file removed, the recent one kept", files)
	}
}
