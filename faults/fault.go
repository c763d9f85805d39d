package faults

import (
	"context"
	"encoding/json"
	"time"
)

// Undo reverts an injected fault. It is idempotent (a second call is a no-op
// returning nil) and treats a vanished target (a process gone, a namespace
// deleted) as reverted. The runner calls it under context.WithoutCancel with
// its own timeout, so it must honour ctx's deadline.
type Undo func(ctx context.Context) error

// Fault is one configured fault, ready to inject. Inject applies the whole
// fault or nothing: on error it has already reverted whatever it changed.
// Before each change it makes, it records in log how to revert that change,
// so that `llmchaos recover` can revert it after a crash of the runner.
type Fault interface {
	Inject(ctx context.Context, log RevertLog) (Undo, error)
}

// RevertWaiter is a Fault whose Undo waits for its target to come back (a
// killed replica's replacement) for up to RevertWait. A runner gives such
// an Undo at least that long, whatever its own revert timeout.
type RevertWaiter interface {
	RevertWait() time.Duration
}

// RevertLog is the write-ahead half of the journal a fault sees. Will must
// be called BEFORE the change it describes is made; it returns once the
// record is durable (fsynced).
type RevertLog interface {
	Will(spec RevertSpec) error
}

// RevertSpec says how to revert one change without the process that made it:
// Kind selects a Reverter from the explicit map of built-ins; Data is that
// reverter's input (JSON). A spec must stay valid after a crash: name owned
// handles (an nftables table name, a pid with its start time), never
// in-memory state.
type RevertSpec struct {
	Kind string          `json:"kind"`
	Data json.RawMessage `json:"data"`
}

// Reverter reverts one change from its RevertSpec data. It is idempotent and
// treats a vanished target as reverted.
type Reverter func(ctx context.Context, data json.RawMessage) error

// NopLog is a RevertLog that records nothing (tests and dry runs).
type NopLog struct{}

// Will implements RevertLog.
func (NopLog) Will(RevertSpec) error { return nil }
