package report

import (
	"bytes"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/llmchaos/llmchaos/xk6-llm/recording"
)

// ansiCode matches an ANSI colour escape.
var ansiCode = regexp.MustCompile("\x1b\\[[0-9;]*m")

func TestWriteTextWithOptions(t *testing.T) {
	verbose := func(d *Document) {
		d.Phases = []PhaseRecord{{Name: PhaseBaseline, EndS: 1.5}, {Name: PhaseFault, Fault: "kill", StartS: 1.5, EndS: 4}}
		d.Events = []EventRecord{
			{AtS: 1.5, Source: EventSourceFault, Kind: "injected", Target: "kill", Detail: "replica.kill r0"},
			{AtS: 3.25, Source: EventSourceFault, Kind: "reverted", Target: "kill"},
		}
	}
	stats, err := ParseTrendStats("avg,min,med,p(95),p(75),max,count")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		opts    TextOptions
		aborted bool
		prep    func(*Document)
		// exact, when set, is the whole output.
		exact   string
		want    []string // lines (spaces squeezed) the output holds
		notWant []string // substrings it must not hold
	}{
		{
			name:    "default",
			want:    []string{"latency count mean p50 p90 p99 max", "verdict: FAIL (3 of 5 thresholds failed)"},
			notWant: []string{"\x1b[", "by endpoint", "events (run clock)"},
		},
		{
			name:  "quiet",
			opts:  TextOptions{Quiet: true},
			exact: "verdict: FAIL (3 of 5 thresholds failed)\n",
		},
		{
			name:  "quiet with colour",
			opts:  TextOptions{Quiet: true, Color: true},
			exact: "verdict: \x1b[31mFAIL\x1b[0m (3 of 5 thresholds failed)\n",
		},
		{
			name:    "quiet aborted with colour",
			opts:    TextOptions{Quiet: true, Color: true},
			aborted: true,
			exact:   "verdict: \x1b[33mABORTED\x1b[0m by a stop condition (3 of 5 thresholds failed)\n",
		},
		{
			name: "colour",
			opts: TextOptions{Color: true},
			want: []string{
				"\x1b[32m ✓ ttft p(99)<500ms 330.239ms\x1b[0m",
				"\x1b[31m ✗ error_rate rate<0.01 0.125\x1b[0m",
				"verdict: \x1b[31mFAIL\x1b[0m (3 of 5 thresholds failed)",
			},
		},
		{
			name: "verbose",
			opts: TextOptions{Verbose: true},
			prep: verbose,
			want: []string{
				"by endpoint ok failed cancelled dropped ttft p99 e2e p99",
				"by phase ok failed cancelled dropped ttft p99 e2e p99",
				"events (run clock)",
				"1.5s fault injected kill: replica.kill r0",
				"3.25s fault reverted kill",
			},
			notWant: []string{"hunter2", "\x1b["},
		},
		{
			name: "trend stats",
			opts: TextOptions{TrendStats: stats},
			want: []string{"latency avg min med p(95) p(75) max count"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := judgedRun(t, tt.aborted)
			if tt.prep != nil {
				tt.prep(d)
			}
			var b bytes.Buffer
			if err := WriteTextWith(&b, d, tt.opts); err != nil {
				t.Fatal(err)
			}
			got := b.String()
			if tt.exact != "" && got != tt.exact {
				t.Errorf("got %q, want %q", got, tt.exact)
			}
			for _, w := range tt.want {
				if !strings.Contains(squeeze(got), w) {
					t.Errorf("output lacks %q:\n%s", w, got)
				}
			}
			for _, w := range tt.notWant {
				if strings.Contains(got, w) {
					t.Errorf("output holds %q:\n%s", w, got)
				}
			}
			// Without its colours, a coloured summary is the plain one:
			// the codes take no columns.
			if tt.opts.Color {
				plain := tt.opts
				plain.Color = false
				var p bytes.Buffer
				if err := WriteTextWith(&p, judgedRun(t, tt.aborted), plain); err != nil {
					t.Fatal(err)
				}
				if stripped := ansiCode.ReplaceAllString(got, ""); stripped != p.String() {
					t.Errorf("coloured summary without its codes differs from the plain one:\n%s\nwant\n%s", stripped, p.String())
				}
			}
		})
	}
}

func TestWriteTextDefaultIsZeroOptions(t *testing.T) {
	var a, b bytes.Buffer
	d := judgedRun(t, false)
	if err := WriteText(&a, d); err != nil {
		t.Fatal(err)
	}
	if err := WriteTextWith(&b, d, TextOptions{TrendStats: DefaultTrendStats()}); err != nil {
		t.Fatal(err)
	}
	if a.String() != b.String() {
		t.Errorf("WriteText and WriteTextWith(DefaultTrendStats) differ:\n%s\n---\n%s", a.String(), b.String())
	}
}

// TestTrendStatsValues checks each column against the run's own figures:
// the stored ones, and a percentile the report does not store, read from
// the run's histogram.
func TestTrendStatsValues(t *testing.T) {
	d := judgedRun(t, false)
	stats, err := ParseTrendStats("avg, min ,med,p(95),p(75),max,count")
	if err != nil {
		t.Fatal(err)
	}
	s := d.Metrics["ttft_ms"]
	p75 := float64(d.Summary().Histogram(recording.MetricTTFT, recording.TagFilter{}).ValueAtQuantile(75)) / 1000
	want := []string{"  ttft", fmtMs(s.Mean), fmtMs(s.Min), fmtMs(s.P50), fmtMs(s.P95), fmtMs(p75), fmtMs(s.Max), strconv.FormatInt(s.Count, 10)}
	got := trendCells("  ttft", s, stats, builtinQuantile(d, "ttft"), fmtMs)
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("ttft cells = %q, want %q", got, want)
	}
	var b bytes.Buffer
	if err := WriteTextWith(&b, d, TextOptions{TrendStats: stats}); err != nil {
		t.Fatal(err)
	}
	if line := strings.Join(want, "  "); !strings.Contains(squeeze(b.String()), squeeze(line)) {
		t.Errorf("summary lacks the ttft row %q:\n%s", line, b.String())
	}
}

func TestParseTrendStats(t *testing.T) {
	tests := []struct {
		in      string
		want    string // the columns' names, comma-joined
		wantErr string
	}{
		{in: "avg,min,med,max,p(90),p(99.9),count", want: "avg,min,med,max,p(90),p(99.9),count"},
		{in: " p(0) , p(100) ", want: "p(0),p(100)"},
		{in: "avg,mean,p(101),p95", wantErr: `trend stats "mean", "p(101)", "p95": want a comma-separated list of avg, min, med, max, count, p(N)`},
		{in: "", wantErr: `trend stats "":`},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseTrendStats(tt.in)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			names := make([]string, len(got))
			for i, s := range got {
				names[i] = s.Name
			}
			if strings.Join(names, ",") != tt.want {
				t.Errorf("got %s, want %s", strings.Join(names, ","), tt.want)
			}
		})
	}
}

func TestWriteOutputTextOptions(t *testing.T) {
	var b bytes.Buffer
	o := Output{Format: FormatText, Text: TextOptions{Quiet: true}}
	if err := WriteOutput(&b, o, judgedRun(t, false)); err != nil {
		t.Fatal(err)
	}
	if got, want := b.String(), "verdict: FAIL (3 of 5 thresholds failed)\n"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}
