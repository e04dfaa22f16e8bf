package backprop

import (
	"math"
	"testing"
)

// step is the ReLU's slope: 1 exactly for v > 0, signed zeros and subnormals included.
func TestStep(t *testing.T) {
	for _, v := range []float64{0, math.Copysign(0, -1), 1e-320, -1e-320, 1, -1, math.Inf(1), math.Inf(-1), math.MaxFloat64, -math.MaxFloat64, 0.5} {
		want := 0.0
		if v > 0 {
			want = 1
		}
		if got := step(v); got != want {
			t.Errorf("step(%v) = %v", v, got)
		}
	}
}
