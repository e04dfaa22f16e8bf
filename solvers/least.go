package solvers

import (
	"cmp"
	"slices"
)

// Least returns the k entries of idx with the least key[idx[·]] (ties by
// index), in increasing key; all of idx, in that order, when it has at
// most k. It reorders idx. The row working sets of the interior-point
// methods and their certificates choose their rows by it: a partial
// selection, O(len(idx)) on average, then a sort of the k chosen.
func Least(idx []int, key []float64, k int) []int {
	less := func(a, b int) int {
		if c := cmp.Compare(key[a], key[b]); c != 0 {
			return c
		}
		return a - b
	}
	if k <= 0 {
		return idx[:0]
	}
	if len(idx) > k {
		// Quickselect: idx[:k] holds the k least.
		lo, hi := 0, len(idx)-1
		for lo < hi {
			p := idx[lo+(hi-lo)/2]
			i, j := lo, hi
			for i <= j {
				for less(idx[i], p) < 0 {
					i++
				}
				for less(idx[j], p) > 0 {
					j--
				}
				if i <= j {
					idx[i], idx[j] = idx[j], idx[i]
					i++
					j--
				}
			}
			switch {
			case k-1 <= j:
				hi = j
			case k-1 >= i:
				lo = i
			default:
				lo = hi
			}
		}
		idx = idx[:k]
	}
	slices.SortFunc(idx, less)
	return idx
}
