package main

import (
	"bytes"
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
)

func TestBenchCVXOPTBadInput(t *testing.T) {
	for _, args := range [][]string{
		{"-runs", "0"},
		{"-size", "huge"},
		{"-loss", "bce"},
		{"-beta", "-1"},
		{"-target", "2"},
		{"-n", "-5"},
		{"-relax", "2"},
		{"-relax", "0"},
		{"-nosuchflag"},
		{"extra"},
	} {
		err := benchCVXOPT(context.Background(), args, &bytes.Buffer{})
		var ue usageError
		if !errors.As(err, &ue) {
			t.Errorf("%q: error %v, want a usage error", args, err)
		}
	}
}

// TestBenchTorchBadInput checks that bad command lines are usage errors,
// found before any training (no data or torch needed).
func TestBenchTorchBadInput(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"-size", "huge"}, "-size"},
		{[]string{"-lrs", "1e-3,x"}, "not a number"},
		{[]string{"-lrs", "0"}, "positive"},
		{[]string{"-seconds", "0"}, "-seconds"},
		{[]string{"-epochs", "-1"}, "-epochs"},
		{[]string{"-dtype", "float16"}, "-dtype"},
		{[]string{"-threads", "0"}, "-threads"},
		{[]string{"table4-bce"}, "squared-loss"},
		{[]string{"table2-mnist", "-size", "small"}, "put flags first"},
		{[]string{"-script", filepath.Join(t.TempDir(), "none.py")}, "-script"},
		{[]string{"-bogus"}, "bogus"},
	} {
		err := benchTorch(context.Background(), c.args, &bytes.Buffer{})
		if !errors.As(err, new(usageError)) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("bench torch %v: %v, want a usage error with %q", c.args, err, c.want)
		}
	}
}

// TestBenchAccuracyBadInput checks that bad command lines are usage errors
// naming the problem, found before anything runs.
func TestBenchAccuracyBadInput(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"-targets", "0"}, "0 < gap < 1"},
		{[]string{"-targets", "NaN"}, "0 < gap < 1"},
		{[]string{"-targets", "1e-4,x"}, "-targets"},
		{[]string{"-targets", "1e-6,1e-4"}, "loosest first"},
		{[]string{"-seconds", "-1"}, "time caps"},
		{[]string{"-size", "notebook"}, "-size"},
		{[]string{"-solvers", "ipm,gurobi"}, "unknown solver"},
		{[]string{"nosuchfamily"}, "unknown instance family"},
		{[]string{"mid-squared", "-seconds", "3"}, "put flags first"},
		{[]string{"-bogus"}, "bogus"},
	} {
		err := benchAccuracy(context.Background(), c.args, &bytes.Buffer{})
		if !errors.As(err, new(usageError)) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("bench accuracy %v: %v, want a usage error with %q", c.args, err, c.want)
		}
	}
}
