#!/usr/bin/env bash
# k8s-controlplane.sh builds, starts and stops the Kubernetes control plane
# that llmchaos's Kubernetes tests run against: etcd, kube-apiserver,
# kube-controller-manager, kube-scheduler and kwok (fake nodes whose pods go
# Running and Ready without containers). No kubelet, no container runtime.
#
#   scripts/k8s-controlplane.sh build        # once per version; cached (see below)
#   scripts/k8s-controlplane.sh check        # exit 0 when built, 3 (and what is missing) when not
#   scripts/k8s-controlplane.sh start DIR [--owner PID]
#   export KUBECONFIG=DIR/kubeconfig         # admin (system:masters) by client certificate
#   scripts/k8s-controlplane.sh stop DIR
#
# build compiles kube-apiserver, kube-controller-manager and kube-scheduler
# from the k8s.io/kubernetes module pinned in scripts/k8s/controlplane/go.mod
# and kwok from scripts/k8s/kwok/go.mod, into
# ${LLMCHAOS_CACHE:-$HOME/.cache/llmchaos}/k8s/<version>/, and skips what is
# already there: the cache is keyed by version, so it survives clean clones.
# A fresh build takes about 10 CPU-minutes. It installs Debian's etcd-server
# with apt when no etcd is on PATH (as root), and needs openssl and curl.
#
# start makes a CA, serving and client certificates and the service-account
# key pair with openssl under DIR/pki, starts every component on 127.0.0.1
# ports chosen free at start, waits (bounded) until the apiserver is ready,
# the controller-manager has made the default service account and the kwok
# nodes (KWOK_NODES, default 2: kwok-node-0, kwok-node-1) are Ready, and
# writes DIR/kubeconfig, DIR/env and DIR/*.pid (and DIR/api-ready with
# API_PORT as soon as the apiserver answers, for what may start before the
# rest: the test node's kubelet); logs go to DIR/*.log. Nodes
# carry no taint, so any pod schedules on them; node i has InternalIP
# 10.1.0.(i+1) and gives its pods IPs from 10.0.i.0/24. With --owner PID a watcher stops the control plane when that
# process exits (a test binary passes its own pid, so nothing outlives it
# even after kill -9). start on a DIR whose control plane is up does nothing;
# a start that fails (bounded waits, each naming what it waited for and
# showing the end of the component's log) stops what it had started.
#
# stop kills what start started (each component's process group, TERM then
# KILL after 10 s), and removes DIR's certificates, kubeconfigs and etcd data;
# the logs stay. stop on a stopped or missing DIR does nothing.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
SELF="$ROOT/scripts/k8s-controlplane.sh"
CP_MOD="$ROOT/scripts/k8s/controlplane"
KWOK_MOD="$ROOT/scripts/k8s/kwok"
GO=${GO:-go}

K8S_VERSION=$(awk '$1 == "k8s.io/kubernetes" { print $2; exit }' "$CP_MOD/go.mod")
KWOK_VERSION=$(awk '$1 == "sigs.k8s.io/kwok" { print $2; exit }' "$KWOK_MOD/go.mod")
CACHE=${LLMCHAOS_CACHE:-$HOME/.cache/llmchaos}/k8s
K8S_BIN="$CACHE/$K8S_VERSION/bin"
KWOK_DIR="$CACHE/kwok-$KWOK_VERSION"
KWOK_NODES=${KWOK_NODES:-2}
K8S_BINARIES=(kube-apiserver kube-controller-manager kube-scheduler)
# The Stage configs kwok runs: nodes become Ready at once and keep their
# lease (so the node lifecycle controller never marks them unreachable), pods
# go Running and Ready with an IP in about a second and vanish when deleted.
KWOK_STAGES=(node/fast/node-initialize.yaml node/heartbeat-with-lease/node-heartbeat-with-lease.yaml
	pod/fast/pod-ready.yaml pod/fast/pod-complete.yaml pod/fast/pod-delete.yaml)
# Watch-list streams need etcd's RequestWatchProgress, which etcd 3.4 lacks:
# a watch-list request fails and its client retries with a growing back-off.
# The apiserver runs with WatchList=false, because with it on it turns every
# watch from resourceVersion "" or "0" into a watch-list request by itself
# (kwok watches that way: its pods went Ready after 6, 18, then 35+ s); and
# the components' clients do not ask for such streams either.
export KUBE_FEATURE_WatchListClient=false

die() {
	echo "k8s-controlplane: $*" >&2
	exit 1
}

