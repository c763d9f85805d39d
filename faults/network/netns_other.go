//go:build !linux

package network

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/llmchaos/llmchaos/faults"
)

// errNoKernelFaults says this platform has neither nftables nor tc qdiscs.
var errNoKernelFaults = fmt.Errorf("kernel-level network faults need Linux: %w", errors.ErrUnsupported)

func injectNFT(context.Context, faults.RevertLog, nftPlan) (faults.Undo, error) {
	return nil, errNoKernelFaults
}

func injectQdisc(context.Context, faults.RevertLog, NetnsTarget, any) (faults.Undo, error) {
	return nil, errNoKernelFaults
}

func revertNFTTable(context.Context, json.RawMessage) error { return errNoKernelFaults }

func revertQdisc(context.Context, json.RawMessage) error { return errNoKernelFaults }
