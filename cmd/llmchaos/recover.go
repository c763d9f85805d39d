package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/spf13/cobra"

	"github.com/llmchaos/llmchaos/experiments/spec"
	"github.com/llmchaos/llmchaos/faults"
	"github.com/llmchaos/llmchaos/internal/exitcode"
)

// defaultRunsDir is where `llmchaos run` puts run directories by default,
// and where recover looks when no --run-dir is given.
const defaultRunsDir = "runs"

// recoverTimeout bounds the whole replay.
const recoverTimeout = 5 * time.Minute

func newRecoverCmd() *cobra.Command {
	var (
		dir   string
		guard bool
	)
	cmd := &cobra.Command{
		Use:   "recover",
		Short: "Revert what a killed run left applied, from its journal",
		Long: `recover replays the write-ahead journal of a run that did not end by itself
(kill -9, a crash, a power cut): every fault, proxy, balloon and simulator the
journal shows started and not reverted is reverted, last started first, and the
outcome is written back to the journal. Reverting is idempotent, so running it
twice, or on a run that ended normally, does no harm.

Without --run-dir it takes the most recently changed run directory under
runs/.

It refuses to touch a run that is still going (its journal is locked).

Exit codes: 0 everything is reverted (or nothing was pending); 97 something
could not be reverted (each failure is printed); 1 the journal could not be
read or the run is still going; 2 bad flags, or a --run-dir that does not
exist or holds no journal.`,
		Example: `  llmchaos recover --run-dir runs/quickstart-20260101-120000`,
		Args:    usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if guard {
				if dir == "" {
					return usageError(errors.New("--guard needs --run-dir"))
				}
				return runGuard(cmd.Context(), dir, cmd.InOrStdin(), cmd.OutOrStdout())
			}
			return runRecover(cmd.Context(), dir, cmd.OutOrStdout())
		},
	}
	cmd.Flags().StringVar(&dir, "run-dir", "", "run directory whose journal to replay (default: the latest under runs/)")
	cmd.Flags().BoolVar(&guard, "guard", false, "dead-man's switch started by `llmchaos run`: wait for \"done\" on stdin; at EOF without it, recover")
	_ = cmd.Flags().MarkHidden("guard")
	return cmd
}

// guardLockWait bounds how long the guard waits for a dead run's journal
// lock to be released (the kernel drops it with the process).
const guardLockWait = 30 * time.Second

// runGuard is the run's dead-man's switch (see experiments' guard): it
// reads stdin, a pipe only the runner holds, until the runner says "done"
// (the run ended by itself and reverted its faults) or the pipe closes
// without it (the runner died), and then replays the journal.
func runGuard(ctx context.Context, dir string, stdin io.Reader, stdout io.Writer) error {
	sc := bufio.NewScanner(stdin)
	for sc.Scan() {
		if sc.Text() == "done" {
			return nil
		}
	}
	fmt.Fprintf(stdout, "%s guard: the run in %s ended without saying done; reverting what it left applied\n",
		time.Now().UTC().Format(time.RFC3339), dir)
	deadline := time.Now().Add(guardLockWait)
	for {
		err := runRecover(ctx, dir, stdout)
		if !errors.Is(err, faults.ErrJournalBusy) || time.Now().After(deadline) {
			if err != nil {
				fmt.Fprintf(stdout, "guard: %v\n", err)
			}
			return err
		}
		time.Sleep(50 * time.Millisecond) // bounded by deadline; the lock goes with the dead process
	}
}

// runRecover replays the journal in dir (or the latest run directory) and
// prints what it did.
func runRecover(ctx context.Context, dir string, stdout io.Writer) error {
	if dir == "" {
		d, err := latestRunDir(defaultRunsDir)
		if err != nil {
			return usageError(err)
		}
		dir = d
	}
	if _, err := os.Stat(filepath.Join(dir, faults.JournalFile)); err != nil {
		if errors.Is(err, os.ErrNotExist) {
			// A typo must not read as "all clear".
			what := "has no journal (" + faults.JournalFile + "): it is not the run directory of an llmchaos run"
			if _, serr := os.Stat(dir); serr != nil {
				what = "does not exist"
			}
			return usageError(fmt.Errorf("recover: %s %s; give the run directory that llmchaos run printed (or no --run-dir for the latest under %s/)", dir, what, defaultRunsDir))
		}
		return err
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), recoverTimeout)
	defer cancel()
	rep, err := faults.Recover(ctx, dir, spec.Reverters())
	if errors.Is(err, faults.ErrJournalBusy) {
		return withCode(exitcode.Internal, fmt.Errorf("recover %s: %w: let it end, or stop it with Ctrl-C (it reverts by itself)", dir, err))
	}
	if len(rep.Faults) == 0 && err == nil {
		fmt.Fprintf(stdout, "recover %s: nothing pending, nothing to revert\n", dir)
		return nil
	}
	fmt.Fprintf(stdout, "recover %s:\n", dir)
	for _, f := range rep.Faults {
		what := fmt.Sprintf("%s %q", f.Type, f.Name)
		if f.Target != "" {
			what += " (" + f.Target + ")"
		}
		state := "injected"
		if f.InjectedAt.IsZero() {
			state = "begun, maybe partly applied"
		}
		if f.Err != nil {
			fmt.Fprintf(stdout, "  FAILED    %s [%s, %d revert step(s)]: %v\n", what, state, len(f.Specs), f.Err)
			continue
		}
		fmt.Fprintf(stdout, "  reverted  %s [%s, %d revert step(s)]\n", what, state, len(f.Specs))
	}
	if err != nil {
		return withCode(exitcode.RevertFailed, fmt.Errorf("recover %s: %w", dir, err))
	}
	fmt.Fprintf(stdout, "everything is reverted (%d journal entries)\n", len(rep.Faults))
	return nil
}

// latestRunDir returns the most recently changed directory under root that
// holds a journal.
func latestRunDir(root string) (string, error) {
	ents, err := os.ReadDir(root)
	if err != nil {
		return "", fmt.Errorf("no --run-dir given and %s cannot be read: %w", root, err)
	}
	type cand struct {
		dir string
		mod time.Time
	}
	var cs []cand
	for _, e := range ents {
		if !e.IsDir() {
			continue
		}
		d := filepath.Join(root, e.Name())
		fi, err := os.Stat(filepath.Join(d, faults.JournalFile))
		if err != nil {
			continue
		}
		cs = append(cs, cand{d, fi.ModTime()})
	}
	if len(cs) == 0 {
		return "", fmt.Errorf("no --run-dir given and no run directory with a journal under %s", root)
	}
	slices.SortFunc(cs, func(a, b cand) int { return b.mod.Compare(a.mod) })
	return cs[0].dir, nil
}
