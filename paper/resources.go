package paper

import (
	"runtime"
	"sync"
	"syscall"
	"time"
)

// heapSampler records the largest Go heap in use while it runs.
type heapSampler struct {
	mu   sync.Mutex
	peak uint64
	stop chan struct{}
	done chan struct{}
}

func startHeapSampler() *heapSampler {
	// Twice: objects in sync.Pool victim caches (the data loaders'
	// buffers) survive one collection.
	runtime.GC()
	runtime.GC()
	h := &heapSampler{stop: make(chan struct{}), done: make(chan struct{})}
	h.sample()
	go func() {
		defer close(h.done)
		t := time.NewTicker(20 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-h.stop:
				return
			case <-t.C:
				h.sample()
			}
		}
	}()
	return h
}

func (h *heapSampler) sample() {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	h.mu.Lock()
	h.peak = max(h.peak, ms.HeapAlloc)
	h.mu.Unlock()
}

func (h *heapSampler) finish() uint64 {
	close(h.stop)
	<-h.done
	h.sample()
	return h.peak
}

// maxRSS returns the process's peak resident set size in bytes.
func maxRSS() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return int64(ru.Maxrss) * 1024 // kilobytes on Linux
}
