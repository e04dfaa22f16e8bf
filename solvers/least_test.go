package solvers

import (
	"cmp"
	"math/rand/v2"
	"slices"
	"testing"
)

// Least picks what a full sort by (key, index) puts first, on random keys
// with many ties and every k from 0 to beyond the length.
func TestLeast(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for trial := range 300 {
		n := rng.IntN(60)
		key := make([]float64, n+5)
		for i := range key {
			key[i] = float64(rng.IntN(1 + trial%7)) // ties
		}
		idx := rng.Perm(n + 5)[:n]
		want := slices.Clone(idx)
		slices.SortFunc(want, func(a, b int) int {
			if c := cmp.Compare(key[a], key[b]); c != 0 {
				return c
			}
			return a - b
		})
		for k := 0; k <= n+2; k++ {
			got := Least(slices.Clone(idx), key, k)
			if w := want[:min(k, n)]; !slices.Equal(got, w) {
				t.Fatalf("trial %d, k %d of %d: got %v, want %v", trial, k, n, got, w)
			}
		}
	}
}
