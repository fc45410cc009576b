#!/usr/bin/env bash
# Starts a single-node Kubernetes for sandboxrun's tests from the cache
# hack/k8s-build.sh fills: etcd, the control plane, a private containerd
# (CRI) and a kubelet, each a process of this host recorded in a pid file
# under the run folder. Test use only: static tokens, anonymous kubelet.
#
# Two profiles (K8S_PROFILE):
#
#   loopback  (default) the node is a "sandbox node pool" in the sense of
#             docs/kubernetes.md, "No network": its CNI plugin gives every
#             pod the loopback interface only, so sandbox pods have no
#             network, which sandbox/kube proves with a probe pod before its
#             first run without network. No kube-proxy, no cluster DNS.
#   podnet    a Pod network like an ordinary cluster's: Debian's CNI bridge
#             (sbx-br0, 10.244.0.0/24, host-local addresses, the firewall
#             plugin to pass the host's FORWARD policy), kube-proxy in
#             nftables mode for Services, CoreDNS for cluster.local (a Pod
#             on the bridge, kube-system/coredns, behind the kube-dns
#             Service 10.97.0.10, as an ordinary cluster runs it), and
#             kube-network-policies enforcing NetworkPolicy; the API server
#             listens on every address so Pods reach it through the
#             kubernetes Service. Built by hack/net-build.sh.
#
#   K8S_PROFILE           loopback or podnet (default loopback)
#   SANDBOXRUN_K8S_CACHE  cache root (default /var/cache/sandboxrun-k8s)
#   SANDBOXRUN_NET_CACHE  podnet's cache (default /var/cache/sandboxrun-net)
#   SANDBOXRUN_K8S_RUN    run folder (default /tmp/sandboxrun-k8s)
#   K8S_VERSION           Kubernetes release (default 1.36.3)
#   K8S_IMAGES            Docker images to load into the node
#                         (default $SANDBOXRUN_RUNNER_IMAGE, else
#                         sandboxrun/runner:<version of this checkout>);
#                         podnet loads its CoreDNS image too
#
# It prints the kubeconfig of the sandboxrun user (the RBAC the backend
# needs, docs/kubernetes.md, "RBAC"); admin.kubeconfig is next to it.
set -euo pipefail

version=${K8S_VERSION:-1.36.3}
cache=${SANDBOXRUN_K8S_CACHE:-/var/cache/sandboxrun-k8s}/v$version
run=${SANDBOXRUN_K8S_RUN:-/tmp/sandboxrun-k8s}
here=$(cd "$(dirname "$0")" && pwd)
default_runner=sandboxrun/runner:$(sed -n 's/^const Version = "\(.*\)"$/\1/p' "$here/../version.go")
images=${K8S_IMAGES:-${SANDBOXRUN_RUNNER_IMAGE:-$default_runner}}
node=sbx-node
profile=${K8S_PROFILE:-loopback}
case $profile in
loopback | podnet) ;;
*) echo "k8s-up: K8S_PROFILE=$profile: want loopback or podnet" >&2; exit 2 ;;
esac
# podnet's addresses: the Pod range on the bridge, the cluster DNS's
# Service address in the Service range.
pod_cidr=10.244.0.0/24 bridge=sbx-br0 bridge_ip=10.244.0.1 dns_ip=10.97.0.10
# Ports apart from the usual ones, so another cluster on the host (the
# shared recipe's) does not collide.
etcd_port=23791 api_port=6444 kubelet_port=10350

[[ -f $cache/.complete ]] || { echo "k8s-up: no build in $cache: run hack/k8s-build.sh" >&2; exit 1; }
if [[ $profile == podnet ]]; then
	net=${SANDBOXRUN_NET_CACHE:-/var/cache/sandboxrun-net}
	knp=$net/kube-network-policies-v0.8.0 coredns_image=sandboxrun/k8s-coredns:1.15.0
	[[ -x $knp ]] && docker image inspect "$coredns_image" >/dev/null 2>&1 ||
		{ echo "k8s-up: no Pod-network build ($net, the image $coredns_image): run hack/net-build.sh" >&2; exit 1; }
	command -v nft >/dev/null && command -v iptables >/dev/null ||
		{ echo "k8s-up: K8S_PROFILE=podnet needs nft and iptables (Debian's nftables and iptables)" >&2; exit 1; }
	if ip link show "$bridge" >/dev/null 2>&1; then
		echo "k8s-up: the bridge $bridge exists already (another podnet cluster, or one that was not torn down): hack/k8s-down.sh removes it" >&2
		exit 1
	fi
