package vgpu

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/sys/unix"
)

// File names inside a device directory.
const (
	lockName     = "lock"
	capacityName = "capacity"
	entryPrefix  = "r-"
	tmpPrefix    = ".tmp-"
)

// Device is one process's handle on a virtual GPU. It satisfies the
// simulator's Memory interface (Reserve, Free, Total, Release) without
// importing it. A Device is safe for concurrent use; several Devices, in one
// process or many, may share a device directory.
type Device struct {
	dir   string
	index int
	total int64
	self  procID
	lock  *os.File // flock target; open for the Device's life

	mu   sync.Mutex
	held []heldEntry // this Device's reservations
}

type heldEntry struct {
	name  string
	bytes int64
}

// entry is one reservation file as listed from the directory.
type entry struct {
	name  string
	id    procID
	bytes int64
}

// Open opens virtual GPU index under dir (dir/gpu-INDEX), creating it when
// needed. The first opener records total as the device's capacity; a later
// opener must pass the same total (else *CapacityError) or total <= 0 to
// adopt the recorded one.
func Open(dir string, index int, total int64) (*Device, error) {
	if index < 0 {
		return nil, fmt.Errorf("vgpu index %d: must be 0 or more", index)
	}
	self, err := selfID()
	if err != nil {
		return nil, fmt.Errorf("vgpu: %w", err)
	}
	gdir := filepath.Join(dir, "gpu-"+strconv.Itoa(index))
	if err := os.MkdirAll(gdir, 0o755); err != nil {
		return nil, fmt.Errorf("vgpu %d: create %s: %w", index, gdir, err)
	}
	lf, err := os.OpenFile(filepath.Join(gdir, lockName), os.O_RDONLY|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("vgpu %d: open lock file: %w", index, err)
	}
	d := &Device{dir: gdir, index: index, self: self, lock: lf}
	if err := d.withLock(func() error {
		rec, err := d.readCapacity()
		switch {
		case err != nil:
			return err
		case rec > 0 && total > 0 && rec != total:
			return &CapacityError{Dir: gdir, GPU: index, Recorded: rec, Asked: total}
		case rec > 0:
			d.total = rec
			return nil
		case total <= 0:
			return fmt.Errorf("vgpu %d in %s has no capacity on record yet: give its size (--gpu-memory)", index, gdir)
		}
		d.total = total
		return d.writeFile(capacityName, strconv.FormatInt(total, 10)+"\n")
	}); err != nil {
		lf.Close()
		return nil, err
	}
	return d, nil
}

// Index returns the device's index.
func (d *Device) Index() int { return d.index }

// Dir returns the device's directory (dir/gpu-INDEX).
func (d *Device) Dir() string { return d.dir }

// Total returns the device's capacity in bytes.
func (d *Device) Total() int64 { return d.total }

// Free returns the bytes free on the device now: capacity minus the
// reservations of every live process. It takes no lock.
func (d *Device) Free() (int64, error) {
	entries, err := d.scan(false)
	if err != nil {
		return 0, err
	}
	return d.freeOf(entries), nil
}

func (d *Device) freeOf(entries []entry) int64 {
	free := d.total
	for _, e := range entries {
		free -= e.bytes
	}
	return max(free, 0)
}

// Reserve holds n bytes for what until Release. It fails with *ReserveError,
// holding nothing, when fewer than n bytes are free; check and reservation are
// one atomic step across processes.
func (d *Device) Reserve(n int64, what string) error {
	if n < 0 {
		return fmt.Errorf("vgpu %d: reserve %d bytes for %s: size must not be negative", d.index, n, what)
	}
	if n == 0 {
		return nil
	}
	_, err := d.reserve(func(free int64) (int64, bool) { return n, n <= free }, what)
	return err
}

// ReserveAllBut holds everything free except leave bytes, in one atomic step,
// and returns how much it took. It fails with *ReserveError when no more than
// leave bytes are free.
func (d *Device) ReserveAllBut(leave int64, what string) (int64, error) {
	if leave < 0 {
		return 0, fmt.Errorf("vgpu %d: leave %d bytes free: must not be negative", d.index, leave)
	}
	return d.reserve(func(free int64) (int64, bool) {
		if free <= leave {
			return leave + 1, false // report the least that would have worked
		}
		return free - leave, true
	}, what)
}

