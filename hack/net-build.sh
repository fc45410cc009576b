#!/usr/bin/env bash
# Builds the Pod-network pieces of the test cluster (hack/k8s-up.sh with
# K8S_PROFILE=podnet) from the Go module proxy into a cache that survives
# between runs:
#
#   kube-network-policies-v0.8.0  NetworkPolicy enforcement (nftables and an
#                                 NFQUEUE verdict in user space)
#   coredns-v1.15.0               the cluster DNS: CoreDNS with only the
#                                 plugins the test cluster uses
#   sandboxrun/k8s-coredns:1.15.0 that binary alone in a Docker image (from
#                                 scratch), which hack/k8s-up.sh loads into
#                                 the node: CoreDNS runs as a Pod
#
# kube-proxy comes from the Kubernetes build (hack/k8s-build.sh), the CNI
# plugins from Debian's containernetworking-plugins (unpacked there too).
# A binary already in the cache is reused as is, and so is the image while
# it holds that binary. Prints the cache folder on its last line.
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
# providers and all): a smaller download and build. (bind is no longer
# named, now that CoreDNS has a Pod of its own; it stays so that a binary
# cached before and one built now are the same build.)
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

# --- the CoreDNS image ---
# The cluster has no registry: hack/k8s-up.sh moves the image from this
# Docker engine into the node's containerd. The image is rebuilt only when
# it is missing or holds another binary than the cache's (its label names
# the binary's digest); the build context is the binary and a Dockerfile.
coredns_image=sandboxrun/k8s-coredns:$coredns_version
sum=$(sha256sum "$coredns" | cut -d' ' -f1)
have=$(docker image inspect -f '{{index .Config.Labels "io.sandboxrun.coredns.sha256"}}' "$coredns_image" 2>/dev/null || true)
if [[ $have != "$sum" ]]; then
	ctx=$cache/coredns-image
	rm -rf "$ctx"
	mkdir -p "$ctx"
	ln "$coredns" "$ctx/coredns" 2>/dev/null || cp "$coredns" "$ctx/coredns"
	cat >"$ctx/Dockerfile" <<D
FROM scratch
COPY coredns /coredns
LABEL io.sandboxrun.coredns.sha256=$sum
USER 65532:65532
ENTRYPOINT ["/coredns"]
D
	docker build -q -t "$coredns_image" "$ctx" >/dev/null
	rm -rf "$ctx"
fi

echo "$cache"
