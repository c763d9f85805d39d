#!/usr/bin/env bash
# k8s-node.sh builds, starts and stops one real Kubernetes node on this
# machine, for the tests that need containers that really run (what kwok's
# pods do not): a kubelet, a containerd of its own, CNI bridge networking
# and FROM-scratch images of a pause program and of llmchaos.
#
#   scripts/k8s-node.sh build               # kubelet, once per version; cached (see below)
#   scripts/k8s-node.sh check               # exit 0 when start can run here, 3 (and why) when not
#   scripts/k8s-node.sh start DIR [--owner PID] [--wait SECONDS]
#   export KUBECONFIG=DIR/kubeconfig        # admin of the control plane the node joined
#   scripts/k8s-node.sh env DIR             # the node's facts as shell variables
#   scripts/k8s-node.sh facts               # the host-wide names any node here uses
#   scripts/k8s-node.sh stop DIR
#
# build compiles the kubelet from the k8s.io/kubernetes module pinned in
# scripts/k8s/controlplane/go.mod (the control plane's version: a kubelet
# newer than its apiserver is unsupported) into
# ${LLMCHAOS_CACHE:-$HOME/.cache/llmchaos}/k8s/<version>/node/, and skips it
# when it is there. It installs, as root with apt, what start needs from
# Debian: containerd and runc (1.6 and 1.1 in bookworm), the CNI plugins
# (containernetworking-plugins: bridge, host-local, loopback, portmap),
# iptables, nftables and iproute2.
#
# start (root, Linux) starts the control plane of scripts/k8s-controlplane.sh
# in DIR/cp with no kwok nodes (KWOK_NODES=0, unless set), then:
#   - a bridge llmc0 with 10.88.0.1/24 (pods get 10.88.0.2-254): the
#     node's InternalIP, since the kubelet refuses a loopback address and
#     this kernel has no dummy interfaces; the host reaches pod IPs;
#   - in-cluster API access without kube-proxy: one DNAT rule sends the
#     kubernetes Service's address (10.96.0.1:443, what the kubelet puts in
#     every pod's KUBERNETES_SERVICE_HOST) from the pod network to the
#     apiserver on 127.0.0.1 (route_localnet on the bridge only);
#   - a containerd with its own config, socket, root and state under DIR
#     (Docker's containerd is not touched), the CRI plugin on, cgroupfs;
#   - the images llmchaos-pause:node and llmchaos:node, built FROM scratch
#     from static Go binaries (scripts/k8s/node/pause and cmd/llmchaos of
#     this checkout) as OCI archives and imported with ctr; pods use
#     imagePullPolicy: Never (or IfNotPresent);
#   - the kubelet (node llmchaos-node, client certificate of the control
#     plane's CA, failCgroupV1: false, cgroup root /llmchaos-node);
# and waits until the node is Ready. The control plane starts in the
# background while the bridge, containerd and the images are made (the
# images' binaries are built into the cache, per checkout, so that go build
# relinks only what changed); the kubelet starts as soon as the apiserver
# answers (DIR/cp/api-ready). Start and stop print their times, by step.
# It records every host change first
# (DIR/host.before): the FORWARD accept rules for the pod network (Docker's
# FORWARD policy is DROP), the DNAT rule, the sysctls the kubelet and the
# bridge set (kernel.panic, kernel.panic_on_oops, kernel.keys.root_max*,
# vm.overcommit_memory, vm.panic_on_oom, net.ipv4.ip_forward), and stop
# puts each back as it was, deletes the bridge, the CNI's iptables rules
# and the cgroups under the node's root, and stops the control plane.
# With --owner PID a watcher stops the node when that process exits.
#
# One node per machine at a time (the bridge, sysctls and cgroup root are
# host-wide): /run/llmchaos-node.holder names the node's DIR while it runs;
# start refuses while another DIR's node runs, or waits up to --wait
# SECONDS for it to stop (test binaries of several packages, run in
# parallel by go test, each start their own). A node of which nothing runs
# any more (its owner killed with -9 and its watcher too) is stopped by the
# next start.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
SELF="$ROOT/scripts/k8s-node.sh"
CP="$ROOT/scripts/k8s-controlplane.sh"
CP_MOD="$ROOT/scripts/k8s/controlplane"
GO=${GO:-go}

