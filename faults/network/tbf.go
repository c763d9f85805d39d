package network

import (
	"errors"
	"fmt"
	"strings"
)

// qdiscSpec is the RevertSpec data of KindTCQdisc: enough to find the qdisc
// llmchaos added and to prove it is still the one it added.
type qdiscSpec struct {
	// Netns is the namespace file ("" for the namespace recover runs in).
	Netns string `json:"netns"`
	// NetnsID identifies the namespace ("dev:inode").
	NetnsID string `json:"netns_id,omitempty"`
	// Link is the interface's name.
	Link string `json:"link"`
	// Handle is the qdisc's handle (major:0), chosen at random per inject.
	Handle uint32 `json:"handle"`
	// QdiscKind is "tbf" or "netem".
	QdiscKind string `json:"qdisc"`
	// Rate is tbf's rate in bytes per second (0 for netem).
	Rate uint64 `json:"rate,omitempty"`
	// Limit is the qdisc's queue limit (bytes for tbf, packets for netem).
	Limit uint32 `json:"limit,omitempty"`
}

// validate checks that s is usable.
func (s qdiscSpec) validate() error {
	var errs []error
	if s.QdiscKind != "tbf" && s.QdiscKind != "netem" {
		errs = append(errs, fmt.Errorf("qdisc %q: llmchaos adds tbf and netem only", s.QdiscKind))
	}
	if s.Handle>>16 < minQdiscMajor || s.Handle>>16 > maxQdiscMajor || s.Handle&0xffff != 0 {
		errs = append(errs, fmt.Errorf("handle %#x is not one llmchaos hands out", s.Handle))
	}
	if s.Link == "" {
		errs = append(errs, errors.New("link is empty"))
	}
	if s.Netns != "" && !strings.HasPrefix(s.Netns, "/") {
		errs = append(errs, fmt.Errorf("netns %q is not an absolute path", s.Netns))
	}
	return errors.Join(errs...)
}

// The range of qdisc handle majors llmchaos picks from: below the kernel's
// automatic handles (0x8000 and up), above the small numbers people type.
const (
	minQdiscMajor = 0x1000
	maxQdiscMajor = 0x7fff
)

// qdiscTBF is the tbf qdisc to add.
type qdiscTBF struct {
	rate  uint64 // bytes per second
	burst uint32 // bytes
	limit uint32 // bytes
}

// qdiscNetem is the netem qdisc to add.
type qdiscNetem struct {
	latencyUs, jitterUs uint32
	limit               uint32 // packets
}

// handleString writes a qdisc handle as tc does ("4a2f:").
func handleString(h uint32) string { return fmt.Sprintf("%x:", h>>16) }
