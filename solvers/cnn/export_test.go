package cnn

// RobustBound exposes robustForm.bound to the tests: the certified lower
// bound of p's robust program at radius eps from the multipliers z (any z),
// and the number of rows z must have.
func RobustBound(p *Problem, eps float64, z []float64) (float64, int, error) {
	fm, err := newRobustForm(p, eps, 0, false)
	if err != nil {
		return 0, 0, err
	}
	rows, _ := fm.g.Dims()
	if z == nil {
		return 0, rows, nil
	}
	return fm.bound(z), rows, nil
}

// RobustEpigraphs returns the number of shared epigraph variables of the
// |g_mq| in p's robust program (gradKeys).
func RobustEpigraphs(p *Problem, eps float64) int {
	fm := p.layout(eps)
	fm.placeEpigraphs()
	return len(fm.erep)
}

// RobustSize returns the rows and variables of p's robust program at radius
// eps and the bytes its interior-point method would hold, without building
// it.
func RobustSize(p *Problem, eps float64) (rows, vars int, bytes float64) {
	fm := p.layout(eps)
	fm.placeEpigraphs()
	return fm.rows(0), fm.nx, robustIPMBytes(fm.rows(0), fm.nx)
}
