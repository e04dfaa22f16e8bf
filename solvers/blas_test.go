//go:build !openblas

package solvers

import "testing"

// TestBLASIsGonum: without -tags openblas, gonum's pure-Go BLAS is in use
// and BLAS says so.
func TestBLASIsGonum(t *testing.T) {
	if got := BLAS(); got != GonumBLAS {
		t.Fatalf("BLAS() = %q, want %q", got, GonumBLAS)
	}
}
