package wire

import (
	"bytes"
	"math"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
)

// TestAppendMessageMovesTheBodyForItsLength: a nested message is written
// body first and gets the varint length protobuf puts before it, also when
// the length takes more than one byte; protowire's reader reads it back.
func TestAppendMessageMovesTheBodyForItsLength(t *testing.T) {
	t.Parallel()
	for _, n := range []int{0, 1, 127, 128, 20000} {
		s := strings.Repeat("x", n)
		b := AppendMessage([]byte{0xff}, 3, func(b []byte) []byte {
			b = AppendString(b, 1, s)
			b = AppendDouble(b, 2, 1.5)
			return AppendUvarint(b, 4, math.MaxUint64)
		})
		if b[0] != 0xff {
			t.Fatalf("n=%d: the bytes before the message changed", n)
		}
		num, typ, m := protowire.ConsumeTag(b[1:])
		if num != 3 || typ != protowire.BytesType || m < 0 {
			t.Fatalf("n=%d: tag %d %d (%d)", n, num, typ, m)
		}
		body, k := protowire.ConsumeBytes(b[1+m:])
		if k < 0 || 1+m+k != len(b) {
			t.Fatalf("n=%d: length-delimited body not the rest of the bytes (%d)", n, k)
		}
		want := AppendUvarint(AppendDouble(AppendString(nil, 1, s), 2, 1.5), 4, math.MaxUint64)
		if !bytes.Equal(body, want) {
			t.Errorf("n=%d: body differs from its fields written alone", n)
		}
		_, _, m = protowire.ConsumeTag(want)
		if got, _ := protowire.ConsumeString(want[m:]); got != s {
			t.Errorf("n=%d: string field read back as %d bytes", n, len(got))
		}
	}
}