fi
[[ -n $images ]] || { echo "k8s-up: no image to load: set SANDBOXRUN_RUNNER_IMAGE or K8S_IMAGES" >&2; exit 1; }
if [[ -f $run/apiserver.pid ]]; then
	echo "k8s-up: $run holds a cluster already: run hack/k8s-down.sh first" >&2
	exit 1
fi

ip=$(ip -4 -o route get 1.1.1.1 2>/dev/null | sed -n 's/.* src \([0-9.]*\).*/\1/p')
ip=${ip:-$(hostname -I | cut -d' ' -f1)}
mkdir -p "$run"/{pki,logs,cni/conf,cni/bin,containerd}
echo "$profile" >"$run/profile"
bin=$cache/bin
kubectl=("$bin/kubectl" --kubeconfig "$run/admin.kubeconfig")

# launch NAME CMD...: start a daemon in its own session, log and pid in $run.
launch() {
	local name=$1
	shift
	setsid "$@" >"$run/logs/$name.log" 2>&1 < /dev/null &
	echo $! >"$run/$name.pid"
}

# until_ok SECONDS WHAT CMD...: retry CMD until it succeeds or time is up.
until_ok() {
	local secs=$1 deadline=$((SECONDS + $1)) what=$2
	shift 2
	until "$@" >/dev/null 2>&1; do
		if ((SECONDS > deadline)); then
			echo "k8s-up: $what not ready after $secs s; logs in $run/logs" >&2
			return 1
		fi
		sleep 0.3
	done
}

# --- credentials: a service-account key and static tokens (test only) ---
openssl genrsa -out "$run/pki/sa.key" 2048 2>/dev/null
openssl rsa -in "$run/pki/sa.key" -pubout -out "$run/pki/sa.pub" 2>/dev/null
cat >"$run/pki/tokens.csv" <<T
$(openssl rand -hex 16),admin,admin,"system:masters"
$(openssl rand -hex 16),system:node:$node,kubelet,"system:nodes"
$(openssl rand -hex 16),sandboxrun,sandboxrun
T
kubeconfig() { # USER FILE
	local token
	token=$(awk -F, -v u="$1" '$2 == u {print $1}' "$run/pki/tokens.csv")
	cat >"$2" <<K
apiVersion: v1
kind: Config
clusters: [{name: sbx, cluster: {server: "https://127.0.0.1:$api_port", insecure-skip-tls-verify: true}}]
users: [{name: $1, user: {token: "$token"}}]
contexts: [{name: sbx, context: {cluster: sbx, user: $1, namespace: sandboxrun}}]
current-context: sbx
K
	chmod 600 "$2"
}
kubeconfig admin "$run/admin.kubeconfig"
kubeconfig "system:node:$node" "$run/kubelet.kubeconfig"
kubeconfig sandboxrun "$run/sandboxrun.kubeconfig"

# --- etcd ---
launch etcd "$cache/root/usr/bin/etcd" --data-dir "$run/etcd" \
	--listen-client-urls "http://127.0.0.1:$etcd_port" --advertise-client-urls "http://127.0.0.1:$etcd_port" \
	--listen-peer-urls http://127.0.0.1:23801 --initial-advertise-peer-urls http://127.0.0.1:23801 \
	--initial-cluster default=http://127.0.0.1:23801

