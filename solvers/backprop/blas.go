package backprop

import "gonum.org/v1/gonum/blas/blas64"

func vec(x []float64) blas64.Vector { return blas64.Vector{N: len(x), Inc: 1, Data: x} }
