package data

import (
	"archive/tar"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Download tuning. Variables so that tests can shorten them.
var (
	// stallTimeout fails a download that receives no bytes for this long.
	stallTimeout = 2 * time.Minute
	// progressInterval is the delay before the first progress line and
	// between two lines.
	progressInterval = time.Second
)

// defaultClient is the HTTP client of a Source without one. It has no
// overall timeout, which would cut large downloads on slow links; the
// stall timeout of download bounds the time without data instead.
var defaultClient = sync.OnceValue(func() *http.Client {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.TLSHandshakeTimeout = 30 * time.Second
	t.ResponseHeaderTimeout = time.Minute
	return &http.Client{Transport: t}
})

func (s Source) client() *http.Client {
	if s.Client != nil {
		return s.Client
	}
	return defaultClient()
}

// download fetches f from its URLs, in order, into dst. It returns nil
// after the first download that verifies; otherwise the errors of every
// URL tried.
func (s Source) download(ctx context.Context, f File, dst string) error {
	var errs []error
	for _, u := range f.URLs {
		err := s.downloadURL(ctx, f, u, dst)
		if err == nil {
			return nil
		}
		errs = append(errs, err)
		if ctx.Err() != nil {
			break
		}
	}
	if len(errs) == 1 {
		return errs[0]
	}
	return joinedErrors(errs)
}

// joinedErrors formats several errors on one line.
type joinedErrors []error

func (e joinedErrors) Error() string {
	msgs := make([]string, len(e))
	for i, err := range e {
		msgs[i] = err.Error()
	}
	return strings.Join(msgs, "; ")
}

func (e joinedErrors) Unwrap() []error { return e }

// downloadURL downloads f from u into dst atomically: into a temporary file
// in dst's folder, which is verified, synced and renamed to dst, or removed
// on any error.
func (s Source) downloadURL(ctx context.Context, f File, u, dst string) (err error) {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	stalled := fmt.Errorf("no data received for %v", stallTimeout)
	watchdog := time.AfterFunc(stallTimeout, func() { cancel(stalled) })
	defer watchdog.Stop()
	// Report the cause of a cancellation (the caller's or the stall)
	// rather than the transport's wording of it.
	defer func() {
		if err != nil && ctx.Err() != nil {
			err = fmt.Errorf("GET %s: %w", u, context.Cause(ctx))
		}
	}()

	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return fmt.Errorf("GET %s: %w", u, err)
	}
	req.Header.Set("User-Agent", "convexnn (github.com/convexnn/convexnn)")
	// Ask for the bytes as stored: a server that sends a .gz file with
	// Content-Encoding gzip must not have it decompressed on the way.
	req.Header.Set("Accept-Encoding", "identity")
	resp, err := s.client().Do(req)
	if err != nil {
		return err // *url.Error names the method and URL
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", u, resp.Status)
	}
	if f.Size > 0 && resp.ContentLength >= 0 && resp.ContentLength != f.Size {
		return fmt.Errorf("GET %s: the server sends %d bytes, want %d", u, resp.ContentLength, f.Size)
	}
	total := f.Size
	if total <= 0 {
		total = resp.ContentLength
	}

	dir := filepath.Dir(dst)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("data: creating the cache folder: %w", err)
	}
	removeStale(dir, "."+filepath.Base(dst)+".*.part")
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(dst)+".*.part")
	if err != nil {
		return fmt.Errorf("data: %w", err)
	}
	placed := false
	defer func() {
		if !placed {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()

	h := newHasher()
	p := startProgress(s.progress(), f.Path, total)
	body := &watchedReader{r: resp.Body, watchdog: watchdog}
	n, err := io.Copy(io.MultiWriter(tmp, h, p), body)
	p.stop(err == nil)
	if err != nil {
		return fmt.Errorf("GET %s: interrupted after %d bytes: %w", u, n, err)
	}
	if resp.ContentLength >= 0 && n != resp.ContentLength {
		return fmt.Errorf("GET %s: truncated: %d bytes, the server announced %d", u, n, resp.ContentLength)
	}
	if problem := f.problem(h.digest()); problem != "" {
		return fmt.Errorf("GET %s: %s: the server sent a corrupt file (nothing was saved)", u, problem)
	}
	if err := closeInto(tmp, dst); err != nil {
		return err
	}
	placed = true
	return nil
}

// closeInto syncs and closes the temporary file tmp and renames it to dst.
func closeInto(tmp *os.File, dst string) error {
	if err := tmp.Sync(); err != nil {
		return fmt.Errorf("data: writing %s: %w", dst, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("data: writing %s: %w", dst, err)
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		return fmt.Errorf("data: %w", err)
	}
	if err := os.Rename(tmp.Name(), dst); err != nil {
		return fmt.Errorf("data: %w", err)
	}
	syncDir(filepath.Dir(dst))
	return nil
}

// staleAge is the age (since the last write) from which a temporary
// download file is taken to be left over by a killed process.
const staleAge = time.Hour

// removeStale removes the temporary files matching pattern in dir that
// were last written more than staleAge ago: those of a process killed
// while downloading. A running download writes more often than that.
func removeStale(dir, pattern string) {
	names, _ := filepath.Glob(filepath.Join(dir, pattern))
	for _, name := range names {
		if fi, err := os.Lstat(name); err == nil && fi.Mode().IsRegular() && time.Since(fi.ModTime()) > staleAge {
			os.Remove(name)
		}
	}
}

// syncDir flushes a folder's entries to disk, so that a rename into it
// survives a crash. Errors are ignored: not every file system supports it.
func syncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
}

// watchedReader resets a stall watchdog whenever bytes arrive.
type watchedReader struct {
	r        io.Reader
	watchdog *time.Timer
}

func (w *watchedReader) Read(p []byte) (int, error) {
	n, err := w.r.Read(p)
	if n > 0 {
		w.watchdog.Reset(stallTimeout)
	}
	return n, err
}

// progress counts the bytes written to it and, from progressInterval after
// it starts, prints a line about every progressInterval to w.
type progress struct {
	w       io.Writer
	name    string
	total   int64 // ≤ 0 = unknown
	start   time.Time
	n       atomic.Int64
	done    chan struct{}
	wg      sync.WaitGroup
	printed bool // written by the printing goroutine, read after it ended
}

func startProgress(w io.Writer, name string, total int64) *progress {
	p := &progress{w: w, name: name, total: total, start: time.Now(), done: make(chan struct{})}
	if w == io.Discard {
		return p
	}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		t := time.NewTicker(progressInterval)
		defer t.Stop()
		for {
			select {
			case <-p.done:
				return
			case <-t.C:
				p.line()
				p.printed = true
			}
		}
	}()
	return p
}