# --- CNI ---
ln -sf "$cache/root/usr/lib/cni/loopback" "$run/cni/bin/loopback"
if [[ $profile == podnet ]]; then
	for p in bridge host-local firewall; do ln -sf "$cache/root/usr/lib/cni/$p" "$run/cni/bin/$p"; done
	# The bridge plugin makes the bridge, with the gateway's address, for
	# the first Pod. The firewall plugin admits each Pod's traffic in the
	# host's FORWARD chain (Docker sets its policy to DROP, and bridged
	# packets pass it).
	cat >"$run/cni/conf/10-sandboxrun.conflist" <<C
{"cniVersion": "0.4.0", "name": "sandboxrun-podnet", "plugins": [
  {"type": "bridge", "bridge": "$bridge", "isGateway": true, "ipMasq": false, "hairpinMode": true,
   "ipam": {"type": "host-local", "dataDir": "$run/cni/ipam",
            "ranges": [[{"subnet": "$pod_cidr", "gateway": "$bridge_ip"}]], "routes": [{"dst": "0.0.0.0/0"}]}},
  {"type": "firewall", "backend": "iptables"}
]}
C
else
# --- CNI: loopback only ---
# The plugin answers ADD with an address for eth0, as the runtime needs one
# for the pod's status, but creates no interface: the pod's network
# namespace keeps only lo (which the runtime's own loopback plugin raises).
cat >"$run/cni/bin/sbx-loopback-only" <<'P'
#!/bin/sh
cat >/dev/null
case "$CNI_COMMAND" in
ADD) n=$(printf %s "$CNI_CONTAINERID" | cksum | cut -d' ' -f1)
	printf '{"cniVersion":"0.4.0","interfaces":[{"name":"%s","sandbox":"%s"}],"ips":[{"version":"4","address":"10.255.%d.%d/32","interface":0}]}' \
		"$CNI_IFNAME" "$CNI_NETNS" $((n / 256 % 256)) $((n % 254 + 1)) ;;
VERSION) printf '{"cniVersion":"0.4.0","supportedVersions":["0.3.0","0.3.1","0.4.0"]}' ;;
esac
P
chmod 755 "$run/cni/bin/sbx-loopback-only"
cat >"$run/cni/conf/10-sandboxrun.conflist" <<C
{"cniVersion": "0.4.0", "name": "sandboxrun-loopback-only", "plugins": [{"type": "sbx-loopback-only"}]}
C
fi

# --- containerd with CRI, private to this cluster ---
c=$run/containerd
cat >"$c/config.toml" <<T
version = 2
root = "$c/root"
state = "$c/state"
[grpc]
  address = "$c/containerd.sock"
[ttrpc]
  address = "$c/containerd.sock.ttrpc"
[debug]
  address = "$c/debug.sock"
[plugins."io.containerd.internal.v1.opt"]
  path = "$c/opt"
[plugins."io.containerd.grpc.v1.cri"]
  # root lacks CAP_SYS_RESOURCE on these VMs: runc cannot lower oom_score_adj
  restrict_oom_score_adj = true
  sandbox_image = "docker.io/sandboxrun/k8s-pause:3.10"
  stream_server_address = "127.0.0.1"
  # Pod network namespaces under the run folder, so hack/k8s-down.sh
  # finds and unmounts them with the rest.
  netns_mounts_under_state_dir = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "$run/cni/bin"
    conf_dir = "$run/cni/conf"
T
launch containerd containerd --config "$c/config.toml"
ctr=(ctr -a "$c/containerd.sock" -n k8s.io)
until_ok 30 containerd "${ctr[@]}" version

# The pod sandbox image: the pause binary alone, built into a Docker image
# from scratch (no registry), then moved into this containerd with the
# images under test.
pause=$cache/pause
if ! docker image inspect sandboxrun/k8s-pause:3.10 >/dev/null 2>&1; then
	printf 'FROM scratch\nCOPY pause /pause\nUSER 65535:65535\nENTRYPOINT ["/pause"]\n' >"$pause/Dockerfile"
	docker build -q -t sandboxrun/k8s-pause:3.10 "$pause" >/dev/null
fi
[[ $profile == podnet ]] && images="$images $coredns_image"
for img in sandboxrun/k8s-pause:3.10 $images; do
	docker save "$img" | "${ctr[@]}" images import - >/dev/null
done

