package catalog

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sandboxrun/sandboxrun/policy"
	"github.com/sandboxrun/sandboxrun/skill"
)

// TestSourceIsTheTrust: an operator skill is decided with the operator's
// grants by name; an upload, or any source the catalog did not set, never.
func TestSourceIsTheTrust(t *testing.T) {
	pol, err := policy.ParsePolicy("p.yaml", []byte("skills:\n  tool:\n    allowed-tools: Write\n"))
	require.NoError(t, err)
	require.Equal(t, "Write", Operator.Policy(pol).ExtraTools("tool").String())
	for _, src := range []Source{Uploaded, "", "Operator"} {
		require.Empty(t, src.Policy(pol).ExtraTools("tool"), "source %q took a grant by name", src)
	}
	require.Equal(t, "Write", pol.ExtraTools("tool").String(), "the operator's policy is left as it was")
}

// TestResolveOperatorSkill: a name finds the operator's skill with its
// digest, which a pin may name (or its version); another pin, or a path,
// is refused as a skill not found.
func TestResolveOperatorSkill(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "tool")
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "scripts"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "SKILL.md"), []byte("---\nname: tool\ndescription: a tool\nversion: 1.2.0\n---\nUse it.\n"), 0o644))
	loads := 0
	c, err := Open(Config{Roots: []string{root}, Policy: policy.BuiltinPolicy(), OnLoad: func() { loads++ }})
	require.NoError(t, err)
	_, err = c.Uploads()
	require.ErrorIs(t, err, ErrUploadsOff)

	r, err := c.Resolve("owner", "tool")
	require.NoError(t, err)
	require.Equal(t, Operator, r.Source)
	require.Regexp(t, `^sha256:[0-9a-f]{64}$`, r.Digest)
	for _, pin := range []string{"tool@1.2.0", "tool@" + r.Digest} {
		p, err := c.Resolve("owner", pin)
		require.NoError(t, err, pin)
		require.Equal(t, r.Digest, p.Digest)
	}
	for _, bad := range []string{"tool@9.9.9", "../tool", "tool/x", ""} {
		_, err := c.Resolve("owner", bad)
		require.ErrorIs(t, err, skill.ErrSkillNotFound, bad)
	}
	require.Positive(t, loads)

	listed, errs := c.List("owner")
	require.Empty(t, errs)
	require.Len(t, listed, 1)
	require.Equal(t, Listed{Name: "tool", Description: "a tool", Version: "1.2.0", Digest: r.Digest, Source: Operator}, listed[0])
}
