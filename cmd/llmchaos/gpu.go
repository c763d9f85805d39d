package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/llmchaos/llmchaos/faults/gpu"
	"github.com/llmchaos/llmchaos/internal/exitcode"
)

// gpuMonitorOptions is `llmchaos gpu-monitor`'s configuration.
type gpuMonitorOptions struct {
	Interval time.Duration
	Duration time.Duration // 0: until SIGTERM or Ctrl-C
	Once     bool
	Format   string // "jsonl" or "tsv"
}

func newGPUMonitorCmd() *cobra.Command {
	o := gpuMonitorOptions{Interval: gpu.DefaultMonitorInterval, Format: "jsonl"}
	cmd := &cobra.Command{
		Use:    "gpu-monitor",
		Hidden: true,
		Short:  "Print what NVML reads of every GPU at an interval",
		Long: `gpu-monitor reads every GPU through NVML (memory used, free and total,
utilisation, and the memory of each compute process) every --interval and
prints one line per GPU per reading: JSON (--format jsonl) or tab-separated
(--format tsv: unix_ms, gpu, used, free and total bytes, GPU and memory
utilisation in percent, and pid:bytes of each process, or "-"). It runs until
SIGTERM or Ctrl-C, for --duration, or for one reading with --once.

It needs a build with -tags nvml (and cgo). Without a GPU, or in a build
without NVML, it says why once and exits 5. scripts/gpu-check.sh uses it.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var errs []error
			if o.Interval <= 0 {
				errs = append(errs, fmt.Errorf("--interval %v: must be positive", o.Interval))
			}
			if o.Duration < 0 {
				errs = append(errs, fmt.Errorf("--duration %v: must not be negative", o.Duration))
			}
			if o.Format != "jsonl" && o.Format != "tsv" {
				errs = append(errs, fmt.Errorf("--format %q: want jsonl or tsv", o.Format))
			}
			if err := errors.Join(errs...); err != nil {
				return usageError(err)
			}
			return runGPUMonitor(cmd.Context(), o, cmd.OutOrStdout())
		},
	}
	fs := cmd.Flags()
	fs.DurationVar(&o.Interval, "interval", o.Interval, "time between readings")
	fs.DurationVar(&o.Duration, "duration", 0, "stop after this long (default: run until terminated)")
	fs.BoolVar(&o.Once, "once", false, "read every GPU once and exit")
	fs.StringVar(&o.Format, "format", o.Format, "output: jsonl or tsv")
	return cmd
}

// runGPUMonitor prints samples until ctx ends, the duration is over, or a
// write fails.
func runGPUMonitor(ctx context.Context, o gpuMonitorOptions, stdout io.Writer) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var werr error
	write := func(s gpu.Sample) {
		if werr != nil {
			return
		}
		if werr = writeSample(stdout, o.Format, s); werr != nil {
			cancel()
		}
	}
	// The reason there is no GPU comes back as the command's error, which
	// main prints once; no separate notice.
	m := gpu.OpenMonitor(gpu.MonitorOptions{Interval: o.Interval, OnSample: write})
	defer m.Close()
	if err := m.Err(); err != nil {
		return withCode(exitcode.NoGPU, err)
	}
	if o.Format == "tsv" {
		if _, err := fmt.Fprintln(stdout, "# unix_ms\tgpu\tused_bytes\tfree_bytes\ttotal_bytes\tutil_gpu\tutil_mem\tprocesses"); err != nil {
			return fmt.Errorf("gpu-monitor: %w", err)
		}
	}
	if o.Once {
		for _, s := range m.Sample() {
			write(s)
		}
	} else {
		if o.Duration > 0 {
			var stop context.CancelFunc
			ctx, stop = context.WithTimeout(ctx, o.Duration)
			defer stop()
		}
		if err := m.Run(ctx); err != nil {
			return fmt.Errorf("gpu-monitor: %w", err)
		}
	}
	if werr != nil {
		return fmt.Errorf("gpu-monitor: write: %w", werr)
	}
	return m.Close()
}

// writeSample writes s as one line in format.
func writeSample(w io.Writer, format string, s gpu.Sample) error {
	if format == "jsonl" {
		b, err := json.Marshal(s)
		if err != nil {
			return err
		}
		_, err = w.Write(append(b, '\n'))
		return err
	}
	procs := make([]string, 0, len(s.Processes))
	for _, p := range s.Processes {
		procs = append(procs, strconv.Itoa(p.PID)+":"+strconv.FormatInt(p.UsedBytes, 10))
	}
	ps := strings.Join(procs, ",")
	if ps == "" {
		ps = "-"
	}
	_, err := fmt.Fprintf(w, "%d\t%d\t%d\t%d\t%d\t%d\t%d\t%s\n", s.Time.UnixMilli(), s.GPU,
		s.MemoryUsed, s.MemoryFree, s.MemoryTotal, s.UtilGPU, s.UtilMemory, ps)
	return err
}
