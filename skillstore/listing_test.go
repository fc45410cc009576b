package skillstore

import (
	"crypto/sha256"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// A Listing of a folder's entries, added in any order, has the folder's
// Digest; a change to any entry's content, kind or execute bit moves it.
func TestListingMatchesDigest(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "scripts"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "SKILL.md"), []byte("---\nname: x\n---\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "scripts", "run.sh"), []byte("echo hi\n"), 0o700))
	require.NoError(t, os.Symlink("scripts/run.sh", filepath.Join(dir, "run")))
	want, err := Digest(dir)
	require.NoError(t, err)

	sum := func(s string) []byte { h := sha256.Sum256([]byte(s)); return h[:] }
	var l Listing
	l.Link("run", "scripts/run.sh")
	l.File("scripts/run.sh", 0o555, sum("echo hi\n")) // any execute bit counts as 755
	l.Dir("scripts")
	l.File("SKILL.md", 0o444, sum("---\nname: x\n---\n"))
	require.Equal(t, want, l.Digest())

	var m Listing
	m.Link("run", "scripts/run.sh")
	m.File("scripts/run.sh", 0o644, sum("echo hi\n"))
	m.Dir("scripts")
	m.File("SKILL.md", 0o444, sum("---\nname: x\n---\n"))
	require.NotEqual(t, want, m.Digest(), "the execute bit is part of the content")
}
