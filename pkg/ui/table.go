package ui

import (
	"bytes"
	"strings"
	"text/tabwriter"
)

// Table writes rows under headers in aligned columns, two spaces apart. On a
// terminal the header line is bold. Rows may have fewer cells than headers.
// Nothing is written when there are no headers and no rows.
func (p *Printer) Table(headers []string, rows [][]string) {
	if len(headers) == 0 && len(rows) == 0 {
		return
	}
	var buf bytes.Buffer
	tw := tabwriter.NewWriter(&buf, 0, 8, 2, ' ', 0)
	if len(headers) > 0 {
		_, _ = tw.Write([]byte(strings.Join(headers, "\t") + "\n"))
	}
	for _, row := range rows {
		_, _ = tw.Write([]byte(strings.Join(row, "\t") + "\n"))
	}
	_ = tw.Flush() // writes to a bytes.Buffer cannot fail

	out := buf.String()
	if len(headers) > 0 && p.styled {
		// Style the whole aligned header line after tabwriter has padded
		// it: escape codes inside cells would count towards column widths.
		head, rest, _ := strings.Cut(out, "\n")
		out = p.render(p.st.bold, head) + "\n" + rest
	}
	p.write(out)
}
