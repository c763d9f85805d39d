//go:build !windows

package docker

import (
	"context"
	"fmt"
	"net"
)

// dialPipe fails: named pipes (npipe:// hosts) are Windows's.
func dialPipe(_ context.Context, name string) (net.Conn, error) {
	return nil, fmt.Errorf("docker host npipe://%s: named pipes are for Windows hosts", name)
}
