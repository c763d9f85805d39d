package recording

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/bits"
)

// Log-linear bucket layout of LogHistogram: values below 32 have a bucket
// each; above, every power of two is split into 32 equal buckets, so a bucket
// spans at most 1/32 of its lower bound and its midpoint is within 1/64
// (1.6%) of any value in it. Values above 2³²−1 µs (71 min) are clamped.
const (
	logSubBits = 5
	logSub     = 1 << logSubBits
	// LogBuckets is the number of buckets of a LogHistogram.
	LogBuckets  = (32 - logSubBits + 1) * logSub
	logMaxValue = 1<<32 - 1
)

// logBucket returns the bucket index of v (µs).
func logBucket(v int64) int {
	if v <= 0 {
		return 0
	}
	if v > logMaxValue {
		v = logMaxValue
	}
	u := uint64(v)
	if u < logSub {
		return int(u)
	}
	e := bits.Len64(u) - 1 // ≥ logSubBits
	sub := int(u>>(e-logSubBits)) - logSub
	return (e-logSubBits+1)*logSub + sub
}

// logBucketBounds returns the lowest value of bucket i and its width.
func logBucketBounds(i int) (lower, width int64) {
	if i < logSub {
		return int64(i), 1
	}
	e := i/logSub + logSubBits - 1
	sub := int64(i % logSub)
	shift := e - logSubBits
	return (logSub + sub) << shift, 1 << shift
}

// logBucketValue is the value reported for bucket i: its midpoint.
func logBucketValue(i int) int64 {
	lower, width := logBucketBounds(i)
	return lower + (width-1)/2
}

// LogHistogram is a low-precision, mergeable histogram of non-negative
// values (µs) used by the per-second time series: it answers percentiles
// within 1.6% relative error (exact below 64). The time series stores each
// second sparsely and merges seconds into a LogHistogram for a window. The
// zero value is empty and ready to use; it is not safe for concurrent use.
type LogHistogram struct {
	counts [LogBuckets]uint64
	total  uint64
}

// Record adds one value; negative values count as 0.
func (h *LogHistogram) Record(v int64) { h.RecordN(v, 1) }

// RecordN adds n occurrences of v.
func (h *LogHistogram) RecordN(v int64, n uint64) {
	h.counts[logBucket(v)] += n
	h.total += n
}

func (h *LogHistogram) addBucket(b int, n uint64) {
	h.counts[b] += n
	h.total += n
}

// Merge adds every value of o to h.
func (h *LogHistogram) Merge(o *LogHistogram) {
	if o == nil || o.total == 0 {
		return
	}
	for i, c := range o.counts {
		h.counts[i] += c
	}
	h.total += o.total
}

// Reset empties h.
func (h *LogHistogram) Reset() { *h = LogHistogram{} }

// Count is the number of recorded values.
func (h *LogHistogram) Count() int64 { return int64(h.total) }

// ValueAtPercentile returns the value at percentile p (0 … 100) by HDR's rule
// (rank = p/100·count + 0.5 rounded down, at least 1), as its bucket's
// midpoint; 0 when empty.
func (h *LogHistogram) ValueAtPercentile(p float64) int64 {
	if h.total == 0 {
		return 0
	}
	rank := percentileRank(p, h.total)
	var seen uint64
	for i, c := range h.counts {
		seen += c
		if seen >= rank {
			return logBucketValue(i)
		}
	}
	return logBucketValue(LogBuckets - 1)
}

// percentileRank mirrors hdrhistogram-go's rank so windows and run-level
// percentiles agree on small samples.
func percentileRank(p float64, total uint64) uint64 {
	if p > 100 {
		p = 100
	}
	r := p/100*float64(total) + 0.5
	if !(r >= 1) {
		return 1
	}
	if r >= float64(total) {
		return total
	}
	return uint64(r)
}

// Mean returns the mean of the bucket midpoints weighted by their counts;
// 0 when empty.
func (h *LogHistogram) Mean() float64 {
	if h.total == 0 {
		return 0
	}
	var sum float64
	for i, c := range h.counts {
		if c != 0 {
			sum += float64(c) * float64(logBucketValue(i))
		}
	}
	return sum / float64(h.total)
}