K8S_VERSION=$(awk '$1 == "k8s.io/kubernetes" { print $2; exit }' "$CP_MOD/go.mod")
CACHE=${LLMCHAOS_CACHE:-$HOME/.cache/llmchaos}/k8s
NODE_BIN="$CACHE/$K8S_VERSION/node"
# The machine's node: HOLDER says "DIR PID" (the node's directory and the
# pid of the start that made it) while a node runs or starts; LOCK is
# taken only while HOLDER is read or written.
LOCK=/run/llmchaos-node.holder.lock
HOLDER=/run/llmchaos-node.holder
NODE_NAME=llmchaos-node
BRIDGE=llmc0
NODE_IP=10.88.0.1
POD_CIDR=10.88.0.0/24
CGROUP_ROOT=/llmchaos-node
# The host-wide sysctls the node changes: the kubelet's (setupKernelTunables
# in pkg/kubelet/cm/container_manager_linux.go) and the forwarding the
# bridge needs.
SYSCTLS=(kernel.panic kernel.panic_on_oops vm.overcommit_memory vm.panic_on_oom kernel.keys.root_maxkeys
	kernel.keys.root_maxbytes net.ipv4.ip_forward)
# In-cluster clients reach the apiserver at the kubernetes Service's
# address (the kubelet sets KUBERNETES_SERVICE_HOST in every pod); with no
# kube-proxy, one DNAT rule sends it to the apiserver on 127.0.0.1 (the
# bridge routes to loopback: route_localnet, on the bridge only).
SERVICE_IP=10.96.0.1
DEBS=(containerd runc containernetworking-plugins iptables nftables iproute2)
CNI_BIN=/usr/lib/cni

die() {
	echo "k8s-node: $*" >&2
	exit 1
}

log() {
	echo "k8s-node: $*" >&2
}

# since T0: seconds since T0 (an $EPOCHREALTIME), to a tenth.
since() {
	local now=$EPOCHREALTIME
	awk -v a="$1" -v b="$now" 'BEGIN { printf "%.1f", b - a }'
}

usage() {
	sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//' >&2
	exit 2
}

# ---------------------------------------------------------------- build ---