// reserve runs size (the free bytes → bytes to take, ok) under the device lock
// and records the reservation.
func (d *Device) reserve(size func(free int64) (int64, bool), what string) (int64, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	var took int64
	err := d.withLock(func() error {
		entries, err := d.scan(true)
		if err != nil {
			return err
		}
		free := d.freeOf(entries)
		n, ok := size(free)
		if !ok {
			hs, _ := d.holders(entries)
			return &ReserveError{GPU: d.index, What: what, Need: n, Free: free, Total: d.total, Holders: hs}
		}
		name, err := d.writeEntry(n, what)
		if err != nil {
			return err
		}
		d.held = append(d.held, heldEntry{name: name, bytes: n})
		took = n
		return nil
	})
	return took, err
}

// Held returns the bytes this Device holds.
func (d *Device) Held() int64 {
	d.mu.Lock()
	defer d.mu.Unlock()
	var n int64
	for _, h := range d.held {
		n += h.bytes
	}
	return n
}

// Release drops every reservation this Device holds. It is idempotent.
func (d *Device) Release() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	var errs []error
	for _, h := range d.held {
		if err := os.Remove(filepath.Join(d.dir, h.name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	d.held = nil
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("vgpu %d: release: %w", d.index, err)
	}
	return nil
}

// Close releases the Device's reservations and closes its lock file.
func (d *Device) Close() error {
	return errors.Join(d.Release(), d.lock.Close())
}

// Holders lists the live reservations on the device, by pid.
func (d *Device) Holders() ([]Holder, error) {
	entries, err := d.scan(false)
	if err != nil {
		return nil, err
	}
	return d.holders(entries)
}

func (d *Device) holders(entries []entry) ([]Holder, error) {
	hs := make([]Holder, 0, len(entries))
	var errs []error
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(d.dir, e.name))
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
		}
		hs = append(hs, Holder{PID: e.id.pid, Bytes: e.bytes, What: strings.TrimSpace(string(b))})
	}
	sort.Slice(hs, func(i, j int) bool {
		if hs[i].PID != hs[j].PID {
			return hs[i].PID < hs[j].PID
		}
		return hs[i].What < hs[j].What
	})
	if err := errors.Join(errs...); err != nil {
		return hs, fmt.Errorf("vgpu %d: read holders: %w", d.index, err)
	}
	return hs, nil
}

// scan lists the live reservations. With sweep (only under the device lock)
// it also removes the files of dead processes.
func (d *Device) scan(sweep bool) ([]entry, error) {
	f, err := os.Open(d.dir)
	if err != nil {
		return nil, fmt.Errorf("vgpu %d: %w", d.index, err)
	}
	names, err := f.Readdirnames(-1)
	f.Close()
	if err != nil {
		return nil, fmt.Errorf("vgpu %d: list %s: %w", d.index, d.dir, err)
	}
	liveness := map[procID]bool{d.self: true}
	isLive := func(id procID) bool {
		l, ok := liveness[id]
		if !ok {
			l = id.live()
			liveness[id] = l
		}
		return l
	}
	entries := make([]entry, 0, len(names))
	for _, name := range names {
		switch {
		case strings.HasPrefix(name, entryPrefix):
			e, ok := parseEntry(name)
			if !ok {
				continue // not ours; never counted
			}
			if isLive(e.id) {
				entries = append(entries, e)
			} else if sweep {
				os.Remove(filepath.Join(d.dir, name)) // best effort: a dead entry does not count anyway
			}
		case sweep && strings.HasPrefix(name, tmpPrefix):
			if id, ok := parseTmp(name); ok && !isLive(id) {
				os.Remove(filepath.Join(d.dir, name))
			}
		}
	}
	return entries, nil
}

