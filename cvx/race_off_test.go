//go:build !race

package cvx

// raceDetector reports a -race build (see race_on_test.go).
const raceDetector = false