func (p *progress) Write(b []byte) (int, error) {
	p.n.Add(int64(len(b)))
	return len(b), nil
}

// line prints the state of the download.
func (p *progress) line() {
	n := p.n.Load()
	elapsed := time.Since(p.start)
	rate := float64(n) / elapsed.Seconds()
	msg := "convexnn: downloading " + p.name + ": " + byteSize(n)
	if p.total > 0 {
		msg += fmt.Sprintf(" / %s (%.0f%%)", byteSize(p.total), 100*float64(n)/float64(p.total))
	}
	msg += ", " + byteSize(int64(rate)) + "/s"
	if p.total > n && rate > 0 {
		left := time.Duration(float64(p.total-n) / rate * float64(time.Second))
		msg += ", " + left.Round(time.Second).String() + " left"
	}
	fmt.Fprintln(p.w, msg)
}

// stop ends the printing and, when progress was shown, reports the end of
// a successful download.
func (p *progress) stop(ok bool) {
	close(p.done)
	p.wg.Wait()
	if p.printed && ok {
		n := p.n.Load()
		elapsed := time.Since(p.start)
		fmt.Fprintf(p.w, "convexnn: downloaded %s: %s in %s\n", p.name, byteSize(n), elapsed.Round(100*time.Millisecond))
	}
}

