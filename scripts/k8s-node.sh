#!/usr/bin/env bash
# k8s-node.sh builds, starts and stops one real Kubernetes node on this
# machine, for the tests that need containers that really run (what kwok's
# pods do not): a kubelet, a containerd of its own, CNI bridge networking
# and FROM-scratch images of a pause program and of llmchaos.
#
#   scripts/k8s-node.sh build               # kubelet, once per version; cached (see below)
#   scripts/k8s-node.sh check               # exit 0 when start can run here, 3 (and why) when not
#   scripts/k8s-node.sh start DIR [--owner PID]
#   export KUBECONFIG=DIR/kubeconfig        # admin of the control plane the node joined
#   scripts/k8s-node.sh env DIR             # the node's facts as shell variables
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
# in DIR/cp with no kwok nodes (KWOK_NODES=0, unless set) and its apiserver
# bound to the node's address too, then:
#   - a bridge llmc0 with 10.88.0.1/24 (pods get 10.88.0.2-254): the
#     node's InternalIP, since the kubelet refuses a loopback address and
#     this kernel has no dummy interfaces;
#   - a containerd with its own config, socket, root and state under DIR
#     (Docker's containerd is not touched), the CRI plugin on, cgroupfs;
#   - the images llmchaos-pause:node and llmchaos:node, built FROM scratch
#     from static Go binaries (scripts/k8s/node/pause and cmd/llmchaos of
#     this checkout) as OCI archives and imported with ctr; pods use
#     imagePullPolicy: Never;
#   - the kubelet (node llmchaos-node, client certificate of the control
#     plane's CA, failCgroupV1: false, cgroup root /llmchaos-node);
# and waits until the node is Ready. It records every host change first
# (DIR/host.before): the FORWARD accept rules for the pod network (Docker's
# FORWARD policy is DROP), the sysctls the kubelet and the bridge set
# (kernel.panic, kernel.panic_on_oops, vm.overcommit_memory,
# net.ipv4.ip_forward), and stop puts each back as it was, deletes the
# bridge, the CNI's nftables/iptables rules and the cgroups under the
# node's root, and stops the control plane. With --owner PID a watcher
# stops the node when that process exits. One node per machine at a time
# (the bridge, sysctls and cgroup root are host-wide): start takes
# /run/llmchaos-node.lock and refuses while another DIR holds it.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
SELF="$ROOT/scripts/k8s-node.sh"
CP="$ROOT/scripts/k8s-controlplane.sh"
CP_MOD="$ROOT/scripts/k8s/controlplane"
GO=${GO:-go}

K8S_VERSION=$(awk '$1 == "k8s.io/kubernetes" { print $2; exit }' "$CP_MOD/go.mod")
CACHE=${LLMCHAOS_CACHE:-$HOME/.cache/llmchaos}/k8s
NODE_BIN="$CACHE/$K8S_VERSION/node"
LOCK=/run/llmchaos-node.lock
NODE_NAME=llmchaos-node
BRIDGE=llmc0
NODE_IP=10.88.0.1
POD_CIDR=10.88.0.0/24
CGROUP_ROOT=/llmchaos-node
SYSCTLS=(kernel.panic kernel.panic_on_oops vm.overcommit_memory net.ipv4.ip_forward)
DEBS=(containerd runc containernetworking-plugins iptables nftables iproute2)
CNI_BIN=/usr/lib/cni

die() {
	echo "k8s-node: $*" >&2
	exit 1
}

log() {
	echo "k8s-node: $*" >&2
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
	DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${missing[@]}" >&2 ||
		die "apt-get install ${missing[*]} failed"
	# Debian starts its containerd service on install: this node runs its
	# own, and the packaged one is not wanted.
	if command -v systemctl >/dev/null && systemctl is-active -q containerd 2>/dev/null; then
		systemctl disable --now containerd >&2 || true
	fi
}

cmd_build() {
	install_debs
	"$CP" build
	build_kubelet
}

# ------------------------------------------------------------------ main ---

main() {
	(($# >= 1)) || usage
	local cmd=$1
	shift
	case $cmd in
	build) cmd_build "$@" ;;
	build-kubelet) build_kubelet ;;
	*) usage ;;
	esac
}

main "$@"
