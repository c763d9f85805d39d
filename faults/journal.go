package faults

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"
)

// JournalFile is the name of the journal inside a run directory.
const JournalFile = "journal.jsonl"

// Journal operations, the "op" field of every line.
const (
	opIntent   = "intent"   // a fault is about to be injected
	opWill     = "will"     // a RevertSpec, written before the change it reverts
	opInjected = "injected" // Inject returned without error
	opFailed   = "failed"   // Inject returned an error (and, by contract, reverted itself)
	opReverted = "reverted" // a revert attempt ended (ok or not)
)

// ErrJournalBusy is returned by Open (and so by Recover) when another open
// Journal, usually a run still in progress, holds the journal's lock.
var ErrJournalBusy = errors.New("journal is held by another process (is the run still going?)")

// ErrJournalClosed is returned by writes to a closed Journal.
var ErrJournalClosed = errors.New("journal is closed")

// record is one line of the journal. Fields not used by an op are omitted.
type record struct {
	Op      string      `json:"op"`
	Fault   int         `json:"fault"`
	Time    time.Time   `json:"time"`
	Name    string      `json:"name,omitempty"`
	Type    string      `json:"type,omitempty"`
	Target  string      `json:"target,omitempty"`
	Planned *time.Time  `json:"planned,omitempty"`
	PID     int         `json:"pid,omitempty"`
	Spec    *RevertSpec `json:"spec,omitempty"`
	OK      *bool       `json:"ok,omitempty"`
	Error   string      `json:"error,omitempty"`
}

// Journal is the write-ahead journal of one run: a JSON-lines file in the
// run directory to which every record is appended and fsynced before the
// call that writes it returns. The runner writes an intent (Begin) before it
// injects a fault; the fault writes how to revert each change (Entry.Will)
// before making it; the runner then records the outcome (Injected or Failed)
// and, later, the revert (Reverted). A run killed at any point leaves enough
// behind for Recover to revert what it left applied.
//
// An open Journal holds an exclusive advisory lock on its file, so Recover
// refuses to replay the journal of a run that is still going. A Journal is
// safe for concurrent use.
type Journal struct {
	path string

	mu     sync.Mutex
	f      *os.File
	next   int // id of the next entry
	closed bool
	now    func() time.Time
}

// Open opens (creating it and dir when missing) the journal of the run
// directory dir for appending, and takes its lock. A torn last line, left by
// a crash in the middle of a write, is cut off: its write never returned, so
// nothing that it announced was done. Entries already in the file keep their
// ids and new ones follow them.
func Open(dir string) (*Journal, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("journal: create run directory: %w", err)
	}
	path := filepath.Join(dir, JournalFile)
	_, statErr := os.Stat(path)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("journal: %w", err)
	}
	if err := lockFile(f); err != nil {
		f.Close()
		if errors.Is(err, ErrJournalBusy) {
			return nil, fmt.Errorf("journal %s: %w", path, err)
		}
		return nil, fmt.Errorf("journal %s: lock: %w", path, err)
	}
	if errors.Is(statErr, fs.ErrNotExist) {
		// Make the new file's directory entry durable too.
		if err := syncDir(dir); err != nil {
			f.Close()
			return nil, fmt.Errorf("journal: %w", err)
		}
	}
	data, err := io.ReadAll(f)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("journal %s: read: %w", path, err)
	}
	if i := bytes.LastIndexByte(data, '\n'); i+1 < len(data) {
		// A torn tail: truncate it so new records start on a line of their own.
		if err := f.Truncate(int64(i + 1)); err != nil {
			f.Close()
			return nil, fmt.Errorf("journal %s: cut torn last line: %w", path, err)
		}
		if err := f.Sync(); err != nil {
			f.Close()
			return nil, fmt.Errorf("journal %s: sync: %w", path, err)
		}
		data = data[:i+1]
	}
	st := parseJournal(data)
	next := 1
	for _, p := range st.faults {
		next = max(next, p.ID+1)
	}
	return &Journal{path: path, f: f, next: next, now: time.Now}, nil
}

// Path returns the journal's file path.
func (j *Journal) Path() string { return j.path }

