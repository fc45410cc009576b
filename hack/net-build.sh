#!/usr/bin/env bash
# Builds the Pod-network pieces of the test cluster (hack/k8s-up.sh with
# K8S_PROFILE=podnet) from the Go module proxy into a cache that survives
# between runs:
#
#   kube-network-policies-v0.8.0  NetworkPolicy enforcement (nftables and an
#                                 NFQUEUE verdict in user space)
#   coredns-v1.15.0               the cluster DNS: CoreDNS with only the
#                                 plugins the test cluster uses
#
# kube-proxy comes from the Kubernetes build (hack/k8s-build.sh), the CNI
# plugins from Debian's containernetworking-plugins (unpacked there too).
# A binary already in the cache is reused as is. Prints the cache folder on
# its last line.
#
#   SANDBOXRUN_NET_CACHE  cache root (default /var/cache/sandboxrun-net)
set -euo pipefail

cache=${SANDBOXRUN_NET_CACHE:-/var/cache/sandboxrun-net}
knp_version=0.8.0
coredns_version=1.15.0
# The host tools hack/k8s-up.sh and k8s-down.sh use for podnet: nft for
# the tables they check and remove, iptables for the CNI firewall plugin.
missing=()
command -v nft >/dev/null || missing+=(nftables)
command -v iptables >/dev/null || missing+=(iptables)
if ((${#missing[@]})); then
	apt-get update -qq
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
fi

mkdir -p "$cache"
export GOCACHE=$cache/gocache GOMODCACHE=$cache/gomod GOWORK=off GOFLAGS=-mod=mod GOTOOLCHAIN=local

# --- kube-network-policies ---
# Its rules hand a connection's first packet to user space with nftables'
# own "queue" statement, which needs a kernel built with CONFIG_NFT_QUEUE.
# Kernels without it (the VMs this project's CI runs on among them) still
# have the xtables NFQUEUE target, which nftables reaches through its
# compat layer: the copy built here uses that target instead, with the
# same queue number and bypass flag. Nothing else is changed.
knp=$cache/kube-network-policies-v$knp_version
if [[ ! -x $knp ]]; then
	src=$(go mod download -json "sigs.k8s.io/kube-network-policies@v$knp_version" | jq -r .Dir)
	work=$cache/src-knp
	rm -rf "$work"
	cp -r "$src" "$work"
	chmod -R u+w "$work"
	ctl=$work/pkg/networkpolicy/controller.go
	n=$(grep -c 'queue := &expr.Queue{Num: uint16(c.config.QueueID)}' "$ctl")
	if [[ $n != 2 ]]; then
		echo "net-build: kube-network-policies v$knp_version: expected 2 queue statements in $ctl, found $n" >&2
		exit 1
	fi
	perl -0pi -e 's/queue := &expr\.Queue\{Num: uint16\(c\.config\.QueueID\)\}\n\tif c\.config\.FailOpen \{\n\t\tqueue\.Flag = expr\.QueueFlagBypass\n\t\}/queue := xtQueue(uint16(c.config.QueueID), c.config.FailOpen)/g' "$ctl"
	if grep -q 'expr.Queue{' "$ctl"; then
		echo "net-build: kube-network-policies v$knp_version: the queue statements were not replaced in $ctl" >&2
		exit 1
	fi
	cat >"$work/pkg/networkpolicy/sandboxrun_xtqueue.go" <<'GO'
package networkpolicy

// Added by sandboxrun's hack/net-build.sh: see the comment there.

import (
	"encoding/binary"

	"github.com/google/nftables/expr"
	"github.com/google/nftables/xt"
)

// xtQueue is the xtables NFQUEUE target, revision 3: struct xt_NFQ_info_v3
// {queuenum, queues_total, flags}, six bytes padded to eight.
func xtQueue(num uint16, bypass bool) *expr.Target {
	info := make(xt.Unknown, 8)
	binary.NativeEndian.PutUint16(info[0:], num)
	binary.NativeEndian.PutUint16(info[2:], 1)
	if bypass {
		binary.NativeEndian.PutUint16(info[4:], 1) // NFQ_FLAG_BYPASS
	}
	return &expr.Target{Name: "NFQUEUE", Rev: 3, Info: &info}
}
GO
	(cd "$work" && CGO_ENABLED=0 go build -trimpath -ldflags '-s -w' -o "$knp.tmp" ./cmd)
	mv "$knp.tmp" "$knp"
	rm -rf "$work"
fi

# --- CoreDNS ---
# A main of its own that imports the few plugins the Corefile of
# hack/k8s-up.sh names, instead of CoreDNS's full set (cloud DNS
# providers and all): a smaller download and build.
coredns=$cache/coredns-v$coredns_version
if [[ ! -x $coredns ]]; then
	work=$cache/src-coredns
	rm -rf "$work"
	mkdir -p "$work"
	cat >"$work/main.go" <<'GO'
// CoreDNS with the plugins sandboxrun's test cluster uses.
package main

import (
	_ "github.com/coredns/coredns/plugin/bind"
	_ "github.com/coredns/coredns/plugin/cache"
	_ "github.com/coredns/coredns/plugin/errors"
	_ "github.com/coredns/coredns/plugin/kubernetes"
	_ "github.com/coredns/coredns/plugin/ready"
	"github.com/coredns/coredns/coremain"
)

func main() { coremain.Run() }
GO
	# go mod tidy fetches the packages main.go imports; "go get" of the
	# module would load its main package, every plugin's dependencies (the
	# cloud SDKs) with it.
	(cd "$work" && go mod init sandboxrun-coredns-build >/dev/null 2>&1 &&
		go mod edit -require="github.com/coredns/coredns@v$coredns_version" &&
		go mod tidy &&
		CGO_ENABLED=0 go build -trimpath -ldflags '-s -w' -o "$coredns.tmp" .)
	mv "$coredns.tmp" "$coredns"
	rm -rf "$work"
fi

echo "$cache"
