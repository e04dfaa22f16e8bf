package data

import (
	"bytes"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"

	"gonum.org/v1/gonum/mat"
)

// Column picks one column of a table: by its header name or by its
// zero-based position (negative positions count from the end: −1 is the
// last column). The zero Column is the last column.
type Column struct {
	name  string
	index int
	named bool
}

// ColumnNamed picks the column whose header is name.
func ColumnNamed(name string) Column { return Column{name: name, named: true} }

// ColumnAt picks the column at zero-based position i (−1: the last).
func ColumnAt(i int) Column {
	if i >= 0 {
		// Stored shifted by one so that the zero Column means "the last".
		return Column{index: i + 1}
	}
	return Column{index: i}
}

// ParseColumn reads a column as a user writes it on a command line: a name
// that is a header wins; otherwise an integer is a position (0 the first,
// −1 the last); the empty string is the last column.
func ParseColumn(s string) Column {
	if strings.TrimSpace(s) == "" {
		return Column{}
	}
	c := ColumnNamed(s)
	if i, err := strconv.Atoi(strings.TrimSpace(s)); err == nil {
		c.index = ColumnAt(i).index
	}
	return c
}

// String returns the column as ParseColumn reads it.
func (c Column) String() string {
	switch {
	case c.named:
		return c.name
	case c.index == 0:
		return "-1"
	case c.index > 0:
		return strconv.Itoa(c.index - 1)
	}
	return strconv.Itoa(c.index)
}

// resolve returns the column's position among the given headers.
func (c Column) resolve(header []string) (int, error) {
	if c.named {
		for j, h := range header {
			if h == c.name {
				return j, nil
			}
		}
		if c.index == 0 {
			return 0, fmt.Errorf("no column named %q (columns: %s)", c.name, shortList(header))
		}
	}
	j := c.index - 1
	switch {
	case c.index == 0:
		j = len(header) - 1
	case c.index < 0:
		j = len(header) + c.index
	}
	if j < 0 || j >= len(header) {
		return 0, fmt.Errorf("column %s is outside the %d columns", c, len(header))
	}
	return j, nil
}

func shortList(s []string) string {
	if len(s) > 12 {
		return strings.Join(s[:12], ", ") + fmt.Sprintf(", … (%d in all)", len(s))
	}
	return strings.Join(s, ", ")
}

// CSV says how ReadCSV reads a delimited text file.
type CSV struct {
	// Delimiter separates the cells (',' when zero; '\t' for TSV).
	Delimiter rune
	// NoHeader says the first row is data; the columns are then named by
	// their positions "0", "1", ….
	NoHeader bool
	// Label is the label column (the last column when zero).
	Label Column
	// Unlabelled says every column is a feature (data to predict on): the
	// Set has no labels.
	Unlabelled bool
}

// missingCells are the spellings of a missing feature value that ReadCSV
// refuses by name (rather than as a non-numeric cell); a label is missing
// only when empty or NaN (other spellings may be class names).
var missingCells = map[string]bool{"": true, "?": true, "na": true, "n/a": true, "nan": true, "null": true, "none": true, "-": true}

// ReadCSV reads a table of numeric features and one label column from a
// delimited text file (RFC 4180 quoting). Labels may be of any type: they
// become classes (see ClassLabels) with the mapping kept in Set.Classes.
// A missing or non-numeric feature cell, a ragged row, or a file without
// data rows is an error that names the file, the line and the column.
func ReadCSV(path string, opt CSV) (*Set, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("data: %w", err)
	}
	s, err := ParseCSV(raw, opt)
	if err != nil {
		return nil, fmt.Errorf("data: %s: %w", path, err)
	}
	s.Name = strings.TrimSuffix(baseName(path), ".csv")
	return s, nil
}