// Close releases the journal's lock and closes its file. Entries begun and
// not reverted stay pending in the file, for Recover. Close is idempotent.
func (j *Journal) Close() error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.closed {
		return nil
	}
	j.closed = true
	if err := j.f.Close(); err != nil {
		return fmt.Errorf("journal %s: close: %w", j.path, err)
	}
	return nil
}

// Begin writes the intent to inject a fault (its name, type and a
// description of its target, planned now) and returns the entry through
// which the fault's revert specs and outcome are recorded. Call it BEFORE
// Inject, and pass the entry to Inject as its RevertLog.
func (j *Journal) Begin(name, typ, target string) (*Entry, error) {
	return j.BeginAt(name, typ, target, time.Time{})
}

// BeginAt is Begin with the time the plan scheduled the injection for (zero:
// now). The intent record carries both the plan and the time it was written.
func (j *Journal) BeginAt(name, typ, target string, planned time.Time) (*Entry, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	now := j.now()
	if planned.IsZero() {
		planned = now
	}
	id := j.next
	r := record{Op: opIntent, Fault: id, Time: now, Name: name, Type: typ, Target: target, Planned: &planned, PID: os.Getpid()}
	if err := j.appendLocked(r); err != nil {
		return nil, fmt.Errorf("journal: begin fault %q: %w", name, err)
	}
	j.next++
	return &Entry{j: j, id: id, name: name}, nil
}

// Pending returns the faults of this journal that are not reverted, in the
// order they were begun (see the package function Pending).
func (j *Journal) Pending() ([]PendingFault, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.closed {
		return nil, ErrJournalClosed
	}
	data, err := os.ReadFile(j.path)
	if err != nil {
		return nil, fmt.Errorf("journal %s: read: %w", j.path, err)
	}
	st := parseJournal(data)
	return st.pending(), st.err(j.path)
}

// appendLocked writes one record as a line and fsyncs it. j.mu is held.
func (j *Journal) appendLocked(r record) error {
	if j.closed {
		return ErrJournalClosed
	}
	b, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("encode record: %w", err)
	}
	b = append(b, '\n')
	if _, err := j.f.Write(b); err != nil {
		return fmt.Errorf("write %s: %w", j.path, err)
	}
	if err := j.f.Sync(); err != nil {
		return fmt.Errorf("sync %s: %w", j.path, err)
	}
	return nil
}

// Entry is one fault's part of the journal. It implements RevertLog, so the
// fault records its revert specs through it. An Entry is safe for concurrent
// use; it must not be used after its Journal is closed.
type Entry struct {
	j    *Journal
	id   int
	name string

	// done is set once the entry is closed by Reverted or Failed; guarded by j.mu.
	done bool
}

var _ RevertLog = (*Entry)(nil)

// ID returns the entry's number in the journal (1, 2, ...).
func (e *Entry) ID() int { return e.id }

// Will records spec durably. The fault calls it before the change spec
// reverts. Kind must not be empty and Data must be valid JSON (or empty).
func (e *Entry) Will(spec RevertSpec) error {
	if spec.Kind == "" {
		return fmt.Errorf("journal: fault %q: revert spec without a kind", e.name)
	}
	if len(spec.Data) == 0 {
		spec.Data = json.RawMessage("null")
	}
	if !json.Valid(spec.Data) {
		return fmt.Errorf("journal: fault %q: revert spec %q: data is not valid JSON", e.name, spec.Kind)
	}
	return e.write(record{Op: opWill, Spec: &spec}, false, "record revert spec")
}

// Injected records that Inject succeeded, at the current time.
func (e *Entry) Injected() error {
	return e.write(record{Op: opInjected}, false, "record injection")
}

// Failed records that Inject returned err. By the Fault contract Inject has
// then reverted whatever it changed, so the entry is closed and Recover does
// not replay it.
func (e *Entry) Failed(err error) error {
	msg := "inject failed"
	if err != nil {
		msg = err.Error()
	}
	return e.write(record{Op: opFailed, Error: msg}, true, "record failed injection")
}

