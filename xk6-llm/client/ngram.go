package client

// ngramN is the n-gram length used for repetition_rate: word 4-grams.
const ngramN = 4

// ngramMaxSlots caps one response's n-gram set (4 bytes a slot, so 128 KiB,
// about 16k distinct 4-grams). Past the cap new n-grams are still counted
// and looked up but no longer remembered, so repeats of n-grams first seen
// beyond that point go uncounted; memory stays bounded with thousands of
// concurrent streams.
const ngramMaxSlots = 1 << 15

// ngramKeepSlots is the largest set kept across requests by reset.
const ngramKeepSlots = 1 << 12

// ngramCounter counts the word 4-grams of a streamed response and how many
// of them had already occurred earlier in the same response. Words are runs
// of bytes between ASCII whitespace, compared exactly, and may span chunks.
// It keeps one 64-bit hash per word of context and a small open-addressing
// set of 32-bit n-gram hashes, so a chunk costs a hash step per byte and
// no allocation (the set grows by doubling).
type ngramCounter struct {
	word   uint64 // FNV-1a of the word in progress
	inWord bool
	last   [ngramN - 1]uint64 // hashes of the last completed words, oldest first
	words  int

	set  []uint32 // 0 marks an empty slot
	used int

	total, repeated int
}

const (
	ngramFNVOffset = 14695981039346656037
	ngramFNVPrime  = 1099511628211
)

// write feeds output text.
func (n *ngramCounter) write(b []byte) {
	for _, c := range b {
		if c == ' ' || c == '\n' || c == '\t' || c == '\r' || c == '\v' || c == '\f' {
			if n.inWord {
				n.endWord()
			}
			continue
		}
		if !n.inWord {
			n.inWord = true
			n.word = ngramFNVOffset
		}
		n.word = (n.word ^ uint64(c)) * ngramFNVPrime
	}
}

// finish ends the last word; call it once at the end of the response.
func (n *ngramCounter) finish() {
	if n.inWord {
		n.endWord()
	}
}

func (n *ngramCounter) endWord() {
	w := n.word
	n.inWord = false
	n.words++
	if n.words >= ngramN {
		n.add(n.last[0], n.last[1], n.last[2], w)
	}
	n.last[0], n.last[1], n.last[2] = n.last[1], n.last[2], w
}

// add records one n-gram given its words' hashes.
func (n *ngramCounter) add(a, b, c, d uint64) {
	h := a
	h = (h^(b>>29|b<<35))*0x9E3779B97F4A7C15 + 1
	h = (h^(c>>17|c<<47))*0xC2B2AE3D27D4EB4F + 1
	h = (h^(d>>41|d<<23))*0x165667B19E3779F9 + 1
	h ^= h >> 32
	k := uint32(h)
	if k == 0 {
		k = 1
	}
	n.total++
	if n.set == nil {
		n.set = make([]uint32, 256)
	}
	if n.used*2 >= len(n.set) && len(n.set) < ngramMaxSlots {
		n.grow()
	}
	mask := uint32(len(n.set) - 1)
	for i := (k * 0x9E3779B1) & mask; ; i = (i + 1) & mask {
		switch n.set[i] {
		case k:
			n.repeated++
			return
		case 0:
			if n.used*4 < len(n.set)*3 { // past the cap, stop inserting at 3/4 full
				n.set[i] = k
				n.used++
			}
			return
		}
	}
}

func (n *ngramCounter) grow() {
	old := n.set
	n.set = make([]uint32, 2*len(old))
	mask := uint32(len(n.set) - 1)
	for _, k := range old {
		if k == 0 {
			continue
		}
		i := (k * 0x9E3779B1) & mask
		for n.set[i] != 0 {
			i = (i + 1) & mask
		}
		n.set[i] = k
	}
}

// reset prepares the counter for a new response, keeping a small set.
func (n *ngramCounter) reset() {
	set := n.set
	if len(set) > ngramKeepSlots {
		set = nil
	} else {
		clear(set)
	}
	*n = ngramCounter{set: set}
}
