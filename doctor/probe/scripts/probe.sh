#!/bin/bash
# What a process in this sandbox sees of its own isolation, one key=value
# line each; `sandboxrun doctor` judges them. Every test tries the thing
# itself (a write, an open, a connect) rather than reading configuration.
set -u
say() { printf '%s=%s\n' "$1" "$2"; }

say uid "$(id -u)"
say gid "$(id -g)"
say groups "$(id -G | tr ' ' ',')"
for k in CapInh CapPrm CapEff CapBnd CapAmb NoNewPrivs Seccomp; do
	say "$k" "$(awk -v k="$k:" '$1 == k { print $2 }' /proc/self/status)"
done
# gVisor's /proc/self/status has no NoNewPrivs line: ask the kernel
# (prctl PR_GET_NO_NEW_PRIVS, 39) where python3 is there to ask with.
if command -v python3 >/dev/null; then
	say no_new_privs_prctl "$(python3 -c 'import ctypes; print(ctypes.CDLL(None).prctl(39, 0, 0, 0, 0))' 2>/dev/null)"
fi

say interfaces "$(ls /sys/class/net 2>/dev/null | tr '\n' ',' | sed 's/,$//')"
# gVisor's sysfs lists no /sys/class/net; its /proc/net/dev names the
# interfaces all the same.
say interfaces_proc "$(awk -F: 'NR > 2 { gsub(/ /, "", $1); print $1 }' /proc/net/dev 2>/dev/null | sort | tr '\n' ',' | sed 's/,$//')"
say nameservers "$(awk '$1 == "nameserver" { print $2 }' /etc/resolv.conf 2>/dev/null | tr '\n' ',' | sed 's/,$//')"
# A name lookup through whatever resolver there is; "none" when it fails.
say dns_lookup "$(getent hosts example.com >/dev/null 2>&1 && echo resolved || echo none)"

# writable PATH: "yes" when a file could be created there (and is removed).
writable() {
	local f="$1/.sandboxrun-doctor-$$"
	if (: >"$f") 2>/dev/null; then rm -f "$f"; echo yes; else echo no; fi
}
# mounted PATH: "ro" or "rw", the options of the mount PATH is on (the
# longest mount point that holds it, the last one mounted there); a write
# refused for want of permission alone is not a read-only mount.
mounted() {
	awk -v p="$1" '
		{ mp = $2; gsub(/\\040/, " ", mp) }
		p == mp || mp == "/" || index(p, mp "/") == 1 {
			if (length(mp) >= best) { best = length(mp); split($4, o, ","); opt = o[1] }
		}
		END { print opt }' /proc/self/mounts
}
# Both facts for a folder: key_write and key_mount, or key_write=absent.
folder() {
	if [ -d "$2" ]; then
		say "$1_write" "$(writable "$2")"
		say "$1_mount" "$(mounted "$2")"
	else
		say "$1_write" absent
	fi
}
folder rootfs /
folder etc /etc
folder skills "${SKILL_DIR:-/skills/sandboxrun-doctor}"
folder workspace /workspace
say tmp_writable "$(writable /tmp)"

# Container engine sockets: any socket file at the usual places, and
# whether something answers on it.
socks=""
for s in /var/run/docker.sock /run/docker.sock /run/containerd/containerd.sock \
	/var/run/containerd/containerd.sock /run/crio/crio.sock /var/run/crio/crio.sock \
	/run/podman/podman.sock /var/run/podman/podman.sock /run/user/*/docker.sock; do
	[ -S "$s" ] && socks="$socks${socks:+,}$s"
done
say engine_sockets "$socks"
say docker_host "${DOCKER_HOST:-}"

# The engine masks /proc/kcore with /dev/null, which opens but reads
# nothing: only a byte read counts. Unreadable is not enough: the real
# file is root's alone, so an unprivileged process is refused even where
# the engine left it unmasked (systempaths=unconfined).
if [ ! -e /proc/kcore ]; then
	say kcore absent
elif [ "$(head -c 1 /proc/kcore 2>/dev/null | wc -c)" -eq 1 ]; then
	say kcore readable
elif [ -c /proc/kcore ]; then
	say kcore refused
else
	say kcore unmasked
fi
# Writes back the value it reads: harmless where the write is allowed. The
# files are root's, so a refused write says little on its own: /proc/sys
# must also be mounted read-only.
v=$(cat /proc/sys/kernel/domainname 2>/dev/null)
if (echo "$v" >/proc/sys/kernel/domainname) 2>/dev/null; then
	say proc_sys writable
elif [ "$(mounted /proc/sys)" = rw ]; then
	say proc_sys unprotected
else
	say proc_sys refused
fi
fw=$(ls -A /sys/firmware 2>/dev/null | head -n 1)
say sys_firmware "$([ -n "$fw" ] && echo visible || echo refused)"

# Limits, read from the process's own cgroup: v2 (one unified tree) or v1.
if [ -f /sys/fs/cgroup/cgroup.controllers ]; then
	say cgroup v2
	say memory_max "$(cat /sys/fs/cgroup/memory.max 2>/dev/null)"
	say memory_swap_max "$(cat /sys/fs/cgroup/memory.swap.max 2>/dev/null)"
	say cpu_max "$(cat /sys/fs/cgroup/cpu.max 2>/dev/null)"
	say pids_max "$(cat /sys/fs/cgroup/pids.max 2>/dev/null)"
else
	say cgroup v1
	say memory_max "$(cat /sys/fs/cgroup/memory/memory.limit_in_bytes 2>/dev/null)"
	say memsw_max "$(cat /sys/fs/cgroup/memory/memory.memsw.limit_in_bytes 2>/dev/null)"
	q=$(cat /sys/fs/cgroup/cpu/cpu.cfs_quota_us 2>/dev/null || cat /sys/fs/cgroup/cpu,cpuacct/cpu.cfs_quota_us 2>/dev/null)
	p=$(cat /sys/fs/cgroup/cpu/cpu.cfs_period_us 2>/dev/null || cat /sys/fs/cgroup/cpu,cpuacct/cpu.cfs_period_us 2>/dev/null)
	say cpu_max "$q $p"
	say pids_max "$(cat /sys/fs/cgroup/pids/pids.max 2>/dev/null)"
fi

# What the kernel offers the process: gVisor shows no cgroup, but sizes its
# memory (MemTotal) to the container's limit.
say mem_total_kb "$(awk '$1 == "MemTotal:" { print $2 }' /proc/meminfo 2>/dev/null)"
say nproc "$(nproc 2>/dev/null)"
say kernel "$(uname -r)"
say proc_version "$(cat /proc/version 2>/dev/null)"
say dmesg "$(dmesg 2>/dev/null | head -n 1)"
say done 1
