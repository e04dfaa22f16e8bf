// Package repo finds the convexnn checkout a command or test runs in. It
// imports nothing of the project, so every package may use it.
package repo

import (
	"errors"
	"os"
	"path/filepath"
)

// Root returns the convexnn checkout that holds the working directory: the
// first directory upwards with go.mod and notebooks/.
func Root() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			if _, err := os.Stat(filepath.Join(dir, "notebooks")); err == nil {
				return dir, nil
			}
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("run this inside the convexnn repository (no go.mod with notebooks/ above the working directory)")
		}
		dir = parent
	}
}