// writeEntry creates the reservation file r-PID-START-BYTES-UNIQUE holding
// what; it appears whole (temp file, then rename).
func (d *Device) writeEntry(n int64, what string) (string, error) {
	prefix := fmt.Sprintf("%s%d-%d-", tmpPrefix, d.self.pid, d.self.start)
	tmp, err := os.CreateTemp(d.dir, prefix+"*")
	if err != nil {
		return "", fmt.Errorf("vgpu %d: reserve: %w", d.index, err)
	}
	unique := strings.TrimPrefix(filepath.Base(tmp.Name()), prefix)
	_, werr := tmp.WriteString(what + "\n")
	cerr := tmp.Close()
	if err := errors.Join(werr, cerr); err != nil {
		os.Remove(tmp.Name())
		return "", fmt.Errorf("vgpu %d: reserve: %w", d.index, err)
	}
	name := fmt.Sprintf("%s%d-%d-%d-%s", entryPrefix, d.self.pid, d.self.start, n, unique)
	if err := os.Rename(tmp.Name(), filepath.Join(d.dir, name)); err != nil {
		os.Remove(tmp.Name())
		return "", fmt.Errorf("vgpu %d: reserve: %w", d.index, err)
	}
	return name, nil
}

// parseEntry parses r-PID-START-BYTES-UNIQUE.
func parseEntry(name string) (entry, bool) {
	f := strings.SplitN(strings.TrimPrefix(name, entryPrefix), "-", 4)
	if len(f) != 4 {
		return entry{}, false
	}
	pid, err1 := strconv.Atoi(f[0])
	start, err2 := strconv.ParseUint(f[1], 10, 64)
	n, err3 := strconv.ParseInt(f[2], 10, 64)
	if err1 != nil || err2 != nil || err3 != nil || pid <= 0 || n < 0 {
		return entry{}, false
	}
	return entry{name: name, id: procID{pid: pid, start: start}, bytes: n}, true
}

// parseTmp parses the owner of a temp file .tmp-PID-START-UNIQUE.
func parseTmp(name string) (procID, bool) {
	f := strings.SplitN(strings.TrimPrefix(name, tmpPrefix), "-", 3)
	if len(f) != 3 {
		return procID{}, false
	}
	pid, err1 := strconv.Atoi(f[0])
	start, err2 := strconv.ParseUint(f[1], 10, 64)
	if err1 != nil || err2 != nil {
		return procID{}, false
	}
	return procID{pid: pid, start: start}, true
}

// withLock runs fn under the exclusive cross-process lock of the device.
func (d *Device) withLock(fn func() error) error {
	fd := int(d.lock.Fd())
	for {
		err := unix.Flock(fd, unix.LOCK_EX)
		if err == nil {
			break
		}
		if !errors.Is(err, unix.EINTR) {
			return fmt.Errorf("vgpu %d: lock %s: %w", d.index, d.lock.Name(), err)
		}
	}
	defer unix.Flock(fd, unix.LOCK_UN) //nolint:errcheck // closing or exiting drops the lock too
	return fn()
}

// readCapacity returns the recorded capacity, or 0 when none is recorded.
func (d *Device) readCapacity() (int64, error) {
	p := filepath.Join(d.dir, capacityName)
	b, err := os.ReadFile(p)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("vgpu %d: read capacity: %w", d.index, err)
	}
	n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("vgpu %d: %s holds %q, want a positive byte count: remove the directory to start afresh", d.index, p, b)
	}
	return n, nil
}

// writeFile writes name in the device directory atomically (temp + rename).
func (d *Device) writeFile(name, content string) error {
	tmp, err := os.CreateTemp(d.dir, fmt.Sprintf("%s%d-%d-", tmpPrefix, d.self.pid, d.self.start)+"*")
	if err != nil {
		return fmt.Errorf("vgpu %d: write %s: %w", d.index, name, err)
	}
	_, werr := tmp.WriteString(content)
	cerr := tmp.Close()
	if err := errors.Join(werr, cerr); err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("vgpu %d: write %s: %w", d.index, name, err)
	}
	if err := os.Rename(tmp.Name(), filepath.Join(d.dir, name)); err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("vgpu %d: write %s: %w", d.index, name, err)
	}
	return nil
}
