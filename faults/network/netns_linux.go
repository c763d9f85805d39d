package network

import (
	"context"
	"errors"
	"fmt"
	"io/fs"

	"github.com/vishvananda/netns"
)

// errNetnsGone says a namespace no longer exists (or was replaced by another
// one under the same name): whatever llmchaos put in it went with it.
var errNetnsGone = errors.New("network namespace is gone")

// hostNetnsFile is the namespace of pid 1: the host's, unless llmchaos runs
// in a container.
const hostNetnsFile = "/proc/1/ns/net"

// openNetns opens the namespace file at path ("" for llmchaos's own). When
// id is not empty the namespace must still be the one id names
// (NsHandle.UniqueId): for a path, another one there means ours is gone
// (errNetnsGone); for llmchaos's own namespace it means this process runs
// elsewhere than the one that recorded id, which is an error.
func openNetns(path, id string) (netns.NsHandle, error) {
	var (
		h   netns.NsHandle
		err error
	)
	if path == "" {
		// The calling goroutine is not locked to a thread, and llmchaos never
		// leaves a thread in another namespace, so this is the process's own.
		h, err = netns.Get()
	} else {
		h, err = netns.GetFromPath(path)
	}
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return netns.None(), fmt.Errorf("%s: %w", path, errNetnsGone)
		}
		return netns.None(), fmt.Errorf("open network namespace %q: %w", path, err)
	}
	if got := h.UniqueId(); id != "" && got != id {
		_ = h.Close()
		if path == "" {
			return netns.None(), fmt.Errorf("this process runs in network namespace %s, but the change was made in %s: "+
				"run the revert from the namespace the run was in", got, id)
		}
		return netns.None(), fmt.Errorf("%s is now %s, not %s: %w", path, got, id, errNetnsGone)
	}
	return h, nil
}

// withNetns runs fn in the namespace a revert spec recorded (path and id,
// as openNetns takes them) and closes it after; it checks ctx first. A
// namespace that is gone counts as reverted: fn is not called and withNetns
// returns nil, since whatever llmchaos put in it went with it.
func withNetns(ctx context.Context, path, id string, fn func(netns.NsHandle) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	ns, err := openNetns(path, id)
	if errors.Is(err, errNetnsGone) {
		return nil
	}
	if err != nil {
		return err
	}
	defer ns.Close()
	return fn(ns)
}

// openTarget opens t's namespace for an Inject. A target that resolves to
// llmchaos's own namespace or the host's (pid 1's), however it was named
// (e.g. /proc/self/ns/net), needs AllowRootNamespace.
func openTarget(t NetnsTarget) (netns.NsHandle, error) {
	h, err := openNetns(t.nsPath(), "")
	if err != nil {
		return h, err
	}
	if t.AllowRootNamespace {
		return h, nil
	}
	id := h.UniqueId()
	for _, probe := range []struct {
		name string
		open func() (netns.NsHandle, error)
	}{
		{"the namespace llmchaos runs in", netns.Get},
		{"the host's namespace (" + hostNetnsFile + ")", func() (netns.NsHandle, error) { return netns.GetFromPath(hostNetnsFile) }},
	} {
		other, err := probe.open()
		if err != nil {
			continue // pid 1's may be out of reach; llmchaos's own never is
		}
		same := other.UniqueId() == id
		_ = other.Close()
		if same {
			_ = h.Close()
			return netns.None(), fmt.Errorf("netns %q is %s; set allow_root_namespace: true (and leave netns empty) "+
				"if you really mean to act on it", t.Netns, probe.name)
		}
	}
	return h, nil
}
