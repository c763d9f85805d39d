package docker

import (
	"context"
	"net"

	"github.com/Microsoft/go-winio"
)

// dialPipe connects to the engine's named pipe (npipe:// hosts).
func dialPipe(ctx context.Context, name string) (net.Conn, error) {
	return winio.DialPipeContext(ctx, name)
}