log() {
	echo "k8s-controlplane: $*" >&2
}

usage() {
	sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//' >&2
	exit 2
}

# ---------------------------------------------------------------- build ---

# missing prints, one a line, what start needs and does not find.
missing() {
	local b
	for b in "${K8S_BINARIES[@]}"; do
		[[ -x $K8S_BIN/$b ]] || echo "$K8S_BIN/$b"
	done
	[[ -x $KWOK_DIR/bin/kwok ]] || echo "$KWOK_DIR/bin/kwok"
	for b in "${KWOK_STAGES[@]}"; do
		[[ -f $KWOK_DIR/stage/$(basename "$b") ]] || echo "$KWOK_DIR/stage/$(basename "$b")"
	done
	command -v etcd >/dev/null || echo "etcd (Debian package etcd-server)"
	command -v openssl >/dev/null || echo "openssl"
	command -v curl >/dev/null || echo "curl"
}

cmd_check() {
	local m
	m=$(missing)
	if [[ -n $m ]]; then
		echo "the Kubernetes test control plane ($K8S_VERSION, kwok $KWOK_VERSION) is not built; missing:" >&2
		sed 's/^/  /' <<<"$m" >&2
		echo "build it with: scripts/k8s-controlplane.sh build (or make test-k8s)" >&2
		exit 3
	fi
}

