#!/usr/bin/env bash
# check-deploy.sh validates the artifacts in deploy/ with the tools their
# users run them with:
#   promtool check rules   deploy/prometheus/alerts.yml
#   promtool test rules    deploy/prometheus/alerts_test.yml  (alert unit tests)
#   promtool check config  deploy/prometheus/prometheus.yml
#   JSON syntax of         deploy/grafana/dashboards/*.json
#   docker-compose config  deploy/compose/compose.yaml
# A missing tool is reported as SKIP; set REQUIRE_TOOLS=1 to make it an
# error (CI machines with the tools installed). The Go tests in telemetry/
# run the same checks and also match the dashboard's metric names against
# what llmchaos and the simulator export.
# Exit status: 0 when every check that ran passed, 1 otherwise.
set -euo pipefail
cd "$(dirname "$0")/.."

failed=0
skipped=0

have() {
	if command -v "$1" >/dev/null 2>&1; then
		return 0
	fi
	if [[ "${REQUIRE_TOOLS:-0}" == 1 ]]; then
		echo "FAIL  $1 not installed (REQUIRE_TOOLS=1)"
		failed=1
	else
		echo "SKIP  $1 not installed"
		skipped=$((skipped + 1))
	fi
	return 1
}

check() {
	local what=$1
	shift
	local out
	if out=$("$@" 2>&1); then
		echo "ok    $what"
	else
		echo "FAIL  $what"
		echo "$out" | sed 's/^/      /'
		failed=1
	fi
}

if have promtool; then
	check "promtool check rules deploy/prometheus/alerts.yml" \
		promtool check rules deploy/prometheus/alerts.yml
	check "promtool test rules deploy/prometheus/alerts_test.yml" \
		promtool test rules deploy/prometheus/alerts_test.yml
	check "promtool check config deploy/prometheus/prometheus.yml" \
		promtool check config deploy/prometheus/prometheus.yml
fi

json_ok() {
	if command -v python3 >/dev/null 2>&1; then
		python3 -m json.tool "$1" >/dev/null
	elif command -v jq >/dev/null 2>&1; then
		jq empty "$1"
	else
		echo "no JSON checker (python3 or jq)" >&2
		return 1
	fi
}
for f in deploy/grafana/dashboards/*.json; do
	check "JSON $f" json_ok "$f"
done

if have docker-compose; then
	check "docker-compose config deploy/compose/compose.yaml" \
		docker-compose -f deploy/compose/compose.yaml config -q
fi

if ((failed)); then
	echo "check-deploy: FAILED"
	exit 1
fi
echo "check-deploy: ok ($skipped skipped)"
