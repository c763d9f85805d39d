// Package netnstest creates throw-away network namespaces, joined by veth
// pairs, for tests that need a real kernel network stack (nftables rules,
// qdiscs). It shells out to `ip`, as an operator would, and deletes what it
// made in t.Cleanup. Tests that use it skip, with the reason, when they are
// not root or when `ip netns` does not work.
//
// Addresses are taken from 192.0.2.0/24 (TEST-NET-1) and fd00::/8 and exist
// only inside the namespaces a test created, so its traffic stays between
// them.
package netnstest
