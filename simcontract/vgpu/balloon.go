package vgpu

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Balloon holds device memory on behalf of a fault until released, so that
// the service under test finds less free. Implementations: LedgerBalloon on a
// virtual GPU; a CUDA backend can hold real device memory behind the same
// interface. A Balloon is used by one goroutine at a time.
type Balloon interface {
	// Hold takes n more bytes, or nothing and an error when fewer are free.
	Hold(ctx context.Context, n int64) error
	// HoldAllBut takes everything free except leave bytes and returns how
	// much it took; it fails when no more than leave bytes are free.
	HoldAllBut(ctx context.Context, leave int64) (int64, error)
	// Free returns the bytes free on the device now.
	Free(ctx context.Context) (int64, error)
	// Release gives back everything the Balloon holds. It is idempotent.
	Release() error
}

var _ Balloon = (*LedgerBalloon)(nil)

// LedgerBalloon is a Balloon on a virtual GPU: its memory is a reservation in
// the device's ledger, held by the calling process (so it is freed for good
// when the process dies, as device memory is).
type LedgerBalloon struct {
	dev  *Device
	what string
}

// NewLedgerBalloon returns a Balloon that reserves on dev under the label
// what ("balloon" when empty).
func NewLedgerBalloon(dev *Device, what string) *LedgerBalloon {
	if what == "" {
		what = "balloon"
	}
	return &LedgerBalloon{dev: dev, what: what}
}

// Hold reserves n bytes on the device.
func (b *LedgerBalloon) Hold(ctx context.Context, n int64) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("balloon: %w", err)
	}
	if n <= 0 {
		return fmt.Errorf("balloon on vgpu %d: size %d: must be positive", b.dev.Index(), n)
	}
	return b.dev.Reserve(n, b.what)
}

// HoldAllBut reserves all free memory but leave bytes, atomically.
func (b *LedgerBalloon) HoldAllBut(ctx context.Context, leave int64) (int64, error) {
	if err := ctx.Err(); err != nil {
		return 0, fmt.Errorf("balloon: %w", err)
	}
	return b.dev.ReserveAllBut(leave, b.what)
}

// Free returns the device's free bytes.
func (b *LedgerBalloon) Free(context.Context) (int64, error) { return b.dev.Free() }

// Release drops the balloon's reservations.
func (b *LedgerBalloon) Release() error { return b.dev.Release() }

// KeepFree grows b so that no more than leave bytes stay free on its device,
// until ctx ends: every interval it takes whatever is free beyond leave (for
// example the memory of a replica that has just died), as a process that
// grabs device memory as soon as it is freed would. took is called with the
// size of each new reservation. It returns nil when ctx ends, or the first
// error other than "nothing beyond leave is free".
func KeepFree(ctx context.Context, b Balloon, leave int64, interval time.Duration, took func(int64)) error {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		n, err := b.HoldAllBut(ctx, leave)
		if _, ok := errors.AsType[*ReserveError](err); ok {
			continue
		}
		if ctx.Err() != nil {
			return nil
		}
		if err != nil {
			return err
		}
		if took != nil {
			took(n)
		}
	}
}