# build_k8s compiles the control-plane binaries into a temporary directory
# next to the cache and renames it into place, so that an interrupted build
# never leaves half a cache behind.
build_k8s() {
	local b need=0
	for b in "${K8S_BINARIES[@]}"; do
		[[ -x $K8S_BIN/$b ]] || need=1
	done
	if ((need == 0)); then
		log "kube-apiserver, kube-controller-manager, kube-scheduler $K8S_VERSION: cached in $K8S_BIN"
		return
	fi
	local minor=${K8S_VERSION#v1.}
	minor=${minor%%.*}
	local pkg=k8s.io/component-base/version
	local ldflags="-s -w -X $pkg.gitVersion=$K8S_VERSION -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor -X $pkg.gitTreeState=clean"
	local tmp="$CACHE/$K8S_VERSION/bin.tmp.$$"
	rm -rf "$tmp"
	mkdir -p "$tmp"
	log "building kube-apiserver, kube-controller-manager, kube-scheduler $K8S_VERSION (about 10 CPU-minutes the first time)"
	local start=$SECONDS pkgs=()
	for b in "${K8S_BINARIES[@]}"; do
		pkgs+=("k8s.io/kubernetes/cmd/$b")
	done
	if ! (cd "$CP_MOD" && CGO_ENABLED=0 nice -n 10 "$GO" build -trimpath -ldflags "$ldflags" -o "$tmp/" "${pkgs[@]}"); then
		rm -rf "$tmp"
		die "building the control plane in $CP_MOD failed (see above)"
	fi
	rm -rf "$K8S_BIN"
	mv "$tmp" "$K8S_BIN"
	log "built in $((SECONDS - start)) s into $K8S_BIN"
}

build_kwok() {
	local b need=0
	[[ -x $KWOK_DIR/bin/kwok ]] || need=1
	for b in "${KWOK_STAGES[@]}"; do
		[[ -f $KWOK_DIR/stage/$(basename "$b") ]] || need=1
	done
	if ((need == 0)); then
		log "kwok $KWOK_VERSION: cached in $KWOK_DIR"
		return
	fi
	local tmp="$CACHE/kwok-$KWOK_VERSION.tmp.$$" moddir start=$SECONDS
	rm -rf "$tmp"
	mkdir -p "$tmp/bin" "$tmp/stage"
	log "building kwok $KWOK_VERSION"
	if ! (cd "$KWOK_MOD" && CGO_ENABLED=0 nice -n 10 "$GO" build -trimpath -ldflags "-s -w" -o "$tmp/bin/" sigs.k8s.io/kwok/cmd/kwok); then
		rm -rf "$tmp"
		die "building kwok in $KWOK_MOD failed (see above)"
	fi
	moddir=$(cd "$KWOK_MOD" && "$GO" list -m -f '{{.Dir}}' sigs.k8s.io/kwok) ||
		die "cannot find the sigs.k8s.io/kwok module directory (go list -m in $KWOK_MOD)"
	for b in "${KWOK_STAGES[@]}"; do
		cp "$moddir/kustomize/stage/$b" "$tmp/stage/" ||
			die "kwok $KWOK_VERSION has no Stage config kustomize/stage/$b in $moddir"
	done
	chmod -R u+w "$tmp"
	rm -rf "$KWOK_DIR"
	mv "$tmp" "$KWOK_DIR"
	log "built in $((SECONDS - start)) s into $KWOK_DIR"
}

install_etcd() {
	command -v etcd >/dev/null && return
	if [[ $(id -u) != 0 ]]; then
		die "etcd is not on PATH; install Debian's etcd-server (apt-get install etcd-server) as root, then run build again"
	fi
	log "installing Debian's etcd-server"
	apt-get update -qq
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq etcd-server >/dev/null ||
		die "apt-get install etcd-server failed"
}

cmd_build() {
	command -v "$GO" >/dev/null || die "go is not on PATH"
	mkdir -p "$CACHE"
	# One build at a time per cache, whoever starts it (two test binaries, CI).
	exec 9>"$CACHE/.build.lock"
	flock 9
	install_etcd
	build_k8s
	build_kwok
	for b in openssl curl; do
		command -v $b >/dev/null || log "warning: $b is not on PATH; start needs it"
	done
}

# ---------------------------------------------------------------- start ---

# free_port prints a TCP port on 127.0.0.1 below the kernel's ephemeral range
# (32768-60999) that nothing listens on now and that this start has not
# handed out yet. A port can still be taken between
# this check and the component's bind; start then fails with the log saying
# "address already in use", and the caller starts again.
USED_PORTS=" "
free_port() {
	local p tries=0
	while ((tries++ < 200)); do
		p=$((20000 + RANDOM % 12000))
		[[ $USED_PORTS == *" $p "* ]] && continue
		if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
			USED_PORTS+="$p "
			echo "$p"
			return
		fi
	done
	die "found no free port on 127.0.0.1 in 200 tries"
}

# gen_cert NAME SUBJECT EXT makes DIR/pki/NAME.{key,crt}, signed by the CA.
gen_cert() {
	local pki=$1 name=$2 subj=$3 ext=$4
	openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
		-keyout "$pki/$name.key" -subj "$subj" -out "$pki/$name.csr" 2>/dev/null
	openssl x509 -req -in "$pki/$name.csr" -CA "$pki/ca.crt" -CAkey "$pki/ca.key" -CAcreateserial \
		-days 30 -sha256 -extfile <(printf '%s\n' "$ext") -out "$pki/$name.crt" 2>/dev/null
	rm -f "$pki/$name.csr"
}

make_pki() {
	local pki=$1
	mkdir -p "$pki"
	chmod 700 "$pki"
	openssl req -x509 -new -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 30 -sha256 \
		-keyout "$pki/ca.key" -out "$pki/ca.crt" -subj "/CN=llmchaos-test-ca" \
		-addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign" 2>/dev/null ||
		die "openssl cannot make the CA in $pki"
	local server="basicConstraints=CA:FALSE
keyUsage=critical,digitalSignature,keyEncipherment
extendedKeyUsage=serverAuth
subjectAltName=IP:127.0.0.1,IP:10.96.0.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local"
	local client="basicConstraints=CA:FALSE
keyUsage=critical,digitalSignature,keyEncipherment
extendedKeyUsage=clientAuth"
	gen_cert "$pki" apiserver "/CN=kube-apiserver" "$server"
	gen_cert "$pki" admin "/O=system:masters/CN=llmchaos-admin" "$client"
	# The apiserver's identity towards kubelets (pods/log, exec, port-forward
	# on a real node: scripts/k8s-node.sh).
	gen_cert "$pki" kubelet-client "/O=system:masters/CN=kube-apiserver-kubelet-client" "$client"
	gen_cert "$pki" controller-manager "/CN=system:kube-controller-manager" "$client"
	gen_cert "$pki" scheduler "/CN=system:kube-scheduler" "$client"
	# kwok acts for every fake node's kubelet: it writes node and pod status
	# and node leases of nodes that are not its own identity, which the Node
	# authorizer would refuse to a system:node:<name> identity.
	gen_cert "$pki" kwok "/O=system:masters/CN=kwok" "$client"
	openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out "$pki/sa.key" 2>/dev/null
	openssl pkey -in "$pki/sa.key" -pubout -out "$pki/sa.pub" 2>/dev/null
	[[ -s $pki/sa.pub && -s $pki/kwok.crt ]] || die "openssl failed to make the certificates in $pki"
	chmod 600 "$pki"/*.key
}

# write_kubeconfig FILE USER: a kubeconfig for the apiserver with the
# certificates embedded, so it stands alone.
write_kubeconfig() {
	local file=$1 user=$2 pki=$DIR/pki
	cat >"$file" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: llmchaos-test
  cluster:
    server: https://127.0.0.1:$API_PORT
    certificate-authority-data: $(base64 -w0 "$pki/ca.crt")
users:
- name: $user
  user:
    client-certificate-data: $(base64 -w0 "$pki/$user.crt")
    client-key-data: $(base64 -w0 "$pki/$user.key")
contexts:
- name: llmchaos-test
  context:
    cluster: llmchaos-test
    user: $user
current-context: llmchaos-test
EOF
	chmod 600 "$file"
}

# launch NAME CMD... starts CMD in a session of its own (so stop can kill its
# whole process group), with stdout and stderr in DIR/NAME.log, and records
# its pid in DIR/NAME.pid.
launch() {
	local name=$1
	shift
	setsid "$@" >"$DIR/$name.log" 2>&1 </dev/null &
	echo $! >"$DIR/$name.pid"
}

# live PID: the process exists and is not a zombie (this machine's pid 1 may
# not reap the orphans that start leaves behind).
live() {
	local state
	state=$(ps -o stat= -p "$1" 2>/dev/null) || return 1
	[[ $state != Z* ]]
}

alive() {
	local pid
	pid=$(cat "$DIR/$1.pid" 2>/dev/null) || return 1
	live "$pid"
}

# wait_for NAME SECONDS WHAT CMD... runs CMD every 0.2 s until it succeeds;
# it gives up when SECONDS have passed or component NAME has exited, and then
# shows the end of NAME's log.
wait_for() {
	local name=$1 limit=$2 what=$3
	shift 3
	local deadline=$((SECONDS + limit))
	until "$@" >/dev/null 2>&1; do
		if ! alive "$name"; then
			log "$name exited while waiting for $what; the end of $DIR/$name.log:"
			tail -n 25 "$DIR/$name.log" >&2 || true
			die "$name did not start (is a port taken? start again)"
		fi
		if ((SECONDS >= deadline)); then
			log "no $what after $limit s; the end of $DIR/$name.log:"
			tail -n 25 "$DIR/$name.log" >&2 || true
			die "timed out waiting for $what"
		fi
		sleep 0.2
	done
}

# api METHOD PATH [BODY]: a request to the apiserver as the admin.
api() {
	local method=$1 path=$2
	shift 2
	# (A user agent other than curl's: the apiserver pretty-prints for curl.)
	curl -sS --fail --max-time 10 -A k8s-controlplane.sh --cacert "$DIR/pki/ca.crt" --cert "$DIR/pki/admin.crt" --key "$DIR/pki/admin.key" \
		-X "$method" -H 'Content-Type: application/json' "$@" "https://127.0.0.1:$API_PORT$path"
}

ready() {
	[[ $(api GET /readyz) == ok ]]
}

has_default_sa() {
	api GET /api/v1/namespaces/default/serviceaccounts/default
}

node_ready() {
	api GET "/api/v1/nodes/$1" | grep -q '"type":"Ready","status":"True"'
}

# create_node I: node kwok-node-I, with InternalIP 10.1.0.(I+1) and the pod
# CIDR 10.0.I.0/24, from which kwok gives its pods their IPs.
create_node() {
	local i=$1 name=kwok-node-$1
	api POST /api/v1/nodes -o /dev/null -d @- <<EOF
{"apiVersion": "v1", "kind": "Node",
 "metadata": {"name": "$name",
   "annotations": {"node.alpha.kubernetes.io/ttl": "0", "kwok.x-k8s.io/node": "fake"},
   "labels": {"type": "kwok", "kubernetes.io/hostname": "$name", "kubernetes.io/os": "linux",
     "kubernetes.io/arch": "amd64", "kubernetes.io/role": "agent", "node-role.kubernetes.io/agent": ""}},
 "spec": {"podCIDR": "10.0.$i.0/24", "podCIDRs": ["10.0.$i.0/24"]},
 "status": {
   "addresses": [{"type": "InternalIP", "address": "10.1.0.$((i + 1))"}, {"type": "Hostname", "address": "$name"}],
   "allocatable": {"cpu": "32", "memory": "256Gi", "pods": "110", "nvidia.com/gpu": "8"},
   "capacity": {"cpu": "32", "memory": "256Gi", "pods": "110", "nvidia.com/gpu": "8"},
   "nodeInfo": {"architecture": "amd64", "operatingSystem": "linux",
     "kubeletVersion": "$K8S_VERSION-kwok", "kubeProxyVersion": "$K8S_VERSION-kwok"}}}
EOF
}

# running DIR: the control plane in DIR is up and answers.
running() {
	[[ -f $DIR/env ]] || return 1
	API_PORT=$(sed -n 's/^API_PORT=//p' "$DIR/env")
	local c
	for c in etcd kube-apiserver kube-controller-manager kube-scheduler kwok; do
		alive "$c" || return 1
	done
	ready
}

cmd_start() {
	DIR=$1
	local owner=${2:-}
	[[ -n $DIR ]] || usage
	if [[ -n $owner ]]; then
		kill -0 "$owner" 2>/dev/null || die "--owner $owner: no such process"
	fi
	cmd_check
	mkdir -p "$DIR"
	DIR=$(cd "$DIR" && pwd)
	if running; then
		log "already running in $DIR (KUBECONFIG=$DIR/kubeconfig)"
		return
	fi
	cmd_stop "$DIR" 2>/dev/null # leftovers of a start that was killed half-way
	# A start that fails stops what it started; the logs stay.
	trap 'rc=$?; if ((rc != 0)); then log "start failed; stopping what it started (logs stay in $DIR)"; cmd_stop "$DIR"; fi' EXIT
	local t0=$SECONDS
	make_pki "$DIR/pki"
	local etcd_port etcd_peer
	etcd_port=$(free_port)
	etcd_peer=$(free_port)
	API_PORT=$(free_port)

	launch etcd etcd --name llmchaos --data-dir "$DIR/etcd" \
		--listen-client-urls "http://127.0.0.1:$etcd_port" --advertise-client-urls "http://127.0.0.1:$etcd_port" \
		--listen-peer-urls "http://127.0.0.1:$etcd_peer" --initial-advertise-peer-urls "http://127.0.0.1:$etcd_peer" \
		--initial-cluster "llmchaos=http://127.0.0.1:$etcd_peer" --initial-cluster-state new \
		--quota-backend-bytes $((1 << 30)) --logger zap --log-outputs stderr
	wait_for etcd 30 "etcd health" bash -c "curl -sS --max-time 2 http://127.0.0.1:$etcd_port/health | grep -q '\"health\":\"true\"'"

	# No endpoint reconciler: it would publish 127.0.0.1 as the endpoint of the
	# kubernetes Service, which validation refuses (loopback), every 10 s; no
	# pod here runs a container that could use it.
	launch kube-apiserver "$K8S_BIN/kube-apiserver" \
		--etcd-servers "http://127.0.0.1:$etcd_port" \
		--bind-address 127.0.0.1 --advertise-address 127.0.0.1 --secure-port "$API_PORT" \
		--endpoint-reconciler-type none \
		--tls-cert-file "$DIR/pki/apiserver.crt" --tls-private-key-file "$DIR/pki/apiserver.key" \
		--client-ca-file "$DIR/pki/ca.crt" \
		--kubelet-client-certificate "$DIR/pki/kubelet-client.crt" --kubelet-client-key "$DIR/pki/kubelet-client.key" \
		--kubelet-preferred-address-types InternalIP,Hostname \
		--authorization-mode Node,RBAC --anonymous-auth=false \
		--enable-admission-plugins NodeRestriction \
		--service-account-issuer https://kubernetes.default.svc.cluster.local \
		--service-account-key-file "$DIR/pki/sa.pub" --service-account-signing-key-file "$DIR/pki/sa.key" \
		--service-cluster-ip-range 10.96.0.0/16 --allow-privileged=true \
		--cert-dir "$DIR/pki" --profiling=false --feature-gates WatchList=false
	wait_for kube-apiserver 120 "kube-apiserver /readyz ok" ready
	# For what can start before the rest is up (the test node's kubelet).
	echo "API_PORT=$API_PORT" >"$DIR/api-ready"

	for c in admin controller-manager scheduler kwok; do
		write_kubeconfig "$DIR/$c.kubeconfig" "$c"
	done
	mv "$DIR/admin.kubeconfig" "$DIR/kubeconfig"

	# --node-monitor-grace-period: kwok renews its fake nodes' leases from
	# one process; on a loaded 2-core machine a renewal came late and the
	# node controller marked the nodes NotReady (every pod then not Ready)
	# in the middle of a test. The tests never test node loss.
	launch kube-controller-manager "$K8S_BIN/kube-controller-manager" \
		--kubeconfig "$DIR/controller-manager.kubeconfig" \
		--secure-port 0 --leader-elect=false --use-service-account-credentials \
		--service-account-private-key-file "$DIR/pki/sa.key" --root-ca-file "$DIR/pki/ca.crt" \
		--cluster-signing-cert-file "$DIR/pki/ca.crt" --cluster-signing-key-file "$DIR/pki/ca.key" \
		--feature-gates WatchListClient=false --profiling=false \
		--node-monitor-grace-period=10m
	launch kube-scheduler "$K8S_BIN/kube-scheduler" \
		--kubeconfig "$DIR/scheduler.kubeconfig" \
		--secure-port 0 --leader-elect=false --feature-gates WatchListClient=false --profiling=false
	local configs=() s
	for s in "${KWOK_STAGES[@]}"; do
		configs+=(--config "$KWOK_DIR/stage/$(basename "$s")")
	done
	launch kwok "$KWOK_DIR/bin/kwok" --kubeconfig "$DIR/kwok.kubeconfig" "${configs[@]}" \
		--manage-all-nodes=false --manage-nodes-with-annotation-selector kwok.x-k8s.io/node=fake \
		--node-ip 10.1.0.254 --cidr 10.0.255.0/24

	wait_for kube-controller-manager 60 "the default service account (made by kube-controller-manager)" has_default_sa
	local i
	for ((i = 0; i < KWOK_NODES; i++)); do
		create_node "$i" || die "cannot create node kwok-node-$i"
	done
	for ((i = 0; i < KWOK_NODES; i++)); do
		wait_for kwok 60 "node kwok-node-$i Ready (set by kwok)" node_ready "kwok-node-$i"
	done
	alive kube-scheduler || die "kube-scheduler exited; see $DIR/kube-scheduler.log"

	cat >"$DIR/env" <<EOF
KUBECONFIG=$DIR/kubeconfig
API_PORT=$API_PORT
ETCD_PORT=$etcd_port
K8S_VERSION=$K8S_VERSION
KWOK_VERSION=$KWOK_VERSION
EOF
	if [[ -n $owner ]]; then
		# The watcher is a process group of its own too, so stop kills it.
		launch owner-watch bash -c 'tail --pid="$1" -f /dev/null; exec "$2" stop "$3"' _ "$owner" "$SELF" "$DIR"
	fi
	trap - EXIT
	log "up in $((SECONDS - t0)) s: KUBECONFIG=$DIR/kubeconfig (apiserver https://127.0.0.1:$API_PORT, $KWOK_NODES kwok nodes)"
}

# ----------------------------------------------------------------- stop ---

# kill_component NAME stops the process group that launch started, if the
# pid file names a live process that is still the one started (its session
# id is its pid), waiting at most 10 s before SIGKILL.
kill_component() {
	local name=$1 pid sid
	pid=$(cat "$DIR/$name.pid" 2>/dev/null) || return 0
	rm -f "$DIR/$name.pid"
	[[ $pid =~ ^[0-9]+$ ]] || return 0
	# A stop run by the owner watcher is that watcher (exec); it ends by itself.
	[[ $pid != "$$" ]] || return 0
	sid=$(ps -o sid= -p "$pid" 2>/dev/null | tr -d ' ') || return 0
	[[ $sid == "$pid" ]] || return 0
	kill -TERM -- "-$pid" 2>/dev/null || return 0
	local deadline=$((SECONDS + 10))
	while live "$pid"; do
		if ((SECONDS >= deadline)); then
			log "$name (pid $pid) ignored SIGTERM for 10 s; killing it"
			kill -KILL -- "-$pid" 2>/dev/null || true
			break
		fi
		sleep 0.1
	done
}

cmd_stop() {
	DIR=$1
	[[ -n $DIR ]] || usage
	[[ -d $DIR ]] || return 0
	local c
	# The watcher first: it must not run stop again after this one.
	for c in owner-watch kwok kube-scheduler kube-controller-manager kube-apiserver etcd; do
		kill_component "$c"
	done
	rm -rf "$DIR/pki" "$DIR/etcd" "$DIR"/*.kubeconfig "$DIR/kubeconfig" "$DIR/env" "$DIR/api-ready"
}

case ${1:-} in
build) cmd_build ;;
check) cmd_check ;;
start)
	[[ $# -eq 2 || ($# -eq 4 && $3 == --owner) ]] || usage
	cmd_start "$2" "${4:-}"
	;;
stop)
	[[ $# -eq 2 ]] || usage
	cmd_stop "$2"
	;;
*) usage ;;
esac
