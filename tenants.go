package sandboxrun

import "github.com/sandboxrun/sandboxrun/policy"

// ValidTenantLabel checks a token label as the tokens file and the
// policy's tenants block take it.
func ValidTenantLabel(label string) error { return policy.ValidLabel(label) }

// tenantCaps is each token label's running and queued caps from the
// policy's tenants block; a caller with no label has none below the
// server's own.
func tenantCaps(pol *policy.Operator) func(string) (int, int) {
	return func(label string) (int, int) {
		if label == "" {
			return 0, 0
		}
		sh := pol.Tenants.For(label)
		return sh.MaxRunning, sh.MaxQueued
	}
}
