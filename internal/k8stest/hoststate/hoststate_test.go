package hoststate

import "testing"

func TestDiff(t *testing.T) {
	before := []string{"sysctl kernel.panic=0", "iptables -A FORWARD -s 10.88.0.0/24 -j ACCEPT"}
	for _, tt := range []struct {
		name  string
		after []string
		want  string
	}{
		{"same", []string{"sysctl kernel.panic=0", "iptables -A FORWARD -s 10.88.0.0/24 -j ACCEPT"}, ""},
		{"changed", []string{"sysctl kernel.panic=10", "iptables -A FORWARD -s 10.88.0.0/24 -j ACCEPT", "ip link llmc0"},
			"  gone:  sysctl kernel.panic=0\n  added: sysctl kernel.panic=10\n  added: ip link llmc0\n"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := Diff(before, tt.after); got != tt.want {
				t.Errorf("Diff = %q, want %q", got, tt.want)
			}
		})
	}
}