build_kubelet() {
	if [[ -x $NODE_BIN/kubelet ]]; then
		log "kubelet $K8S_VERSION: cached in $NODE_BIN"
		return
	fi
	local minor=${K8S_VERSION#v1.}
	minor=${minor%%.*}
	local pkg=k8s.io/component-base/version
	local ldflags="-s -w -X $pkg.gitVersion=$K8S_VERSION -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor -X $pkg.gitTreeState=clean"
	local tmp="$CACHE/$K8S_VERSION/node.tmp.$$" start=$SECONDS
	rm -rf "$tmp"
	mkdir -p "$tmp"
	log "building kubelet $K8S_VERSION (about 1 CPU-minute with the control plane's build cache, 8 without)"
	if ! (cd "$CP_MOD" && CGO_ENABLED=0 nice -n 10 "$GO" build -trimpath -ldflags "$ldflags" -o "$tmp/" k8s.io/kubernetes/cmd/kubelet); then
		rm -rf "$tmp"
		die "building the kubelet in $CP_MOD failed (see above)"
	fi
	rm -rf "$NODE_BIN"
	mv "$tmp" "$NODE_BIN"
	log "built in $((SECONDS - start)) s into $NODE_BIN"
}

install_debs() {
	local missing=() d
	for d in "${DEBS[@]}"; do
		dpkg-query -W -f='${Status}' "$d" 2>/dev/null | grep -q "ok installed" || missing+=("$d")
	done
	((${#missing[@]} == 0)) && return
	((EUID == 0)) || die "as root: apt-get install ${missing[*]}"
	log "installing ${missing[*]} (Debian)"
	apt-get update -qq >&2 || true
	DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${missing[@]}" >&2 ||
		die "apt-get install ${missing[*]} failed"
	# (Debian may start its containerd service on install: it keeps its own
	# socket, root and state, apart from the node's, and is left alone.)
}

cmd_build() {
	install_debs
	"$CP" build
	build_kubelet
}

# ---------------------------------------------------------------- check ---

# problems prints, one a line, why start cannot run here.
problems() {
	[[ $(uname -s) == Linux ]] || echo "not Linux"
	((EUID == 0)) || echo "not root (the node changes host networking, sysctls and cgroups)"
	[[ -x $NODE_BIN/kubelet ]] || echo "$NODE_BIN/kubelet (scripts/k8s-node.sh build)"
	local b
	for b in containerd containerd-shim-runc-v2 runc ctr ip iptables nft tar sha256sum; do
		command -v "$b" >/dev/null || echo "$b (scripts/k8s-node.sh build installs Debian's)"
	done
	for b in bridge host-local loopback portmap; do
		[[ -x $CNI_BIN/$b ]] || echo "$CNI_BIN/$b (Debian package containernetworking-plugins)"
	done
	"$CP" check >/dev/null 2>&1 || echo "the control plane (scripts/k8s-controlplane.sh build)"
}

cmd_check() {
	local p
	p=$(problems)
	if [[ -n $p ]]; then
		echo "the Kubernetes test node ($K8S_VERSION) cannot start here:" >&2
		sed 's/^/  /' <<<"$p" >&2
		exit 3
	fi
}

# ---------------------------------------------------------------- start ---

# save_host records, once per start, what stop must put back.
save_host() {
	local f=$DIR/host.before k
	: >"$f"
	for k in "${SYSCTLS[@]}"; do
		echo "sysctl $k $(sysctl -n "$k")" >>"$f"
	done
}

# restore_host puts back what save_host recorded and removes what start
# added; each step is done whether or not the previous ones worked.
restore_host() {
	local f=$DIR/host.before kind k v rule
	iptables -D FORWARD -s "$POD_CIDR" -j ACCEPT 2>/dev/null || true
	iptables -D FORWARD -d "$POD_CIDR" -j ACCEPT 2>/dev/null || true
	iptables -t nat -S PREROUTING 2>/dev/null | grep -F -- "-s $POD_CIDR -d $SERVICE_IP/32" | sed 's/^-A //' | while read -r rule; do
		# shellcheck disable=SC2086
		iptables -t nat -D $rule 2>/dev/null || true
	done
	# The CNI plugins' chains (the bridge's masquerade, off here, and
	# portmap's), should a pod have made them.
	local table chain
	for table in nat filter; do
		iptables -t $table -S 2>/dev/null | grep -E -- '-j CNI-' | sed 's/^-A //' | while read -r rule; do
			# shellcheck disable=SC2086
			iptables -t $table -D $rule 2>/dev/null || true
		done
		for chain in $(iptables -t $table -S 2>/dev/null | awk '$1 == "-N" && $2 ~ /^CNI-/ { print $2 }'); do
			iptables -t $table -F "$chain" 2>/dev/null || true
			iptables -t $table -X "$chain" 2>/dev/null || true
		done
	done
	ip link del "$BRIDGE" 2>/dev/null || true
	if [[ -f $f ]]; then
		while read -r kind k v; do
			if [[ $kind == sysctl ]]; then
				sysctl -qw "$k=$v" >/dev/null 2>&1 || log "cannot put back sysctl $k=$v"
			fi
		done <"$f"
	fi
	# The kubelet's and the containers' cgroups (cgroupfs: under v1, one
	# tree per hierarchy; under v2, one tree).
	local root
	for root in /sys/fs/cgroup/ /sys/fs/cgroup/*/; do
		[[ -d $root${CGROUP_ROOT#/} ]] || continue
		find "$root${CGROUP_ROOT#/}" -depth -type d -exec rmdir {} + 2>/dev/null || true
		[[ -d $root${CGROUP_ROOT#/} ]] && log "cannot remove the cgroup $root${CGROUP_ROOT#/} (processes left in it?)"
	done
	rm -f "$f"
}

# live PID: the process exists and is not a zombie.
live() {
	local state
	state=$(ps -o stat= -p "$1" 2>/dev/null) || return 1
	[[ $state != Z* ]]
}

# launch NAME CMD... starts CMD in a session of its own, logging to
# DIR/NAME.log, its pid in DIR/NAME.pid; it holds none of this script's
# descriptors (the lock's included).
launch() {
	local name=$1
	shift
	setsid "$@" >"$DIR/$name.log" 2>&1 </dev/null 9>&- &
	echo $! >"$DIR/$name.pid"
}

alive() {
	local pid
	pid=$(cat "$DIR/$1.pid" 2>/dev/null) || return 1
	live "$pid"
}

# holder_live DIR PID: the node of DIR is up or being started (its start
# PID or one of its daemons lives).
holder_live() {
	local dir=$1 pid=$2 c p
	[[ -n $pid ]] && live "$pid" && return 0
	for c in kubelet containerd; do
		p=$(cat "$dir/$c.pid" 2>/dev/null) && live "$p" && return 0
	done
	return 1
}

# claim DIR WAIT makes DIR the machine's node, waiting up to WAIT seconds
# while another node runs; a node of which nothing runs any more (its test
# binary killed with -9 before its watcher could stop it) is stopped first.
claim() {
	local dir=$1 wait=$2 deadline=$((SECONDS + $2)) hdir hpid
	while :; do
		exec 9>>"$LOCK"
		flock -w 30 9 || die "cannot take $LOCK within 30 s"
		hdir= hpid=
		[[ -f $HOLDER ]] && read -r hdir hpid <"$HOLDER"
		if [[ $hdir == "$dir" ]] && holder_live "$hdir" "$hpid"; then
			exec 9>&-
			die "a node already runs in $dir (stop it first)"
		fi
		if [[ -z $hdir || $hdir == "$dir" ]] || ! holder_live "$hdir" "$hpid"; then
			echo "$dir $$" >"$HOLDER"
			exec 9>&-
			if [[ -n $hdir && $hdir != "$dir" ]]; then
				log "stopping the node left in $hdir (nothing of it runs)"
				(STALE=1 cmd_stop "$hdir") || true
			fi
			return
		fi
		exec 9>&-
		((SECONDS < deadline)) || die "another node runs on this machine (in $hdir); one at a time (start --wait SECONDS waits for it)"
		sleep 1
	done
}

# holds DIR: DIR is the machine's node (or none is).
holds() {
	local hdir=
	[[ -f $HOLDER ]] && read -r hdir _ <"$HOLDER"
	[[ -z $hdir || $hdir == "$1" ]]
}

unclaim() {
	exec 9>>"$LOCK"
	flock -w 30 9 || die "cannot take $LOCK within 30 s"
	local hdir=
	[[ -f $HOLDER ]] && read -r hdir _ <"$HOLDER"
	[[ $hdir == "$1" ]] && rm -f "$HOLDER"
	exec 9>&-
}

# wait_for NAME SECONDS WHAT CMD...: until CMD succeeds, NAME dies, or the time is up.
wait_for() {
	local name=$1 secs=$2 what=$3
	shift 3
	local deadline=$((SECONDS + secs))
	until "$@" >/dev/null 2>&1; do
		if ! alive "$name"; then
			tail -n 20 "$DIR/$name.log" >&2 || true
			die "$name exited while waiting for $what (log: $DIR/$name.log)"
		fi
		if ((SECONDS >= deadline)); then
			tail -n 20 "$DIR/$name.log" >&2 || true
			die "no $what after $secs s (log: $DIR/$name.log)"
		fi
		sleep 0.1
	done
}

# image NAME TAG BINARY ARGS...: a FROM-scratch OCI image archive of one
# static binary as /NAME, imported into the node's containerd.
image() {
	local name=$1 ref=$2 bin=$3
	shift 3
	local d=$DIR/image-$name
	rm -rf "$d"
	mkdir -p "$d/rootfs" "$d/oci/blobs/sha256"
	cp "$bin" "$d/rootfs/$name"
	tar -C "$d/rootfs" --owner=0 --group=0 --numeric-owner -cf "$d/layer.tar" "$name"
	local layer lsize diff
	layer=$(sha256sum "$d/layer.tar" | cut -d' ' -f1)
	lsize=$(stat -c %s "$d/layer.tar")
	mv "$d/layer.tar" "$d/oci/blobs/sha256/$layer"
	local entry
	entry=$(printf '"/%s"' "$name")
	for a in "$@"; do entry+=$(printf ',"%s"' "$a"); done
	printf '{"architecture":"amd64","os":"linux","config":{"Entrypoint":[%s],"User":"65532"},"rootfs":{"type":"layers","diff_ids":["sha256:%s"]}}' \
		"$entry" "$layer" >"$d/config.json"
	local cfg csize
	cfg=$(sha256sum "$d/config.json" | cut -d' ' -f1)
	csize=$(stat -c %s "$d/config.json")
	mv "$d/config.json" "$d/oci/blobs/sha256/$cfg"
	printf '{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","config":{"mediaType":"application/vnd.oci.image.config.v1+json","digest":"sha256:%s","size":%s},"layers":[{"mediaType":"application/vnd.oci.image.layer.v1.tar","digest":"sha256:%s","size":%s}]}' \
		"$cfg" "$csize" "$layer" "$lsize" >"$d/manifest.json"
	local man msize
	man=$(sha256sum "$d/manifest.json" | cut -d' ' -f1)
	msize=$(stat -c %s "$d/manifest.json")
	mv "$d/manifest.json" "$d/oci/blobs/sha256/$man"
	# The name the CRI looks an image up by is the normalized reference
	# (llmchaos:node is docker.io/library/llmchaos:node): ctr import names
	# the image by this annotation.
	printf '{"schemaVersion":2,"manifests":[{"mediaType":"application/vnd.oci.image.manifest.v1+json","digest":"sha256:%s","size":%s,"annotations":{"io.containerd.image.name":"docker.io/library/%s","org.opencontainers.image.ref.name":"%s"}}]}' \
		"$man" "$msize" "$ref" "${ref#*:}" >"$d/oci/index.json"
	echo '{"imageLayoutVersion":"1.0.0"}' >"$d/oci/oci-layout"
	tar -C "$d/oci" -cf "$d.tar" .
	ctr --address "$DIR/containerd.sock" -n k8s.io images import "$d.tar" >&2 ||
		die "ctr images import $ref failed"
	rm -rf "$d" "$d.tar"
}

node_ready() {
	KUBECONFIG=$DIR/kubeconfig "$ROOT/scripts/k8s-node.sh" _ready "$DIR"
}

cmd_start() {
	DIR=$1
	local owner=$2 wait=$3
	if [[ -n $owner ]]; then
		live "$owner" || die "--owner $owner: no such process"
	fi
	cmd_check
	mkdir -p "$DIR"
	DIR=$(cd "$DIR" && pwd)
	local t0=$SECONDS
	claim "$DIR" "$wait"
	((SECONDS - t0 < 2)) || log "waited $((SECONDS - t0)) s for the node in another directory to stop"
	# The control plane starts in the background (about two thirds of a
	# start, mostly the apiserver's) while the bridge, containerd and the
	# images are made; the kubelet, which needs the API, starts after it.
	CP_PID=
	trap 'rc=$?; if ((rc != 0)); then log "start failed; stopping what it started (logs stay in $DIR)"; [[ -z $CP_PID ]] || wait "$CP_PID"; cmd_stop "$DIR"; fi' EXIT
	t0=$EPOCHREALTIME
	save_host
	KWOK_NODES=${KWOK_NODES:-0} "$CP" start "$DIR/cp" >"$DIR/cp-start.log" 2>&1 9>&- &
	CP_PID=$!

	ip link add "$BRIDGE" type bridge
	ip addr add "$NODE_IP/24" dev "$BRIDGE"
	ip link set "$BRIDGE" up
	sysctl -qw net.ipv4.ip_forward=1
	iptables -I FORWARD -s "$POD_CIDR" -j ACCEPT
	iptables -I FORWARD -d "$POD_CIDR" -j ACCEPT
	sysctl -qw "net.ipv4.conf.$BRIDGE.route_localnet=1"

	mkdir -p "$DIR/cni/net.d" "$DIR/containerd/root" "$DIR/containerd/state" "$DIR/kubelet" "$DIR/pods-logs"
	cat >"$DIR/cni/net.d/10-llmchaos.conflist" <<CNI
{"cniVersion": "1.0.0", "name": "llmchaos-node", "plugins": [
  {"type": "bridge", "bridge": "$BRIDGE", "isGateway": true, "isDefaultGateway": true, "ipMasq": false, "hairpinMode": true,
   "ipam": {"type": "host-local", "ranges": [[{"subnet": "$POD_CIDR", "gateway": "$NODE_IP"}]], "dataDir": "$DIR/cni/ipam"}},
  {"type": "portmap", "capabilities": {"portMappings": true}}]}
CNI
	cat >"$DIR/containerd/config.toml" <<TOML
version = 2
root = "$DIR/containerd/root"
state = "$DIR/containerd/state"
[grpc]
  address = "$DIR/containerd.sock"
[ttrpc]
  address = "$DIR/containerd.sock.ttrpc"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "llmchaos-pause:node"
  restrict_oom_score_adj = true
  netns_mounts_under_state_dir = true
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "$CNI_BIN"
    conf_dir = "$DIR/cni/net.d"
  [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
    runtime_type = "io.containerd.runc.v2"
TOML
	launch containerd containerd --config "$DIR/containerd/config.toml"

	# The images' binaries are built into a directory of this checkout's
	# in the cache: go build relinks only when they changed (a link of
	# llmchaos costs seconds of CPU at every start otherwise).
	local bin t1=$EPOCHREALTIME
	bin=$CACHE/node-bin/$(printf %s "$ROOT" | sha256sum | cut -c1-16)
	mkdir -p "$bin"
	(cd "$ROOT" && CGO_ENABLED=0 "$GO" build -trimpath -ldflags "-s -w" -o "$bin/pause" ./scripts/k8s/node/pause &&
		CGO_ENABLED=0 "$GO" build -trimpath -ldflags "-s -w" -o "$bin/llmchaos" ./cmd/llmchaos) || die "building the images' binaries failed"
	log "images' binaries built in $(since "$t1") s"
	wait_for containerd 30 "containerd's socket" ctr --address "$DIR/containerd.sock" version
	t1=$EPOCHREALTIME
	image pause llmchaos-pause:node "$bin/pause" &
	local pause_pid=$!
	image llmchaos llmchaos:node "$bin/llmchaos"
	wait "$pause_pid" || die "importing the pause image failed"
	log "images imported in $(since "$t1") s (containerd up at $(since "$t0") s)"

	# The kubelet starts once the apiserver answers (DIR/cp/api-ready),
	# while the controller-manager and the scheduler still start.
	echo "$CP_PID" >"$DIR/cp-start.pid"
	wait_for cp-start 150 "the control plane's apiserver (log: $DIR/cp-start.log)" test -s "$DIR/cp/api-ready"
	log "apiserver up at $(since "$t0") s"
	local api_port
	api_port=$(sed -n 's/^API_PORT=//p' "$DIR/cp/api-ready")
	iptables -t nat -I PREROUTING -s "$POD_CIDR" -d "$SERVICE_IP/32" -p tcp --dport 443 -j DNAT --to-destination "127.0.0.1:$api_port"

	# The kubelet's client certificate, from the control plane's CA.
	local pki=$DIR/cp/pki
	openssl req -new -newkey rsa:2048 -nodes -subj "/O=system:nodes/CN=system:node:$NODE_NAME" \
		-keyout "$DIR/kubelet/client.key" -out "$DIR/kubelet/client.csr" 2>/dev/null
	openssl x509 -req -in "$DIR/kubelet/client.csr" -CA "$pki/ca.crt" -CAkey "$pki/ca.key" -CAcreateserial \
		-days 2 -out "$DIR/kubelet/client.crt" 2>/dev/null
	cat >"$DIR/kubelet/kubeconfig" <<KC
apiVersion: v1
kind: Config
clusters: [{name: cp, cluster: {server: "https://127.0.0.1:$api_port", certificate-authority: "$pki/ca.crt"}}]
users: [{name: kubelet, user: {client-certificate: "$DIR/kubelet/client.crt", client-key: "$DIR/kubelet/client.key"}}]
contexts: [{name: cp, context: {cluster: cp, user: kubelet}}]
current-context: cp
KC
	cat >"$DIR/kubelet/config.yaml" <<KCFG
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
failCgroupV1: false
cgroupDriver: cgroupfs
cgroupRoot: $CGROUP_ROOT
cgroupsPerQOS: true
enforceNodeAllocatable: []
containerRuntimeEndpoint: unix://$DIR/containerd.sock
address: $NODE_IP
port: 10250
readOnlyPort: 0
authentication: {anonymous: {enabled: false}, webhook: {enabled: false}, x509: {clientCAFile: "$pki/ca.crt"}}
authorization: {mode: AlwaysAllow}
failSwapOn: false
protectKernelDefaults: false
makeIPTablesUtilChains: false
localStorageCapacityIsolation: false
evictionHard: {memory.available: "0%", nodefs.available: "0%", imagefs.available: "0%"}
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
podLogsDir: $DIR/pods-logs
resolvConf: ""
clusterDomain: cluster.local
staticPodPath: ""
serializeImagePulls: false
KCFG
	# The kubelet wants its cgroup root in every hierarchy (cgroup v1: one
	# per controller; v2: one tree); a cpuset cgroup needs its cpus and mems.
	if [[ $(stat -fc %T /sys/fs/cgroup) == cgroup2fs ]]; then
		mkdir -p "/sys/fs/cgroup$CGROUP_ROOT"
	else
		local h
		for h in /sys/fs/cgroup/*/; do
			[[ -f ${h}cgroup.procs && $h != */unified/ ]] || continue
			mkdir -p "$h${CGROUP_ROOT#/}"
		done
		if [[ -f /sys/fs/cgroup/cpuset/cpuset.cpus ]]; then
			cat /sys/fs/cgroup/cpuset/cpuset.cpus >"/sys/fs/cgroup/cpuset$CGROUP_ROOT/cpuset.cpus"
			cat /sys/fs/cgroup/cpuset/cpuset.mems >"/sys/fs/cgroup/cpuset$CGROUP_ROOT/cpuset.mems"
		fi
	fi
	launch kubelet "$NODE_BIN/kubelet" --config "$DIR/kubelet/config.yaml" --kubeconfig "$DIR/kubelet/kubeconfig" \
		--root-dir "$DIR/kubelet/root" --node-ip "$NODE_IP" --hostname-override "$NODE_NAME" \
		--pod-infra-container-image llmchaos-pause:node
	t1=$EPOCHREALTIME
	wait "$CP_PID" || {
		CP_PID=
		cat "$DIR/cp-start.log" >&2
		die "the control plane did not start"
	}
	CP_PID=
	log "control plane up at $(since "$t0") s ($(grep -o 'up in [0-9]* s' "$DIR/cp-start.log" | tail -n1) of its own)"
	cp "$DIR/cp/kubeconfig" "$DIR/kubeconfig"
	wait_for kubelet 60 "node $NODE_NAME Ready" node_ready
	log "node Ready $(since "$t1") s after the kubelet started"

	cat >"$DIR/env" <<ENV
KUBECONFIG=$DIR/kubeconfig
NODE_NAME=$NODE_NAME
NODE_IP=$NODE_IP
POD_CIDR=$POD_CIDR
API_PORT=$api_port
IMAGE=llmchaos:node
PAUSE_IMAGE=llmchaos-pause:node
K8S_VERSION=$K8S_VERSION
ENV
	if [[ -n $owner ]]; then
		launch owner-watch bash -c 'tail --pid="$1" -f /dev/null; exec "$2" stop "$3"' _ "$owner" "$SELF" "$DIR"
	fi
	trap - EXIT
	log "up in $(since "$t0") s: KUBECONFIG=$DIR/kubeconfig, node $NODE_NAME ($NODE_IP), image llmchaos:node"
}

# ----------------------------------------------------------------- stop ---

# kill_component NAME stops the process group that launch started, if its
# pid is still the one started (a session leader), TERM then KILL after 10 s.
kill_component() {
	local name=$1 pid sid
	pid=$(cat "$DIR/$name.pid" 2>/dev/null) || return 0
	rm -f "$DIR/$name.pid"
	[[ $pid =~ ^[0-9]+$ && $pid != "$$" ]] || return 0
	sid=$(ps -o sid= -p "$pid" 2>/dev/null | tr -d ' ') || return 0
	[[ $sid == "$pid" ]] || return 0
	kill -TERM -- "-$pid" 2>/dev/null || return 0
	local deadline=$((SECONDS + 10))
	while live "$pid"; do
		if ((SECONDS >= deadline)); then
			kill -KILL -- "-$pid" 2>/dev/null || true
			break
		fi
		sleep 0.1
	done
}

cmd_stop() {
	DIR=$1
	[[ -d $DIR ]] || return 0
	DIR=$(cd "$DIR" && pwd)
	# Every step is tried whatever the ones before did (a grep that finds
	# nothing included).
	set +e +o pipefail
	local t0=$EPOCHREALTIME
	kill_component owner-watch
	kill_component kubelet
	# Every container of the node, then its containerd.
	if [[ -S $DIR/containerd.sock ]]; then
		local t
		for t in $(ctr --address "$DIR/containerd.sock" -n k8s.io tasks ls -q 2>/dev/null); do
			ctr --address "$DIR/containerd.sock" -n k8s.io tasks kill -s SIGKILL "$t" >/dev/null 2>&1 || true
		done
	fi
	kill_component containerd
	# The shims outlive containerd: those of this node's state dir.
	local pid
	for pid in $(pgrep -f "containerd-shim-runc-v2 .*-address $DIR/containerd.sock" 2>/dev/null); do
		kill -KILL "$pid" 2>/dev/null || true
	done
	# Pod network namespaces under the state dir, and mounts under DIR.
	grep -o " $DIR/[^ ]*" /proc/mounts | sort -r | while read -r m; do umount -l "$m" 2>/dev/null || true; done
	# The host-wide state is another node's when another holds the machine.
	# (A stale node's stop, run by the start that replaces it, restores.)
	if holds "$DIR" || [[ ${STALE:-} == 1 ]]; then
		restore_host
	else
		log "not restoring the host: the machine's node is now another's ($(cat "$HOLDER"))"
	fi
	"$CP" stop "$DIR/cp" || true
	rm -rf "$DIR/containerd" "$DIR/kubelet" "$DIR/cni" "$DIR"/image-* "$DIR/kubeconfig" "$DIR/env" "$DIR/containerd.sock"* "$DIR/cp-start.pid"
	unclaim "$DIR"
	log "stopped in $(since "$t0") s"
}

cmd_env() {
	[[ -f $1/env ]] || die "no node runs in $1"
	cat "$1/env"
}

# ------------------------------------------------------------------ main ---

main() {
	(($# >= 1)) || usage
	local cmd=$1
	shift
	case $cmd in
	build) cmd_build "$@" ;;
	build-kubelet) build_kubelet ;;
	check) cmd_check ;;
	start)
		(($# >= 1)) || usage
		local dir=$1 owner= wait=0
		shift
		while (($#)); do
			case $1 in
			--owner) owner=${2:?}; shift 2 ;;
			--wait) wait=${2:?}; shift 2 ;;
			*) usage ;;
			esac
		done
		[[ $wait =~ ^[0-9]+$ ]] || die "--wait $wait: a number of seconds"
		cmd_start "$dir" "$owner" "$wait"
		;;
	stop)
		[[ $# -eq 1 ]] || usage
		cmd_stop "$1"
		;;
	env)
		[[ $# -eq 1 ]] || usage
		cmd_env "$1"
		;;
	facts)
		# The host-wide names every node here uses (for tests that check
		# the host after a stop).
		printf 'BRIDGE=%s\nNODE_IP=%s\nPOD_CIDR=%s\nSERVICE_IP=%s\nCGROUP_ROOT=%s\nNODE_NAME=%s\nK8S_VERSION=%s\n' \
			"$BRIDGE" "$NODE_IP" "$POD_CIDR" "$SERVICE_IP" "$CGROUP_ROOT" "$NODE_NAME" "$K8S_VERSION"
		;;
	_ready)
		# node_ready's probe, through the control plane's admin kubeconfig.
		local port
		port=$(sed -n 's/^API_PORT=//p' "$1/cp/env")
		curl -sS --fail --max-time 5 -A k8s-node.sh --cacert "$1/cp/pki/ca.crt" --cert "$1/cp/pki/admin.crt" --key "$1/cp/pki/admin.key" \
			"https://127.0.0.1:$port/api/v1/nodes/$NODE_NAME" | grep -q '"type":"Ready","status":"True"'
		;;
	*) usage ;;
	esac
}

main "$@"
