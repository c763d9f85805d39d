// Package faults owns the Fault contract (Inject returns an idempotent Undo),
// the write-ahead journal that lets a crashed run be reverted, and the rules
// for choosing targets. One sub-package per fault family: faults/network,
// faults/replica, faults/gpu.
package faults