// byteSize formats n bytes with an SI unit.
func byteSize(n int64) string {
	const unit = 1000
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	v, i := float64(n)/unit, 0
	for v >= unit && i < 3 {
		v /= unit
		i++
	}
	return fmt.Sprintf("%.1f %cB", v, "kMGT"[i])
}

// ctxReader fails reads once its context is done.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, context.Cause(c.ctx)
	}
	return c.r.Read(p)
}

// extractCIFAR extracts the record files cifarBatches from the CIFAR-10
// archive into dir. All of them are written to temporary files first, each
// checked to be cifarBatchBytes long, and renamed into place only when all
// are there, so an error leaves none of them behind.
func extractCIFAR(ctx context.Context, archive, dir string) (err error) {
	r, err := os.Open(archive)
	if err != nil {
		return fmt.Errorf("data: %w", err)
	}
	defer r.Close()
	gz, err := gzip.NewReader(ctxReader{ctx, r})
	if err != nil {
		return fmt.Errorf("data: reading %s: %w", archive, err)
	}
	defer gz.Close()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("data: creating the cache folder: %w", err)
	}

	want := make(map[string]bool, len(cifarBatches))
	for _, name := range cifarBatches {
		want[path.Join(cifarBatchDir, name)] = true
	}
	tmps := make(map[string]*os.File, len(cifarBatches)) // by member name
	defer func() {
		if err != nil {
			for _, t := range tmps {
				t.Close()
				os.Remove(t.Name())
			}
		}
	}()

	tr := tar.NewReader(gz)
	for len(tmps) < len(want) {
		hdr, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			if ctx.Err() != nil {
				return fmt.Errorf("data: extracting %s: %w", archive, context.Cause(ctx))
			}
			return fmt.Errorf("data: reading %s: %w", archive, err)
		}
		name := path.Clean(hdr.Name)
		if !want[name] || tmps[name] != nil || hdr.Typeflag != tar.TypeReg {
			continue
		}
		if hdr.Size != cifarBatchBytes {
			return fmt.Errorf("data: %s in %s has %d bytes, want %d", name, archive, hdr.Size, cifarBatchBytes)
		}
		removeStale(dir, "."+path.Base(name)+".*.part")
		t, err := os.CreateTemp(dir, "."+path.Base(name)+".*.part")
		if err != nil {
			return fmt.Errorf("data: %w", err)
		}
		tmps[name] = t
		n, err := io.Copy(t, tr)
		if err != nil {
			if ctx.Err() != nil {
				err = context.Cause(ctx)
			}
			return fmt.Errorf("data: extracting %s from %s: %w", name, archive, err)
		}
		if n != cifarBatchBytes {
			return fmt.Errorf("data: extracting %s from %s: %d bytes, want %d", name, archive, n, cifarBatchBytes)
		}
		if err := t.Sync(); err != nil {
			return fmt.Errorf("data: writing %s: %w", t.Name(), err)
		}
	}
	var lack []string
	for _, name := range cifarBatches {
		if tmps[path.Join(cifarBatchDir, name)] == nil {
			lack = append(lack, path.Join(cifarBatchDir, name))
		}
	}
	if len(lack) > 0 {
		return fmt.Errorf("data: %s lacks %s: it is not the CIFAR-10 binary archive", archive, strings.Join(lack, ", "))
	}
	for _, name := range cifarBatches {
		t := tmps[path.Join(cifarBatchDir, name)]
		if err := t.Close(); err != nil {
			return fmt.Errorf("data: writing %s: %w", t.Name(), err)
		}
		if err := os.Chmod(t.Name(), 0o644); err != nil {
			return fmt.Errorf("data: %w", err)
		}
	}
	for _, name := range cifarBatches {
		t := tmps[path.Join(cifarBatchDir, name)]
		if err := os.Rename(t.Name(), filepath.Join(dir, name)); err != nil {
			return fmt.Errorf("data: %w", err)
		}
		delete(tmps, path.Join(cifarBatchDir, name))
	}
	syncDir(dir)
	return nil
}
