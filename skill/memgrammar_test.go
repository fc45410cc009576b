package skill

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"gopkg.in/yaml.v3"

	"github.com/sandboxrun/sandboxrun/internal/size"
	"github.com/sandboxrun/sandboxrun/policy"
)

// The three readers of a memory size (a skill's max_memory, an operator
// policy's limits, the CLI's --memory, which reads with size.ParseMiB)
// agree on every input: the frontmatter takes the bare form only, as MiB,
// and it means what the same number with "Mi" means to the policy; a
// policy size that is a whole number of MiB is what ParseMiB reads.
func FuzzMemoryGrammarsAgree(f *testing.F) {
	for _, s := range []string{"512", "16", "15", "1Gi", "512m", "1.5g", "256k", "-1", "1e3", "0", "+64", "2048MiB", " 64"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		fm, fmErr := parseMemory(&yaml.Node{Kind: yaml.ScalarNode, Value: s})
		pol, polErr := policy.ParseSize(s)
		mib, mibErr := size.ParseMiB(s)
		trimmed := strings.TrimSpace(s)
		if fmErr == nil {
			require.True(t, size.IsBare(trimmed), "frontmatter took %q, which has a unit", s)
			require.NoError(t, mibErr, s)
			require.Equal(t, fm, mib, s)
			withUnit, err := policy.ParseSize(trimmed + "Mi")
			require.NoError(t, err, s)
			require.Equal(t, fm*size.MiB, withUnit, s)
		}
		if size.IsBare(trimmed) {
			require.Error(t, polErr, "policy took %q, a bare number", s)
		}
		if polErr == nil && pol%size.MiB == 0 {
			require.NoError(t, mibErr, s)
			require.Equal(t, pol/size.MiB, mib, s)
		}
		if mibErr == nil && !size.IsBare(trimmed) {
			require.NoError(t, polErr, s)
		}
	})
}
