package metrics

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// WriteText writes ms as an aligned table (name, kind, unit, when the
// per-second series sees it, description) for `llmchaos metrics`.
func WriteText(w io.Writer, ms []Metric) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tKIND\tUNIT\tPER SECOND\tDESCRIPTION")
	for _, m := range ms {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", m.Name, m.Kind, m.Unit, m.Series, m.Description)
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("write metrics: %w", err)
	}
	return nil
}

// Markdown returns ms as docs/metrics.md's metric reference: a Markdown table
// of name, kind, unit, the aggregations thresholds may use, when the
// per-second series sees it (Series) and the description.
func Markdown(ms []Metric) string {
	var b strings.Builder
	b.WriteString("| metric | kind | unit | threshold aggregations | per second | description |\n")
	b.WriteString("| --- | --- | --- | --- | --- | --- |\n")
	for _, m := range ms {
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s | %s | %s |\n", m.Name, m.Kind, m.Unit,
			"`"+strings.Join(m.Aggregations(), "` `")+"`", m.Series, strings.ReplaceAll(m.Description, "|", `\|`))
	}
	return b.String()
}
