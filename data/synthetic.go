package data

import (
	"fmt"
	"math"
	"math/rand/v2"

	"gonum.org/v1/gonum/mat"
)

// Disk2D returns n points drawn uniformly from the square [-1, 1]² with labels
// y_k = +1 when x_k lies inside the disk of radius 0.65 centred at the origin
// and -1 outside: a set no linear classifier separates and a two-layer ReLU
// network does. The same seed gives the same set.
func Disk2D(n int, seed uint64) (*mat.Dense, []float64, error) {
	if n < 2 {
		return nil, nil, fmt.Errorf("data: Disk2D needs n ≥ 2 points, got %d", n)
	}
	const radius = 0.65
	rng := rand.New(rand.NewPCG(seed, 0x2d15c))
	x := mat.NewDense(n, 2, nil)
	y := make([]float64, n)
	for k := 0; k < n; k++ {
		a, b := 2*rng.Float64()-1, 2*rng.Float64()-1
		x.Set(k, 0, a)
		x.Set(k, 1, b)
		if math.Hypot(a, b) <= radius {
			y[k] = 1
		} else {
			y[k] = -1
		}
	}
	return x, y, nil
}
