package experiments

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"

	"github.com/llmchaos/llmchaos/faults"
	"github.com/llmchaos/llmchaos/report"
)

// recoveredEvents returns, per fault, the run's `recovered` events.
func recoveredEvents(d *report.Document) map[string]int {
	out := map[string]int{}
	for _, e := range d.Events {
		if e.Source == report.EventSourceRunner && e.Kind == "recovered" {
			out[e.Target]++
		}
	}
	return out
}

// TestRecoveredEventsMatchTable: with faults that follow each other, one
// of them cut by the next before its hold was over, every "recovered yes"
// of the recovery table has one `recovered` event in run.json (and so in
// the HTML report) and a progress line, and a fault that did not recover
// has none; the one cut says by which fault.
func TestRecoveredEventsMatchTable(t *testing.T) {
	t.Parallel()
	skipShort(t)
	srv := newSSEServer(t)
	failing := func(on bool) { srv.failing.Store(on) }
	first, second, third := newFakeFault(t, "first", failing), newFakeFault(t, "second", failing), newFakeFault(t, "third", failing)
	exp := testSpec(srv.URL, 11*time.Second,
		httpErrorFault("first", time.Second, time.Second),            // reverted at 2 s
		httpErrorFault("second", 2500*time.Millisecond, time.Second), // injected before first's 1 s window + 1 s hold are over
		httpErrorFault("third", 7*time.Second, 500*time.Millisecond), // long after second recovered
	)
	var out bytes.Buffer
	o, err := runSpec(context.Background(), exp, Options{RunDir: t.TempDir(), Out: &out,
		hooks: fakeBuilds(map[string]faults.Fault{"first": first, "second": second, "third": third})})
	if err != nil {
		t.Fatalf("Run: %v\n%s", err, out.String())
	}
	d := o.Doc
	events := recoveredEvents(d)
	recovered := map[string]bool{}
	for _, rc := range d.Recovery {
		recovered[rc.Fault] = rc.Recovered
		want := 0
		if rc.Recovered {
			want = 1
		}
		if events[rc.Fault] != want {
			t.Errorf("fault %s: recovered %v in the table, %d recovered events; want %d\n%s", rc.Fault, rc.Recovered, events[rc.Fault], want, out.String())
		}
		if rc.Recovered && !strings.Contains(out.String(), "recovered "+rc.Fault+": healthy from") {
			t.Errorf("fault %s recovered, but no progress line says so:\n%s", rc.Fault, out.String())
		}
		if rc.Fault == "first" && (rc.Recovered || rc.CutBy != "second") {
			t.Errorf("first: %+v, want not recovered, cut by second", rc)
		}
	}
	if !recovered["second"] || !recovered["third"] {
		t.Errorf("recovery %+v, want second and third recovered", d.Recovery)
	}
	var txt bytes.Buffer
	if err := report.WriteText(&txt, d); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(txt.String(), "no (second came first)") {
		t.Errorf("recovery table does not say first was cut by second:\n%s", txt.String())
	}

	// The HTML report: its recovery table's "yes" rows and its events'
	// "recovered" rows name the same faults, once each.
	var page bytes.Buffer
	if err := report.WriteHTML(&page, d); err != nil {
		t.Fatal(err)
	}
	tableYes, eventRows := htmlRecovered(t, page.Bytes())
	for _, rc := range d.Recovery {
		want := 0
		if rc.Recovered {
			want = 1
		}
		if tableYes[rc.Fault] != want || eventRows[rc.Fault] != want {
			t.Errorf("HTML report, fault %s: %d \"yes\" rows in the recovery table, %d recovered events; want %d of each",
				rc.Fault, tableYes[rc.Fault], eventRows[rc.Fault], want)
		}
	}
}

// htmlRecovered reads an HTML run report: per fault, the rows of its
// recovery table that say "yes", and the rows of its events table that
// say "recovered".
func htmlRecovered(t *testing.T, page []byte) (tableYes, events map[string]int) {
	t.Helper()
	root, err := html.Parse(bytes.NewReader(page))
	if err != nil {
		t.Fatal(err)
	}
	tableYes, events = map[string]int{}, map[string]int{}
	for _, sec := range []string{"recovery", "events"} {
		n := htmlByID(root, sec)
		if n == nil {
			t.Fatalf("HTML report has no section %q", sec)
		}
		for _, cells := range htmlBodyRows(n) {
			switch {
			case sec == "recovery" && len(cells) >= 2 && cells[1] == "yes":
				tableYes[cells[0]]++
			case sec == "events" && len(cells) >= 4 && cells[1] == report.EventSourceRunner && cells[2] == "recovered":
				events[cells[3]]++
			}
		}
	}
	return tableYes, events
}

