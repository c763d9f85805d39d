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
// as llmchaos run records one: checked against its comparable runs, with
// the suite's labels over --label's. A regression under
// --fail-on-regression is remembered, and makes a suite that would exit 0
// exit 99 (see runSuite).
type suiteHistory struct {
	cfg       historyConfig
	text      report.TextOptions
	out, errw io.Writer
	regressed bool
}

var _ suite.Recorder = (*suiteHistory)(nil)

// RecordRun records doc. The history's own problems are warnings on
// stderr (as for run); the error it returns is a regression that
// --fail-on-regression makes a failure, so that the suite lists it too.
func (h *suiteHistory) RecordRun(ctx context.Context, doc *report.Document, labels map[string]string) error {
	cfg := h.cfg
	cfg.Labels = maps.Clone(h.cfg.Labels)
	if cfg.Labels == nil {
		cfg.Labels = map[string]string{}
	}
	maps.Copy(cfg.Labels, labels)
	result := cfg.finish(ctx, "llmchaos suite", doc, verdictResult(doc), h.text, h.out, h.errw)
	if cfg.FailOn && exitCodeOf(result) == exitcode.Thresholds && doc.Verdict == report.VerdictPass {
		h.regressed = true
		return errors.New("regressed against the history (--fail-on-regression)")
	}
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
