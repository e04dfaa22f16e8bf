//go:build !race

package testenv

// Race reports a -race build (see race_on_test.go).
const Race = false
