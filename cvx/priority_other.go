//go:build !unix

package cvx

// yieldToFrontEnd does nothing where there is no nice value.
func yieldToFrontEnd() {}
