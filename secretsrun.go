package sandboxrun

import (
	"fmt"
	"maps"

	"github.com/sandboxrun/sandboxrun/egress"
	"github.com/sandboxrun/sandboxrun/sandbox"
)

// withSecrets gives the sandbox what the run's egress proxy needs it to
// have: each granted secret's placeholder in the variable the skill named
// (never the value, which only the proxy holds), and the proxy's trust
// bundle when it ends TLS for some host. A caller may not set a secret's
// variable itself: the operator decides what the secret is.
func withSecrets(spec *sandbox.Spec, p *egress.Proxy) error {
	spec.EgressCA = p.CAFile()
	ph := p.Placeholders()
	if len(ph) == 0 {
		return nil
	}
	env := maps.Clone(spec.Env)
	if env == nil {
		env = map[string]string{}
	}
	for name, v := range ph {
		if _, ok := env[name]; ok {
			return fmt.Errorf("%w: Env sets %s, which is a secret the egress proxy adds for this skill; remove it from the request", sandbox.ErrInvalidSpec, name)
		}
		env[name] = v
	}
	spec.Env = env
	return nil
}
