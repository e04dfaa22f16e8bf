package cvx

import (
	"bytes"
	"encoding/binary"
	"encoding/gob"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/convexnn/convexnn/internal/atomicfile"
	"github.com/convexnn/convexnn/internal/floatbits"
)

// StateVersion is the version of the run-state file format this build reads
// and writes. A state written by another version is refused, never misread.
// Version 1 was JSON (name.json); version 2 is binary (name.state), read
// in milliseconds where the JSON of a Table 2 run took half a second.
const StateVersion = 2

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

// statePath is the file of run name with extension ext (".state" for a run,
// ".json" for a path).
func (d RunDir) statePath(name, ext string) (string, error) {
	if !validName.MatchString(name) {
		return "", fmt.Errorf("cvx: run name %q: use 1-128 letters, digits, '.', '_' or '-', starting with a letter or digit", name)
	}
	if d == "" {
		return "", errors.New("cvx: RunDir is empty: name a directory")
	}
	return filepath.Join(string(d), name+ext), nil
}

// stateFile is a run on disk: the line "convexnn-run-state v2", then the
// gob encoding of this struct, then the CRC-32C (little-endian) of all the
// bytes before it, which catches torn and corrupted files before decoding.
type stateFile struct {
	Name string
	// Method and Fingerprint identify the method with its options and the
	// problem (data, loss, β, patterns or neurons): Resume refuses a file
	// whose pair differs from its own.
	Method      string
	Fingerprint string
	Problem     Summary
	Saved       time.Time
	// Elapsed is the seconds of iterations over all the run's sessions.
	Elapsed float64
	History []Point
	// Solver is the gob encoding of the method's own iteration state
	// (admm.State, scp.FISTAState, backprop.State), from which it continues
	// exactly.
	Solver []byte
}

// writeAtomic writes data to path whole or not at all (atomicfile).
func writeAtomic(path string, data []byte) error {
	if err := atomicfile.WriteBytes(path, 0o644, data); err != nil {
		return fmt.Errorf("cvx: saving state: %w", err)
	}
	return nil
}

// stateMagic starts every run-state file; the version follows it.
const stateMagic = stateFormat + " v"

func saveState(path string, s *stateFile) error {
	s.Saved = time.Now().UTC()
	var b bytes.Buffer
	fmt.Fprintf(&b, "%s%d\n", stateMagic, StateVersion)
	if err := gob.NewEncoder(&b).Encode(s); err != nil {
		return fmt.Errorf("cvx: encoding state: %w", err)
	}
	b.Write(binary.LittleEndian.AppendUint32(nil, floatbits.CRC32C(0, b.Bytes())))
	return writeAtomic(path, b.Bytes())
}

// encodeSolver is the gob encoding of a solver's state.
func encodeSolver(st any) ([]byte, error) {
	var b bytes.Buffer
	if err := gob.NewEncoder(&b).Encode(st); err != nil {
		return nil, fmt.Errorf("cvx: encoding the solver's state: %w", err)
	}
	return b.Bytes(), nil
}

// errNoState reports that no saved run exists.
var errNoState = errors.New("no saved state")

func loadState(path string) (*stateFile, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		// A run saved by a build that wrote format v1 (JSON) is refused
		// by name rather than silently started afresh.
		old := strings.TrimSuffix(path, filepath.Ext(path)) + ".json"
		if raw, err := os.ReadFile(old); err == nil && bytes.Contains(raw[:min(len(raw), 200)], []byte(`"format":"`+stateFormat+`"`)) {
			return nil, fmt.Errorf("cvx: %s was written by run-state format v1; this build of convexnn reads v%d. Start the run afresh with cvx.Start (or delete the file), or use the convexnn version that wrote it", old, StateVersion)
		}
		return nil, errNoState
	}
	if err != nil {
		return nil, fmt.Errorf("cvx: reading saved run: %w", err)
	}
	notState := fmt.Errorf("cvx: %s is not a convexnn run state (corrupt or foreign file): delete it or choose another run name", path)
	line, body, ok := bytes.Cut(data, []byte("\n"))
	if !ok || !bytes.HasPrefix(line, []byte(stateMagic)) {
		return nil, notState
	}
	version, err := strconv.Atoi(string(line[len(stateMagic):]))
	if err != nil {
		return nil, notState
	}
	if version != StateVersion {
		return nil, fmt.Errorf("cvx: %s was written by run-state format v%d; this build of convexnn reads v%d. Start the run afresh with cvx.Start (or delete the file), or use the convexnn version that wrote it", path, version, StateVersion)
	}
	corrupt := func(why string) error {
		return fmt.Errorf("cvx: %s is corrupt (%s): delete it or start afresh with cvx.Start", path, why)
	}
	if len(body) < 4 {
		return nil, corrupt("truncated")
	}
	n := len(data) - 4
	if floatbits.CRC32C(0, data[:n]) != binary.LittleEndian.Uint32(data[n:]) {
		return nil, corrupt("checksum mismatch: torn or damaged")
	}
	var s stateFile
	if err := gob.NewDecoder(bytes.NewReader(body[:len(body)-4])).Decode(&s); err != nil {
		return nil, corrupt(err.Error())
	}
	return &s, nil
}
