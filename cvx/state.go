package cvx

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"time"
)

// StateVersion is the version of the run-state file format this build reads
// and writes. A state written by another version is refused, never misread.
const StateVersion = 1

const stateFormat = "convexnn-run-state"

// StateDir returns the directory that Start and Resume keep runs in:
// $CONVEXNN_STATE_DIR when set, otherwise ".convexnn" in the notebook's
// directory ($GONB_DIR, set by GoNB) or, outside a notebook, in the working
// directory. A program that wants another one uses RunDir.
func StateDir() string {
	if d := os.Getenv("CONVEXNN_STATE_DIR"); d != "" {
		return d
	}
	base := os.Getenv("GONB_DIR")
	if base == "" {
		base, _ = os.Getwd()
	}
	return filepath.Join(base, ".convexnn")
}

var validName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$`)

// RunDir is a directory of saved runs: RunDir(dir).Start and .Resume keep
// their runs there instead of in StateDir.
type RunDir string

// Start is the package's Start with the run kept in d.
func (d RunDir) Start(name string, p *Problem, m Method) *Run { return open(d, name, p, m, false) }

// Resume is the package's Resume with the run kept in d.
func (d RunDir) Resume(name string, p *Problem, m Method) *Run { return open(d, name, p, m, true) }

func (d RunDir) statePath(name string) (string, error) {
	if !validName.MatchString(name) {
		return "", fmt.Errorf("cvx: run name %q: use 1-128 letters, digits, '.', '_' or '-', starting with a letter or digit", name)
	}
	if d == "" {
		return "", errors.New("cvx: RunDir is empty: name a directory")
	}
	return filepath.Join(string(d), name+".json"), nil
}

// stateFile is the on-disk form of a run.
type stateFile struct {
	Format  string `json:"format"`
	Version int    `json:"version"`
	Name    string `json:"name"`
	// Method and Fingerprint identify the method with its options and the
	// problem (data, loss, β, patterns or neurons): Resume refuses a file
	// whose pair differs from its own.
	Method      string    `json:"method"`
	Fingerprint string    `json:"fingerprint"`
	Problem     Summary   `json:"problem"`
	Saved       time.Time `json:"saved"`
	// Elapsed is the seconds of iterations over all the run's sessions.
	Elapsed float64 `json:"elapsed_seconds"`
	History []Point `json:"history"`
	// Solver is the method's own iteration state (admm.State,
	// scp.FISTAState, backprop.State), from which it continues exactly.
	Solver json.RawMessage `json:"solver"`
}

// writeAtomic writes data to path through a temporary file in the same
// directory, synced and renamed over path, so a reader sees the old or the
// new file, never a torn one.
func writeAtomic(path string, data []byte) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("cvx: creating state directory: %w", err)
	}
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("cvx: saving state: %w", err)
	}
	tmp := f.Name()
	_, werr := f.Write(data)
	if werr == nil {
		werr = f.Sync()
	}
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = os.Rename(tmp, path)
	}
	if werr != nil {
		os.Remove(tmp)
		return fmt.Errorf("cvx: saving state to %s: %w", path, werr)
	}
	return nil
}

func saveState(path string, s *stateFile) error {
	s.Format, s.Version, s.Saved = stateFormat, StateVersion, time.Now().UTC()
	data, err := json.Marshal(s)
	if err != nil {
		return fmt.Errorf("cvx: encoding state: %w", err)
	}
	return writeAtomic(path, data)
}

// errNoState reports that no saved run exists.
var errNoState = errors.New("no saved state")

func loadState(path string) (*stateFile, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, errNoState
	}
	if err != nil {
		return nil, fmt.Errorf("cvx: reading saved run: %w", err)
	}
	var head struct {
		Format  string `json:"format"`
		Version int    `json:"version"`
	}
	if err := json.Unmarshal(data, &head); err != nil || head.Format != stateFormat {
		return nil, fmt.Errorf("cvx: %s is not a convexnn run state (corrupt or foreign file): delete it or choose another run name", path)
	}
	if head.Version != StateVersion {
		return nil, fmt.Errorf("cvx: %s was written by run-state format v%d; this build of convexnn reads v%d. Start the run afresh with cvx.Start (or delete the file), or use the convexnn version that wrote it", path, head.Version, StateVersion)
	}
	var s stateFile
	if err := json.Unmarshal(data, &s); err != nil {
		return nil, fmt.Errorf("cvx: %s is corrupt (%v): delete it or start afresh with cvx.Start", path, err)
	}
	return &s, nil
}
