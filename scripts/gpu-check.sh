#!/usr/bin/env bash
# gpu-check.sh: prove llmchaos's GPU paths on a machine with an NVIDIA GPU.
#
# It builds llmchaos with NVML and the CUDA balloon (-tags nvml,cuda; needs
# Go and a C compiler, or a prebuilt binary in LLMCHAOS_BIN), runs the NVML
# monitor (`llmchaos gpu-monitor`, every 500 ms), holds a 10 GiB CUDA balloon
# (`llmchaos gpu-balloon --backend cuda`) for 10 s, and checks from the
# monitor's samples that the GPU's used memory rose by about 10 GiB while
# the balloon held and fell back after it was released. It prints the
# figures and takes well under 3 minutes (most of it the build).
#
# Exit codes: 0 the check passed; 1 it failed (or could not run); 3 there
# is no NVIDIA GPU here, so nothing could be checked. A check script must
# not pass where it cannot check, hence 3 and not 0.
#
# Not part of `make test`. Settings (environment):
#   GPU_CHECK_GPU      GPU index as nvidia-smi shows it (default 0)
#   GPU_CHECK_GIB      balloon size in GiB (default 10)
#   GPU_CHECK_HOLD_S   seconds the balloon holds (default 10)
#   LLMCHAOS_BIN       use this llmchaos (built with -tags nvml,cuda)
#                      instead of building one
set -euo pipefail

gpu=${GPU_CHECK_GPU:-0}
gib=${GPU_CHECK_GIB:-10}
hold_s=${GPU_CHECK_HOLD_S:-10}
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

say() { printf 'gpu-check: %s\n' "$*"; }
fail() {
	printf 'gpu-check: FAIL: %s\n' "$*" >&2
	exit 1
}
no_gpu() {
	printf 'gpu-check: no NVIDIA GPU here: %s\n' "$*" >&2
	exit 3
}
now_ms() { date +%s%3N; }

[[ $gpu =~ ^[0-9]+$ ]] || fail "GPU_CHECK_GPU=$gpu: want a GPU index"
[[ $gib =~ ^[0-9]+$ && $gib -gt 0 ]] || fail "GPU_CHECK_GIB=$gib: want a whole number of GiB"
[[ $hold_s =~ ^[0-9]+$ && $hold_s -gt 0 ]] || fail "GPU_CHECK_HOLD_S=$hold_s: want whole seconds"

# Cheap look before building: the driver's device nodes.
if ! compgen -G '/dev/nvidia[0-9]*' >/dev/null; then
	no_gpu "no /dev/nvidia* device nodes"
fi

tmp=$(mktemp -d)
children=()
cleanup() {
	local p
	for p in "${children[@]}"; do
		kill -TERM "$p" 2>/dev/null || true
	done
	wait 2>/dev/null || true
	rm -rf "$tmp"
}
trap cleanup EXIT

if [[ -n ${LLMCHAOS_BIN:-} ]]; then
	bin=$LLMCHAOS_BIN
	[[ -x $bin ]] || fail "LLMCHAOS_BIN=$bin is not an executable"
else
	command -v go >/dev/null || fail "no go on PATH to build llmchaos (or set LLMCHAOS_BIN)"
	bin=$tmp/llmchaos
	say "building llmchaos with -tags nvml,cuda"
	build_start=$(now_ms)
	if ! (cd "$root" && CGO_ENABLED=1 go build -tags nvml,cuda -o "$bin" ./cmd/llmchaos) >"$tmp/build.log" 2>&1; then
		grep -v -e 'warning:' -e 'note:' -e 'cgo-gcc-prolog' -e '^ ' "$tmp/build.log" >&2 || true
		fail "build"
	fi
	say "built in $(($(now_ms) - build_start)) ms"
fi

# CUDA numbers devices as NVML does with this, so --gpu means one device.
export CUDA_DEVICE_ORDER=PCI_BUS_ID

# One reading: does NVML see the GPU?
rc=0
"$bin" gpu-monitor --once --format tsv >"$tmp/once.tsv" 2>"$tmp/once.err" || rc=$?
if [[ $rc -eq 5 ]]; then
	no_gpu "$(cat "$tmp/once.err")"
elif [[ $rc -ne 0 ]]; then
	fail "gpu-monitor --once exited $rc: $(cat "$tmp/once.err")"
fi
if ! awk -F'\t' -v g="$gpu" '$1 !~ /^#/ && $2 == g { found = 1 } END { exit !found }' "$tmp/once.tsv"; then
	fail "NVML does not show GPU $gpu: $(grep -vc '^#' "$tmp/once.tsv") GPU(s) seen"
fi
say "NVML sees: $(grep -v '^#' "$tmp/once.tsv" | awk -F'\t' '{ printf "gpu %s %.1f/%.1f GiB used; ", $2, $3/2^30, $5/2^30 }')"

# The monitor, in the background, bounded in time should this script die.
"$bin" gpu-monitor --interval 500ms --format tsv --duration 150s >"$tmp/samples.tsv" 2>"$tmp/monitor.err" &
monitor=$!
children+=("$monitor")

