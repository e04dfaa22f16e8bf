package cvx

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

// TestProgressOutsideNotebookIsThrottled: outside a notebook, Progress
// writes status lines to stderr, at most one per MinInterval, and Done
// always writes the final line.
func TestProgressOutsideNotebookIsThrottled(t *testing.T) {
	var buf bytes.Buffer
	old := stderr
	stderr = &buf
	defer func() { stderr = old }()
	p := NewProgress("test")
	p.MinInterval = 50 * time.Millisecond
	p.MaxShare = 1
	calls := 0
	start := time.Now()
	for time.Since(start) < 220*time.Millisecond {
		p.Update("working", nil)
		calls++
	}
	p.Done("finished", nil)
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) < 3 || len(lines) > 7 {
		t.Fatalf("%d Update calls in 220 ms wrote %d lines, want about 5:\n%s", calls, len(lines), buf.String())
	}
	if lines[len(lines)-1] != "test: finished" {
		t.Fatalf("last line %q", lines[len(lines)-1])
	}
}
