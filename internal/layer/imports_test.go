package layer

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// sandbox-init links this package: it must stay on the standard library
// (depguard's stdonly rule says so too, for the linter).
func TestImportsStandardLibraryOnly(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", ".").Output()
	require.NoError(t, err)
	require.Equal(t, []string{"github.com/sandboxrun/sandboxrun/internal/layer"}, strings.Fields(string(out)),
		"internal/layer links a package outside the standard library")
}