// Reverted records the end of a revert attempt: err nil closes the entry;
// a non-nil err leaves it pending, so that Recover tries again.
func (e *Entry) Reverted(err error) error {
	ok := err == nil
	r := record{Op: opReverted, OK: &ok}
	if err != nil {
		r.Error = err.Error()
	}
	return e.write(r, ok, "record revert")
}

func (e *Entry) write(r record, closes bool, what string) error {
	e.j.mu.Lock()
	defer e.j.mu.Unlock()
	if e.done {
		return fmt.Errorf("journal: fault %q: %s: entry already closed", e.name, what)
	}
	r.Fault = e.id
	r.Time = e.j.now()
	if err := e.j.appendLocked(r); err != nil {
		return fmt.Errorf("journal: fault %q: %s: %w", e.name, what, err)
	}
	if closes {
		e.done = true
	}
	return nil
}

// PendingFault is a fault that a journal shows begun and not reverted.
type PendingFault struct {
	// ID is the entry's number in the journal.
	ID int
	// Name, Type and Target are those given to Begin.
	Name, Type, Target string
	// PlannedAt is when the plan scheduled the injection; BegunAt is when
	// the intent was written.
	PlannedAt, BegunAt time.Time
	// InjectedAt is when Inject returned; zero if it never did (the run
	// died during Inject, so the fault may be partly applied).
	InjectedAt time.Time
	// PID is the process that began the fault.
	PID int
	// Specs are the revert specs in the order they were recorded.
	Specs []RevertSpec
	// LastError is the error of the last failed revert attempt, if any.
	LastError string
}

// Pending reads the journal in run directory dir, as a killed run left it,
// and returns the faults that are not reverted, in the order they were
// begun. A missing journal means nothing is pending. A torn last line is
// ignored; a malformed line elsewhere is reported in the error, but the
// faults that could be read are still returned, so that a damaged journal
// never stops the reverts that are possible.
func Pending(dir string) ([]PendingFault, error) {
	path := filepath.Join(dir, JournalFile)
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("journal %s: read: %w", path, err)
	}
	st := parseJournal(data)
	return st.pending(), st.err(path)
}

// journalState is a parsed journal.
type journalState struct {
	faults []*PendingFault // in order of intent
	closed map[int]bool
	bad    []error // malformed lines
}

func (s *journalState) pending() []PendingFault {
	var out []PendingFault
	for _, p := range s.faults {
		if !s.closed[p.ID] {
			out = append(out, *p)
		}
	}
	return out
}

func (s *journalState) err(path string) error {
	if len(s.bad) == 0 {
		return nil
	}
	return fmt.Errorf("journal %s: %w", path, errors.Join(s.bad...))
}

// parseJournal reads every line of data. A last line without its newline
// that does not parse is a torn write and is skipped silently.
func parseJournal(data []byte) *journalState {
	st := &journalState{closed: map[int]bool{}}
	byID := map[int]*PendingFault{}
	lineNo := 0
	for len(data) > 0 {
		lineNo++
		line := data
		torn := true
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			line, data, torn = data[:i], data[i+1:], false
		} else {
			data = nil
		}
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		var r record
		dec := json.NewDecoder(bytes.NewReader(line))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&r); err != nil {
			if !torn {
				st.bad = append(st.bad, fmt.Errorf("line %d: %w", lineNo, err))
			}
			continue
		}
		if err := st.apply(r, byID); err != nil {
			st.bad = append(st.bad, fmt.Errorf("line %d: %w", lineNo, err))
		}
	}
	return st
}

func (s *journalState) apply(r record, byID map[int]*PendingFault) error {
	if r.Op == opIntent {
		if _, dup := byID[r.Fault]; dup {
			return fmt.Errorf("fault %d begun twice", r.Fault)
		}
		p := &PendingFault{ID: r.Fault, Name: r.Name, Type: r.Type, Target: r.Target, BegunAt: r.Time, PID: r.PID}
		if r.Planned != nil {
			p.PlannedAt = *r.Planned
		}
		byID[r.Fault] = p
		s.faults = append(s.faults, p)
		return nil
	}
	p, ok := byID[r.Fault]
	if !ok {
		return fmt.Errorf("%s record for fault %d, which was never begun", r.Op, r.Fault)
	}
	switch r.Op {
	case opWill:
		if r.Spec == nil || r.Spec.Kind == "" {
			return fmt.Errorf("will record for fault %d without a spec", r.Fault)
		}
		p.Specs = append(p.Specs, *r.Spec)
	case opInjected:
		p.InjectedAt = r.Time
	case opFailed:
		s.closed[r.Fault] = true
	case opReverted:
		if r.OK != nil && *r.OK {
			s.closed[r.Fault] = true
		} else {
			p.LastError = r.Error
		}
	default:
		return fmt.Errorf("unknown op %q", r.Op)
	}
	return nil
}

