package sandbox

// Hostname is every sandbox's host name, the same on every run: a per-run
// name would need a per-run /etc/hosts, and the run id is already in the
// environment (EnvRunID) for a script that wants it.
const Hostname = "sandbox"

// HostsPath is where the hosts file appears inside the sandbox.
const HostsPath = "/etc/hosts"

// Hosts is the sandbox's /etc/hosts: the loopback names a system usually
// has, and the sandbox's own name on loopback, which is the only interface
// a sandbox without network has. Scripts that start a server and wait for
// it on localhost (test servers, notebooks, browsers driving a local app)
// need these; without network the engine writes no hosts file at all.
// Nothing here reaches beyond loopback, so it gives no network.
const Hosts = "127.0.0.1\tlocalhost\n" +
	"::1\tlocalhost ip6-localhost ip6-loopback\n" +
	"127.0.1.1\t" + Hostname + "\n"
