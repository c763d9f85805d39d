package procfs

import (
	"os"
	"testing"
)

func TestParseStat(t *testing.T) {
	tests := []struct {
		name      string
		line      string
		wantStart uint64
		wantAlive bool
		wantErr   bool
	}{
		{"running", "42 (sleep) S 1 42 42 0 -1 4194560 100 0 0 0 0 0 0 0 20 0 1 0 123456 8192 100", 123456, true, false},
		{"name with spaces and parens", "7 (a (b) c) R 1 7 7 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 99 1 1", 99, true, false},
		{"zombie", "9 (x) Z 1 9 9 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 555 0 0", 555, false, false},
		{"dead", "9 (x) X 1 9 9 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 556 0 0", 556, false, false},
		{"no paren", "9 x S 1", 0, false, true},
		{"too short", "9 (x) S 1 2 3", 0, false, true},
		{"bad start", "9 (x) S 1 9 9 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 abc 0 0", 0, false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			start, alive, err := ParseStat([]byte(tt.line))
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, want error %v", err, tt.wantErr)
			}
			if start != tt.wantStart || alive != tt.wantAlive {
				t.Errorf("got (%d, %v), want (%d, %v)", start, alive, tt.wantStart, tt.wantAlive)
			}
		})
	}
}

func TestStartTimeOfSelfAndMissing(t *testing.T) {
	start, alive, err := StartTime(os.Getpid())
	if err != nil || !alive || start == 0 {
		t.Fatalf("self: (%d, %v, %v), want a running process with a start time", start, alive, err)
	}
	if _, alive, err := StartTime(1 << 30); err != nil || alive {
		t.Errorf("missing pid: alive %v, err %v; want (false, nil)", alive, err)
	}
}
