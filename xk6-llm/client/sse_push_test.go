package client

import (
	"bytes"
	"errors"
	"io"
	"reflect"
	"testing"
)

// ssePushAll decodes in through the push API (the event loop's), pushing
// it in pieces whose sizes come from sizes as sseSplitReader does, and
// draining the events after each push.
func ssePushAll(in, sizes []byte, maxLine int) ([]sseRefEvent, error) {
	var d SSEDecoder
	d.ResetPush(maxLine, 16)
	var got []sseRefEvent
	drain := func() error {
		for {
			ev, err := d.Next()
			if err != nil {
				return err
			}
			got = append(got, sseRefEvent{Type: string(ev.Type), Data: string(ev.Data), ID: string(ev.ID)})
		}
	}
	for k := 0; len(in) > 0; k++ {
		n := len(in)
		if len(sizes) > 0 {
			n = min(1+int(sizes[k%len(sizes)])%17, len(in))
		}
		d.Push(in[:n])
		in = in[n:]
		if err := drain(); !errors.Is(err, errSSEMore) {
			return got, err
		}
	}
	d.PushEOF()
	return got, drain()
}

func TestSSEPushMatchesPull(t *testing.T) {
	for _, in := range []string{
		"data: a\n\ndata: b\n\n",
		"data: a\r\n\r\ndata: b\r\rdata: c\n\r\n",
		"\uFEFFdata: a\n\n",
		": c\nevent: x\nid: 1\ndata: a\ndata: b\n\n",
		"data: a\n\ndata: b",
		"data: " + string(bytes.Repeat([]byte("x"), 5000)) + "\n\ndata: [DONE]\n\n",
	} {
		for _, sizes := range [][]byte{nil, {0}, {3, 7, 1}, {16}} {
			got, err := ssePushAll([]byte(in), sizes, 0)
			if !errors.Is(err, io.EOF) {
				t.Fatalf("%q split %v: err %v, want io.EOF", in, sizes, err)
			}
			want, _ := sseDecodeAll(bytes.NewReader([]byte(in)), 0)
			if !reflect.DeepEqual(got, want) {
				t.Errorf("%q split %v: push %q, pull %q", in, sizes, got, want)
			}
		}
	}
}

func TestSSEPushTooLong(t *testing.T) {
	in := append([]byte("data: "), bytes.Repeat([]byte("x"), 3000)...)
	_, err := ssePushAll(in, []byte{16}, 1024)
	if !errors.Is(err, ErrSSETooLong) {
		t.Fatalf("err %v, want ErrSSETooLong", err)
	}
}

func FuzzSSEPush(f *testing.F) {
	for _, s := range []string{
		"data: {\"choices\":[{\"delta\":{\"content\":\"hi\"}}]}\n\ndata: [DONE]\n\n",
		"data: a\r\n\r\ndata: b\r\rdata: c\n\r\n",
		": comment\nevent: x\nid: 1\ndata: a\ndata: b\n\n",
		"\uFEFFdata:a\n\ndata",
	} {
		f.Add([]byte(s), []byte{0, 3, 7, 1})
	}
	f.Fuzz(func(t *testing.T, in, sizes []byte) {
		want := sseRefDecode(in)
		got, err := ssePushAll(bytes.Clone(in), sizes, 0)
		if !errors.Is(err, io.EOF) {
			t.Fatalf("err = %v, want io.EOF", err)
		}
		if len(got) == 0 && len(want) == 0 {
			return
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("input %q pushed in %v:\n got %q\nwant %q", in, sizes, got, want)
		}
	})
}
