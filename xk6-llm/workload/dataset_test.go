package workload

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func datasetPath(name string) string { return filepath.Join("testdata", "datasets", name) }

func TestLoadShareGPT(t *testing.T) {
	t.Parallel()
	ds, err := LoadDataset(datasetPath("sharegpt_small.json"), DatasetAuto)
	if err != nil {
		t.Fatal(err)
	}
	// a1 and a6 kept as first human turn + the model's answer; a3 kept from
	// its first human turn (the leading model turn is not a prompt); a2
	// (prompt under 4 tokens), a4 (no answer) and a5 (no conversations)
	// skipped.
	wantPrompts := []string{
		"Explain how a paged KV cache lets an inference server batch many sequences without fragmenting GPU memory.",
		"Write a haiku about load testing under pressure.",
		"List three causes of a rising time to first token under steady load.",
	}
	wantOut := []int{
		EstimateTokens("A paged KV cache splits each sequence's keys and values into fixed-size blocks, much like virtual memory pages. The server keeps a free list of blocks and a block table per sequence, so memory is taken one block at a time as a sequence grows and returned the moment it ends."),
		EstimateTokens("Requests pour like rain / queues grow long, the p99 climbs / the pager wakes me."),
		EstimateTokens("Queueing when the batch is full, long prefills from big prompts that block decode steps, and preemptions that force recomputation of evicted sequences."),
	}
	if len(ds.Entries) != len(wantPrompts) {
		t.Fatalf("%d entries, want %d: %+v", len(ds.Entries), len(wantPrompts), ds.Entries)
	}
	for i, e := range ds.Entries {
		if len(e.Turns) != 1 || e.Turns[0].User != wantPrompts[i] || e.Turns[0].OutputTokens != wantOut[i] {
			t.Errorf("entry %d = %+v, want prompt %q with output %d", i, e, wantPrompts[i], wantOut[i])
		}
	}
	if ds.Skipped != 3 {
		t.Errorf("Skipped = %d, want 3", ds.Skipped)
	}
}

func TestShareGPTLengthFilter(t *testing.T) {
	t.Parallel()
	// vLLM's filter: prompt ≤ 1024 tokens and prompt + answer ≤ 2048.
	long := strings.Repeat("abcd", 1025) // 1025 tokens
	mid := strings.Repeat("abcd", 1000)
	doc := `[
{"conversations": [{"from": "human", "value": "` + long + `"}, {"from": "gpt", "value": "a fine answer here"}]},
{"conversations": [{"from": "human", "value": "` + mid + `"}, {"from": "gpt", "value": "` + strings.Repeat("wxyz", 1049) + `"}]},
{"conversations": [{"from": "human", "value": "` + mid + `"}, {"from": "gpt", "value": "` + strings.Repeat("wxyz", 1048) + `"}]}
]`
	ds, err := ParseShareGPT(strings.NewReader(doc), "inline.json")
	if err != nil {
		t.Fatal(err)
	}
	if len(ds.Entries) != 1 || ds.Skipped != 2 || ds.Entries[0].Turns[0].OutputTokens != 1048 {
		t.Errorf("kept %d (skipped %d), want only the 1000+1048 entry", len(ds.Entries), ds.Skipped)
	}
}

func TestLoadJSONLDataset(t *testing.T) {
	t.Parallel()
	ds, err := LoadDataset(datasetPath("prompts.jsonl"), DatasetAuto)
	if err != nil {
		t.Fatal(err)
	}
	want := []DatasetEntry{
		{Turns: []DatasetTurn{{User: "Summarise the causes of head-of-line blocking in HTTP/1.1 pipelining.", OutputTokens: 120}}},
		{Turns: []DatasetTurn{{User: "Translate 'the cache is warm' into French."}}},
		{Turns: []DatasetTurn{{User: "Write a limerick about a GPU running out of memory.", OutputTokens: 64}}},
	}
	if !reflect.DeepEqual(ds.Entries, want) {
		t.Errorf("entries = %+v\nwant %+v", ds.Entries, want)
	}

	ds, err = LoadDataset(datasetPath("messages.jsonl"), DatasetJSONL)
	if err != nil {
		t.Fatal(err)
	}
	want = []DatasetEntry{
		{
			System: "You are a terse SRE assistant.",
			Turns: []DatasetTurn{
				{User: "What does a 429 mean?", OutputTokens: EstimateTokens("Too many requests: the server is throttling you; back off and retry later.")},
				{User: "And a 503?", OutputTokens: 40}, // output_length applies to the last turn
			},
		},
		{Turns: []DatasetTurn{{User: "First part of a question,\nand its second part.", OutputTokens: EstimateTokens("One answer to both parts.")}}},
	}
	if !reflect.DeepEqual(ds.Entries, want) {
		t.Errorf("entries = %+v\nwant %+v", ds.Entries, want)
	}
}

func TestDatasetErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		file string
		want []string
	}{
		{"sharegpt_bad_syntax.json", []string{"sharegpt_bad_syntax.json:6:", "entry 1"}},
		{"sharegpt_bad_entry.json", []string{"sharegpt_bad_entry.json:7:", "entry 1", "want an object", "found a JSON string"}},
		{"sharegpt_bad_type.json", []string{"sharegpt_bad_type.json:4:", "entry 0: conversations.value: want string, found a JSON number"}},
		{"bad_lines.jsonl", []string{"bad_lines.jsonl:3:", "not a JSON object"}},
		{"bad_fields.jsonl", []string{"bad_fields.jsonl:2:", `neither "prompt" nor "messages"`}},
		{"bad_role.jsonl", []string{"bad_role.jsonl:3:", `messages[1]: role "tool"`}},
		{"bad_both.jsonl", []string{"bad_both.jsonl:1:", "both"}},
		{"bad_content.jsonl", []string{"bad_content.jsonl:1:", "messages[0].content: only a string"}},
		{"nope.jsonl", []string{"nope.jsonl", "no such file"}},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			_, err := LoadDataset(datasetPath(tt.file), DatasetAuto)
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}

func TestJSONLEntryErrors(t *testing.T) {
	t.Parallel()
	for line, want := range map[string]string{
		`{"prompt": ""}`: `"prompt" is empty`,
		`{"prompt": "x", "output_tokens": 3, "max_tokens": 4}`:                                 "give one of",
		`{"prompt": "x", "output_tokens": -3}`:                                                 "must be ≥ 0",
		`{"messages": []}`:                                                                     "no user message",
		`{"messages": [{"role": "assistant", "content": "a"}]}`:                                "assistant message before any user message",
		`{"messages": [{"role": "user", "content": "q"}, {"role": "system", "content": "s"}]}`: "system message may only come first",
		`{"messages": [{"role": "user", "content": ""}]}`:                                      "empty user message",
	} {
		_, err := ParseJSONLDataset(strings.NewReader("\n"+line+"\n"), "x.jsonl")
		if err == nil || !strings.Contains(err.Error(), "x.jsonl:2: ") || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error = %v, want x.jsonl:2 and %q", line, err, want)
		}
	}
}

func TestDatasetFormatDetection(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	sg := `  [{"conversations": [{"from": "human", "value": "a question long enough"}, {"from": "gpt", "value": "an answer long enough"}]}]`
	if ds, err := LoadDataset(write("data.txt", sg), DatasetAuto); err != nil || len(ds.Entries) != 1 {
		t.Errorf("sniffed ShareGPT: %v, %v", ds, err)
	}
	if ds, err := LoadDataset(write("data2.txt", "\n{\"prompt\": \"p\"}\n"), DatasetAuto); err != nil || len(ds.Entries) != 1 {
		t.Errorf("sniffed JSONL: %v, %v", ds, err)
	}
	if _, err := LoadDataset(write("data3.txt", "prompt,output\n"), DatasetAuto); err == nil || !strings.Contains(err.Error(), "neither a JSON array") {
		t.Errorf("CSV sniff error = %v", err)
	}
	if _, err := LoadDataset(write("data4.txt", sg), "csv"); err == nil || !strings.Contains(err.Error(), `unknown format "csv"`) {
		t.Errorf("unknown format error = %v", err)
	}
}