func baseName(p string) string {
	if i := strings.LastIndexAny(p, `/\`); i >= 0 {
		return p[i+1:]
	}
	return p
}

// ParseCSV is ReadCSV on the file's bytes; its errors name the line and the
// column but not the file.
func ParseCSV(raw []byte, opt CSV) (*Set, error) {
	delim := opt.Delimiter
	if delim == 0 {
		delim = ','
	}
	if delim == '"' || delim == '\r' || delim == '\n' || delim >= 0x80 {
		return nil, fmt.Errorf("delimiter %q is not supported (use a single ASCII character other than a quote or newline)", delim)
	}
	raw = bytes.TrimPrefix(raw, []byte("\xef\xbb\xbf")) // a UTF-8 byte-order mark
	var tab csvRows
	if bytes.IndexByte(raw, '"') >= 0 {
		var err error
		if tab, err = quotedRows(raw, delim); err != nil {
			return nil, err
		}
	} else {
		tab = plainRows(raw, byte(delim))
	}
	if tab.len() == 0 {
		return nil, errors.New("no rows")
	}
	firstLine := tab.lines[0]
	first := tab.cells(0, nil)
	header := make([]string, len(first))
	start := 1
	if opt.NoHeader {
		for j := range header {
			header[j] = strconv.Itoa(j)
		}
		start = 0
	} else {
		for j, h := range first {
			header[j] = strings.TrimSpace(h)
		}
	}
	n, d := tab.len()-start, len(header)-1
	lab := -1
	if opt.Unlabelled {
		d++
	} else {
		if len(header) < 2 {
			return nil, fmt.Errorf("line %d has %d column; need at least one feature and the label (is the delimiter %q right?)", firstLine, len(header), delim)
		}
		var err error
		if lab, err = opt.Label.resolve(header); err != nil {
			return nil, fmt.Errorf("label column: %w", err)
		}
	}
	if n == 0 {
		return nil, errors.New("no data rows after the header")
	}
	x := mat.NewDense(n, d, nil)
	labels := make([]string, n)
	feats := make([]string, 0, d)
	for j, h := range header {
		if j != lab {
			feats = append(feats, h)
		}
	}
	err := parallelRows(n, func(lo, hi int) error {
		var buf []string
		for i := lo; i < hi; i++ {
			buf = tab.cells(start+i, buf)
			line := tab.lines[start+i]
			if len(buf) != len(header) {
				return fmt.Errorf("line %d has %d cells, the header has %d", line, len(buf), len(header))
			}
			dst := x.RawRowView(i)
			e := 0
			for j, cell := range buf {
				cell = strings.TrimSpace(cell)
				if j == lab {
					labels[i] = cell
					continue
				}
				v, err := parseNumber(cell)
				if err != nil || v-v != 0 {
					return cellError(line, header[j], cell, err)
				}
				dst[e] = v
				e++
			}
			if lab >= 0 && (labels[i] == "" || strings.EqualFold(labels[i], "nan")) {
				return fmt.Errorf("line %d, label column %q: missing label %q", line, header[lab], labels[i])
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if lab < 0 {
		return &Set{X: x, Features: feats}, nil
	}
	y, classes, err := ClassLabels(labels)
	if err != nil {
		return nil, fmt.Errorf("label column %q: %w", header[lab], err)
	}
	return &Set{X: x, Y: y, Features: feats, Classes: classes, Coding: ClassIndex}, nil
}

// parallelRows runs f on contiguous parts of [0, n) on the machine's cores
// and returns the error of the earliest failing part.
func parallelRows(n int, f func(lo, hi int) error) error {
	parts := min(runtime.GOMAXPROCS(0), max(1, n/2048))
	if parts <= 1 {
		return f(0, n)
	}
	errs := make([]error, parts)
	var wg sync.WaitGroup
	for p := 0; p < parts; p++ {
		lo, hi := p*n/parts, (p+1)*n/parts
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[p] = f(lo, hi)
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// cellError explains why a feature cell is not a finite number.
func cellError(line int, column, cell string, err error) error {
	switch {
	case missingCells[strings.ToLower(cell)]:
		return fmt.Errorf("line %d, column %q: missing value %q (fill or drop it first)", line, column, cell)
	case err != nil && errors.Is(err, strconv.ErrRange):
		return fmt.Errorf("line %d, column %q: %q is out of the float64 range", line, column, cell)
	case err == nil:
		return fmt.Errorf("line %d, column %q: %q is infinite", line, column, cell)
	}
	return fmt.Errorf("line %d, column %q: %q is not a number", line, column, cell)
}

// csvRows holds a file's non-blank rows: as whole lines split on demand
// (files without quotes), or as cells read by encoding/csv; lines holds each
// row's 1-based line number.
type csvRows struct {
	text  []string // unsplit lines
	rows  [][]string
	delim string
	lines []int
}

func (t *csvRows) len() int { return len(t.lines) }

// cells returns row i's cells, reusing buf.
func (t *csvRows) cells(i int, buf []string) []string {
	if t.rows != nil {
		return t.rows[i]
	}
	buf = buf[:0]
	l := t.text[i]
	for {
		k := strings.Index(l, t.delim)
		if k < 0 {
			return append(buf, l)
		}
		buf = append(buf, l[:k])
		l = l[k+len(t.delim):]
	}
}

// plainRows splits a file without quotes into lines, skipping blank ones.
func plainRows(raw []byte, delim byte) csvRows {
	text := string(raw) // one copy; the cells are substrings of it
	t := csvRows{delim: string(delim)}
	line := 0
	for len(text) > 0 {
		line++
		var l string
		if i := strings.IndexByte(text, '\n'); i >= 0 {
			l, text = text[:i], text[i+1:]
		} else {
			l, text = text, ""
		}
		l = strings.TrimSuffix(l, "\r")
		if strings.TrimSpace(l) == "" {
			continue
		}
		t.text = append(t.text, l)
		t.lines = append(t.lines, line)
	}
	return t
}

// quotedRows reads a file with quoted cells by encoding/csv.
func quotedRows(raw []byte, delim rune) (csvRows, error) {
	r := csv.NewReader(bytes.NewReader(raw))
	r.Comma = delim
	r.FieldsPerRecord = -1
	var t csvRows
	for {
		rec, err := r.Read()
		if err == io.EOF {
			return t, nil
		}
		if err != nil {
			return csvRows{}, err
		}
		line, _ := r.FieldPos(0)
		if len(rec) == 1 && strings.TrimSpace(rec[0]) == "" {
			continue
		}
		t.rows = append(t.rows, rec)
		t.lines = append(t.lines, line)
	}
}

// exactPow10 holds the powers of ten that float64 represents exactly.
var exactPow10 = [...]float64{1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11,
	1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22}

// parseNumber is strconv.ParseFloat(s, 64) with a fast path for the plain
// decimals of data files: a decimal mantissa below 2⁵³ scaled by an exact
// power of ten ≤ 10²² is one correctly rounded operation (Clinger's fast
// path), so the result is bit-identical. Everything else goes to strconv.
func parseNumber(s string) (float64, error) {
	i, neg := 0, false
	if i < len(s) && (s[i] == '-' || s[i] == '+') {
		neg = s[i] == '-'
		i++
	}
	var m uint64
	digits, exp := 0, 0
	sawDigit, sawDot := false, false
	for ; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= '0' && c <= '9':
			sawDigit = true
			if m == 0 && c == '0' {
				if sawDot {
					exp--
				}
				continue
			}
			if digits >= 16 {
				return strconv.ParseFloat(s, 64)
			}
			m = m*10 + uint64(c-'0')
			digits++
			if sawDot {
				exp--
			}
		case c == '.' && !sawDot:
			sawDot = true
		case c == 'e' || c == 'E':
			if !sawDigit || i+1 >= len(s) {
				return strconv.ParseFloat(s, 64)
			}
			e, err := strconv.Atoi(s[i+1:])
			if err != nil || e > 1000 || e < -1000 {
				return strconv.ParseFloat(s, 64)
			}
			exp += e
			i = len(s)
		default:
			return strconv.ParseFloat(s, 64)
		}
	}
	if !sawDigit || m >= 1<<53 {
		return strconv.ParseFloat(s, 64)
	}
	f := float64(m)
	switch {
	case m == 0:
	case exp < 0 && -exp < len(exactPow10):
		f /= exactPow10[-exp]
	case exp >= 0 && exp < len(exactPow10):
		f *= exactPow10[exp]
	default:
		return strconv.ParseFloat(s, 64)
	}
	if neg {
		f = -f
	}
	return f, nil
}
