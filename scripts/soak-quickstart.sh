#!/bin/sh
# soak-quickstart.sh [N] runs the README's first command, the quickstart
# experiment, N times (default 20) one after the other with the binary
# $BIN (default bin/llmchaos, built by make build) and counts the passes.
# Each run's line gives its verdict and the load average when it ended; a
# run that did not pass keeps its run directory and output under $SOAK_DIR
# (default a new temporary directory), named in the line. It exits 1 when
# fewer than 19 in 20 passed (the quickstart's promise), 0 otherwise.
#
#   make soak-quickstart            # 20 runs, about 2 minutes each
#   SOAK_N=5 make soak-quickstart
set -u
n=${1:-20}
bin=${BIN:-bin/llmchaos}
dir=${SOAK_DIR:-$(mktemp -d "${TMPDIR:-/tmp}/llmchaos-soak.XXXXXX")}
file=experiments/catalog/quickstart.yaml
pass=0
i=1
while [ "$i" -le "$n" ]; do
	out="$dir/run-$i"
	"$bin" run "$file" --no-history --progress 0 --quiet --out "$out" >"$out.txt" 2>&1
	code=$?
	load=$(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo unknown)
	verdict=$(grep '^verdict:' "$out.txt" | tail -1)
	if [ "$code" -eq 0 ]; then
		pass=$((pass + 1))
		echo "run $i of $n: PASS; load average $load"
		rm -rf "$out" "$out.txt"
	else
		echo "run $i of $n: exit $code, ${verdict:-no verdict}; load average $load; see $out.txt and $out"
	fi
	i=$((i + 1))
done
echo "quickstart soak: $pass of $n passed"
# 19 in 20: at most one failure per 20 runs.
[ $((20 * (n - pass))) -le "$n" ]
