package sandbox

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/sandboxrun/sandboxrun/internal/frame"
	"github.com/sandboxrun/sandboxrun/internal/layout"
)

// The egress proxy inside the sandbox: sandbox-init relays ProxyAddr to the
// socket mounted at EgressSocketPath, and the job's proxy variables point at
// ProxyAddr. The sandbox has no other way out.
const (
	ProxyAddr        = "127.0.0.1:3128"
	EgressSocketPath = layout.EgressSocketPath
	// EgressCAPath is where the proxy's trust bundle is mounted;
	// ImageCABundle is the image's bundle, which it is mounted over too,
	// for programs that read that file whatever the variables say.
	EgressCAPath  = layout.EgressCAPath
	ImageCABundle = layout.ImageCABundle
	proxyURL      = "http://" + ProxyAddr
)

// proxyEnv are the variables that send HTTP clients through the proxy, in
// both spellings (curl reads only the lower-case http_proxy; others read
// either). NO_PROXY is empty so nothing bypasses it: a bypass would fail
// anyway, with no route, but less clearly.
var proxyEnv = []string{
	"HTTP_PROXY=" + proxyURL, "HTTPS_PROXY=" + proxyURL, "ALL_PROXY=" + proxyURL, "NO_PROXY=",
	"http_proxy=" + proxyURL, "https_proxy=" + proxyURL, "all_proxy=" + proxyURL, "no_proxy=",
}

// caEnv name the trust bundle for OpenSSL (Python's ssl, curl), requests,
// curl, Node and git.
var caEnv = []string{"SSL_CERT_FILE", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE", "NODE_EXTRA_CA_CERTS", "GIT_SSL_CAINFO"}

// CheckProxyEnv refuses caller variables that would replace the proxy
// settings of a run that goes through the egress proxy.
func CheckProxyEnv(env map[string]string) error {
	var clash []string
	for _, kv := range proxyEnv {
		name, _, _ := strings.Cut(kv, "=")
		if _, ok := env[name]; ok {
			clash = append(clash, name)
		}
	}

	if len(clash) == 0 {
		return nil
	}
	slices.Sort(clash)
	return fmt.Errorf("%v are set by sandboxrun for a run with an egress allowlist (they point at its proxy); remove them", clash)
}

// egressProblems checks the Spec's egress fields without touching the host.
func egressProblems(s *Spec) []string {
	var p []string
	if s.EgressCA != "" && s.EgressSocket == "" {
		p = append(p, "EgressCA without EgressSocket: the bundle belongs to the run's egress proxy")
	}
	switch {
	case s.EgressSocket == "" && s.Limits.Egress != nil:
		p = append(p, "Limits.Egress is set but EgressSocket is empty: start the run's egress proxy and set EgressSocket to its socket (a sandboxrun.Service does both)")
	case s.EgressSocket == "":
		return p
	case s.Limits.Network:
		p = append(p, "EgressSocket with Limits.Network: a run has either the egress proxy or a full network, not both")
	case !filepath.IsAbs(s.EgressSocket):
		p = append(p, fmt.Sprintf("EgressSocket %q is not an absolute path", s.EgressSocket))
	}
	if s.EgressCA != "" && !filepath.IsAbs(s.EgressCA) {
		p = append(p, fmt.Sprintf("EgressCA %q is not an absolute path", s.EgressCA))
	}
	for _, name := range caEnv {
		if _, ok := s.Env[name]; ok && s.EgressCA != "" {
			p = append(p, fmt.Sprintf("Env: %s is set by sandboxrun for a run whose egress proxy ends TLS (it names the proxy's CA bundle); remove it", name))
		}
	}
	if s.EgressSocket != "" {
		if err := CheckProxyEnv(s.Env); err != nil {
			p = append(p, "Env: "+err.Error())
		}
	}
	return p
}

// checkEgressSocket checks on the host that the socket is a socket the
// sandbox user can connect to.
func checkEgressSocket(spec *Spec, ids Identity) error {
	if spec.EgressSocket == "" {
		return nil
	}
	fi, err := os.Lstat(spec.EgressSocket)
	if err != nil {
		return fmt.Errorf("%w: EgressSocket: %w", ErrInvalidSpec, err)
	}
	if fi.Mode().Type() != os.ModeSocket {
		return fmt.Errorf("%w: EgressSocket %s is not a unix socket", ErrInvalidSpec, spec.EgressSocket)
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if ids.foreign() && ok && st.Uid != ids.uid {
		return fmt.Errorf("%w: EgressSocket %s belongs to uid %d, so the sandbox user (uid %d) cannot connect: start the proxy with egress.WithSocketOwner(sandbox.UserIDs())",
			ErrInvalidSpec, spec.EgressSocket, st.Uid, ids.uid)
	}
	return nil
}

// egressJob tells sandbox-init to relay ProxyAddr to the socket.
func egressJob(spec *Spec) *frame.Egress {
	if spec.EgressSocket == "" {
		return nil
	}
	return &frame.Egress{Listen: ProxyAddr, Socket: EgressSocketPath}
}

// egressEnv are the proxy variables of a run through the egress proxy.
func egressEnv(spec *Spec) []string {
	if spec.EgressSocket == "" {
		return nil
	}
	env := slices.Clone(proxyEnv)
	if spec.EgressCA != "" {
		for _, name := range caEnv {
			env = append(env, name+"="+EgressCAPath)
		}
	}
	return env
}

// UserIDs are the uid and gid sandboxes run as for this process (see
// Identity): the owner an egress socket needs.
func UserIDs() (uid, gid int) {
	ids := CurrentIdentity()
	return int(ids.uid), int(ids.gid)
}
