package egress

import (
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/sandboxrun/sandboxrun/egress/egresslog"
)

// redactor hides a run's placeholders and secret values in what the proxy
// records and logs: a refused request's path, host, method or reason can
// carry what the sandbox sent, and the audit log, the Result and the logs
// outlive the run. A placeholder is matched as sent, with any of its bytes
// percent-encoded (the form a raw URL carries), as the checks find it.
type redactor struct {
	placeholders []*regexp.Regexp
	phNames      []string
	values       []string
	valNames     []string
}

func newRedactor(secrets []Secret) *redactor {
	r := &redactor{}
	for i := range secrets {
		s := &secrets[i]
		if s.Placeholder != "" {
			r.placeholders = append(r.placeholders, regexp.MustCompile(encodedForms(s.Placeholder)))
			r.phNames = append(r.phNames, s.Name)
		}
		if v := s.Value.Reveal(); v != "" {
			r.values = append(r.values, v)
			r.valNames = append(r.valNames, s.Name)
		}
	}
	return r
}

// encodedForms is a pattern matching s with any of its bytes written as
// %XX (either case of hex digit).
func encodedForms(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		fmt.Fprintf(&b, "(?:%s|%%(?i:%02x))", regexp.QuoteMeta(s[i:i+1]), s[i])
	}
	return b.String()
}

// string is s with each placeholder and secret value replaced by a note
// naming the secret.
func (r *redactor) string(s string) string {
	if s == "" {
		return s
	}
	for i, v := range r.values {
		s = strings.ReplaceAll(s, v, "[value of "+r.valNames[i]+"]")
	}
	for i, re := range r.placeholders {
		s = re.ReplaceAllLiteralString(s, "[placeholder of "+r.phNames[i]+"]")
	}
	return s
}

// decision redacts every field of d the sandbox's request can fill.
func (r *redactor) decision(d *egresslog.Decision) {
	if len(r.placeholders) == 0 && len(r.values) == 0 {
		return
	}
	d.Method = r.string(d.Method)
	d.Host = r.string(d.Host)
	d.Path = r.string(d.Path)
	d.Reason = r.string(d.Reason)
}

// finish records a completed decision, redacted, and logs it.
func (p *Proxy) finish(d egresslog.Decision) {
	d.DurationMS = time.Since(d.Time).Milliseconds()
	d = p.rec.add(d)
	p.s.logger.Debug("egress", "method", d.Method, "host", d.Host, "port", d.Port, "path", d.Path, "allowed", d.Allowed,
		"status", d.Status, "secrets", d.Secrets, "reason", d.Reason, "exfiltration", d.Exfiltration)
}