# --- control plane ---
until_ok 30 etcd curl -sf "http://127.0.0.1:$etcd_port/health"
# podnet: Pods reach the API server through the kubernetes Service, whose
# endpoint is the advertised address.
bind=127.0.0.1
[[ $profile == podnet ]] && bind=0.0.0.0
launch apiserver "$bin/kube-apiserver" --etcd-servers="http://127.0.0.1:$etcd_port" \
	--bind-address=$bind --secure-port=$api_port --advertise-address="$ip" \
	--cert-dir="$run/pki" --token-auth-file="$run/pki/tokens.csv" --authorization-mode=Node,RBAC \
	--kubelet-preferred-address-types=InternalIP \
	--service-account-issuer=https://kubernetes.default.svc --service-account-key-file="$run/pki/sa.pub" \
	--service-account-signing-key-file="$run/pki/sa.key" --service-cluster-ip-range=10.97.0.0/16
until_ok 90 apiserver "${kubectl[@]}" get --raw /readyz
launch controller-manager "$bin/kube-controller-manager" --kubeconfig="$run/admin.kubeconfig" \
	--service-account-private-key-file="$run/pki/sa.key" --root-ca-file="$run/pki/apiserver.crt" \
	--secure-port=0 --leader-elect=false
launch scheduler "$bin/kube-scheduler" --kubeconfig="$run/admin.kubeconfig" --secure-port=0 --leader-elect=false

# --- kubelet ---
# cgroup v1 host: kubelet 1.36 must be told to accept it, and containerd
# 1.6 cannot report its cgroup driver, so it is named.
cat >"$run/kubelet.yaml" <<T
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
failCgroupV1: false
cgroupDriver: cgroupfs
containerRuntimeEndpoint: unix://$c/containerd.sock
address: $ip
port: $kubelet_port
readOnlyPort: 0
healthzPort: 0
authentication: {anonymous: {enabled: true}, webhook: {enabled: false}}
authorization: {mode: AlwaysAllow}
failSwapOn: false
podLogsDir: $run/pod-logs
podPidsLimit: 1024
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
evictionHard: {"memory.available": "100Mi", "nodefs.available": "1%", "imagefs.available": "1%"}
T
[[ $profile == podnet ]] && printf 'clusterDNS: [%s]\nclusterDomain: cluster.local\n' "$dns_ip" >>"$run/kubelet.yaml"
launch kubelet "$bin/kubelet" --config="$run/kubelet.yaml" --kubeconfig="$run/kubelet.kubeconfig" \
	--hostname-override=$node --node-ip="$ip" --root-dir="$run/kubelet" --cert-dir="$run/kubelet/pki"
until_ok 120 "node $node" "${kubectl[@]}" wait --for=condition=Ready node/$node --timeout=5s

if [[ $profile == podnet ]]; then
	# --- Services: kube-proxy, nftables mode (its own tables, ip and ip6
	# kube-proxy; the host's iptables rules are left alone) ---
	cat >"$run/kube-proxy.yaml" <<T
apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
mode: nftables
clientConnection: {kubeconfig: $run/admin.kubeconfig}
hostnameOverride: $node
clusterCIDR: $pod_cidr
healthzBindAddress: 127.0.0.1:10366
metricsBindAddress: 127.0.0.1:10369
conntrack: {maxPerCore: 0, min: 0, tcpEstablishedTimeout: 0s, tcpCloseWaitTimeout: 0s}
T
	launch kube-proxy "$bin/kube-proxy" --config="$run/kube-proxy.yaml"
	until_ok 60 kube-proxy curl -sf http://127.0.0.1:10366/healthz

	# --- cluster DNS: CoreDNS in a Pod on the bridge, behind kube-dns ---
	# As an ordinary cluster runs it, so that NetworkPolicy filters it like
	# any Pod (on the node's own address it was out of the enforcer's
	# reach). It runs as a non-root user with no capability, so it listens
	# on 1053 and the Service maps 53 there; it reads the API through the
	# kubernetes Service with a token of its own service account, which
	# may only list and watch what the kubernetes plugin serves.
	"${kubectl[@]}" apply -f - >/dev/null <<T
apiVersion: v1
kind: ServiceAccount
metadata: {name: coredns, namespace: kube-system}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: sandboxrun-test-coredns}
rules:
  - {apiGroups: [""], resources: [services, namespaces], verbs: [list, watch]}
  - {apiGroups: [discovery.k8s.io], resources: [endpointslices], verbs: [list, watch]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: sandboxrun-test-coredns}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: sandboxrun-test-coredns}