# samples_of_gpu: how many samples of the GPU the monitor has written.
samples_of_gpu() { awk -F'\t' -v g="$gpu" '$1 !~ /^#/ && $2 == g { n++ } END { print n + 0 }' "$tmp/samples.tsv"; }

# wait_until SECONDS WHAT COMMAND...: poll COMMAND every 100 ms.
wait_until() {
	local limit=$1 what=$2 deadline
	shift 2
	deadline=$(($(now_ms) + limit * 1000))
	until "$@"; do
		if (($(now_ms) > deadline)); then
			fail "timed out after ${limit}s waiting for $what"
		fi
		kill -0 "$monitor" 2>/dev/null || fail "the monitor died: $(cat "$tmp/monitor.err")"
		sleep 0.1
	done
}
have_baseline() { (($(samples_of_gpu) >= 4)); }
wait_until 15 "4 baseline samples" have_baseline

say "starting a ${gib} GiB CUDA balloon on GPU $gpu for ${hold_s}s"
t_start=$(now_ms)
"$bin" gpu-balloon --backend cuda --gpu "$gpu" --gib "$gib" >"$tmp/balloon.out" 2>"$tmp/balloon.err" &
balloon=$!
children+=("$balloon")
balloon_holds() {
	grep -q '^holding ' "$tmp/balloon.out" && return 0
	kill -0 "$balloon" 2>/dev/null || fail "the balloon exited before it held: $(cat "$tmp/balloon.err")"
	return 1
}
wait_until 90 "the balloon to hold" balloon_holds
t_held=$(now_ms)
say "balloon (pid $balloon) says: $(cat "$tmp/balloon.out") after $((t_held - t_start)) ms"

sleep "$hold_s"
kill -0 "$balloon" 2>/dev/null || fail "the balloon died while holding: $(cat "$tmp/balloon.err")"
t_release=$(now_ms)
kill -TERM "$balloon"
rc=0
wait "$balloon" || rc=$?
t_released=$(now_ms)
[[ $rc -eq 0 ]] || fail "the balloon exited $rc on SIGTERM: $(cat "$tmp/balloon.err")"
say "balloon released in $((t_released - t_release)) ms"

# Let the monitor see the memory come back.
after_n=$(($(samples_of_gpu) + 4))
have_after() { (($(samples_of_gpu) >= after_n)); }
wait_until 15 "4 samples after the release" have_after
kill -TERM "$monitor"
wait "$monitor" || true

# The figures. Samples are unix_ms, gpu, used, free, total, util, util_mem,
# processes; one sample period (500 ms) is skipped at each edge.
awk -F'\t' -v g="$gpu" -v gib="$gib" -v pid="$balloon" \
	-v t0="$t_start" -v t1="$t_held" -v t2="$t_release" -v t3="$t_released" '
	$1 ~ /^#/ || $2 != g { next }
	$1 < t0 { nb++; if ($3 > base) base = $3; next }
	$1 >= t1 + 500 && $1 <= t2 {
		nh++
		if (minh == "" || $3 < minh) minh = $3
		if ($3 > peak) peak = $3
		procs = "," $8
		if ((i = index(procs, "," pid ":")) > 0) { seen = 1; split(substr(procs, i + 1), a, /[:,]/); own = a[2] }
		next
	}
	$1 >= t3 + 500 { na++; if ($3 > after) after = $3 }
	END {
		G = 2 ^ 30
		want = gib * G
		rise = minh - base
		back = after - base
		printf "gpu-check: samples: %d before, %d while holding, %d after\n", nb, nh, na
		printf "gpu-check: used before %.2f GiB, while holding %.2f..%.2f GiB, after %.2f GiB\n", base / G, minh / G, peak / G, after / G
		printf "gpu-check: rise %.2f GiB (want %d GiB, plus at most 2 GiB of CUDA context), fall back to %+.2f GiB of before\n", rise / G, gib, back / G
		if (seen) printf "gpu-check: NVML lists the balloon (pid %s) with %.2f GiB\n", pid, own / G
		else printf "gpu-check: NVML does not list pid %s (pids differ inside a container); checked the totals only\n", pid
		bad = 0
		if (nb < 2 || nh < 2 || na < 2) { print "gpu-check: FAIL: too few samples" > "/dev/stderr"; bad = 1 }
		if (rise < want - 64 * 2 ^ 20) { printf "gpu-check: FAIL: used memory rose by %.2f GiB, less than the %d GiB held\n", rise / G, gib > "/dev/stderr"; bad = 1 }
		if (rise > want + 2 * G) { printf "gpu-check: FAIL: used memory rose by %.2f GiB, far more than the %d GiB held (another process?)\n", rise / G, gib > "/dev/stderr"; bad = 1 }
		if (back > 256 * 2 ^ 20) { printf "gpu-check: FAIL: used memory stayed %.2f GiB above its level before the balloon\n", back / G > "/dev/stderr"; bad = 1 }
		exit bad
	}' "$tmp/samples.tsv" || fail "NVML did not see the balloon's memory come and go (samples above)"
say "PASS: NVML saw ${gib} GiB taken and given back by the CUDA balloon"
