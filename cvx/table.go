package cvx

import (
	"fmt"
	"html"
	"strings"
)

// Table displays a table of text in the notebook, for results such as the
// paper's tables: an optional caption, a header row and rows of cells, every
// row as long as the header. Cells are text (escaped, not HTML); the first
// column is aligned left, the others right. Outside a notebook it does
// nothing (print the values as text there).
func Table(caption string, head []string, rows [][]string) error {
	return showHTML(tableHTML(caption, head, rows))
}

// tableHTML renders Table's HTML.
func tableHTML(caption string, head []string, rows [][]string) (string, error) {
	if len(head) == 0 {
		return "", fmt.Errorf("cvx: Table: the header has no columns")
	}
	for i, r := range rows {
		if len(r) != len(head) {
			return "", fmt.Errorf("cvx: Table: row %d has %d cells for %d columns", i, len(r), len(head))
		}
	}
	const cell = "padding:2px 8px;border-bottom:1px solid #ddd;text-align:"
	var sb strings.Builder
	sb.WriteString(`<table style="border-collapse:collapse;font-family:monospace;font-size:12px;margin:4px 0">`)
	if caption != "" {
		sb.WriteString(`<caption style="text-align:left;font-weight:bold;padding:4px 0">` + html.EscapeString(caption) + `</caption>`)
	}
	sb.WriteString("<tr>")
	for _, h := range head {
		sb.WriteString(`<th style="padding:2px 8px;border-bottom:1px solid #999">` + html.EscapeString(h) + `</th>`)
	}
	sb.WriteString("</tr>")
	for _, r := range rows {
		sb.WriteString("<tr>")
		for j, c := range r {
			align := "right"
			if j == 0 {
				align = "left"
			}
			sb.WriteString(`<td style="` + cell + align + `">` + html.EscapeString(c) + `</td>`)
		}
		sb.WriteString("</tr>")
	}
	sb.WriteString("</table>")
	return sb.String(), nil
}
