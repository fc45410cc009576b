package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/pflag"

	"github.com/sandboxrun/sandboxrun/policy"
	"github.com/sandboxrun/sandboxrun/sandbox"
)

// The egress allowlist's part of the CLI: the --allow-domain flag, the
// runner that starts and stops each run's proxy, and what a person is told.

func registerAllowDomain(fs *pflag.FlagSet, f *execFlags) {
	fs.StringSliceVar(&f.allowDomains, "allow-domain", nil, "narrow the network to these hosts (repeatable or comma-separated: api.example.com, *.example.org, host:8443); never past what the skill's allowed_domains and the policy allow")
}

// allowDomainsRequest is the caller's narrowing, nil when none was asked for.
func (f *execFlags) allowDomainsRequest() []string {
	if len(f.allowDomains) == 0 {
		return nil
	}
	return f.allowDomains
}

// explainEgress tells a person what the proxy refused; --json has it all.
func explainEgress(w io.Writer, res *sandbox.Result) {
	e := res.Egress
	if e == nil {
		return
	}
	if e.Denied > 0 {
		var hosts []string
		for _, h := range e.Hosts {
			if h.Denied > 0 {
				hosts = append(hosts, fmt.Sprintf("%s:%d (%s)", h.Host, h.Port, h.Reason))
			}
		}
		fmt.Fprintf(w, "sandboxrun: egress proxy denied %d request(s): %s\n", e.Denied, strings.Join(hosts, "; "))
	}
	if len(e.LimitsHit) > 0 {
		fmt.Fprintf(w, "sandboxrun: egress limits reached: %s\n", strings.Join(e.LimitsHit, ", "))
	}
}

// egressLine is the network line of `policy check` for an allowlist.
func egressLine(e *policy.Egress) string {
	s := "allowlist: " + strings.Join(e.Allow, ", ")
	if len(e.AllowCIDRs) > 0 {
		s += " (non-public addresses in " + strings.Join(e.AllowCIDRs, ", ") + ")"
	}
	return s
}