// RecoverReport says what Recover did, fault by fault, in the order it
// reverted them (the reverse of the order they were begun).
type RecoverReport struct {
	Faults []RecoveredFault
}

// RecoveredFault is one pending fault and the outcome of replaying its specs.
type RecoveredFault struct {
	PendingFault
	// Err is nil when every spec was reverted; otherwise the joined errors.
	Err error
}

// Failed returns the faults whose revert failed.
func (r RecoverReport) Failed() []RecoveredFault {
	var out []RecoveredFault
	for _, f := range r.Faults {
		if f.Err != nil {
			out = append(out, f)
		}
	}
	return out
}

// Recover reverts what a killed run left applied: it opens the journal in
// dir (failing with ErrJournalBusy while the run still holds it), and for
// every pending fault, last begun first, replays its revert specs in reverse
// order through reverters (keyed by RevertSpec.Kind), then records the
// outcome in the journal. Reverters are idempotent, so a fault that was
// partly reverted, or a second Recover, is harmless; a fault reverted with
// success is no longer pending and is not replayed again. Every failure
// (an unknown kind, a reverter error, a malformed journal line) is joined
// into the returned error; the report lists each fault's outcome.
func Recover(ctx context.Context, dir string, reverters map[string]Reverter) (RecoverReport, error) {
	var rep RecoverReport
	if _, err := os.Stat(filepath.Join(dir, JournalFile)); errors.Is(err, fs.ErrNotExist) {
		return rep, nil
	}
	j, err := Open(dir)
	if err != nil {
		return rep, fmt.Errorf("recover: %w", err)
	}
	pend, perr := j.Pending()
	var errs []error
	if perr != nil {
		errs = append(errs, fmt.Errorf("recover: %w", perr))
	}
	for i := len(pend) - 1; i >= 0; i-- {
		p := pend[i]
		ferr := revertSpecs(ctx, p, reverters)
		e := &Entry{j: j, id: p.ID, name: p.Name}
		if werr := e.Reverted(ferr); werr != nil {
			ferr = errors.Join(ferr, werr)
		}
		rep.Faults = append(rep.Faults, RecoveredFault{PendingFault: p, Err: ferr})
		if ferr != nil {
			errs = append(errs, ferr)
		}
	}
	if cerr := j.Close(); cerr != nil {
		errs = append(errs, fmt.Errorf("recover: %w", cerr))
	}
	return rep, errors.Join(errs...)
}

// revertSpecs replays p's specs, last first, and joins their failures.
func revertSpecs(ctx context.Context, p PendingFault, reverters map[string]Reverter) error {
	var errs []error
	for k := len(p.Specs) - 1; k >= 0; k-- {
		s := p.Specs[k]
		rev, ok := reverters[s.Kind]
		if !ok {
			errs = append(errs, fmt.Errorf("fault %q: no reverter for revert spec kind %q (known: %s)", p.Name, s.Kind, knownKinds(reverters)))
			continue
		}
		if err := rev(ctx, s.Data); err != nil {
			errs = append(errs, fmt.Errorf("fault %q: revert %s %s: %w", p.Name, s.Kind, s.Data, err))
		}
	}
	return errors.Join(errs...)
}

func knownKinds(reverters map[string]Reverter) string {
	ks := make([]string, 0, len(reverters))
	for k := range reverters {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return strings.Join(ks, ", ")
}

// syncDir fsyncs directory dir, making a file created in it durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("sync directory: %w", err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("sync directory %s: %w", dir, err)
	}
	return nil
}
