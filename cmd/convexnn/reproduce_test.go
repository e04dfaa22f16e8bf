package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"strings"
	"testing"
)

// TestReproduceUsageErrors checks that bad command lines are usage errors
// (exit code 2) that say what is wrong, before any work is done.
func TestReproduceUsageErrors(t *testing.T) {
	out := t.TempDir()
	cases := []struct {
		args []string
		want string
	}{
		{nil, "name the experiments"},
		{[]string{"table9-imagenet"}, `unknown experiment "table9-imagenet"`},
		{[]string{"table2-mnist", "nosuch"}, `unknown experiment "nosuch"`},
		{[]string{"-size", "huge", "table2-mnist"}, `-size "huge"`},
		{[]string{"-runs", "0", "table2-mnist"}, "-runs 0"},
		{[]string{"-runs", "x", "table2-mnist"}, "invalid value"},
		{[]string{"-bogus", "table2-mnist"}, "-bogus"},
		{[]string{"table2-mnist", "-size", "small"}, "put flags first"},
	}
	for _, c := range cases {
		var stdout bytes.Buffer
		err := reproduceCommand(context.Background(), append([]string{"-out", out}, c.args...), &stdout)
		var ue usageError
		if err == nil || !errors.As(err, &ue) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("reproduce %v: %v, want a usage error containing %q", c.args, err, c.want)
		}
		if stdout.Len() != 0 {
			t.Errorf("reproduce %v printed %q before failing", c.args, stdout.String())
		}
	}
	if ents, _ := os.ReadDir(out); len(ents) != 0 {
		t.Errorf("usage errors wrote %d entries into -out", len(ents))
	}
}