subjects: [{kind: ServiceAccount, name: coredns, namespace: kube-system}]
---
apiVersion: v1
kind: ConfigMap
metadata: {name: coredns, namespace: kube-system}
data:
  Corefile: |
    .:1053 {
        errors
        ready :8181
        kubernetes cluster.local in-addr.arpa ip6.arpa {
            pods insecure
            fallthrough in-addr.arpa ip6.arpa
        }
        cache 5
    }
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: coredns, namespace: kube-system, labels: {k8s-app: kube-dns}}
spec:
  replicas: 1
  selector: {matchLabels: {k8s-app: kube-dns}}
  template:
    metadata: {labels: {k8s-app: kube-dns}}
    spec:
      serviceAccountName: coredns
      dnsPolicy: Default
      terminationGracePeriodSeconds: 1
      securityContext: {runAsNonRoot: true, runAsUser: 65532, runAsGroup: 65532, seccompProfile: {type: RuntimeDefault}}
      containers:
        - name: coredns
          image: docker.io/$coredns_image
          imagePullPolicy: Never
          args: [-conf, /etc/coredns/Corefile]
          ports:
            - {name: dns, containerPort: 1053, protocol: UDP}
            - {name: dns-tcp, containerPort: 1053, protocol: TCP}
          readinessProbe: {httpGet: {path: /ready, port: 8181}, periodSeconds: 1}
          securityContext:
            allowPrivilegeEscalation: false
            readOnlyRootFilesystem: true
            capabilities: {drop: [ALL]}
          resources:
            requests: {cpu: 20m, memory: 32Mi}
            limits: {memory: 128Mi}
          volumeMounts: [{name: config, mountPath: /etc/coredns, readOnly: true}]
      volumes: [{name: config, configMap: {name: coredns}}]
---
apiVersion: v1
kind: Service
metadata: {name: kube-dns, namespace: kube-system, labels: {k8s-app: kube-dns}}
spec:
  selector: {k8s-app: kube-dns}
  clusterIP: $dns_ip
  ports:
    - {name: dns, port: 53, targetPort: dns, protocol: UDP}
    - {name: dns-tcp, port: 53, targetPort: dns-tcp, protocol: TCP}
T

	# --- NetworkPolicy: kube-network-policies, a process of this host ---
	# It reads its API server from in-cluster settings: given in a mount
	# namespace of its own (a tmpfs on /run with the token and CA), so
	# nothing is written to the host's /run; the advertised address, which
	# the API server's certificate names.
	launch kube-network-policies unshare -m --propagation private sh -c '
		mount -t tmpfs -o mode=0755 sbx-knp /run &&
		d=/run/secrets/kubernetes.io/serviceaccount && mkdir -p $d &&
		awk -F, "\$2 == \"admin\" {printf \"%s\", \$1}" "$1/pki/tokens.csv" >$d/token &&
		cp "$1/pki/apiserver.crt" $d/ca.crt &&
		KUBERNETES_SERVICE_HOST=$5 KUBERNETES_SERVICE_PORT=$2 exec "$3" \
			--hostname-override="$4" --disable-nri --metrics-bind-address=127.0.0.1:19080 --v=2
	' sh "$run" "$api_port" "$knp" "$node" "$ip"
	until_ok 60 kube-network-policies nft list table inet kube-network-policies
	# Ready once the kubernetes plugin has synced with the API server. Its
	# log is the Pod's, not in $run/logs: shown here if it is not.
	if ! until_ok 120 coredns "${kubectl[@]}" -n kube-system rollout status deployment/coredns --timeout=5s; then
		"${kubectl[@]}" -n kube-system get pods -o wide >&2 || true
		"${kubectl[@]}" -n kube-system logs deployment/coredns --tail=20 >&2 || true
		exit 1
	fi
fi

# --- the sandboxrun namespace and the backend's RBAC ---
"${kubectl[@]}" apply -f "$here/k8s-rbac.yaml" >/dev/null
until_ok 60 "service account" "${kubectl[@]}" -n sandboxrun get serviceaccount default
echo "KUBECONFIG=$run/sandboxrun.kubeconfig"
