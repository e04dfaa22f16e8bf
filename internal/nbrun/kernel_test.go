package nbrun

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestHeadlessKernelLeavesOutGopls checks the headless copy of a kernel
// spec: the repository's bin folder (gonb, goimports, gopls) is replaced on
// PATH by a folder with goimports alone, everything else is kept.
func TestHeadlessKernelLeavesOutGopls(t *testing.T) {
	repo := t.TempDir()
	bin := filepath.Join(repo, "bin")
	if err := os.MkdirAll(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tool := range []string{"gonb", "goimports", "gopls"} {
		if err := os.WriteFile(filepath.Join(bin, tool), []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	spec := filepath.Join(repo, "kernel.json")
	in := map[string]any{
		"argv":         []any{filepath.Join(bin, "gonb"), "--kernel", "{connection_file}"},
		"display_name": "Go (convexnn)",
		"env":          map[string]any{"PATH": bin + ":/usr/local/go/bin:/usr/bin", "GOFLAGS": "-ldflags=-w"},
	}
	raw, _ := json.Marshal(in)
	if err := os.WriteFile(spec, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "k")
	jp, err := headlessKernel(spec, repo, dir)
	if err != nil {
		t.Fatal(err)
	}
	raw, err = os.ReadFile(filepath.Join(jp, "kernels", "convexnn", "kernel.json"))
	if err != nil {
		t.Fatal(err)
	}
	var out struct {
		Argv []string          `json:"argv"`
		Name string            `json:"display_name"`
		Env  map[string]string `json:"env"`
	}
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatal(err)
	}
	path := filepath.SplitList(out.Env["PATH"])
	if len(path) != 3 || path[1] != "/usr/local/go/bin" || path[2] != "/usr/bin" || strings.HasPrefix(path[0], bin) {
		t.Fatalf("PATH %q: want the bin folder replaced and the rest kept", out.Env["PATH"])
	}
	if _, err := os.Stat(filepath.Join(path[0], "goimports")); err != nil {
		t.Errorf("goimports is not on the headless PATH: %v", err)
	}
	if _, err := os.Stat(filepath.Join(path[0], "gopls")); err == nil {
		t.Error("gopls is on the headless PATH")
	}
	if out.Argv[0] != filepath.Join(bin, "gonb") || out.Name != "Go (convexnn)" || out.Env["GOFLAGS"] != "-ldflags=-w" {
		t.Errorf("the rest of the spec changed: %s", raw)
	}
	// Again into the same folder (a notebook run twice): no error.
	if _, err := headlessKernel(spec, repo, dir); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(spec, []byte("{"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := headlessKernel(spec, repo, dir); err == nil || !strings.Contains(err.Error(), "kernel.json") {
		t.Errorf("a corrupt spec: error %v, want one naming the file", err)
	}
}
