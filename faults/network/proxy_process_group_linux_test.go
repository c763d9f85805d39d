package network

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// TestProxyProcessOwnProcessGroup: the proxy helper leads a process group
// of its own, so a Ctrl-C at the terminal (SIGINT to the runner's group)
// does not reach it and the runner can revert through it.
func TestProxyProcessOwnProcessGroup(t *testing.T) {
	srv := startTCPServer(t, func(c net.Conn) { c.Close() })
	ctx := context.Background()
	pp, err := StartProxyProcess(ctx, &recordLog{}, ProcessConfig{Proxy: Config{Upstream: srv.addr()}, Control: filepath.Join(t.TempDir(), "p.sock")},
		ProcessOptions{Command: helperCommand(), Env: helperEnv(), Stderr: os.Stderr})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := pp.Stop(ctx); err != nil {
			t.Error(err)
		}
	})
	pid := pp.cmd.Process.Pid
	pgid, err := unix.Getpgid(pid)
	if err != nil {
		t.Fatal(err)
	}
	if own := unix.Getpgrp(); pgid != pid || pgid == own {
		t.Errorf("proxy helper %d is in process group %d (the test's is %d), want a group of its own", pid, pgid, own)
	}
}