// Min returns the midpoint of the lowest populated bucket; 0 when empty.
func (h *LogHistogram) Min() int64 {
	for i, c := range h.counts {
		if c != 0 {
			return logBucketValue(i)
		}
	}
	return 0
}

// Max returns the midpoint of the highest populated bucket; 0 when empty.
func (h *LogHistogram) Max() int64 {
	for i := LogBuckets - 1; i >= 0; i-- {
		if h.counts[i] != 0 {
			return logBucketValue(i)
		}
	}
	return 0
}

// numSecondMetrics is the number of metrics kept per second: ttft, e2e,
// itl and tpot, in that (encoding) order.
const numSecondMetrics = 4

// secondSlot maps a metric to its per-second slot; ok is false for metrics
// not kept per second.
func secondSlot(m Metric) (int, bool) {
	switch m {
	case MetricTTFT:
		return 0, true
	case MetricE2E:
		return 1, true
	case MetricITL:
		return 2, true
	case MetricTPOT:
		return 3, true
	}
	return 0, false
}

// secondHists is the dense form of one open second: small counts, so uint32.
type secondHists [numSecondMetrics][LogBuckets]uint32

// secondEncodingVersion is the first byte of an encoded second.
const secondEncodingVersion = 1

// encodeSecond packs the four histograms of one second: a version byte, then
// for ttft, e2e, itl, tpot in turn the number of populated buckets (uvarint)
// followed by (bucket index − previous index − 1, count) uvarint pairs. An
// all-empty second encodes as nil. buf is scratch space; the grown scratch is
// returned for reuse along with a fresh, exactly sized packed slice.
func encodeSecond(d *secondHists, buf []byte) (packed, scratch []byte) {
	buf = buf[:0]
	empty := true
	for m := range d {
		for _, c := range d[m] {
			if c != 0 {
				empty = false
				break
			}
		}
	}
	if empty {
		return nil, buf
	}
	buf = append(buf, secondEncodingVersion)
	for m := range d {
		n := 0
		for _, c := range d[m] {
			if c != 0 {
				n++
			}
		}
		buf = binary.AppendUvarint(buf, uint64(n))
		prev := -1
		for i, c := range d[m] {
			if c == 0 {
				continue
			}
			buf = binary.AppendUvarint(buf, uint64(i-prev-1))
			buf = binary.AppendUvarint(buf, uint64(c))
			prev = i
		}
	}
	packed = make([]byte, len(buf))
	copy(packed, buf)
	return packed, buf
}

var errSecondEncoding = errors.New("malformed per-second histogram encoding")

// walkSecond calls fn for every populated bucket of an encoded second.
func walkSecond(enc []byte, fn func(slot, bucket int, count uint64)) error {
	if len(enc) == 0 {
		return nil
	}
	if enc[0] != secondEncodingVersion {
		return fmt.Errorf("%w: version %d, want %d", errSecondEncoding, enc[0], secondEncodingVersion)
	}
	p := enc[1:]
	next := func() (uint64, error) {
		v, n := binary.Uvarint(p)
		if n <= 0 {
			return 0, fmt.Errorf("%w: truncated", errSecondEncoding)
		}
		p = p[n:]
		return v, nil
	}
	for slot := range numSecondMetrics {
		n, err := next()
		if err != nil {
			return err
		}
		if n > LogBuckets {
			return fmt.Errorf("%w: %d buckets", errSecondEncoding, n)
		}
		idx := -1
		for range n {
			delta, err := next()
			if err != nil {
				return err
			}
			count, err := next()
			if err != nil {
				return err
			}
			if delta >= LogBuckets || count == 0 || count > math.MaxUint32 {
				return fmt.Errorf("%w: bad bucket", errSecondEncoding)
			}
			idx += int(delta) + 1
			if idx >= LogBuckets {
				return fmt.Errorf("%w: bucket %d out of range", errSecondEncoding, idx)
			}
			fn(slot, idx, count)
		}
	}
	if len(p) != 0 {
		return fmt.Errorf("%w: %d trailing bytes", errSecondEncoding, len(p))
	}
	return nil
}
