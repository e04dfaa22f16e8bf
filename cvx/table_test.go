package cvx

import (
	"bytes"
	"strings"
	"testing"
)

// TestTableHTML: the caption, header and cells appear escaped, in order,
// first column left and the others right; malformed tables are errors.
func TestTableHTML(t *testing.T) {
	h, err := tableHTML("Table <5>", []string{"method", "accuracy"}, [][]string{{"GD-std", "79.56 %"}, {"a & b", "<b>"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Table &lt;5&gt;</caption>", ">method</th>", ">accuracy</th>", "text-align:left\">GD-std</td>", "text-align:right\">79.56 %</td>", "a &amp; b", "&lt;b&gt;"} {
		if !strings.Contains(h, want) {
			t.Errorf("table HTML lacks %q:\n%s", want, h)
		}
	}
	if strings.Index(h, "GD-std") > strings.Index(h, "a &amp; b") {
		t.Error("rows out of order")
	}
	if strings.Contains(h, "<b>") {
		t.Error("a cell's text was not escaped")
	}
	if h, err := tableHTML("", []string{"x"}, nil); err != nil || strings.Contains(h, "<caption") {
		t.Errorf("empty caption and no rows: err %v, HTML %s", err, h)
	}
	if _, err := tableHTML("", nil, nil); err == nil || !strings.Contains(err.Error(), "no columns") {
		t.Errorf("no header: err %v", err)
	}
	if _, err := tableHTML("", []string{"a", "b"}, [][]string{{"1", "2"}, {"3"}}); err == nil || !strings.Contains(err.Error(), "row 1 has 1 cells for 2 columns") {
		t.Errorf("short row: err %v", err)
	}
	var buf bytes.Buffer
	old := stderr
	stderr = &buf
	defer func() { stderr = old }()
	if err := Table("", nil, nil); err == nil || !strings.Contains(buf.String(), "no columns") {
		t.Errorf("Table with no header: err %v, reported %q", err, buf.String())
	}
}
