package capacity

import "testing"

func TestParseProcStat(t *testing.T) {
	busy, total, err := parseProcStat([]byte("cpu  100 5 50 800 40 3 2 0 7 0\ncpu0 1 2 3 4\n"))
	if err != nil || total != 1000 || busy != 160 {
		t.Errorf("parseProcStat = %d, %d, %v; want busy 160 of 1000", busy, total, err)
	}
	if _, _, err := parseProcStat([]byte("intr 1 2 3\n")); err == nil {
		t.Error("a file without the cpu line parsed")
	}
}
