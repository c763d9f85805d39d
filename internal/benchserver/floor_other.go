//go:build !linux

package benchserver

import (
	"errors"
	"net/http"
)

// Floor is the kernel-floor client; it uses epoll and exists on Linux only.
func Floor(base string, header http.Header, streams, perReq, requests int) (int64, error) {
	return 0, errors.New("the floor client needs Linux (epoll)")
}
