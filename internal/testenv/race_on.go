//go:build race

package testenv

// Race reports a -race build: the slowest numerical checks (the
// robust ADMM driven to 1e-9 over many instances) then run on one instance;
// `make test` runs them all again without the race detector.
const Race = true
