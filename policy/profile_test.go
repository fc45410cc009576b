package policy

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestPolicyProfile(t *testing.T) {
	o, err := ParsePolicy("p.yaml", []byte("profile: documents\nskills:\n  pdf:\n    profile: office\n"))
	require.NoError(t, err)
	require.Equal(t, ProfileDocuments, o.Profile("other"))
	require.Equal(t, ProfileOffice, o.Profile("pdf"))
	require.Empty(t, BuiltinPolicy().Profile("pdf"), "the built-in policy runs the plain runner")

	for _, bad := range []string{"profile: desktop\n", "skills:\n  pdf:\n    profile: Documents\n"} {
		_, err := ParsePolicy("p.yaml", []byte(bad))
		require.ErrorIs(t, err, ErrPolicyFile)
		require.ErrorContains(t, err, "unknown runner profile")
		require.ErrorContains(t, err, "use one of documents, office")
	}
	entries := o.Entries()
	found := 0
	for _, e := range entries {
		if e.Key == "profile" || e.Key == "skills.pdf.profile" {
			found++
		}
	}
	require.Equal(t, 2, found, "policy show lists both")
}
