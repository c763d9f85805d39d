#!/bin/sh
# docker-replicas.sh starts or stops three simulator containers for
# experiments/catalog/docker-replica-kill.yaml:
#
#   make image                        # builds llmchaos:dev FROM scratch
#   scripts/docker-replicas.sh up     # llmchaos-replica-0..2 on 127.0.0.1:18000..18002
#   go run ./cmd/llmchaos run experiments/catalog/docker-replica-kill.yaml
#   scripts/docker-replicas.sh down
#
# Each container runs `llmchaos sim` with the label llmchaos.io/target=true
# (the docker driver of replica faults acts only on containers that carry
# it) and the restart policy on-failure, so that Docker restarts one whose
# process is killed. Ports are published on 127.0.0.1 only. Environment:
# IMAGE (default llmchaos:dev), BASE_PORT (default 18000; the experiment's
# urls must match), STARTUP_TIME (the simulated model load, default 2s).
set -eu

IMAGE=${IMAGE:-llmchaos:dev}
BASE_PORT=${BASE_PORT:-18000}
STARTUP_TIME=${STARTUP_TIME:-2s}
NAMES="llmchaos-replica-0 llmchaos-replica-1 llmchaos-replica-2"

up() {
	i=0
	for name in $NAMES; do
		port=$((BASE_PORT + i))
		docker run -d --name "$name" \
			--label llmchaos.io/target=true \
			--label llmchaos.io/experiment=docker-replica-kill \
			--restart on-failure \
			-p "127.0.0.1:$port:8000" \
			"$IMAGE" sim --listen 0.0.0.0:8000 --startup-time "$STARTUP_TIME" --seed "$i" >/dev/null
		echo "$name: http://127.0.0.1:$port/v1"
		i=$((i + 1))
	done
	# Wait (bounded) until every replica answers /health with 200.
	i=0
	for name in $NAMES; do
		port=$((BASE_PORT + i))
		tries=0
		until [ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/health" || true)" = 200 ]; do
			tries=$((tries + 1))
			if [ "$tries" -gt 120 ]; then
				echo "$name does not serve on 127.0.0.1:$port after 60 s; its log:" >&2
				docker logs --tail 20 "$name" >&2 || true
				exit 1
			fi
			sleep 0.5
		done
		i=$((i + 1))
	done
	echo "3 replicas serving"
}

down() {
	for name in $NAMES; do
		docker rm -f "$name" >/dev/null 2>&1 || true
	done
	echo "removed $NAMES"
}

case "${1:-}" in
up) up ;;
down) down ;;
*)
	echo "usage: $0 up|down" >&2
	exit 2
	;;
esac
