#!/usr/bin/env bash
# Stops what hack/k8s-up.sh started (only the pids it recorded, checked
# against their command line) and undoes its marks on the host: pod
# containers, mounts, iptables chains the kubelet made, cgroups. Safe to run
# twice, and after a half-finished start.
set -uo pipefail

run=${SANDBOXRUN_K8S_RUN:-/tmp/sandboxrun-k8s}
[[ -d $run ]] || exit 0
sock=$run/containerd/containerd.sock
cache=${SANDBOXRUN_K8S_CACHE:-/var/cache/sandboxrun-k8s}
net=${SANDBOXRUN_NET_CACHE:-/var/cache/sandboxrun-net}
profile=$(cat "$run/profile" 2>/dev/null || echo loopback)

# halt NAME...: stop each recorded daemon that is still ours, wait for it.
halt() {
	local name pid
	for name; do
		pid=$(cat "$run/$name.pid" 2>/dev/null) || continue
		if tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -qE "$run|$cache|$net"; then
			kill "$pid" 2>/dev/null
			for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
			kill -9 "$pid" 2>/dev/null
		fi
		rm -f "$run/$name.pid"
	done
}

halt kube-network-policies kube-proxy kubelet scheduler controller-manager apiserver
if [[ -S $sock ]]; then
	# Pod containers and sandboxes: stop their shims before containerd.
	ctr=(ctr -a "$sock" -n k8s.io)
	for t in $("${ctr[@]}" tasks ls -q 2>/dev/null); do "${ctr[@]}" tasks kill -s SIGKILL "$t" >/dev/null 2>&1; done
	sleep 0.5
	for t in $("${ctr[@]}" tasks ls -q 2>/dev/null); do "${ctr[@]}" tasks rm -f "$t" >/dev/null 2>&1; done
	for c in $("${ctr[@]}" containers ls -q 2>/dev/null); do "${ctr[@]}" containers rm "$c" >/dev/null 2>&1; done
fi
halt containerd etcd

# Mounts under the run folder (pod volumes, overlay snapshots, netns).
awk -v r="$run" 'index($2, r) == 1 {print $2}' /proc/mounts | sort -r | xargs -r -n1 umount -l 2>/dev/null
# The kubelet's iptables chains.
for ipt in iptables ip6tables; do
	for table in filter mangle nat; do
		for chain in KUBE-FIREWALL KUBE-KUBELET-CANARY KUBE-IPTABLES-HINT; do
			for hook in INPUT OUTPUT; do
				while $ipt -t $table -D $hook -j $chain 2>/dev/null; do :; done
			done
			$ipt -t $table -F $chain 2>/dev/null
			$ipt -t $table -X $chain 2>/dev/null
		done
	done
done
# podnet (hack/k8s-up.sh): the nftables tables of kube-proxy and
# kube-network-policies, the CNI firewall plugin's iptables chains, the
# bridge. The veths went with the Pods' network namespaces above.
if [[ $profile == podnet ]]; then
	nft delete table ip kube-proxy 2>/dev/null
	nft delete table ip6 kube-proxy 2>/dev/null
	nft delete table inet kube-network-policies 2>/dev/null
	iptables -S FORWARD 2>/dev/null | grep -E -- '-j CNI-(FORWARD|ADMIN)$' | sed 's/^-A /-D /' |
		while read -r rule; do eval "iptables $rule"; done
	for chain in CNI-FORWARD CNI-ADMIN; do
		iptables -F $chain 2>/dev/null
		iptables -X $chain 2>/dev/null
	done
	ip link del sbx-br0 2>/dev/null
fi
# Pod cgroups (empty once the containers are gone).
for cg in /sys/fs/cgroup/*/kubepods; do
	[[ -d $cg ]] && find "$cg" -depth -type d -exec rmdir {} + 2>/dev/null
done
# Runtime state the kubelet and runc keep outside the run folder.
rm -rf /var/lib/kubelet
rmdir /run/containerd/runc/k8s.io 2>/dev/null
rm -rf "$run"
true
