package data

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
)

// mammographicColumns names the fields of the UCI mammographic masses file.
var mammographicColumns = []string{"BI-RADS", "Age", "Shape", "Margin", "Density", "Severity"}

// maxMammographicLine is the longest line ReadMammographic accepts, in bytes.
const maxMammographicLine = 64 << 10

// ReadMammographic reads the UCI "Mammographic Mass" data set
// (mammographic_masses.data): one row per line, no header, six
// comma-separated numeric fields, BI-RADS, Age, Shape, Margin, Density and
// Severity (0 benign, 1 malignant). A "?" field is a missing value and
// becomes NaN. Lines may end in LF or CRLF; blank lines are allowed at the
// end only.
//
// Values are kept as they are (the original file has out-of-range BI-RADS
// values 0, 6 and 55), except Severity, the label: it must be present and 0
// or 1. Errors name the line and the field.
//
// The result's Columns are BI-RADS, Age, Shape, Margin, Density, Severity,
// and every row has these six values.
func ReadMammographic(r io.Reader) (*Table, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), maxMammographicLine)
	t := &Table{Columns: slices.Clone(mammographicColumns)}
	line, blank := 0, 0
	for sc.Scan() {
		line++
		text := sc.Text() // without the LF or CRLF
		if line == 1 {
			text = strings.TrimPrefix(text, "\ufeff") // a UTF-8 byte order mark
		}
		if strings.TrimSpace(text) == "" {
			if blank == 0 {
				blank = line
			}
			continue
		}
		if blank != 0 {
			return nil, fmt.Errorf("data: mammographic: line %d: blank line before more data (line %d)", blank, line)
		}
		row, field, err := parseMammographicRow(text)
		if err != nil && !sc.Scan() && sc.Err() != nil {
			line-- // a read error cut the line short: reported below
			break
		}
		switch {
		case err != nil && field != "":
			return nil, fmt.Errorf("data: mammographic: line %d, field %s: %w", line, field, err)
		case err != nil:
			return nil, fmt.Errorf("data: mammographic: line %d: %w", line, err)
		}
		t.Rows = append(t.Rows, row)
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return nil, fmt.Errorf("data: mammographic: line %d: longer than %d bytes", line+1, maxMammographicLine)
		}
		return nil, fmt.Errorf("data: mammographic: after line %d: %w", line, err)
	}
	if len(t.Rows) == 0 {
		return nil, errors.New("data: mammographic: no rows")
	}
	return t, nil
}

// parseMammographicRow parses one non-blank line. On error it also returns
// the name of the field at fault, or "" when the error is about the line.
func parseMammographicRow(text string) (row []float64, field string, err error) {
	nf := len(mammographicColumns)
	if n := strings.Count(text, ",") + 1; n != nf {
		return nil, "", fmt.Errorf("%d fields, want %d", n, nf)
	}
	row = make([]float64, nf)
	rest := text
	for j := range row {
		f, tail, _ := strings.Cut(rest, ",")
		rest = tail
		f = strings.TrimSpace(f)
		name := mammographicColumns[j]
		switch f {
		case "?":
			row[j] = math.NaN()
			continue
		case "":
			return nil, name, errors.New("empty (a missing value is written ?)")
		}
		v, err := strconv.ParseFloat(f, 64)
		if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
			return nil, name, fmt.Errorf("%q is not a number", f)
		}
		row[j] = v
	}
	severity := mammographicColumns[nf-1]
	switch s := row[nf-1]; {
	case math.IsNaN(s):
		return nil, severity, errors.New("missing (the label must be present)")
	case s != 0 && s != 1:
		return nil, severity, fmt.Errorf("%v, want 0 or 1", s)
	}
	return row, "", nil
}
