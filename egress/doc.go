// Package egress is the per-run egress proxy: how a sandbox with no network
// interface but loopback reaches the hosts its run may reach, and nothing
// else.
//
// A Proxy listens on a unix socket in a fresh private folder; the sandbox
// gets the socket bind-mounted and sandbox-init relays 127.0.0.1:3128 to it,
// where the job's HTTP_PROXY and HTTPS_PROXY point. The proxy answers CONNECT
// with a TLS tunnel (the bytes pass through untouched) and forwards plain
// HTTP requests. It allows a request only when the allowlist
// (egressrule.Allowlist) matches the host and port, resolves the name itself,
// refuses it when any resolved address is not public (loopback, private,
// link-local, CGNAT, multicast, this host's own...) unless the operator's
// CIDRs hold it, dials the checked addresses (never the name again), and for
// a tunnel requires the TLS ClientHello to name the same host. Each run has
// limits on connections, bytes and idle time, and every decision is recorded
// for the Result and the audit log.
//
// For a host that carries a secret or an HTTP rule (intercept.go), the
// proxy ends the sandbox's TLS itself, with a certificate from a CA made
// for the run (its key never leaves this process), verifies the upstream
// with its own TLS connection, judges every request (the rules, the Host),
// puts each secret in its configured header where the sandbox put the
// secret's placeholder, and refuses a placeholder anywhere else (another
// header, a name, a trailer, the URL, the body) as an exfiltration
// attempt; it masks secret values in the answers (respmask.go), and
// redacts placeholders and values in what it records and logs
// (redact.go). Other hosts keep the untouched tunnel. The operator's view
// of it all is docs/secrets.md.
//
// Fail closed by construction: the sandbox has no route anywhere, so a
// program that ignores the proxy variables, or a proxy that died, leaves it
// with no network at all.
package egress
