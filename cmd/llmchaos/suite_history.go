package main

import (
	"context"
	"errors"
	"io"
	"maps"

	"github.com/llmchaos/llmchaos/internal/exitcode"
	"github.com/llmchaos/llmchaos/report"
	"github.com/llmchaos/llmchaos/suite"
)

// suiteHistory records each experiment a suite runs into the run history,
// as llmchaos run records one: checked against its comparable runs before
// its reports are written (under --fail-on-regression a regression fails
// the experiment, so its status, reports and the suite's exit, 99, say
// it), with the suite's labels over --label's.
type suiteHistory struct {
	cfg       historyConfig
	text      report.TextOptions
	out, errw io.Writer
	pending   *historyCheck
}

var _ suite.Recorder = (*suiteHistory)(nil)

// CheckRun checks doc against the history (historyConfig.check).
func (h *suiteHistory) CheckRun(ctx context.Context, doc *report.Document, labels map[string]string) {
	cfg := h.cfg
	cfg.Labels = maps.Clone(h.cfg.Labels)
	if cfg.Labels == nil {
		cfg.Labels = map[string]string{}
	}
	maps.Copy(cfg.Labels, labels)
	h.pending = cfg.check(ctx, "llmchaos suite", doc, h.text, h.out, h.errw)
}

// RecordRun records doc, checked by CheckRun. The history's own problems
// are warnings on stderr (as for run).
func (h *suiteHistory) RecordRun(_ context.Context, doc *report.Document, _ map[string]string) error {
	p := h.pending
	h.pending = nil
	p.record(verdictResult(doc))
	return nil
}

// verdictResult is the command result a run with doc's verdict maps to,
// for the exit code the history records.
func verdictResult(doc *report.Document) error {
	switch doc.Verdict {
	case report.VerdictFail:
		return withCode(exitcode.Thresholds, errors.New("a threshold failed"))
	case report.VerdictAborted:
		return withCode(exitcode.Aborted, errors.New("aborted"))
	}
	return nil
}