// htmlByID returns the element under root whose id is id, or nil.
func htmlByID(root *html.Node, id string) *html.Node {
	if root.Type == html.ElementNode {
		for _, a := range root.Attr {
			if a.Key == "id" && a.Val == id {
				return root
			}
		}
	}
	for c := root.FirstChild; c != nil; c = c.NextSibling {
		if n := htmlByID(c, id); n != nil {
			return n
		}
	}
	return nil
}

// htmlBodyRows returns the text of each cell of each table body row under
// n, spaces squeezed.
func htmlBodyRows(n *html.Node) [][]string {
	var rows [][]string
	var walk func(*html.Node)
	walk = func(n *html.Node) {
		if n.DataAtom == atom.Tr && n.Parent != nil && n.Parent.DataAtom == atom.Tbody {
			var cells []string
			for c := n.FirstChild; c != nil; c = c.NextSibling {
				if c.Type == html.ElementNode && c.DataAtom == atom.Td {
					cells = append(cells, strings.Join(strings.Fields(htmlText(c)), " "))
				}
			}
			rows = append(rows, cells)
			return
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(n)
	return rows
}

// htmlText is the text under n.
func htmlText(n *html.Node) string {
	if n.Type == html.TextNode {
		return n.Data
	}
	var b strings.Builder
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		b.WriteString(htmlText(c))
	}
	return b.String()
}

// TestSettleRecoveries: the record's judgement settles the live check's
// announcements: a recovery it missed gets its event, one at another
// moment is corrected, one the record does not bear out is withdrawn.
func TestSettleRecoveries(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	lw := &lineWriter{w: &out}
	obs := newObservers(lw, ObserveOptions{}, &runClock{})
	p := &plan{judge: recoveryJudge{window: time.Second, hold: 2 * time.Second}}
	j := newJudge(p, nil, nil, obs, &runClock{}, lw)
	announce := func(fault string, at time.Duration) {
		idx := obs.eventIndexed(report.EventSourceRunner, "recovered", fault, recoveredDetail(at, p.judge, ""))
		if j.seen == nil {
			j.seen = map[string]liveRecovery{}
		}
		j.seen[fault] = liveRecovery{at: at, event: idx}
	}
	announce("same", 5*time.Second)
	announce("moved", 7*time.Second)
	announce("withdrawn", 9*time.Second)
	j.settleRecoveries([]faultRecovery{
		{fault: "same", recovered: true, at: 5 * time.Second},
		{fault: "moved", recovered: true, at: 6 * time.Second},
		{fault: "withdrawn", cutBy: "next"},
		{fault: "missed", recovered: true, at: 11 * time.Second},
		{fault: "never"},
	}, 20*time.Second)
	got := map[string]report.EventRecord{}
	for _, e := range obs.eventLog() {
		got[e.Target] = e
	}
	for _, c := range []struct {
		fault, kind, detail string
		atS                 float64
	}{
		{"same", "recovered", "healthy from", 0},
		{"moved", "recovered", "the complete record says", 0},
		{"withdrawn", "recovery_withdrawn", "the next fault, next, came first", 0},
		{"missed", "recovered", "judged once the run's record was complete", 13},
	} {
		e, ok := got[c.fault]
		if !ok || e.Kind != c.kind || !strings.Contains(e.Detail, c.detail) || (c.atS != 0 && e.AtS != c.atS) {
			t.Errorf("%s: event %+v, want %s saying %q", c.fault, e, c.kind, c.detail)
		}
	}
	if _, ok := got["never"]; ok {
		t.Errorf("a fault that never recovered has an event: %+v", got["never"])
	}
	for _, want := range []string{"recovered missed", "recovery_withdrawn withdrawn", "recovered moved"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("progress lines do not say %q:\n%s", want, out.String())
		}
	}
}
