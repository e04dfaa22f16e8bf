package cvx

import "gonum.org/v1/gonum/mat"

func mat2(x *mat.Dense) *mat.Dense { return mat.DenseCopyOf(x) }
