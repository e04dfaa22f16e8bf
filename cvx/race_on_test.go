//go:build race

package cvx

// raceDetector reports a -race build: the slowest numerical checks then run
// a subset; `make test` runs them all again without the race detector.
const raceDetector = true
