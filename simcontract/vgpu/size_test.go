package vgpu

import (
	"testing"

	"github.com/llmchaos/llmchaos/internal/procfs"
)

func TestParseSize(t *testing.T) {
	tests := []struct {
		in      string
		want    int64
		wantErr bool
	}{
		{in: "141GiB", want: 141 * GiB},
		{in: "141gib", want: 141 * GiB},
		{in: "1.5 GiB", want: 3 * GiB / 2},
		{in: "80GB", want: 80_000_000_000},
		{in: "512MiB", want: 512 * MiB},
		{in: "512M", want: 512 * MiB},
		{in: "2T", want: 2 * TiB},
		{in: "10KB", want: 10_000},
		{in: "1073741824", want: GiB},
		{in: "7B", want: 7},
		{in: "", wantErr: true},
		{in: "GiB", wantErr: true},
		{in: "-1GiB", wantErr: true},
		{in: "12 parsecs", wantErr: true},
		{in: "1.2.3GiB", wantErr: true},
		{in: "99999999999TiB", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseSize(tt.in)
			if tt.wantErr {
				if err == nil {
					t.Fatalf("ParseSize(%q) = %d, want an error", tt.in, got)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseSize(%q): %v", tt.in, err)
			}
			if got != tt.want {
				t.Errorf("ParseSize(%q) = %d, want %d", tt.in, got, tt.want)
			}
		})
	}
}

func TestFormatSize(t *testing.T) {
	tests := []struct {
		in   int64
		want string
	}{
		{in: 14 * GiB, want: "14.0 GiB"},
		{in: GiB / 10 * 11, want: "1.1 GiB"},
		{in: 300 * MiB, want: "300.0 MiB"},
		{in: 512, want: "512 B"},
		{in: -2 * GiB, want: "-2.0 GiB"},
	}
	for _, tt := range tests {
		if got := FormatSize(tt.in); got != tt.want {
			t.Errorf("FormatSize(%d) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestParseStat(t *testing.T) {
	tests := []struct {
		name      string
		line      string
		wantStart uint64
		wantAlive bool
		wantErr   bool
	}{
		{
			name:      "running",
			line:      "8777 (cat) R 8774 8774 6307 0 -1 4194304 100 0 0 0 0 0 0 0 20 0 1 0 44234 3133440 379",
			wantStart: 44234, wantAlive: true,
		},
		{
			name:      "name with spaces and parens",
			line:      "12 (a) b (c) S 1 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 777 0 0",
			wantStart: 777, wantAlive: true,
		},
		{
			name:      "zombie",
			line:      "12 (x) Z 1 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 99 0 0",
			wantStart: 99, wantAlive: false,
		},
		{name: "truncated", line: "12 (x) S 1 1", wantErr: true},
		{name: "no name", line: "garbage", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			start, alive, err := procfs.ParseStat([]byte(tt.line))
			if tt.wantErr {
				if err == nil {
					t.Fatalf("parseStat(%q) succeeded, want an error", tt.line)
				}
				return
			}
			if err != nil {
				t.Fatalf("parseStat: %v", err)
			}
			if start != tt.wantStart || alive != tt.wantAlive {
				t.Errorf("parseStat = (%d, %v), want (%d, %v)", start, alive, tt.wantStart, tt.wantAlive)
			}
		})
	}
}
